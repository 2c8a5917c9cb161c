//! What the api runs with: its [`Config`], read once per process, and the [`Ctx`] every handler shares (the
//! AWS adapters, the keys, the caches), which also builds the decisions ([`crate::decide::Api`]) on them.

use secrecy::{ExposeSecret, SecretSlice};
use strato_aws::aws::AwsClients;
use strato_aws::env::Env;
use strato_aws::ports::{KmsKeys, KmsSigner, SqsJobQueue};
use strato_aws::queues::QueueUrls;
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_connections::tickets as ticket_claims;
use strato_domain::ports::{SystemClock, TenantRules};
use strato_domain::sealed::{CachedKeys, DEFAULT_MAX_AGE, DEFAULT_MAX_USES};

use crate::audit_draft::AuditDraft;
use crate::decide;
use crate::error::ApiError;

/// The api's keys: KMS behind the bounded data-key cache (its clones share one cache).
pub(crate) type ApiKeys = CachedKeys<KmsKeys>;

/// What the `ws` function checks tickets with (`STRATO_JWT_SECRET`, at least 32 bytes; `STRATO_JWT_AUDIENCE`,
/// default `strato-ws`; `STRATO_JWT_ISSUER` when set): the api signs with the same settings.
#[derive(Debug, Clone)]
pub struct TicketSettings {
    /// The HS256 key; `Debug` shows it as `[REDACTED]`.
    pub secret: SecretSlice<u8>,
    pub issuer: Option<String>,
    /// Always in the ticket, always checked.
    pub audience: String,
}

/// Settings read once per process from the environment. Secrets are [`SecretSlice`]s, so `Debug` shows them
/// as `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Physical resource names (`STRATO_RESOURCE_PREFIX`, required).
    pub names: Names,
    /// The JWT claim that holds the tenant id (`STRATO_TENANT_CLAIM`, default `tenant_id`).
    pub tenant_claim: String,
    /// The JWT claim that holds the caller's scopes (`STRATO_SCOPE_CLAIM`, default `scope`; `scp` is read
    /// when it is absent). See [`scopes`].
    pub scope_claim: String,
    /// What precedes each of Strato's scope names in a granted scope (`STRATO_SCOPE_PREFIX`, default none):
    /// a token grants `admin` only by `<prefix>admin` exactly, e.g. `https://api.example.com/admin` with the
    /// prefix `https://api.example.com/` (a Cognito resource server's identifier and a slash).
    pub scope_prefix: String,
    /// Who the platform operator is (`STRATO_OPERATOR_AUDIENCE`, `STRATO_OPERATOR_ISSUER`): see
    /// [`crate::operator`]. Unset audience: every `/v1/admin` route is refused.
    pub operator: crate::operator::OperatorIdentity,
    /// Largest accepted request body (`STRATO_MAX_BODY_BYTES`, default 64 KiB). Specs are small; anything
    /// bigger is a mistake or an attack, and is refused before it is parsed.
    pub max_body_bytes: usize,
    /// Secret the cluster agents' registration tokens are derived from (`STRATO_AGENT_TOKEN_SECRET`; in AWS
    /// injected from Secrets Manager). Needed only by templates that install the agent.
    pub agent_token_secret: Option<SecretSlice<u8>>,
    /// How WebSocket tickets are signed (`STRATO_JWT_SECRET`, `STRATO_JWT_ISSUER`, `STRATO_JWT_AUDIENCE`: the
    /// ws function's own settings). Unset: `POST /v1/ws-tickets` fails.
    pub ws_tickets: Option<TicketSettings>,
    /// The runner's task role (`STRATO_RUNNER_ROLE_ARN`): the principal tenants' target roles must trust,
    /// shown in `GET /v1/tenant/target-access`.
    pub runner_role_arn: Option<String>,
    /// Days audit entries are kept (`STRATO_AUDIT_RETENTION_DAYS`, default 365; DynamoDB TTL removes them).
    pub audit_retention_days: u64,
    /// Days a finished operation is kept (`STRATO_OPERATION_RETENTION_DAYS`, default 90; DynamoDB TTL).
    pub operation_retention_days: u32,
    /// Where tenants' webhooks may point (`PUT /v1/webhook`): https to public addresses, unless devstack's
    /// own switches (`STRATO_DEVSTACK_ONLY_ALLOW_*_WEBHOOKS`) allow its local receivers.
    pub egress: strato_domain::webhook::Egress,
    /// The longest a cluster may live, in hours, for tenants without their own `max_ttl_hours`
    /// (`STRATO_MAX_TTL_HOURS`; unset: unlimited).
    pub default_max_ttl_hours: Option<u64>,
    /// Separation of duties for plan approvals (`STRATO_APPROVAL_SEPARATION`, default `true`): the
    /// requester of an operation cannot approve it.
    pub approval_separation: bool,
    /// The OIDC issuer of runs' identity tokens (`STRATO_OIDC_ISSUER`, the dispatcher's setting): this api
    /// serves its discovery document and JWKS, and shows tenants each cloud's trust settings. Unset: none.
    pub oidc_issuer: Option<strato_domain::identity::Issuer>,
    /// The token-signing KMS key whose public half the JWKS publishes (`STRATO_OIDC_SIGNING_KEY`, default
    /// `alias/<prefix>-oidc`).
    pub oidc_signing_key: String,
    /// The heartbeat interval the api gives cluster agents in every register and heartbeat answer
    /// (`STRATO_AGENT_HEARTBEAT_SECS`, default 60; a value below the agent wire's minimum of 10 is raised
    /// to it, as the agent would). Shorter only where a test watches agents' reports arrive.
    pub agent_heartbeat_secs: u64,
}

impl Config {
    pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;

    pub fn from_env() -> Result<Self, ApiError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same parsing with another source of variables (tests, devstack).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ApiError> {
        let egress = strato_domain::webhook::Egress::from_lookup(&get);
        let env = Env::new(get);
        let names = env.names()?;
        Ok(Self {
            oidc_issuer: env
                .optional("STRATO_OIDC_ISSUER")
                .map(|i| {
                    i.parse().map_err(|reason| strato_aws::env::EnvError {
                        var: "STRATO_OIDC_ISSUER",
                        reason,
                    })
                })
                .transpose()?,
            oidc_signing_key: env.or("STRATO_OIDC_SIGNING_KEY", &names.oidc_key_alias()),
            names,
            tenant_claim: env.or("STRATO_TENANT_CLAIM", "tenant_id"),
            scope_claim: env.or("STRATO_SCOPE_CLAIM", "scope"),
            scope_prefix: env.or("STRATO_SCOPE_PREFIX", ""),
            operator: crate::operator::OperatorIdentity {
                audience: env.optional("STRATO_OPERATOR_AUDIENCE"),
                issuer: env.optional("STRATO_OPERATOR_ISSUER"),
            },
            max_body_bytes: env.positive("STRATO_MAX_BODY_BYTES", Self::DEFAULT_MAX_BODY_BYTES as u64)?
                as usize,
            agent_token_secret: env
                .optional("STRATO_AGENT_TOKEN_SECRET")
                .map(|s| SecretSlice::from(s.into_bytes())),
            ws_tickets: env
                .secret("STRATO_JWT_SECRET", ticket_claims::MIN_SECRET_BYTES)?
                .map(|secret| TicketSettings {
                    secret: SecretSlice::from(secret.into_bytes()),
                    issuer: env.optional("STRATO_JWT_ISSUER"),
                    audience: env.or("STRATO_JWT_AUDIENCE", ticket_claims::AUDIENCE),
                }),
            egress,
            runner_role_arn: env.optional("STRATO_RUNNER_ROLE_ARN"),
            audit_retention_days: strato_aws::ports::DynamoAuditLog::retention_days(&env)?,
            operation_retention_days: strato_aws::store::operation_retention_days(&env)?,
            default_max_ttl_hours: env
                .parsed::<u64>(strato_domain::expiry::MAX_TTL_ENV, "a whole number of hours")?
                .filter(|h| *h > 0),
            approval_separation: env.flag("STRATO_APPROVAL_SEPARATION", true)?,
            agent_heartbeat_secs: env
                .positive(
                    "STRATO_AGENT_HEARTBEAT_SECS",
                    strato_agent_wire::DEFAULT_HEARTBEAT_SECS,
                )?
                .max(strato_agent_wire::MIN_HEARTBEAT_SECS),
        })
    }
}

/// Everything a request needs, built once per process and shared by every invocation.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub store: Store,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    /// Strato's KMS key (by its alias), which seals sensitive values before they are stored.
    /// Data keys for sealing come from a bounded per-tenant cache (strato_domain::sealed::CachedKeys).
    pub keys: ApiKeys,
    /// Strato's token-signing key, for its public half only (the JWKS): the api never signs.
    pub signer: KmsSigner,
    pub queues: QueueUrls,
    /// The append-only audit log (`GET /v1/audit`; every mutating call appends to it).
    pub audit: strato_aws::ports::DynamoAuditLog,
    /// Tenants' suspensions as last read (a change's check costs no read while the answer is young).
    pub suspensions: crate::suspension::Suspensions,
    pub config: Config,
}

impl Ctx {
    pub async fn new(aws: &AwsClients, config: Config) -> Result<Self, ApiError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names)
                .with_operation_retention(config.operation_retention_days)
                .with_audit_retention(config.audit_retention_days),
            sqs: aws.sqs.clone(),
            s3: aws.s3.clone(),
            keys: CachedKeys::new(
                KmsKeys::new(&aws.kms, &config.names),
                DEFAULT_MAX_AGE,
                DEFAULT_MAX_USES,
            ),
            signer: KmsSigner::new(&aws.kms, config.oidc_signing_key.clone()),
            queues,
            audit: strato_aws::ports::DynamoAuditLog::new(
                aws.dynamodb.clone(),
                &config.names,
                config.audit_retention_days,
            ),
            suspensions: Default::default(),
            config,
        })
    }

    /// The decisions on the AWS adapters.
    pub(crate) fn api(&self) -> decide::Api<'_, Store, Store, SqsJobQueue<'_>, SystemClock, ApiKeys> {
        decide::Api {
            store: &self.store,
            templates: &self.store,
            jobs: SqsJobQueue {
                sqs: &self.sqs,
                url: &self.queues.jobs,
            },
            clock: SystemClock,
            agent_token_secret: self.config.agent_token_secret.as_ref().map(|s| s.expose_secret()),
            keys: &self.keys,
            default_max_ttl_hours: self.config.default_max_ttl_hours,
            approval_separation: self.config.approval_separation,
            policies: None,
            rules: None,
            audit: None,
            operation_id: None,
        }
    }

    /// The decisions, checking requests against the tenant's `policies` and `rules`, read together (see
    /// `policies::load`); a create writes `audit` (the request's entry) with its change.
    pub(crate) fn api_with<'a>(
        &'a self,
        policies: &'a strato_policy::PolicySet,
        rules: TenantRules,
        audit: Option<&'a AuditDraft>,
    ) -> decide::Api<'a, Store, Store, SqsJobQueue<'a>, SystemClock, ApiKeys> {
        decide::Api {
            policies: Some(policies),
            rules: Some(rules),
            audit,
            ..self.api()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_errors() {
        let c = Config::from_lookup(|k| (k == "STRATO_RESOURCE_PREFIX").then(|| "prod".to_owned())).unwrap();
        assert_eq!(c.tenant_claim, "tenant_id");
        assert_eq!(c.max_body_bytes, 65536);
        assert!(Config::from_lookup(|_| None).is_err());
        let bad = Config::from_lookup(|k| match k {
            "STRATO_RESOURCE_PREFIX" => Some("prod".into()),
            "STRATO_MAX_BODY_BYTES" => Some("lots".into()),
            _ => None,
        });
        assert!(matches!(bad, Err(ApiError::Config(m)) if m.contains("lots")));
    }

    #[test]
    fn the_agents_heartbeat_interval_defaults_to_the_wires_and_is_never_below_its_minimum() {
        let with = |secs: Option<&str>| {
            Config::from_lookup(|k| match k {
                "STRATO_RESOURCE_PREFIX" => Some("prod".into()),
                "STRATO_AGENT_HEARTBEAT_SECS" => secs.map(str::to_owned),
                _ => None,
            })
        };
        let interval = |secs| with(secs).unwrap().agent_heartbeat_secs;
        assert_eq!(interval(None), strato_agent_wire::DEFAULT_HEARTBEAT_SECS);
        assert_eq!(interval(Some("15")), 15);
        assert_eq!(interval(Some("3")), strato_agent_wire::MIN_HEARTBEAT_SECS);
        assert!(
            matches!(with(Some("soon")), Err(ApiError::Config(m)) if m.contains("STRATO_AGENT_HEARTBEAT_SECS"))
        );
    }

    #[test]
    fn debug_never_shows_the_secrets() {
        let c = Config::from_lookup(|k| match k {
            "STRATO_RESOURCE_PREFIX" => Some("prod".into()),
            "STRATO_AGENT_TOKEN_SECRET" => Some("agent-s3cret-value".into()),
            "STRATO_JWT_SECRET" => Some("jwt-s3cret-value-0123456789abcdef".into()),
            "STRATO_JWT_ISSUER" => Some("https://idp.example".into()),
            _ => None,
        })
        .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        // Byte by byte too: a Vec<u8> field would print the secret as numbers.
        assert!(!shown.contains("97, 103, 101, 110, 116"), "{shown}");
        assert!(
            shown.contains("REDACTED") && shown.contains("https://idp.example"),
            "{shown}"
        );
    }
}

//! Strato's HTTP API (API Gateway HTTP API, payload v2) as an axum [`router`], run by `lambda_http`.
//! Tenants come from the JWT authorizer's claims; every route is in [`ROUTES`], which the router, the
//! OpenAPI document and their tests all agree on.

mod aws_calls;
pub use aws_calls::AWS_CALLS;

mod agent;
mod approval;
mod audit;
mod clusters;
pub mod decide;
mod drift;
mod edge;
pub mod error;
mod estimates;
mod expiry;
mod handlers;
mod idempotency;
#[cfg(feature = "openapi")]
mod openapi;
mod operations;
mod policies;
mod requests;
mod router;
mod schema;
pub mod scopes;
mod spec;
mod state;
mod target;
mod target_access;
mod templates;
mod tenant;
mod tickets;
pub mod timeline;
mod views;

use secrecy::{ExposeSecret, SecretSlice};
use strato_aws::aws::AwsClients;
use strato_aws::connections::tickets as ticket_claims;
use strato_aws::env::Env;
use strato_aws::ports::{KmsKeys, SqsJobQueue};
use strato_aws::queues::QueueUrls;
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_domain::ports::SystemClock;

pub use audit::AuditDraft;
pub use edge::Caller;
pub(crate) use edge::Reply;
pub use error::ApiError;
#[cfg(feature = "openapi")]
pub use openapi::{openapi, openapi_yaml};
pub use requests::{SpecBody, UpdateBody};
pub use router::{ApiService, router, service};
pub use tickets::{TICKET_TTL, TicketSettings};

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
        Ok(Self {
            names: env.names()?,
            tenant_claim: env.or("STRATO_TENANT_CLAIM", "tenant_id"),
            scope_claim: env.or("STRATO_SCOPE_CLAIM", "scope"),
            scope_prefix: env.or("STRATO_SCOPE_PREFIX", ""),
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
    pub keys: KmsKeys,
    pub queues: QueueUrls,
    /// The append-only audit log (`GET /v1/audit`; every mutating call appends to it).
    pub audit: strato_aws::ports::DynamoAuditLog,
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
            keys: KmsKeys::new(&aws.kms, &config.names),
            queues,
            audit: strato_aws::ports::DynamoAuditLog::new(
                aws.dynamodb.clone(),
                &config.names,
                config.audit_retention_days,
            ),
            config,
        })
    }

    /// The decisions on the AWS adapters.
    pub(crate) fn api(&self) -> decide::Api<'_, Store, Store, SqsJobQueue<'_>, SystemClock, KmsKeys> {
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
        }
    }

    /// The decisions, checking requests against the tenant's policies and rules `governing` (see
    /// [`policies::load`]); a create writes `audit` (the request's entry) with its change.
    pub(crate) fn api_with<'a>(
        &'a self,
        governing: &'a policies::Governing,
        audit: Option<&'a audit::AuditDraft>,
    ) -> decide::Api<'a, Store, Store, SqsJobQueue<'a>, SystemClock, KmsKeys> {
        decide::Api {
            policies: Some(&governing.set),
            rules: Some(governing.rules),
            audit,
            ..self.api()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    CreateCluster,
    ListClusters,
    GetCluster,
    UpdateCluster,
    DeleteCluster,
    RetryCluster,
    DriftCheck,
    ListStateVersions,
    RestoreStateVersion,
    ListClusterOperations,
    GetOperation,
    GetOperationTimeline,
    CancelOperation,
    ApproveOperation,
    RejectOperation,
    CreateEstimate,
    GetWebhook,
    PutWebhook,
    DeleteWebhook,
    ListPolicies,
    GetPolicy,
    PutPolicy,
    DeletePolicy,
    GetTargetAccess,
    CreateWsTicket,
    ListTemplates,
    GetTemplate,
    AgentRegister,
    AgentHeartbeat,
    ListAudit,
}

#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    /// Path template; `{x}` matches one non-empty segment.
    pub path: &'static str,
    pub endpoint: Endpoint,
}

const fn route(method: &'static str, path: &'static str, endpoint: Endpoint) -> Route {
    Route {
        method,
        path,
        endpoint,
    }
}

/// The API's route table: the router serves exactly it and `openapi.yaml` documents exactly it.
pub const ROUTES: &[Route] = &[
    route("GET", "/healthz", Endpoint::Health),
    route("POST", "/v1/clusters", Endpoint::CreateCluster),
    route("GET", "/v1/clusters", Endpoint::ListClusters),
    route("GET", "/v1/clusters/{id}", Endpoint::GetCluster),
    route("PATCH", "/v1/clusters/{id}", Endpoint::UpdateCluster),
    route("DELETE", "/v1/clusters/{id}", Endpoint::DeleteCluster),
    route("POST", "/v1/clusters/{id}/retry", Endpoint::RetryCluster),
    route("POST", "/v1/clusters/{id}/drift-check", Endpoint::DriftCheck),
    route(
        "GET",
        "/v1/clusters/{id}/state-versions",
        Endpoint::ListStateVersions,
    ),
    route(
        "POST",
        "/v1/clusters/{id}/state-versions/{version}/restore",
        Endpoint::RestoreStateVersion,
    ),
    route(
        "GET",
        "/v1/clusters/{id}/operations",
        Endpoint::ListClusterOperations,
    ),
    route("GET", "/v1/operations/{id}", Endpoint::GetOperation),
    route(
        "GET",
        "/v1/operations/{id}/timeline",
        Endpoint::GetOperationTimeline,
    ),
    route("POST", "/v1/operations/{id}/cancel", Endpoint::CancelOperation),
    route("POST", "/v1/operations/{id}/approve", Endpoint::ApproveOperation),
    route("POST", "/v1/operations/{id}/reject", Endpoint::RejectOperation),
    route("POST", "/v1/estimates", Endpoint::CreateEstimate),
    route("GET", "/v1/webhook", Endpoint::GetWebhook),
    route("PUT", "/v1/webhook", Endpoint::PutWebhook),
    route("DELETE", "/v1/webhook", Endpoint::DeleteWebhook),
    route("GET", "/v1/policies", Endpoint::ListPolicies),
    route("GET", "/v1/policies/{name}", Endpoint::GetPolicy),
    route("PUT", "/v1/policies/{name}", Endpoint::PutPolicy),
    route("DELETE", "/v1/policies/{name}", Endpoint::DeletePolicy),
    route("GET", "/v1/tenant/target-access", Endpoint::GetTargetAccess),
    route("POST", "/v1/ws-tickets", Endpoint::CreateWsTicket),
    route("GET", "/v1/templates", Endpoint::ListTemplates),
    route("GET", "/v1/templates/{name}", Endpoint::GetTemplate),
    // Authenticated by the cluster agent's token, not by a tenant JWT.
    route("POST", "/v1/agent/register", Endpoint::AgentRegister),
    route("POST", "/v1/agent/heartbeat", Endpoint::AgentHeartbeat),
    route("GET", "/v1/audit", Endpoint::ListAudit),
];

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

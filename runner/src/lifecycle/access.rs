//! The credentials a run hands Terraform, none of them the runner's own (see
//! [`strato_domain::run_access`]):
//!
//! - the **providers** get the target account's role (assumed with the tenant's external id) or, for a
//!   cluster in the platform account, the engine role's session with Strato's own resources denied;
//! - the **S3 backend** gets, in its backend block, a state-role session limited to this cluster's state
//!   objects and lock items (or, with a customer's state bucket, the target account's credentials).
//!
//! The runner keeps its task role for the control plane (its operation, events, logs); the engine inherits
//! none of it ([`crate::engine::inherited`]).

use secrecy::ExposeSecret;
use strato_domain::ErrorCategory;
use strato_domain::model::{ClusterSpec, TargetAccount};
use strato_domain::render::BackendCredentials;
use strato_domain::run_access::{StateScope, engine_session_policy, partition, state_session_policy};

use super::RunContext;
use super::failure::Failure;
use crate::credentials::{self, EngineCredentials};
use crate::trust::{self, SdkSts};
use crate::workspace::Workspace;

const STEP: &str = "prepare";

/// The engine's environment, the target account with its assumed credentials (if any), and the
/// credentials the providers run with (checked by the preflight).
pub(super) struct EngineAccess<'s> {
    pub(super) env: Vec<(String, String)>,
    pub(super) target: Option<(&'s TargetAccount, EngineCredentials)>,
    pub(super) provider: EngineCredentials,
    pub(super) sts_endpoint: Option<String>,
}

fn sts_endpoint(ctx: &RunContext) -> Option<String> {
    ctx.cfg
        .sts_endpoint
        .clone()
        .or_else(|| ctx.cfg.provider_endpoint.clone())
}

fn session_name(ctx: &RunContext) -> String {
    format!("strato-{}", ctx.op.operation_id)
}

/// Credentials never reach a log line or a message.
fn redact(ctx: &RunContext, c: &EngineCredentials) {
    ctx.logs.redactor.add(c.secret_access_key.expose_secret());
    if let Some(t) = &c.session_token {
        ctx.logs.redactor.add(t.expose_secret());
    }
}

/// A role of the deployment's own (engine or state role) could not be assumed: the operator's to fix.
fn own_role_failure(what: &str, role: &str, e: String) -> Failure {
    let mut f = Failure::new(STEP, ErrorCategory::Credentials, format!("{what}: {e}"));
    f.fix = format!(
        "an operator must let the runner's task role assume {role} (its trust policy) and keep \
         sts:AssumeRole on it in the task role's policy; then retry the operation"
    );
    f
}

/// The engine's environment: region, configured extras, a plugin cache, and the providers' credentials.
pub(super) async fn engine_access<'s>(
    ctx: &RunContext,
    spec: &'s ClusterSpec,
    ws: &Workspace,
) -> Result<EngineAccess<'s>, Failure> {
    let mut env = vec![
        ("AWS_REGION".to_owned(), spec.region.clone()),
        ("AWS_DEFAULT_REGION".to_owned(), spec.region.clone()),
    ];
    env.extend(ctx.cfg.extra_engine_env.iter().cloned());
    if std::env::var_os("TF_PLUGIN_CACHE_DIR").is_none() {
        let cache = ws.bundle_dir().join(".plugin-cache");
        let _ = std::fs::create_dir_all(&cache);
        env.push(("TF_PLUGIN_CACHE_DIR".to_owned(), cache.display().to_string()));
    }
    let sts_endpoint = sts_endpoint(ctx);
    let base = &ctx.clients.aws.config;
    let (provider, target) = match &spec.target {
        Some(t) => {
            let external_id = super::sealed::tenant_external_id(ctx, STEP).await?;
            // The external id is the tenant's secret: it never appears in a log line or a message.
            ctx.logs.redactor.add(external_id.expose());
            let region = t.region.clone().unwrap_or_else(|| spec.region.clone());
            let session = session_name(ctx);
            let sts = SdkSts {
                base,
                endpoint: sts_endpoint.as_deref(),
                region: &region,
                role_arn: &t.role_arn,
                session_name: &session,
                timeout: ctx.cfg.preflight_timeout,
            };
            let probe = !ctx.cfg.unsafe_skip_external_id_probe;
            let c = trust::assume_checked(
                &sts,
                &t.role_arn,
                external_id.expose(),
                probe,
                ctx.cfg.preflight_timeout,
            )
            .await
            .map_err(|e| Failure::new(STEP, ErrorCategory::Credentials, e))?;
            (c.clone(), Some((t, c)))
        }
        None => {
            let role = &ctx.cfg.engine_role_arn;
            let policy = engine_session_policy(partition(&spec.region), ctx.cfg.names.prefix());
            let c = credentials::assume_role(
                base,
                sts_endpoint.as_deref(),
                &spec.region,
                role,
                None,
                Some(&policy.to_string()),
                &session_name(ctx),
                ctx.cfg.preflight_timeout,
            )
            .await
            .map_err(|e| own_role_failure("assuming the engine role", role, e))?;
            (c, None)
        }
    };
    redact(ctx, &provider);
    env.extend(provider.env());
    Ok(EngineAccess {
        env,
        target,
        provider,
        sts_endpoint,
    })
}

/// Where the stages' state lives: the customer's bucket (created with versioning + encryption if missing)
/// or the platform's, with the credentials the backend and the runner's lock checks use there.
pub(super) struct StateLocation {
    pub(super) bucket: String,
    pub(super) lock_table: String,
    pub(super) region: String,
    /// Reaches the lock table with the state's credentials.
    pub(super) lock_ddb: aws_sdk_dynamodb::Client,
    /// For the backend block; `None`: the engine's environment (the target account's).
    pub(super) credentials: Option<BackendCredentials>,
    /// The platform's bucket (not a customer's).
    pub(super) platform: bool,
    /// S3 on the platform's bucket with the state session (retiring the state after a delete).
    pub(super) platform_s3: Option<aws_sdk_s3::Client>,
}

pub(super) async fn state_location(
    ctx: &RunContext,
    spec: &ClusterSpec,
    target: Option<&(&TargetAccount, EngineCredentials)>,
) -> Result<StateLocation, Failure> {
    let base = &ctx.clients.aws.config;
    let customer = target.and_then(|(t, c)| Some((*t, c, t.state_bucket.clone()?)));
    let Some((t, c, bucket)) = customer else {
        return platform_state(ctx, spec).await;
    };
    let region = t.region.clone().unwrap_or_else(|| spec.region.clone());
    let lock_table = t.lock_table.clone().unwrap_or_else(|| format!("{bucket}-locks"));
    let lock_ddb = ensure_customer_state(
        base,
        ctx.cfg.provider_endpoint.as_deref(),
        &region,
        c,
        &bucket,
        &lock_table,
    )
    .await
    .map_err(|e| Failure::new(STEP, ErrorCategory::Credentials, e))?;
    Ok(StateLocation {
        bucket,
        lock_table,
        region,
        lock_ddb,
        credentials: None,
        platform: false,
        platform_s3: None,
    })
}

/// The platform's state bucket through a state-role session scoped to this cluster's state.
async fn platform_state(ctx: &RunContext, spec: &ClusterSpec) -> Result<StateLocation, Failure> {
    let base = &ctx.clients.aws.config;
    let bucket = ctx.cfg.names.bucket("state");
    let lock_table = ctx.cfg.names.table("tf-locks");
    let region = base
        .region()
        .map(|r| r.to_string())
        .unwrap_or_else(|| spec.region.clone());
    let scope = StateScope {
        partition: partition(&region),
        bucket: &bucket,
        lock_table: &lock_table,
        tenant: &ctx.cluster.tenant_id,
        cluster: &ctx.cluster.cluster_id,
    };
    let role = &ctx.cfg.state_role_arn;
    let c = credentials::assume_role(
        base,
        sts_endpoint(ctx).as_deref(),
        &region,
        role,
        None,
        Some(&state_session_policy(&scope).to_string()),
        &session_name(ctx),
        ctx.cfg.preflight_timeout,
    )
    .await
    .map_err(|e| own_role_failure("assuming the state role", role, e))?;
    redact(ctx, &c);
    let lock_ddb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(base)
            .credentials_provider(c.provider())
            .build(),
    );
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(base)
            .force_path_style(base.endpoint_url().is_some())
            .credentials_provider(c.provider())
            .build(),
    );
    Ok(StateLocation {
        bucket,
        lock_table,
        region,
        lock_ddb,
        credentials: Some(c.backend()),
        platform: true,
        platform_s3: Some(s3),
    })
}

/// The customer's state bucket (versioned, encrypted) and lock table, created with the target account's
/// credentials if missing.
async fn ensure_customer_state(
    base: &aws_config::SdkConfig,
    endpoint: Option<&str>,
    region: &str,
    creds: &EngineCredentials,
    bucket: &str,
    lock_table: &str,
) -> Result<aws_sdk_dynamodb::Client, String> {
    let mut b = base
        .to_builder()
        .region(aws_config::Region::new(region.to_owned()))
        .credentials_provider(creds.provider());
    if let Some(ep) = endpoint {
        b = b.endpoint_url(ep);
    }
    let aws = strato_aws::aws::AwsClients::from_config(b.build());
    strato_aws::resources::create_bucket(&aws, bucket, true)
        .await
        .map_err(|e| format!("customer state bucket {bucket}: {e}"))?;
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let res = aws
        .dynamodb
        .create_table()
        .table_name(lock_table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("LockID")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("LockID")
                .key_type(KeyType::Hash)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .send()
        .await;
    match res {
        Ok(_) => Ok(aws.dynamodb),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            Ok(aws.dynamodb)
        }
        Err(e) => Err(format!(
            "customer lock table {lock_table}: {}",
            strato_aws::Error::aws("CreateTable", e)
        )),
    }
}

//! The credentials a run hands Terraform, none of them the runner's own (see
//! [`strato_terraform::run_access`]):
//!
//! - the **providers** get the target account's role (assumed with the tenant's external id) or, for a
//!   cluster in the platform account, the engine role's session with Strato's own resources denied;
//! - the **S3 backend** gets a state-role session limited to this cluster's state objects and lock items
//!   (or, with a customer's state bucket, the target account's credentials).
//!
//! Both are profiles of the run's shared credentials file ([`Workspace::credentials_file`]): the providers'
//! through `AWS_PROFILE`, the backend's through its block's `profile`. No key is in the environment (the
//! legacy engine's backend would prefer environment keys to its profile) nor in any configuration file: a
//! saved plan records the backend configuration, and the run that applies an approved plan must use its own
//! fresh sessions.
//!
//! The runner keeps its task role for the control plane (its operation, events, logs); the engine inherits
//! none of it ([`crate::engine::inherited`]).

use std::collections::BTreeMap;

use strato_domain::ErrorCategory;
use strato_domain::model::{AwsAuth, ClusterSpec, Target, TargetAccount};
use strato_domain::secret::Sensitive;
use strato_terraform::run_access::{StateScope, engine_session_policy, partition, state_session_policy};

use super::RunContext;
use super::failure::Failure;
use super::run_session::{redact, session_name};
use crate::credentials::{ENGINE_PROFILE, EngineCredentials, STATE_PROFILE};
use crate::ports::{Cloud, Ports};
use crate::trust::{self, AssumeFailure, Sts};
use crate::workspace::Workspace;

const STEP: &str = "prepare";

/// The engine's environment (every stage's, and a stage's own additions), the AWS target account with its
/// assumed credentials (if any), and what the preflight checks.
pub(super) struct EngineAccess<'s> {
    pub(super) env: Vec<(String, String)>,
    pub(super) stage_env: BTreeMap<String, Vec<(String, String)>>,
    pub(super) target: Option<(&'s TargetAccount, EngineCredentials)>,
    /// The AWS credentials the providers run with; `None` on another cloud.
    pub(super) provider: Option<EngineCredentials>,
    /// Another cloud's target and the token its preflight proves.
    pub(super) cloud: Option<(&'s Target, Sensitive)>,
    /// An S3-compatible store's keys (the customer's state there is listed and restored with them).
    pub(super) storage_keys: Option<EngineCredentials>,
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

/// A tenant's target role through the [`Cloud`], for [`trust::assume_checked`].
struct TargetRole<'a, C> {
    cloud: &'a C,
    role_arn: &'a str,
    region: &'a str,
    session: &'a str,
}

impl<C: Cloud> Sts for TargetRole<'_, C> {
    async fn assume(&self, external_id: Option<&str>) -> Result<EngineCredentials, AssumeFailure> {
        self.cloud
            .assume_target_role(self.role_arn, self.region, self.session, external_id)
            .await
    }
}

/// Variables of the configured extras the run sets itself (credentials).
const OVERRIDDEN: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
];

/// The engine's environment: region, configured extras, a plugin cache, and the providers' credentials
/// (the run's credentials file and its profile).
pub(super) async fn engine_access<'s, P: Ports>(
    ctx: &RunContext<P>,
    spec: &'s ClusterSpec,
    ws: &Workspace,
) -> Result<EngineAccess<'s>, Failure> {
    let mut env = vec![
        ("AWS_REGION".to_owned(), spec.region.clone()),
        ("AWS_DEFAULT_REGION".to_owned(), spec.region.clone()),
    ];
    // Keys or a profile among the extras would outrank or replace the run's sessions.
    env.extend(
        ctx.cfg
            .extra_engine_env
            .iter()
            .filter(|(k, _)| !OVERRIDDEN.contains(&k.as_str()))
            .cloned(),
    );
    if std::env::var_os("TF_PLUGIN_CACHE_DIR").is_none() {
        let cache = ws.bundle_dir().join(".plugin-cache");
        let _ = std::fs::create_dir_all(&cache);
        env.push(("TF_PLUGIN_CACHE_DIR".to_owned(), cache.display().to_string()));
    }
    let cloud = &ctx.ports.cloud;
    let (provider, target) = match &spec.target {
        Some(Target::Aws(t)) if t.auth == AwsAuth::AssumeRole => {
            let external_id = super::sealed::tenant_external_id(ctx, STEP).await?;
            // The external id is the tenant's secret: it never appears in a log line or a message.
            ctx.logs.redactor.add(external_id.expose());
            let region = t.region.clone().unwrap_or_else(|| spec.region.clone());
            let session = session_name(ctx);
            let sts = TargetRole {
                cloud,
                role_arn: &t.role_arn,
                region: &region,
                session: &session,
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
        Some(other) => return federated_access(ctx, spec, ws, other, env).await,
        None => {
            let role = &ctx.cfg.engine_role_arn;
            let policy = engine_session_policy(partition(&spec.region), ctx.cfg.names.prefix());
            let c = cloud
                .assume_own_role(role, &spec.region, &policy.to_string(), &session_name(ctx))
                .await
                .map_err(|e| own_role_failure("assuming the engine role", role, e))?;
            (c, None)
        }
    };
    redact(ctx, &provider);
    ws.add_credentials(ENGINE_PROFILE, &provider)
        .map_err(|e| Failure::internal(STEP, e))?;
    env.push((
        "AWS_SHARED_CREDENTIALS_FILE".to_owned(),
        ws.credentials_file().display().to_string(),
    ));
    env.push(("AWS_PROFILE".to_owned(), ENGINE_PROFILE.to_owned()));
    Ok(EngineAccess {
        env,
        stage_env: BTreeMap::new(),
        target,
        provider: Some(provider),
        cloud: None,
        storage_keys: None,
    })
}

/// [`EngineAccess`] for a target reached without the external id (see [`super::federation`]).
async fn federated_access<'s, P: Ports>(
    ctx: &RunContext<P>,
    spec: &'s ClusterSpec,
    ws: &Workspace,
    target: &'s Target,
    mut env: Vec<(String, String)>,
) -> Result<EngineAccess<'s>, Failure> {
    let f = super::federation::federate(ctx, spec, ws, target).await?;
    env.extend(f.env);
    // AWS sessions, an S3-compatible store's keys and the platform state's session are profiles of the
    // run's credentials file.
    env.push((
        "AWS_SHARED_CREDENTIALS_FILE".to_owned(),
        ws.credentials_file().display().to_string(),
    ));
    let (aws_target, cloud) = match (target, &f.aws) {
        (Target::Aws(t), Some(c)) => (Some((t, c.clone())), None),
        _ => (None, f.proof.map(|p| (target, p))),
    };
    Ok(EngineAccess {
        env,
        stage_env: f.stage_env,
        provider: f.aws,
        target: aws_target,
        cloud,
        storage_keys: f.storage_keys,
    })
}

/// Where the stages' state lives: the customer's bucket (created with versioning + encryption if missing)
/// or the platform's, with the credentials the backend and the runner's lock checks use there.
pub(super) struct StateLocation<S> {
    pub(super) bucket: String,
    pub(super) lock_table: String,
    pub(super) region: String,
    /// The lock table (and for the platform's bucket, the bucket) with the state's credentials.
    pub(super) backend: S,
    /// The credentials file's profile for the backend block; `None`: the environment's (the target
    /// account's).
    pub(super) profile: Option<String>,
    /// The platform's bucket (not a customer's).
    pub(super) platform: bool,
}

pub(super) type StateOf<P> = StateLocation<<<P as Ports>::Cloud as Cloud>::State>;

pub(super) async fn state_location<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
    ws: &Workspace,
    target: Option<&(&TargetAccount, EngineCredentials)>,
) -> Result<StateOf<P>, Failure> {
    let customer = target.and_then(|(t, c)| Some((*t, c, t.state_bucket.clone()?)));
    let Some((t, c, bucket)) = customer else {
        return platform_state(ctx, spec, ws).await;
    };
    let region = t.region.clone().unwrap_or_else(|| spec.region.clone());
    let lock_table = t.lock_table.clone().unwrap_or_else(|| format!("{bucket}-locks"));
    let backend = ctx
        .ports
        .cloud
        .customer_state(&region, c, &bucket, &lock_table)
        .await
        .map_err(|e| Failure::new(STEP, ErrorCategory::Credentials, e))?;
    Ok(StateLocation {
        bucket,
        lock_table,
        region,
        backend,
        profile: None,
        platform: false,
    })
}

/// The platform's state bucket through a state-role session scoped to this cluster's state.
async fn platform_state<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
    ws: &Workspace,
) -> Result<StateOf<P>, Failure> {
    let cloud = &ctx.ports.cloud;
    let bucket = ctx.cfg.names.bucket("state");
    let lock_table = ctx.cfg.names.table("tf-locks");
    let region = cloud.home_region().unwrap_or_else(|| spec.region.clone());
    let scope = StateScope {
        partition: partition(&region),
        bucket: &bucket,
        lock_table: &lock_table,
        tenant: &ctx.cluster.tenant_id,
        cluster: &ctx.cluster.cluster_id,
    };
    let role = &ctx.cfg.state_role_arn;
    let c = cloud
        .assume_own_role(
            role,
            &region,
            &state_session_policy(&scope).to_string(),
            &session_name(ctx),
        )
        .await
        .map_err(|e| own_role_failure("assuming the state role", role, e))?;
    redact(ctx, &c);
    ws.add_credentials(STATE_PROFILE, &c)
        .map_err(|e| Failure::internal(STEP, e))?;
    Ok(StateLocation {
        backend: cloud.platform_state(&c),
        bucket,
        lock_table,
        region,
        profile: Some(STATE_PROFILE.to_owned()),
        platform: true,
    })
}

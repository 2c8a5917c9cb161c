//! The engine's credentials for a target reached without the tenant's external id: an AWS role trusted
//! through Strato's OIDC issuer, a GCP project (workload identity federation), an Azure subscription
//! (federated credential), DigitalOcean and Linode (the API token the tenant registered).
//!
//! What the engine gets, and how (never a value in a configuration file, tfvars or a saved plan):
//!
//! | target | every stage | per stage (its own identity token) |
//! |---|---|---|
//! | AWS, `auth: web_identity` | — | `AWS_PROFILE`: the stage's `AssumeRoleWithWebIdentity` session in the run's credentials file |
//! | GCP | `GOOGLE_PROJECT` | `GOOGLE_APPLICATION_CREDENTIALS`, `GOOGLE_BACKEND_CREDENTIALS`: an `external_account` file reading the token file |
//! | Azure | `ARM_TENANT_ID`, `ARM_CLIENT_ID`, `ARM_SUBSCRIPTION_ID`, `ARM_USE_OIDC`, `ARM_USE_AZUREAD` | `ARM_OIDC_TOKEN_FILE_PATH` |
//! | DigitalOcean | `DIGITALOCEAN_TOKEN` (+ `SPACES_*` keys when registered) | — |
//! | Linode | `LINODE_TOKEN` (+ `LINODE_OBJ_*` keys when registered) | — |
//!
//! A stage's token names the stage in its `sub`, so a cloud's trust can be narrowed per stage; the files sit
//! in the workspace's owner-only identity folder and go with it. Every token and key is added to the run's
//! redactor before anything could print it.

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde_json::json;
use strato_domain::ErrorCategory;
use strato_domain::identity::cloud_tokens::{open_cloud_token, open_storage_keys};
use strato_domain::identity::{gcp_audience, open_run_token};
use strato_domain::model::{
    AzureTarget, CloudProvider, ClusterSpec, GcpTarget, Target, TokenTarget, object_storage_endpoint,
};
use strato_domain::secret::Sensitive;
use strato_terraform::backend::{
    AzureBlobBackend, GcsBackend, S3CompatibleBackend, StateBackend, state_prefix,
};

use super::RunContext;
use super::failure::Failure;
use super::run_session::{redact, session_name};
use crate::clouds::CloudEndpoints;
use crate::credentials::{EngineCredentials, STATE_PROFILE};
use crate::ports::{Cloud, Ports, RunStore};
use crate::workspace::Workspace;

const STEP: &str = "prepare";

/// What a federated or token target gives the engine.
#[derive(Default)]
pub(super) struct Federated {
    /// Added to every stage's environment.
    pub(super) env: Vec<(String, String)>,
    /// Added to one stage's environment (replacing a variable of the same name), by stage.
    pub(super) stage_env: BTreeMap<String, Vec<(String, String)>>,
    /// An AWS web-identity target's first stage session: the preflight's and a customer bucket's.
    pub(super) aws: Option<EngineCredentials>,
    /// The token the cloud's own preflight proves: the first stage's identity token, or the API token.
    pub(super) proof: Option<Sensitive>,
    /// An S3-compatible store's keys (DigitalOcean Spaces, Linode Object Storage).
    pub(super) storage_keys: Option<EngineCredentials>,
}

fn failure(what: impl Into<String>, fix: impl Into<String>) -> Failure {
    let mut f = Failure::new(STEP, ErrorCategory::Credentials, what.into());
    f.fix = fix.into();
    f
}

/// The engine's credentials for `target` (anything but an AWS role with the external id).
pub(super) async fn federate<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
    ws: &Workspace,
    target: &Target,
) -> Result<Federated, Failure> {
    match target {
        Target::Aws(t) => {
            let tokens = stage_tokens(ctx, ws).await?;
            let region = t.region.clone().unwrap_or_else(|| spec.region.clone());
            let mut out = Federated::default();
            for (stage, token) in &tokens {
                let c = ctx
                    .ports
                    .cloud
                    .assume_web_identity(&t.role_arn, &region, &session_name(ctx), token.expose())
                    .await
                    .map_err(|e| {
                        failure(
                            e,
                            format!(
                                "let role {} trust Strato's OIDC issuer (GET /v1/tenant/target-access shows \
                                 the trust policy for auth web_identity); then retry the operation",
                                t.role_arn
                            ),
                        )
                    })?;
                redact(ctx, &c);
                let profile = format!("strato-engine-{stage}");
                ws.add_credentials(&profile, &c)
                    .map_err(|e| Failure::internal(STEP, e))?;
                out.stage_env
                    .insert(stage.clone(), vec![("AWS_PROFILE".to_owned(), profile)]);
                out.aws.get_or_insert(c);
            }
            out.proof = tokens.into_iter().next().map(|(_, t)| t);
            Ok(out)
        }
        Target::Gcp(g) => gcp(ctx, ws, g).await,
        Target::Azure(a) => azure(ctx, ws, a).await,
        Target::Digitalocean(t) => token_cloud(ctx, ws, CloudProvider::Digitalocean, t).await,
        Target::Linode(t) => token_cloud(ctx, ws, CloudProvider::Linode, t).await,
    }
}

/// Each stage's identity token, opened (and redacted), in stage order. Fails when the deployment minted
/// none (no issuer configured), one is missing, or they expired before this run began.
async fn stage_tokens<P: Ports>(
    ctx: &RunContext<P>,
    ws: &Workspace,
) -> Result<Vec<(String, Sensitive)>, Failure> {
    let Some(tokens) = &ctx.op.run_identity else {
        return Err(failure(
            "this run has no identity token: the deployment does not issue them (its dispatcher has no \
             STRATO_OIDC_ISSUER)",
            "an operator sets the OIDC issuer (infra/ does by default); until then use a target that does not \
             federate (an AWS role with auth assume_role, or a DigitalOcean or Linode API token)",
        ));
    };
    let now = strato_domain::ts::now().unix_timestamp();
    if tokens.expires_at <= now {
        return Err(failure(
            format!(
                "the run's identity tokens expired at {} before this run started",
                strato_domain::ts::format(
                    time::OffsetDateTime::from_unix_timestamp(tokens.expires_at)
                        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
                )
            ),
            "retry the operation: a new run is given new tokens",
        ));
    }
    let mut out = Vec::new();
    for s in &ws.stages {
        let token = open_run_token(
            ctx.keys(),
            &ctx.op.tenant_id,
            &ctx.op.operation_id,
            tokens,
            &s.stage,
        )
        .await
        .map_err(|e| Failure::internal(STEP, format!("opening stage {}'s identity token: {e}", s.stage)))?
        .ok_or_else(|| {
            failure(
                format!("no identity token was issued for stage {}", s.stage),
                "retry the operation: the dispatcher issues one per stage of the template",
            )
        })?;
        ctx.logs.redactor.add(token.expose());
        out.push((s.stage.clone(), token));
    }
    Ok(out)
}

/// Each stage's token file, and (GCP) its `external_account` credential configuration.
async fn gcp<P: Ports>(ctx: &RunContext<P>, ws: &Workspace, g: &GcpTarget) -> Result<Federated, Failure> {
    let tokens = stage_tokens(ctx, ws).await?;
    let mut out = Federated {
        env: vec![
            ("GOOGLE_PROJECT".to_owned(), g.project_id.to_string()),
            ("GOOGLE_CLOUD_PROJECT".to_owned(), g.project_id.to_string()),
        ],
        ..Default::default()
    };
    for (stage, token) in &tokens {
        let token_file = write(ws, &format!("{stage}.jwt"), token.expose().as_bytes())?;
        let config = external_account(g, &token_file.display().to_string(), &ctx.cfg.cloud_endpoints);
        let file = write(ws, &format!("{stage}.gcp.json"), config.to_string().as_bytes())?;
        let path = file.display().to_string();
        out.stage_env.insert(
            stage.clone(),
            vec![
                ("GOOGLE_APPLICATION_CREDENTIALS".to_owned(), path.clone()),
                ("GOOGLE_BACKEND_CREDENTIALS".to_owned(), path),
            ],
        );
    }
    out.proof = tokens.into_iter().next().map(|(_, t)| t);
    Ok(out)
}

/// Google's `external_account` credential configuration: the token file is exchanged at Google's STS for
/// the pool's federated token, which impersonates the target's service account.
pub(crate) fn external_account(g: &GcpTarget, token_file: &str, ep: &CloudEndpoints) -> serde_json::Value {
    let (sts, iam) = (&ep.gcp_sts, &ep.gcp_iam_credentials);
    json!({
        "type": "external_account",
        "audience": gcp_audience(g.workload_identity_provider.as_str()),
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("{}/v1/token", sts.trim_end_matches('/')),
        "service_account_impersonation_url": format!(
            "{}/v1/projects/-/serviceAccounts/{}:generateAccessToken",
            iam.trim_end_matches('/'),
            g.service_account
        ),
        "credential_source": { "file": token_file },
    })
}

async fn azure<P: Ports>(ctx: &RunContext<P>, ws: &Workspace, a: &AzureTarget) -> Result<Federated, Failure> {
    let tokens = stage_tokens(ctx, ws).await?;
    let mut out = Federated {
        env: vec![
            ("ARM_TENANT_ID".to_owned(), a.tenant_id.to_string()),
            ("ARM_CLIENT_ID".to_owned(), a.client_id.to_string()),
            ("ARM_SUBSCRIPTION_ID".to_owned(), a.subscription_id.to_string()),
            ("ARM_USE_OIDC".to_owned(), "true".to_owned()),
            // The backend reads blobs with the Entra token too, never an account key.
            ("ARM_USE_AZUREAD".to_owned(), "true".to_owned()),
        ],
        ..Default::default()
    };
    for (stage, token) in &tokens {
        let file = write(ws, &format!("{stage}.jwt"), token.expose().as_bytes())?;
        out.stage_env.insert(
            stage.clone(),
            vec![("ARM_OIDC_TOKEN_FILE_PATH".to_owned(), file.display().to_string())],
        );
    }
    out.proof = tokens.into_iter().next().map(|(_, t)| t);
    Ok(out)
}

/// The provider's token variable, and the object storage variables its provider reads for buckets.
fn token_env(cloud: CloudProvider) -> (&'static str, [&'static str; 2]) {
    match cloud {
        CloudProvider::Linode => ("LINODE_TOKEN", ["LINODE_OBJ_ACCESS_KEY", "LINODE_OBJ_SECRET_KEY"]),
        _ => (
            "DIGITALOCEAN_TOKEN",
            ["SPACES_ACCESS_KEY_ID", "SPACES_SECRET_ACCESS_KEY"],
        ),
    }
}

async fn token_cloud<P: Ports>(
    ctx: &RunContext<P>,
    ws: &Workspace,
    cloud: CloudProvider,
    t: &TokenTarget,
) -> Result<Federated, Failure> {
    let tenant = &ctx.op.tenant_id;
    let set_it = format!(
        "set it with PUT /v1/tenant/cloud-tokens/{cloud} (`strato cloud-tokens set {cloud}`); then retry"
    );
    let record = ctx
        .ports
        .store
        .cloud_token(tenant, cloud)
        .await
        .map_err(|e| Failure::internal(STEP, e))?
        .ok_or_else(|| failure(format!("your tenant has no {cloud} API token"), set_it.clone()))?;
    let token = open_cloud_token(ctx.keys(), tenant, cloud, &record.sealed)
        .await
        .map_err(|e| Failure::internal(STEP, format!("opening the {cloud} token: {e}")))?;
    ctx.logs.redactor.add(token.expose());
    let (token_var, [key_var, secret_var]) = token_env(cloud);
    let mut out = Federated {
        env: vec![(token_var.to_owned(), token.expose().to_owned())],
        ..Default::default()
    };
    match &record.storage_keys {
        Some(sealed) => {
            let pair = open_storage_keys(ctx.keys(), tenant, cloud, sealed)
                .await
                .map_err(|e| Failure::internal(STEP, format!("opening the {cloud} storage keys: {e}")))?;
            ctx.logs.redactor.add(pair.secret_access_key.expose());
            out.env.push((key_var.to_owned(), pair.access_key_id.clone()));
            out.env
                .push((secret_var.to_owned(), pair.secret_access_key.expose().to_owned()));
            // The S3-compatible backend reads them from the run's credentials file, as Strato's own does.
            let keys = EngineCredentials {
                access_key_id: pair.access_key_id,
                secret_access_key: SecretString::from(pair.secret_access_key.expose().to_owned()),
                session_token: None,
            };
            ws.add_credentials(STATE_PROFILE, &keys)
                .map_err(|e| Failure::internal(STEP, e))?;
            out.storage_keys = Some(keys);
        }
        None if t.state_bucket.is_some() => {
            return Err(failure(
                format!(
                    "the target keeps its state in your {cloud} bucket {}, but your tenant has no object \
                     storage key for {cloud}",
                    t.state_bucket.as_deref().unwrap_or_default()
                ),
                format!(
                    "add storage_access_key_id and storage_secret_access_key with PUT \
                     /v1/tenant/cloud-tokens/{cloud}, or drop state_bucket to keep the state in Strato's bucket"
                ),
            ));
        }
        None => {}
    }
    out.proof = Some(token);
    Ok(out)
}

fn write(ws: &Workspace, name: &str, contents: &[u8]) -> Result<std::path::PathBuf, Failure> {
    ws.write_private(name, contents)
        .map_err(|e| Failure::internal(STEP, e))
}

/// Each stage's backend in the customer's own storage on a cloud other than AWS; `None`: the state stays
/// in Strato's bucket (or, for AWS, goes where `state_location` says).
pub(super) fn customer_backends<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
    ws: &Workspace,
    target: &Target,
) -> Option<Vec<(String, StateBackend)>> {
    let (tenant, cluster) = (&ctx.cluster.tenant_id, &ctx.cluster.cluster_id);
    let stores = &ctx.cfg.state_stores;
    let backend = |stage: &str| -> Option<StateBackend> {
        let prefix = state_prefix(tenant, cluster, stage);
        Some(match target {
            Target::Aws(_) => return None,
            Target::Gcp(g) => StateBackend::Gcs(GcsBackend {
                bucket: g.state_bucket.clone()?,
                prefix,
                endpoint: stores.gcs.clone(),
            }),
            Target::Azure(a) => StateBackend::AzureBlob(AzureBlobBackend {
                storage_account: a.state_storage_account.clone()?,
                container: a.state_container.clone().unwrap_or_else(|| "tfstate".to_owned()),
                key: format!("{prefix}.tfstate"),
                use_oidc: true,
                resource_group: a.state_resource_group.clone(),
                metadata_host: stores.azure_metadata_host.clone(),
            }),
            Target::Digitalocean(t) | Target::Linode(t) => {
                let bucket = t.state_bucket.clone()?;
                let (endpoint, path_style) = match &stores.s3_compatible {
                    Some(ep) => (ep.clone(), true),
                    None => (
                        object_storage_endpoint(target.provider(), t.state_region(&spec.region)),
                        false,
                    ),
                };
                StateBackend::S3Compatible(S3CompatibleBackend {
                    endpoint,
                    bucket,
                    key: format!("{prefix}.tfstate"),
                    // Both stores take `us-east-1` in the signature whatever the bucket's region.
                    region: "us-east-1".to_owned(),
                    path_style,
                    profile: Some(STATE_PROFILE.to_owned()),
                })
            }
        })
    };
    ws.stages
        .iter()
        .map(|s| backend(&s.stage).map(|b| (s.stage.clone(), b)))
        .collect()
}

/// `base` with `extra`'s variables set (replacing those of the same name).
pub(super) fn merged_env(base: &[(String, String)], extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = base
        .iter()
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .cloned()
        .collect();
    env.extend(extra.iter().cloned());
    env
}

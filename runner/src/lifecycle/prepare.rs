//! The `prepare` step: everything before the first engine command. Produces the [`PreparedRun`] that owns
//! the engine and the workspace.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};
use strato_aws::store::StoredTemplate;
use strato_domain::ErrorCategory;
use strato_domain::catalog::Catalogs;
use strato_domain::cost::CostEstimate;
use strato_domain::model::{ClusterSpec, Target, TargetAccount};
use strato_domain::secret::Sensitive;
use strato_domain::validate::{ValidatedSpec, validate};
use strato_terraform::render::{
    BackendConfig, EngineDialect, EngineVersion, ManagedValues, ProviderDialect, state_key, tfvars_json,
};
use strato_terraform::run_access::engine_boundary_arn;

use super::access::{StateOf, engine_access, state_location};
use super::failure::Failure;
use super::{PreparedRun, RunContext};
use crate::clouds::CloudCheck;
use crate::credentials::EngineCredentials;
use crate::ports::{Cloud, Engine, Ports, RunStore, StateBackend};
use crate::workspace::Workspace;

const STEP: &str = "prepare";

/// Runs the `prepare` step (reported as one step): a prepared run, or why the operation cannot run.
pub(super) async fn prepare<P: Ports>(ctx: &RunContext<P>) -> Result<PreparedRun<'_, P>, Failure> {
    ctx.event_step(STEP, None);
    let began = std::time::Instant::now();
    let r = prepare_steps(ctx).await;
    strato_domain::vitals::step_finished(ctx.op.kind, STEP, r.is_ok(), began.elapsed());
    ctx.event_step(STEP, Some(r.is_ok()));
    r
}

async fn prepare_steps<P: Ports>(ctx: &RunContext<P>) -> Result<PreparedRun<'_, P>, Failure> {
    // The version probe needs no credentials: it runs while the template, bundle and credentials are read.
    let (probe, bin) = (ctx.ports.engine.clone(), ctx.cfg.terraform.clone());
    let version = crate::spawn(async move { engine_version(&probe, &bin).await });
    let sealed = ctx.op.spec.clone().unwrap_or_else(|| ctx.cluster.spec.clone());
    // Sensitive variables are sealed at rest (bound to this tenant and cluster); opened here, for rendering.
    let spec = strato_domain::sealed::open_spec(ctx.keys(), &ctx.op.tenant_id, &ctx.op.cluster_id, &sealed)
        .await
        .map_err(|e| Failure::internal(STEP, format!("opening the spec's sealed values: {e}")))?;
    let (stored, validated) = validated_template(ctx, &spec).await?;
    let ws = unpack_workspace(ctx, &stored).await?;
    let rendered = render_inputs(ctx, &spec, &validated)?;
    let access = engine_access(ctx, &spec, &ws).await?;
    if let Some(creds) = &access.provider {
        let account = ctx
            .ports
            .cloud
            .preflight(&spec.region, creds)
            .await
            .map_err(|e| Failure::new(STEP, ErrorCategory::Credentials, e))?;
        ctx.note(STEP, &format!("credentials checked (account {account})"));
    }
    if let Some((target, proof)) = &access.cloud {
        cloud_preflight(ctx, target, proof).await?;
    }
    let version = version
        .await
        .map_err(|e| Failure::internal(STEP, format!("engine version probe: {e}")))?;
    let (engine, version, saved_plan_apply) = start_engine(ctx, access.env.clone(), version)?;
    let stage_engines = access
        .stage_env
        .iter()
        .map(|(stage, extra)| {
            let env = super::federation::merged_env(&access.env, extra);
            (stage.clone(), ctx.ports.engine.with_env(env))
        })
        .collect();
    let customer = match &spec.target {
        Some(t) => super::federation::customer_backends(ctx, &spec, &ws, t),
        None => None,
    };
    let mut platform_state = None;
    let mut foreign_locks = None;
    if let (true, Some(backends)) = (ctx.op.kind.has_cluster(), &customer) {
        write_customer_backends(ctx, &ws, backends, &version)?;
        foreign_locks = Some(Default::default());
    } else if ctx.op.kind.has_cluster() {
        platform_state = write_backends(ctx, &spec, &ws, access.target.as_ref(), version.dialect()).await?;
    } else {
        // An estimate plans with no backend: its state is local to the workspace (removed with it), so
        // nothing is written to any state bucket or lock table.
        ctx.note(
            STEP,
            "plan only: local state in the workspace, nothing is written to a state bucket",
        );
    }
    let customer_storage = if ctx.op.kind.has_cluster() {
        super::customer_state::storage_access(ctx, &spec, &access, customer.as_deref())
    } else {
        None
    };
    Ok(PreparedRun {
        customer_storage,
        restored: None,
        ctx,
        engine,
        stage_engines,
        foreign_locks,
        version,
        ws,
        rendered,
        saved_plan_apply,
        initialized: Vec::new(),
        apply_started: Default::default(),
        debug_runs: Default::default(),
        estimate: CostEstimate::empty(),
        platform_state,
        provider_dialect: ProviderDialect::Legacy,
        adopt: super::adopt::Adoption::new(stored.template.manifest.adopt.clone()),
        agent: super::agent_install::Install::plan(
            ctx.op.kind,
            stored.template.manifest.agent.as_ref(),
            spec.provider,
            &spec.region,
            access.provider.as_ref(),
        ),
    })
}

/// The cloud's own identity check with what the engine got (bounded by the preflight timeout): a refusal
/// fails the step with what the cloud said and the setting to fix, before any engine command.
async fn cloud_preflight<P: Ports>(
    ctx: &RunContext<P>,
    target: &Target,
    proof: &Sensitive,
) -> Result<(), Failure> {
    let token = proof.expose();
    let check = match target {
        Target::Gcp(g) => CloudCheck::Gcp {
            target: g,
            id_token: token,
        },
        Target::Azure(a) => CloudCheck::Azure {
            target: a,
            id_token: token,
        },
        Target::Digitalocean(_) => CloudCheck::Digitalocean { token },
        Target::Linode(_) => CloudCheck::Linode { token },
        // An AWS target's session is checked with sts:GetCallerIdentity above.
        Target::Aws(_) => return Ok(()),
    };
    let who = ctx.ports.cloud.cloud_preflight(check).await.map_err(|e| {
        let mut f = Failure::new(STEP, ErrorCategory::Credentials, e.what);
        f.fix = e.fix;
        f
    })?;
    ctx.note(STEP, &format!("credentials checked ({who})"));
    Ok(())
}

/// The spec's template from the catalog, and the spec validated against it again. Sensitive variables are
/// redacted from the log from here on.
async fn validated_template<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
) -> Result<(StoredTemplate, ValidatedSpec), Failure> {
    let stored = ctx
        .ports
        .store
        .template(&spec.template.name, &spec.template.version)
        .await
        .map_err(|e| Failure::internal(STEP, e))?
        .ok_or_else(|| {
            Failure::new(
                STEP,
                ErrorCategory::InvalidConfiguration,
                format!(
                    "template {}@{} is not in the catalog",
                    spec.template.name, spec.template.version
                ),
            )
        })?;
    let validated = validate(spec, &stored.template, Catalogs::builtin()).map_err(|errs| {
        let list: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        Failure::new(STEP, ErrorCategory::InvalidConfiguration, list.join("; "))
    })?;
    for (k, v) in validated.variables() {
        if validated.is_sensitive(k) {
            ctx.logs.redactor.add_json(v);
        }
    }
    Ok((stored, validated))
}

/// The template bundle fetched and verified into a private temp directory, every stage composed (and
/// pointed at the emulator endpoint, if one is configured).
async fn unpack_workspace<P: Ports>(
    ctx: &RunContext<P>,
    stored: &StoredTemplate,
) -> Result<Workspace, Failure> {
    let dir = match &ctx.cfg.work_dir {
        Some(p) => tempfile::Builder::new().prefix("strato-op-").tempdir_in(p),
        None => tempfile::Builder::new().prefix("strato-op-").tempdir(),
    }
    .map_err(|e| Failure::internal(STEP, format!("creating the workspace: {e}")))?;
    let template = ctx
        .ports
        .cloud
        .fetch_bundle(stored, dir.path())
        .await
        .map_err(|e| Failure::internal(STEP, format!("template bundle: {e}")))?;
    ctx.note(
        STEP,
        &format!(
            "template {}@{} (sha256 {}) verified",
            template.name(),
            template.version(),
            &stored.sha256[..12.min(stored.sha256.len())]
        ),
    );
    let ws = Workspace::compose(dir, template).map_err(|e| {
        Failure::new(
            STEP,
            ErrorCategory::InvalidConfiguration,
            format!("composing stages: {e}"),
        )
    })?;
    if let Some(ep) = &ctx.cfg.provider_endpoint {
        // Until `init` says which provider version a stage runs (see `PreparedRun::init`).
        ws.point_provider_at(ep, ctx.cfg.provider_max_retries, ProviderDialect::Legacy)
            .map_err(|e| Failure::internal(STEP, e))?;
    }
    Ok(ws)
}

/// The inputs every stage gets: the spec's variables plus the managed ones (what Strato itself supplies).
fn render_inputs<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
    validated: &ValidatedSpec,
) -> Result<Map<String, Value>, Failure> {
    let cluster = &ctx.cluster;
    let mut managed = BTreeMap::new();
    managed.insert("region".to_owned(), Value::from(spec.region.clone()));
    // Also what the kubeconfig names (`connect::cloud_cluster_name` says why it is not the cluster's name).
    let unique = strato_domain::connect::cloud_cluster_name(spec.name.as_str(), cluster.cluster_id.as_str());
    managed.insert("cluster_name".to_owned(), Value::from(unique));
    managed.insert("cluster_id".to_owned(), Value::from(cluster.cluster_id.as_str()));
    managed.insert("tenant_id".to_owned(), Value::from(cluster.tenant_id.as_str()));
    // In the platform account the engine session refuses IAM roles and users without the deployment's
    // permissions boundary, so modules that create them set it from this; a target account has none ("").
    let boundary = match spec.target {
        Some(_) => None,
        None => engine_boundary_arn(&ctx.cfg.engine_role_arn, ctx.cfg.names.prefix()),
    };
    managed.insert(
        "permissions_boundary".to_owned(),
        Value::from(boundary.unwrap_or_default()),
    );
    if let Some(url) = &ctx.cfg.control_plane_url {
        managed.insert("control_plane_url".to_owned(), Value::from(url.clone()));
    }
    if validated.managed().contains("agent_token") {
        let secret = ctx.cfg.agent_token_secret.as_ref().ok_or_else(|| {
            Failure::internal(
                STEP,
                "the template installs the agent but STRATO_AGENT_TOKEN_SECRET is not set",
            )
        })?;
        let token = strato_domain::agent::registration_token(secret.as_bytes(), &cluster.cluster_id);
        ctx.logs.redactor.add(&token);
        managed.insert("agent_token".to_owned(), Value::from(token));
    }
    let text = tfvars_json(validated, &ManagedValues(managed)).map_err(|e| Failure::internal(STEP, e))?;
    serde_json::from_str(&text).map_err(|e| Failure::internal(STEP, e))
}

/// The engine with its environment, its version (from the probe), and whether it can apply a saved plan.
fn start_engine<P: Ports>(
    ctx: &RunContext<P>,
    env: Vec<(String, String)>,
    probed: Result<(EngineVersion, String), String>,
) -> Result<(P::Engine, EngineVersion, bool), Failure> {
    let engine = ctx.ports.engine.with_env(env);
    let (version, raw_version) = probed.map_err(|e| Failure::internal(STEP, e))?;
    let saved_plan_apply = saved_plan_apply_works(&raw_version);
    if !saved_plan_apply {
        ctx.note(
            STEP,
            &format!(
                "engine {raw_version} cannot apply saved plans; apply will plan again with the same inputs"
            ),
        );
    }
    ctx.note(
        STEP,
        &format!(
            "engine {} {}.{}.{}",
            ctx.cfg.terraform.display(),
            version.major,
            version.minor,
            version.patch
        ),
    );
    Ok((engine, version, saved_plan_apply))
}

/// Writes every stage's backend block in the customer's own storage on another cloud. The engine locks
/// the state there itself (a lock object, a blob lease, a lock file); a lock left by a dead run is released
/// with `terraform force-unlock`, as the failure's fix says.
fn write_customer_backends<P: Ports>(
    ctx: &RunContext<P>,
    ws: &Workspace,
    backends: &[(String, strato_terraform::backend::StateBackend)],
    engine: &EngineVersion,
) -> Result<(), Failure> {
    for (stage, backend) in backends {
        backend
            .tf_json(engine)
            .map_err(|e| Failure::new(STEP, ErrorCategory::InvalidConfiguration, e.to_string()))?;
        ws.write_state_backend(stage, backend, engine)
            .map_err(|e| Failure::internal(STEP, e))?;
    }
    if let Some((_, b)) = backends.first() {
        ctx.note(STEP, &format!("state in your {}", b.describe()));
    }
    Ok(())
}

/// Writes every stage's S3 backend block, then (as the cluster lock's holder) releases leftover state locks.
/// Returns the platform's state through the run's state session (`None` for a customer's).
async fn write_backends<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
    ws: &Workspace,
    target: Option<&(&TargetAccount, EngineCredentials)>,
    dialect: EngineDialect,
) -> Result<Option<<P::Cloud as Cloud>::State>, Failure> {
    let state = state_location(ctx, spec, ws, target).await?;
    let mut lock_ids = Vec::new();
    for s in &ws.stages {
        let cfg = BackendConfig {
            bucket: state.bucket.clone(),
            key: state_key(&ctx.cluster.tenant_id, &ctx.cluster.cluster_id, &s.stage),
            region: state.region.clone(),
            lock_table: state.lock_table.clone(),
            endpoint: ctx.cfg.provider_endpoint.clone(),
            profile: state.profile.clone(),
            // Strato's key for the platform's bucket; a customer's bucket keeps its own encryption.
            kms_key_id: state.platform.then(|| ctx.cfg.state_kms_key.clone()).flatten(),
        };
        ws.write_backend(&s.stage, &cfg, dialect)
            .map_err(|e| Failure::internal(STEP, e))?;
        lock_ids.push(strato_aws::state_lock::lock_id(&cfg.bucket, &cfg.key));
    }
    // Leftover state locks of a dead runner: only the cluster lock's holder may clear them, and only once
    // their holder is proven gone.
    ctx.fenced(STEP).await?;
    clear_state_locks(ctx, &state, &lock_ids).await?;
    Ok(state.platform.then_some(state.backend))
}

/// Releases the state locks left on `lock_ids` by runs that are gone; waits (polling, up to
/// `STRATO_STATE_LOCK_WAIT_SECS`) while another run of the cluster that may hold one is unfinished, then
/// fails with category `state_locked`. Stops early on a cancel, the time limit or SIGTERM.
async fn clear_state_locks<P: Ports>(
    ctx: &RunContext<P>,
    state: &StateOf<P>,
    lock_ids: &[String],
) -> Result<(), Failure> {
    use strato_terraform::state_lock::{StateLockVerdict, state_lock_verdict};
    let transient = |e: crate::RunnerError| Failure::new(STEP, ErrorCategory::Transient, e.to_string());
    let started = std::time::Instant::now();
    let mut noted = false;
    loop {
        let held = state
            .backend
            .held_locks(&state.lock_table, lock_ids)
            .await
            .map_err(transient)?;
        let Some(first) = held.first().cloned() else {
            return Ok(());
        };
        let ops = ctx
            .ports
            .store
            .open_cluster_operations(&ctx.cluster.cluster_id)
            .await
            .map_err(transient)?;
        let me = &ctx.op.operation_id;
        // The runner cannot ask ECS about other tasks: an unfinished run counts as alive until the
        // control plane ends it.
        let holders = match state_lock_verdict(&ops, Some(me), Some(me), |_| false) {
            StateLockVerdict::HolderGone => {
                let released = state
                    .backend
                    .release_locks(&state.lock_table, held)
                    .await
                    .map_err(transient)?;
                for lock in &released {
                    let note = crate::state_lock::note(lock);
                    tracing::warn!(%note, "leftover state lock released");
                    ctx.note(STEP, &note);
                }
                return Ok(());
            }
            StateLockVerdict::MaybeHeld(holders) => holders,
        };
        let waited = started.elapsed();
        if waited >= ctx.cfg.state_lock_wait {
            let (what, fix) = crate::state_lock::still_held(&first, &holders, waited.as_secs());
            let mut f = Failure::new(STEP, ErrorCategory::StateLocked, what);
            f.fix = fix;
            return Err(f);
        }
        if !noted {
            noted = true;
            let ids: Vec<String> = holders.iter().map(ToString::to_string).collect();
            ctx.note(
                STEP,
                &format!(
                    "Terraform state lock {} is held and operation(s) {} of this cluster may still run; \
                     waiting up to {}s for them to end",
                    first.lock_id,
                    ids.join(", "),
                    ctx.cfg.state_lock_wait.as_secs()
                ),
            );
        }
        let poll = (ctx.cfg.state_lock_wait / 10).clamp(Duration::from_millis(500), Duration::from_secs(10));
        ctx.backoff(poll).await.map_err(|r| Failure::stopped(STEP, r))?;
    }
}

/// Terraform 0.15.0 pre-releases (the offline test engine is 0.15.0-rc2) apply nothing from a saved plan
/// ("unknown instance … referenced during plan", "0 added"); every release applies it.
pub(super) fn saved_plan_apply_works(raw_version: &str) -> bool {
    !raw_version.trim_start_matches('v').starts_with("0.15.0-")
}

/// The engine's version, parsed and as printed.
async fn engine_version(engine: &impl Engine, bin: &Path) -> Result<(EngineVersion, String), String> {
    let text = engine.version_text().await.map_err(|e| {
        format!(
            "cannot run the engine {}: {e}; set STRATO_TERRAFORM",
            bin.display()
        )
    })?;
    parse_version(&text)
}

/// The version `version -json` printed (or, from very old engines, `Terraform v0.x.y`): parsed, and as
/// printed.
fn parse_version(text: &str) -> Result<(EngineVersion, String), String> {
    let raw = serde_json::from_str::<Value>(strato_terraform::render::strip_write_prefix(text.trim()))
        .ok()
        .and_then(|v| v["terraform_version"].as_str().map(str::to_owned));
    let parsed = EngineVersion::from_version_json(text).or_else(|| {
        // Very old engines print `Terraform v0.x.y` only.
        text.split_whitespace()
            .find_map(|w| EngineVersion::parse(w.trim_start_matches('v')))
    });
    match parsed {
        Some(v) => Ok((v, raw.unwrap_or_default())),
        None => Err(format!(
            "cannot read the engine version from {:?}",
            text.lines().next()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_plans_are_applied_except_on_broken_prereleases() {
        assert!(!saved_plan_apply_works("0.15.0-rc2"));
        assert!(saved_plan_apply_works("0.15.0"));
        assert!(saved_plan_apply_works("1.8.3"));
    }
}

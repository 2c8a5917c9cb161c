//! One operation from start to final event.

use std::collections::BTreeMap;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use serde_json::{Map, Value};
use strato_domain::ErrorCategory;
use strato_domain::artifacts;
use strato_domain::catalog::Catalogs;
use strato_domain::compose::{ComposedStage, step_name};
use strato_domain::cost::CostEstimate;
use strato_domain::error::UserError;
use strato_domain::messages::{LogStream, PlanSummary, RunnerEvent};
use strato_domain::model::{Cluster, Operation, OperationKind, ResourceChange};
use strato_domain::render::{BackendConfig, EngineVersion, ManagedValues, state_key, tfvars_json};
use strato_domain::validate::{ValidatedSpec, validate};
use tokio::sync::watch;

use crate::classify::{classify, error_summary};
use crate::credentials::{self, EngineCredentials};
use crate::engine::{Engine, Outcome, StopReason, StopRx};
use crate::logs::{self, LogHub, LogSinks, Redactor};
use crate::workspace::{PLAN_FILE, Workspace};
use crate::{Clients, Config, Reporter, RunSummary, RunnerError, secrets};

/// Transient failures of plan/apply are retried at most this many times.
pub const MAX_RETRIES: usize = 5;
/// A failed create's cleanup (destroy) is tried at most this many times.
pub const CLEANUP_ATTEMPTS: usize = 3;

/// Why a step failed, in user terms.
#[derive(Debug, Clone)]
struct Failure {
    step: String,
    category: ErrorCategory,
    what: String,
    fix: String,
    stopped: Option<StopReason>,
}

impl Failure {
    fn new(step: &str, category: ErrorCategory, what: impl Into<String>) -> Self {
        Self {
            step: step.to_owned(),
            category,
            what: what.into(),
            fix: category.default_fix().to_owned(),
            stopped: None,
        }
    }

    fn stopped(step: &str, reason: StopReason) -> Self {
        let (category, what) = match reason {
            StopReason::Cancelled => (ErrorCategory::Cancelled, "the operation was cancelled".to_owned()),
            StopReason::TimedOut => (
                ErrorCategory::Timeout,
                "the operation exceeded its time limit; Terraform was interrupted".to_owned(),
            ),
            StopReason::Terminated => (
                ErrorCategory::Transient,
                "the runner task was stopped (SIGTERM); Terraform was interrupted gracefully so its state was \
                 saved and its lock released"
                    .to_owned(),
            ),
        };
        Self {
            stopped: Some(reason),
            ..Self::new(step, category, what)
        }
    }

    fn from_outcome(step: &str, out: &Outcome) -> Self {
        if let Some(r) = out.stopped {
            return Self::stopped(step, r);
        }
        let summary = error_summary(&out.user_text);
        // Classify the diagnostics only: plan output before them may name anything (a resource called
        // "quota-…" must not make a failure a quota problem).
        let diagnostics = out
            .user_text
            .find("Error:")
            .map(|i| &out.user_text[i..])
            .unwrap_or(&out.user_text);
        let c = classify(diagnostics);
        let mut what = if summary.is_empty() {
            format!("the engine exited with code {:?}", out.code)
        } else {
            summary
        };
        if c.category == ErrorCategory::StateUnreadable {
            what = format!("the cluster's Terraform state is unreadable: {what}");
        }
        Self {
            fix: c.fix,
            ..Self::new(step, c.category, what)
        }
    }

    fn internal(step: &str, what: impl std::fmt::Display) -> Self {
        Self::new(step, ErrorCategory::Internal, what.to_string())
    }

    fn user_error(&self) -> UserError {
        UserError::new(self.category, &self.step, &self.what).with_fix(&self.fix)
    }
}

fn estimate_plan(plan_json: &Value, region: &str) -> CostEstimate {
    strato_domain::cost::estimate(plan_json, region)
}

/// Counts of planned actions from `show -json` (a replace is one add and one destroy).
pub fn plan_summary(plan: &Value) -> PlanSummary {
    let mut s = PlanSummary::default();
    for rc in plan["resource_changes"].as_array().into_iter().flatten() {
        let actions: Vec<&str> = rc["change"]["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for a in actions {
            match a {
                "create" => s.add += 1,
                "update" => s.change += 1,
                "delete" => s.destroy += 1,
                _ => {}
            }
        }
    }
    s
}

/// Changed resources of a (drift) plan: `resource_drift` when the engine reports it (refresh-only plans),
/// else `resource_changes` with an action other than no-op/read.
pub fn drift_changes(plan: &Value) -> Vec<ResourceChange> {
    let list = plan
        .get("resource_drift")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .or_else(|| plan["resource_changes"].as_array());
    list.into_iter()
        .flatten()
        .filter_map(|rc| {
            let actions: Vec<String> = rc["change"]["actions"]
                .as_array()?
                .iter()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect();
            let changed = actions.iter().any(|a| a != "no-op" && a != "read");
            changed.then(|| ResourceChange {
                address: rc["address"].as_str().unwrap_or_default().to_owned(),
                actions,
            })
        })
        .collect()
}

/// Output name → value.
pub type Outputs = Map<String, Value>;

/// Parses `output -json` into (non-sensitive, sensitive) maps.
pub fn split_outputs(text: &str) -> Result<(Outputs, Outputs), String> {
    let v: Value = serde_json::from_str(strato_domain::render::strip_write_prefix(text.trim()))
        .map_err(|e| format!("output -json is not JSON: {e}"))?;
    let mut plain = Map::new();
    let mut sensitive = Map::new();
    for (k, o) in v.as_object().into_iter().flatten() {
        let value = o.get("value").cloned().unwrap_or(Value::Null);
        if o.get("sensitive").and_then(Value::as_bool).unwrap_or(false) {
            sensitive.insert(k.clone(), value);
        } else {
            plain.insert(k.clone(), value);
        }
    }
    Ok((plain, sensitive))
}

struct Run {
    cfg: Config,
    clients: Clients,
    op: Operation,
    cluster: Cluster,
    reporter: Reporter,
    logs: LogHub,
    stop: StopRx,
    /// Fires only on SIGTERM: cleanup after a cancel keeps running, but not past a task stop.
    term: StopRx,
    engine: Option<Engine>,
    ws: Option<Workspace>,
    rendered: Map<String, Value>,
    region: String,
    version: Option<EngineVersion>,
    initialized: Vec<String>,
    /// Whether applying a saved plan works with this engine (see [`saved_plan_apply_works`]).
    saved_plan_apply: bool,
    /// Runs per step name, for debug-log object keys.
    debug_runs: BTreeMap<String, u32>,
    /// The estimates of the stages planned so far (checked against the tenant's budget before apply).
    estimate: CostEstimate,
    /// The tenant's monthly budget (USD), if set.
    budget: Option<f64>,
}

/// Runs the operation named by `cfg` to its final event. `Ok` only when the final event was sent.
pub async fn run_operation(cfg: Config, clients: Clients) -> Result<RunSummary, RunnerError> {
    let op = clients
        .store
        .get_operation(&cfg.operation_id)
        .await?
        .ok_or_else(|| RunnerError::OperationNotFound(cfg.operation_id.clone()))?;
    let cluster = if op.kind.has_cluster() {
        clients
            .store
            .find_cluster(&op.cluster_id)
            .await?
            .ok_or_else(|| RunnerError::ClusterNotFound(op.cluster_id.to_string()))?
    } else {
        // An estimate: the cluster it prices does not exist. This stand-in (the operation's synthetic id and
        // spec) only supplies names and managed values; it is never written.
        let spec = op.spec.clone().ok_or_else(|| {
            RunnerError::ClusterNotFound(format!("{} (an estimate without a spec)", op.cluster_id))
        })?;
        Cluster::new(op.tenant_id.clone(), op.cluster_id.clone(), spec, op.created_at)
    };
    let reporter = Reporter {
        sqs: clients.aws.sqs.clone(),
        events_url: clients.queues.events.clone(),
        operation_id: op.operation_id.clone(),
        fencing_token: cfg.fencing_token,
    };
    let sinks = LogSinks {
        sqs: clients.aws.sqs.clone(),
        logs_url: clients.queues.logs.clone(),
        s3: clients.aws.s3.clone(),
        artifacts_bucket: cfg.names.bucket("artifacts"),
    };
    let (hub, log_tasks) = LogHub::start(op.operation_id.clone(), sinks.clone(), Redactor::default());
    let (stop_tx, stop_rx) = watch::channel(None);
    let (term_tx, term_rx) = watch::channel(None);
    let background = spawn_background(&cfg, &clients, &reporter, &op, stop_tx, term_tx);

    let budget = clients.store.monthly_budget(&op.tenant_id).await?;
    let mut run = Run {
        region: cluster.spec.region.clone(),
        cfg,
        clients,
        op,
        cluster,
        reporter,
        logs: hub,
        stop: stop_rx,
        term: term_rx,
        engine: None,
        ws: None,
        rendered: Map::new(),
        version: None,
        initialized: Vec::new(),
        saved_plan_apply: true,
        debug_runs: BTreeMap::new(),
        estimate: CostEstimate::empty(),
        budget,
    };
    let result = run.execute().await;
    for h in background {
        h.abort();
    }
    let final_event = run.final_event(result).await;
    let op_id = run.op.operation_id.clone();
    let Run {
        logs: hub,
        clients,
        cfg,
        cluster,
        reporter,
        ..
    } = run;
    drop(hub);
    let last_log_seq = match log_tasks.finish(&sinks, &op_id).await {
        Ok(n) => n,
        Err(e) => {
            tracing::error!(error = %e, "log archive incomplete");
            0
        }
    };
    // Fencing: a run that lost its lock reports nothing (status would also reject it).
    if !holds_lock(&clients, &cluster, &op_id, cfg.fencing_token).await? {
        return Err(RunnerError::Fenced(cfg.fencing_token));
    }
    reporter
        .send(&final_event)
        .await
        .map_err(RunnerError::FinalEvent)?;
    Ok(RunSummary {
        final_event,
        last_log_seq,
    })
}

async fn holds_lock(
    clients: &Clients,
    cluster: &Cluster,
    op: &strato_domain::ids::OperationId,
    token: u64,
) -> Result<bool, RunnerError> {
    Ok(clients.store.cluster_lock(&cluster.cluster_id).await? == Some((op.clone(), token)))
}

/// Heartbeats (which also poll for a cancel request), the time limit and SIGTERM.
fn spawn_background(
    cfg: &Config,
    clients: &Clients,
    reporter: &Reporter,
    op: &Operation,
    stop_tx: watch::Sender<Option<StopReason>>,
    term_tx: watch::Sender<Option<StopReason>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let stop_tx = std::sync::Arc::new(stop_tx);
    let mut out = Vec::new();
    {
        let (reporter, store, every, op_id, stop_tx) = (
            reporter.clone(),
            clients.store.clone(),
            cfg.heartbeat,
            op.operation_id.clone(),
            stop_tx.clone(),
        );
        out.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                reporter
                    .progress(RunnerEvent::Heartbeat {
                        operation_id: op_id.clone(),
                        fencing_token: reporter.fencing_token,
                        at: strato_domain::ts::now(),
                    })
                    .await;
                if let Ok(Some(op)) = store.get_operation(&op_id).await
                    && op.cancel_requested
                {
                    stop_tx.send_if_modified(|s| s.is_none() && s.replace(StopReason::Cancelled).is_none());
                }
            }
        }));
    }
    {
        let (limit, stop_tx) = (cfg.time_limit, stop_tx.clone());
        out.push(tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            stop_tx.send_if_modified(|s| s.is_none() && s.replace(StopReason::TimedOut).is_none());
        }));
    }
    out.push(tokio::spawn(async move {
        let Ok(mut sig) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
            return;
        };
        if sig.recv().await.is_some() {
            // A task stop overrides a cancel in progress: there is no time left for cleanup.
            stop_tx.send_replace(Some(StopReason::Terminated));
            term_tx.send_replace(Some(StopReason::Terminated));
        }
    }));
    out
}

impl Run {
    fn steps(&self) -> usize {
        self.ws.as_ref().map(|w| w.stages.len()).unwrap_or(1)
    }

    fn step(&self, stage: &str, step: &str) -> String {
        step_name(self.steps(), stage, step)
    }

    fn note(&self, step: &str, text: &str) {
        self.logs.emit(LogStream::Strato, step, text);
    }

    async fn event_step(&self, step: &str, ok: Option<bool>) {
        let (operation_id, fencing_token, at) = (
            self.op.operation_id.clone(),
            self.cfg.fencing_token,
            strato_domain::ts::now(),
        );
        let ev = match ok {
            None => RunnerEvent::StepStarted {
                operation_id,
                fencing_token,
                step: step.to_owned(),
                at,
            },
            Some(ok) => RunnerEvent::StepFinished {
                operation_id,
                fencing_token,
                step: step.to_owned(),
                ok,
                at,
            },
        };
        self.reporter.progress(ev).await;
    }

    /// Runs one engine command as a reported step; uploads its debug log.
    async fn command(
        &mut self,
        stage: &str,
        step: &str,
        args: &[&str],
        capture: bool,
        cleanup: bool,
    ) -> Result<Outcome, Failure> {
        let name = self.step(stage, step);
        let dir = self
            .ws
            .as_ref()
            .map(|w| w.stage_dir(stage))
            .ok_or_else(|| Failure::internal(&name, "no workspace"))?;
        let engine = self
            .engine
            .clone()
            .ok_or_else(|| Failure::internal(&name, "no engine"))?;
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.event_step(&name, None).await;
        let mut stop = if cleanup {
            self.term.clone()
        } else {
            self.stop.clone()
        };
        let out = engine
            .run(&dir, &args, &name, capture, &self.logs, &mut stop)
            .await;
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                self.event_step(&name, Some(false)).await;
                return Err(Failure::internal(
                    &name,
                    format!("cannot run {}: {e}", engine.bin.display()),
                ));
            }
        };
        // `plan -detailed-exitcode` exits 2 when there are changes: success too.
        let ok = out.stopped.is_none()
            && match out.code {
                Some(0) => true,
                Some(2) => step == "plan",
                _ => false,
            };
        self.event_step(&name, Some(ok)).await;
        if !out.debug.is_empty() {
            // One object per run of a step: `plan`, then `plan.2` for a retry.
            let n = self.debug_runs.entry(name.clone()).or_insert(0);
            *n += 1;
            let key_step = if *n == 1 {
                name.clone()
            } else {
                format!("{name}.{n}")
            };
            let _ = logs::upload_debug(
                &self.clients.aws.s3,
                &self.cfg.names.bucket("artifacts"),
                &self.op.operation_id,
                &key_step,
                out.debug.clone(),
            )
            .await;
        }
        Ok(out)
    }

    async fn execute(&mut self) -> Result<ExecOutcome, Failure> {
        self.prepare().await?;
        match self.op.kind {
            OperationKind::Create | OperationKind::Update => self.apply_all().await,
            OperationKind::Delete => self.destroy_all().await,
            OperationKind::Plan => self.plan_only(false).await,
            OperationKind::DriftCheck => self.plan_only(true).await,
            OperationKind::Estimate => self.estimate_only().await,
        }
    }

    async fn prepare(&mut self) -> Result<(), Failure> {
        const STEP: &str = "prepare";
        self.event_step(STEP, None).await;
        let r = self.prepare_inner().await;
        self.event_step(STEP, Some(r.is_ok())).await;
        r
    }

    async fn prepare_inner(&mut self) -> Result<(), Failure> {
        const STEP: &str = "prepare";
        let spec = self.op.spec.clone().unwrap_or_else(|| self.cluster.spec.clone());
        let stored = self
            .clients
            .store
            .get_template(&spec.template.name, &spec.template.version)
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
        let validated: ValidatedSpec =
            validate(&spec, &stored.template, Catalogs::builtin()).map_err(|errs| {
                let list: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                Failure::new(STEP, ErrorCategory::InvalidConfiguration, list.join("; "))
            })?;
        for (k, v) in validated.variables() {
            if validated.is_sensitive(k) {
                self.logs.redactor.add_json(v);
            }
        }
        let dir = match &self.cfg.work_dir {
            Some(p) => tempfile::Builder::new().prefix("strato-op-").tempdir_in(p),
            None => tempfile::Builder::new().prefix("strato-op-").tempdir(),
        }
        .map_err(|e| Failure::internal(STEP, format!("creating the workspace: {e}")))?;
        let template = strato_aws::bundles::fetch(
            &self.clients.aws,
            &self.cfg.names,
            &stored.bundle_key,
            &stored.sha256,
            dir.path(),
        )
        .await
        .map_err(|e| Failure::internal(STEP, format!("template bundle: {e}")))?;
        self.note(
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
        if let Some(ep) = &self.cfg.provider_endpoint {
            ws.point_provider_at(ep, self.cfg.provider_max_retries)
                .map_err(|e| Failure::internal(STEP, e))?;
        }

        // Managed variables: what Strato itself supplies.
        let mut managed = BTreeMap::new();
        managed.insert("region".to_owned(), Value::from(spec.region.clone()));
        // Cloud names (EKS cluster, IAM roles) are unique per account and region, not per tenant: two
        // tenants' "prod" must not collide, so the name carries the end of the cluster id.
        let id = self.cluster.cluster_id.as_str();
        let unique = format!("{}-{}", spec.name.as_str(), &id[id.len().saturating_sub(8)..]);
        managed.insert("cluster_name".to_owned(), Value::from(unique));
        managed.insert(
            "cluster_id".to_owned(),
            Value::from(self.cluster.cluster_id.as_str()),
        );
        managed.insert(
            "tenant_id".to_owned(),
            Value::from(self.cluster.tenant_id.as_str()),
        );
        if let Some(url) = &self.cfg.control_plane_url {
            managed.insert("control_plane_url".to_owned(), Value::from(url.clone()));
        }
        if validated.managed().contains("agent_token") {
            let secret = self.cfg.agent_token_secret.as_ref().ok_or_else(|| {
                Failure::internal(
                    STEP,
                    "the template installs the agent but STRATO_AGENT_TOKEN_SECRET is not set",
                )
            })?;
            let token = strato_domain::agent::registration_token(secret.as_bytes(), &self.cluster.cluster_id);
            self.logs.redactor.add(&token);
            managed.insert("agent_token".to_owned(), Value::from(token));
        }
        let text =
            tfvars_json(&validated, &ManagedValues(managed)).map_err(|e| Failure::internal(STEP, e))?;
        self.rendered = serde_json::from_str(&text).map_err(|e| Failure::internal(STEP, e))?;

        // Engine environment and credentials.
        let mut env = vec![
            ("AWS_REGION".to_owned(), spec.region.clone()),
            ("AWS_DEFAULT_REGION".to_owned(), spec.region.clone()),
        ];
        env.extend(self.cfg.extra_engine_env.iter().cloned());
        let mut env_remove = Vec::new();
        if std::env::var_os("TF_PLUGIN_CACHE_DIR").is_none() {
            let cache = ws.bundle_dir().join(".plugin-cache");
            let _ = std::fs::create_dir_all(&cache);
            env.push(("TF_PLUGIN_CACHE_DIR".to_owned(), cache.display().to_string()));
        }
        let target = spec.target.clone();
        let sts_endpoint = self
            .cfg
            .sts_endpoint
            .clone()
            .or_else(|| self.cfg.provider_endpoint.clone());
        let base = self.clients.aws.config.clone();
        let creds: Option<EngineCredentials> = match &target {
            Some(t) => {
                // The external id is the customer's secret: it never appears in a log line or a message.
                self.logs.redactor.add(&t.external_id);
                let region = t.region.clone().unwrap_or_else(|| spec.region.clone());
                let c = credentials::assume_role(
                    &base,
                    sts_endpoint.as_deref(),
                    &region,
                    &t.role_arn,
                    &t.external_id,
                    &format!("strato-{}", self.op.operation_id),
                    self.cfg.preflight_timeout,
                )
                .await
                .map_err(|e| Failure::new(STEP, ErrorCategory::Credentials, e))?;
                self.logs.redactor.add(&c.secret_access_key);
                if let Some(t) = &c.session_token {
                    self.logs.redactor.add(t);
                }
                env_remove = EngineCredentials::INHERITED
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                env.extend(c.env());
                Some(c)
            }
            None => None,
        };
        // Preflight: the engine's credentials answer sts:GetCallerIdentity within the timeout.
        {
            let account = credentials::preflight(
                &base,
                sts_endpoint.as_deref(),
                &spec.region,
                creds.as_ref(),
                self.cfg.preflight_timeout,
            )
            .await
            .map_err(|e| Failure::new(STEP, ErrorCategory::Credentials, e))?;
            self.note(STEP, &format!("credentials checked (account {account})"));
        }

        let engine = Engine {
            bin: self.cfg.terraform.clone(),
            env,
            env_remove,
            grace: self.cfg.grace,
        };
        let (version, raw_version) = engine_version(&engine)
            .await
            .map_err(|e| Failure::internal(STEP, e))?;
        self.saved_plan_apply = saved_plan_apply_works(&raw_version);
        if !self.saved_plan_apply {
            self.note(
                STEP,
                &format!("engine {raw_version} cannot apply saved plans; apply will plan again with the same inputs"),
            );
        }
        self.note(
            STEP,
            &format!(
                "engine {} {}.{}.{}",
                self.cfg.terraform.display(),
                version.major,
                version.minor,
                version.patch
            ),
        );

        let dialect = version.dialect();
        self.version = Some(version);
        self.engine = Some(engine);
        if !self.op.kind.has_cluster() {
            // An estimate plans with no backend: its state is local to the workspace (removed with it), so
            // nothing is written to any state bucket or lock table.
            self.note(
                STEP,
                "plan only: local state in the workspace, nothing is written to a state bucket",
            );
            self.ws = Some(ws);
            return Ok(());
        }
        // State: the customer's bucket (created with versioning + encryption if missing) or the platform's.
        let (bucket, lock_table, state_region, lock_ddb) =
            match target.as_ref().and_then(|t| t.state_bucket.clone()) {
                Some(b) => {
                    let t = target.as_ref().expect("target has a bucket");
                    let region = t.region.clone().unwrap_or_else(|| spec.region.clone());
                    let c = creds.as_ref().expect("assumed");
                    let lock = t.lock_table.clone().unwrap_or_else(|| format!("{b}-locks"));
                    let ddb = ensure_customer_state(
                        &base,
                        self.cfg.provider_endpoint.as_deref(),
                        &region,
                        c,
                        &b,
                        &lock,
                    )
                    .await
                    .map_err(|e| Failure::new(STEP, ErrorCategory::Credentials, e))?;
                    (b, lock, region, ddb)
                }
                None => (
                    self.cfg.names.bucket("state"),
                    self.cfg.names.table("tf-locks"),
                    base.region()
                        .map(|r| r.to_string())
                        .unwrap_or_else(|| spec.region.clone()),
                    self.clients.aws.dynamodb.clone(),
                ),
            };
        let mut lock_ids = Vec::new();
        for s in &ws.stages {
            let cfg = BackendConfig {
                bucket: bucket.clone(),
                key: state_key(&self.cluster.tenant_id, &self.cluster.cluster_id, &s.stage),
                region: state_region.clone(),
                lock_table: lock_table.clone(),
                endpoint: self.cfg.provider_endpoint.clone(),
            };
            ws.write_backend(&s.stage, &cfg, dialect)
                .map_err(|e| Failure::internal(STEP, e))?;
            lock_ids.push(strato_aws::state_lock::lock_id(&cfg.bucket, &cfg.key));
        }
        // Leftover state locks of a dead runner: only the cluster lock's holder may clear them.
        self.fenced(STEP).await?;
        let released = crate::state_lock::clear_leftovers(&lock_ddb, &lock_table, &lock_ids)
            .await
            .map_err(|e| Failure::new(STEP, ErrorCategory::Transient, e.to_string()))?;
        for lock in &released {
            let note = crate::state_lock::note(lock);
            tracing::warn!(%note, "leftover state lock released");
            self.note(STEP, &note);
        }
        self.ws = Some(ws);
        Ok(())
    }

    fn stages(&self) -> Vec<ComposedStage> {
        self.ws.as_ref().map(|w| w.stages.clone()).unwrap_or_default()
    }

    fn write_tfvars(&self, stage: &ComposedStage, earlier: &Map<String, Value>) -> Result<(), Failure> {
        let ws = self
            .ws
            .as_ref()
            .ok_or_else(|| Failure::internal("prepare", "no workspace"))?;
        ws.write_tfvars(stage, &self.rendered, earlier)
            .map_err(|e| Failure::internal(&self.step(&stage.stage, "init"), e))
    }

    fn check(&self, stage: &str, step: &str, out: &Outcome, ok_codes: &[i32]) -> Result<(), Failure> {
        if out.stopped.is_none() && out.code.is_some_and(|c| ok_codes.contains(&c)) {
            Ok(())
        } else {
            Err(Failure::from_outcome(&self.step(stage, step), out))
        }
    }

    async fn init(&mut self, stage: &str) -> Result<(), Failure> {
        let out = self
            .command(
                stage,
                "init",
                &["init", "-input=false", "-no-color"],
                false,
                false,
            )
            .await?;
        self.check(stage, "init", &out, &[0])?;
        if !self.initialized.iter().any(|s| s == stage) {
            self.initialized.push(stage.to_owned());
        }
        Ok(())
    }

    async fn outputs(&mut self, stage: &str, cleanup: bool) -> Result<(Outputs, Outputs), Failure> {
        let out = self
            .command(stage, "output", &["output", "-json"], true, cleanup)
            .await?;
        self.check(stage, "output", &out, &[0])?;
        let (plain, sensitive) =
            split_outputs(&out.stdout).map_err(|e| Failure::internal(&self.step(stage, "output"), e))?;
        for v in sensitive.values() {
            self.logs.redactor.add_json(v);
        }
        Ok((plain, sensitive))
    }

    /// Sleeps before a retry unless the operation is being stopped.
    async fn backoff(&mut self, delay: Duration) -> Result<(), StopReason> {
        let mut stop = self.stop.clone();
        tokio::select! {
            _ = tokio::time::sleep(delay) => Ok(()),
            r = async { loop {
                if let Some(r) = *stop.borrow_and_update() { return r; }
                if stop.changed().await.is_err() { std::future::pending::<()>().await; }
            } } => Err(r),
        }
    }

    fn retry_delays(&self) -> impl Iterator<Item = Duration> + use<> {
        ExponentialBuilder::default()
            .with_min_delay(self.cfg.retry_base)
            .with_max_delay(self.cfg.retry_base * 16)
            .with_max_times(MAX_RETRIES)
            .with_jitter()
            .build()
    }

    /// plan → show → (apply), retried on transient failures with a fresh plan each time.
    async fn plan_and_apply(&mut self, stage: &str) -> Result<(), Failure> {
        let mut delays = self.retry_delays();
        loop {
            let r = self.plan_and_apply_once(stage).await;
            match r {
                Err(f) if f.stopped.is_none() && f.category == ErrorCategory::Transient => {
                    match delays.next() {
                        Some(d) => {
                            self.note(
                                &f.step,
                                &format!(
                                    "transient failure ({}); planning again in {:.1}s",
                                    f.what,
                                    d.as_secs_f64()
                                ),
                            );
                            self.backoff(d).await.map_err(|r| Failure::stopped(&f.step, r))?;
                        }
                        None => {
                            return Err(Failure {
                                what: format!("{} (still failing after {MAX_RETRIES} retries)", f.what),
                                ..f
                            });
                        }
                    }
                }
                other => return other,
            }
        }
    }

    async fn plan_and_apply_once(&mut self, stage: &str) -> Result<(), Failure> {
        let changes = self.plan(stage, false).await?.1;
        if !changes {
            self.note(&self.step(stage, "apply"), "no changes; nothing to apply");
            return Ok(());
        }
        let mut args = vec!["apply", "-input=false", "-no-color", "-auto-approve"];
        if self.saved_plan_apply {
            args.push(PLAN_FILE);
        }
        let out = self.command(stage, "apply", &args, false, false).await?;
        self.check(stage, "apply", &out, &[0])
    }

    /// plan (-out, -detailed-exitcode) → show -json → PlanReady. Returns the plan JSON and whether it has changes.
    async fn plan(&mut self, stage: &str, drift: bool) -> Result<(Value, bool), Failure> {
        let mut args = vec!["plan", "-input=false", "-no-color", "-detailed-exitcode"];
        let out_arg = format!("-out={PLAN_FILE}");
        args.push(&out_arg);
        if drift && self.version.as_ref().is_some_and(|v| v.supports_refresh_only()) {
            args.push("-refresh-only");
        }
        let out = self.command(stage, "plan", &args, false, false).await?;
        self.check(stage, "plan", &out, &[0, 2])?;
        let changes = out.code == Some(2);
        let show = self
            .command(
                stage,
                "show",
                &["show", "-json", "-no-color", PLAN_FILE],
                true,
                false,
            )
            .await?;
        self.check(stage, "show", &show, &[0])?;
        let plan: Value = serde_json::from_str(strato_domain::render::strip_write_prefix(show.stdout.trim()))
            .map_err(|e| {
                Failure::internal(&self.step(stage, "show"), format!("show -json is not JSON: {e}"))
            })?;
        let summary = plan_summary(&plan);
        let estimate = estimate_plan(&plan, &self.region);
        self.estimate.merge_stage(stage, &estimate);
        self.note(
            &self.step(stage, "plan"),
            &format!(
                "plan: {} to add, {} to change, {} to destroy",
                summary.add, summary.change, summary.destroy
            ),
        );
        self.reporter
            .progress(RunnerEvent::PlanReady {
                operation_id: self.op.operation_id.clone(),
                fencing_token: self.cfg.fencing_token,
                stage: stage.to_owned(),
                summary,
                estimate: Some(estimate),
                at: strato_domain::ts::now(),
            })
            .await;
        if let Some(budget) = self.budget
            && matches!(self.op.kind, OperationKind::Create | OperationKind::Update)
            && self.estimate.total_monthly > budget
        {
            let mut f = Failure::new(
                &self.step(stage, "plan"),
                ErrorCategory::Quota,
                format!(
                    "the plan's estimated cost is {:.2} USD/month, over the tenant's monthly budget of {budget:.2} USD; \
                     nothing was applied",
                    self.estimate.total_monthly
                ),
            );
            f.fix =
                "Choose smaller or fewer instances (PATCH the cluster's variables), or raise the tenant's \
                     monthly budget, then retry."
                    .into();
            return Err(f);
        }
        Ok((plan, changes))
    }

    async fn apply_all(&mut self) -> Result<ExecOutcome, Failure> {
        let mut all_plain = Map::new();
        let mut all_sensitive = Map::new();
        let mut earlier = Map::new();
        for stage in self.stages() {
            self.write_tfvars(&stage, &earlier)?;
            self.init(&stage.stage).await?;
            self.plan_and_apply(&stage.stage).await?;
            let (plain, sensitive) = self.outputs(&stage.stage, false).await?;
            earlier.extend(plain.clone());
            earlier.extend(sensitive.clone());
            all_plain.extend(plain);
            all_sensitive.extend(sensitive);
        }
        if !all_sensitive.is_empty() {
            self.fenced("store sensitive outputs").await?;
            let name = secrets::secret_name(&self.cfg.names, &self.cluster.cluster_id);
            secrets::store_outputs(&self.clients.secrets, &name, &all_sensitive)
                .await
                .map_err(|e| Failure::internal("outputs", e))?;
            self.note(
                "outputs",
                &format!(
                    "{} sensitive output(s) stored in Secrets Manager",
                    all_sensitive.len()
                ),
            );
        }
        Ok(ExecOutcome {
            outputs: all_plain,
            drift: None,
        })
    }

    async fn fenced(&self, what: &str) -> Result<(), Failure> {
        match holds_lock(
            &self.clients,
            &self.cluster,
            &self.op.operation_id,
            self.cfg.fencing_token,
        )
        .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(Failure::internal(
                what,
                format!(
                    "the cluster lock no longer holds fencing token {}; not writing",
                    self.cfg.fencing_token
                ),
            )),
            Err(e) => Err(Failure::internal(what, e)),
        }
    }

    /// Reads every stage's outputs (later stages' inputs), then destroys in reverse order.
    async fn destroy_all(&mut self) -> Result<ExecOutcome, Failure> {
        let stages = self.stages();
        let mut earlier = Map::new();
        let mut inputs = Vec::new();
        for stage in &stages {
            self.write_tfvars(stage, &earlier)?;
            inputs.push(earlier.clone());
            self.init(&stage.stage).await?;
            let (plain, sensitive) = self.outputs(&stage.stage, false).await?;
            earlier.extend(plain);
            earlier.extend(sensitive);
        }
        for (stage, _) in stages.iter().zip(inputs).rev() {
            let mut delays = self.retry_delays();
            loop {
                let out = self
                    .command(
                        &stage.stage,
                        "destroy",
                        &["destroy", "-input=false", "-no-color", "-auto-approve"],
                        false,
                        false,
                    )
                    .await?;
                match self.check(&stage.stage, "destroy", &out, &[0]) {
                    Ok(()) => break,
                    Err(f) if f.stopped.is_none() && f.category == ErrorCategory::Transient => {
                        let Some(d) = delays.next() else { return Err(f) };
                        self.note(
                            &f.step,
                            &format!("transient failure; retrying in {:.1}s", d.as_secs_f64()),
                        );
                        self.backoff(d).await.map_err(|r| Failure::stopped(&f.step, r))?;
                    }
                    Err(f) => return Err(f),
                }
            }
        }
        self.fenced("delete sensitive outputs").await?;
        let name = secrets::secret_name(&self.cfg.names, &self.cluster.cluster_id);
        secrets::delete_outputs(&self.clients.secrets, &name)
            .await
            .map_err(|e| Failure::internal("outputs", e))?;
        Ok(ExecOutcome {
            outputs: Map::new(),
            drift: None,
        })
    }

    /// `plan` kind (nothing applied) and drift checks (saved plan kept, changed resources reported).
    async fn plan_only(&mut self, drift: bool) -> Result<ExecOutcome, Failure> {
        let mut earlier = Map::new();
        let mut changes = Vec::new();
        for stage in self.stages() {
            self.write_tfvars(&stage, &earlier)?;
            self.init(&stage.stage).await?;
            let (plan, _) = self.plan(&stage.stage, drift).await?;
            if drift {
                changes.extend(drift_changes(&plan));
                let path = self
                    .ws
                    .as_ref()
                    .map(|w| w.stage_dir(&stage.stage).join(PLAN_FILE));
                if let Some(bytes) = path.and_then(|p| std::fs::read(p).ok()) {
                    let _ = self
                        .clients
                        .aws
                        .s3
                        .put_object()
                        .bucket(self.cfg.names.bucket("artifacts"))
                        .key(artifacts::plan_key(&self.op.operation_id, &stage.stage))
                        .body(bytes.into())
                        .send()
                        .await;
                }
            }
            // Later stages plan against what earlier ones currently hold.
            let (plain, sensitive) = self.outputs(&stage.stage, false).await?;
            earlier.extend(plain);
            earlier.extend(sensitive);
        }
        Ok(ExecOutcome {
            outputs: Map::new(),
            drift: drift.then_some(changes),
        })
    }

    /// An estimate: each stage is planned (and priced) with local state; nothing is applied or stored. A
    /// later stage whose inputs are earlier stages' outputs cannot be planned (those outputs exist only after
    /// an apply): it is reported as one "not estimated" entry naming those inputs, never as zero.
    async fn estimate_only(&mut self) -> Result<ExecOutcome, Failure> {
        let stages = self.stages();
        for (i, stage) in stages.iter().enumerate() {
            let from_earlier: Vec<String> = stage
                .variables
                .keys()
                .filter(|v| !self.rendered.contains_key(*v))
                .filter(|v| stages[..i].iter().any(|s| s.outputs.contains_key(*v)))
                .cloned()
                .collect();
            if from_earlier.is_empty() {
                self.write_tfvars(stage, &Map::new())?;
                self.init(&stage.stage).await?;
                self.plan(&stage.stage, false).await?;
                continue;
            }
            let why = format!(
                "stage {} was not planned: its inputs {} are outputs of earlier stages, which exist only after \
                 those are applied",
                stage.stage,
                from_earlier.join(", ")
            );
            self.note(&self.step(&stage.stage, "plan"), &why);
            let skipped = CostEstimate::not_planned(&format!("stage.{}", stage.stage), &why);
            self.estimate.merge_stage(&stage.stage, &skipped);
            self.reporter
                .progress(RunnerEvent::PlanReady {
                    operation_id: self.op.operation_id.clone(),
                    fencing_token: self.cfg.fencing_token,
                    stage: stage.stage.clone(),
                    summary: PlanSummary::default(),
                    estimate: Some(skipped),
                    at: strato_domain::ts::now(),
                })
                .await;
        }
        Ok(ExecOutcome {
            outputs: Map::new(),
            drift: None,
        })
    }

    /// After a failed or cancelled create: destroy what was created, stage by stage in reverse.
    /// Returns (destroyed addresses, addresses left behind).
    async fn cleanup(&mut self) -> (Vec<String>, Vec<String>, Option<String>) {
        let mut destroyed = Vec::new();
        let mut left = Vec::new();
        let mut last_error = None;
        let stages: Vec<String> = self.initialized.iter().rev().cloned().collect();
        for stage in stages {
            // Unknown (the listing failed) still gets a destroy; known-empty needs none.
            let before = self.state_list(&stage).await;
            if before.as_ref().is_some_and(Vec::is_empty) {
                continue;
            }
            let before = before.unwrap_or_default();
            let mut delays = ExponentialBuilder::default()
                .with_min_delay(self.cfg.retry_base)
                .with_max_times(CLEANUP_ATTEMPTS - 1)
                .with_jitter()
                .build();
            let mut ok = false;
            loop {
                match self
                    .command(
                        &stage,
                        "cleanup",
                        &["destroy", "-input=false", "-no-color", "-auto-approve"],
                        false,
                        true,
                    )
                    .await
                {
                    Ok(out) if out.success() => {
                        ok = true;
                        break;
                    }
                    Ok(out) => {
                        last_error = Some(Failure::from_outcome(&self.step(&stage, "cleanup"), &out).what)
                    }
                    Err(f) => last_error = Some(f.what),
                }
                if self.term.borrow().is_some() {
                    break;
                }
                let Some(d) = delays.next() else { break };
                tokio::time::sleep(d).await;
            }
            let after = self.state_list(&stage).await.unwrap_or_else(|| before.clone());
            if ok && after.is_empty() {
                destroyed.extend(before);
            } else {
                destroyed.extend(before.iter().filter(|a| !after.contains(a)).cloned());
                left.extend(after);
            }
        }
        (destroyed, left, last_error)
    }

    async fn state_list(&mut self, stage: &str) -> Option<Vec<String>> {
        let dir = self.ws.as_ref()?.stage_dir(stage);
        let engine = self.engine.clone()?;
        let mut never = watch::channel(None).1;
        let out = engine
            .run(
                &dir,
                &["state".into(), "list".into()],
                "cleanup",
                true,
                &self.logs,
                &mut never,
            )
            .await
            .ok()?;
        (out.code == Some(0)).then(|| {
            strato_domain::render::strip_write_prefix(&out.stdout)
                .lines()
                .map(|l| strato_domain::render::strip_write_prefix(l.trim()).to_owned())
                .filter(|l| !l.is_empty())
                .collect()
        })
    }

    /// Turns the run's result into its one final event (cleaning up a failed create first).
    async fn final_event(&mut self, result: Result<ExecOutcome, Failure>) -> RunnerEvent {
        let (operation_id, fencing_token) = (self.op.operation_id.clone(), self.cfg.fencing_token);
        let failure = match result {
            Ok(done) => {
                self.note("done", "operation succeeded");
                return RunnerEvent::Succeeded {
                    operation_id,
                    fencing_token,
                    outputs: done.outputs.into_iter().collect(),
                    drift: done.drift,
                    estimate: (!self.estimate.resources.is_empty()).then(|| self.estimate.clone()),
                    at: strato_domain::ts::now(),
                };
            }
            Err(f) => f,
        };
        let mut failure = failure;
        let wants_cleanup = self.op.kind == OperationKind::Create
            && !self.initialized.is_empty()
            && failure.stopped != Some(StopReason::Terminated);
        if wants_cleanup {
            self.note(
                "cleanup",
                &format!("create failed at {}: cleaning up what was created", failure.step),
            );
            let (destroyed, left, err) = self.cleanup().await;
            let cleaned = if destroyed.is_empty() {
                "nothing had been created".to_owned()
            } else {
                format!(
                    "cleaned up {} resource(s): {}",
                    destroyed.len(),
                    destroyed.join(", ")
                )
            };
            if left.is_empty() {
                failure.what = format!("{}; {cleaned}", failure.what);
            } else {
                failure = Failure {
                    what: format!(
                        "{}; cleanup failed after {CLEANUP_ATTEMPTS} attempts ({}), {} resource(s) left: {}; {cleaned}",
                        failure.what,
                        err.unwrap_or_else(|| "unknown error".into()),
                        left.len(),
                        left.join(", ")
                    ),
                    category: ErrorCategory::CleanupFailed,
                    fix: ErrorCategory::CleanupFailed.default_fix().to_owned(),
                    stopped: None,
                    step: failure.step,
                };
            }
        }
        self.note(&failure.step, &format!("failed: {}", failure.what));
        let at = strato_domain::ts::now();
        if failure.stopped == Some(StopReason::Cancelled) {
            return RunnerEvent::Cancelled {
                operation_id,
                fencing_token,
                at,
            };
        }
        RunnerEvent::Failed {
            operation_id,
            fencing_token,
            error: failure.user_error(),
            at,
        }
    }
}

struct ExecOutcome {
    outputs: Map<String, Value>,
    drift: Option<Vec<ResourceChange>>,
}

/// Terraform 0.15.0 pre-releases (the offline test engine is 0.15.0-rc2) apply nothing from a saved plan
/// ("unknown instance … referenced during plan", "0 added"); every release applies it.
pub fn saved_plan_apply_works(raw_version: &str) -> bool {
    !raw_version.trim_start_matches('v').starts_with("0.15.0-")
}

/// The engine's version, parsed and as printed.
async fn engine_version(engine: &Engine) -> Result<(EngineVersion, String), String> {
    let dir = std::env::temp_dir();
    let out = engine
        .command(&dir, &["version".into(), "-json".into()])
        .output()
        .await
        .map_err(|e| {
            format!(
                "cannot run the engine {}: {e}; set STRATO_TERRAFORM",
                engine.bin.display()
            )
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let raw = serde_json::from_str::<Value>(strato_domain::render::strip_write_prefix(text.trim()))
        .ok()
        .and_then(|v| v["terraform_version"].as_str().map(str::to_owned));
    let parsed = EngineVersion::from_version_json(&text).or_else(|| {
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
        .credentials_provider(aws_sdk_s3::config::SharedCredentialsProvider::new(
            aws_sdk_s3::config::Credentials::new(
                creds.access_key_id.clone(),
                creds.secret_access_key.clone(),
                creds.session_token.clone(),
                None,
                "strato-target-account",
            ),
        ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plan_summary_counts_replace_as_add_and_destroy() {
        let plan = json!({"resource_changes": [
            {"address": "a", "change": {"actions": ["create"]}},
            {"address": "b", "change": {"actions": ["delete", "create"]}},
            {"address": "c", "change": {"actions": ["update"]}},
            {"address": "d", "change": {"actions": ["no-op"]}},
        ]});
        assert_eq!(
            plan_summary(&plan),
            PlanSummary {
                add: 2,
                change: 1,
                destroy: 1
            }
        );
        let d = drift_changes(&plan);
        assert_eq!(
            d.iter().map(|c| c.address.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        let refresh = json!({"resource_drift": [{"address": "x", "change": {"actions": ["update"]}}],
            "resource_changes": []});
        assert_eq!(drift_changes(&refresh)[0].address, "x");
    }

    #[test]
    fn saved_plans_are_applied_except_on_broken_prereleases() {
        assert!(!saved_plan_apply_works("0.15.0-rc2"));
        assert!(saved_plan_apply_works("0.15.0"));
        assert!(saved_plan_apply_works("1.8.3"));
    }

    #[test]
    fn outputs_split_by_sensitivity() {
        let (p, s) = split_outputs(
            r#"{"vpc_id":{"sensitive":false,"type":"string","value":"vpc-1"},"kc":{"sensitive":true,"type":"string","value":"secret"}}"#,
        )
        .unwrap();
        assert_eq!(p["vpc_id"], "vpc-1");
        assert_eq!(s["kc"], "secret");
        assert!(!p.contains_key("kc"));
    }
}

//! The operation kinds' engine commands, stage by stage: create/update (init → plan → show → apply →
//! output), delete (init → output, then destroy in reverse), plan and drift check (init → plan → show),
//! estimate (plan with local state). Transient plan/apply/destroy failures are retried with backoff.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use serde_json::{Map, Value};
use strato_domain::approval::SavedPlan;
use strato_domain::model::{OperationKind, ResourceChange};
use strato_domain::preview::Preview;
use strato_terraform::compose::ComposedStage;
use strato_terraform::render::{ProviderDialect, state_key};

use super::approval::Gate;
use super::failure::Failure;
use super::plan::{Outputs, drift_changes, split_outputs};
use super::preview::PreviewBuild;
use super::{MAX_RETRIES, PreparedRun};
use crate::outcome::Outcome;
use crate::ports::{Engine, OutputSecrets, Ports, StateBackend};
use crate::workspace::{LOCK_FILE, PLAN_FILE};
use crate::{logs, secrets};
use strato_domain::vitals;

/// What a successful run reports: non-sensitive outputs, and for a drift check the changed resources.
pub(super) struct ExecOutcome {
    pub(super) outputs: Map<String, Value>,
    pub(super) drift: Option<Vec<ResourceChange>>,
    /// A plan saved for approval: the run ends with it, the operation waits.
    pub(super) awaiting: Option<Box<SavedPlan>>,
    /// A preview's result (`plan` kind).
    pub(super) preview: Option<Box<Preview>>,
}

impl ExecOutcome {
    pub(super) fn nothing() -> Self {
        Self {
            outputs: Map::new(),
            drift: None,
            awaiting: None,
            preview: None,
        }
    }
}

impl<P: Ports> PreparedRun<'_, P> {
    /// Runs the operation kind's stages.
    pub(super) async fn execute(&mut self) -> Result<ExecOutcome, Failure> {
        match self.ctx.op.kind {
            OperationKind::Create | OperationKind::Update => self.apply_all().await,
            OperationKind::Delete => self.destroy_all().await,
            OperationKind::Plan => self.plan_only(false).await,
            OperationKind::DriftCheck => self.plan_only(true).await,
            OperationKind::Estimate => self.estimate_only().await,
            OperationKind::RestoreState => self.restore_state().await,
        }
    }

    /// Runs one engine command as a reported step; uploads its debug log. `cleanup` commands stop only on
    /// SIGTERM, not on a cancel or the time limit (they run because of those).
    pub(super) async fn command(
        &self,
        stage: &str,
        step: &str,
        args: &[&str],
        capture: bool,
        cleanup: bool,
    ) -> Result<Outcome, Failure> {
        let name = self.step(stage, step);
        // A step boundary: nothing starts once the run is being stopped (a cleanup obeys only SIGTERM and
        // the end of the time limit, which `run` below sees at once).
        if !cleanup && let Some(reason) = self.ctx.stop_requested().await {
            self.note(
                &name,
                &format!("not started: {}", Failure::stopped(&name, reason).what),
            );
            return Err(Failure::stopped(&name, reason));
        }
        let dir = self.ws.stage_dir(stage);
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.ctx.event_step(&name, None);
        let began = std::time::Instant::now();
        let mut stop = if cleanup {
            self.ctx.term.clone()
        } else {
            self.ctx.stop.clone()
        };
        let engine = self.engine_for(stage);
        let mut out = engine
            .run(&dir, &args, &name, capture, &self.ctx.logs, &mut stop)
            .await;
        // A dead run's lock in the customer's storage: released, then the command runs once more.
        if let Ok(o) = &out {
            match self.released_foreign_lock(stage, &name, o).await {
                Ok(true) => {
                    out = engine
                        .run(&dir, &args, &name, capture, &self.ctx.logs, &mut stop)
                        .await;
                }
                Ok(false) => {}
                Err(f) => {
                    vitals::step_finished(self.ctx.op.kind, &name, false, began.elapsed());
                    self.ctx.event_step(&name, Some(false));
                    return Err(f);
                }
            }
        }
        let took = began.elapsed();
        self.ctx.engine_time.record(took);
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                vitals::step_finished(self.ctx.op.kind, &name, false, took);
                self.ctx.event_step(&name, Some(false));
                return Err(Failure::internal(
                    &name,
                    format!("cannot run {}: {e}", self.ctx.cfg.terraform.display()),
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
        vitals::step_finished(self.ctx.op.kind, &name, ok, took);
        self.ctx.event_step(&name, Some(ok));
        if !out.debug.is_empty() {
            self.upload_debug_log(&name, out.debug.clone()).await;
        }
        Ok(out)
    }

    /// One object per run of a step: `plan`, then `plan.2` for a retry. Best effort. Redacted like the user
    /// log: the engine's trace can carry sensitive inputs (provider requests, variable values).
    async fn upload_debug_log(&self, name: &str, debug: Vec<u8>) {
        let debug = self
            .ctx
            .logs
            .redactor
            .redact(&String::from_utf8_lossy(&debug))
            .into_bytes();
        let n = {
            let mut runs = self.debug_runs.lock().unwrap_or_else(|p| p.into_inner());
            let n = runs.entry(name.to_owned()).or_insert(0);
            *n += 1;
            *n
        };
        let key_step = if n == 1 {
            name.to_owned()
        } else {
            format!("{name}.{n}")
        };
        let _ = logs::upload_debug(&self.ctx.ports.sinks, &self.ctx.op.operation_id, &key_step, debug).await;
    }

    pub(super) fn write_tfvars(
        &self,
        stage: &ComposedStage,
        earlier: &Map<String, Value>,
    ) -> Result<(), Failure> {
        self.ws
            .write_tfvars(stage, &self.rendered, earlier)
            .map_err(|e| Failure::internal(&self.step(&stage.stage, "init"), e))
    }

    fn check(&self, stage: &str, step: &str, out: &Outcome, ok_codes: &[i32]) -> Result<(), Failure> {
        if out.stopped.is_none() && out.code.is_some_and(|c| ok_codes.contains(&c)) {
            Ok(())
        } else {
            Err(Failure::from_outcome(&self.step(stage, step), out))
        }
    }

    pub(super) async fn init(&mut self, stage: &str) -> Result<(), Failure> {
        let mut args = vec!["init", "-input=false", "-no-color"];
        // A template that pins its providers: the engine installs exactly those packages or fails.
        if self.ws.locked {
            args.push("-lockfile=readonly");
        }
        let out = self.command(stage, "init", &args, false, false).await?;
        self.check(stage, "init", &out, &[0])?;
        self.point_provider(stage)?;
        if !self.initialized.iter().any(|s| s == stage) {
            self.initialized.push(stage.to_owned());
        }
        Ok(())
    }

    /// Emulator mode: rewrites the provider files in the dialect of the AWS provider version `init` selected
    /// for `stage` (its lock file), when that differs from the one they are written in. Notes the version.
    fn point_provider(&mut self, stage: &str) -> Result<(), Failure> {
        let Some(endpoint) = self.ctx.cfg.provider_endpoint.clone() else {
            return Ok(());
        };
        let lock = std::fs::read_to_string(self.ws.stage_dir(stage).join(LOCK_FILE)).unwrap_or_default();
        let Some(version) = ProviderDialect::selected_aws_version(&lock) else {
            return Ok(());
        };
        let dialect = ProviderDialect::for_version(&version).unwrap_or(ProviderDialect::Legacy);
        self.note(
            &self.step(stage, "init"),
            &format!("AWS provider {version} ({dialect:?} provider settings)"),
        );
        if dialect != self.provider_dialect {
            self.ws
                .point_provider_at(&endpoint, self.ctx.cfg.provider_max_retries, dialect)
                .map_err(|e| Failure::internal(&self.step(stage, "init"), e))?;
            self.provider_dialect = dialect;
        }
        Ok(())
    }

    async fn outputs(&self, stage: &str, cleanup: bool) -> Result<(Outputs, Outputs), Failure> {
        let out = self
            .command(stage, "output", &["output", "-json"], true, cleanup)
            .await?;
        self.check(stage, "output", &out, &[0])?;
        let (plain, sensitive) =
            split_outputs(&out.stdout).map_err(|e| Failure::internal(&self.step(stage, "output"), e))?;
        for v in sensitive.values() {
            self.ctx.logs.redactor.add_json(v);
        }
        Ok((plain, sensitive))
    }

    fn retry_delays(&self) -> impl Iterator<Item = Duration> + use<P> {
        ExponentialBuilder::default()
            .with_min_delay(self.ctx.cfg.retry_base)
            .with_max_delay(self.ctx.cfg.retry_base * 16)
            .with_max_times(MAX_RETRIES)
            .with_jitter()
            .build()
    }

    /// plan → show → (apply), retried on transient failures with a fresh plan each time. Returns whether
    /// anything was applied.
    async fn plan_and_apply(&mut self, stage: &str) -> Result<bool, Failure> {
        let mut delays = self.retry_delays();
        let mut apply_failed = false;
        loop {
            let f = match self.plan_and_apply_once(stage).await {
                Err(f) if f.is_retryable() => f,
                // Only after a failed apply of this run can "already exists" be that apply's own work.
                Err(f) if apply_failed && self.adopt(stage, &f).await? => continue,
                other => return other,
            };
            apply_failed |= f.step == self.step(stage, "apply");
            let Some(d) = delays.next() else {
                return Err(Failure {
                    what: format!("{} (still failing after {MAX_RETRIES} retries)", f.what),
                    ..f
                });
            };
            vitals::step_retried(self.ctx.op.kind, &f.step);
            self.note(
                &f.step,
                &format!(
                    "transient failure ({}); planning again in {:.1}s",
                    f.what,
                    d.as_secs_f64()
                ),
            );
            self.ctx
                .backoff(d)
                .await
                .map_err(|r| Failure::stopped(&f.step, r))?;
        }
    }

    async fn plan_and_apply_once(&mut self, stage: &str) -> Result<bool, Failure> {
        if self.plan_gates_apply() {
            // The plan's price or its policies decide whether anything is applied.
            let changes = self.plan(stage, false).await?.1;
            if !changes {
                self.note(&self.step(stage, "apply"), "no changes; nothing to apply");
                return Ok(false);
            }
            self.apply(stage).await?;
            return Ok(true);
        }
        let changes = self.plan_command(stage, false).await?;
        if !changes {
            let plan = self.show(stage).await?;
            self.report_plan(stage, &plan);
            self.note(&self.step(stage, "apply"), "no changes; nothing to apply");
            return Ok(false);
        }
        // Without a budget or plan policies nothing waits for the plan: `show -json` (summary and estimate) reads the
        // saved plan while it is applied. A plan that cannot be read then only loses its estimate.
        let (shown, applied) = tokio::join!(self.show(stage), self.apply(stage));
        match shown {
            Ok(plan) => self.report_plan(stage, &plan),
            Err(f) => self.note(
                &f.step,
                &format!(
                    "the saved plan could not be read ({}); no estimate for this stage",
                    f.what
                ),
            ),
        }
        applied?;
        Ok(true)
    }

    pub(super) async fn apply(&self, stage: &str) -> Result<(), Failure> {
        let mut args = vec!["apply", "-input=false", "-no-color", "-auto-approve"];
        if self.saved_plan_apply {
            args.push(PLAN_FILE);
        }
        self.apply_started
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let out = self.command(stage, "apply", &args, false, false).await?;
        self.check(stage, "apply", &out, &[0])
    }

    /// After an apply, stores what the cloud now holds (`apply -refresh-only`), on engines that check drift
    /// with `plan -refresh-only`. Without it the state keeps a resource as it was when written, before later
    /// resources of the same apply changed it (a security group before its separate rules): the next drift
    /// check would report the apply's own work as changed outside Strato. Best effort: a failure only
    /// risks such a report, never the applied resources.
    async fn refresh_state(&self, stage: &str) {
        if !self.version.supports_refresh_only() {
            return;
        }
        let args = [
            "apply",
            "-refresh-only",
            "-input=false",
            "-no-color",
            "-auto-approve",
        ];
        let ok = match self.command(stage, "refresh", &args, false, false).await {
            Ok(out) => out.success(),
            Err(_) => false,
        };
        if !ok {
            self.note(
                &self.step(stage, "refresh"),
                "refreshing the state after the apply failed; the next drift check may report this apply's own \
                 changes",
            );
        }
    }

    /// After an apply: `output -json` while the state is refreshed. Both only read the cloud or the state
    /// the apply wrote (`output` takes no state lock), so neither waits for the other; the outputs are the
    /// applied ones, as `output` right after `apply` gives them. Both have ended when this returns.
    async fn outputs_and_refresh(&self, stage: &str) -> Result<(Outputs, Outputs), Failure> {
        let (outputs, ()) = tokio::join!(self.outputs(stage, false), self.refresh_state(stage));
        outputs
    }

    /// plan (-out, -detailed-exitcode) → show -json → PlanReady → budget check. Returns the plan JSON and
    /// whether it has changes.
    pub(super) async fn plan(&mut self, stage: &str, drift: bool) -> Result<(Value, bool), Failure> {
        let changes = self.plan_command(stage, drift).await?;
        let plan = self.show(stage).await?;
        self.report_plan(stage, &plan);
        self.check_budget(stage)?;
        self.check_policies(stage, &plan)?;
        Ok((plan, changes))
    }

    /// `plan -out -detailed-exitcode` (`-refresh-only` for a drift check): whether it has changes.
    async fn plan_command(&self, stage: &str, drift: bool) -> Result<bool, Failure> {
        let mut args = vec!["plan", "-input=false", "-no-color", "-detailed-exitcode"];
        let out_arg = format!("-out={PLAN_FILE}");
        args.push(&out_arg);
        if drift && self.version.supports_refresh_only() {
            args.push("-refresh-only");
        }
        let out = self.command(stage, "plan", &args, false, false).await?;
        self.check(stage, "plan", &out, &[0, 2])?;
        Ok(out.code == Some(2))
    }

    /// The saved plan as JSON (`show -json`).
    async fn show(&self, stage: &str) -> Result<Value, Failure> {
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
        serde_json::from_str(strato_terraform::render::strip_write_prefix(show.stdout.trim()))
            .map_err(|e| Failure::internal(&self.step(stage, "show"), format!("show -json is not JSON: {e}")))
    }

    async fn apply_all(&mut self) -> Result<ExecOutcome, Failure> {
        let mut all_plain = Map::new();
        let mut all_sensitive = Map::new();
        let mut earlier = Map::new();
        let stages = self.ws.stages.clone();
        // With approvals, stages before the approved one were applied (or unchanged) by earlier runs.
        let approved = self.ctx.op.approved_plan().cloned();
        let approved_at = approved
            .as_ref()
            .and_then(|p| stages.iter().position(|s| s.stage == p.stage));
        for (i, stage) in stages.into_iter().enumerate() {
            self.write_tfvars(&stage, &earlier)?;
            self.init(&stage.stage).await?;
            let gate = if !self.ctx.op.approval_required {
                None
            } else if approved_at.is_some_and(|a| i < a) {
                Some(Gate::Unchanged)
            } else if let (Some(p), true) = (&approved, approved_at == Some(i)) {
                Some(self.apply_approved(&stage.stage, p).await?)
            } else {
                Some(self.plan_for_approval(&stage.stage).await?)
            };
            let applied = match gate {
                None => self.plan_and_apply(&stage.stage).await?,
                Some(Gate::Unchanged) => false,
                Some(Gate::Applied) => true,
                Some(Gate::Awaiting(plan)) => {
                    return Ok(ExecOutcome {
                        awaiting: Some(plan),
                        ..ExecOutcome::nothing()
                    });
                }
            };
            let (plain, sensitive) = if applied {
                self.outputs_and_refresh(&stage.stage).await?
            } else {
                self.outputs(&stage.stage, false).await?
            };
            earlier.extend(plain.clone());
            earlier.extend(sensitive.clone());
            self.install_agent_when_reachable(&earlier).await?;
            all_plain.extend(plain);
            all_sensitive.extend(sensitive);
        }
        if !all_sensitive.is_empty() {
            self.store_sensitive_outputs(&all_sensitive).await?;
        }
        Ok(ExecOutcome {
            outputs: all_plain,
            ..ExecOutcome::nothing()
        })
    }

    /// Sensitive outputs go to the cluster's one Secrets Manager secret, never into an event.
    async fn store_sensitive_outputs(&self, sensitive: &Outputs) -> Result<(), Failure> {
        self.ctx.fenced("store sensitive outputs").await?;
        let name = secrets::secret_name(&self.ctx.cfg.names, &self.ctx.cluster.cluster_id);
        self.ctx
            .ports
            .secrets
            .store_outputs(&name, sensitive)
            .await
            .map_err(|e| Failure::internal("outputs", e))?;
        self.note(
            "outputs",
            &format!(
                "{} sensitive output(s) stored in Secrets Manager",
                sensitive.len()
            ),
        );
        Ok(())
    }

    /// Reads every stage's outputs (later stages' inputs), then destroys in reverse order.
    async fn destroy_all(&mut self) -> Result<ExecOutcome, Failure> {
        let stages = self.ws.stages.clone();
        let mut earlier = Map::new();
        for stage in &stages {
            self.write_tfvars(stage, &earlier)?;
            self.init(&stage.stage).await?;
            let (plain, sensitive) = self.outputs(&stage.stage, false).await?;
            earlier.extend(plain);
            earlier.extend(sensitive);
        }
        for stage in stages.iter().rev() {
            self.destroy(&stage.stage).await?;
        }
        self.ctx.fenced("delete sensitive outputs").await?;
        let name = secrets::secret_name(&self.ctx.cfg.names, &self.ctx.cluster.cluster_id);
        self.ctx
            .ports
            .secrets
            .delete_outputs(&name)
            .await
            .map_err(|e| Failure::internal("outputs", e))?;
        self.retire_state(&stages).await?;
        Ok(ExecOutcome::nothing())
    }

    /// After a successful delete, each stage's state in the platform's bucket stops being current (a delete
    /// marker): only replaced versions remain, and the bucket's lifecycle rule expires them
    /// `state_retention_days` later (`infra/modules/data`). Until then a state restore can still bring one back.
    /// A customer's own state bucket is the customer's to keep.
    async fn retire_state(&self, stages: &[ComposedStage]) -> Result<(), Failure> {
        let spec = self.ctx.op.spec.as_ref().unwrap_or(&self.ctx.cluster.spec);
        let Some(state) = self.platform_state.as_ref() else {
            return Ok(());
        };
        if spec.target.as_ref().is_some_and(|t| t.customer_state()) {
            return Ok(());
        }
        self.ctx.fenced("retire the state").await?;
        let bucket = self.ctx.cfg.names.bucket("state");
        for stage in stages {
            let key = state_key(
                &self.ctx.cluster.tenant_id,
                &self.ctx.cluster.cluster_id,
                &stage.stage,
            );
            state
                .retire(&bucket, &key)
                .await
                .map_err(|e| Failure::internal("state", e))?;
        }
        self.ctx.note(
            "state",
            "the cluster's state is no longer current; its versions expire after the state retention period",
        );
        Ok(())
    }

    /// `destroy` of one stage, retried on transient failures.
    async fn destroy(&mut self, stage: &str) -> Result<(), Failure> {
        let mut delays = self.retry_delays();
        loop {
            let out = self
                .command(
                    stage,
                    "destroy",
                    &["destroy", "-input=false", "-no-color", "-auto-approve"],
                    false,
                    false,
                )
                .await?;
            let f = match self.check(stage, "destroy", &out, &[0]) {
                Ok(()) => return Ok(()),
                Err(f) if f.is_retryable() => f,
                Err(f) => return Err(f),
            };
            let Some(d) = delays.next() else { return Err(f) };
            vitals::step_retried(self.ctx.op.kind, &f.step);
            self.note(
                &f.step,
                &format!("transient failure; retrying in {:.1}s", d.as_secs_f64()),
            );
            self.ctx
                .backoff(d)
                .await
                .map_err(|r| Failure::stopped(&f.step, r))?;
        }
    }

    /// `plan` kind: a preview of the proposed spec (nothing applied; changes, policies and cost difference
    /// reported), and drift checks (changed resources reported). The saved plan is not kept: it holds every
    /// input, sensitive ones included, and the prior state, and nothing reads it back.
    async fn plan_only(&mut self, drift: bool) -> Result<ExecOutcome, Failure> {
        let mut earlier = Map::new();
        let mut changes = Vec::new();
        let mut preview = PreviewBuild::new();
        for stage in self.ws.stages.clone() {
            self.write_tfvars(&stage, &earlier)?;
            self.init(&stage.stage).await?;
            let (plan, _) = self.plan(&stage.stage, drift).await?;
            if drift {
                changes.extend(drift_changes(&plan));
            } else {
                self.preview_stage(&stage.stage, &plan, &mut preview)?;
            }
            // Later stages plan against what earlier ones currently hold.
            let (plain, sensitive) = self.outputs(&stage.stage, false).await?;
            earlier.extend(plain);
            earlier.extend(sensitive);
        }
        Ok(ExecOutcome {
            drift: drift.then_some(changes),
            preview: (!drift).then(|| Box::new(self.finish_preview(preview))),
            ..ExecOutcome::nothing()
        })
    }
}

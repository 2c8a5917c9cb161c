//! One operation from start to final event, in four parts:
//!
//! - [`prepare`](prepare::prepare): template, bundle, workspace, inputs, credentials, engine, state backends →
//!   a [`PreparedRun`], which owns the engine and the workspace. Every stage is a method of `PreparedRun`, so
//!   nothing can run an engine command before the run is prepared.
//! - `stages`: the operation kind's engine commands (create/update, delete, plan, drift check, estimate),
//!   with retries of transient failures.
//! - `cleanup`: after a failed create, destroy what it created.
//! - `report`: the run's one final event.
//!
//! [`RunContext`] is what a run knows before it is prepared (the operation, cluster, ports, log hub, stop
//! signals) and keeps to its end; this module builds it, runs the parts above, then finishes the log archive
//! and sends the final event while the cluster lock still holds the run's fencing token.
//!
//! Everything here is written against the [ports](crate::ports); `tests/` runs it on the fakes.

mod access;
mod adopt;
mod agent_install;
mod approval;
mod cleanup;
mod customer_state;
mod estimate;
mod failure;
mod federation;
mod foreign_lock;
mod plan;
mod prepare;
mod preview;
mod priced;
mod report;
mod run_session;
mod sealed;
mod stages;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};

use secrecy::ExposeSecret;
use serde_json::{Map, Value};
use strato_domain::cost::CostEstimate;
use strato_domain::messages::{LogStream, RunnerEvent};
use strato_domain::model::{Cluster, Operation, OperationKind};
use strato_domain::vitals;
use strato_terraform::compose::step_name;
use strato_terraform::render::EngineVersion;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use self::failure::Failure;
use crate::logs::{LogHub, Redactor};
use crate::outcome::{StopReason, StopRx, wait_stop};
use crate::ports::{Cloud, Ports, Reporter, RunPorts, RunStore, TaskSignals};
use crate::progress::Progress;
use crate::workspace::Workspace;
use crate::{Clients, Config, RunSummary, RunnerError};

/// Transient failures of plan/apply are retried at most this many times.
pub const MAX_RETRIES: usize = 5;
/// A failed create's cleanup (destroy) is tried at most this many times.
pub const CLEANUP_ATTEMPTS: usize = 3;

/// What a run knows before it is prepared, and keeps to its end.
struct RunContext<P: Ports> {
    cfg: Config,
    ports: RunPorts<P>,
    op: Operation,
    cluster: Cluster,
    /// Progress events, sent in order off the engine's path (see [`Progress`]).
    progress: Progress,
    logs: LogHub,
    stop: StopRx,
    /// Fires on SIGTERM or at the end of the task's time limit: cleanup after a cancel or a stage timeout
    /// keeps running, but not past a task stop or the time limit.
    term: StopRx,
    /// The tenant's monthly budget (USD), if set.
    budget: Option<f64>,
    /// The platform's and the tenant's policies (the plan's are checked before apply); why not, if they do
    /// not compile.
    policies: Result<strato_policy::PolicySet, String>,
    /// Wall time spent in engine commands (the rest of the run is the runner's overhead).
    engine_time: EngineTime,
}

/// Wall time summed over engine commands, for the runner-overhead metric.
#[derive(Default)]
struct EngineTime(AtomicU64);

impl EngineTime {
    fn record(&self, took: Duration) {
        self.0.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    fn total(&self) -> Duration {
        Duration::from_micros(self.0.load(Ordering::Relaxed))
    }
}

/// User plus system CPU time of this process (`RUSAGE_SELF`) or of its waited-for children, the engine
/// and its plugins (`RUSAGE_CHILDREN`).
fn cpu_time(who: UsageWho) -> Duration {
    let Ok(u) = getrusage(who) else {
        return Duration::ZERO;
    };
    let d = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().max(0) as u64) + Duration::from_micros(t.tv_usec().max(0) as u64)
    };
    d(u.user_time()) + d(u.system_time())
}

/// A prepared run: built only by [`prepare::prepare`], it owns the engine and the workspace every stage
/// needs, and records what the stages did (for cleanup and the final event).
struct PreparedRun<'r, P: Ports> {
    ctx: &'r RunContext<P>,
    /// The engine with the run's environment (credentials).
    engine: P::Engine,
    /// A stage's engine when its environment differs (its own identity token), by stage.
    stage_engines: BTreeMap<String, P::Engine>,
    /// The state is in a customer's storage on another cloud, locked by the engine alone: a dead run's lock
    /// there is released by the engine (`force-unlock`), at most once per stage.
    foreign_locks: Option<std::sync::Mutex<Vec<String>>>,
    version: EngineVersion,
    ws: Workspace,
    /// The rendered inputs (template and managed variables), by name.
    rendered: Map<String, Value>,
    /// Whether applying a saved plan works with this engine (see [`prepare::saved_plan_apply_works`]).
    saved_plan_apply: bool,
    /// Stages initialized so far: a failed create cleans up these, in reverse.
    initialized: Vec<String>,
    /// Whether an `apply` started in this run: until one does, a create has created nothing to clean up.
    apply_started: std::sync::atomic::AtomicBool,
    /// Runs per step name, for debug-log object keys.
    debug_runs: std::sync::Mutex<BTreeMap<String, u32>>,
    /// The estimates of the stages planned so far (checked against the tenant's budget before apply).
    estimate: CostEstimate,
    /// The platform's state bucket through the run's state session (`None`: a customer's bucket, or an
    /// estimate without state).
    platform_state: Option<<P::Cloud as Cloud>::State>,
    /// The settings dialect the emulator's provider files are written in (emulator mode only).
    provider_dialect: strato_terraform::render::ProviderDialect,
    /// The template's adoptable resources, and those adopted in this run (each at most once).
    adopt: adopt::Adoption,
    /// The cluster agent still to install (`[agent] install = "runner"`, a create): taken when it is.
    agent: Option<agent_install::Install>,
    /// The customer's own storage of the state (as the tenant reads it) and how this run reaches it: its
    /// versions are listed at the run's end.
    customer_storage: Option<(String, crate::clouds::storage::StorageAccess)>,
    /// The version a `restore-state` run copied back.
    restored: Option<strato_domain::model::RestoredVersion>,
}

/// Runs the operation named by `cfg` to its final event on AWS (see [`crate::aws::adapters`]). `Ok` only
/// when the final event was sent.
pub async fn run_operation(cfg: Config, clients: Clients) -> Result<RunSummary, RunnerError> {
    let ports = crate::aws::adapters(&cfg, clients);
    run_with(cfg, ports).await
}

/// Runs the operation named by `cfg` to its final event on `ports`. `Ok` only when the final event was sent.
/// Whatever happens, it returns by the run's hard deadline ([`Config::hard_deadline`]): what was still
/// running is dropped (the engine process is killed with it) and the error says so.
pub async fn run_with<P: Ports>(cfg: Config, ports: RunPorts<P>) -> Result<RunSummary, RunnerError> {
    let deadline = cfg.hard_deadline();
    // Boxed: the whole run's state machine is large, and inline it would sit on the caller's stack (a test
    // thread's 2 MiB overflowed).
    match tokio::time::timeout(deadline, Box::pin(run_to_end(cfg, ports))).await {
        Ok(result) => result,
        Err(_) => Err(RunnerError::HardDeadline(deadline)),
    }
}

async fn run_to_end<P: Ports>(cfg: Config, ports: RunPorts<P>) -> Result<RunSummary, RunnerError> {
    let began = std::time::Instant::now();
    let op = ports
        .store
        .operation(&cfg.operation_id)
        .await?
        .ok_or_else(|| RunnerError::OperationNotFound(cfg.operation_id.clone()))?;
    op.record_on(&tracing::Span::current());
    // The dispatcher's recording of the task is the operation's last write before the runner reads it.
    if op.task_arn.is_some() {
        vitals::runner_started(op.kind, op.updated_at, strato_domain::ts::now());
    }
    let cluster = load_cluster(&ports.store, &op).await?;
    let redactor = Redactor::default();
    redactor.add(cfg.run_proof.expose_secret());
    let (hub, log_tasks) = LogHub::start(op.operation_id.clone(), ports.sinks.clone(), redactor);
    // A later run of the operation (the apply of an approved plan, a re-dispatch) continues its log.
    if op.attempt > 1 {
        match crate::logs::archived_last_seq(&ports.sinks, &op.operation_id).await {
            Ok(last) => hub.continue_after(last),
            Err(e) => tracing::warn!(error = %e, "earlier runs' log unreadable; numbering from 1"),
        }
    }
    let first_shipped = hub.first_shipped();
    let progress = Progress::start(ports.reporter.clone());
    let (stop_tx, stop_rx) = watch::channel(None);
    let (term_tx, term_rx) = watch::channel(None);
    let background = spawn_background(&cfg, &ports, &progress, &hub, &op, stop_tx, term_tx);

    let budget = ports.store.monthly_budget(&op.tenant_id).await?;
    let policies = priced::load_policies(&ports.store, &op).await?;
    let ctx = RunContext {
        cfg,
        ports,
        op,
        cluster,
        progress,
        logs: hub,
        stop: stop_rx,
        term: term_rx,
        budget,
        policies,
        engine_time: EngineTime::default(),
    };
    // The workspace is removed only after the final event was sent: deleting it (with its plugin cache) must
    // not delay that event.
    let (final_event, _workspace) = ctx.run_to_final_event(background).await;
    let (op_id, kind) = (ctx.op.operation_id.clone(), ctx.op.kind);
    let engine_wall = ctx.engine_time.total();
    let RunContext {
        logs: hub,
        ports,
        cfg,
        cluster,
        progress,
        ..
    } = ctx;
    drop(hub);
    // An operation that waits for approval is not over: its log stays open.
    let complete = !matches!(final_event, RunnerEvent::AwaitingApproval { .. });
    let last_log_seq = match log_tasks.finish_marked(&ports.sinks, &op_id, complete).await {
        Ok(n) => n,
        Err(e) => {
            tracing::error!(error = %e, "log archive incomplete");
            0
        }
    };
    if let Some(first) = first_shipped.get() {
        vitals::first_log_line(kind, first.saturating_duration_since(began));
    }
    vitals::runner_cost(
        kind,
        vitals::RunnerCost {
            wall: began.elapsed(),
            engine_wall,
            own_cpu: cpu_time(UsageWho::RUSAGE_SELF),
            engine_cpu: cpu_time(UsageWho::RUSAGE_CHILDREN),
        },
    );
    // The final event comes after every progress event.
    progress.flush().await;
    // Fencing: a run that lost its lock reports nothing (status would also reject it).
    if !holds_lock(&ports.store, &cluster, &op_id, cfg.fencing_token).await? {
        return Err(RunnerError::Fenced(cfg.fencing_token));
    }
    ports.reporter.send_final(&final_event).await?;
    Ok(RunSummary {
        final_event,
        last_log_seq,
    })
}

/// The operation's cluster; for an estimate (no cluster yet) a stand-in built from the operation.
async fn load_cluster(store: &impl RunStore, op: &Operation) -> Result<Cluster, RunnerError> {
    if op.kind.has_cluster() {
        return store
            .cluster(&op.cluster_id)
            .await?
            .ok_or_else(|| RunnerError::ClusterNotFound(op.cluster_id.to_string()));
    }
    // An estimate: the cluster it prices does not exist. This stand-in (the operation's synthetic id and
    // spec) only supplies names and managed values; it is never written.
    let spec = op.spec.clone().ok_or_else(|| {
        RunnerError::ClusterNotFound(format!("{} (an estimate without a spec)", op.cluster_id))
    })?;
    Ok(Cluster::new(
        op.tenant_id.clone(),
        op.cluster_id.clone(),
        spec,
        op.created_at,
    ))
}

async fn holds_lock(
    store: &impl RunStore,
    cluster: &Cluster,
    op: &strato_domain::ids::OperationId,
    token: u64,
) -> Result<bool, RunnerError> {
    Ok(store.lock_owner(&cluster.cluster_id).await? == Some((op.clone(), token)))
}

/// The run's background tasks, aborted when dropped: also when the hard deadline drops the run.
struct Background(Vec<JoinHandle<()>>);

impl Drop for Background {
    fn drop(&mut self) {
        self.0.iter().for_each(JoinHandle::abort);
    }
}

/// Heartbeats (which also poll for a cancel request), the time limit and SIGTERM, for the whole run: the
/// stages and the cleanup of a failed create alike. `stop` fires on a cancel, the stages' time limit or
/// SIGTERM; `term` (what cleanup obeys: it runs because of a cancel or a stage timeout) on SIGTERM or the end
/// of the task's time limit. A heartbeat vouches for progress: once the run has shown none for
/// `stall_limit` (no line, no step), heartbeats stop for good and the log says why.
fn spawn_background<P: Ports>(
    cfg: &Config,
    ports: &RunPorts<P>,
    progress: &Progress,
    logs: &LogHub,
    op: &Operation,
    stop_tx: watch::Sender<Option<StopReason>>,
    term_tx: watch::Sender<Option<StopReason>>,
) -> Background {
    let stop_tx = std::sync::Arc::new(stop_tx);
    let term_tx = std::sync::Arc::new(term_tx);
    let mut out = Vec::new();
    {
        let (progress, token, store, every, op_id, stop_tx) = (
            progress.clone(),
            cfg.fencing_token,
            ports.store.clone(),
            cfg.heartbeat,
            op.operation_id.clone(),
            stop_tx.clone(),
        );
        let (logs, stall_limit) = (logs.clone(), cfg.stall_limit);
        out.push(crate::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            let mut stalled = false;
            loop {
                tick.tick().await;
                let quiet = logs.liveness.quiet_for();
                if !stalled && quiet >= stall_limit {
                    stalled = true;
                    tracing::warn!(quiet_secs = quiet.as_secs(), "no progress: heartbeats stop");
                    logs.emit(
                        LogStream::Strato,
                        "heartbeat",
                        &format!(
                            "no progress for {} s (no output, no step): heartbeats stop, so this run no longer \
                             vouches for the cluster's lock; the time limit ends it",
                            quiet.as_secs()
                        ),
                    );
                }
                if !stalled {
                    progress.send(RunnerEvent::Heartbeat {
                        operation_id: op_id.clone(),
                        fencing_token: token,
                        at: strato_domain::ts::now(),
                    });
                }
                if let Ok(Some(op)) = store.operation(&op_id).await
                    && op.cancel_requested
                {
                    stop_tx.send_if_modified(|s| s.is_none() && s.replace(StopReason::Cancelled).is_none());
                }
            }
        }));
    }
    {
        // Only a create is cleaned up after a stop: the other kinds get the whole limit.
        let stages = if op.kind == OperationKind::Create {
            cfg.stage_time_limit()
        } else {
            cfg.time_limit
        };
        let limit = cfg.time_limit;
        let (stop_tx, term_tx) = (stop_tx.clone(), term_tx.clone());
        out.push(crate::spawn(async move {
            tokio::time::sleep(stages).await;
            stop_tx.send_if_modified(|s| s.is_none() && s.replace(StopReason::TimedOut).is_none());
            tokio::time::sleep(limit.saturating_sub(stages)).await;
            term_tx.send_if_modified(|s| s.is_none() && s.replace(StopReason::TimedOut).is_none());
        }));
    }
    let terminated = ports.signals.terminated();
    out.push(crate::spawn(async move {
        terminated.await;
        // A task stop overrides a cancel in progress: there is no time left for cleanup.
        stop_tx.send_replace(Some(StopReason::Terminated));
        term_tx.send_replace(Some(StopReason::Terminated));
    }));
    Background(out)
}

impl<P: Ports> RunContext<P> {
    /// prepare → the kind's stages → (cleanup) → the final event. The background tasks (heartbeats, time
    /// limit, SIGTERM) run until the final event is built, so a cleanup is guarded like every engine call.
    /// Returns the event and the workspace (if one was prepared), which the caller keeps until the event was
    /// sent.
    async fn run_to_final_event(&self, background: Background) -> (RunnerEvent, Option<Workspace>) {
        match prepare::prepare(self).await {
            Ok(mut run) => {
                let result = run.execute().await;
                let event = run.final_event(result).await;
                drop(background);
                (event, Some(run.into_workspace()))
            }
            Err(failure) => {
                drop(background);
                (self.failed_event(failure), None)
            }
        }
    }

    fn note(&self, step: &str, text: &str) {
        self.logs.emit(LogStream::Strato, step, text);
    }

    fn event_step(&self, step: &str, ok: Option<bool>) {
        self.logs.liveness.touch();
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
        self.progress.send(ev);
    }

    /// `Ok` while the cluster lock still holds this run's fencing token: checked before every write outside
    /// the engine's own state.
    async fn fenced(&self, what: &str) -> Result<(), Failure> {
        match holds_lock(
            &self.ports.store,
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

    /// A stop already asked for, checked at every step boundary: a stop signal, or a cancel recorded on the
    /// operation since the heartbeat last polled it (a heartbeat polls every 15 s; a step may end sooner, and
    /// the next step must not start for a cancelled operation). A read that fails counts as no cancel: the
    /// heartbeat's poll still finds it.
    async fn stop_requested(&self) -> Option<StopReason> {
        if let Some(reason) = *self.stop.borrow() {
            return Some(reason);
        }
        match self.ports.store.operation(&self.op.operation_id).await {
            Ok(Some(op)) if op.cancel_requested => Some(StopReason::Cancelled),
            _ => None,
        }
    }

    /// Sleeps before a retry unless the operation is being stopped.
    async fn backoff(&self, delay: Duration) -> Result<(), StopReason> {
        let mut stop = self.stop.clone();
        tokio::select! {
            _ = tokio::time::sleep(delay) => Ok(()),
            r = wait_stop(&mut stop) => Err(r),
        }
    }
}

impl<P: Ports> PreparedRun<'_, P> {
    /// A step's reported name: `step`, or `stage/step` for a multi-stage template.
    fn step(&self, stage: &str, step: &str) -> String {
        step_name(self.ws.stages.len(), stage, step)
    }

    fn note(&self, step: &str, text: &str) {
        self.ctx.note(step, text);
    }

    /// The engine `stage`'s commands run with.
    fn engine_for(&self, stage: &str) -> &P::Engine {
        self.stage_engines.get(stage).unwrap_or(&self.engine)
    }

    fn into_workspace(self) -> Workspace {
        self.ws
    }
}

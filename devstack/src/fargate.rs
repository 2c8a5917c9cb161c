//! Fargate emulation. moto records RunTask but never runs anything; this watches the runner cluster's
//! tasks (ListTasks/DescribeTasks, so it sees tasks whoever started them) and runs one runner process per
//! task:
//! - environment: a small base (PATH, HOME, RUST_LOG…), the stack's settings (AWS endpoint, credentials,
//!   region, `STRATO_RESOURCE_PREFIX`, `STRATO_PROVIDER_ENDPOINT`, `STRATO_TERRAFORM`, the engine's
//!   environment), the task definition's container environment, then the task's container overrides;
//! - its own working directory (`<work>/tasks/<task id>`, also its `TMPDIR`), its own process group;
//! - memory: `RLIMIT_AS` set to the task's memory (per process, virtual memory: a stricter limit than
//!   Fargate's cgroup; Go programs need about 1 GiB of address space, so tasks below 1 GiB may not start
//!   Terraform). CPU units are NOT enforced (no cgroups here); every task runs, as on Fargate.
//!
//! When the runner exits the task is stopped in moto (StopTask, reason with the exit code) and an ECS Task
//! State Change event (`lastStatus` STOPPED, the container's `exitCode`) goes to the events queue, as the
//! EventBridge rule would send it. A task stopped by someone else (StopTask) gets SIGTERM, then SIGKILL for
//! its whole process group after the grace period (ECS's `stopTimeout`), and the same event with
//! `stopCode` UserInitiated.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_ecs::types::{DesiredStatus, Task};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use strato_domain::ecs_event::{
    EnvVar, TaskContainer, TaskContainerOverride, TaskOverrides, TaskStateChange, TaskStateChangeEvent,
};
use time::OffsetDateTime;
use tokio::io::BufReader;
use tokio::sync::{Mutex, mpsc, watch};
use tracing::Instrument;

use crate::error::DevstackError;

mod events;
mod output;

use events::{send_event, stopped_event};
use output::forward;
#[cfg(test)]
use output::is_out_of_memory;

/// Address space a task may map beyond its memory (see the limit's comment in `execute`).
const ADDRESS_SPACE_HEADROOM: u64 = 4 << 30;

#[derive(Debug, Clone)]
pub struct FargateConfig {
    /// ECS cluster name whose tasks are run.
    pub cluster: String,
    /// The binary (or script) each task runs.
    pub runner: PathBuf,
    /// Parent of the per-task working directories.
    pub work_dir: PathBuf,
    /// Environment every task gets before the task definition's and the overrides.
    pub env: Vec<(String, String)>,
    /// Where ECS Task State Change events go (the events queue URL).
    pub events_queue_url: String,
    pub region: String,
    /// SIGTERM → SIGKILL grace (ECS `stopTimeout`, 30 s by default on Fargate).
    pub grace: Duration,
    /// Set `RLIMIT_AS` from the task's memory.
    pub enforce_memory: bool,
    pub poll_interval: Duration,
    /// Keep task working directories after the task stops (debugging).
    pub keep_task_dirs: bool,
}

/// Counters a caller (tests, benchmarks) can read while the emulation runs, and a record of every task.
#[derive(Debug, Default)]
pub struct FargateStats {
    pub started: std::sync::atomic::AtomicU64,
    pub stopped: std::sync::atomic::AtomicU64,
    pub running: std::sync::atomic::AtomicU64,
    pub peak_running: std::sync::atomic::AtomicU64,
    tasks: std::sync::Mutex<Vec<TaskRecord>>,
}

/// One emulated task: which operation it ran for, its runner process, and when it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub task_arn: String,
    /// `STRATO_OPERATION_ID` of the task's overrides (or its `startedBy`).
    pub operation_id: Option<String>,
    /// The runner's process id while it runs (`None` if it never started).
    pub pid: Option<u32>,
    /// When the runner process started and when it exited (before the task's STOPPED event went out).
    pub started_at: Instant,
    pub ended_at: Option<Instant>,
    /// Exit code (128 + signal when killed by a signal).
    pub exit_code: Option<i32>,
}

impl FargateStats {
    /// Every task seen so far, in start order.
    pub fn tasks(&self) -> Vec<TaskRecord> {
        self.records().clone()
    }

    /// The runner process of `operation_id` that is running now.
    pub fn running_pid(&self, operation_id: &str) -> Option<u32> {
        self.records()
            .iter()
            .rev()
            .find(|t| t.operation_id.as_deref() == Some(operation_id) && t.ended_at.is_none())
            .and_then(|t| t.pid)
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Vec<TaskRecord>> {
        // A panic elsewhere while holding it leaves plain data behind: keep using it.
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record_start(&self, task_arn: &str, operation_id: Option<String>, pid: Option<u32>) {
        self.records().push(TaskRecord {
            task_arn: task_arn.to_owned(),
            operation_id,
            pid,
            started_at: Instant::now(),
            ended_at: None,
            exit_code: None,
        });
    }

    fn record_end(&self, task_arn: &str, exit_code: Option<i32>) {
        if let Some(t) = self
            .records()
            .iter_mut()
            .rev()
            .find(|t| t.task_arn == task_arn && t.ended_at.is_none())
        {
            t.ended_at = Some(Instant::now());
            t.pid = None;
            t.exit_code = exit_code;
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum StopRequest {
    /// StopTask by someone else; the reason moto recorded.
    External(String),
    Shutdown,
}

struct Shared {
    /// Environment decided per task when it starts (devstack's emulated clusters), after the stack's and
    /// the task definition's, before the task's overrides.
    task_env: Option<Arc<dyn crate::cluster_agents::TaskEnv>>,
    ecs: aws_sdk_ecs::Client,
    sqs: aws_sdk_sqs::Client,
    config: FargateConfig,
    stats: Arc<FargateStats>,
    task_defs: Mutex<HashMap<String, Arc<aws_sdk_ecs::types::TaskDefinition>>>,
}

/// Starts watching; the returned handle finishes after `shutdown` turned true and every task was stopped.
pub fn spawn(
    ecs: aws_sdk_ecs::Client,
    sqs: aws_sdk_sqs::Client,
    config: FargateConfig,
    stats: Arc<FargateStats>,
    shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    spawn_with(ecs, sqs, config, stats, shutdown, None)
}

/// [`spawn`], with environment decided per task by `task_env`.
pub fn spawn_with(
    ecs: aws_sdk_ecs::Client,
    sqs: aws_sdk_sqs::Client,
    config: FargateConfig,
    stats: Arc<FargateStats>,
    shutdown: watch::Receiver<bool>,
    task_env: Option<Arc<dyn crate::cluster_agents::TaskEnv>>,
) -> tokio::task::JoinHandle<()> {
    let shared = Arc::new(Shared {
        task_env,
        ecs,
        sqs,
        config,
        stats,
        task_defs: Mutex::new(HashMap::new()),
    });
    tokio::spawn(watch_tasks(shared, shutdown))
}

struct Running {
    stop: watch::Sender<Option<StopRequest>>,
    handle: tokio::task::JoinHandle<()>,
}

async fn watch_tasks(shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut running: HashMap<String, Running> = HashMap::new();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<String>();
    let cluster = shared.config.cluster.clone();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(shared.config.poll_interval) => {}
            _ = shutdown.changed() => {}
        }
        if *shutdown.borrow() {
            break;
        }
        while let Ok(arn) = done_rx.try_recv() {
            running.remove(&arn);
        }
        let listed = match list_running(&shared.ecs, &cluster).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "Fargate: ListTasks failed");
                continue;
            }
        };
        let new: Vec<String> = listed.iter().filter(|a| !seen.contains(*a)).cloned().collect();
        for chunk in new.chunks(100) {
            let tasks = match shared
                .ecs
                .describe_tasks()
                .cluster(&cluster)
                .set_tasks(Some(chunk.to_vec()))
                .send()
                .await
            {
                Ok(o) => o.tasks.unwrap_or_default(),
                Err(e) => {
                    tracing::warn!(error = %DevstackError::aws("DescribeTasks", e), "Fargate: DescribeTasks failed");
                    continue;
                }
            };
            for task in tasks {
                let Some(arn) = task.task_arn().map(str::to_owned) else {
                    continue;
                };
                seen.insert(arn.clone());
                let (stop_tx, stop_rx) = watch::channel(None);
                let (s, done) = (shared.clone(), done_tx.clone());
                let a = arn.clone();
                let handle = tokio::spawn(async move {
                    run_task(s, task, stop_rx).await;
                    let _ = done.send(a);
                });
                running.insert(
                    arn,
                    Running {
                        stop: stop_tx,
                        handle,
                    },
                );
            }
        }
        // Running here but no longer RUNNING in ECS: someone called StopTask.
        let stopped_elsewhere: Vec<String> = running
            .iter()
            .filter(|(arn, r)| !listed.contains(*arn) && r.stop.borrow().is_none())
            .map(|(arn, _)| arn.clone())
            .collect();
        for arn in stopped_elsewhere {
            let reason = stopped_reason(&shared.ecs, &cluster, &arn)
                .await
                .unwrap_or_else(|| "Task stopped by user".into());
            if let Some(r) = running.get(&arn) {
                let _ = r.stop.send(Some(StopRequest::External(reason)));
            }
        }
    }
    for r in running.values() {
        let _ = r.stop.send(Some(StopRequest::Shutdown));
    }
    for (_, r) in running {
        let _ = r.handle.await;
    }
}

async fn list_running(ecs: &aws_sdk_ecs::Client, cluster: &str) -> Result<HashSet<String>, DevstackError> {
    let mut out = HashSet::new();
    let mut next: Option<String> = None;
    loop {
        let page = ecs
            .list_tasks()
            .cluster(cluster)
            .desired_status(DesiredStatus::Running)
            .set_next_token(next.take())
            .send()
            .await
            .map_err(|e| DevstackError::aws("ListTasks", e))?;
        out.extend(page.task_arns().iter().cloned());
        match page.next_token {
            Some(t) if !t.is_empty() => next = Some(t),
            _ => return Ok(out),
        }
    }
}

async fn stopped_reason(ecs: &aws_sdk_ecs::Client, cluster: &str, arn: &str) -> Option<String> {
    let out = ecs
        .describe_tasks()
        .cluster(cluster)
        .tasks(arn)
        .send()
        .await
        .ok()?;
    out.tasks()
        .first()
        .and_then(|t| t.stopped_reason())
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
}

/// The runner container's name and override environment.
fn overrides(task: &Task) -> (Option<String>, Vec<(String, String)>) {
    let Some(o) = task.overrides() else {
        return (None, Vec::new());
    };
    let Some(c) = o.container_overrides().first() else {
        return (None, Vec::new());
    };
    let env = c
        .environment()
        .iter()
        .filter_map(|kv| Some((kv.name()?.to_owned(), kv.value().unwrap_or_default().to_owned())))
        .collect();
    (c.name().map(str::to_owned), env)
}

async fn task_definition(shared: &Shared, arn: &str) -> Option<Arc<aws_sdk_ecs::types::TaskDefinition>> {
    if let Some(d) = shared.task_defs.lock().await.get(arn) {
        return Some(d.clone());
    }
    let out = shared
        .ecs
        .describe_task_definition()
        .task_definition(arn)
        .send()
        .await
        .map_err(|e| tracing::warn!(error = %DevstackError::aws("DescribeTaskDefinition", e), "Fargate"))
        .ok()?;
    let def = Arc::new(out.task_definition?);
    shared.task_defs.lock().await.insert(arn.to_owned(), def.clone());
    Some(def)
}

/// What ended the task.
struct Ended {
    exit_code: Option<i32>,
    stop_code: &'static str,
    stopped_reason: String,
    container_reason: Option<String>,
    started_at: Option<OffsetDateTime>,
}

async fn run_task(shared: Arc<Shared>, task: Task, stop_rx: watch::Receiver<Option<StopRequest>>) {
    let arn = task.task_arn().unwrap_or_default().to_owned();
    let task_id = arn.rsplit('/').next().unwrap_or_default().to_owned();
    let (container_name, override_env) = overrides(&task);
    let operation_id = override_env
        .iter()
        .find(|(k, _)| k == strato_domain::messages::ENV_OPERATION_ID)
        .map(|(_, v)| v.clone())
        .or_else(|| task.started_by().map(str::to_owned));
    let span = tracing::info_span!("task", task_id = %task_id, operation_id = operation_id.as_deref().unwrap_or("-"));
    async move {
        let stats = &shared.stats;
        use std::sync::atomic::Ordering::Relaxed;
        stats.started.fetch_add(1, Relaxed);
        let now_running = stats.running.fetch_add(1, Relaxed) + 1;
        stats.peak_running.fetch_max(now_running, Relaxed);

        let def = match task.task_definition_arn() {
            Some(a) => task_definition(&shared, a).await,
            None => None,
        };
        let ended = execute(
            &shared,
            &task,
            def.as_deref(),
            &task_id,
            &override_env,
            operation_id.clone(),
            stop_rx,
        )
        .await;
        tracing::info!(
            exit_code = ?ended.exit_code,
            stop_code = ended.stop_code,
            reason = %ended.stopped_reason,
            "Fargate: task stopped"
        );
        if ended.stop_code != "UserInitiated" {
            let moto_reason = match ended.exit_code {
                Some(c) => format!("{} (exit code {c})", ended.stopped_reason),
                None => ended.stopped_reason.clone(),
            };
            if let Err(e) = shared
                .ecs
                .stop_task()
                .cluster(&shared.config.cluster)
                .task(&arn)
                .reason(moto_reason)
                .send()
                .await
            {
                tracing::warn!(error = %DevstackError::aws("StopTask", e), "Fargate: could not stop the task in ECS");
            }
        }
        let event = stopped_event(&task, def.as_deref(), container_name.as_deref(), &ended, &shared.config.region);
        // Counted before the event goes out, so whoever sees the event's effect sees the count.
        stats.running.fetch_sub(1, Relaxed);
        stats.stopped.fetch_add(1, Relaxed);
        send_event(&shared, &event).await;
    }
    .instrument(span)
    .await
}

/// Runs one task's runner process to its end: spawn with the task's environment and limits, forward its
/// output, honour a StopTask (SIGTERM, grace, SIGKILL), and say how it ended. One function because these
/// steps share the child process and its stop signal.
async fn execute(
    shared: &Shared,
    task: &Task,
    def: Option<&aws_sdk_ecs::types::TaskDefinition>,
    task_id: &str,
    override_env: &[(String, String)],
    operation_id: Option<String>,
    mut stop_rx: watch::Receiver<Option<StopRequest>>,
) -> Ended {
    let arn = task.task_arn().unwrap_or_default();
    let cfg = &shared.config;
    let dir = cfg.work_dir.join("tasks").join(task_id);
    let failed_to_start = |reason: String| Ended {
        exit_code: None,
        stop_code: "TaskFailedToStart",
        stopped_reason: format!("CannotStartContainerError: {reason}"),
        container_reason: Some(format!("CannotStartContainerError: {reason}")),
        started_at: None,
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return failed_to_start(format!("creating {}: {e}", dir.display()));
    }
    let mut cmd = tokio::process::Command::new(&cfg.runner);
    cmd.current_dir(&dir)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for k in ["PATH", "HOME", "LANG", "RUST_LOG", "RUST_BACKTRACE"] {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    cmd.env("TMPDIR", &dir);
    cmd.env("AWS_EXECUTION_ENV", "AWS_ECS_FARGATE");
    cmd.envs(cfg.env.iter().map(|(k, v)| (k, v)));
    let container_def = def.and_then(|d| d.container_definitions().first());
    if let Some(c) = container_def {
        cmd.envs(
            c.environment()
                .iter()
                .filter_map(|kv| Some((kv.name()?.to_owned(), kv.value().unwrap_or_default().to_owned()))),
        );
    }
    if let (Some(hook), Some(op)) = (&shared.task_env, operation_id.as_deref()) {
        cmd.envs(hook.task_env(op).await);
    }
    // infra/'s task runs an X-Ray daemon sidecar (the definition's AWS_XRAY_DAEMON_ADDRESS); devstack is it.
    cmd.envs(crate::xray::daemon_env());
    cmd.envs(override_env.iter().map(|(k, v)| (k, v)));
    let memory_mib: Option<u64> = task
        .memory()
        .or_else(|| def.and_then(|d| d.memory()))
        .and_then(|m| m.parse().ok());
    if cfg.enforce_memory
        && let Some(mib) = memory_mib
    {
        // RLIMIT_AS caps address space, not memory in use: Terraform and its Go providers reserve far more
        // than they touch (provider-aws 5 maps ~1.9 GiB at rest), so a limit at the task's memory made them
        // crash at random on allocation. The headroom keeps runaway growth failing, as a cgroup would.
        let bytes = mib
            .saturating_mul(1024 * 1024)
            .saturating_add(ADDRESS_SPACE_HEADROOM);
        // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent; it runs in the forked
        // child before exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_AS, bytes, bytes)
                    .map_err(std::io::Error::from)
            });
        }
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            cleanup(cfg, &dir);
            return failed_to_start(format!("{}: {e}", cfg.runner.display()));
        }
    };
    let started_at = OffsetDateTime::now_utc();
    shared.stats.record_start(arn, operation_id, child.id());
    let pid = child.id().map(|p| Pid::from_raw(p as i32));
    tracing::info!(runner = %cfg.runner.display(), pid = ?pid, memory_mib, "Fargate: runner started");
    let mut outputs: Vec<tokio::task::JoinHandle<bool>> = Vec::new();
    if let Some(out) = child.stdout.take() {
        outputs.push(tokio::spawn(forward(
            BufReader::new(out),
            "stdout",
            tracing::Span::current(),
        )));
    }
    if let Some(err) = child.stderr.take() {
        outputs.push(tokio::spawn(forward(
            BufReader::new(err),
            "stderr",
            tracing::Span::current(),
        )));
    }
    let mut stop: Option<StopRequest> = None;
    let mut we_killed = false;
    let status = tokio::select! {
        s = child.wait() => s,
        r = async { stop_rx.wait_for(Option::is_some).await.map(|g| g.clone()).ok().flatten() } => {
            stop = r;
            // ECS signals the container's main process only; the runner forwards to Terraform.
            if let Some(p) = pid {
                let _ = kill(p, Signal::SIGTERM);
            }
            match tokio::time::timeout(cfg.grace, child.wait()).await {
                Ok(s) => s,
                Err(_) => {
                    tracing::warn!(grace_secs = cfg.grace.as_secs(), "Fargate: runner ignored SIGTERM; killing it");
                    we_killed = true;
                    if let Some(p) = pid {
                        let _ = killpg(p, Signal::SIGKILL);
                    }
                    child.wait().await
                }
            }
        }
    };
    // Container teardown: nothing of the task outlives it.
    if let Some(p) = pid {
        let _ = killpg(p, Signal::SIGKILL);
    }
    let mut out_of_memory = false;
    for o in outputs {
        out_of_memory |= o.await.unwrap_or(false);
    }
    let exit_code = match &status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            // Docker's convention for a process killed by a signal: 128 + signal number.
            s.code().or_else(|| s.signal().map(|sig| 128 + sig))
        }
        Err(e) => {
            tracing::error!(error = %e, "Fargate: waiting for the runner failed");
            None
        }
    };
    shared.stats.record_end(arn, exit_code);
    cleanup(cfg, &dir);
    // Only a runner that ran out of its memory limit is reported as Fargate reports an OOM kill. A SIGKILL
    // says nothing about memory (`RLIMIT_AS` fails allocations, it never kills): an operator, a test, or a
    // host OOM killer outside the task's limit; ECS reports those as the exit code alone.
    let container_reason =
        (cfg.enforce_memory && out_of_memory && !we_killed && exit_code.is_some_and(|c| c != 0))
            .then(|| "OutOfMemoryError: Container killed due to memory usage".to_owned());
    let (stop_code, stopped_reason) = match stop {
        Some(StopRequest::External(r)) => ("UserInitiated", r),
        Some(StopRequest::Shutdown) => (
            "ServiceSchedulerInitiated",
            "devstack is shutting down".to_owned(),
        ),
        None => (
            "EssentialContainerExited",
            "Essential container in task exited".to_owned(),
        ),
    };
    Ended {
        exit_code,
        stop_code,
        stopped_reason,
        container_reason,
        started_at: Some(started_at),
    }
}

fn cleanup(cfg: &FargateConfig, dir: &std::path::Path) {
    if !cfg.keep_task_dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[cfg(test)]
mod tests;

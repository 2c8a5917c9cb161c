//! The scheduler Lambda: two EventBridge schedules call it with a constant input.
//!
//! - `{"task": "drift"}`: ACTIVE clusters whose next check is due (the `by_state` index, a Query) get one
//!   `drift-check` operation each — never a second while one is pending, none while the cluster is busy
//!   (it is looked at again shortly after). The next check is claimed first, with the cluster's version
//!   check, so overlapping runs cannot both queue one; checks are spread with a per-cluster jitter.
//! - `{"task": "sweep"}`: the recovery paths. Operations written but never dispatched are re-enqueued;
//!   parked ones whose lock holder is gone are woken; runners whose heartbeat is stale AND whose ECS task is
//!   stopped or missing are reported to the status function as a stopped task (it fails the operation and
//!   releases the lock through the fencing token); Terraform state locks left behind by dead runners are
//!   released once no operation of the cluster is open, and that is noted on the operation. A runner with
//!   a running task is never touched, however old its heartbeat. WebSocket connections past API Gateway's
//!   2 h limit are removed with their subscriptions (found through an index, not a Scan).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};

use sha2::{Digest, Sha256};
use strato_aws::aws::AwsClients;
use strato_aws::coordination::{submit, update_operation};
use strato_aws::env::{Env, EnvError};
use strato_aws::queues::{QueueUrls, enqueue_job};
use strato_aws::resources::Names;
use strato_aws::state_lock::{self, HeldLock};
use strato_aws::store::Store;
use strato_domain::ecs_event::{TaskContainer, TaskStateChange};
use strato_domain::ids::ClusterId;
use strato_domain::messages::JobMessage;
use strato_domain::model::{Cluster, DEFAULT_DRIFT_INTERVAL_SECS, Operation, OperationKind};
use strato_domain::ts;
use time::{Duration, OffsetDateTime};

/// Who scheduled operations are requested by.
pub const SCHEDULER: &str = "strato:scheduler";

/// A busy cluster's drift check is looked at again after this long.
pub const BUSY_RETRY: Duration = Duration::minutes(5);

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error(transparent)]
    Store(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
}

fn aws_error(operation: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> SchedulerError {
    SchedulerError::Store(strato_aws::Error::aws(operation, e))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub names: Names,
    /// ECS cluster the runners run in (to ask whether a silent runner's task still runs).
    pub runner_cluster: String,
    /// At most this many clusters are looked at per drift run; the rest are next run's.
    pub drift_batch: i32,
    /// A queued operation untouched for this long was not dispatched (the create/enqueue gap).
    pub queued_grace: Duration,
    /// A runner silent for this long is checked against ECS.
    pub heartbeat_stale: Duration,
}

impl Config {
    pub fn from_env() -> Result<Self, SchedulerError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// `lookup` stands for the environment, so parsing is testable without mutating it.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SchedulerError> {
        let env = Env::new(lookup);
        let secs = |var| env.positive(var, 120).map(|s| Duration::seconds(s as i64));
        Ok(Self {
            names: env.names()?,
            runner_cluster: env.required("STRATO_RUNNER_CLUSTER")?,
            drift_batch: env.positive("STRATO_DRIFT_BATCH", 50)?.min(i32::MAX as u64) as i32,
            queued_grace: secs("STRATO_SWEEP_GRACE_SECS")?,
            heartbeat_stale: secs("STRATO_HEARTBEAT_STALE_SECS")?,
        })
    }
}

pub struct Ctx {
    pub config: Config,
    pub store: Store,
    pub ddb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub ecs: aws_sdk_ecs::Client,
    pub queues: QueueUrls,
    pub connections: strato_aws::connections::Connections,
}

impl Ctx {
    pub async fn new(
        config: Config,
        aws: &AwsClients,
        ecs: aws_sdk_ecs::Client,
    ) -> Result<Self, SchedulerError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names),
            ddb: aws.dynamodb.clone(),
            sqs: aws.sqs.clone(),
            ecs,
            queues,
            connections: strato_aws::connections::Connections {
                ddb: aws.dynamodb.clone(),
                table: config.names.table("connections"),
            },
            config,
        })
    }
}

/// The schedule's constant input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tick {
    pub task: Task,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    Drift,
    Sweep,
}

/// What one run did (returned as the invocation's result, so it shows in logs and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub drift_checks_queued: u32,
    pub drift_postponed_busy: u32,
    pub drift_already_pending: u32,
    pub requeued: u32,
    pub woken: u32,
    pub stale_runners_reported: u32,
    pub tf_locks_released: u32,
    pub connections_removed: u32,
}

pub async fn handle(ctx: &Ctx, tick: &Tick, now: OffsetDateTime) -> Result<Report, SchedulerError> {
    let report = match tick.task {
        Task::Drift => drift(ctx, now).await?,
        Task::Sweep => sweep(ctx, now).await?,
    };
    tracing::info!(task = ?tick.task, ?report, "scheduler run");
    Ok(report)
}

// ---- drift ---------------------------------------------------------------------------------------------

fn interval(c: &Cluster) -> Duration {
    Duration::seconds(c.drift_interval_secs.unwrap_or(DEFAULT_DRIFT_INTERVAL_SECS) as i64)
}

/// Up to a tenth of the interval, fixed per cluster and check: spreads clusters created together.
pub fn jitter(cluster: &ClusterId, due: &str, interval: Duration) -> Duration {
    let h = Sha256::digest(format!("{cluster}/{due}").as_bytes());
    let n = u64::from_be_bytes(h[..8].try_into().unwrap_or([0; 8]));
    let span = (interval.whole_seconds() / 10).max(1) as u64;
    Duration::seconds((n % span) as i64)
}

async fn drift(ctx: &Ctx, now: OffsetDateTime) -> Result<Report, SchedulerError> {
    let mut report = Report::default();
    let store = &ctx.store;
    for c in store.clusters_due_for_drift(now, ctx.config.drift_batch).await? {
        let ops = store.list_operations(&c.cluster_id).await?;
        let open: Vec<&Operation> = ops.iter().filter(|o| !o.status.is_terminal()).collect();
        let pending = open.iter().any(|o| o.kind == OperationKind::DriftCheck);
        let busy = !open.is_empty();
        let due = c.next_drift_check_at.clone().unwrap_or_default();
        let next = if busy {
            now + BUSY_RETRY
        } else {
            now + interval(&c) + jitter(&c.cluster_id, &due, interval(&c))
        };
        // Claim this check by moving the next one (conditional on the version read): an overlapping run
        // loses here and skips the cluster.
        let mut claimed = c.clone();
        claimed.next_drift_check_at = Some(ts::format(next));
        match store.save_cluster(&mut claimed).await {
            Ok(()) => {}
            Err(strato_aws::Error::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
        if pending {
            report.drift_already_pending += 1;
            continue;
        }
        if busy {
            report.drift_postponed_busy += 1;
            continue;
        }
        let mut op = Operation::new(
            c.tenant_id.clone(),
            c.cluster_id.clone(),
            OperationKind::DriftCheck,
            now,
        );
        op.requested_by = Some(SCHEDULER.into());
        if let Err(rejected) = submit(store, &ctx.sqs, &ctx.queues.jobs, &op).await? {
            tracing::warn!(cluster = %c.cluster_id, ?rejected, "drift check not queued: tenant quota");
            continue;
        }
        tracing::info!(cluster = %c.cluster_id, operation = %op.operation_id, "drift check queued");
        report.drift_checks_queued += 1;
    }
    Ok(report)
}

// ---- sweep ---------------------------------------------------------------------------------------------

async fn sweep(ctx: &Ctx, now: OffsetDateTime) -> Result<Report, SchedulerError> {
    let mut report = Report::default();
    let store = &ctx.store;
    let grace = ctx.config.queued_grace;

    // Written but never dispatched: the API died between its transaction and the enqueue (or the message
    // went to the DLQ). The dedup id changes only when the operation does, so sweeps do not pile up.
    for op in store.open_operations("queued").await? {
        if op.updated_at + grace <= now {
            let wake = format!("sweep-{}", op.updated_at.unix_timestamp());
            enqueue_job(&ctx.sqs, &ctx.queues.jobs, &JobMessage::from(&op), &wake).await?;
            report.requeued += 1;
        }
    }

    // Parked behind a lock whose holder is gone (its hand-off was lost): free the lock, wake the waiter.
    for op in store.open_operations("waiting").await? {
        if op.updated_at + grace > now {
            continue;
        }
        let holder_gone = match store.cluster_lock(&op.cluster_id).await? {
            None => true,
            Some((owner, token)) => match store.get_operation(&owner).await? {
                Some(h) if !h.status.is_terminal() => false,
                _ => store
                    .release_cluster_lock(&op.cluster_id, &owner, token)
                    .await
                    .map(|_| true)?,
            },
        };
        if holder_gone {
            let wake = format!("sweep-{}", op.updated_at.unix_timestamp());
            enqueue_job(&ctx.sqs, &ctx.queues.jobs, &JobMessage::from(&op), &wake).await?;
            report.woken += 1;
        }
    }

    // Silent runners. Only ECS can say whether one is dead; a running task is left alone.
    for status in ["dispatched", "running"] {
        for op in store.open_operations(status).await? {
            let last_sign = op.heartbeat_at.unwrap_or(op.updated_at).max(op.updated_at);
            if last_sign + ctx.config.heartbeat_stale > now {
                continue;
            }
            let Some(arn) = op.task_arn.clone() else {
                // Claimed, but the dispatcher died before RunTask: its redelivery logic finishes the start.
                let wake = format!("sweep-{}", op.updated_at.unix_timestamp());
                enqueue_job(&ctx.sqs, &ctx.queues.jobs, &JobMessage::from(&op), &wake).await?;
                report.requeued += 1;
                continue;
            };
            if let Some(stopped) = stopped_task(ctx, &arn).await? {
                report_stopped(ctx, &op, &arn, stopped).await?;
                report.stale_runners_reported += 1;
            }
        }
    }

    report.tf_locks_released = release_orphaned_state_locks(ctx).await?;
    report.connections_removed = remove_expired_connections(ctx, now).await?;
    Ok(report)
}

/// At most this many expired connections are removed per sweep; the rest are the next sweep's.
const CONNECTIONS_PER_SWEEP: usize = 500;

/// API Gateway has closed these connections (2 h limit) and may not have told `$disconnect`; their items
/// would otherwise linger until TTL deletion (up to days late), costing every fan-out a dead post.
async fn remove_expired_connections(ctx: &Ctx, now: OffsetDateTime) -> Result<u32, SchedulerError> {
    let mut removed = 0;
    for id in ctx.connections.expired(now, CONNECTIONS_PER_SWEEP).await? {
        ctx.connections.remove_connection(&id).await?;
        removed += 1;
    }
    if removed > 0 {
        tracing::info!(removed, "expired WebSocket connections removed");
    }
    Ok(removed)
}

/// How a task ended, if it did.
struct Stopped {
    reason: String,
    exit_code: Option<i32>,
}

/// `Some` if the task is stopped or ECS no longer knows it; `None` while it runs.
async fn stopped_task(ctx: &Ctx, arn: &str) -> Result<Option<Stopped>, SchedulerError> {
    let out = ctx
        .ecs
        .describe_tasks()
        .cluster(&ctx.config.runner_cluster)
        .tasks(arn)
        .send()
        .await
        .map_err(|e| aws_error("DescribeTasks", e))?;
    let Some(task) = out.tasks().first() else {
        return Ok(Some(Stopped {
            reason: "the runner's ECS task no longer exists (found by the sweeper)".into(),
            exit_code: None,
        }));
    };
    if task.last_status() != Some("STOPPED") {
        return Ok(None);
    }
    Ok(Some(Stopped {
        reason: task
            .stopped_reason()
            .unwrap_or("the runner's ECS task stopped (found by the sweeper)")
            .to_owned(),
        exit_code: task.containers().first().and_then(|c| c.exit_code()),
    }))
}

/// Sends what EventBridge would have: an "ECS Task State Change" (STOPPED) to the events queue. The status
/// function then fails the operation (unless the runner's final report arrives) and releases the lock with
/// the operation's fencing token — the same path as a live stop event, so there is one way to end a run.
async fn report_stopped(
    ctx: &Ctx,
    op: &Operation,
    arn: &str,
    stopped: Stopped,
) -> Result<(), SchedulerError> {
    let detail = TaskStateChange {
        task_arn: arn.to_owned(),
        last_status: "STOPPED".into(),
        desired_status: Some("STOPPED".into()),
        started_by: Some(op.operation_id.to_string()),
        stopped_reason: Some(stopped.reason),
        containers: vec![TaskContainer {
            name: "runner".into(),
            exit_code: stopped.exit_code,
            ..Default::default()
        }],
        overrides: TaskStateChange::runner_overrides("runner", &op.operation_id, op.fencing_token),
        ..Default::default()
    };
    let event = detail.into_event(
        format!("sweep-{}", op.operation_id),
        chrono::Utc::now(),
        None,
        None,
    );
    let body = serde_json::to_string(&event).map_err(|source| {
        SchedulerError::Store(strato_aws::Error::Render {
            what: "task state change event",
            source,
        })
    })?;
    ctx.sqs
        .send_message()
        .queue_url(&ctx.queues.events)
        .message_body(body)
        .send()
        .await
        .map_err(|e| aws_error("SendMessage", e))?;
    tracing::warn!(operation = %op.operation_id, task = %arn, "silent runner's task is stopped; reported");
    Ok(())
}

/// Which tenant and cluster a Terraform state lock belongs to (`None` for digest items and foreign states).
pub use strato_aws::state_lock::owner as state_lock_owner;

/// Terraform's lock table has a fixed schema with no index, so this is the one Scan Strato makes; the table
/// holds only locks currently held (a handful), not history.
async fn release_orphaned_state_locks(ctx: &Ctx) -> Result<u32, SchedulerError> {
    let table = ctx.config.names.table("tf-locks");
    let mut released = 0;
    let mut pages = ctx.ddb.scan().table_name(&table).into_paginator().send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| aws_error("Scan", e))?;
        for item in page.items() {
            if let Some(note) = release_if_orphaned(ctx, &table, item).await? {
                tracing::warn!(%note, "state lock released");
                released += 1;
            }
        }
    }
    Ok(released)
}

async fn release_if_orphaned(
    ctx: &Ctx,
    table: &str,
    item: &HashMap<String, AttributeValue>,
) -> Result<Option<String>, SchedulerError> {
    let Some(lock) = HeldLock::from_item(item) else {
        return Ok(None);
    };
    let Some((_, cluster)) = state_lock_owner(&lock.lock_id) else {
        return Ok(None);
    };
    let ops = ctx.store.list_operations(&cluster).await?;
    // Any open operation may be (or become) the lock's rightful holder: never release under it. A dead
    // runner's operation is ended first by the stale-runner path above, and the lock goes on a later sweep.
    if ops.iter().any(|o| !o.status.is_terminal()) || ctx.store.cluster_lock(&cluster).await?.is_some() {
        return Ok(None);
    }
    // Only the lock we looked at: a new one taken meanwhile has a different Info.
    if !state_lock::release(&ctx.ddb, table, &lock).await? {
        return Ok(None);
    }
    let note = format!(
        "{}: the sweeper released Terraform state lock {} held by {}, left by a runner that \
         stopped without unlocking",
        ts::format(ts::now()),
        lock.lock_id,
        lock.holder()
    );
    if let Some(last) = ops.iter().max_by_key(|o| o.created_at) {
        update_operation(&ctx.store, &last.operation_id, |o| {
            if o.notes.contains(&note) {
                return false;
            }
            o.notes.push(note.clone());
            true
        })
        .await?;
    }
    Ok(Some(note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_bounded_and_stable() {
        let c = ClusterId::generate();
        let i = Duration::hours(6);
        let a = jitter(&c, "2026-11-22T04:00:00.000000Z", i);
        assert_eq!(a, jitter(&c, "2026-11-22T04:00:00.000000Z", i));
        assert!(a >= Duration::ZERO && a < Duration::minutes(36));
    }

    #[test]
    fn config_names_what_is_wrong() {
        let env = |extra: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                [
                    ("STRATO_RESOURCE_PREFIX", "strato-test"),
                    ("STRATO_RUNNER_CLUSTER", "runners"),
                ]
                .iter()
                .chain(extra)
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
            }
        };
        let c = Config::from_lookup(env(&[])).unwrap();
        assert_eq!(c.drift_batch, 50);
        assert_eq!(c.queued_grace, Duration::seconds(120));
        let err = Config::from_lookup(env(&[("STRATO_SWEEP_GRACE_SECS", "soon")])).unwrap_err();
        assert!(err.to_string().contains("STRATO_SWEEP_GRACE_SECS"), "{err}");
    }
}

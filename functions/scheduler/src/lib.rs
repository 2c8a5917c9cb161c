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
//!
//!   Then cluster expiry ([`Expirer`]): due clusters get a `delete`, clusters near their expiry a
//!   `cluster.expiring` event (the sparse `by_expiry` index, a Query). Then silent cluster agents
//!   ([`SilentAgents`]): an ACTIVE or UPDATING cluster whose agent has not reported for
//!   `STRATO_AGENT_STALE_SECS` is marked `degraded`, with `cluster.health_changed` (the sparse
//!   `by_agent_seen` index, a Query). Then rollouts whose soak has ended get their tick on the `rollouts`
//!   queue (`strato_rollout::feed::tick_due`), and an ended run a rollout still waits for its outcome again
//!   (`resend_ended`: the repair of an outcome the status function could not send).
//!
//! The decisions ([`Scheduler`]) take their dependencies through the domain's ports; [`handle`] runs them on
//! the AWS adapters (DynamoDB store, `jobs.fifo`, ECS, the events queue, Terraform's lock table), the fast
//! tests on the in-memory fakes. The connection sweep has no decision in it and runs on its adapter here.

mod aws_calls;
pub use aws_calls::AWS_CALLS;

mod agents;
mod approvals;
mod decide;
mod expiry;

pub use agents::SilentAgents;
pub use decide::{BUSY_RETRY, Report, SCHEDULER, Scheduler, jitter};
pub use expiry::{DELETE_RETRY, Expirer};

use serde::{Deserialize, Serialize};

use strato_aws::aws::AwsClients;
use strato_aws::env::{Env, EnvError};
use strato_aws::ports::{
    DynamoAuditLog, DynamoStateLocks, EcsTaskStatus, SqsJobQueue, SqsTaskEvents, SqsWebhooks,
};
use strato_aws::queues::QueueUrls;
use strato_aws::resources::Names;
use strato_aws::store::Store;
use time::{Duration, OffsetDateTime};

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error(transparent)]
    Store(#[from] strato_aws::Error),
    /// A domain refusal or a port failure (the adapter's error travels inside it).
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
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
    /// Days audit entries are kept (`STRATO_AUDIT_RETENTION_DAYS`, default 365).
    pub audit_retention_days: u64,
    /// Days a finished operation is kept (`STRATO_OPERATION_RETENTION_DAYS`, default 90; DynamoDB TTL).
    pub operation_retention_days: u32,
    /// How long before a cluster expires its `cluster.expiring` event is sent.
    pub expiry_notice: Duration,
    /// A cluster agent silent this long marks its cluster degraded (`STRATO_AGENT_STALE_SECS`, default 600).
    pub agent_stale: Duration,
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
            audit_retention_days: DynamoAuditLog::retention_days(&env)?,
            operation_retention_days: strato_aws::store::operation_retention_days(&env)?,
            expiry_notice: Duration::hours(
                env.positive(
                    strato_domain::expiry::EXPIRY_NOTICE_ENV,
                    strato_domain::expiry::DEFAULT_EXPIRY_NOTICE_HOURS,
                )?
                .min(24 * 365) as i64,
            ),
            agent_stale: Duration::seconds(
                env.positive(
                    strato_domain::health::STALE_ENV,
                    strato_domain::health::DEFAULT_STALE_SECS,
                )?
                .min(i64::MAX as u64 / 2) as i64,
            ),
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
    pub connections: strato_connections::Connections,
    pub audit: DynamoAuditLog,
}

impl Ctx {
    pub async fn new(
        config: Config,
        aws: &AwsClients,
        ecs: aws_sdk_ecs::Client,
    ) -> Result<Self, SchedulerError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names)
                .with_operation_retention(config.operation_retention_days),
            ddb: aws.dynamodb.clone(),
            audit: DynamoAuditLog::new(aws.dynamodb.clone(), &config.names, config.audit_retention_days),
            sqs: aws.sqs.clone(),
            ecs,
            queues,
            connections: strato_connections::Connections {
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

/// Runs one tick on the AWS adapters (see [`Scheduler::drift`] and [`Scheduler::sweep`]).
pub async fn handle(ctx: &Ctx, tick: &Tick, now: OffsetDateTime) -> Result<Report, SchedulerError> {
    let jobs = SqsJobQueue {
        sqs: &ctx.sqs,
        url: &ctx.queues.jobs,
    };
    let tasks = EcsTaskStatus {
        ecs: &ctx.ecs,
        cluster: &ctx.config.runner_cluster,
    };
    let events = SqsTaskEvents {
        sqs: &ctx.sqs,
        url: &ctx.queues.events,
    };
    let tf_locks = ctx.config.names.table("tf-locks");
    let state_locks = DynamoStateLocks {
        ddb: &ctx.ddb,
        table: &tf_locks,
    };
    let scheduler = Scheduler {
        store: &ctx.store,
        jobs: &jobs,
        tasks: &tasks,
        events: &events,
        state_locks: &state_locks,
        audit: &ctx.audit,
        drift_batch: ctx.config.drift_batch,
        queued_grace: ctx.config.queued_grace,
        heartbeat_stale: ctx.config.heartbeat_stale,
    };
    let report = match tick.task {
        Task::Drift => scheduler.drift(now).await?,
        Task::Sweep => {
            let mut report = scheduler.sweep(now).await?;
            report.connections_removed = remove_expired_connections(ctx, now).await?;
            let webhooks = SqsWebhooks {
                store: &ctx.store,
                sqs: &ctx.sqs,
                url: &ctx.queues.webhooks,
            };
            let expirer = Expirer {
                store: &ctx.store,
                jobs: &jobs,
                webhooks: &webhooks,
                audit: &ctx.audit,
                notice: ctx.config.expiry_notice,
                batch: ctx.config.drift_batch,
            };
            expirer.run(now, &mut report).await?;
            let silent = SilentAgents {
                store: &ctx.store,
                webhooks: &webhooks,
                stale_after: ctx.config.agent_stale,
                batch: ctx.config.drift_batch,
            };
            silent.run(now, &mut report).await?;
            tick_rollouts(ctx, now).await;
            report
        }
    };
    let r = &report;
    tracing::info!(
        task = ?tick.task,
        drift_checks_queued = r.drift_checks_queued,
        drift_postponed_busy = r.drift_postponed_busy,
        drift_already_pending = r.drift_already_pending,
        requeued = r.requeued,
        woken = r.woken,
        stale_runners_reported = r.stale_runners_reported,
        tf_locks_released = r.tf_locks_released,
        slots_released = r.slots_released,
        deadlines_resent = r.deadlines_resent,
        connections_removed = r.connections_removed,
        expiry_deletes_queued = r.expiry_deletes_queued,
        expiry_postponed_busy = r.expiry_postponed_busy,
        expiry_notices_sent = r.expiry_notices_sent,
        agents_marked_silent = r.agents_marked_silent,
        health_events_sent = r.health_events_sent,
        "scheduler run"
    );
    Ok(report)
}

/// Sends a tick to every rollout whose wake time has come (a soak that ended), and again the outcome of every
/// run a rollout waits for that has ended (one the status function could not send). What could not be sent
/// is the next sweep's: logged and counted, never the sweep's failure.
async fn tick_rollouts(ctx: &Ctx, now: OffsetDateTime) {
    let queue = strato_aws::ports::SqsRollouts {
        sqs: &ctx.sqs,
        url: &ctx.queues.rollouts,
    };
    let now = now.unix_timestamp();
    match strato_rollout::feed::tick_due(&ctx.store, &queue, now).await {
        Ok(0) => {}
        Ok(sent) => tracing::info!(sent, "rollout ticks queued"),
        Err(e) => {
            strato_domain::vitals::rollout_input_lost();
            tracing::error!(error = %e, "rollout ticks not queued");
        }
    }
    // An ended run's outcome the status function could not send, sent again.
    let read = |id: strato_domain::ids::OperationId| async move {
        ctx.store.get_operation(&id).await.map_err(|e| e.to_string())
    };
    match strato_rollout::feed::resend_ended(&ctx.store, &queue, read, now).await {
        Ok(0) => {}
        Ok(sent) => tracing::info!(sent, "ended rollout runs' outcomes queued again"),
        Err(e) => {
            strato_domain::vitals::rollout_input_lost();
            tracing::error!(error = %e, "ended rollout runs' outcomes not queued again");
        }
    }
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

/// Which tenant and cluster a Terraform state lock belongs to (`None` for digest items and foreign states).
pub use strato_aws::state_lock::owner as state_lock_owner;

#[cfg(test)]
mod tests {
    use super::*;
    use strato_domain::ids::ClusterId;

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
        assert_eq!(c.expiry_notice, Duration::hours(24));
        assert_eq!(c.agent_stale, Duration::seconds(600));
        let c = Config::from_lookup(env(&[("STRATO_AGENT_STALE_SECS", "90")])).unwrap();
        assert_eq!(c.agent_stale, Duration::seconds(90));
        let c = Config::from_lookup(env(&[("STRATO_EXPIRY_NOTICE_HOURS", "2")])).unwrap();
        assert_eq!(c.expiry_notice, Duration::hours(2));
        let err = Config::from_lookup(env(&[("STRATO_SWEEP_GRACE_SECS", "soon")])).unwrap_err();
        assert!(err.to_string().contains("STRATO_SWEEP_GRACE_SECS"), "{err}");
    }
}

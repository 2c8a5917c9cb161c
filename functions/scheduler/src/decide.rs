//! The scheduler's decisions, written against the domain's ports: which clusters get a drift check, and what
//! the sweep recovers (undispatched and orphaned operations, dead runners, Terraform state locks left behind).
//! The Lambda handler runs them on the AWS adapters; the fast tests on the in-memory fakes. Removing expired
//! WebSocket connections decides nothing (the index already says which), so it stays on its adapter.

use serde::Serialize;
use sha2::{Digest, Sha256};
use strato_coordination::{release_and_wake, update_operation};
use strato_domain::audit::{self, AuditEntry, AuditLog};
use strato_domain::ecs_event::{TaskContainer, TaskStateChange};
use strato_domain::ids::ClusterId;
use strato_domain::messages::{ControlEvent, JobMessage};
use strato_domain::model::{Cluster, DEFAULT_DRIFT_INTERVAL_SECS, Operation, OperationKind};
use strato_domain::ports::{
    ClusterLocks, Clusters, Intake, JobQueue, OpenStatus, Operations, PortError, StateLock, StateLocks,
    TaskEventSink, TaskState, TaskStatus, TenantSlots,
};
use strato_domain::telemetry::{self, Traceparent};
use strato_domain::ts;
use strato_domain::vitals;
use strato_terraform::state_lock::{StateLockVerdict, state_lock_verdict};
use time::{Duration, OffsetDateTime};
use tracing::Instrument;

/// Who scheduled operations are requested by.
pub const SCHEDULER: &str = "strato:scheduler";

/// A busy cluster's drift check is looked at again after this long.
pub const BUSY_RETRY: Duration = Duration::minutes(5);

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
    /// Tenant slots held by operations that had finished (or no longer exist): their hand-off was lost.
    pub slots_released: u32,
    /// Configure deadlines past due (plus the grace) whose create still waits: their timer was lost.
    pub deadlines_resent: u32,
    pub connections_removed: u32,
    /// Expired clusters whose delete was queued.
    pub expiry_deletes_queued: u32,
    /// Expired clusters left for the next run: an operation open, mid-change, or a lost race.
    pub expiry_postponed_busy: u32,
    /// `cluster.expiring` events queued.
    pub expiry_notices_sent: u32,
    /// Approval requests nobody answered in time, decided `expired`.
    pub approvals_expired: u32,
    /// Decided approval requests whose job was sent again (the first send was lost).
    pub decisions_resent: u32,
    /// Clusters whose agent went silent, marked `degraded`.
    pub agents_marked_silent: u32,
    /// `cluster.health_changed` events queued (for those marks).
    pub health_events_sent: u32,
    /// Age of the oldest open operation the sweep saw, in seconds (0: none open).
    pub oldest_open_secs: u64,
    /// The sweep's running minimum of open operations' creation times, folded into `oldest_open_secs`.
    #[serde(skip)]
    oldest_open: Option<OffsetDateTime>,
}

impl Report {
    fn saw_open(&mut self, ops: &[Operation]) {
        let oldest = ops.iter().map(|o| o.created_at).min();
        self.oldest_open = self.oldest_open.into_iter().chain(oldest).min();
    }
}

/// The scheduler's dependencies, as ports, and its settings.
#[derive(Debug, Clone, Copy)]
pub struct Scheduler<'a, S, Q, T, E, L, A> {
    /// Operations, clusters, cluster locks, tenant slots.
    pub store: &'a S,
    /// `jobs.fifo`: new drift checks, re-enqueued and woken operations.
    pub jobs: &'a Q,
    /// What ECS says of a silent runner's task.
    pub tasks: &'a T,
    /// The status function's events queue, for the stop event of a dead runner.
    pub events: &'a E,
    /// Terraform's state locks.
    pub state_locks: &'a L,
    /// What the scheduler does on its own is recorded here, as `strato:scheduler`.
    pub audit: &'a A,
    /// At most this many clusters are looked at per drift run; the rest are next run's.
    pub drift_batch: i32,
    /// A queued operation untouched for this long was not dispatched (the create/enqueue gap).
    pub queued_grace: Duration,
    /// A runner silent for this long is checked against ECS.
    pub heartbeat_stale: Duration,
}

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

/// The span of one operation the tick handles: its ids, in its trace.
fn item_span(op: &Operation) -> tracing::Span {
    let parent = op.traceparent.as_ref();
    let span = telemetry::span("tick", &Traceparent::child_or_root(parent), parent);
    op.record_on(&span);
    span
}

/// The deduplication suffix of a sweep's re-enqueue: it changes only when the operation does, so repeated
/// sweeps of an unchanged operation do not pile up jobs.
pub(crate) fn sweep_wake(op: &Operation) -> String {
    format!("sweep-{}", op.updated_at.unix_timestamp())
}

impl<S, Q, T, E, L, A> Scheduler<'_, S, Q, T, E, L, A>
where
    S: Operations + Clusters + ClusterLocks + TenantSlots + Intake,
    Q: JobQueue,
    T: TaskStatus,
    E: TaskEventSink,
    L: StateLocks,
    A: AuditLog,
{
    /// One audit entry of `strato:scheduler` about `op` (never fails the sweep: see `audit::record`).
    pub(crate) async fn record(&self, op: &Operation, action: &str, detail: String, now: OffsetDateTime) {
        let entry = AuditEntry::system(
            "scheduler",
            op.tenant_id.clone(),
            now,
            action,
            audit::Outcome::Succeeded,
        )
        .on_cluster((op.kind != OperationKind::Estimate).then(|| op.cluster_id.clone()))
        .on_operation(Some(op.operation_id.clone()))
        .with_detail(detail);
        audit::record(self.audit, entry).await;
    }

    /// ACTIVE clusters whose next check is due get one `drift-check` operation each — never a second while
    /// one is pending, none while the cluster is busy (looked at again [`BUSY_RETRY`] later).
    pub async fn drift(&self, now: OffsetDateTime) -> Result<Report, PortError> {
        let mut report = Report::default();
        let store = self.store;
        for c in store.clusters_due_for_drift(now, self.drift_batch).await? {
            let ops = store.open_cluster_operations(&c.cluster_id).await?;
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
            match store.store_cluster(&mut claimed).await {
                Ok(()) => {}
                Err(PortError::Conflict(_)) => continue,
                Err(e) => return Err(e),
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
            let span = item_span(&op);
            // Recorded on the claimed version, with the cluster's pending-operation marker, in one write: an
            // API drift check racing this one (it reads the marker consistently, the index may lag) either
            // sees this check or loses its own conditional write.
            match store.add_operation_on(&mut claimed, &op).await {
                Ok(Ok(())) => {}
                Ok(Err(rejected)) => {
                    span.in_scope(|| tracing::warn!(?rejected, "drift check not queued: tenant quota"));
                    continue;
                }
                Err(PortError::Conflict(_)) => {
                    // The cluster changed after the claim: someone else queued an operation on it.
                    report.drift_postponed_busy += 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
            // The first enqueue of a new operation; the sweeper re-sends it if this one is lost.
            self.jobs
                .enqueue(&JobMessage::from(&op), "0")
                .instrument(span.clone())
                .await?;
            span.in_scope(|| tracing::info!("drift check queued"));
            self.record(&op, "drift.schedule", "scheduled drift check queued".into(), now)
                .await;
            report.drift_checks_queued += 1;
        }
        Ok(report)
    }

    /// The recovery paths, each on its own index bucket (see the crate documentation).
    pub async fn sweep(&self, now: OffsetDateTime) -> Result<Report, PortError> {
        let mut report = Report::default();
        self.requeue_undispatched(now, &mut report).await?;
        self.wake_orphaned_waiters(now, &mut report).await?;
        self.report_dead_runners(now, &mut report).await?;
        self.settle_approvals(now, &mut report).await?;
        let oldest = report.oldest_open.take();
        vitals::oldest_open_operation(oldest, now);
        report.oldest_open_secs = oldest.map_or(0, |t| (now - t).whole_seconds().max(0) as u64);
        report.tf_locks_released = self.release_orphaned_state_locks(now).await?;
        report.slots_released = self.release_leaked_slots(now).await?;
        Ok(report)
    }

    /// Tenant slots whose operation has finished or no longer exists: a hand-off that never ran (a crash
    /// between ending the operation and releasing, or a path that ended it without knowing it held a slot).
    /// Left alone, enough of them park every later operation of the tenant on its concurrency limit for good.
    /// A finished holder is handed off in full (its lock too, with its own token, and the tenant's next
    /// waiter woken); a missing one has only its slot to give back, and the tenant's waiters are woken by
    /// the next hand-off or [`Self::wake_orphaned_waiters`].
    async fn release_leaked_slots(&self, now: OffsetDateTime) -> Result<u32, PortError> {
        let store = self.store;
        let mut released = 0;
        for (tenant, holders) in store.all_slot_holders().await? {
            for id in holders {
                match store.load_operation(&id).await? {
                    Some(op) if !op.status.is_terminal() => continue,
                    Some(op) => {
                        let span = item_span(&op);
                        release_and_wake(store, self.jobs, &op)
                            .instrument(span.clone())
                            .await?;
                        span.in_scope(|| {
                            tracing::warn!("released a tenant slot its finished operation still held")
                        });
                        let detail = "released the lock and tenant slot its finished operation still held";
                        self.record(&op, "lock.release", detail.into(), now).await;
                    }
                    None => {
                        store.release_slot(&tenant, &id).await?;
                        tracing::warn!(tenant_id = %tenant, operation_id = %id, "released a tenant slot its missing operation still held");
                    }
                }
                released += 1;
            }
        }
        Ok(released)
    }

    /// Written but never dispatched: the API died between its transaction and the enqueue (or the message
    /// went to the DLQ).
    async fn requeue_undispatched(&self, now: OffsetDateTime, report: &mut Report) -> Result<(), PortError> {
        let queued = self.store.open_operations(OpenStatus::Queued).await?;
        vitals::active_operations("queued", queued.len());
        report.saw_open(&queued);
        for op in queued {
            if op.updated_at + self.queued_grace <= now {
                self.jobs
                    .enqueue(&JobMessage::from(&op), &sweep_wake(&op))
                    .await?;
                self.record(
                    &op,
                    "operation.requeue",
                    "queued but never dispatched; enqueued again".into(),
                    now,
                )
                .await;
                report.requeued += 1;
            }
        }
        Ok(())
    }

    /// Parked behind a lock whose holder is gone (its hand-off was lost): free the lock, wake the waiter.
    async fn wake_orphaned_waiters(&self, now: OffsetDateTime, report: &mut Report) -> Result<(), PortError> {
        let store = self.store;
        let waiting = store.open_operations(OpenStatus::Waiting).await?;
        vitals::active_operations("waiting", waiting.len());
        report.saw_open(&waiting);
        for op in waiting {
            if op.updated_at + self.queued_grace > now {
                continue;
            }
            let holder_gone = match store.lock_owner(&op.cluster_id).await? {
                None => true,
                Some((owner, token)) => match store.load_operation(&owner).await? {
                    Some(h) if !h.status.is_terminal() => false,
                    _ => {
                        store.release_lock(&op.cluster_id, &owner, token).await?;
                        let detail =
                            format!("released the cluster lock {owner} (finished or gone) still held");
                        self.record(&op, "lock.release", detail, now).await;
                        true
                    }
                },
            };
            if holder_gone {
                self.jobs
                    .enqueue(&JobMessage::from(&op), &sweep_wake(&op))
                    .await?;
                report.woken += 1;
            }
        }
        Ok(())
    }

    /// Silent runners. Only ECS can say whether one is dead; a task that has not stopped is left alone,
    /// however old its heartbeat. A create waiting for its cluster agent is not silent: its runner reported
    /// and exited, and the agent or the configure deadline ends it.
    async fn report_dead_runners(&self, now: OffsetDateTime, report: &mut Report) -> Result<(), PortError> {
        for (bucket, name) in [
            (OpenStatus::Dispatched, "dispatched"),
            (OpenStatus::Running, "running"),
        ] {
            let open = self.store.open_operations(bucket).await?;
            vitals::active_operations(name, open.len());
            report.saw_open(&open);
            for op in open {
                let last_sign = op.heartbeat_at.unwrap_or(op.updated_at).max(op.updated_at);
                if op.awaiting_agent() {
                    // No runner to watch: the configure deadline ends it, unless that timer was lost.
                    report.deadlines_resent += u32::from(self.resend_lost_deadline(&op, now).await?);
                    continue;
                }
                if last_sign + self.heartbeat_stale > now {
                    continue;
                }
                let Some(arn) = op.task_arn.clone() else {
                    // Claimed, but the dispatcher died before RunTask: its redelivery logic finishes the start.
                    self.jobs
                        .enqueue(&JobMessage::from(&op), &sweep_wake(&op))
                        .await?;
                    report.requeued += 1;
                    continue;
                };
                let (reason, exit_code) = match self.tasks.task_state(&arn).await? {
                    TaskState::Alive => continue,
                    TaskState::Stopped {
                        stopped_reason,
                        exit_code,
                    } => (
                        stopped_reason
                            .unwrap_or_else(|| "the runner's ECS task stopped (found by the sweeper)".into()),
                        exit_code,
                    ),
                    TaskState::Missing => (
                        "the runner's ECS task no longer exists (found by the sweeper)".into(),
                        None,
                    ),
                };
                self.report_stopped(&op, &arn, reason.clone(), exit_code, now)
                    .await?;
                self.record(&op, "operation.report_stopped", reason, now).await;
                report.stale_runners_reported += 1;
            }
        }
        Ok(())
    }

    /// A create waiting for its agent past its configure deadline (plus the grace the timer has to arrive):
    /// the timer was lost (a failed send, or the DLQ), so the sweeper sends the deadline again, at once.
    /// Status ignores a duplicate, so resending on every sweep until it lands is safe.
    async fn resend_lost_deadline(&self, op: &Operation, now: OffsetDateTime) -> Result<bool, PortError> {
        let Some(c) = self.store.load_cluster(&op.tenant_id, &op.cluster_id).await? else {
            return Ok(false);
        };
        let Some(deadline) = c.configuring_deadline else {
            return Ok(false);
        };
        if deadline + self.queued_grace > now {
            return Ok(false);
        }
        let event = ControlEvent::ConfigureDeadline {
            operation_id: op.operation_id.clone(),
            cluster_id: op.cluster_id.clone(),
            deadline,
        };
        self.events.send_control_event(&event).await?;
        item_span(op).in_scope(
            || tracing::warn!(%deadline, "configure deadline past with the create still open; sent again"),
        );
        Ok(true)
    }

    /// Sends what EventBridge would have: an "ECS Task State Change" (STOPPED). The status function then
    /// fails the operation (unless the runner's final report arrives) and releases the lock with the
    /// operation's fencing token — the same path as a live stop event, so there is one way to end a run.
    async fn report_stopped(
        &self,
        op: &Operation,
        arn: &str,
        reason: String,
        exit_code: Option<i32>,
        now: OffsetDateTime,
    ) -> Result<(), PortError> {
        let detail = TaskStateChange {
            task_arn: arn.to_owned(),
            last_status: "STOPPED".into(),
            desired_status: Some("STOPPED".into()),
            started_by: Some(op.operation_id.to_string()),
            stopped_reason: Some(reason),
            containers: vec![TaskContainer {
                name: "runner".into(),
                exit_code,
                ..Default::default()
            }],
            overrides: TaskStateChange::runner_overrides("runner", &op.operation_id, op.fencing_token),
            ..Default::default()
        };
        let time =
            chrono::DateTime::from_timestamp(now.unix_timestamp(), now.nanosecond()).unwrap_or_default();
        let event = detail.into_event(format!("sweep-{}", op.operation_id), time, None, None);
        self.events.send_task_event(&event).await?;
        item_span(op)
            .in_scope(|| tracing::warn!(task_arn = %arn, "silent runner's task is stopped; reported"));
        Ok(())
    }

    /// Terraform state locks left behind by runners that stopped without unlocking: released once no
    /// operation of their cluster is open, and noted on the cluster's latest operation.
    async fn release_orphaned_state_locks(&self, now: OffsetDateTime) -> Result<u32, PortError> {
        let mut released = 0;
        for lock in self.state_locks.held_state_locks().await? {
            if let Some(note) = self.release_if_orphaned(&lock, now).await? {
                tracing::warn!(%note, "state lock released");
                released += 1;
            }
        }
        Ok(released)
    }

    async fn release_if_orphaned(
        &self,
        lock: &StateLock,
        now: OffsetDateTime,
    ) -> Result<Option<String>, PortError> {
        let store = self.store;
        let ops = store.open_cluster_operations(&lock.cluster).await?;
        // The one rule (strato_terraform::state_lock), shared with the runner. A dead runner's operation is
        // ended first by the stale-runner path, and the lock goes on a later sweep.
        let owner = store.lock_owner(&lock.cluster).await?.map(|(o, _)| o);
        if state_lock_verdict(&ops, None, owner.as_ref(), |_| false) != StateLockVerdict::HolderGone {
            return Ok(None);
        }
        // Only the lock we looked at: a new one taken meanwhile has a different Info.
        if !self.state_locks.release_state_lock(lock).await? {
            return Ok(None);
        }
        let note = format!(
            "{}: the sweeper released Terraform state lock {} held by {}, left by a runner that \
             stopped without unlocking",
            ts::format(now),
            lock.lock_id,
            lock.holder()
        );
        // The note goes on the cluster's newest operation (nothing is open: it has ended).
        let newest = store.recent_cluster_operations(&lock.cluster, 1).await?;
        if let Some(last) = newest.first() {
            update_operation(store, &last.operation_id, |o| {
                if o.notes.contains(&note) {
                    return false;
                }
                o.notes.push(note.clone());
                true
            })
            .await?;
            self.record(last, "state_lock.release", note.clone(), now).await;
        }
        Ok(Some(note))
    }
}

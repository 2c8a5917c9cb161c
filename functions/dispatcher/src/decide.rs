//! The dispatcher's decisions, written against the domain's ports: claim (lock + slot), park, adopt a task a
//! previous delivery started, back off, fail, release. The Lambda handler runs them on the AWS adapters; the
//! fast tests on the in-memory fakes.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use strato_aws::batch::{for_each_record, receive_count};
use strato_coordination::{
    ClusterFate, Ended, LOCK_LEASE, TENANT_LIMIT_REASON, cluster_busy_reason, end_operation,
    release_and_wake, update_cluster, update_operation, update_operation_from, update_operation_recorded,
};
use strato_domain::audit::{self, AuditEntry, AuditLog};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::identity::{NoRunIdentities, RunIdentities};
use strato_domain::messages::JobMessage;
use strato_domain::model::{ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{
    Claim, Clock, ClusterStep, JobQueue, LaunchFailure, LockOutcome, Storage, TaskLauncher,
};
use strato_domain::telemetry::fields;
use strato_domain::vitals::{self, ParkReason};
use strato_telemetry::current_trace;

use crate::DispatchError;

/// The dispatcher's dependencies, as ports.
#[derive(Debug, Clone, Copy)]
pub struct Dispatcher<'a, S, Q, L, C, A, I = NoRunIdentities> {
    /// Operations, clusters, cluster locks, tenant slots.
    pub store: &'a S,
    /// `jobs.fifo`: wake-ups of waiting operations, and backoff of the record being handled.
    pub jobs: &'a Q,
    pub launcher: &'a L,
    pub clock: &'a C,
    /// Where each start (or failure to start) of a runner is recorded, as `strato:dispatcher`.
    pub audit: &'a A,
    /// Deliveries a job gets before the queue moves it to its DLQ: a runner that still cannot start on
    /// the last one fails its operation instead.
    pub max_receives: u32,
    /// Mints and seals the run's OIDC identity tokens when its target federates (never the runner).
    pub identities: &'a I,
}

/// What became of one record: `Ack` when done with (started, parked, failed for good, or nothing to do),
/// `RetryAfter` when the runner could not start for a transient reason.
pub use strato_aws::batch::Outcome;

/// Exponential backoff by delivery count: 10 s, 20 s, 40 s… capped at 15 minutes.
pub fn backoff_secs(receive_count: u32) -> i32 {
    let exp = receive_count.saturating_sub(1).min(10);
    (10_i32 << exp).min(900)
}

/// What the step-by-step claim came to.
enum Claimed {
    /// Claimed with this token, the cluster in its working state: start the runner.
    Ready(Box<Operation>, u64),
    /// Nothing more to do for this delivery.
    Settled(Outcome),
}

/// A fencing token from the clock (microseconds since the epoch): above every token taken earlier, unless
/// clocks disagree or two claims fall in the same microsecond — then the claim's condition refuses it and
/// the step-by-step claim increments the stored token instead.
fn clock_token(now: time::OffsetDateTime) -> u64 {
    u64::try_from(now.unix_timestamp_nanos() / 1_000).unwrap_or(0)
}

/// What an operation of `kind` does to its cluster when claimed (see [`Dispatcher::enter_working_state`]).
fn working_step(kind: OperationKind) -> ClusterStep {
    match kind {
        OperationKind::Create => ClusterStep::Move {
            to: ClusterState::Provisioning,
            clear_error: true,
        },
        OperationKind::Update => ClusterStep::Move {
            to: ClusterState::Updating,
            clear_error: false,
        },
        OperationKind::Delete => ClusterStep::Move {
            to: ClusterState::Deleting,
            clear_error: false,
        },
        // A restore leaves the cluster's state as it is: it is allowed on a FAILED cluster, when it is needed.
        OperationKind::Plan | OperationKind::DriftCheck | OperationKind::RestoreState => {
            ClusterStep::Not(ClusterState::Deleted)
        }
        OperationKind::Estimate => ClusterStep::Untouched,
    }
}

/// Why the state machine refused to start an operation, and what the tenant can do about it.
fn refusal_error(op: &Operation, refusal: &str) -> UserError {
    let what = format!("cannot start the {} operation: {refusal}", op.kind.as_str());
    let fix = match op.kind {
        OperationKind::Update => {
            "Only an ACTIVE cluster can be updated; retry the create of a FAILED cluster or delete it."
        }
        OperationKind::Create => "Only a new or FAILED cluster can be (re)created.",
        OperationKind::Delete => "Wait for the running operation to finish, then delete the cluster.",
        OperationKind::Plan | OperationKind::DriftCheck => {
            "The cluster was deleted; there is nothing to check."
        }
        OperationKind::RestoreState => "The cluster was deleted; its state is no longer Strato's to restore.",
        // Never refused: an estimate has no cluster to be in the wrong state.
        OperationKind::Estimate => "Request the estimate again.",
    };
    UserError::new(ErrorCategory::InvalidConfiguration, "dispatch", what).with_fix(fix)
}

impl<S, Q, L, C, A, I> Dispatcher<'_, S, Q, L, C, A, I>
where
    S: Storage,
    Q: JobQueue,
    L: TaskLauncher,
    C: Clock,
    A: AuditLog,
    I: RunIdentities,
{
    /// Processes a batch. Records that must be retried are reported in `batch_item_failures`; on this FIFO
    /// queue a failed record also fails the later records of its message group unprocessed, so one
    /// cluster's jobs are never reordered (other groups go on).
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        for_each_record(
            &event.records,
            |record| self.process(record),
            |handle, secs| self.jobs.retry_after(handle, secs),
        )
        .await
    }

    async fn process(&self, record: &SqsMessage) -> Result<Outcome, DispatchError> {
        let message_id = record.message_id.clone().unwrap_or_default();
        let body = record.body.as_deref().ok_or_else(|| DispatchError::EmptyBody {
            message_id: message_id.clone(),
        })?;
        let job: JobMessage =
            serde_json::from_str(body).map_err(|source| DispatchError::BadBody { message_id, source })?;
        // The record's span (strato_aws::batch) is in the job's trace; it gets the job's ids.
        job.record_on(&tracing::Span::current());
        // Boxed: a job's state machine (claim, identities, launch, records) is large; on the caller's stack
        // it overflowed a 2 MiB thread in a debug build.
        Box::pin(self.dispatch(&job, receive_count(record))).await
    }

    /// Takes one job as far as it can go now; `receive_count` is how often the queue delivered it: claim
    /// (in one write when it can, else step by step), adopt or start the runner, record it.
    pub async fn dispatch(&self, job: &JobMessage, receive_count: u32) -> Result<Outcome, DispatchError> {
        // A first delivery carrying its operation as the api wrote it claims that copy without reading it:
        // the claim is conditioned on the copy's `updated_at`, so a copy that is no longer current (cancelled,
        // claimed, changed) loses, and the job is decided below on a fresh read like every other delivery.
        if receive_count == 1
            && let Some(carried) = job
                .operation
                .as_deref()
                .filter(|o| o.operation_id == job.operation_id)
        {
            strato_telemetry::record_operation(carried);
            if let Some((op, token)) = self.claim_at_once(carried).await? {
                return self.start_claimed(op, token, false, receive_count).await;
            }
        }
        let store = self.store;
        let op = store
            .load_operation(&job.operation_id)
            .await?
            .ok_or_else(|| DispatchError::UnknownOperation(job.operation_id.to_string()))?;
        // An approval's decision: apply the approved plan in a new run, or end the operation.
        let op = if op.status == OperationStatus::AwaitingApproval {
            match self.act_on_decision(op).await? {
                Some(op) => op,
                None => return Ok(Outcome::Ack),
            }
        } else {
            op
        };
        // A finished operation may still hold what an earlier delivery took for it (that delivery died after
        // taking the slot, then the operation was ended where nobody knew): hand off again. Idempotent — the
        // lock is released only with the operation's own token, the wake-up is deduplicated by the queue.
        if op.status.is_terminal() {
            tracing::info!(operation_id = %op.operation_id, status = ?op.status, "already finished; handing off");
            release_and_wake(store, self.jobs, &op).await?;
            return Ok(Outcome::Ack);
        }
        // Redelivery, or a wake-up for an operation whose runner already runs: nothing to do.
        if op.task_arn.is_some() {
            tracing::info!(operation_id = %op.operation_id, status = ?op.status, "already dispatched");
            return Ok(Outcome::Ack);
        }
        strato_telemetry::record_operation(&op);
        // Only an operation claimed before may have a runner already: ListTasks is for it (and, to be safe,
        // for any redelivery), not for every first delivery.
        let earlier_claim = op.fencing_token.is_some() || receive_count > 1;
        let (op, token) = match self.claim_at_once(&op).await? {
            Some(claimed) => claimed,
            None => match self.claim_step_by_step(op, job).await? {
                Claimed::Ready(op, token) => (*op, token),
                Claimed::Settled(outcome) => return Ok(outcome),
            },
        };
        self.start_claimed(op, token, earlier_claim, receive_count).await
    }

    /// A claimed operation's runner: adopted when an earlier claim may have started it, else started with
    /// its run's identity tokens; then recorded on the operation with its audit entry.
    async fn start_claimed(
        &self,
        op: Operation,
        token: u64,
        earlier_claim: bool,
        receive_count: u32,
    ) -> Result<Outcome, DispatchError> {
        let store = self.store;
        let found = if earlier_claim {
            self.launcher.find_started(&op.operation_id).await?
        } else {
            None
        };
        // The task that planned for an approval may still be stopping: it is not this run's.
        let planned_by = op.approval.as_ref().and_then(|a| a.task_arn.as_deref());
        let found = found.filter(|arn| Some(arn.as_str()) != planned_by);
        // A run about to start gets its identity tokens first (saved on the operation it then carries on
        // with, so the writes below see its version).
        let op = match found {
            Some(_) => op,
            None => match self.with_identity(op, receive_count).await? {
                Ok(op) => op,
                Err(outcome) => return Ok(outcome),
            },
        };
        let task_arn = match found {
            Some(arn) => arn,
            None => match self.launcher.launch(&op, token, current_trace().as_ref()).await {
                Ok(arn) => arn,
                Err(LaunchFailure::Transient(reason)) if receive_count < self.max_receives => {
                    let delay = backoff_secs(receive_count);
                    tracing::warn!(operation_id = %op.operation_id, %reason, delay, "runner could not start yet; retrying");
                    return Ok(Outcome::RetryAfter(delay));
                }
                Err(LaunchFailure::Transient(reason)) => {
                    let what =
                        format!("the runner could not be started after {receive_count} attempts: {reason}");
                    let err = UserError::new(ErrorCategory::Transient, "dispatch", what);
                    self.fail(&op, err, true).await?;
                    self.record(&op, audit::Outcome::Failed, reason).await;
                    return Ok(Outcome::Ack);
                }
                Err(LaunchFailure::Fatal(reason)) => {
                    let what = format!("the runner could not be started: {reason}");
                    let err = UserError::new(ErrorCategory::Internal, "dispatch", what);
                    self.fail(&op, err, true).await?;
                    self.record(&op, audit::Outcome::Failed, reason).await;
                    return Ok(Outcome::Ack);
                }
            },
        };

        let launched_at = self.clock.now();
        tracing::Span::current().record(fields::TASK_ARN, task_arn.as_str());
        let started = format!("runner task {task_arn} started (fencing token {token})");
        let entry = self.entry(&op, audit::Outcome::Succeeded, started);
        let record_task = |o: &mut Operation| {
            if o.task_arn.is_some() || o.status.is_terminal() {
                return false;
            }
            o.task_arn = Some(task_arn.clone());
            o.status = OperationStatus::Dispatched;
            o.attempt += 1;
            o.dispatched_at = Some(launched_at);
            o.started_at = None;
            true
        };
        // The entry goes into the write that records the task: one call, and neither without the other.
        let written = match update_operation_recorded(store, op.clone(), record_task, &entry).await {
            Ok(saved) => saved.is_some_and(|(_, written)| written),
            // The task runs whatever the audit log says: a write the entry failed (its table unavailable)
            // is made again without it, and the entry goes on its own below, best effort as any other.
            Err(e) => {
                tracing::warn!(operation_id = %op.operation_id, error = %e, "task and audit entry not saved together; saving the task alone");
                update_operation_from(store, op.clone(), record_task).await?;
                false
            }
        };
        // A cancel flagged from here on is the runner's to notice (it polls within one heartbeat).
        tracing::info!(operation_id = %op.operation_id, %task_arn, fencing_token = token, "runner started");
        vitals::dispatched(&op, self.clock.now());
        // Not written with the task (the operation had ended or had its task meanwhile, or the write above
        // failed): the task was started all the same, so its entry is written on its own.
        if !written {
            audit::record(self.audit, entry).await;
        }
        Ok(Outcome::Ack)
    }

    /// `op` with its run's identity tokens saved on it, written before the runner starts so it finds them
    /// (a fresh set per start: an earlier start's tokens may have expired). A spec whose target does not
    /// federate gets none and nothing is written. Tokens that cannot be issued (the signing key unavailable)
    /// are retried like a runner that cannot start, then fail the operation.
    async fn with_identity(
        &self,
        op: Operation,
        receive_count: u32,
    ) -> Result<Result<Operation, Outcome>, DispatchError> {
        let spec = match &op.spec {
            Some(spec) => spec.clone(),
            None => match self.store.load_cluster(&op.tenant_id, &op.cluster_id).await? {
                Some(c) => c.spec,
                None => return Ok(Ok(op)),
            },
        };
        if spec.target.as_ref().and_then(|t| t.identity_audience()).is_none() {
            return Ok(Ok(op));
        }
        match self.identities.issue(&op, &spec).await {
            Ok(None) => Ok(Ok(op)),
            Ok(Some(tokens)) => {
                let saved = update_operation_from(self.store, op.clone(), |o| {
                    o.run_identity = Some(tokens.clone());
                    true
                })
                .await?;
                Ok(Ok(saved.unwrap_or(op)))
            }
            Err(e) if receive_count < self.max_receives => {
                let delay = backoff_secs(receive_count);
                tracing::warn!(operation_id = %op.operation_id, error = %e, delay, "identity tokens not issued yet; retrying");
                Ok(Err(Outcome::RetryAfter(delay)))
            }
            Err(e) => {
                let what = format!(
                    "the run's identity tokens could not be issued after {receive_count} attempts: {e}"
                );
                let mut err = UserError::new(ErrorCategory::Internal, "dispatch", what);
                err = err.with_fix("an operator must make Strato's token-signing key usable by the dispatcher (kms:Sign, kms:GetPublicKey) and the template published; then retry the operation");
                self.fail(&op, err, true).await?;
                self.record(&op, audit::Outcome::Failed, "identity tokens not issued".into())
                    .await;
                Ok(Err(Outcome::Ack))
            }
        }
    }

    /// The audit entry of a dispatch (never fails the dispatch: see `audit::record`).
    async fn record(&self, op: &Operation, outcome: audit::Outcome, detail: String) {
        audit::record(self.audit, self.entry(op, outcome, detail)).await;
    }

    /// The dispatcher's entry on `op` (its cluster too, unless it is an estimate's).
    fn entry(&self, op: &Operation, outcome: audit::Outcome, detail: String) -> AuditEntry {
        let cluster = (op.kind != OperationKind::Estimate).then(|| op.cluster_id.clone());
        AuditEntry::system(
            "dispatcher",
            op.tenant_id.clone(),
            self.clock.now(),
            "operation.dispatch",
            outcome,
        )
        .on_cluster(cluster)
        .on_operation(Some(op.operation_id.clone()))
        .with_detail(detail)
    }

    /// The common case in one write ([`Claims::claim`](strato_domain::ports::Claims::claim)): a queued
    /// operation never claimed before takes the lock with a fresh token, a slot, its claim and its
    /// cluster's working state all at once. `None` when
    /// it does not apply or any condition failed (held lock, full slots, a concurrent change, a cluster in
    /// the wrong state, a token not above the stored one): the step-by-step claim then reads and decides,
    /// parking, refusing or retrying exactly as before.
    async fn claim_at_once(&self, op: &Operation) -> Result<Option<(Operation, u64)>, DispatchError> {
        if op.status != OperationStatus::Queued || op.fencing_token.is_some() || op.cancel_requested {
            return Ok(None);
        }
        let now = self.clock.now();
        let claim = Claim {
            token: clock_token(now),
            lease: LOCK_LEASE,
            now,
            cluster: working_step(op.kind),
        };
        let mut claimed = op.clone();
        claimed.fencing_token = Some(claim.token);
        claimed.wait_reason = None;
        claimed.status = OperationStatus::Dispatched;
        match self.store.claim(&mut claimed, &claim).await? {
            Ok(()) => Ok(Some((claimed, claim.token))),
            Err(lost) => {
                tracing::debug!(operation_id = %op.operation_id, ?lost, "one-write claim lost; claiming step by step");
                Ok(None)
            }
        }
    }

    /// Lock and slot one at a time, then the claim, then the cluster's state: the path for redeliveries,
    /// contention and refusals. `Settled` when the job is done with here (parked, ended, refused).
    async fn claim_step_by_step(&self, op: Operation, job: &JobMessage) -> Result<Claimed, DispatchError> {
        let store = self.store;
        let Some(token) = self.claim(&op).await? else {
            return Ok(Claimed::Settled(Outcome::Ack));
        };

        // Claim: the token is recorded before the runner exists, so its first events are never mistaken
        // for stale ones, and the operation leaves QUEUED, so from here a cancel is a flag (API answers
        // 202) rather than an in-place CANCELLED that would race with the launch (the API's write is
        // conditional).
        let Some(op) = update_operation_from(store, op, |o| {
            if o.status.is_terminal() {
                return false;
            }
            let changed = o.fencing_token != Some(token)
                || o.wait_reason.is_some()
                || o.status == OperationStatus::Queued;
            o.fencing_token = Some(token);
            o.wait_reason = None;
            if o.status == OperationStatus::Queued {
                o.status = OperationStatus::Dispatched;
            }
            changed
        })
        .await?
        else {
            return Err(DispatchError::UnknownOperation(job.operation_id.to_string()));
        };
        if op.status.is_terminal() {
            // Cancelled while we took the lock: give lock and slot back and wake the next operation.
            tracing::info!(operation_id = %op.operation_id, status = ?op.status, "ended before it could start");
            release_and_wake(store, self.jobs, &op).await?;
            return Ok(Claimed::Settled(Outcome::Ack));
        }
        if op.cancel_requested && op.task_arn.is_none() {
            self.cancel_unstarted(&op).await?;
            return Ok(Claimed::Settled(Outcome::Ack));
        }

        if let Some(refusal) = self.enter_working_state(&op).await? {
            self.fail(&op, refusal_error(&op, &refusal), false).await?;
            return Ok(Claimed::Settled(Outcome::Ack));
        }
        Ok(Claimed::Ready(Box::new(op), token))
    }

    /// Takes the cluster lock and a tenant slot: `Some(fencing token)` when both are held, `None` when the
    /// operation was parked instead (holding neither).
    async fn claim(&self, op: &Operation) -> Result<Option<u64>, DispatchError> {
        let store = self.store;
        let token = match self.acquire_lock(op).await? {
            LockOutcome::Acquired { fencing_token } => fencing_token,
            LockOutcome::Held { owner } => {
                self.park(op, cluster_busy_reason(&owner)).await?;
                // Lost-wakeup guard: the holder may have finished (and looked for waiters) between our
                // attempt and the park being visible. Trying once more after parking closes that window.
                match self.acquire_lock(op).await? {
                    LockOutcome::Acquired { fencing_token } => fencing_token,
                    LockOutcome::Held { owner } => {
                        tracing::info!(operation_id = %op.operation_id, %owner, "parked: cluster busy");
                        vitals::parked(ParkReason::ClusterBusy);
                        return Ok(None);
                    }
                }
            }
        };

        let limit = store.concurrency_limit(&op.tenant_id).await?;
        if !store.acquire_slot(&op.tenant_id, &op.operation_id, limit).await? {
            self.park(op, TENANT_LIMIT_REASON.to_owned()).await?;
            // Same lost-wakeup guard as for the lock: a slot freed before the park was visible woke nobody.
            if !store.acquire_slot(&op.tenant_id, &op.operation_id, limit).await? {
                store
                    .release_lock(&op.cluster_id, &op.operation_id, token)
                    .await?;
                tracing::info!(operation_id = %op.operation_id, limit, "parked: tenant at its concurrency limit");
                vitals::parked(ParkReason::TenantLimit);
                return Ok(None);
            }
        }
        Ok(Some(token))
    }

    async fn acquire_lock(&self, op: &Operation) -> Result<LockOutcome, DispatchError> {
        Ok(self
            .store
            .acquire_lock(&op.cluster_id, &op.operation_id, LOCK_LEASE, self.clock.now())
            .await?)
    }

    async fn park(&self, op: &Operation, reason: String) -> Result<(), DispatchError> {
        update_operation(self.store, &op.operation_id, |o| {
            if o.status != OperationStatus::Queued || o.wait_reason.as_deref() == Some(reason.as_str()) {
                return false;
            }
            o.wait_reason = Some(reason.clone());
            true
        })
        .await?;
        Ok(())
    }

    /// Moves the cluster into the state its operation works in; `Some(reason)` when the state machine
    /// refuses. Already being there counts as done: that is this same operation's earlier, interrupted
    /// delivery (only the lock holder moves a cluster).
    async fn enter_working_state(&self, op: &Operation) -> Result<Option<String>, DispatchError> {
        let step = working_step(op.kind);
        // No cluster stands behind an estimate's id: nothing to read or move.
        if step == ClusterStep::Untouched {
            return Ok(None);
        }
        let mut refusal = None;
        update_cluster(self.store, &op.tenant_id, &op.cluster_id, |c| {
            refusal = None;
            match step {
                ClusterStep::Untouched => Ok::<_, DispatchError>(false),
                // Read-only runs change no state.
                ClusterStep::Not(refused) => {
                    if c.state() == refused {
                        refusal = Some(format!("the cluster is {}", refused.as_str()));
                    }
                    Ok(false)
                }
                ClusterStep::Move { to, clear_error } => {
                    if c.state() == to {
                        return Ok(false);
                    }
                    if let Err(e) = c.transition(to) {
                        refusal = Some(e.to_string());
                        return Ok(false);
                    }
                    if clear_error {
                        c.last_error = None;
                    }
                    Ok(true)
                }
            }
        })
        .await?;
        Ok(refusal)
    }

    /// A cancel that arrived after the claim but before any runner existed: nothing was touched, so the
    /// operation ends CANCELLED, a first create's PENDING cluster is recorded FAILED (so it can be retried
    /// or deleted), and other clusters stay as they are.
    async fn cancel_unstarted(&self, op: &Operation) -> Result<(), DispatchError> {
        let err = UserError::new(
            ErrorCategory::Cancelled,
            "dispatch",
            "the operation was cancelled before its runner started; nothing was changed",
        );
        let cluster = if op.kind == OperationKind::Create {
            ClusterFate::FailIfPending(&err)
        } else {
            ClusterFate::Untouched
        };
        let ended = end_operation(self.store, self.jobs, op.clone(), cluster, |o| {
            o.status = OperationStatus::Cancelled;
            o.error = Some(err.clone());
            true
        })
        .await?;
        self.record_end(&ended).await;
        tracing::info!(operation_id = %op.operation_id, "cancelled before start");
        Ok(())
    }

    /// Ends the operation as FAILED (and the cluster too, when `cluster_failed` and the operation mutates
    /// it), then gives up its lock and slot and wakes the next one.
    async fn fail(&self, op: &Operation, err: UserError, cluster_failed: bool) -> Result<(), DispatchError> {
        tracing::warn!(operation_id = %op.operation_id, error = %err, "operation failed at dispatch");
        let cluster = if cluster_failed && op.kind.mutates() {
            ClusterFate::Fail(&err)
        } else {
            ClusterFate::Untouched
        };
        let ended = end_operation(self.store, self.jobs, op.clone(), cluster, |o| {
            o.status = OperationStatus::Failed;
            o.error = Some(err.clone());
            o.wait_reason = None;
            true
        })
        .await?;
        self.record_end(&ended).await;
        Ok(())
    }

    /// The audit entry of an operation this call ended (see [`audit::operation_ended`]).
    async fn record_end(&self, ended: &Ended) {
        if let Ended::Now { op, .. } = ended
            && let Some(entry) = audit::operation_ended("dispatcher", op, self.clock.now())
        {
            audit::record(self.audit, entry).await;
        }
    }
}

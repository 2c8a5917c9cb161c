//! Every dispatcher decision, on the in-memory fakes: no AWS, no moto, no Terraform.

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use strato_coordination::{TENANT_LIMIT_REASON, cluster_busy_reason};
use strato_dispatcher::{DispatchError, Dispatcher, LOCK_LEASE, Outcome};
use strato_domain::error::ErrorCategory;
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::messages::JobMessage;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{
    Claim, ClaimLost, Claims, Clock, ClusterLocks, ClusterStep, LaunchFailure, LockOutcome, TaskLauncher,
    TenantSlots,
};
use strato_fakes::{FakeAuditLog, FakeClock, FakeJobQueue, FakeLauncher, FakeStore};
use time::Duration;

const MAX_RECEIVES: u32 = 5;

/// The shared world, and the task launcher only the dispatcher uses.
struct World {
    base: strato_fakes::World,
    launcher: FakeLauncher,
}

impl std::ops::Deref for World {
    type Target = strato_fakes::World;
    fn deref(&self) -> &strato_fakes::World {
        &self.base
    }
}

fn world() -> World {
    World {
        base: strato_fakes::World::default(),
        launcher: FakeLauncher::default(),
    }
}

impl World {
    fn dispatcher(&self) -> Dispatcher<'_, FakeStore, FakeJobQueue, FakeLauncher, FakeClock, FakeAuditLog> {
        self.dispatcher_with(&strato_domain::identity::NoRunIdentities)
    }

    /// The dispatcher minting runs' identity tokens with `identities`.
    fn dispatcher_with<'a, I>(
        &'a self,
        identities: &'a I,
    ) -> Dispatcher<'a, FakeStore, FakeJobQueue, FakeLauncher, FakeClock, FakeAuditLog, I> {
        Dispatcher {
            store: &self.store,
            jobs: &self.jobs,
            launcher: &self.launcher,
            clock: &self.clock,
            audit: &self.audit,
            max_receives: MAX_RECEIVES,
            identities,
        }
    }

    async fn dispatch(&self, op: &Operation, receive_count: u32) -> Outcome {
        self.dispatcher()
            .dispatch(&JobMessage::from(op), receive_count)
            .await
            .unwrap()
    }

    fn stored(&self, op: &Operation) -> Operation {
        self.store.operation(&op.operation_id).unwrap()
    }

    fn cluster(&self, id: &ClusterId) -> Cluster {
        self.store.cluster(id).unwrap()
    }

    /// Takes `cluster`'s lock for `op` (as a running operation holds it).
    async fn hold_lock(&self, cluster: &ClusterId, op: &OperationId) -> u64 {
        match self
            .store
            .acquire_lock(cluster, op, LOCK_LEASE, self.clock.now())
            .await
            .unwrap()
        {
            LockOutcome::Acquired { fencing_token } => fencing_token,
            held => panic!("{held:?}"),
        }
    }
}

fn record(op: &Operation, n: usize, receive_count: u32) -> SqsMessage {
    let mut r = SqsMessage::default();
    r.message_id = Some(format!("m-{n}"));
    r.receipt_handle = Some(format!("rh-{n}"));
    r.body = Some(serde_json::to_string(&JobMessage::from(op)).unwrap());
    r.attributes
        .insert("MessageGroupId".into(), op.cluster_id.to_string());
    r.attributes
        .insert("ApproximateReceiveCount".into(), receive_count.to_string());
    r
}

fn event(records: Vec<SqsMessage>) -> SqsEvent {
    let mut e = SqsEvent::default();
    e.records = records;
    e
}

fn failures(resp: &aws_lambda_events::sqs::SqsBatchResponse) -> Vec<String> {
    resp.batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

#[tokio::test]
async fn a_claim_takes_lock_and_slot_moves_the_cluster_and_launches_once() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);

    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    let started = w.stored(&op);
    assert_eq!(started.status, OperationStatus::Dispatched);
    assert_eq!(started.attempt, 1);
    assert_eq!(started.wait_reason, None);
    assert_eq!(
        started.dispatched_at,
        Some(w.clock.now()),
        "the launch is recorded for the timeline"
    );
    let tasks = w.launcher.tasks();
    assert_eq!(tasks.len(), 1);
    assert_eq!(started.task_arn.as_deref(), Some(tasks[0].task_id.as_str()));
    let (holder, token) = w.store.lock_holder(&cluster).expect("lock held");
    assert_eq!(holder, op.operation_id);
    assert_eq!(started.fencing_token, Some(token));
    assert_eq!(tasks[0].fencing_token, token, "the runner gets the lock's token");
    assert_eq!(w.store.slots(&w.tenant), std::slice::from_ref(&op.operation_id));
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Provisioning);

    // The same job again (duplicate delivery): the operation has its task; nothing more happens.
    assert_eq!(w.dispatch(&op, 2).await, Outcome::Ack);
    assert_eq!(w.launcher.launch_calls(), 1);
    assert_eq!(w.stored(&op).attempt, 1);
    // One audit entry, for the one start.
    let entries = w.audit.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].principal, "strato:dispatcher");
    assert_eq!(entries[0].action, "operation.dispatch");
    assert_eq!(entries[0].outcome, strato_domain::audit::Outcome::Succeeded);
    assert_eq!(entries[0].cluster_id.as_ref(), Some(&cluster));
    assert_eq!(entries[0].operation_id.as_ref(), Some(&op.operation_id));
    assert_eq!(entries[0].tenant_id, w.tenant);
}

#[tokio::test]
async fn a_first_delivery_carrying_its_operation_starts_it_without_reading_it() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    let job = JobMessage::carrying(&op);
    assert!(job.operation.is_some());

    let d = w.dispatcher();
    assert_eq!(d.dispatch(&job, 1).await.unwrap(), Outcome::Ack);
    assert_eq!(w.store.operations_loaded(), 0, "claimed on the carried copy");
    let started = w.stored(&op);
    assert_eq!(started.status, OperationStatus::Dispatched);
    assert_eq!(
        started.task_arn.as_deref(),
        Some(w.launcher.tasks()[0].task_id.as_str())
    );
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Provisioning);
    assert_eq!(w.audit.entries().len(), 1);

    // A redelivery of the same job reads: its copy is stale by now, and the task is adopted, not doubled.
    assert_eq!(d.dispatch(&job, 2).await.unwrap(), Outcome::Ack);
    assert_eq!(w.store.operations_loaded(), 1);
    assert_eq!(w.launcher.launch_calls(), 1);
}

#[tokio::test]
async fn a_carried_copy_that_is_no_longer_current_is_decided_on_a_fresh_read() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    let job = JobMessage::carrying(&op);
    // Cancelled after the job was sent: the copy still says queued.
    let mut cancelled = w.stored(&op);
    cancelled.status = OperationStatus::Cancelled;
    cancelled.updated_at += Duration::seconds(1);
    w.store.put_operation(cancelled);

    assert_eq!(w.dispatcher().dispatch(&job, 1).await.unwrap(), Outcome::Ack);
    assert_eq!(w.store.operations_loaded(), 1, "the lost claim led to a read");
    assert_eq!(w.launcher.launch_calls(), 0, "a cancelled operation never starts");
    assert_eq!(w.stored(&op).status, OperationStatus::Cancelled);
    assert_eq!(w.store.lock_holder(&cluster), None, "nothing held");
    assert!(w.store.slots(&w.tenant).is_empty());

    // A copy of another operation than the job names is not used at all.
    let other = w.queued(
        &w.cluster_in("other", ClusterState::Pending),
        OperationKind::Create,
    );
    let mut mixed = JobMessage::carrying(&other);
    mixed.operation_id = op.operation_id.clone();
    assert_eq!(w.dispatcher().dispatch(&mixed, 1).await.unwrap(), Outcome::Ack);
    assert_eq!(w.launcher.launch_calls(), 0);
    assert_eq!(w.stored(&other).status, OperationStatus::Queued);
}

#[tokio::test]
async fn a_busy_cluster_parks_the_operation_with_its_holder_and_takes_nothing() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Active);
    let running = w.queued(&cluster, OperationKind::Update);
    let token = w.hold_lock(&cluster, &running.operation_id).await;
    let waiting = w.queued(&cluster, OperationKind::Plan);

    assert_eq!(
        w.dispatch(&waiting, 1).await,
        Outcome::Ack,
        "acknowledged, not polled"
    );
    let parked = w.stored(&waiting);
    assert_eq!(parked.status, OperationStatus::Queued);
    assert_eq!(
        parked.wait_reason,
        Some(cluster_busy_reason(&running.operation_id))
    );
    assert_eq!(parked.fencing_token, None);
    assert_eq!(
        w.store.lock_holder(&cluster),
        Some((running.operation_id.clone(), token))
    );
    assert!(w.store.slots(&w.tenant).is_empty());
    assert_eq!(w.launcher.launch_calls(), 0);
    assert!(w.jobs.sent().is_empty() && w.jobs.visibility_changes().is_empty());
}

#[tokio::test]
async fn a_lock_whose_lease_ran_out_is_taken_over_with_a_larger_token() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Active);
    let dead = OperationId::generate();
    let old = w.hold_lock(&cluster, &dead).await;
    let op = w.queued(&cluster, OperationKind::Plan);
    w.clock.advance(LOCK_LEASE + Duration::seconds(1));

    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    let started = w.stored(&op);
    assert!(started.task_arn.is_some());
    assert!(started.fencing_token.unwrap() > old);
}

#[tokio::test]
async fn a_tenant_at_its_limit_parks_the_operation_and_gives_the_lock_back() {
    let w = world();
    w.store.set_concurrency_limit(&w.tenant, 1);
    let busy = w.cluster_in("staging", ClusterState::Active);
    let other = w.queued(&busy, OperationKind::Update);
    assert!(
        w.store
            .acquire_slot(&w.tenant, &other.operation_id, 1)
            .await
            .unwrap()
    );
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);

    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    let parked = w.stored(&op);
    assert_eq!(parked.status, OperationStatus::Queued);
    assert_eq!(parked.wait_reason.as_deref(), Some(TENANT_LIMIT_REASON));
    assert_eq!(
        w.store.lock_holder(&cluster),
        None,
        "the lock is not kept while parked"
    );
    assert_eq!(
        w.store.slots(&w.tenant),
        std::slice::from_ref(&other.operation_id)
    );
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Pending);
    assert_eq!(w.launcher.launch_calls(), 0);
}

/// The state a delivery leaves when it died after starting the runner but before recording the task.
async fn died_after_launch(w: &World) -> (Operation, String) {
    let cluster = w.cluster_in("prod", ClusterState::Provisioning);
    let mut op = w.queued(&cluster, OperationKind::Create);
    let token = w.hold_lock(&cluster, &op.operation_id).await;
    w.store
        .acquire_slot(&w.tenant, &op.operation_id, 5)
        .await
        .unwrap();
    op.status = OperationStatus::Dispatched;
    op.fencing_token = Some(token);
    w.store.put_operation(op.clone());
    let task = w.launcher.launch(&op, token, None).await.unwrap();
    (op, task)
}

#[tokio::test]
async fn a_redelivery_adopts_the_task_its_first_delivery_started() {
    let w = world();
    let (op, task) = died_after_launch(&w).await;

    assert_eq!(w.dispatch(&op, 2).await, Outcome::Ack);
    let adopted = w.stored(&op);
    assert_eq!(adopted.task_arn, Some(task));
    assert_eq!(adopted.attempt, 1);
    assert_eq!(w.launcher.launch_calls(), 1, "found by listing: no second launch");
    assert_eq!(w.launcher.tasks().len(), 1);
}

#[tokio::test]
async fn a_redelivery_the_listing_misses_gets_the_same_task_back_by_its_token() {
    let w = world();
    w.launcher.list_lags(true);
    let (op, task) = died_after_launch(&w).await;

    assert_eq!(w.dispatch(&op, 2).await, Outcome::Ack);
    assert_eq!(w.stored(&op).task_arn, Some(task));
    assert_eq!(w.launcher.tasks().len(), 1, "same token: no second task");
}

#[tokio::test]
async fn a_throttled_launch_backs_off_keeping_lock_and_slot_then_starts_on_redelivery() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    let later = w.queued(&cluster, OperationKind::Update);
    w.launcher.fail_next(LaunchFailure::Transient(
        "ThrottlingException: Rate exceeded".into(),
    ));

    let resp = w
        .dispatcher()
        .handle(event(vec![record(&op, 1, 2), record(&later, 2, 1)]))
        .await;
    // The throttled record and its group's later one come back; the throttled one after its backoff.
    assert_eq!(failures(&resp), ["m-1", "m-2"]);
    assert_eq!(w.jobs.visibility_changes(), [("rh-1".to_owned(), 20)]);
    let waiting = w.stored(&op);
    assert_eq!(waiting.status, OperationStatus::Dispatched);
    assert_eq!(waiting.task_arn, None);
    let (holder, token) = w.store.lock_holder(&cluster).expect("lock kept");
    assert_eq!(holder, op.operation_id);
    assert_eq!(w.store.slots(&w.tenant), std::slice::from_ref(&op.operation_id));
    assert_eq!(
        w.stored(&later).status,
        OperationStatus::Queued,
        "never looked at"
    );

    assert_eq!(w.dispatch(&op, 3).await, Outcome::Ack);
    let started = w.stored(&op);
    assert!(started.task_arn.is_some());
    assert_eq!(started.fencing_token, Some(token), "same lock, same token");
    assert_eq!(w.launcher.tasks().len(), 1);
}

#[tokio::test]
async fn a_launch_still_throttled_on_the_last_delivery_fails_the_operation() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    w.launcher
        .fail_next(LaunchFailure::Transient("RESOURCE:MEMORY".into()));

    assert_eq!(w.dispatch(&op, MAX_RECEIVES).await, Outcome::Ack);
    let failed = w.stored(&op);
    assert_eq!(failed.status, OperationStatus::Failed);
    let err = failed.error.unwrap();
    assert_eq!(err.category, ErrorCategory::Transient);
    assert!(
        err.what.contains("after 5 attempts: RESOURCE:MEMORY"),
        "{}",
        err.what
    );
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Failed);
    assert_eq!(w.store.lock_holder(&cluster), None);
    assert!(w.store.slots(&w.tenant).is_empty());
    let entries = w.audit.entries();
    assert_eq!(entries.len(), 2, "{entries:?}");
    // The operation's end is its own entry, recorded as it ends; the failed dispatch's after it.
    assert_eq!(
        (entries[0].action.as_str(), entries[0].outcome),
        ("operation.end", strato_domain::audit::Outcome::Failed)
    );
    assert_eq!(entries[1].action, "operation.dispatch");
    assert_eq!(entries[1].outcome, strato_domain::audit::Outcome::Failed);
    assert_eq!(entries[1].detail.as_deref(), Some("RESOURCE:MEMORY"));
}

#[tokio::test]
async fn a_failed_audit_write_does_not_stop_the_dispatch() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    w.audit.fail_appends(true);
    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    assert_eq!(w.stored(&op).status, OperationStatus::Dispatched);
    assert!(w.audit.entries().is_empty());
}

#[tokio::test]
async fn a_fatal_launch_error_fails_operation_and_cluster_releases_and_wakes_the_next() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    let next = w.queued(&cluster, OperationKind::Delete);
    w.launcher.fail_next(LaunchFailure::Fatal(
        "ClientException: Unable to describe task definition.".into(),
    ));

    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack, "not retried");
    let failed = w.stored(&op);
    assert_eq!(failed.status, OperationStatus::Failed);
    assert_eq!(failed.task_arn, None);
    let err = failed.error.clone().unwrap();
    assert_eq!(err.step, "dispatch");
    assert_eq!(err.category, ErrorCategory::Internal);
    assert!(
        err.what
            .contains("the runner could not be started: ClientException"),
        "{}",
        err.what
    );
    assert!(!err.fix.is_empty());
    let c = w.cluster(&cluster);
    assert_eq!(c.state(), ClusterState::Failed);
    assert_eq!(c.last_error, Some(err));
    assert_eq!(w.store.lock_holder(&cluster), None);
    assert!(w.store.slots(&w.tenant).is_empty());
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].job.operation_id, next.operation_id);
    assert_eq!(
        sent[0].deduplication_id,
        format!("{}-after-{}", next.operation_id, op.operation_id)
    );
}

#[tokio::test]
async fn an_operation_the_state_machine_refuses_fails_with_a_fix_and_releases() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Failed);
    let op = w.queued(&cluster, OperationKind::Update);

    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    let err = w.stored(&op).error.unwrap();
    assert_eq!(err.category, ErrorCategory::InvalidConfiguration);
    assert!(
        err.what.contains("FAILED cluster cannot become UPDATING"),
        "{}",
        err.what
    );
    assert!(err.fix.contains("ACTIVE"), "{}", err.fix);
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Failed);
    assert_eq!(w.launcher.launch_calls(), 0);
    assert_eq!(w.store.lock_holder(&cluster), None);
    assert!(w.store.slots(&w.tenant).is_empty());
}

#[tokio::test]
async fn finished_and_already_started_operations_are_ignored() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Active);
    let mut cancelled = w.queued(&cluster, OperationKind::Update);
    cancelled.status = OperationStatus::Cancelled;
    w.store.put_operation(cancelled.clone());
    let mut started = w.queued(&cluster, OperationKind::Plan);
    started.task_arn = Some("arn:task/1".into());
    w.store.put_operation(started.clone());

    assert_eq!(w.dispatch(&cancelled, 1).await, Outcome::Ack);
    assert_eq!(w.dispatch(&started, 1).await, Outcome::Ack);
    assert_eq!(w.stored(&cancelled), cancelled, "untouched");
    assert_eq!(w.stored(&started), started, "untouched");
    assert!(!w.store.has_lock_item(&cluster), "no lock was even tried");
    assert_eq!(w.launcher.launch_calls(), 0);
}

#[tokio::test]
async fn a_cancel_flagged_before_the_launch_ends_the_operation_unstarted() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let mut op = w.queued(&cluster, OperationKind::Create);
    op.cancel_requested = true;
    w.store.put_operation(op.clone());

    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    let done = w.stored(&op);
    assert_eq!(done.status, OperationStatus::Cancelled);
    assert_eq!(done.error.unwrap().category, ErrorCategory::Cancelled);
    assert_eq!(
        w.cluster(&cluster).state(),
        ClusterState::Failed,
        "a first create can be retried"
    );
    assert_eq!(w.launcher.launch_calls(), 0);
    assert_eq!(w.store.lock_holder(&cluster), None);
    assert!(w.store.slots(&w.tenant).is_empty());
}

#[tokio::test]
async fn an_estimate_locks_its_own_id_and_forgets_it_when_it_ends() {
    let w = world();
    let id = ClusterId::generate();
    let op = w.queued(&id, OperationKind::Estimate);
    w.launcher
        .fail_next(LaunchFailure::Fatal("ClientException: bad".into()));

    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    assert_eq!(w.stored(&op).status, OperationStatus::Failed);
    assert!(
        !w.store.has_lock_item(&id),
        "the synthetic id's lock item is deleted"
    );
}

#[tokio::test]
async fn lost_writes_are_retried_and_unknown_operations_are_errors() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    w.store.inject_conflicts(3);
    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    assert!(w.stored(&op).task_arn.is_some());

    let ghost = Operation::new(w.tenant.clone(), cluster, OperationKind::Plan, w.clock.now());
    let err = w
        .dispatcher()
        .dispatch(&JobMessage::from(&ghost), 1)
        .await
        .unwrap_err();
    assert!(matches!(err, DispatchError::UnknownOperation(_)), "{err}");
    let resp = w.dispatcher().handle(event(vec![record(&ghost, 9, 1)])).await;
    assert_eq!(failures(&resp), ["m-9"]);
    assert!(
        w.jobs.visibility_changes().is_empty(),
        "plain redelivery, no backoff"
    );
}

/// Issue 15, defect 3: a delivery that died after taking lock and slot, an operation then ended where nobody
/// knew it held them (the API's in-place cancel of a queued operation), and the redelivery acked without
/// releasing anything — the tenant's slot was gone for good and its next operation parked forever.
#[tokio::test]
async fn a_redelivered_job_of_a_finished_operation_gives_back_its_slot_and_lock_and_wakes_the_tenant() {
    let w = world();
    w.store.set_concurrency_limit(&w.tenant, 1);
    let cluster = w.cluster_in("prod", ClusterState::Active);
    let first = w.queued(&cluster, OperationKind::Update);
    w.hold_lock(&cluster, &first.operation_id).await;
    assert!(
        w.store
            .acquire_slot(&w.tenant, &first.operation_id, 1)
            .await
            .unwrap()
    );
    let mut cancelled = w.stored(&first);
    cancelled.status = OperationStatus::Cancelled;
    w.store.put_operation(cancelled.clone());
    // Another cluster's operation of the same tenant parks on the limit the dead delivery's slot holds.
    let other = w.cluster_in("staging", ClusterState::Active);
    let waiting = w.queued(&other, OperationKind::Update);
    assert_eq!(w.dispatch(&waiting, 1).await, Outcome::Ack);
    assert_eq!(
        w.stored(&waiting).wait_reason.as_deref(),
        Some(TENANT_LIMIT_REASON)
    );

    assert_eq!(w.dispatch(&cancelled, 2).await, Outcome::Ack);

    assert!(
        w.store.slots(&w.tenant).is_empty(),
        "the finished operation's slot is free"
    );
    assert_eq!(
        w.store.lock_holder(&cluster),
        None,
        "and its lock, although no claim was recorded"
    );
    let woken: Vec<_> = w.jobs.sent().into_iter().map(|s| s.job.operation_id).collect();
    assert_eq!(
        woken,
        vec![waiting.operation_id.clone()],
        "the tenant's waiter is woken"
    );
    assert_eq!(w.dispatch(&waiting, 1).await, Outcome::Ack);
    assert_eq!(w.stored(&waiting).status, OperationStatus::Dispatched);
    assert_eq!(w.launcher.launch_calls(), 1);
}

/// Runs `f` with a debugging recorder; returns every metric as `name{labels}` with its values.
fn with_metrics(f: impl AsyncFnOnce()) -> Vec<(String, metrics_util::debugging::DebugValue)> {
    let rec = metrics_util::debugging::DebuggingRecorder::new();
    let snap = rec.snapshotter();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    metrics::with_local_recorder(&rec, || rt.block_on(f()));
    let mut out: Vec<_> = snap
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            (format!("{}{{{}}}", key.name(), labels.join(",")), value)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn parking_and_the_wait_until_dispatch_are_measured() {
    use metrics_util::debugging::DebugValue;
    let got = with_metrics(async || {
        let w = world();
        let cluster = w.cluster_in("prod", ClusterState::Active);
        let running = w.queued(&cluster, OperationKind::Update);
        let token = w.hold_lock(&cluster, &running.operation_id).await;
        let waiting = w.queued(&cluster, OperationKind::Plan);
        w.dispatch(&waiting, 1).await;
        // The holder finishes 30 s after the plan was queued; the plan is dispatched then.
        w.clock.advance(Duration::seconds(30));
        assert!(
            w.store
                .release_lock(&cluster, &running.operation_id, token)
                .await
                .unwrap()
        );
        w.dispatch(&waiting, 1).await;
        assert!(w.stored(&waiting).task_arn.is_some());
    });
    let find = |name: &str| got.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    assert_eq!(
        find("OperationsParked{reason=cluster_busy}"),
        Some(&DebugValue::Counter(1)),
        "{got:?}"
    );
    let Some(DebugValue::Histogram(waits)) = find("QueueWaitDispatch{kind=plan}") else {
        panic!("no queue wait: {got:?}")
    };
    assert_eq!(
        waits.iter().map(|v| v.into_inner()).collect::<Vec<_>>(),
        [30_000.0]
    );
}

/// The one-write claim's conditions on the fake: each refusal writes nothing, and only when all hold are
/// lock, slot, operation and cluster written together.
#[tokio::test]
async fn the_one_write_claim_takes_lock_slot_claim_and_cluster_or_nothing() {
    let w = world();
    w.store.set_concurrency_limit(&w.tenant, 1);
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let op = w.queued(&cluster, OperationKind::Create);
    let step = ClusterStep::Move {
        to: ClusterState::Provisioning,
        clear_error: true,
    };
    let claim = |token, cluster| Claim {
        token,
        lease: LOCK_LEASE,
        now: w.clock.now(),
        cluster,
    };
    let claimed = |token| {
        let mut c = op.clone();
        c.fencing_token = Some(token);
        c.status = OperationStatus::Dispatched;
        c
    };
    let untouched = |w: &World| {
        assert_eq!(w.stored(&op), op, "operation unchanged");
        assert_eq!(w.cluster(&cluster).state(), ClusterState::Pending);
        assert!(!w.store.slots(&w.tenant).contains(&op.operation_id));
    };

    // Lock held by another operation (lease running).
    let other = OperationId::generate();
    let held = w.hold_lock(&cluster, &other).await;
    let mut c = claimed(1_000);
    let lost = w.store.claim(&mut c, &claim(1_000, step)).await.unwrap();
    assert_eq!(lost, Err(ClaimLost::Lock));
    assert_eq!(c, claimed(1_000), "the caller's copy is left as given");
    untouched(&w);
    assert_eq!(w.store.lock_holder(&cluster), Some((other.clone(), held)));

    // Free, but the token is not above the stored one: refused, so tokens only grow.
    assert!(w.store.release_lock(&cluster, &other, held).await.unwrap());
    let lost = w.store.claim(&mut claimed(held), &claim(held, step)).await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Lock));
    untouched(&w);

    // The tenant's only slot is taken.
    assert!(w.store.acquire_slot(&w.tenant, &other, 1).await.unwrap());
    let lost = w.store.claim(&mut claimed(1_000), &claim(1_000, step)).await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Slot));
    untouched(&w);
    w.store.release_slot(&w.tenant, &other).await.unwrap();

    // The operation changed since it was read (a cancel, say).
    let mut stale = claimed(1_000);
    stale.updated_at -= Duration::seconds(1);
    let lost = w.store.claim(&mut stale, &claim(1_000, step)).await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Operation));
    untouched(&w);

    // The cluster is not in a state the step starts from (PENDING cannot become UPDATING).
    let wrong = ClusterStep::Move {
        to: ClusterState::Updating,
        clear_error: false,
    };
    let lost = w.store.claim(&mut claimed(1_000), &claim(1_000, wrong)).await;
    assert_eq!(lost.unwrap(), Err(ClaimLost::Cluster));
    untouched(&w);

    // Everything holds: all of it is written.
    let mut c = claimed(1_000);
    assert_eq!(w.store.claim(&mut c, &claim(1_000, step)).await.unwrap(), Ok(()));
    assert!(c.updated_at > op.updated_at, "saved: its version moved");
    assert_eq!(w.stored(&op), c);
    assert_eq!(
        w.store.lock_holder(&cluster),
        Some((op.operation_id.clone(), 1_000))
    );
    assert_eq!(w.store.slots(&w.tenant), std::slice::from_ref(&op.operation_id));
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Provisioning);
}

/// A clock behind the stored token (skew, a restored clock) cannot take the lock with a smaller token: the
/// dispatcher's one-write claim is refused and the step-by-step claim increments the stored token.
#[tokio::test]
async fn a_token_the_clock_cannot_beat_falls_back_to_incrementing_the_stored_one() {
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Active);
    let first = w.queued(&cluster, OperationKind::Plan);
    assert_eq!(w.dispatch(&first, 1).await, Outcome::Ack);
    let t1 = w.stored(&first).fencing_token.unwrap();
    assert!(
        t1 > 1_000_000,
        "the one-write claim took a token from the clock: {t1}"
    );
    assert!(
        w.store
            .release_lock(&cluster, &first.operation_id, t1)
            .await
            .unwrap()
    );
    w.store
        .release_slot(&w.tenant, &first.operation_id)
        .await
        .unwrap();

    w.clock.advance(-Duration::days(1));
    let second = w.queued(&cluster, OperationKind::Plan);
    assert_eq!(w.dispatch(&second, 1).await, Outcome::Ack);
    let started = w.stored(&second);
    assert!(started.task_arn.is_some());
    assert_eq!(
        started.fencing_token,
        Some(t1 + 1),
        "the stored token, incremented"
    );
}

/// An operation of `kind` that holds `cluster`'s lock and waits for approval after its planning task
/// `task` ended (the slot given back, as status leaves it), with `verdict` decided if any.
async fn awaiting(
    w: &World,
    cluster: &ClusterId,
    kind: OperationKind,
    verdict: Option<strato_domain::approval::Verdict>,
) -> (Operation, u64) {
    use strato_domain::approval::{Approval, Decision};
    let mut op = w.queued(cluster, kind);
    let token = w.hold_lock(cluster, &op.operation_id).await;
    op.status = OperationStatus::AwaitingApproval;
    op.approval_required = true;
    op.fencing_token = Some(token);
    op.task_arn = Some("arn:aws:ecs:us-east-1:000000000000:task/fake/planning".into());
    op.attempt = 1;
    let plan = strato_fakes::saved_plan();
    let mut a = Approval::request(plan, None, w.clock.now(), Duration::hours(72));
    a.task_arn = op.task_arn.clone();
    a.decision = verdict.map(|verdict| Decision {
        verdict,
        by: "lead-2".into(),
        at: w.clock.now(),
        comment: Some("not today".into()),
    });
    op.approval = Some(a);
    w.store.put_operation(op.clone());
    (op, token)
}

#[tokio::test]
async fn an_approved_operation_gets_a_new_runner_under_the_lock_it_kept() {
    use strato_domain::approval::Verdict;
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Updating);
    let (undecided, _) = awaiting(&w, &cluster, OperationKind::Update, None).await;
    assert_eq!(w.dispatch(&undecided, 1).await, Outcome::Ack);
    assert_eq!(w.launcher.launch_calls(), 0, "no decision, nothing to do");

    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Updating);
    let (op, token) = awaiting(&w, &cluster, OperationKind::Update, Some(Verdict::Approved)).await;
    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    let tasks = w.launcher.tasks();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].fencing_token, token, "the same lock, the same token");
    let started = w.stored(&op);
    assert_eq!(started.status, OperationStatus::Dispatched);
    assert_eq!(started.attempt, 2);
    assert_eq!(started.task_arn.as_deref(), Some(tasks[0].task_id.as_str()));
    assert_eq!(started.approved_plan().map(|p| p.stage.as_str()), Some("main"));
    assert_eq!(w.store.slots(&w.tenant), std::slice::from_ref(&op.operation_id));
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Updating);
}

#[tokio::test]
async fn a_rejected_update_ends_cancelled_its_cluster_active_again_and_the_lock_handed_on() {
    use strato_domain::approval::Verdict;
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Updating);
    let (op, _) = awaiting(&w, &cluster, OperationKind::Update, Some(Verdict::Rejected)).await;
    let next = w.queued(&cluster, OperationKind::Update);
    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    let ended = w.stored(&op);
    assert_eq!(ended.status, OperationStatus::Cancelled);
    let err = ended.error.unwrap();
    assert_eq!(
        (err.category, err.step.as_str()),
        (ErrorCategory::Cancelled, "approval")
    );
    assert!(
        err.what.contains("rejected by lead-2") && err.what.contains("not today"),
        "{}",
        err.what
    );
    assert_eq!(w.cluster(&cluster).state(), ClusterState::Active);
    assert_eq!(w.launcher.launch_calls(), 0);
    assert_eq!(w.store.lock_holder(&cluster), None);
    assert!(
        w.jobs
            .sent()
            .iter()
            .any(|s| s.job.operation_id == next.operation_id),
        "the waiter is woken"
    );
}

#[tokio::test]
async fn an_expired_create_ends_cancelled_and_its_cluster_failed() {
    use strato_domain::approval::Verdict;
    let w = world();
    let cluster = w.cluster_in("prod", ClusterState::Provisioning);
    let (op, _) = awaiting(&w, &cluster, OperationKind::Create, Some(Verdict::Expired)).await;
    assert_eq!(w.dispatch(&op, 1).await, Outcome::Ack);
    assert_eq!(w.stored(&op).status, OperationStatus::Cancelled);
    let c = w.cluster(&cluster);
    assert_eq!(c.state(), ClusterState::Failed);
    assert!(c.last_error.unwrap().what.contains("expired"));
}

/// A world whose `prod` cluster's create targets `target` (a template of two stages published).
fn federated(w: &World, target: serde_json::Value) -> Operation {
    w.templates.publish(
        strato_domain::template::Template::from_toml(
            r#"
name = "aws-eks-basic"
version = "1.2.0"
providers = ["aws", "gcp"]
stages = [{ name = "network", modules = ["network"] }, { name = "cluster", modules = ["k8s"] }]
[variables.node_count]
type = "integer"
default = 2
"#,
        )
        .unwrap(),
    );
    let cluster = w.cluster_in("prod", ClusterState::Pending);
    let mut op = w.queued(&cluster, OperationKind::Create);
    let mut spec = strato_fakes::World::spec("prod");
    spec.target = Some(serde_json::from_value(target).unwrap());
    op.spec = Some(spec);
    w.store.put_operation(op.clone());
    op
}

#[tokio::test]
async fn a_run_whose_target_federates_starts_with_a_sealed_token_per_stage_minted_here() {
    use strato_domain::identity::{AUD_AWS, FakeSigner, Issuer, TokenIssuer, open_run_token};
    use strato_domain::sealed::FakeKeys;
    let w = world();
    let signer = FakeSigner::default();
    let keys = FakeKeys::default();
    let issuer: Issuer = "https://api.strato.example.com".parse().unwrap();
    let identities = TokenIssuer {
        signer: &signer,
        keys: &keys,
        templates: &w.templates,
        clock: &w.clock,
        issuer: &issuer,
        life: Duration::minutes(30),
    };
    let op = federated(
        &w,
        serde_json::json!({"role_arn": "arn:aws:iam::123456789012:role/strato", "auth": "web_identity"}),
    );
    let d = w.dispatcher_with(&identities);
    assert_eq!(d.dispatch(&JobMessage::from(&op), 1).await.unwrap(), Outcome::Ack);
    let started = w.stored(&op);
    assert_eq!(started.status, OperationStatus::Dispatched, "{started:?}");
    let tokens = started.run_identity.clone().expect("tokens on the operation");
    assert_eq!(tokens.aud, AUD_AWS);
    assert_eq!(tokens.stages.keys().collect::<Vec<_>>(), ["cluster", "network"]);
    assert_eq!(
        tokens.expires_at,
        (w.clock.now() + Duration::minutes(30)).unix_timestamp()
    );
    let stored = serde_json::to_string(&started).unwrap();
    let token = open_run_token(&keys, &op.tenant_id, &op.operation_id, &tokens, "network")
        .await
        .unwrap()
        .unwrap();
    assert!(!stored.contains(token.expose()), "sealed at rest");
    let claims: serde_json::Value = {
        use base64::Engine as _;
        let payload = token.expose().split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        claims["sub"],
        format!(
            "tenant:acme:cluster:{}:operation:{}:stage:network",
            op.cluster_id, op.operation_id
        )
    );

    // A target that does not federate (external id): no token is minted.
    let w2 = world();
    let plain = federated(
        &w2,
        serde_json::json!({"role_arn": "arn:aws:iam::123456789012:role/strato"}),
    );
    let identities2 = TokenIssuer {
        templates: &w2.templates,
        clock: &w2.clock,
        ..identities
    };
    let d = w2.dispatcher_with(&identities2);
    assert_eq!(
        d.dispatch(&JobMessage::from(&plain), 1).await.unwrap(),
        Outcome::Ack
    );
    assert_eq!(w2.stored(&plain).run_identity, None);
}

#[tokio::test]
async fn tokens_that_cannot_be_issued_retry_then_fail_the_run_before_it_starts() {
    use strato_domain::identity::{FakeSigner, Issuer, TokenIssuer};
    use strato_domain::sealed::FakeKeys;
    let w = world();
    let (signer, keys) = (FakeSigner::default(), FakeKeys::default());
    let issuer: Issuer = "https://api.strato.example.com".parse().unwrap();
    // The template is not published in this world's catalog: its stages, and so the tokens, are unknown.
    let empty = strato_fakes::FakeTemplates::default();
    let identities = TokenIssuer {
        signer: &signer,
        keys: &keys,
        templates: &empty,
        clock: &w.clock,
        issuer: &issuer,
        life: Duration::minutes(30),
    };
    let op = federated(
        &w,
        serde_json::json!({"provider": "azure",
        "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "client_id": "00000000-0000-0000-0000-000000000001",
        "subscription_id": "a1b2c3d4-0000-0000-0000-00000000abcd"}),
    );
    let d = w.dispatcher_with(&identities);
    assert!(matches!(
        d.dispatch(&JobMessage::from(&op), 1).await.unwrap(),
        Outcome::RetryAfter(_)
    ));
    assert_eq!(w.launcher.launch_calls(), 0, "no runner without its tokens");
    assert_eq!(
        d.dispatch(&JobMessage::from(&op), MAX_RECEIVES).await.unwrap(),
        Outcome::Ack
    );
    let failed = w.stored(&op);
    assert_eq!(failed.status, OperationStatus::Failed);
    let err = failed.error.unwrap();
    assert_eq!(err.step, "dispatch");
    assert!(
        err.what.contains("identity tokens could not be issued"),
        "{}",
        err.what
    );
    assert_eq!(w.launcher.launch_calls(), 0);
}

//! Every scheduler decision, on the in-memory fakes: no AWS, no moto, no Terraform.

use strato_coordination::{LOCK_LEASE, TENANT_LIMIT_REASON, cluster_busy_reason};
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::messages::ControlEvent;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Clock, ClusterLocks, LockOutcome, StateLock, TaskLauncher, TenantSlots};
use strato_domain::ts;
use strato_fakes::{FakeAuditLog, FakeJobQueue, FakeLauncher, FakeStateLocks, FakeStore, FakeTaskEvents};
use strato_scheduler::{BUSY_RETRY, Report, SCHEDULER, Scheduler, jitter};
use time::{Duration, OffsetDateTime};

const GRACE: Duration = Duration::minutes(2);
const STALE: Duration = Duration::minutes(2);
const INTERVAL: Duration = Duration::hours(6);

/// The shared world, and the task records and Terraform state locks only the scheduler reads.
struct World {
    base: strato_fakes::World,
    tasks: FakeLauncher,
    events: FakeTaskEvents,
    state_locks: FakeStateLocks,
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
        tasks: FakeLauncher::default(),
        events: FakeTaskEvents::default(),
        state_locks: FakeStateLocks::default(),
    }
}

type FakeScheduler<'a> =
    Scheduler<'a, FakeStore, FakeJobQueue, FakeLauncher, FakeTaskEvents, FakeStateLocks, FakeAuditLog>;

impl World {
    fn scheduler(&self) -> FakeScheduler<'_> {
        Scheduler {
            store: &self.store,
            jobs: &self.jobs,
            tasks: &self.tasks,
            events: &self.events,
            state_locks: &self.state_locks,
            audit: &self.audit,
            drift_batch: 50,
            queued_grace: GRACE,
            heartbeat_stale: STALE,
        }
    }

    fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    async fn drift(&self) -> Report {
        self.scheduler().drift(self.now()).await.unwrap()
    }

    async fn sweep(&self) -> Report {
        self.scheduler().sweep(self.now()).await.unwrap()
    }

    /// A cluster in `state` whose next drift check is `next` (relative to now), every 6 h.
    fn cluster(&self, name: &str, state: ClusterState, next: Option<Duration>) -> ClusterId {
        let spec = strato_fakes::World::spec(name);
        let mut c = Cluster::new(self.tenant.clone(), ClusterId::generate(), spec, self.now());
        c = c.in_state(state);
        c.drift_interval_secs = Some(INTERVAL.whole_seconds() as u64);
        c.next_drift_check_at = next.map(|d| ts::format(self.now() + d));
        self.store.put_cluster(c.clone());
        c.cluster_id
    }

    fn stored_cluster(&self, id: &ClusterId) -> Cluster {
        self.store.cluster(id).unwrap()
    }

    fn next_check(&self, id: &ClusterId) -> OffsetDateTime {
        ts::parse(self.stored_cluster(id).next_drift_check_at.as_deref().unwrap()).unwrap()
    }

    /// An operation as recorded `age` ago, then shaped by `edit`.
    fn op(
        &self,
        cluster: &ClusterId,
        kind: OperationKind,
        age: Duration,
        edit: impl FnOnce(&mut Operation),
    ) -> Operation {
        let mut op = Operation::new(self.tenant.clone(), cluster.clone(), kind, self.now() - age);
        edit(&mut op);
        self.store.put_operation(op.clone());
        op
    }

    fn stored(&self, op: &Operation) -> Operation {
        self.store.operation(&op.operation_id).unwrap()
    }

    async fn hold_lock(&self, cluster: &ClusterId, op: &OperationId) -> u64 {
        match self
            .store
            .acquire_lock(cluster, op, LOCK_LEASE, self.now())
            .await
            .unwrap()
        {
            LockOutcome::Acquired { fencing_token } => fencing_token,
            held => panic!("{held:?}"),
        }
    }

    /// A runner started for `op` (its lock taken, its task launched), silent since `silent` ago.
    async fn started(&self, cluster: &ClusterId, silent: Duration) -> (Operation, u64, String) {
        let op = self.op(cluster, OperationKind::Update, silent, |o| {
            o.status = OperationStatus::Running;
            o.heartbeat_at = Some(self.now() - silent);
        });
        let token = self.hold_lock(cluster, &op.operation_id).await;
        let arn = self.tasks.launch(&op, token, None).await.unwrap();
        let mut op = self.stored(&op);
        op.fencing_token = Some(token);
        op.task_arn = Some(arn.clone());
        self.store.put_operation(op.clone());
        (op, token, arn)
    }

    /// A create on a CONFIGURING cluster `agented`, its runner started and silent for 30 minutes, in its
    /// configure step since: the cluster, and the operation as [`started`](Self::started) names it.
    async fn configuring_create(&self) -> (ClusterId, (Operation, u64, String)) {
        let cluster = self.cluster("agented", ClusterState::Configuring, None);
        let (mut op, token, arn) = self.started(&cluster, Duration::minutes(30)).await;
        op.kind = OperationKind::Create;
        op.steps.push(strato_domain::model::Step {
            name: strato_domain::model::CONFIGURE_STEP.into(),
            started_at: self.now() - Duration::minutes(30),
            finished_at: None,
            ok: None,
        });
        self.store.put_operation(op.clone());
        (cluster, (op, token, arn))
    }

    fn drift_checks(&self, cluster: &ClusterId) -> Vec<Operation> {
        self.store
            .operations_of(cluster)
            .into_iter()
            .filter(|o| o.kind == OperationKind::DriftCheck)
            .collect()
    }

    fn state_lock(&self, cluster: &ClusterId, info: &str) -> StateLock {
        let lock = StateLock {
            lock_id: format!("b-state/tenants/acme/clusters/{cluster}/cluster.tfstate"),
            cluster: cluster.clone(),
            info: info.into(),
        };
        self.state_locks.put(lock.clone());
        lock
    }
}

const INFO: &str = r#"{"ID":"8d1c","Operation":"OperationTypeApply","Who":"runner@task-1","Version":"0.15.0","Created":"2026-01-01T00:00:00Z","Path":"x"}"#;

// ---- drift ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_due_active_cluster_gets_one_drift_check_and_its_next_check_is_claimed() {
    let w = world();
    let due = w.cluster("due", ClusterState::Active, Some(-Duration::minutes(1)));
    let due_at = w.stored_cluster(&due).next_drift_check_at.unwrap();
    let version = w.stored_cluster(&due).version;
    let later = w.cluster("later", ClusterState::Active, Some(Duration::minutes(1)));
    let updating = w.cluster("updating", ClusterState::Updating, Some(-Duration::hours(1)));
    let never = w.cluster("never", ClusterState::Active, None);

    let report = w.drift().await;
    assert_eq!(report.drift_checks_queued, 1, "{report:?}");
    let checks = w.drift_checks(&due);
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].requested_by.as_deref(), Some(SCHEDULER));
    assert_eq!(checks[0].status, OperationStatus::Queued);
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].job.operation_id, checks[0].operation_id);
    assert_eq!(sent[0].group, due.to_string());

    // The next check is one interval plus this cluster's jitter away, claimed with the version check; the
    // check is then recorded on that version with the cluster's pending-operation marker (what the API's
    // drift check reads, consistently, to never queue a second one).
    let c = w.stored_cluster(&due);
    assert_eq!(c.version, version + 2);
    assert_eq!(c.pending_operation.as_ref(), Some(&checks[0].operation_id));
    assert_eq!(
        w.next_check(&due),
        w.now() + INTERVAL + jitter(&due, &due_at, INTERVAL)
    );
    for other in [&later, &updating, &never] {
        assert!(w.drift_checks(other).is_empty());
        assert_eq!(w.stored_cluster(other).version, 0, "not claimed");
    }

    // An overlapping run at the same time finds nothing due.
    assert_eq!(w.drift().await, Report::default());
    assert_eq!(w.jobs.sent().len(), 1);
    // On record once, as the scheduler's.
    let entries = w.audit.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].principal, "strato:scheduler");
    assert_eq!(entries[0].action, "drift.schedule");
    assert_eq!(entries[0].cluster_id.as_ref(), Some(&due));
    assert_eq!(entries[0].operation_id.as_ref(), Some(&checks[0].operation_id));
}

#[tokio::test]
async fn checks_of_clusters_due_together_are_spread_by_at_most_a_tenth_of_the_interval() {
    let w = world();
    let clusters: Vec<ClusterId> = (0..12)
        .map(|i| {
            w.cluster(
                &format!("cluster-{i}"),
                ClusterState::Active,
                Some(Duration::ZERO),
            )
        })
        .collect();
    assert_eq!(w.drift().await.drift_checks_queued, 12);
    let next: Vec<OffsetDateTime> = clusters.iter().map(|c| w.next_check(c)).collect();
    for at in &next {
        let jitter = *at - (w.now() + INTERVAL);
        assert!(
            jitter >= Duration::ZERO && jitter < INTERVAL / 10,
            "jitter {jitter}"
        );
    }
    let distinct: std::collections::BTreeSet<_> = next.iter().collect();
    assert!(distinct.len() > 6, "checks spread: {next:?}");
}

#[tokio::test]
async fn a_busy_cluster_is_looked_at_again_five_minutes_later() {
    let w = world();
    let cluster = w.cluster("busy", ClusterState::Active, Some(Duration::ZERO));
    let update = w.op(&cluster, OperationKind::Update, Duration::minutes(1), |_| {});

    let report = w.drift().await;
    assert_eq!(report.drift_postponed_busy, 1, "{report:?}");
    assert_eq!(report.drift_checks_queued, 0, "{report:?}");
    assert!(w.drift_checks(&cluster).is_empty());
    assert!(w.jobs.sent().is_empty());
    assert_eq!(w.next_check(&cluster), w.now() + BUSY_RETRY);
    assert_eq!(BUSY_RETRY, Duration::minutes(5));

    // Not before then...
    w.clock.advance(BUSY_RETRY - Duration::seconds(1));
    assert_eq!(w.drift().await, Report::default());
    // ...and once the update is over, the check is queued.
    let mut done = w.stored(&update);
    done.status = OperationStatus::Succeeded;
    w.store.put_operation(done);
    w.clock.advance(Duration::seconds(1));
    assert_eq!(w.drift().await.drift_checks_queued, 1);
    assert_eq!(w.drift_checks(&cluster).len(), 1);
}

#[tokio::test]
async fn never_a_second_check_while_one_is_pending() {
    let w = world();
    let cluster = w.cluster("checked", ClusterState::Active, Some(Duration::ZERO));
    w.op(&cluster, OperationKind::DriftCheck, Duration::hours(1), |o| {
        o.status = OperationStatus::Dispatched;
    });

    let report = w.drift().await;
    assert_eq!(report.drift_already_pending, 1, "{report:?}");
    assert_eq!(report.drift_checks_queued + report.drift_postponed_busy, 0);
    assert_eq!(w.drift_checks(&cluster).len(), 1);
    assert!(w.jobs.sent().is_empty());
    // Looked at again like a busy cluster.
    assert_eq!(w.next_check(&cluster), w.now() + BUSY_RETRY);
}

#[tokio::test]
async fn a_run_that_loses_the_claim_queues_nothing() {
    let w = world();
    let cluster = w.cluster("raced", ClusterState::Active, Some(Duration::ZERO));
    // Another run saved the cluster between our read and our claim.
    w.store.inject_conflicts(1);

    assert_eq!(w.drift().await, Report::default());
    assert!(w.drift_checks(&cluster).is_empty());
    assert!(w.jobs.sent().is_empty());
}

#[tokio::test]
async fn a_check_the_tenant_quota_refuses_is_not_queued() {
    let w = world();
    let cluster = w.cluster("full", ClusterState::Active, Some(Duration::ZERO));
    let elsewhere = w.cluster("other", ClusterState::Active, None);
    w.op(&elsewhere, OperationKind::Update, Duration::minutes(1), |_| {});
    w.store.set_open_operations_limit(&w.tenant, 1);

    let report = w.drift().await;
    assert_eq!(report.drift_checks_queued, 0, "{report:?}");
    assert!(w.drift_checks(&cluster).is_empty());
    assert!(w.jobs.sent().is_empty());
    // The claim stands: the next check is a normal interval away, not retried at once.
    assert!(w.next_check(&cluster) >= w.now() + INTERVAL);
}

// ---- sweep ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_sweep_reports_the_age_of_the_oldest_open_operation() {
    let w = world();
    assert_eq!(w.sweep().await.oldest_open_secs, 0, "nothing open");
    let a = w.cluster("alpha", ClusterState::Pending, None);
    let b = w.cluster("bravo", ClusterState::Active, None);
    w.op(&a, OperationKind::Create, Duration::minutes(3), |_| {});
    let mut old = w.op(&b, OperationKind::Update, Duration::hours(2), |_| {});
    old.status = OperationStatus::Running;
    w.store.put_operation(old.clone());
    assert_eq!(w.sweep().await.oldest_open_secs, 7200);
    // An ended operation is not open, however old.
    old.status = OperationStatus::Succeeded;
    w.store.put_operation(old);
    assert_eq!(w.sweep().await.oldest_open_secs, 180);
}

#[tokio::test]
async fn an_operation_never_dispatched_is_requeued_after_the_grace_period() {
    let w = world();
    let cluster = w.cluster("lost", ClusterState::Pending, None);
    let op = w.op(&cluster, OperationKind::Create, Duration::ZERO, |_| {});

    w.clock.advance(GRACE - Duration::seconds(1));
    assert_eq!(w.sweep().await.requeued, 0, "within grace: left alone");
    assert!(w.jobs.sent().is_empty());

    w.clock.advance(Duration::seconds(1));
    assert_eq!(w.sweep().await.requeued, 1);
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].job.operation_id, op.operation_id);
    // A later sweep of the unchanged operation sends the same deduplication id: no pile-up.
    w.clock.advance(Duration::minutes(1));
    w.sweep().await;
    assert_eq!(w.jobs.sent().len(), 1);
    assert_eq!(w.jobs.dropped(), 1);
}

#[tokio::test]
async fn a_parked_operation_whose_lock_holder_is_gone_is_woken_with_the_lock_freed() {
    let w = world();
    let cluster = w.cluster("orphan", ClusterState::Active, None);
    // The holder ended, but its hand-off was lost: the lock is still its.
    let holder = w.op(&cluster, OperationKind::Update, Duration::hours(1), |_| {});
    let token = w.hold_lock(&cluster, &holder.operation_id).await;
    let mut ended = w.stored(&holder);
    ended.status = OperationStatus::Succeeded;
    w.store.put_operation(ended);
    let waiter = w.op(&cluster, OperationKind::Plan, Duration::minutes(30), |o| {
        o.wait_reason = Some(cluster_busy_reason(&holder.operation_id));
    });

    let report = w.sweep().await;
    assert_eq!(report.woken, 1, "{report:?}");
    assert_eq!(report.requeued, 0, "{report:?}");
    assert_eq!(w.store.lock_holder(&cluster), None, "lock freed");
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].job.operation_id, waiter.operation_id);
    // The release is on record, with what was released, under the waiter's cluster.
    let entries = w.audit.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        (entries[0].principal.as_str(), entries[0].action.as_str()),
        ("strato:scheduler", "lock.release")
    );
    assert_eq!(entries[0].cluster_id.as_ref(), Some(&cluster));
    assert!(
        entries[0]
            .detail
            .as_deref()
            .unwrap()
            .contains(holder.operation_id.as_str())
    );
    // The next holder's token is larger.
    let next = w.hold_lock(&cluster, &waiter.operation_id).await;
    assert!(next > token);
}

#[tokio::test]
async fn a_parked_operation_behind_a_live_holder_or_within_grace_is_left_parked() {
    let w = world();
    let cluster = w.cluster("busy", ClusterState::Active, None);
    let holder = w.op(&cluster, OperationKind::Update, Duration::hours(1), |o| {
        o.status = OperationStatus::Running;
        o.heartbeat_at = Some(w.now());
    });
    let token = w.hold_lock(&cluster, &holder.operation_id).await;
    w.op(&cluster, OperationKind::Plan, Duration::minutes(30), |o| {
        o.wait_reason = Some(cluster_busy_reason(&holder.operation_id));
    });
    // Parked on a free lock, but only just: its waker may still be on the way.
    let free = w.cluster("free", ClusterState::Active, None);
    w.op(&free, OperationKind::Plan, Duration::seconds(10), |o| {
        o.wait_reason = Some("tenant at concurrency limit".into());
    });

    let report = w.sweep().await;
    assert_eq!(report.woken, 0, "{report:?}");
    assert_eq!(
        w.store.lock_holder(&cluster),
        Some((holder.operation_id.clone(), token))
    );
    assert!(w.jobs.sent().is_empty());
}

#[tokio::test]
async fn a_silent_runner_whose_task_stopped_is_reported_as_a_stopped_task_event() {
    let w = world();
    let cluster = w.cluster("dead", ClusterState::Updating, None);
    let (op, token, arn) = w.started(&cluster, Duration::minutes(10)).await;
    w.tasks
        .stop_task(&arn, Some("Essential container in task exited"), Some(137));

    let report = w.sweep().await;
    assert_eq!(report.stale_runners_reported, 1, "{report:?}");
    let events = w.events.sent();
    assert_eq!(events.len(), 1);
    let detail = events[0].detail.clone().unwrap();
    assert_eq!(detail.task_arn, arn);
    assert_eq!(detail.last_status, "STOPPED");
    assert_eq!(detail.operation_id(), Some(op.operation_id.clone()));
    assert_eq!(detail.fencing_token(), Some(token));
    assert_eq!(detail.runner().and_then(|c| c.exit_code), Some(137));
    assert_eq!(
        detail.stopped_reason.as_deref(),
        Some("Essential container in task exited")
    );
    assert_eq!(
        events[0].detail_type.as_deref(),
        Some(strato_domain::ecs_event::DETAIL_TYPE)
    );
    // The status function ends the run: the sweeper itself changes nothing.
    assert_eq!(w.stored(&op).status, OperationStatus::Running);
    assert_eq!(
        w.store.lock_holder(&cluster),
        Some((op.operation_id.clone(), token))
    );
}

/// Issue 15, defect 1: a create whose apply ended waits in CONFIGURING for its cluster agent; its runner
/// reported, exited 0 and went quiet. The sweep must not report it as a dead runner (the status function
/// would fail the create for a lost report and the agent's registration would get 409).
#[tokio::test]
async fn agent_handshake_sweeper_leaves_a_create_waiting_for_its_agent_alone() {
    let w = world();
    let (cluster, (mut op, token, arn)) = w.configuring_create().await;
    w.tasks
        .stop_task(&arn, Some("Essential container in task exited"), Some(0));

    let report = w.sweep().await;
    assert_eq!(report.stale_runners_reported, 0, "{report:?}");
    assert!(w.events.sent().is_empty(), "no stop event sent");
    assert_eq!(w.stored(&op).status, OperationStatus::Running);
    assert_eq!(
        w.store.lock_holder(&cluster),
        Some((op.operation_id.clone(), token))
    );

    // Once the configure step has closed without the create ending, its runner is an ordinary silent one.
    op.steps[0].finished_at = Some(w.now());
    w.store.put_operation(op);
    assert_eq!(w.sweep().await.stale_runners_reported, 1);
}

#[tokio::test]
async fn a_silent_runner_whose_task_ecs_forgot_is_reported_too() {
    let w = world();
    let cluster = w.cluster("gone", ClusterState::Updating, None);
    let (op, _, arn) = w.started(&cluster, Duration::hours(3)).await;
    w.tasks.forget_task(&arn);

    assert_eq!(w.sweep().await.stale_runners_reported, 1);
    let detail = w.events.sent()[0].detail.clone().unwrap();
    assert_eq!(detail.operation_id(), Some(op.operation_id));
    assert!(
        detail
            .stopped_reason
            .as_deref()
            .unwrap()
            .contains("no longer exists"),
        "{detail:?}"
    );
    assert_eq!(detail.runner().and_then(|c| c.exit_code), None);
}

#[tokio::test]
async fn a_runner_whose_task_runs_is_never_touched_however_quiet() {
    let w = world();
    let cluster = w.cluster("alive", ClusterState::Updating, None);
    let (op, token, _) = w.started(&cluster, Duration::hours(10)).await;
    let lock = w.state_lock(&cluster, INFO);

    for _ in 0..3 {
        let mut report = w.sweep().await;
        // The operation stays open, and older each time; nothing else happens.
        assert!(report.oldest_open_secs >= 10 * 3600, "{report:?}");
        report.oldest_open_secs = 0;
        assert_eq!(report, Report::default());
        w.clock.advance(Duration::hours(1));
    }
    assert!(w.events.sent().is_empty());
    assert!(w.jobs.sent().is_empty());
    assert_eq!(w.stored(&op), op);
    assert_eq!(
        w.store.lock_holder(&cluster),
        Some((op.operation_id.clone(), token))
    );
    assert!(w.state_locks.is_held(&lock.lock_id));
}

#[tokio::test]
async fn a_runner_that_reported_recently_is_not_checked() {
    let w = world();
    let cluster = w.cluster("recent", ClusterState::Updating, None);
    let (_, _, arn) = w.started(&cluster, STALE - Duration::seconds(1)).await;
    // Even if ECS already says stopped, its stop event is still on the way.
    w.tasks.stop_task(&arn, None, Some(0));

    assert_eq!(w.sweep().await.stale_runners_reported, 0);
    assert!(w.events.sent().is_empty());
    // Once silent past the staleness, it is.
    w.clock.advance(Duration::seconds(1));
    assert_eq!(w.sweep().await.stale_runners_reported, 1);
}

#[tokio::test]
async fn a_claimed_operation_whose_runner_never_started_is_requeued() {
    let w = world();
    let cluster = w.cluster("claimed", ClusterState::Active, None);
    let op = w.op(&cluster, OperationKind::Plan, Duration::minutes(10), |o| {
        o.status = OperationStatus::Dispatched;
        o.fencing_token = Some(1);
    });

    let report = w.sweep().await;
    assert_eq!(report.requeued, 1, "{report:?}");
    assert_eq!(report.stale_runners_reported, 0, "{report:?}");
    assert_eq!(w.jobs.sent()[0].job.operation_id, op.operation_id);
    assert!(w.events.sent().is_empty());
}

#[tokio::test]
async fn terraform_state_locks_of_dead_runners_are_released_once_no_operation_is_open() {
    let w = world();
    // All of this cluster's operations are over: its runner died holding the state lock.
    let idle = w.cluster("idle", ClusterState::Active, None);
    w.op(&idle, OperationKind::Create, Duration::hours(2), |o| {
        o.status = OperationStatus::Succeeded;
    });
    let last = w.op(&idle, OperationKind::Update, Duration::hours(1), |o| {
        o.status = OperationStatus::Failed;
    });
    let orphan = w.state_lock(&idle, INFO);
    // An open operation may hold (or be about to take) this one.
    let open = w.cluster("open", ClusterState::Active, None);
    w.op(&open, OperationKind::Update, Duration::seconds(1), |_| {});
    let queued_behind = w.state_lock(&open, INFO);
    // No open operation, but the cluster lock is held: someone is on it.
    let locked = w.cluster("locked", ClusterState::Active, None);
    w.hold_lock(&locked, &OperationId::generate()).await;
    let held = w.state_lock(&locked, INFO);

    let report = w.sweep().await;
    assert_eq!(report.tf_locks_released, 1, "{report:?}");
    assert!(!w.state_locks.is_held(&orphan.lock_id));
    assert!(w.state_locks.is_held(&queued_behind.lock_id));
    assert!(w.state_locks.is_held(&held.lock_id));
    let notes = w.stored(&last).notes;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(&orphan.lock_id) && notes[0].contains("runner@task-1"),
        "{notes:?}"
    );
    // Idempotent: a second sweep finds nothing to do.
    assert_eq!(w.sweep().await.tf_locks_released, 0);
    assert_eq!(w.stored(&last).notes.len(), 1);
    let released: Vec<_> = w
        .audit
        .entries()
        .into_iter()
        .filter(|e| e.action == "state_lock.release")
        .collect();
    assert_eq!(released.len(), 1, "{released:?}");
    assert_eq!(released[0].cluster_id.as_ref(), Some(&idle));
    assert!(released[0].detail.as_deref().unwrap().contains(&orphan.lock_id));
}

/// Issue 15, defect 3: slots whose release was lost (a crash between ending an operation and handing off, or
/// a path that ended it unaware it held one) were never reconciled, so after a few the tenant parked forever.
#[tokio::test]
async fn the_sweep_frees_slots_held_by_finished_or_missing_operations_and_wakes_the_tenant() {
    let w = world();
    let running_on = w.cluster("running", ClusterState::Updating, None);
    let (running, _, _) = w.started(&running_on, Duration::seconds(1)).await;
    let finished_on = w.cluster("finished", ClusterState::Active, None);
    let finished = w.op(&finished_on, OperationKind::Update, Duration::hours(1), |o| {
        o.status = OperationStatus::Succeeded;
    });
    let token = w.hold_lock(&finished_on, &finished.operation_id).await;
    let mut finished = w.stored(&finished);
    finished.fencing_token = Some(token);
    w.store.put_operation(finished.clone());
    let missing = OperationId::generate();
    for holder in [&running.operation_id, &finished.operation_id, &missing] {
        assert!(w.store.acquire_slot(&w.tenant, holder, 3).await.unwrap());
    }
    let waiting_on = w.cluster("waiting", ClusterState::Active, None);
    let waiting = w.op(&waiting_on, OperationKind::Update, Duration::seconds(1), |o| {
        o.wait_reason = Some(TENANT_LIMIT_REASON.into());
    });

    let report = w.sweep().await;
    assert_eq!(report.slots_released, 2, "{report:?}");
    assert_eq!(w.store.slots(&w.tenant), vec![running.operation_id.clone()]);
    assert_eq!(
        w.store.lock_holder(&finished_on),
        None,
        "the finished holder's lock goes too"
    );
    let woken: Vec<_> = w.jobs.sent().into_iter().map(|s| s.job.operation_id).collect();
    assert_eq!(woken, vec![waiting.operation_id.clone()]);
    assert_eq!(w.sweep().await.slots_released, 0, "nothing left to release");
}

/// Issue 15, defect 1 (what the sweeper must not leave behind): a create waiting for its agent is skipped by
/// the silent-runner check, so if its configure-deadline timer is lost nothing would ever end it. Past the
/// deadline plus the grace, the sweep sends the deadline again (and keeps doing so until status ends it).
#[tokio::test]
async fn agent_handshake_a_lost_configure_deadline_is_sent_again_by_the_sweep() {
    let w = world();
    let (cluster, (op, _, _)) = w.configuring_create().await;
    let deadline = w.now() + Duration::minutes(10);
    let mut c = w.stored_cluster(&cluster);
    c.configuring_deadline = Some(deadline);
    w.store.put_cluster(c);

    // Before the deadline (and within the grace after it) the timer is still the one to end it.
    assert_eq!(w.sweep().await.deadlines_resent, 0);
    w.clock
        .advance(Duration::minutes(10) + GRACE - Duration::seconds(1));
    assert_eq!(w.sweep().await.deadlines_resent, 0);
    assert!(w.events.controls().is_empty());

    w.clock.advance(Duration::seconds(1));
    let report = w.sweep().await;
    assert_eq!(report.deadlines_resent, 1, "{report:?}");
    assert_eq!(report.stale_runners_reported, 0, "{report:?}");
    assert_eq!(
        w.events.controls(),
        vec![ControlEvent::ConfigureDeadline {
            operation_id: op.operation_id.clone(),
            cluster_id: cluster.clone(),
            deadline,
        }]
    );
}

/// An update that planned `age` ago and waits for approval until `expires_in` from now.
fn awaiting_approval(w: &World, cluster: &ClusterId, age: Duration, expires_in: Duration) -> Operation {
    use strato_domain::approval::Approval;
    w.op(cluster, OperationKind::Update, age, |o| {
        o.status = OperationStatus::AwaitingApproval;
        o.approval_required = true;
        let plan = strato_fakes::saved_plan();
        let mut a = Approval::request(plan, None, w.now() - age, age + expires_in);
        a.expires_at = w.now() + expires_in;
        o.approval = Some(a);
    })
}

#[tokio::test]
async fn an_approval_request_nobody_answered_expires_and_its_job_goes_to_the_dispatcher() {
    use strato_domain::approval::Verdict;
    let w = world();
    let c = w.cluster("prod", ClusterState::Updating, None);
    let due = awaiting_approval(&w, &c, Duration::hours(80), Duration::minutes(-1));
    let other = w.cluster("staging", ClusterState::Updating, None);
    let waiting = awaiting_approval(&w, &other, Duration::hours(1), Duration::hours(71));

    let report = w.sweep().await;
    assert_eq!(report.approvals_expired, 1);
    let expired = w.stored(&due);
    let d = expired.approval.as_ref().unwrap().decision.as_ref().unwrap();
    assert_eq!((d.verdict, d.by.as_str()), (Verdict::Expired, SCHEDULER));
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].job.operation_id, due.operation_id);
    assert!(w.stored(&waiting).awaits_decision(), "one not yet due waits on");
    assert!(w.audit.entries().iter().any(|e| e.action == "approval.expire"));

    // The next sweep does not decide twice; a decision whose job was lost is sent again after the grace.
    w.clock.advance(GRACE + Duration::seconds(1));
    let report = w.sweep().await;
    assert_eq!((report.approvals_expired, report.decisions_resent), (0, 1));
    assert_eq!(w.jobs.sent().len(), 2);
}

// The shared world with the tenant's webhook, for the expiry and agent modules.
mod hooked;
use hooked::{Hooked, hooked};

mod expiry;

// Silent cluster agents: degraded once, cluster.health_changed to subscribers.
mod agents;

//! The fakes keep the real adapters' conditional-write semantics, and the hand-off rules hold against them.

use strato_coordination::{TENANT_LIMIT_REASON, release_and_wake, update_cluster, update_operation};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{
    Clock, ClusterLocks, Clusters, JobQueue, LaunchFailure, LockOutcome, Operations, PortError, TaskLauncher,
    TenantSlots,
};
use strato_fakes::FakeClock;
use strato_fakes::FakeJobQueue;
use strato_fakes::FakeLauncher;
use strato_fakes::FakeStore;
use time::Duration;

struct World {
    clock: FakeClock,
    store: FakeStore,
    jobs: FakeJobQueue,
    tenant: TenantId,
}

fn world() -> World {
    let clock = FakeClock::default();
    World {
        store: FakeStore::new(clock.clone()),
        jobs: FakeJobQueue::new(clock.clone()),
        clock,
        tenant: "acme".parse().unwrap(),
    }
}

impl World {
    fn cluster(&self, name: &str) -> Cluster {
        let spec = strato_fakes::World::spec(name);
        let c = Cluster::new(self.tenant.clone(), ClusterId::generate(), spec, self.clock.now());
        self.store.put_cluster(c.clone());
        c
    }

    /// A queued operation, created one second after the previous one (so "oldest" is well defined).
    fn op(&self, cluster: &ClusterId, kind: OperationKind) -> Operation {
        self.clock.advance(Duration::seconds(1));
        let op = Operation::new(self.tenant.clone(), cluster.clone(), kind, self.clock.now());
        self.store.put_operation(op.clone());
        op
    }
}

#[tokio::test]
async fn operation_saves_are_conditional_on_updated_at() {
    let w = world();
    let c = w.cluster("prod");
    let op = w.op(&c.cluster_id, OperationKind::Create);
    let mut a = w.store.load_operation(&op.operation_id).await.unwrap().unwrap();
    let mut b = a.clone();
    a.status = OperationStatus::Dispatched;
    w.store.store_operation(&mut a, false).await.unwrap();
    assert!(
        a.updated_at > op.updated_at,
        "the version moves even on a still clock"
    );
    b.status = OperationStatus::Cancelled;
    let before = b.updated_at;
    assert!(matches!(
        w.store.store_operation(&mut b, false).await,
        Err(PortError::Conflict(_))
    ));
    assert_eq!(b.updated_at, before, "a lost write leaves the copy as it was");
    assert_eq!(
        w.store.operation(&op.operation_id).unwrap().status,
        OperationStatus::Dispatched
    );
}

#[tokio::test]
async fn cluster_saves_are_conditional_on_version() {
    let w = world();
    let c = w.cluster("prod");
    let mut a = w
        .store
        .load_cluster(&w.tenant, &c.cluster_id)
        .await
        .unwrap()
        .unwrap();
    let mut b = a.clone();
    a.transition(ClusterState::Provisioning).unwrap();
    w.store.store_cluster(&mut a).await.unwrap();
    assert_eq!(a.version, c.version + 1);
    assert!(matches!(
        w.store.store_cluster(&mut b).await,
        Err(PortError::Conflict(_))
    ));
    assert_eq!(b.version, c.version);
    let other: TenantId = "globex".parse().unwrap();
    assert_eq!(w.store.load_cluster(&other, &c.cluster_id).await.unwrap(), None);
}

#[tokio::test]
async fn locks_lease_expire_and_tokens_only_grow() {
    let w = world();
    let cluster = ClusterId::generate();
    let (a, b) = (OperationId::generate(), OperationId::generate());
    let lease = Duration::minutes(10);
    // `who` asks for the cluster's lock now; `token` is what an acquired lock gives.
    let take = |who| w.store.acquire_lock(&cluster, who, lease, w.clock.now());
    let token = |outcome: LockOutcome| match outcome {
        LockOutcome::Acquired { fencing_token } => fencing_token,
        held => panic!("{held:?}"),
    };
    let t1 = token(take(&a).await.unwrap());
    // The holder taking it again (redelivery) keeps its token; someone else is refused.
    assert_eq!(
        take(&a).await.unwrap(),
        LockOutcome::Acquired { fencing_token: t1 }
    );
    assert_eq!(take(&b).await.unwrap(), LockOutcome::Held { owner: a.clone() });
    // Past the lease, the lock is free to take, with a larger token; the old holder cannot release it.
    w.clock.advance(lease + Duration::seconds(1));
    let t2 = token(take(&b).await.unwrap());
    assert!(t2 > t1);
    assert!(!w.store.release_lock(&cluster, &a, t1).await.unwrap());
    assert!(!w.store.release_lock(&cluster, &b, t1).await.unwrap());
    assert!(w.store.release_lock(&cluster, &b, t2).await.unwrap());
    assert_eq!(w.store.lock_holder(&cluster), None);
    // A released lock keeps its token: the next holder's is larger still.
    let t3 = token(take(&a).await.unwrap());
    assert!(t3 > t2);
    assert!(
        !w.store.forget_lock(&cluster, &b).await.unwrap(),
        "held by another"
    );
    assert!(w.store.forget_lock(&cluster, &a).await.unwrap());
    assert!(!w.store.has_lock_item(&cluster));
}

#[tokio::test]
async fn slots_are_bounded_and_idempotent() {
    let w = world();
    let (a, b, c) = (
        OperationId::generate(),
        OperationId::generate(),
        OperationId::generate(),
    );
    assert!(w.store.acquire_slot(&w.tenant, &a, 2).await.unwrap());
    assert!(w.store.acquire_slot(&w.tenant, &a, 2).await.unwrap());
    assert!(w.store.acquire_slot(&w.tenant, &b, 2).await.unwrap());
    assert!(!w.store.acquire_slot(&w.tenant, &c, 2).await.unwrap());
    assert!(
        w.store.acquire_slot(&w.tenant, &a, 2).await.unwrap(),
        "a holder at the limit keeps its slot"
    );
    w.store.release_slot(&w.tenant, &a).await.unwrap();
    assert!(w.store.acquire_slot(&w.tenant, &c, 2).await.unwrap());
    assert_eq!(w.store.slots(&w.tenant).len(), 2);
    assert_eq!(w.store.concurrency_limit(&w.tenant).await.unwrap(), 5);
    w.store.set_concurrency_limit(&w.tenant, 1);
    assert_eq!(w.store.concurrency_limit(&w.tenant).await.unwrap(), 1);
}

#[tokio::test]
async fn the_queue_deduplicates_within_the_window_and_records_visibility() {
    let w = world();
    let c = w.cluster("prod");
    let op = w.op(&c.cluster_id, OperationKind::Create);
    let job = (&op).into();
    w.jobs.enqueue(&job, "0").await.unwrap();
    w.jobs.enqueue(&job, "0").await.unwrap();
    w.jobs.enqueue(&job, "after-x").await.unwrap();
    assert_eq!(w.jobs.sent().len(), 2);
    assert_eq!(w.jobs.dropped(), 1);
    assert_eq!(w.jobs.sent()[0].group, c.cluster_id.to_string());
    w.clock.advance(Duration::minutes(6));
    w.jobs.enqueue(&job, "0").await.unwrap();
    assert_eq!(
        w.jobs.sent().len(),
        3,
        "past the window the same id is a new message"
    );
    w.jobs.retry_after("rh-1", 20).await;
    assert_eq!(w.jobs.visibility_changes(), [("rh-1".to_owned(), 20)]);
}

#[tokio::test]
async fn the_launcher_starts_one_task_per_token_and_lists_late_when_told() {
    let l = FakeLauncher::default();
    let op = Operation::new(
        "acme".parse().unwrap(),
        ClusterId::generate(),
        OperationKind::Create,
        strato_domain::ts::now(),
    );
    l.list_lags(true);
    let t = l.launch(&op, 1, None).await.unwrap();
    assert_eq!(l.find_started(&op.operation_id).await.unwrap(), None);
    assert_eq!(
        l.launch(&op, 1, None).await.unwrap(),
        t,
        "same client token, same task"
    );
    assert_eq!(l.tasks().len(), 1);
    l.list_all();
    assert_eq!(l.find_started(&op.operation_id).await.unwrap(), Some(t.clone()));
    assert_ne!(
        l.launch(&op, 2, None).await.unwrap(),
        t,
        "a new lock may start a new task"
    );
    l.fail_next(LaunchFailure::Transient("RESOURCE:MEMORY".into()));
    assert_eq!(
        l.launch(&op, 3, None).await,
        Err(LaunchFailure::Transient("RESOURCE:MEMORY".into()))
    );
    assert_eq!((l.tasks().len(), l.launch_calls()), (2, 4));
}

#[tokio::test]
async fn updates_retry_lost_writes_and_give_up_on_endless_contention() {
    let w = world();
    let c = w.cluster("prod");
    let op = w.op(&c.cluster_id, OperationKind::Create);
    w.store.inject_conflicts(2);
    let done = update_operation(&w.store, &op.operation_id, |o| {
        o.status = OperationStatus::Dispatched;
        true
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(done.status, OperationStatus::Dispatched);
    w.store.inject_conflicts(100);
    let err = update_cluster(&w.store, &w.tenant, &c.cluster_id, |c| {
        c.transition(ClusterState::Provisioning).unwrap();
        Ok::<_, PortError>(true)
    })
    .await
    .unwrap_err();
    assert!(matches!(err, PortError::Conflict(m) if m.contains("gave up")));
    w.store.inject_conflicts(0);
    let missing = update_cluster(&w.store, &w.tenant, &ClusterId::generate(), |_| {
        Ok::<_, PortError>(true)
    })
    .await
    .unwrap_err();
    assert!(matches!(missing, PortError::NotFound(_)));
}

#[tokio::test]
async fn release_and_wake_frees_what_the_operation_holds_and_wakes_the_oldest_waiters() {
    let w = world();
    let c = w.cluster("prod");
    let other = w.cluster("staging");
    let mut running = w.op(&c.cluster_id, OperationKind::Create);
    let next_here = w.op(&c.cluster_id, OperationKind::Update);
    let _later_here = w.op(&c.cluster_id, OperationKind::Delete);
    let mut waiting_slot = w.op(&other.cluster_id, OperationKind::Update);
    waiting_slot.wait_reason = Some(TENANT_LIMIT_REASON.into());
    w.store.put_operation(waiting_slot.clone());

    let token = match w
        .store
        .acquire_lock(
            &c.cluster_id,
            &running.operation_id,
            Duration::hours(1),
            w.clock.now(),
        )
        .await
        .unwrap()
    {
        LockOutcome::Acquired { fencing_token } => fencing_token,
        held => panic!("{held:?}"),
    };
    w.store
        .acquire_slot(&w.tenant, &running.operation_id, 5)
        .await
        .unwrap();
    running.fencing_token = Some(token);
    running.status = OperationStatus::Succeeded;

    let out = release_and_wake(&w.store, &w.jobs, &running).await.unwrap();
    assert!(out.released_lock);
    assert_eq!(
        out.woken,
        [next_here.operation_id.clone(), waiting_slot.operation_id.clone()]
    );
    assert_eq!(w.store.lock_holder(&c.cluster_id), None);
    assert!(w.store.slots(&w.tenant).is_empty());
    // A repeated hand-off from the same operation wakes nobody twice (deduplicated) and frees nothing else.
    let again = release_and_wake(&w.store, &w.jobs, &running).await.unwrap();
    assert!(!again.released_lock);
    assert_eq!(w.jobs.sent().len(), 2);
    assert_eq!(w.jobs.dropped(), 2);
}

mod coordination;

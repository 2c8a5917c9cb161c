//! `end_operation` and `optimistic` on the in-memory fakes: no AWS, no moto.

use std::sync::atomic::{AtomicUsize, Ordering};

use strato_coordination::{Attempt, ClusterFate, Ended, LOCK_LEASE, end_operation, optimistic};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::ids::ClusterId;
use strato_domain::model::{ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Clock, ClusterLocks, PortError};
use time::Duration;

use super::{World, world};

fn boom() -> UserError {
    UserError::new(ErrorCategory::Internal, "apply", "boom")
}

impl World {
    /// A cluster named `prod` in `state`.
    fn cluster_in(&self, state: ClusterState) -> ClusterId {
        let c = self.cluster("prod").in_state(state);
        self.store.put_cluster(c.clone());
        c.cluster_id
    }

    /// `op` as the dispatcher leaves it once started: lock and slot held, token recorded, running.
    async fn running(&self, cluster: &ClusterId, kind: OperationKind) -> Operation {
        let mut op = self.op(cluster, kind);
        let fencing_token = self.store.hold(&op, LOCK_LEASE).await;
        op.fencing_token = Some(fencing_token);
        op.status = OperationStatus::Running;
        self.store.put_operation(op.clone());
        op
    }

    /// Ends `op` FAILED with `err` through `end_operation`, its cluster's `fate` as given.
    async fn end_failed(
        &self,
        op: Operation,
        fate: ClusterFate<'_>,
        err: &UserError,
    ) -> Result<Ended, PortError> {
        end_operation(&self.store, &self.jobs, op, fate, fail_with(err)).await
    }

    fn state(&self, id: &ClusterId) -> ClusterState {
        self.store.cluster(id).unwrap().state()
    }
}

fn fail_with(err: &UserError) -> impl FnMut(&mut Operation) -> bool + '_ {
    |o| {
        o.status = OperationStatus::Failed;
        o.error = Some(err.clone());
        true
    }
}

#[tokio::test]
async fn ending_fails_the_cluster_ends_the_operation_and_hands_off_once() {
    let w = world();
    let cid = w.cluster_in(ClusterState::Provisioning);
    let op = w.running(&cid, OperationKind::Create).await;
    let next = w.op(&cid, OperationKind::Delete);
    let err = boom();

    let ended = w
        .end_failed(op.clone(), ClusterFate::Fail(&err), &err)
        .await
        .unwrap();
    let Ended::Now { op: done, handoff } = ended else {
        panic!("{ended:?}")
    };
    assert_eq!(done.status, OperationStatus::Failed);
    assert_eq!(
        w.store.operation(&op.operation_id).unwrap().error,
        Some(err.clone())
    );
    let c = w.store.cluster(&cid).unwrap();
    assert_eq!(
        (c.state(), c.last_error),
        (ClusterState::Failed, Some(err.clone()))
    );
    assert!(handoff.released_lock);
    assert_eq!(handoff.woken, std::slice::from_ref(&next.operation_id));
    assert_eq!(w.store.lock_holder(&cid), None);
    assert!(w.store.slots(&w.tenant).is_empty());
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].deduplication_id,
        format!("{}-after-{}", next.operation_id, op.operation_id)
    );

    // A duplicate end (a redelivered event) finds it ended: nothing is released or woken again.
    let again = w
        .end_failed(op.clone(), ClusterFate::Fail(&err), &err)
        .await
        .unwrap();
    assert!(matches!(again, Ended::Not(o) if o.status == OperationStatus::Failed));
    assert_eq!(w.jobs.sent().len(), 1);
    assert_eq!(
        w.store.cluster(&cid).unwrap().version,
        c.version,
        "the cluster is not written again"
    );
}

#[tokio::test]
async fn a_declined_end_changes_the_operation_and_releases_nothing() {
    let w = world();
    let cid = w.cluster_in(ClusterState::Provisioning);
    let op = w.running(&cid, OperationKind::Create).await;
    let ended = end_operation(&w.store, &w.jobs, op.clone(), ClusterFate::Untouched, |_| false)
        .await
        .unwrap();
    assert!(matches!(ended, Ended::Not(o) if o.status == OperationStatus::Running));
    assert_eq!(w.store.lock_holder(&cid).map(|(o, _)| o), Some(op.operation_id));
    assert_eq!(w.store.slots(&w.tenant).len(), 1);
    assert!(w.jobs.sent().is_empty());
}

#[tokio::test]
async fn fail_if_pending_fails_only_a_pending_cluster() {
    let w = world();
    let err = UserError::new(ErrorCategory::Cancelled, "queued", "cancelled");
    let cancel = |o: &mut Operation| {
        o.status = OperationStatus::Cancelled;
        true
    };
    let pending = w.cluster_in(ClusterState::Pending);
    let op = w.op(&pending, OperationKind::Create);
    end_operation(&w.store, &w.jobs, op, ClusterFate::FailIfPending(&err), cancel)
        .await
        .unwrap();
    assert_eq!(w.state(&pending), ClusterState::Failed);
    assert_eq!(w.store.cluster(&pending).unwrap().last_error, Some(err.clone()));

    let active = w.cluster_in(ClusterState::Active);
    let op = w.op(&active, OperationKind::Update);
    end_operation(&w.store, &w.jobs, op, ClusterFate::FailIfPending(&err), cancel)
        .await
        .unwrap();
    assert_eq!(w.state(&active), ClusterState::Active);
}

#[tokio::test]
async fn a_cluster_that_cannot_fail_is_left_and_the_operation_still_ends() {
    let w = world();
    let cid = w.cluster_in(ClusterState::Deleted);
    let op = w.running(&cid, OperationKind::Delete).await;
    let err = boom();
    let ended = end_operation(&w.store, &w.jobs, op, ClusterFate::Fail(&err), fail_with(&err))
        .await
        .unwrap();
    assert!(matches!(ended, Ended::Now { .. }));
    assert_eq!(w.state(&cid), ClusterState::Deleted);
    assert_eq!(w.store.cluster(&cid).unwrap().last_error, None);
    assert_eq!(w.store.lock_holder(&cid), None);
}

#[tokio::test]
async fn a_stale_copy_is_read_again_and_lost_writes_are_retried() {
    let w = world();
    let cid = w.cluster_in(ClusterState::Updating);
    let op = w.running(&cid, OperationKind::Update).await;
    // Someone saved the operation since this copy was read (a heartbeat's step).
    let mut newer = op.clone();
    newer.steps.push(strato_domain::model::Step {
        name: "plan".into(),
        started_at: w.clock.now(),
        finished_at: None,
        ok: None,
    });
    w.clock.advance(Duration::seconds(1));
    newer.updated_at = w.clock.now();
    w.store.put_operation(newer);
    w.store.inject_conflicts(2);
    let err = boom();
    let ended = w
        .end_failed(op.clone(), ClusterFate::Fail(&err), &err)
        .await
        .unwrap();
    let Ended::Now { op: done, .. } = ended else {
        panic!("{ended:?}")
    };
    assert_eq!(done.steps.len(), 1, "the end was applied to the fresh copy");
    assert_eq!(w.state(&cid), ClusterState::Failed);

    // Endless contention gives up with a conflict, and nothing is handed off.
    let other = w
        .running(&w.cluster_in(ClusterState::Provisioning), OperationKind::Create)
        .await;
    w.store.inject_conflicts(100);
    let e = w
        .end_failed(other.clone(), ClusterFate::Untouched, &err)
        .await
        .unwrap_err();
    assert!(matches!(e, PortError::Conflict(m) if m.contains("gave up")));
    w.store.inject_conflicts(0);
    assert_eq!(
        w.store.operation(&other.operation_id).unwrap().status,
        OperationStatus::Running
    );
    assert!(w.store.lock_holder(&other.cluster_id).is_some());
}

#[tokio::test]
async fn optimistic_retries_conflicts_then_gives_up() {
    let tries = AtomicUsize::new(0);
    let done: Result<&str, String> = optimistic(
        4,
        || "gave up".to_owned(),
        || async {
            let n = tries.fetch_add(1, Ordering::SeqCst);
            Ok(if n < 2 {
                Attempt::Conflict
            } else {
                Attempt::Done("saved")
            })
        },
    )
    .await;
    assert_eq!(done, Ok("saved"));
    assert_eq!(tries.load(Ordering::SeqCst), 3);

    tries.store(0, Ordering::SeqCst);
    let gave_up: Result<(), String> = optimistic(
        4,
        || "gave up".to_owned(),
        || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Ok(Attempt::Conflict)
        },
    )
    .await;
    assert_eq!(gave_up, Err("gave up".to_owned()));
    assert_eq!(tries.load(Ordering::SeqCst), 4);

    tries.store(0, Ordering::SeqCst);
    let failed: Result<(), String> = optimistic(
        4,
        || "gave up".to_owned(),
        || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err("broken".to_owned())
        },
    )
    .await;
    assert_eq!(failed, Err("broken".to_owned()));
    assert_eq!(tries.load(Ordering::SeqCst), 1, "an error is not retried");

    assert_eq!(
        Attempt::of_save(Ok::<(), PortError>(()), 7).unwrap(),
        Attempt::Done(7)
    );
    assert_eq!(
        Attempt::of_save(Err(PortError::Conflict("lost".into())), 7).unwrap(),
        Attempt::Conflict
    );
    assert!(Attempt::of_save(Err(PortError::Unavailable("down".into())), 7).is_err());
}

/// Issue 15, defect 8: a release woke only the tenant's longest waiter; when that one's cluster was busy it
/// parked on the lock, the freed slot stayed idle and the tenant's other waiters slept on.
#[tokio::test]
async fn a_release_wakes_the_tenants_oldest_waiter_whose_cluster_is_free() {
    let w = world();
    let done_on = w.cluster_in(ClusterState::Updating);
    let done = w.running(&done_on, OperationKind::Update).await;
    // The oldest waiter's cluster is busy with another operation (which holds no slot of this tenant's count).
    let busy = w.cluster_in(ClusterState::Updating);
    let holder = w.op(&busy, OperationKind::Update);
    w.store
        .acquire_lock(&busy, &holder.operation_id, LOCK_LEASE, w.clock.now())
        .await
        .unwrap();
    let parked = |cluster: &ClusterId| {
        let mut op = w.op(cluster, OperationKind::Update);
        op.wait_reason = Some(strato_coordination::TENANT_LIMIT_REASON.into());
        w.store.put_operation(op.clone());
        op
    };
    let _blocked = parked(&busy);
    let free = w.cluster_in(ClusterState::Active);
    let ready = parked(&free);

    let ended = w.end_failed(done, ClusterFate::Untouched, &boom()).await.unwrap();
    let Ended::Now { handoff, .. } = ended else {
        panic!("{ended:?}")
    };
    assert_eq!(handoff.woken, vec![ready.operation_id.clone()]);
}

/// What `run` records (as [`recorded`] lists it), run to its end on a runtime of its own under a debugging
/// recorder.
fn recorded_while(run: impl std::future::Future<Output = ()>) -> Vec<(String, Vec<String>)> {
    let rec = metrics_util::debugging::DebuggingRecorder::new();
    let snap = rec.snapshotter();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    metrics::with_local_recorder(&rec, || rt.block_on(run));
    recorded(snap.snapshot())
}

/// Metric name, labels (sorted `k=v`) and whether it recorded anything, from a debugging recorder.
fn recorded(snapshot: metrics_util::debugging::Snapshot) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = snapshot
        .into_vec()
        .into_iter()
        .map(|(key, _, _, _)| {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            (key.name().to_owned(), labels)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn ending_an_operation_records_its_duration_outcome_category_and_hand_off() {
    let got = recorded_while(async {
        let w = world();
        let cid = w.cluster_in(ClusterState::Provisioning);
        let mut op = w.running(&cid, OperationKind::Create).await;
        op.spec = Some(w.store.cluster(&cid).unwrap().spec);
        w.store.put_operation(op.clone());
        let err = boom();
        w.end_failed(op, ClusterFate::Fail(&err), &err).await.unwrap();
    });
    let op_labels = |name: &str| {
        (
            name.to_owned(),
            vec![
                "kind=create".to_owned(),
                "outcome=failed".to_owned(),
                "provider=aws".to_owned(),
                "template=aws-eks-basic".to_owned(),
            ],
        )
    };
    assert!(got.contains(&op_labels("OperationDuration")), "{got:?}");
    assert!(got.contains(&op_labels("OperationsEnded")), "{got:?}");
    // By outcome alone as well: the failure-rate alarm's metric math reads that series.
    assert!(
        got.contains(&("OperationOutcomes".to_owned(), vec!["outcome=failed".to_owned()])),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "OperationFailures".to_owned(),
            vec!["category=internal".to_owned(), "kind=create".to_owned()]
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&("LockHandoffLatency".to_owned(), vec![])),
        "{got:?}"
    );
}

/// A drift check has no spec of its own: its end is labelled with its cluster's provider and template,
/// not `none`.
#[test]
fn a_drift_checks_end_carries_its_clusters_provider_and_template() {
    let got = recorded_while(async {
        let w = world();
        let cid = w.cluster_in(ClusterState::Active);
        let op = w.running(&cid, OperationKind::DriftCheck).await;
        assert!(op.spec.is_none());
        end_operation(&w.store, &w.jobs, op, ClusterFate::Untouched, |o| {
            o.status = OperationStatus::Succeeded;
            true
        })
        .await
        .unwrap();
    });
    let labels = vec![
        "kind=drift-check".to_owned(),
        "outcome=succeeded".to_owned(),
        "provider=aws".to_owned(),
        "template=aws-eks-basic".to_owned(),
    ];
    assert!(
        got.contains(&("OperationsEnded".to_owned(), labels.clone())),
        "{got:?}"
    );
    assert!(got.contains(&("OperationDuration".to_owned(), labels)), "{got:?}");
}

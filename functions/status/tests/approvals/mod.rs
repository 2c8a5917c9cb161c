//! A runner's `awaiting_approval` report: the operation waits, keeps its lock past the request's expiry,
//! frees its slot, tells the tenant once; the planning task's stop changes nothing.

use super::*;
use strato_fakes::saved_plan;

fn awaiting_approval(w: &World, run: &Run) -> String {
    runner(RunnerEvent::AwaitingApproval {
        operation_id: run.op.clone(),
        fencing_token: run.token,
        plan: saved_plan(),
        at: w.clock.now(),
    })
}

/// A drift check on `c` that finds drift; the update its reconcile records.
async fn reconcile_of_found_drift(w: &World, c: &ClusterId) -> Operation {
    let run = w.start(c, OperationKind::DriftCheck).await;
    assert!(w.deliver_one(drift_found(w, &run), 1).await);
    w.store
        .operations_of(c)
        .into_iter()
        .find(|o| o.kind == OperationKind::Update)
        .expect("a reconcile update")
}

#[tokio::test]
async fn an_awaiting_approval_report_parks_the_operation_with_its_plan_holding_only_its_lock() {
    let w = world();
    w.hook(None);
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    // Another operation of the tenant waits for a slot on another cluster.
    let other = w.cluster_in("staging", ClusterState::Active);
    let waiter = w.parked(&other, TENANT_LIMIT_REASON.to_owned());

    assert!(w.deliver_one(awaiting_approval(&w, &run), 1).await);
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::AwaitingApproval);
    let approval = op.approval.as_ref().unwrap();
    assert_eq!(approval.plan, saved_plan());
    assert_eq!(approval.round, 1);
    assert_eq!(
        approval.expires_at,
        w.clock.now() + strato_domain::approval::DEFAULT_APPROVAL_TTL
    );
    assert_eq!(approval.task_arn.as_deref(), Some(run.task.as_str()));
    assert_eq!(
        w.cluster(&c).state(),
        ClusterState::Updating,
        "the cluster stays where it was"
    );

    // The slot is given back and the tenant's waiter woken; the lock is kept.
    assert!(!w.store.slots(&w.tenant).contains(&run.op));
    assert!(w.woken().contains(&waiter.operation_id));
    assert_eq!(w.store.lock_holder(&c), Some((run.op.clone(), run.token)));
    // Past the runner's lease (nobody heartbeats now) but before the request expires, the lock holds.
    w.clock.advance(LOCK_LEASE + Duration::hours(1));
    let intruder = w.queued(&c, OperationKind::Update);
    let took = w
        .store
        .acquire_lock(&c, &intruder.operation_id, LOCK_LEASE, w.clock.now())
        .await
        .unwrap();
    assert_eq!(
        took,
        LockOutcome::Held {
            owner: run.op.clone()
        }
    );

    // A redelivered report and a late heartbeat change nothing; the planning task's stop fails nothing.
    assert!(w.deliver_one(awaiting_approval(&w, &run), 2).await);
    assert!(w.deliver_one(heartbeat(&w, &run, run.token), 1).await);
    assert!(
        w.deliver_one(stopped(&run, Some(0)), FINAL_REPORT_GRACE_RECEIVES)
            .await
    );
    let after = w.op(&run.op);
    assert_eq!(after.status, OperationStatus::AwaitingApproval);
    assert_eq!(after.approval.as_ref().unwrap().round, 1);
    assert_eq!(after.error, None);

    let events: Vec<String> = w.webhooks.queued().into_iter().map(|m| m.event).collect();
    assert_eq!(
        events
            .iter()
            .filter(|e| *e == "operation.awaiting_approval")
            .count(),
        1,
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| e == "operation.failed" || e == "operation.succeeded")
    );
    assert!(
        w.audit
            .entries()
            .iter()
            .any(|e| e.action == "operation.awaiting_approval" && e.operation_id.as_ref() == Some(&run.op))
    );
}

#[tokio::test]
async fn a_report_from_a_stale_token_does_not_park_the_operation() {
    let w = world();
    let (_, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    let zombie = Run {
        token: run.token - 1,
        ..run.clone()
    };
    w.deliver_one(awaiting_approval(&w, &zombie), 1).await;
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Running);
    assert_eq!(op.approval, None);
    assert_eq!(op.stale_events, 1);
}

#[tokio::test]
async fn a_cancel_asked_for_while_the_plan_ran_is_the_decision() {
    let w = world();
    let (_, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    let mut op = w.op(&run.op);
    op.cancel_requested = true;
    w.store.put_operation(op);
    assert!(w.deliver_one(awaiting_approval(&w, &run), 1).await);
    let op = w.op(&run.op);
    let decision = op.approval.as_ref().unwrap().decision.as_ref().unwrap();
    assert_eq!(decision.verdict, strato_domain::approval::Verdict::Cancelled);
    let jobs = w.jobs.sent();
    let decided = jobs
        .iter()
        .find(|j| j.job.operation_id == run.op)
        .expect("its job goes to the dispatcher");
    assert!(decided.deduplication_id.ends_with("decision-1"), "{decided:?}");
}

#[tokio::test]
async fn a_drift_reconcile_of_a_cluster_that_needs_approval_waits_for_it_too() {
    use strato_domain::approval::ApprovalMode;
    let w = world();
    let c = w.drifting(DriftPolicy::Reconcile);
    w.store.set_approval_default(&w.tenant, ApprovalMode::Required);
    let update = reconcile_of_found_drift(&w, &c).await;
    assert!(
        update.approval_required,
        "the tenant's default applies to Strato's own updates"
    );
}

#[tokio::test]
async fn a_clusters_own_auto_does_not_lower_the_tenants_requirement_for_a_reconcile() {
    use strato_domain::approval::ApprovalMode;
    let w = world();
    let c = w.drifting(DriftPolicy::Reconcile);
    let mut cluster = w.cluster(&c);
    cluster.approval = Some(ApprovalMode::Auto);
    w.store.put_cluster(cluster);
    w.store.set_approval_default(&w.tenant, ApprovalMode::Required);
    let update = reconcile_of_found_drift(&w, &c).await;
    assert!(
        update.approval_required,
        "the strictest of the cluster's, template's and tenant's modes applies"
    );
}

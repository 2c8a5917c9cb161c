//! The API's decisions against the in-memory fakes (no AWS, no moto): what a create, a PATCH, a cancel and a
//! retry write, send and refuse.

// `GET /v1/operations/{id}/timeline` (in the fast tier with the other decisions).
mod timeline;

// Plan approvals: decisions, separation of duties, the approval mode.
mod approvals;

// Who may lower a cluster's approval requirement, what policies see of it, named requesters.
mod governance;

// A preview of an update: validated and governed as the update, a `plan` operation, nothing changed.
mod preview;
mod rollouts;

// A create's audit entry, written with the create; the tenant's rules read with its policies.
mod audit;

// The cluster agent: registration, its credential (rotation, revocation), throttling, health.
mod agent;

use serde_json::{Value, json};
use strato_api::decide::IfMatch;
use strato_api::decide::{Api, Cancelled, Started, Updated};
use strato_api::{ApiError, Caller, SpecBody, UpdateBody};
use strato_coordination::TENANT_LIMIT_REASON;
use strato_domain::ErrorCategory;
use strato_domain::model::{ClusterState, DriftPolicy, OperationKind, OperationStatus};
use strato_domain::ports::{ClusterLocks, Intake, LockOutcome, Templates, TenantSlots};

mod world;
use world::*;

#[tokio::test]
async fn create_writes_cluster_and_operation_together_then_sends_the_job() {
    let w = World::new();
    let s = w.create("prod-eu").await;
    let stored = w.store.cluster(&s.cluster.cluster_id).unwrap();
    assert_eq!(stored.state(), ClusterState::Pending);
    assert_eq!(stored.spec.name.as_str(), "prod-eu");
    let op = w.store.operation(&s.operation.operation_id).unwrap();
    assert_eq!(
        (op.kind, op.status),
        (OperationKind::Create, OperationStatus::Queued)
    );
    assert_eq!(op.cluster_id, stored.cluster_id);
    assert_eq!(op.spec.as_ref(), Some(&stored.spec));
    assert_eq!(op.requested_by.as_deref(), Some("user-7f3a"));
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].job.operation_id, op.operation_id);
    assert_eq!(sent[0].group, stored.cluster_id.to_string());
}

#[tokio::test]
async fn create_validates_the_spec_before_writing_anything() {
    let w = World::new();
    let mut body = spec_json("prod-eu");
    body["variables"]["node_count"] = json!(50);
    body["variables"]["surprise"] = json!(true);
    let e = w
        .api()
        .create(&caller(), serde_json::from_value::<SpecBody>(body).unwrap())
        .await
        .unwrap_err();
    assert_eq!(invalid_fields(e), ["variables.node_count", "variables.surprise"]);
    assert!(w.store.clusters().is_empty() && w.store.operations().is_empty());
    assert!(w.jobs.sent().is_empty());

    let mut unknown = spec_json("prod-eu");
    unknown["template"]["version"] = json!("9.9.9");
    let e = w
        .api()
        .create(&caller(), serde_json::from_value::<SpecBody>(unknown).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 422, "{e}");
    assert!(w.store.clusters().is_empty() && w.jobs.sent().is_empty());
}

#[tokio::test]
async fn a_taken_name_is_a_409_and_writes_nothing() {
    let w = World::new();
    w.create("prod-eu").await;
    let e = w.api().create(&caller(), spec("prod-eu")).await.unwrap_err();
    assert!(conflict(e).contains("'prod-eu'"));
    assert_eq!(w.store.clusters().len(), 1);
    assert_eq!(w.store.operations().len(), 1);
    assert_eq!(w.jobs.sent().len(), 1);
    // Another name is fine.
    w.create("prod-us").await;
}

#[tokio::test]
async fn quotas_refuse_with_429_and_write_nothing() {
    let w = World::new();
    let tenant = caller().tenant;
    w.store.set_quotas(&tenant, 1, 50);
    w.create("one").await;
    let e = w.api().create(&caller(), spec("two")).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 429, "{e}");
    assert!(e.to_string().contains("at most 1 clusters"), "{e}");
    assert_eq!(w.store.clusters().len(), 1);

    let w = World::new();
    w.store.set_quotas(&tenant, 20, 1);
    w.create("one").await;
    let e = w.api().create(&caller(), spec("two")).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 429, "{e}");
    assert!(e.to_string().contains("operations queued or running"), "{e}");
    assert_eq!((w.store.clusters().len(), w.store.operations().len()), (1, 1));
    assert_eq!(w.jobs.sent().len(), 1);
}

#[tokio::test]
async fn a_failed_send_still_accepts_and_leaves_the_operation_queued_for_the_sweeper() {
    let w = World::new();
    w.jobs.fail_sends(1);
    let s = w.create("prod-eu").await;
    assert!(w.jobs.sent().is_empty());
    let op = w.store.operation(&s.operation.operation_id).unwrap();
    assert_eq!(op.status, OperationStatus::Queued);
    // Parked operations wait for a hand-off; only plain queued ones are swept.
    assert_eq!(op.wait_reason, None);
}

#[tokio::test]
async fn patch_builds_an_update_operation_from_the_clusters_spec() {
    let w = World::new();
    let before = w.active().await;
    let body =
        patch(json!({"variables": {"node_count": 5, "db_password": null}, "template_version": "1.1.0"}));
    let Updated { operation, .. } = w
        .api()
        .update(&caller(), before.cluster.cluster_id.as_str(), body)
        .await
        .unwrap();
    let id = operation.expect("a new spec starts an operation").operation_id;
    let op = w.store.operation(&id).unwrap();
    assert_eq!(
        (op.kind, op.status),
        (OperationKind::Update, OperationStatus::Queued)
    );
    let spec = op.spec.unwrap();
    assert_eq!(spec.template.version, "1.1.0");
    assert_eq!(spec.variables["node_count"], json!(5));
    // Untouched variables come from the cluster's spec; null removes one.
    assert_eq!(spec.variables["owner_email"], json!("ops@example.com"));
    assert!(!spec.variables.contains_key("db_password"));
    // The cluster keeps its spec until the runner applies the new one.
    let stored = w.store.cluster(&before.cluster.cluster_id).unwrap();
    assert_eq!(stored.spec, before.cluster.spec);
    assert_eq!(w.jobs.sent().last().unwrap().job.operation_id, op.operation_id);
}

#[tokio::test]
async fn drift_settings_alone_change_the_cluster_and_no_operation() {
    let w = World::new();
    let before = w.active().await;
    let body = patch(json!({"drift": {"policy": "reconcile", "interval_hours": 2}}));
    let out = w
        .api()
        .update(&caller(), before.cluster.cluster_id.as_str(), body)
        .await
        .unwrap();
    assert!(out.operation.is_none(), "settings alone start no operation");
    assert_eq!(out.cluster.drift_policy, DriftPolicy::Reconcile);
    let stored = w.store.cluster(&before.cluster.cluster_id).unwrap();
    assert_eq!(stored.drift_policy, DriftPolicy::Reconcile);
    assert_eq!(stored.drift_interval_secs, Some(2 * 3600));
    assert_eq!(w.store.operations().len(), 1);
    assert_eq!(w.jobs.sent().len(), 1);
}

#[tokio::test]
async fn an_update_in_a_forbidding_state_is_a_409_naming_the_state() {
    for (state, named) in [
        (ClusterState::Deleting, "DELETING"),
        (ClusterState::Failed, "FAILED"),
        (ClusterState::Deleted, "DELETED"),
    ] {
        let w = World::new();
        let s = w.cluster_in(state, OperationStatus::Failed).await;
        let body = patch(json!({"variables": {"node_count": 5}}));
        let e = w
            .api()
            .update(&caller(), s.cluster.cluster_id.as_str(), body)
            .await
            .unwrap_err();
        let message = conflict(e);
        assert!(message.contains(named), "{state:?}: {message}");
        assert_eq!(w.store.operations().len(), 1, "{state:?}");
    }
}

#[tokio::test]
async fn cancelling_a_queued_create_cancels_it_and_fails_the_pending_cluster() {
    let w = World::new();
    let s = w.create("prod-eu").await;
    let out = w.cancel(&s.operation.operation_id).await.unwrap();
    assert!(matches!(out, Cancelled::Now(_)), "{out:?}");
    let op = w.store.operation(&s.operation.operation_id).unwrap();
    assert_eq!(op.status, OperationStatus::Cancelled);
    assert_eq!(op.error.unwrap().category, ErrorCategory::Cancelled);
    let c = w.store.cluster(&s.cluster.cluster_id).unwrap();
    assert_eq!(c.state(), ClusterState::Failed);
    // Cancelled again: nothing left to cancel.
    let e = w.cancel(&s.operation.operation_id).await.unwrap_err();
    assert!(conflict(e).contains("cancelled"));
}

#[tokio::test]
async fn cancelling_a_parked_estimate_forgets_its_synthetic_lock() {
    let w = World::new();
    let mut body = spec_json("ignored");
    body.as_object_mut().unwrap().remove("name");
    let (mut op, _) = w
        .api()
        .estimate(&caller(), serde_json::from_value::<SpecBody>(body).unwrap())
        .await
        .unwrap();
    // The dispatcher took the lock, found no slot, gave the lock back and parked the estimate.
    let now = w.clock.clone();
    let token = match w
        .store
        .acquire_lock(
            &op.cluster_id,
            &op.operation_id,
            time::Duration::hours(1),
            strato_domain::ports::Clock::now(&now),
        )
        .await
        .unwrap()
    {
        strato_domain::ports::LockOutcome::Acquired { fencing_token } => fencing_token,
        held => panic!("{held:?}"),
    };
    w.store
        .release_lock(&op.cluster_id, &op.operation_id, token)
        .await
        .unwrap();
    op.wait_reason = Some("tenant at concurrency limit".into());
    w.store.put_operation(op.clone());
    assert!(w.store.has_lock_item(&op.cluster_id));

    let out = w.cancel(&op.operation_id).await.unwrap();
    let Cancelled::Now(done) = out else {
        panic!("a parked operation is cancelled on the spot");
    };
    assert_eq!(done.wait_reason, None);
    assert!(!w.store.has_lock_item(&op.cluster_id));
}

/// The cancel of a queued operation ends it through `end_operation`, whose writes are optimistic: one lost to
/// another writer is read again and retried, and the end still completes (the cluster failed, the
/// operation cancelled) instead of leaving half of it to a 409.
#[tokio::test]
async fn a_cancel_that_loses_a_write_reads_again_and_still_ends_the_operation() {
    let w = World::new();
    let s = w.create("prod-eu").await;
    w.store.inject_conflicts(2);
    let out = w.cancel(&s.operation.operation_id).await.unwrap();
    assert!(matches!(out, Cancelled::Now(_)), "{out:?}");
    let op = w.store.operation(&s.operation.operation_id).unwrap();
    assert_eq!(op.status, OperationStatus::Cancelled);
    assert_eq!(
        w.store.cluster(&s.cluster.cluster_id).unwrap().state(),
        ClusterState::Failed
    );
}

/// Issue 15 defect 3 (api part): a queued operation that holds the cluster lock and a tenant slot (the
/// dispatcher took them, then the operation went back to the queue) used to be cancelled in place, keeping
/// both for ever. The cancel now hands them on and wakes the operations waiting for them.
#[tokio::test]
async fn cancelling_a_queued_operation_releases_its_lock_and_slot_and_wakes_the_waiters() {
    let w = World::new();
    let now = strato_domain::ports::Clock::now(&w.clock);
    let s = w.active().await;
    let cid = s.cluster.cluster_id.clone();
    let first = w
        .updated(cid.as_str(), json!({"variables": {"node_count": 4}}))
        .await;
    // The dispatcher took the lock and a slot for it; the operation is queued again (a redelivery).
    let LockOutcome::Acquired { fencing_token } = w
        .store
        .acquire_lock(&cid, &first.operation_id, time::Duration::hours(1), now)
        .await
        .unwrap()
    else {
        panic!("the lock is free");
    };
    let mut held = w.store.operation(&first.operation_id).unwrap();
    held.fencing_token = Some(fencing_token);
    w.store.put_operation(held);
    let tenant = caller().tenant;
    w.store.set_concurrency_limit(&tenant, 1);
    assert!(
        w.store
            .acquire_slot(&tenant, &first.operation_id, 1)
            .await
            .unwrap()
    );
    // Behind it: a second update on the same cluster, and another cluster's create parked on the slot.
    w.clock.advance(time::Duration::seconds(1));
    let second = w
        .updated(cid.as_str(), json!({"variables": {"node_count": 5}}))
        .await;
    let other = w.create("prod-us").await;
    let mut parked = w.store.operation(&other.operation.operation_id).unwrap();
    parked.wait_reason = Some(TENANT_LIMIT_REASON.into());
    w.store.put_operation(parked);
    let sent_before = w.jobs.sent().len();

    let out = w.cancel(&first.operation_id).await.unwrap();
    assert!(matches!(out, Cancelled::Now(_)), "{out:?}");
    assert_eq!(w.store.lock_holder(&cid), None, "the cluster lock is free");
    assert!(w.store.slots(&tenant).is_empty(), "the tenant slot is free");
    let woken: Vec<_> = w.woken_since(sent_before);
    assert!(woken.contains(&second.operation_id), "{woken:?}");
    assert!(woken.contains(&other.operation.operation_id), "{woken:?}");
}

#[tokio::test]
async fn cancelling_a_running_operation_only_requests_it() {
    let w = World::new();
    let s = w
        .cluster_in(ClusterState::Provisioning, OperationStatus::Running)
        .await;
    for _ in 0..2 {
        let out = w.cancel(&s.operation.operation_id).await.unwrap();
        assert!(matches!(out, Cancelled::Requested(_)), "{out:?}");
    }
    let op = w.store.operation(&s.operation.operation_id).unwrap();
    assert_eq!(op.status, OperationStatus::Running);
    assert!(op.cancel_requested);
    assert_eq!(
        w.store.cluster(&s.cluster.cluster_id).unwrap().state(),
        ClusterState::Provisioning
    );
}

#[tokio::test]
async fn another_tenants_operation_cannot_be_cancelled() {
    let w = World::new();
    let s = w.create("prod-eu").await;
    let other = Caller {
        tenant: "globex".parse().unwrap(),
        subject: Some("intruder".into()),
        ..caller()
    };
    let e = w
        .api()
        .cancel(&other, s.operation.operation_id.as_str())
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 404, "{e}");
    assert_eq!(
        w.store.operation(&s.operation.operation_id).unwrap().status,
        OperationStatus::Queued
    );
}

#[tokio::test]
async fn retrying_a_failed_cluster_creates_it_again() {
    let w = World::new();
    let failed = w.cluster_in(ClusterState::Failed, OperationStatus::Failed).await;
    let s = w
        .api()
        .retry(&caller(), failed.cluster.cluster_id.as_str())
        .await
        .unwrap();
    let op = w.store.operation(&s.operation.operation_id).unwrap();
    assert_ne!(op.operation_id, failed.operation.operation_id);
    assert_eq!(
        (op.kind, op.status),
        (OperationKind::Create, OperationStatus::Queued)
    );
    assert_eq!(op.attempt, failed.operation.attempt + 1);
    assert_eq!(op.spec.as_ref(), Some(&failed.cluster.spec));
    assert_eq!(w.jobs.sent().last().unwrap().job.operation_id, op.operation_id);
}

#[tokio::test]
async fn retrying_a_cluster_in_any_other_state_is_a_409() {
    for state in [
        ClusterState::Active,
        ClusterState::Pending,
        ClusterState::Deleting,
    ] {
        let w = World::new();
        let s = w.cluster_in(state, OperationStatus::Succeeded).await;
        let e = w
            .api()
            .retry(&caller(), s.cluster.cluster_id.as_str())
            .await
            .unwrap_err();
        assert!(conflict(e).contains(state.as_str()), "{state:?}");
        assert_eq!(w.store.operations().len(), 1, "{state:?}");
    }
    // FAILED but with an operation still open: not yet.
    let w = World::new();
    let s = w.cluster_in(ClusterState::Failed, OperationStatus::Queued).await;
    let e = w
        .api()
        .retry(&caller(), s.cluster.cluster_id.as_str())
        .await
        .unwrap_err();
    assert!(conflict(e).contains("already open"));
}

#[tokio::test]
async fn the_fake_catalog_lists_what_was_published() {
    let w = World::new();
    let versions: Vec<String> = w
        .templates
        .templates()
        .await
        .unwrap()
        .iter()
        .map(|t| t.version().to_owned())
        .collect();
    assert_eq!(versions, ["1.0.0", "1.1.0"]);
}

/// Issue 15 defect 2: `PATCH {variables: A}` then `PATCH {variables: B}` before the first ran used to build
/// the second from the last applied spec, so applying it reverted A. The second is built on the first's.
#[tokio::test]
async fn concurrent_updates_lose_no_changes_the_second_builds_on_the_pending_spec() {
    let w = World::new();
    let s = w.active().await;
    let id = s.cluster.cluster_id.as_str();
    let a = w.updated(id, json!({"variables": {"node_count": 5}})).await;
    w.clock.advance(time::Duration::seconds(1));
    let b = w
        .updated(id, json!({"variables": {"owner_email": "sre@example.com"}}))
        .await;
    let spec = w.store.operation(&b.operation_id).unwrap().spec.unwrap();
    assert_eq!(spec.variables["node_count"], json!(5), "A is kept");
    assert_eq!(
        spec.variables["owner_email"],
        json!("sre@example.com"),
        "B is applied"
    );
    // Once the first has ended, the newest spec is the second's.
    let mut done = w.store.operation(&a.operation_id).unwrap();
    done.status = OperationStatus::Succeeded;
    w.store.put_operation(done);
    w.clock.advance(time::Duration::seconds(1));
    let c = w.updated(id, json!({"variables": {"db_password": "x"}})).await;
    let spec = w.store.operation(&c.operation_id).unwrap().spec.unwrap();
    assert_eq!(spec.variables["node_count"], json!(5));
    assert_eq!(spec.variables["owner_email"], json!("sre@example.com"));
}

/// The pending spec is found even while the cluster index does not list the first update yet (it is named on
/// the cluster itself, read consistently).
#[tokio::test]
async fn the_pending_spec_is_found_while_the_index_lags() {
    let w = World::new();
    let s = w.active().await;
    let id = s.cluster.cluster_id.as_str();
    w.store.lag_index();
    w.api()
        .update(&caller(), id, patch(json!({"variables": {"node_count": 5}})))
        .await
        .unwrap();
    let b = w
        .updated(id, json!({"variables": {"owner_email": "sre@example.com"}}))
        .await;
    let spec = w.store.operation(&b.operation_id).unwrap().spec.unwrap();
    assert_eq!(spec.variables["node_count"], json!(5));
}

/// `If-Match` with the cluster's version: a stale one is a 412 that writes nothing; the current one (or `*`)
/// goes through, and the answer carries the new version.
#[tokio::test]
async fn if_match_with_a_stale_version_is_a_412_and_writes_nothing() {
    let w = World::new();
    let s = w.active().await;
    let id = s.cluster.cluster_id.as_str();
    let v = w.store.cluster(&s.cluster.cluster_id).unwrap().version;
    let stale = IfMatch::parse(&format!("\"{}\"", v + 1));
    let body = || patch(json!({"variables": {"node_count": 5}}));
    let e = w
        .api()
        .update_if(&caller(), id, body(), Some(&stale))
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 412, "{e}");
    assert!(e.to_string().contains(&format!("version {v}")), "{e}");
    assert_eq!(w.store.operations().len(), 1, "nothing was queued");
    assert_eq!(w.store.cluster(&s.cluster.cluster_id).unwrap().version, v);

    let current = IfMatch::parse(&format!("W/\"{v}\""));
    let out = w
        .api()
        .update_if(&caller(), id, body(), Some(&current))
        .await
        .unwrap();
    assert!(out.operation.is_some());
    assert!(out.cluster.version > v, "the answer has the new version");
    let any = IfMatch::parse("*");
    assert!(any.matches(7) && !IfMatch::parse("\"7\"").matches(8));
}

/// Issue 15 defect 8: two drift checks at once both queued, because the pending check read an eventually
/// consistent index. The second now loses the conditional write on the cluster (or finds the first's
/// operation named on it) and answers with the first check.
#[tokio::test]
async fn two_concurrent_drift_checks_queue_one_check() {
    let w = World::new();
    let s = w.active().await;
    let id = s.cluster.cluster_id.as_str();
    w.store.lag_index();
    let api = w.api();
    let who = caller();
    let (a, b) = tokio::join!(api.drift_check(&who, id), api.drift_check(&who, id));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.operation.operation_id, b.operation.operation_id);
    let checks = w
        .store
        .operations()
        .into_iter()
        .filter(|o| o.kind == OperationKind::DriftCheck)
        .count();
    assert_eq!(checks, 1);
}

/// The same for two retries of a FAILED cluster: one create is queued, the other retry is a 409 naming it.
#[tokio::test]
async fn two_concurrent_retries_queue_one_create() {
    let w = World::new();
    let s = w.cluster_in(ClusterState::Failed, OperationStatus::Failed).await;
    let id = s.cluster.cluster_id.as_str();
    w.store.lag_index();
    let api = w.api();
    let who = caller();
    let (a, b) = tokio::join!(api.retry(&who, id), api.retry(&who, id));
    let (ok, refused) = match (a, b) {
        (Ok(ok), Err(e)) | (Err(e), Ok(ok)) => (ok, e),
        other => panic!("one retry queues, the other is refused: {other:?}"),
    };
    assert!(conflict(refused).contains(ok.operation.operation_id.as_str()));
    let open = w
        .store
        .operations()
        .into_iter()
        .filter(|o| !o.status.is_terminal())
        .count();
    assert_eq!(open, 1);
}

/// What makes the two race-free: an operation is recorded only together with a conditional write on the
/// cluster as read, so a request deciding on a cluster another one changed meanwhile writes nothing.
#[tokio::test]
async fn an_operation_is_recorded_only_on_the_cluster_version_read() {
    let w = World::new();
    let s = w.active().await;
    let mut read = w.store.cluster(&s.cluster.cluster_id).unwrap();
    w.api()
        .drift_check(&caller(), s.cluster.cluster_id.as_str())
        .await
        .unwrap();
    let op = strato_domain::model::Operation::new(
        caller().tenant,
        read.cluster_id.clone(),
        OperationKind::DriftCheck,
        strato_domain::ports::Clock::now(&w.clock),
    );
    let e = w.store.add_operation_on(&mut read, &op).await.unwrap_err();
    assert!(matches!(e, strato_domain::Error::Conflict(_)), "{e}");
    assert!(w.store.operation(&op.operation_id).is_none());
}

/// Issue 15 defect 8: a state restore held the cluster lock and released it without waking the operation
/// parked behind it, which then waited for the sweeper. The release now wakes it; the restore itself goes
/// through the `StateArchive` port.
#[tokio::test]
async fn a_restore_releases_the_cluster_lock_and_wakes_the_waiter() {
    let w = World::new();
    let (cid, archive) = w.active_with_state(&["v1", "v2"]).await;
    // An update that found the lock taken by the restore and was parked behind it.
    let waiting = w
        .updated(cid.as_str(), json!({"variables": {"node_count": 4}}))
        .await;
    let sent_before = w.jobs.sent().len();

    let record = w.restore(&archive, &cid, "v1").await.unwrap();
    assert_eq!(
        (record.from_version.as_str(), record.new_version.as_str()),
        ("v1", "v1-restored")
    );
    assert_eq!(record.restored_by, "user-7f3a");
    assert_eq!(archive.restored().len(), 1);
    assert_eq!(w.store.lock_holder(&cid), None, "the lock is free again");
    let woken: Vec<_> = w.woken_since(sent_before);
    assert_eq!(
        woken,
        std::slice::from_ref(&waiting.operation_id),
        "the parked update is woken"
    );
    assert_eq!(w.store.cluster(&cid).unwrap().state_restores.len(), 1);

    // The current version, an unknown one, and a cluster an operation holds are refused; nothing restored.
    let e = w.restore(&archive, &cid, "v1-restored").await.unwrap_err();
    assert!(conflict(e).contains("already the current state"));
    let e = w.restore(&archive, &cid, "v9").await.unwrap_err();
    assert_eq!(e.status().as_u16(), 404);
    let now = strato_domain::ports::Clock::now(&w.clock);
    w.store
        .acquire_lock(&cid, &waiting.operation_id, time::Duration::hours(1), now)
        .await
        .unwrap();
    let e = w.restore(&archive, &cid, "v2").await.unwrap_err();
    assert!(conflict(e).contains(waiting.operation_id.as_str()));
    assert_eq!(archive.restored().len(), 1);
}

mod expiry;
mod history;
mod openapi;
mod state;

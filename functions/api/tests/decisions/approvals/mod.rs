//! Plan approvals in the API's decisions: who may decide, what a decision writes and sends, and how the
//! approval mode is resolved on create and PATCH.

use super::*;
use strato_domain::approval::{Approval, ApprovalMode, Verdict};
use strato_domain::approval_rules::Seen;
use strato_domain::ports::Clock;
use strato_fakes::saved_plan;

fn approver(subject: &str) -> Caller {
    Caller {
        subject: Some(subject.into()),
        ..caller()
    }
}

/// A create (requested by `user-7f3a`) that planned and now waits for an approver.
async fn awaiting(w: &World) -> Started {
    let s = w.create("prod-eu").await;
    parked_for_approval(w, s)
}

/// Operation `s` planned (the saved plan) and now waits two hours for an approver.
pub(super) fn parked_for_approval(w: &World, mut s: Started) -> Started {
    s.operation.status = OperationStatus::AwaitingApproval;
    s.operation.approval_required = true;
    s.operation.approval = Some(Approval::request(
        saved_plan(),
        None,
        w.clock.now(),
        time::Duration::hours(2),
    ));
    w.store.put_operation(s.operation.clone());
    s
}

#[tokio::test]
async fn another_principal_approves_and_the_decision_is_recorded_and_its_job_sent() {
    let w = World::new();
    let s = awaiting(&w).await;
    let before = w.jobs.sent().len();
    let id = s.operation.operation_id.to_string();
    let op = w
        .api()
        .decide_approval(
            &approver("lead-2"),
            &id,
            Verdict::Approved,
            Some("looks right".into()),
        )
        .await
        .unwrap();
    let stored = w.store.operation(&s.operation.operation_id).unwrap();
    let d = stored.approval.as_ref().unwrap().decision.as_ref().unwrap();
    assert_eq!((d.verdict, d.by.as_str()), (Verdict::Approved, "lead-2"));
    assert_eq!(d.comment.as_deref(), Some("looks right"));
    assert_eq!(op.approved_plan(), Some(&saved_plan()));
    // The dispatcher acts on it: one job, deduplicated per round.
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), before + 1);
    assert_eq!(sent.last().unwrap().job.operation_id, s.operation.operation_id);
    assert!(sent.last().unwrap().deduplication_id.ends_with("decision-1"));
    // A second decision is refused: the first one stands.
    let e = w
        .decide(&approver("lead-3"), &id, Verdict::Rejected)
        .await
        .unwrap_err();
    assert!(conflict(e).contains("already approved"));
}

#[tokio::test]
async fn the_requester_cannot_approve_their_own_but_may_reject_it() {
    let w = World::new();
    let s = awaiting(&w).await;
    let id = s.operation.operation_id.to_string();
    let e = w.decide(&caller(), &id, Verdict::Approved).await.unwrap_err();
    assert_eq!(e.status().as_u16(), 403);
    let (problem, _) = e.problem();
    assert!(problem.kind.ends_with("self-approval"), "{problem:?}");
    assert!(problem.detail.contains("another principal"), "{problem:?}");
    assert!(w.awaits_decision(&s));
    w.decide(&caller(), &id, Verdict::Rejected).await.unwrap();
    let stored = w.store.operation(&s.operation.operation_id).unwrap();
    assert_eq!(stored.approval.unwrap().verdict(), Some(Verdict::Rejected));
}

#[tokio::test]
async fn with_separation_off_the_requester_may_approve() {
    let w = World::new();
    let s = awaiting(&w).await;
    let api = Api {
        approval_separation: false,
        ..w.api()
    };
    api.decide_approval(
        &caller(),
        s.operation.operation_id.as_str(),
        Verdict::Approved,
        None,
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn only_an_operation_awaiting_approval_takes_a_decision_and_an_expired_one_none() {
    let w = World::new();
    let s = w.create("prod-eu").await;
    let e = w
        .decide(
            &approver("lead-2"),
            s.operation.operation_id.as_str(),
            Verdict::Approved,
        )
        .await
        .unwrap_err();
    assert!(conflict(e).contains("not awaiting approval"));
    let w = World::new();
    let s = awaiting(&w).await;
    w.clock.advance(time::Duration::hours(3));
    let e = w
        .decide(
            &approver("lead-2"),
            s.operation.operation_id.as_str(),
            Verdict::Approved,
        )
        .await
        .unwrap_err();
    assert!(conflict(e).contains("expired"));
    let long = "x".repeat(1_001);
    let e = w
        .api()
        .decide_approval(
            &approver("lead-2"),
            s.operation.operation_id.as_str(),
            Verdict::Rejected,
            Some(long),
        )
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 422);
}

#[tokio::test]
async fn cancelling_an_operation_awaiting_approval_is_its_decision() {
    let w = World::new();
    let s = awaiting(&w).await;
    let Cancelled::Requested(op) = w.cancel(&s.operation.operation_id).await.unwrap() else {
        panic!("no runner to stop: the dispatcher ends it")
    };
    assert_eq!(op.approval.unwrap().verdict(), Some(Verdict::Cancelled));
}

#[tokio::test]
async fn the_approval_mode_is_the_clusters_else_the_tenants_default() {
    let w = World::new();
    let mut body = spec_json("prod-eu");
    body["approval"] = json!("required");
    let s = w
        .api()
        .create(&caller(), serde_json::from_value::<SpecBody>(body).unwrap())
        .await
        .unwrap();
    assert_eq!(s.cluster.approval, Some(ApprovalMode::Required));
    assert!(
        w.store
            .operation(&s.operation.operation_id)
            .unwrap()
            .approval_required
    );

    // No mode on the cluster or its template: the tenant's default decides.
    let tenant = TENANT.parse().unwrap();
    w.store.set_approval_default(&tenant, ApprovalMode::Required);
    let s = w.create("staging").await;
    assert_eq!(s.cluster.approval, None);
    assert!(s.operation.approval_required);

    let mut bad = spec_json("qa");
    bad["approval"] = json!("sometimes");
    let e = w
        .api()
        .create(&caller(), serde_json::from_value::<SpecBody>(bad).unwrap())
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 422);
    assert!(format!("{e:?}").contains("approval"));
}

#[tokio::test]
async fn a_patch_of_the_approval_mode_alone_runs_nothing_and_later_updates_follow_it() {
    let w = World::new();
    let s = w.active().await;
    let id = s.cluster.cluster_id.to_string();
    let sent = w.jobs.sent().len();
    let u: Updated = w
        .api()
        .update(&caller(), &id, patch(json!({"approval": "required"})))
        .await
        .unwrap();
    assert!(u.operation.is_none());
    assert_eq!(w.jobs.sent().len(), sent, "a setting alone queues nothing");
    assert_eq!(
        w.store.cluster(&s.cluster.cluster_id).unwrap().approval,
        Some(ApprovalMode::Required)
    );
    let u = w
        .api()
        .update(&caller(), &id, patch(json!({"variables": {"node_count": 4}})))
        .await
        .unwrap();
    assert!(u.operation.unwrap().approval_required);
    // Taking the requirement back is an administrator's (a writer's is refused: see `governance`).
    let admin = Caller {
        scopes: vec![strato_api::scopes::Scope::Admin],
        ..approver("admin-1")
    };
    let u = w
        .api()
        .update(&admin, &id, patch(json!({"approval": null})))
        .await
        .unwrap();
    assert_eq!(u.cluster.approval, None);
}

#[tokio::test]
async fn a_decision_on_another_plan_than_the_one_pending_is_a_409_naming_the_pending_one() {
    let w = World::new();
    let s = awaiting(&w).await;
    let id = s.operation.operation_id.to_string();
    let pending = saved_plan();
    // The approver saw round 1; the runner planned again meanwhile (the state changed): round 2 waits.
    let mut op = w.store.operation(&s.operation.operation_id).unwrap();
    let mut replanned = pending.clone();
    replanned.plan_sha256 = "cd".repeat(32);
    let first = op.approval.clone();
    op.approval = Some(Approval::request(
        replanned,
        first.as_ref(),
        w.clock.now(),
        time::Duration::hours(2),
    ));
    w.store.put_operation(op);
    let seen = Seen {
        plan_sha256: Some(pending.plan_sha256.clone()),
        round: Some(1),
        stage: Some(pending.stage.clone()),
    };
    let before = w.jobs.sent().len();
    let e = w
        .api()
        .decide_seen(&approver("lead-2"), &id, Verdict::Approved, None, seen)
        .await
        .unwrap_err();
    assert_eq!(e.status().as_u16(), 409, "{e}");
    let (p, _) = e.problem();
    assert_eq!(p.kind, "urn:strato:problem:plan-changed");
    let now_pending = "cd".repeat(32);
    for part in [
        now_pending.as_str(),
        "round 2",
        &format!("stage {}", pending.stage),
    ] {
        assert!(p.detail.contains(part), "{part}: {}", p.detail);
    }
    assert_eq!(p.errors[0].field, "plan_sha256");
    assert!(w.awaits_decision(&s), "nothing decided");
    assert_eq!(w.jobs.sent().len(), before, "nothing sent");
    // Naming the pending plan decides it.
    let seen = Seen {
        plan_sha256: Some(now_pending),
        round: Some(2),
        stage: Some(pending.stage),
    };
    let op = w
        .api()
        .decide_seen(&approver("lead-2"), &id, Verdict::Approved, None, seen)
        .await
        .unwrap();
    assert_eq!(op.approval.unwrap().round, 2);
}

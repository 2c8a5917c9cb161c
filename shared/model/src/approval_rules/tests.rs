use super::*;
use crate::approval::*;
use crate::ids::{ClusterId, TenantId};
use crate::model::OperationKind;
use crate::plan::{PlanSummary, ResourceChange};
use time::Duration;

fn at(s: &str) -> OffsetDateTime {
    crate::ts::parse(s).unwrap()
}

fn plan() -> SavedPlan {
    SavedPlan {
        stage: "main".into(),
        summary: PlanSummary {
            add: 1,
            change: 0,
            destroy: 0,
        },
        changes: vec![ResourceChange {
            address: "aws_vpc.this".into(),
            actions: vec!["create".into()],
        }],
        plan_key: "plans/op/main.tfplan.sealed".into(),
        plan_sha256: "ab".repeat(32),
        state: None,
    }
}

fn awaiting() -> Operation {
    let mut op = Operation::new(
        "acme".parse::<TenantId>().unwrap(),
        ClusterId::generate(),
        OperationKind::Update,
        at("2026-11-25T10:00:00Z"),
    );
    op.requested_by = Some("alice".into());
    op.status = OperationStatus::AwaitingApproval;
    op.approval = Some(Approval::request(
        plan(),
        None,
        at("2026-11-25T10:05:00Z"),
        Duration::hours(1),
    ));
    op
}

#[test]
fn the_strictest_mode_wins_and_a_cluster_setting_cannot_lower_its_template_or_tenant() {
    use ApprovalMode::*;
    // A writer's `approval: auto` on the cluster does not switch off what the template or tenant require.
    assert_eq!(
        ApprovalMode::resolve(Some(Auto), Some(Required), Some(Required)),
        Required
    );
    assert_eq!(ApprovalMode::resolve(Some(Auto), None, Some(Required)), Required);
    assert_eq!(ApprovalMode::resolve(Some(Auto), Some(Required), None), Required);
    assert_eq!(ApprovalMode::resolve(None, Some(Auto), Some(Required)), Required);
    // It may add one.
    assert_eq!(
        ApprovalMode::resolve(Some(Required), Some(Auto), Some(Auto)),
        Required
    );
    assert_eq!(ApprovalMode::resolve(None, Some(Required), Some(Auto)), Required);
    assert_eq!(ApprovalMode::resolve(None, None, Some(Required)), Required);
    assert_eq!(ApprovalMode::resolve(Some(Auto), None, None), Auto);
    assert_eq!(ApprovalMode::resolve(None, None, None), Auto);
}

#[test]
fn a_cluster_setting_may_tighten_but_lowering_is_told_apart() {
    use ApprovalMode::*;
    use SettingChange::*;
    let judge = ApprovalMode::judge_change;
    assert_eq!(judge(None, Some(Required), None, None), Allowed);
    // No setting, kept: nothing to judge (a create without one under a tenant's requirement).
    assert_eq!(judge(None, None, None, Some(Required)), Allowed);
    assert_eq!(judge(Some(Auto), Some(Auto), Some(Required), None), Allowed);
    assert_eq!(judge(None, Some(Auto), None, None), Allowed);
    assert_eq!(judge(Some(Auto), None, None, None), Allowed);
    assert_eq!(judge(Some(Required), Some(Required), None, Some(Auto)), Allowed);
    // The cluster's own requirement taken back: a lowering (an administrator's to make).
    assert_eq!(
        judge(Some(Required), Some(Auto), None, Some(Auto)),
        Lowers {
            from: Some(Required),
            to: Some(Auto),
            applies: Auto
        }
    );
    assert_eq!(
        judge(Some(Required), None, Some(Required), None),
        Lowers {
            from: Some(Required),
            to: None,
            applies: Required
        }
    );
    // `auto` under a template's or tenant's requirement: nobody lowers that with a cluster setting.
    assert_eq!(
        judge(None, Some(Auto), Some(Required), None),
        BelowFloor { floor: Required }
    );
    assert_eq!(
        judge(Some(Required), Some(Auto), None, Some(Required)),
        BelowFloor { floor: Required }
    );
}

#[test]
fn a_decision_names_the_plan_it_saw_and_another_pending_one_is_refused() {
    let now = at("2026-11-25T10:30:00Z");
    let sha = "ab".repeat(32);
    let mut op = awaiting();
    let stale = Seen {
        plan_sha256: Some("cd".repeat(32)),
        round: Some(1),
        stage: Some("main".into()),
    };
    let refused = decide_seen(&mut op, Verdict::Approved, "bob", None, true, now, &stale).unwrap_err();
    assert_eq!(
        refused,
        Refusal::OtherPlan(Box::new(Pending {
            plan_sha256: sha.clone(),
            round: 1,
            stage: "main".into()
        }))
    );
    // What is pending now is named, for the approver to review.
    let text = refused.to_string();
    assert!(
        text.contains(&sha) && text.contains("round 1") && text.contains("stage main"),
        "{text}"
    );
    assert!(op.awaits_decision(), "a refused decision records nothing");
    for other in [
        Seen {
            round: Some(2),
            ..Seen::default()
        },
        Seen {
            stage: Some("addons".into()),
            ..Seen::default()
        },
    ] {
        assert!(matches!(
            decide_seen(&mut op, Verdict::Rejected, "bob", None, true, now, &other),
            Err(Refusal::OtherPlan(_))
        ));
    }
    let seen = Seen {
        plan_sha256: Some(sha),
        round: Some(1),
        stage: Some("main".into()),
    };
    decide_seen(&mut op, Verdict::Approved, "bob", None, true, now, &seen).unwrap();
    assert_eq!(op.approved_plan(), Some(&plan()));
}

#[test]
fn without_a_recorded_requester_separation_refuses_the_approval() {
    let now = at("2026-11-25T10:30:00Z");
    let mut op = awaiting();
    op.requested_by = None;
    assert_eq!(
        decide(&mut op, Verdict::Approved, "anonymous", None, true, now),
        Err(Refusal::UnknownRequester)
    );
    assert!(op.awaits_decision());
    decide(&mut op, Verdict::Rejected, "bob", None, true, now).unwrap();
}

#[test]
fn another_principal_approves_and_the_plan_becomes_the_approved_one() {
    let mut op = awaiting();
    assert!(op.awaits_decision());
    assert_eq!(op.approved_plan(), None);
    decide(
        &mut op,
        Verdict::Approved,
        "bob",
        Some("lgtm".into()),
        true,
        at("2026-11-25T10:30:00Z"),
    )
    .unwrap();
    assert_eq!(op.approved_plan(), Some(&plan()));
    assert!(!op.awaits_decision());
    let d = op.approval.as_ref().unwrap().decision.as_ref().unwrap();
    assert_eq!((d.by.as_str(), d.comment.as_deref()), ("bob", Some("lgtm")));
}

#[test]
fn the_requester_cannot_approve_their_own_when_separation_is_on_but_may_withdraw_it() {
    let mut op = awaiting();
    let now = at("2026-11-25T10:30:00Z");
    assert_eq!(
        decide(&mut op, Verdict::Approved, "alice", None, true, now),
        Err(Refusal::OwnRequest)
    );
    assert!(op.awaits_decision(), "a refused decision records nothing");
    let mut lax = awaiting();
    decide(&mut lax, Verdict::Approved, "alice", None, false, now).unwrap();
    decide(&mut op, Verdict::Rejected, "alice", None, true, now).unwrap();
    assert_eq!(op.approval.unwrap().verdict(), Some(Verdict::Rejected));
}

#[test]
fn a_decided_or_expired_or_unrequested_approval_takes_no_decision() {
    let now = at("2026-11-25T10:30:00Z");
    let mut op = awaiting();
    decide(&mut op, Verdict::Rejected, "bob", None, true, now).unwrap();
    assert_eq!(
        decide(&mut op, Verdict::Approved, "carol", None, true, now),
        Err(Refusal::AlreadyDecided(Verdict::Rejected))
    );
    let mut late = awaiting();
    assert!(matches!(
        decide(
            &mut late,
            Verdict::Approved,
            "bob",
            None,
            true,
            at("2026-11-25T11:05:00Z")
        ),
        Err(Refusal::Expired(_))
    ));
    // The scheduler still records the expiry after the deadline.
    decide(
        &mut late,
        Verdict::Expired,
        "strato:scheduler",
        None,
        true,
        at("2026-11-25T11:05:00Z"),
    )
    .unwrap();
    let mut running = awaiting();
    running.status = OperationStatus::Running;
    running.approval = None;
    assert_eq!(
        decide(&mut running, Verdict::Approved, "bob", None, true, now),
        Err(Refusal::NotAwaiting(OperationStatus::Running))
    );
}

#[test]
fn a_replan_asks_again_in_a_new_round() {
    let first = Approval::request(plan(), None, at("2026-11-25T10:05:00Z"), DEFAULT_APPROVAL_TTL);
    let second = Approval::request(
        plan(),
        Some(&first),
        at("2026-11-25T12:00:00Z"),
        DEFAULT_APPROVAL_TTL,
    );
    assert_eq!((first.round, second.round), (1, 2));
    assert_eq!(second.expires_at, at("2026-11-28T12:00:00Z"));
    assert_eq!(second.decision, None);
}

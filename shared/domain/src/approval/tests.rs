use super::*;
use crate::ids::{ClusterId, TenantId};
use crate::model::OperationKind;

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
fn the_mode_is_the_clusters_else_the_templates_else_the_tenants_else_auto() {
    use ApprovalMode::*;
    assert_eq!(
        ApprovalMode::resolve(Some(Auto), Some(Required), Some(Required)),
        Auto
    );
    assert_eq!(ApprovalMode::resolve(None, Some(Required), Some(Auto)), Required);
    assert_eq!(ApprovalMode::resolve(None, None, Some(Required)), Required);
    assert_eq!(ApprovalMode::resolve(None, None, None), Auto);
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

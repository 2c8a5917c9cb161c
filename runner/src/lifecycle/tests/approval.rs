//! Plan approvals: a plan that needs approval is sealed into the artifacts bucket and the run ends awaiting
//! approval; the run after the approval applies exactly that plan (its SHA-256 checked), unless the state
//! changed since, which plans again for a new approval.

use secrecy::ExposeSecret;
use serde_json::json;
use strato_domain::ErrorCategory;
use strato_domain::approval::{Approval, Decision, SavedPlan, StateStamp, Verdict};
use strato_domain::messages::RunnerEvent;
use strato_domain::model::OperationKind;
use strato_domain::sealed::{self, Envelope};

use super::support::{Bed, outputs, plans, vpc_plan};
use crate::fakes::{Cmd, FakeEngine, Reply};
use crate::lifecycle::approval::sha256_hex;
use crate::workspace::PLAN_FILE;

const PLAN: &[u8] = b"the plan the approver saw";

/// A request for `plan`'s approval made now, lasting `ttl`, that alice has approved.
fn approved_by_alice(plan: SavedPlan, ttl: time::Duration) -> Approval {
    let now = strato_domain::ts::now();
    let mut approval = Approval::request(plan, None, now, ttl);
    approval.decision = Some(Decision {
        verdict: Verdict::Approved,
        by: "alice".into(),
        at: now,
        comment: None,
    });
    approval
}

fn stamp(serial: u64) -> StateStamp {
    StateStamp {
        lineage: "5e1f".into(),
        serial,
    }
}

fn pulled(s: &StateStamp) -> Reply {
    Reply::json(&json!({"version": 4, "serial": s.serial, "lineage": s.lineage, "resources": []}))
}

/// An operation that needs approval.
async fn needing_approval(kind: OperationKind) -> Bed {
    let mut bed = Bed::new(kind, "net").await;
    bed.edit_op(|op| op.approval_required = true);
    bed
}

/// Seals `bytes` as the runner seals stage `main`'s plan, stores it, and records the approval of a plan
/// whose checksum is `approved_sha` made against `state`.
async fn approved(bed: &mut Bed, bytes: &[u8], approved_sha: &str, state: Option<StateStamp>) -> SavedPlan {
    let op = &bed.op;
    let aad = sealed::aad(&op.tenant_id, op.operation_id.as_str(), "plan:main");
    let ctx = sealed::KeyContext::new(&op.tenant_id, sealed::PURPOSE_PLAN);
    let env = sealed::seal(&bed.keys, &ctx, &aad, bytes).await.unwrap();
    let key = strato_terraform::artifacts::plan_key(&op.operation_id, "main", approved_sha);
    bed.sinks.insert(&key, serde_json::to_vec(&env).unwrap());
    let mut plan = strato_fakes::saved_plan();
    plan.plan_key = key;
    plan.plan_sha256 = approved_sha.to_owned();
    plan.state = state;
    let approval = approved_by_alice(plan.clone(), time::Duration::hours(1));
    bed.edit_op(|op| {
        op.approval_required = true;
        op.approval = Some(approval);
        op.attempt = 2;
    });
    plan
}

#[tokio::test]
async fn a_plan_that_needs_approval_is_sealed_and_the_run_ends_awaiting_approval() {
    let bed = needing_approval(OperationKind::Create).await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::changes(PLAN))
        .expect(Cmd::Show, Reply::json(&vpc_plan()))
        .expect(Cmd::StatePull, Reply::ok());
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), 0, "nothing applied");
    let RunnerEvent::AwaitingApproval { plan, .. } = event else {
        panic!("{event:#?}");
    };
    assert_eq!(plan.stage, "main");
    assert_eq!(plan.plan_sha256, sha256_hex(PLAN));
    assert_eq!(plan.state, None, "a first create has no state yet");
    assert_eq!(plan.summary.add, 2);
    assert_eq!(
        plan.changes
            .iter()
            .map(|c| c.address.as_str())
            .collect::<Vec<_>>(),
        ["aws_vpc.this", "aws_security_group.this"]
    );
    // Sealed with Strato's key, bound to the operation and stage: it opens only as that.
    let stored = bed
        .sinks
        .object(&plan.plan_key)
        .expect("the sealed plan is stored");
    assert!(!String::from_utf8_lossy(&stored).contains("the plan the approver saw"));
    let env: Envelope = serde_json::from_slice(&stored).unwrap();
    let aad = sealed::aad(&bed.op.tenant_id, bed.op.operation_id.as_str(), "plan:main");
    let ctx = sealed::KeyContext::new(&bed.op.tenant_id, sealed::PURPOSE_PLAN);
    let opened = sealed::open(&bed.keys, &env, &ctx, &aad).await.unwrap();
    assert_eq!(opened.expose_secret().as_slice(), PLAN);
    assert!(
        sealed::open(&bed.keys, &env, &ctx, &format!("{aad}x"))
            .await
            .is_err()
    );
    // Its data key is bound to the tenant and to plans: under another purpose it does not unwrap.
    let vars = sealed::KeyContext::new(&bed.op.tenant_id, sealed::PURPOSE_VARIABLES);
    assert!(sealed::open(&bed.keys, &env, &vars, &aad).await.is_err());
    // The operation is not over: its log stays open for the run that applies the plan.
    let complete = strato_terraform::artifacts::log_complete_key(&bed.op.operation_id);
    assert!(bed.sinks.object(&complete).is_none());
    assert!(
        !bed.steps().iter().any(|s| s == "cleanup"),
        "waiting is no failure"
    );
}

#[tokio::test]
async fn a_plan_without_changes_needs_no_approval() {
    let bed = needing_approval(OperationKind::Update).await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::no_changes())
        .expect(Cmd::Show, Reply::json(&json!({"resource_changes": []})))
        .expect(
            Cmd::Output,
            Reply::json(&outputs(&[("vpc_id", "vpc-1".into(), false)])),
        );
    let outputs = bed.run_to_success().await;
    bed.engine.assert_done();
    assert_eq!(outputs["vpc_id"], "vpc-1");
}

#[tokio::test]
async fn the_approved_plan_is_applied_when_the_state_is_unchanged() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    approved(&mut bed, PLAN, &sha256_hex(PLAN), Some(stamp(7))).await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::StatePull, pulled(&stamp(7)))
        .expect(Cmd::Apply, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(Cmd::Refresh, Reply::ok());
    bed.run_to_success().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Plan), 0, "the approved plan, not a new one");
    let apply = bed.engine.first(Cmd::Apply);
    assert_eq!(apply.args.last().map(String::as_str), Some(PLAN_FILE));
    assert!(bed.logged(&format!(
        "applying the approved plan (sha256 {})",
        sha256_hex(PLAN)
    )));
}

#[tokio::test]
async fn an_approved_plan_whose_checksum_differs_is_refused() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    // The stored plan is not the one approved.
    approved(&mut bed, b"another plan", &sha256_hex(PLAN), Some(stamp(7))).await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::StatePull, pulled(&stamp(7)));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), 0);
    assert_eq!(error.step, "approval");
    assert!(
        error.what.contains("refusing to apply it") && error.what.contains(&sha256_hex(PLAN)),
        "{}",
        error.what
    );
}

#[tokio::test]
async fn a_changed_state_plans_again_for_a_new_approval() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    approved(&mut bed, PLAN, &sha256_hex(PLAN), Some(stamp(7))).await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::StatePull, pulled(&stamp(8)))
        .expect(Cmd::Plan, Reply::changes(b"a fresh plan"))
        .expect(Cmd::Show, Reply::json(&vpc_plan()))
        .expect(Cmd::StatePull, pulled(&stamp(8)));
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), 0, "the stale plan is not applied");
    let RunnerEvent::AwaitingApproval { plan, .. } = event else {
        panic!("{event:#?}");
    };
    assert_eq!(plan.plan_sha256, sha256_hex(b"a fresh plan"));
    assert_eq!(plan.state, Some(stamp(8)));
    assert!(bed.logged("the state changed since the approved plan (serial 7 → 8)"));
}

#[tokio::test]
async fn an_engine_that_cannot_apply_saved_plans_cannot_take_approvals() {
    let mut bed = Bed::with_engine(OperationKind::Update, "net", FakeEngine::new("0.15.0-rc2")).await;
    bed.edit_op(|op| op.approval_required = true);
    bed.engine.expect(Cmd::Init, Reply::ok());
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration);
    assert_eq!(error.step, "approval");
    assert!(error.fix.contains("approval"), "{}", error.fix);
}

#[tokio::test]
async fn a_plan_that_needs_approval_is_still_held_to_the_budget() {
    let bed = needing_approval(OperationKind::Update).await;
    bed.store.set_monthly_budget(&bed.op.tenant_id, 10.0);
    plans(
        &bed.engine,
        "main",
        &super::support::plan(&[("aws_eks_cluster.this", "aws_eks_cluster", "create")]),
    );
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::Quota);
    assert!(
        bed.sinks.keys().iter().all(|k| !k.starts_with("plans/")),
        "nothing sealed"
    );
}

/// What a stage directory holds besides the run's credentials file: everything the engine may record in
/// a saved plan (the backend block above all). None of it may carry a credential.
fn stage_files_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    text
}

#[tokio::test]
async fn a_saved_plan_records_no_credential_and_its_approved_apply_uses_the_new_runs_session() {
    let mut bed = needing_approval(OperationKind::Update).await;
    let planned_with = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = planned_with.clone();
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(
            Cmd::Plan,
            Reply::changes(PLAN).on_start(move |dir| *seen.lock().unwrap() = stage_files_text(dir)),
        )
        .expect(Cmd::Show, Reply::json(&vpc_plan()))
        .expect(Cmd::StatePull, pulled(&stamp(7)));
    let event = bed.run().await.unwrap().final_event;
    let RunnerEvent::AwaitingApproval { plan, .. } = event else {
        panic!("{event:#?}");
    };
    // The planning run's sessions: 1 the engine role's, 2 the state role's.
    let recorded = planned_with.lock().unwrap().clone();
    for secret in ["ASIAFAKE", "fake-secret-key", "fake-session-token"] {
        assert!(
            !recorded.contains(secret),
            "what a saved plan records holds a credential ({secret}): {recorded}"
        );
    }
    assert!(
        recorded.contains("strato-state"),
        "the backend's profile: {recorded}"
    );

    // Approved (hours later, the planning run's sessions long expired): the next run applies that plan
    // with sessions of its own, which the plan's backend profile resolves to.
    let approval = approved_by_alice(plan, time::Duration::hours(72));
    bed.edit_op(|op| {
        op.approval = Some(approval);
        op.attempt = 2;
    });
    let applied_with = std::sync::Arc::new(std::sync::Mutex::new(Default::default()));
    let seen = applied_with.clone();
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::StatePull, pulled(&stamp(7)))
        .expect(
            Cmd::Apply,
            Reply::ok().on_start(move |dir| {
                *seen.lock().unwrap() = (super::support::credential_profiles(dir), stage_files_text(dir))
            }),
        )
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(Cmd::Refresh, Reply::ok());
    let event = bed.run().await.unwrap().final_event;
    assert!(matches!(event, RunnerEvent::Succeeded { .. }), "{event:#?}");
    bed.engine.assert_done();
    let (profiles, files) = applied_with.lock().unwrap().clone();
    let roles: Vec<String> = bed.cloud.sessions().into_iter().map(|s| s.role_arn).collect();
    assert_eq!(
        roles[2..],
        [super::support::ENGINE_ROLE, super::support::STATE_ROLE]
    );
    assert_eq!(profiles["strato-engine"], "ASIAFAKE0003", "{profiles:?}");
    assert_eq!(profiles["strato-state"], "ASIAFAKE0004", "{profiles:?}");
    assert!(!files.contains("ASIAFAKE"), "{files}");
}

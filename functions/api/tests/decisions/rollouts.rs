//! A rollout's runs started by the api's own decisions (on the fakes): each member's plan and update is
//! recorded under the operation id the rollout saved, as the plan-only operation and the ordinary update
//! a person would queue; an effect carried out twice starts one run; a cluster that cannot be updated is
//! the member's failure, which pauses an apply rollout.

use super::*;
use strato_api::rollout_runs::DecideRuns;
use strato_domain::ids::ClusterId;
use strato_rollout::effects::carry_out;
use strato_rollout::fake::FakeRollouts;
use strato_rollout::machine::{Input, MemberStatus, PauseReason, Phase, PlanFindings, Rollout};
use strato_rollout::store::{Owner, Record, RolloutId, RolloutStore, apply};

/// An ACTIVE cluster named `name` (its create ended), on `api-test` 1.0.0.
async fn active(w: &World, name: &str) -> ClusterId {
    let mut s = w.create(name).await;
    s.cluster = s.cluster.clone().in_state(ClusterState::Active);
    w.store.put_cluster(s.cluster.clone());
    s.operation.status = OperationStatus::Succeeded;
    w.store.put_operation(s.operation.clone());
    s.cluster.cluster_id
}

fn record(clusters: &[ClusterId], plan: Value) -> Record {
    let fleet: Vec<_> = clusters
        .iter()
        .map(|c| (TENANT.parse().unwrap(), c.clone(), "1.0.0".to_owned()))
        .collect();
    Record {
        id: RolloutId::generate(),
        owner: Owner::Tenant {
            tenant: TENANT.parse().unwrap(),
        },
        template: "api-test".into(),
        to_version: "1.1.0".into(),
        created_by: "lead-ops".into(),
        created_at: 0,
        rollout: Rollout::new(serde_json::from_value(plan).unwrap(), fleet).unwrap(),
        version: 0,
    }
}

#[tokio::test]
async fn a_preview_queues_each_members_plan_under_the_saved_id_once() {
    let w = World::new();
    let clusters = [active(&w, "one-eu").await, active(&w, "two-eu").await];
    let rollouts = FakeRollouts::default();
    let mut r = record(&clusters, json!({"mode": "preview"}));
    let effects = r.rollout.start();
    rollouts.create(&r).await.unwrap();
    let runs = DecideRuns { api: w.api() };
    let sent = w.jobs.sent().len();
    let r = carry_out(&rollouts, &runs, r, effects.clone(), 1).await.unwrap();
    assert_eq!(w.jobs.sent().len(), sent + 2);
    for m in &r.rollout.members {
        let MemberStatus::Planning { operation } = &m.status else {
            panic!("{:?}", m.status)
        };
        let op = w
            .store
            .operation(operation)
            .expect("recorded under the rollout's id");
        assert_eq!(op.kind, OperationKind::Plan);
        assert_eq!(op.cluster_id, m.cluster);
        assert_eq!(op.spec.as_ref().unwrap().template.version, "1.1.0");
        assert_eq!(op.requested_by.as_deref(), Some("lead-ops"));
        // A plan changes nothing of the cluster.
        assert_eq!(
            w.store.cluster(&m.cluster).unwrap().spec.template.version,
            "1.0.0"
        );
    }
    // The same effects again (a retried invocation): no second run.
    carry_out(&rollouts, &runs, r, effects, 2).await.unwrap();
    assert_eq!(w.jobs.sent().len(), sent + 2);
}

#[tokio::test]
async fn a_planned_member_is_updated_by_an_ordinary_update_and_a_failed_cluster_pauses_the_rollout() {
    let w = World::new();
    let good = active(&w, "good-eu").await;
    let bad = active(&w, "bad-eu").await;
    let rollouts = FakeRollouts::default();
    let mut r = record(
        &[good.clone(), bad.clone()],
        json!({"mode": "apply", "waves": [{"percent": 100}]}),
    );
    let effects = r.rollout.start();
    rollouts.create(&r).await.unwrap();
    let runs = DecideRuns { api: w.api() };
    let r = carry_out(&rollouts, &runs, r, effects, 1).await.unwrap();
    let planning =
        |r: &Record, c: &ClusterId| match &r.rollout.members.iter().find(|m| &m.cluster == c).unwrap().status
        {
            MemberStatus::Planning { operation } => operation.clone(),
            s => panic!("{s:?}"),
        };
    let (good_plan, bad_plan) = (planning(&r, &good), planning(&r, &bad));

    // The good cluster's plan ends: its update is an ordinary update operation to the new version.
    let (saved, effects) = apply(
        &rollouts,
        &r.id,
        Input::Planned {
            cluster: good.clone(),
            operation: good_plan,
            findings: PlanFindings::default(),
        },
        2,
    )
    .await
    .unwrap()
    .unwrap();
    let r = carry_out(&rollouts, &runs, saved, effects, 2).await.unwrap();
    let m = r.rollout.members.iter().find(|m| m.cluster == good).unwrap();
    let MemberStatus::Upgrading { operation, .. } = &m.status else {
        panic!("{:?}", m.status)
    };
    let op = w.store.operation(operation).unwrap();
    assert_eq!(op.kind, OperationKind::Update);
    assert_eq!(op.spec.as_ref().unwrap().template.version, "1.1.0");

    // The other cluster fails meanwhile; its plan ends, and its update cannot be queued: the member fails
    // with the reason the api gives, and the rollout pauses naming it.
    let c = w.store.cluster(&bad).unwrap().in_state(ClusterState::Failed);
    w.store.put_cluster(c);
    let (saved, effects) = apply(
        &rollouts,
        &r.id,
        Input::Planned {
            cluster: bad.clone(),
            operation: bad_plan,
            findings: PlanFindings::default(),
        },
        3,
    )
    .await
    .unwrap()
    .unwrap();
    let r = carry_out(&rollouts, &runs, saved, effects, 3).await.unwrap();
    let Phase::Paused {
        reason: PauseReason::Failure { cluster, reason },
        ..
    } = &r.rollout.phase
    else {
        panic!("{:?}", r.rollout.phase)
    };
    assert_eq!(cluster, &bad);
    assert!(reason.contains("FAILED"), "{reason}");
    assert_eq!(rollouts.load(&r.id).await.unwrap().unwrap(), r);
}

/// The plan operation `op` as the runner's success leaves it: succeeded, with a preview of `counts`.
fn plan_ended(w: &World, op: &strato_domain::ids::OperationId) -> strato_domain::model::Operation {
    use strato_domain::cost::CostEstimate;
    use strato_domain::preview::{CostDifference, PolicyResults, Preview, PreviewCounts};
    let mut op = w.store.operation(op).unwrap();
    op.status = OperationStatus::Succeeded;
    op.preview = Some(Preview {
        changes: Vec::new(),
        counts: PreviewCounts::default(),
        cost: CostDifference::between(&CostEstimate::empty(), &CostEstimate::empty()),
        policy: PolicyResults {
            version: "sha256:0".into(),
            denied: Vec::new(),
            warnings: Vec::new(),
        },
    });
    w.store.put_operation(op.clone());
    op
}

#[tokio::test]
async fn an_ended_plan_through_the_queue_starts_the_members_update_once() {
    use strato_rollout::feed::{Consumed, consume, outcome_message};
    let w = World::new();
    let c = active(&w, "fleet-eu").await;
    let rollouts = FakeRollouts::default();
    let mut r = record(
        std::slice::from_ref(&c),
        json!({"mode": "apply", "waves": [{"percent": 100}]}),
    );
    let effects = r.rollout.start();
    rollouts.create(&r).await.unwrap();
    let runs = DecideRuns { api: w.api() };
    let r = carry_out(&rollouts, &runs, r, effects, 1).await.unwrap();
    let MemberStatus::Planning { operation } = &r.rollout.members[0].status else {
        panic!("{:?}", r.rollout.members[0].status)
    };

    // What the status function sends when the plan ends, as the queue carries it to the api.
    let ended = plan_ended(&w, operation);
    let message = outcome_message(&rollouts, &ended)
        .await
        .unwrap()
        .expect("a member's plan");
    let body = serde_json::to_string(&message).unwrap();
    let sent = w.jobs.sent().len();
    let Consumed::Applied(r) = consume(&rollouts, &runs, &body, 2).await else {
        panic!("not applied")
    };
    let MemberStatus::Upgrading { operation, .. } = &r.rollout.members[0].status else {
        panic!("{:?}", r.rollout.members[0].status)
    };
    let update = w
        .store
        .operation(operation)
        .expect("the update, under the rollout's id");
    assert_eq!(update.kind, OperationKind::Update);
    assert_eq!(update.spec.as_ref().unwrap().template.version, "1.1.0");
    assert_eq!(w.jobs.sent().len(), sent + 1);

    // Delivered again: nothing new starts.
    assert!(matches!(
        consume(&rollouts, &runs, &body, 3).await,
        Consumed::Applied(_)
    ));
    assert_eq!(w.jobs.sent().len(), sent + 1);
    // Unreadable: dropped, never retried.
    assert!(matches!(
        consume(&rollouts, &runs, "{\"rollout_id\":", 4).await,
        Consumed::Dropped(_)
    ));
}

//! A preview's (`plan` operation's) end: its result recorded on the operation, the cluster left exactly as it
//! was (spec, state, outputs, drift flag), its lock and slot handed on like any operation's.

use super::*;
use strato_domain::cost::CostEstimate;
use strato_domain::preview::{CostDifference, PolicyResults, Preview, PreviewCounts};

fn preview() -> Preview {
    let mut p = Preview {
        changes: Vec::new(),
        counts: PreviewCounts::default(),
        cost: CostDifference::between(&CostEstimate::empty(), &CostEstimate::empty()),
        policy: PolicyResults {
            version: "sha256:0".into(),
            denied: vec!["tenant/no-vpc: aws_vpc.x: VPCs need an exception".into()],
            warnings: Vec::new(),
        },
    };
    p.add_changes(
        "cluster",
        &[ResourceChange {
            address: "module.k8s.aws_eks_node_group.default".into(),
            actions: vec!["update".into()],
        }],
    );
    p
}

#[tokio::test]
async fn a_preview_is_recorded_on_its_operation_and_leaves_the_cluster_as_it_was() {
    let w = world();
    let c = w.cluster_in("prod", ClusterState::Active);
    let mut cluster = w.cluster(&c);
    cluster.outputs = serde_json::from_value(serde_json::json!({"endpoint": "https://k8s.example"})).unwrap();
    cluster.drift.drifted = true;
    w.store.put_cluster(cluster);
    let before = w.cluster(&c);
    let run = w.start(&c, OperationKind::Plan).await;
    let next = w.parked(&c, cluster_busy_reason(&run.op));

    // A runner's success carries outputs too (none for a plan, but nothing here may apply them).
    let ev = runner(RunnerEvent::Succeeded {
        operation_id: run.op.clone(),
        fencing_token: run.token,
        outputs: BTreeMap::from([("endpoint".to_owned(), serde_json::json!("https://other"))]),
        drift: None,
        estimate: None,
        preview: Some(Box::new(preview())),
        state: None,
        at: w.clock.now(),
    });
    assert!(w.deliver_one(ev, 1).await);

    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Succeeded);
    assert_eq!(op.preview, Some(preview()));
    let after = w.cluster(&c);
    assert_eq!(after.state(), ClusterState::Active);
    assert_eq!(after.spec, before.spec);
    assert_eq!(after.outputs, before.outputs);
    assert_eq!(
        after.drift, before.drift,
        "a preview neither sets nor clears the drift flag"
    );
    assert!(!w.holds_anything(&c, &run), "lock and slot released");
    assert_eq!(
        w.woken(),
        vec![next.operation_id],
        "the next operation on the cluster"
    );
    assert!(w.rollout_queue.sent().is_empty(), "the cluster is in no rollout");
}

/// An active rollout holding `c` (its own runs not started: the status function only asks who holds it).
async fn rollout_of(w: &World, c: &ClusterId) -> strato_rollout::store::RolloutId {
    use strato_rollout::store::{Owner, Record, RolloutId, RolloutStore};
    let plan = serde_json::from_value(serde_json::json!({"mode": "preview"})).unwrap();
    let r = Record {
        id: RolloutId::generate(),
        owner: Owner::Platform,
        template: "t".into(),
        to_version: "2.0.0".into(),
        created_by: "ops".into(),
        created_at: 0,
        rollout: strato_rollout::Rollout::new(plan, vec![(w.tenant.clone(), c.clone(), "1.0.0".into())])
            .unwrap(),
        version: 0,
    };
    w.rollouts.create(&r).await.unwrap();
    r.id
}

fn plan_succeeded(w: &World, run: &Run) -> String {
    runner(RunnerEvent::Succeeded {
        operation_id: run.op.clone(),
        fencing_token: run.token,
        outputs: BTreeMap::new(),
        drift: None,
        estimate: None,
        preview: Some(Box::new(preview())),
        state: None,
        at: w.clock.now(),
    })
}

#[tokio::test]
async fn a_rollout_members_ended_plan_is_sent_to_its_rollout_and_a_lost_send_fails_nothing() {
    let w = world();
    let c = w.cluster_in("fleet-1", ClusterState::Active);
    let rollout = rollout_of(&w, &c).await;
    let run = w.start(&c, OperationKind::Plan).await;
    assert!(w.deliver_one(plan_succeeded(&w, &run), 1).await);
    let sent = w.rollout_queue.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].rollout_id, rollout);
    let strato_rollout::Input::Planned {
        cluster,
        operation,
        findings,
    } = &sent[0].input
    else {
        panic!("{:?}", sent[0].input)
    };
    assert_eq!((cluster, operation), (&c, &run.op));
    assert_eq!(findings.denied.len(), 1, "the preview's findings travel with it");

    // The queue down: the end is still saved and handed on; the input is lost (counted, logged).
    let c2 = w.cluster_in("fleet-2", ClusterState::Active);
    rollout_of(&w, &c2).await;
    let run2 = w.start(&c2, OperationKind::Plan).await;
    w.rollout_queue.fail(true);
    assert!(w.deliver_one(plan_succeeded(&w, &run2), 1).await);
    assert_eq!(w.op(&run2.op).status, OperationStatus::Succeeded);
    assert!(!w.holds_anything(&c2, &run2));
    assert_eq!(w.rollout_queue.sent().len(), 1);
}

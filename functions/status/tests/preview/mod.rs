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
}

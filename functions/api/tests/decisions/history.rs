//! A cluster's history grows with every drift check (4-24 a day): the api's decisions read what is open on
//! the cluster (and, for a retry, a bounded number of its newest operations), never the whole history.

use strato_domain::model::{ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::Clock;
use time::Duration;

use super::{World, caller, patch};
use serde_json::json;

/// `n` finished drift checks on the cluster, each a second after the previous, before now.
fn long_history(w: &World, cluster: &strato_domain::model::Cluster, n: i64) {
    let t0 = w.clock.now() - Duration::days(30);
    for i in 0..n {
        let mut op = Operation::new(
            cluster.tenant_id.clone(),
            cluster.cluster_id.clone(),
            OperationKind::DriftCheck,
            t0 + Duration::seconds(i),
        );
        op.status = OperationStatus::Succeeded;
        w.store.put_operation(op);
    }
}

#[tokio::test]
async fn updates_and_a_delete_read_only_what_is_open_however_long_the_history() {
    let w = World::new();
    let s = w.active().await;
    let id = s.cluster.cluster_id.as_str().to_owned();
    long_history(&w, &s.cluster, 2_000);
    let before = w.store.operations_listed();
    let updated = w
        .api()
        .update(&caller(), &id, patch(json!({"variables": {"node_count": 5}})))
        .await
        .unwrap();
    updated.operation.expect("an update");
    // A second PATCH while the first is open builds on it, still without reading the history.
    let again = w
        .api()
        .update(&caller(), &id, patch(json!({"variables": {"max_nodes": 10}})))
        .await
        .unwrap();
    let spec = again.operation.expect("a second update").spec.unwrap();
    assert_eq!(spec.variables["node_count"], json!(5), "built on the open update");
    w.api().delete(&caller(), &id).await.unwrap();
    let read = w.store.operations_listed() - before;
    assert!(
        read <= 10,
        "two updates and a delete read {read} operation records of a 2,001-operation history"
    );
}

#[tokio::test]
async fn a_retry_counts_its_attempt_from_the_newest_creates_only() {
    let w = World::new();
    let s = w.cluster_in(ClusterState::Failed, OperationStatus::Failed).await;
    long_history(&w, &s.cluster, 1_000);
    let before = w.store.operations_listed();
    let retried = w
        .api()
        .retry(&caller(), s.cluster.cluster_id.as_str())
        .await
        .unwrap();
    assert_eq!(retried.operation.kind, OperationKind::Create);
    let read = w.store.operations_listed() - before;
    assert!(read <= 100, "a retry read {read} operation records");
}

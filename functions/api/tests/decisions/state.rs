//! State versions of a cluster whose state is in the customer's own storage. The api holds no credentials
//! of it, so the list is the one the cluster's last run reported (with where and by which run), and a
//! restore queues a `restore-state` operation whose run copies the version back; Strato's own bucket is
//! neither read nor written for such a cluster.

use strato_api::ApiError;
use strato_api::decide::{CustomerState, Started};
use strato_domain::ids::ClusterId;
use strato_domain::model::{
    ClusterState, CustomerStateListing, ListedStateVersion, OperationKind, OperationStatus, Target,
};
use strato_fakes::FakeStateArchive;

use super::{TENANT, World, caller, conflict};

impl World {
    /// The caller's view of cluster `cid`'s state in the customer's storage (`None`: in Strato's bucket).
    async fn customer_state(&self, cid: &ClusterId) -> Option<CustomerState> {
        self.api().customer_state(&caller(), cid.as_str()).await.unwrap()
    }

    /// The caller's restore of cluster `cid`'s state in the customer's storage to `version`.
    async fn restore_customer_state(
        &self,
        cid: &ClusterId,
        version: &str,
    ) -> Result<Option<Started>, ApiError> {
        self.api()
            .restore_customer_state(&caller(), cid.as_str(), version)
            .await
    }
}

fn spaces() -> Target {
    serde_json::from_value::<Target>(serde_json::json!(
        {"provider": "digitalocean", "state_bucket": "acme-tf", "state_region": "fra1"}
    ))
    .unwrap()
}

fn version(key: &str, id: &str, latest: bool) -> ListedStateVersion {
    ListedStateVersion {
        key: key.to_owned(),
        version_id: id.to_owned(),
        last_modified: None,
        size: 42,
        is_latest: latest,
    }
}

#[tokio::test]
async fn a_customers_state_is_listed_from_the_last_runs_report_and_a_restore_is_queued_as_an_operation() {
    let w = World::new();
    let s = w.cluster_in(ClusterState::Failed, OperationStatus::Failed).await;
    let cid = s.cluster.cluster_id.clone();
    let key = format!("tenants/{TENANT}/clusters/{cid}/main.tfstate");
    let archive = FakeStateArchive::default();
    archive.put(&cid, &key, "in-stratos-bucket");
    let mut c = w.store.cluster(&cid).unwrap();
    c.spec.target = Some(spaces());
    w.store.put_cluster(c);

    // Before any run listed: no versions, and where the state is with the command to list it there.
    let cs = w.customer_state(&cid).await.expect("the customer's storage");
    assert_eq!(
        cs.storage,
        "bucket acme-tf at https://fra1.digitaloceanspaces.com"
    );
    assert!(cs.listing.is_none());
    assert!(
        cs.list_yourself
            .contains(&format!("--prefix tenants/{TENANT}/clusters/{cid}/")),
        "{}",
        cs.list_yourself
    );
    // Nothing listed yet: no version can be restored (404, saying how to list).
    let e = w.restore_customer_state(&cid, "v1").await.unwrap_err();
    assert_eq!(e.status().as_u16(), 404, "{e}");
    assert!(e.to_string().contains("state-versions"), "{e}");

    // A run's report on the cluster: listed as is.
    let run = s.operation.operation_id.clone();
    let mut c = w.store.cluster(&cid).unwrap();
    c.customer_state = Some(CustomerStateListing {
        storage: cs.storage.clone(),
        versions: vec![version(&key, "v2", true), version(&key, "v1", false)],
        listed_at: strato_domain::ts::now(),
        operation_id: run.clone(),
    });
    w.store.put_cluster(c);
    let cs = w.customer_state(&cid).await.unwrap();
    let listing = cs.listing.unwrap();
    assert_eq!(listing.operation_id, run);
    assert_eq!(listing.versions.len(), 2);

    // An unknown version: 404; the current one: 409.
    let e = w.restore_customer_state(&cid, "v9").await.unwrap_err();
    assert_eq!(e.status().as_u16(), 404, "{e}");
    let e = w.restore_customer_state(&cid, "v2").await.unwrap_err();
    assert!(conflict(e).contains("already the current state of stage 'main'"));

    // An older one: a restore-state operation with the chosen key and version, queued; the FAILED
    // cluster stays FAILED, and Strato's bucket is not touched.
    let sent_before = w.jobs.sent().len();
    let started = w
        .restore_customer_state(&cid, "v1")
        .await
        .unwrap()
        .expect("queued");
    let op = &started.operation;
    assert_eq!(op.kind, OperationKind::RestoreState);
    assert_eq!(op.status, OperationStatus::Queued);
    let chosen = op.restore.clone().unwrap();
    assert_eq!(
        (chosen.key.as_str(), chosen.version_id.as_str()),
        (key.as_str(), "v1")
    );
    assert_eq!(op.requested_by.as_deref(), Some("user-7f3a"));
    assert!(w.store.operation(&op.operation_id).is_some());
    let sent: Vec<_> = w.woken_since(sent_before);
    assert_eq!(sent, std::slice::from_ref(&op.operation_id));
    assert_eq!(w.store.cluster(&cid).unwrap().state(), ClusterState::Failed);
    assert!(archive.restored().is_empty());
}

#[tokio::test]
async fn a_restore_in_the_customers_storage_waits_for_a_cluster_being_changed_to_settle() {
    let w = World::new();
    let s = w
        .cluster_in(ClusterState::Updating, OperationStatus::Running)
        .await;
    let cid = s.cluster.cluster_id.clone();
    let key = format!("tenants/{TENANT}/clusters/{cid}/main.tfstate");
    let mut c = w.store.cluster(&cid).unwrap();
    c.spec.target = Some(spaces());
    c.customer_state = Some(CustomerStateListing {
        storage: "s".into(),
        versions: vec![version(&key, "v2", true), version(&key, "v1", false)],
        listed_at: strato_domain::ts::now(),
        operation_id: s.operation.operation_id.clone(),
    });
    w.store.put_cluster(c);
    let e = w.restore_customer_state(&cid, "v1").await.unwrap_err();
    assert!(conflict(e).contains("ACTIVE or FAILED"));
}

#[tokio::test]
async fn a_cluster_with_its_state_in_stratos_bucket_is_restored_by_the_api_itself() {
    let w = World::new();
    let s = w.active().await;
    let cid = s.cluster.cluster_id.clone();
    assert!(w.customer_state(&cid).await.is_none());
    assert!(w.restore_customer_state(&cid, "v1").await.unwrap().is_none());
}

//! State versions of a cluster whose state is in the customer's own storage: Strato keeps no credentials
//! for it between runs, so the api says where the state is and how to list its versions there — never an
//! empty list read from Strato's bucket, which would read as "no state".

use strato_domain::model::Target;

use super::{TENANT, World, caller, conflict};

#[tokio::test]
async fn a_cluster_with_its_state_in_the_customers_bucket_is_pointed_there() {
    let w = World::new();
    let (cid, archive) = w.active_with_state(&["v1"]).await;
    // In Strato's bucket: listed.
    let (_, versions) = w
        .api()
        .state_versions(&archive, &caller(), cid.as_str())
        .await
        .unwrap();
    assert_eq!(versions.len(), 1);
    // In the tenant's Spaces bucket: a 409 naming the bucket and the command, for a list and a restore.
    let mut c = w.store.cluster(&cid).unwrap();
    c.spec.target = Some(
        serde_json::from_value::<Target>(serde_json::json!(
            {"provider": "digitalocean", "state_bucket": "acme-tf", "state_region": "fra1"}
        ))
        .unwrap(),
    );
    w.store.put_cluster(c);
    let e = w
        .api()
        .state_versions(&archive, &caller(), cid.as_str())
        .await
        .unwrap_err();
    let said = conflict(e);
    assert!(
        said.contains("acme-tf at https://fra1.digitaloceanspaces.com"),
        "{said}"
    );
    assert!(
        said.contains(&format!("--prefix tenants/{TENANT}/clusters/{cid}/")),
        "{said}"
    );
    let e = w.restore(&archive, &cid, "v1").await.unwrap_err();
    assert!(conflict(e).contains("not in Strato's bucket"));
    assert!(archive.restored().is_empty());
}

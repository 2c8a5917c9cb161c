//! State versions in the tenant's own storage, through the public API: every run lists them at its end
//! (`GET …/state-versions` answers the last run's list and says which run), and a restore is a
//! `restore-state` operation (202) whose run copies the chosen version back natively. Used by the GCS and
//! S3-compatible legs of `devstack_clouds` (the storage's own reader checks the bytes).

use std::time::Duration;

use serde_json::{Value, json};
use strato_devstack::client::Client;

const OP_TIMEOUT: Duration = Duration::from_secs(300);

/// `GET …/state-versions`: 200 from the tenant's storage named by `storage`, listed by a run (operation
/// `by`, when given), with at least `min` versions; the answer.
pub(crate) async fn listed_by(
    api: &Client,
    cluster: &str,
    storage: &str,
    by: Option<&str>,
    min: usize,
) -> Value {
    let r = api
        .get(&format!("/v1/clusters/{cluster}/state-versions"))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let source = &r.body["source"];
    assert!(
        source["storage"].as_str().unwrap_or_default().contains(storage),
        "{}",
        r.text
    );
    match by {
        Some(by) => assert_eq!(source["operation_id"], by, "listed by the last run: {}", r.text),
        None => assert!(source["operation_id"].is_string(), "listed by a run: {}", r.text),
    }
    let items = r.body["items"].as_array().cloned().unwrap_or_default();
    assert!(items.len() >= min, "at least {min} version(s): {}", r.text);
    assert_eq!(
        items.iter().filter(|v| v["is_latest"] == true).count(),
        1,
        "one current version: {}",
        r.text
    );
    r.body
}

/// An update (`node_count` to `nodes`): it writes the state again. Its operation id, once succeeded.
pub(crate) async fn updated(api: &Client, cluster: &str, nodes: u64) -> String {
    let r = api
        .patch(
            &format!("/v1/clusters/{cluster}"),
            &json!({"variables": {"node_count": nodes}}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let done = api.wait_operation(&op, OP_TIMEOUT).await.unwrap();
    assert_eq!(done["status"], "succeeded", "{done}");
    op
}

/// The newest version that is not the current one.
pub(crate) fn older(listing: &Value) -> String {
    let items = listing["items"].as_array().unwrap();
    let v = items
        .iter()
        .find(|v| v["is_latest"] == false)
        .unwrap_or_else(|| panic!("no older version: {listing}"));
    v["version_id"].as_str().unwrap().to_owned()
}

/// Restoring the current version is a 409 and an unknown one a 404; restoring `version` is a 202 whose
/// restore-state operation succeeds, recorded on the cluster, which stays ACTIVE. The operation's id.
pub(crate) async fn restored(api: &Client, cluster: &str, listing: &Value, version: &str) -> String {
    let current = listing["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["is_latest"] == true)
        .unwrap()["version_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = |v: &str| format!("/v1/clusters/{cluster}/state-versions/{v}/restore");
    let r = api.post(&path(&current), &json!({})).await.unwrap();
    assert_eq!(r.status, 409, "{}", r.text);
    let r = api.post(&path("no-such-version"), &json!({})).await.unwrap();
    assert_eq!(r.status, 404, "{}", r.text);
    let r = api.post(&path(version), &json!({})).await.unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["operation"]["kind"], "restore-state", "{}", r.text);
    let op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let done = api.wait_operation(&op, OP_TIMEOUT).await.unwrap();
    assert_eq!(done["status"], "succeeded", "{done}");
    let c = api.get(&format!("/v1/clusters/{cluster}")).await.unwrap();
    assert_eq!(c.body["state"], "ACTIVE", "{}", c.text);
    let after = api
        .get(&format!("/v1/clusters/{cluster}/state-versions"))
        .await
        .unwrap();
    assert_eq!(
        after.body["source"]["operation_id"],
        op.as_str(),
        "{}",
        after.text
    );
    let restores = after.body["restores"].as_array().cloned().unwrap_or_default();
    assert!(
        restores.iter().any(|r| r["from_version"] == version),
        "the restore is recorded: {}",
        after.text
    );
    op
}

/// The bytes of `key` (at `version`, or the current one) in an S3-compatible bucket (moto here).
pub(crate) async fn s3_bytes(
    stack: &strato_devstack::Devstack,
    bucket: &str,
    key: &str,
    version: Option<&str>,
) -> Vec<u8> {
    let o = stack
        .env
        .aws
        .s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .set_version_id(version.map(str::to_owned))
        .send()
        .await
        .unwrap_or_else(|e| panic!("reading {bucket}/{key} at {version:?}: {e:?}"));
    o.body.collect().await.unwrap().into_bytes().to_vec()
}

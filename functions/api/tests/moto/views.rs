//! What the cluster views show of a cluster's operations, against moto: the newest operation queued on it
//! (kind, status, times) on create's answer, on the cluster and on every row of the list (one
//! BatchGetItem per page), following the operation as it moves on.

use crate::common;

use common::{Api, Req, TENANT};
use lambda_http::http::StatusCode;
use serde_json::{Value, json};
use strato_domain::model::{ClusterState, OperationStatus};

/// `last_operation` of each listed cluster, by name.
async fn listed(api: &Api) -> Vec<(String, Value)> {
    let r = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["last_operation"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn clusters_show_their_newest_operation_as_it_moves_on() {
    let api = Api::new().await;
    let r = api.call(Api::create_req("alpha")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let create_op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let last = &r.body["cluster"]["last_operation"];
    assert_eq!(last["id"], create_op.as_str(), "{}", r.text);
    assert_eq!(last["kind"], "create");
    assert_eq!(last["status"], "queued");
    assert_eq!(last["created_at"], r.body["operation"]["created_at"]);
    let alpha = r.body["cluster"]["id"].as_str().unwrap().to_owned();
    let (bravo, bravo_create) = api.create(TENANT, "bravo").await;

    // The operation moves on; the views follow it (read consistently, not from a copy on the cluster).
    api.set_op_status(&create_op, OperationStatus::Running).await;
    let rows = listed(&api).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].0, "alpha");
    assert_eq!(rows[1].1["id"], create_op.as_str());
    assert_eq!(rows[1].1["status"], "running");
    assert_eq!(rows[0].1["id"], bravo_create.as_str());
    assert_eq!(rows[0].1["status"], "queued");

    // A newer operation replaces it: bravo, once active, is deleted.
    api.set_op_status(&bravo_create, OperationStatus::Succeeded).await;
    api.set_state(&bravo, ClusterState::Active).await;
    let del = api
        .call(Req::load("delete-cluster").path(&format!("/v1/clusters/{bravo}")))
        .await;
    assert_eq!(del.status, StatusCode::ACCEPTED, "{}", del.text);
    let delete_op = del.body["operation"]["id"].as_str().unwrap();
    assert_eq!(del.body["cluster"]["last_operation"]["kind"], "delete");
    let got = api
        .call(Req::load("get-cluster").path(&format!("/v1/clusters/{bravo}")))
        .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.text);
    assert_eq!(got.body["last_operation"]["id"], delete_op, "{}", got.text);
    assert_eq!(got.body["last_operation"]["kind"], "delete");
    assert_eq!(got.body["last_operation"]["status"], "queued");
    let rows = listed(&api).await;
    assert_eq!(rows[0].1["id"], delete_op);
    assert_eq!(rows[1].1["status"], "running", "alpha's is unchanged");

    // A change of settings alone queues nothing: the answer still names the newest operation.
    let patch = api
        .call(
            Req::load("update-cluster-drift")
                .path(&format!("/v1/clusters/{alpha}"))
                .body(&json!({"drift": {"policy": "notify"}})),
        )
        .await;
    assert_eq!(patch.status, StatusCode::OK, "{}", patch.text);
    assert_eq!(patch.body["drift"]["policy"], "notify");
    assert_eq!(
        patch.body["last_operation"]["id"],
        create_op.as_str(),
        "{}",
        patch.text
    );
    assert_eq!(patch.body["last_operation"]["status"], "running");
}

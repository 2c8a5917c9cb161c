//! A tenant's own settings through the API, against moto: a cluster's drift policy and check interval (on
//! create, and changed alone by PATCH without any operation) and the tenant's drift webhook (set, shown
//! without its secret, another tenant's invisible, removed).

use crate::common;

use common::{Api, Req};
use lambda_http::http::StatusCode;
use serde_json::json;
use strato_domain::ids::ClusterId;
use strato_domain::model::DriftPolicy;

#[tokio::test(flavor = "multi_thread")]
async fn drift_settings_are_given_on_create_and_changed_alone_by_patch() {
    let api = Api::new().await;

    // Bad settings are named field by field, and nothing is created.
    let mut body = Api::create_req("watched").body_value();
    body["drift"] = json!({"policy": "fix-it", "interval_hours": 0});
    let r = api.call(Req::load("create-cluster").body(&body)).await;
    r.problem(422);
    assert_eq!(r.fields(), ["drift.interval_hours", "drift.policy"], "{}", r.text);
    r.assert_says("drift.policy", "allowed", "reconcile");
    let list = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(
        list.body["clusters"].as_array().unwrap().len(),
        0,
        "{}",
        list.text
    );

    body["drift"] = json!({"policy": "reconcile", "interval_hours": 12});
    let r = api.call(Req::load("create-cluster").body(&body)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["cluster"]["drift"]["policy"], "reconcile", "{}", r.text);
    assert_eq!(r.body["cluster"]["drift"]["interval_hours"], 12);
    let cid: ClusterId = r.body["cluster"]["id"].as_str().unwrap().parse().unwrap();
    let stored = api.stored_cluster(&cid).await;
    assert_eq!(stored.drift_policy, DriftPolicy::Reconcile);
    assert_eq!(stored.drift_interval_secs, Some(12 * 3600));

    // Settings alone: 200 with the cluster, recorded, and no operation queued.
    // The create's job; received messages stay hidden for 5 min, so a later look shows only new ones.
    assert_eq!(api.jobs().await.len(), 1);
    let patch = Req::load("update-cluster-drift").path(&format!("/v1/clusters/{cid}"));
    let r = api
        .call(patch.body(&json!({"drift": {"policy": "notify", "interval_hours": null}})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["drift"]["policy"], "notify", "{}", r.text);
    assert_eq!(r.body["drift"]["interval_hours"], 6, "back to the default");
    let stored = api.stored_cluster(&cid).await;
    assert_eq!(
        (stored.drift_policy, stored.drift_interval_secs),
        (DriftPolicy::Notify, None)
    );
    let ops = api
        .call(Req::load("list-cluster-operations").path(&format!("/v1/clusters/{cid}/operations")))
        .await;
    assert_eq!(
        ops.body["operations"].as_array().unwrap().len(),
        1,
        "only the create: {}",
        ops.text
    );
    assert!(api.jobs().await.is_empty(), "no job for a settings change");

    // The sample itself is accepted, and another tenant cannot touch the cluster.
    let r = api
        .call(Req::load("update-cluster-drift").path(&format!("/v1/clusters/{cid}")))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let r = api
        .call(
            Req::load("update-cluster-drift")
                .path(&format!("/v1/clusters/{cid}"))
                .tenant("globex"),
        )
        .await;
    r.problem(404);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tenants_webhook_is_set_shown_without_its_secret_and_removed() {
    let api = Api::new().await;
    let r = api.call(Req::load("get-webhook")).await;
    r.problem(404);
    assert!(
        r.body["detail"].as_str().unwrap().contains("PUT /v1/webhook"),
        "{}",
        r.text
    );

    let put = |body: serde_json::Value| Req::load("put-webhook").body(&body);
    let r = api
        .call(put(
            json!({"url": "ftp://x", "secret": "tiny-secret", "retries": 3}),
        ))
        .await;
    r.problem(422);
    assert_eq!(r.fields(), ["retries", "secret", "url"], "{}", r.text);
    assert!(
        !r.text.contains("tiny-secret"),
        "a secret is never echoed: {}",
        r.text
    );
    assert!(api.stored_webhook().await.is_none());

    let r = api.call(Req::load("put-webhook")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["secret"], "(sensitive)");
    assert!(!r.text.contains("whsec-"), "{}", r.text);
    let stored = api.stored_webhook().await.unwrap();
    assert_eq!(stored.url(), "https://hooks.acme.example.com/strato");
    assert_eq!(stored.secret(), "whsec-3f9a1c7e5b2d8a4f6e0c");

    let r = api.call(Req::load("get-webhook")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.body["url"], "https://hooks.acme.example.com",
        "scheme and host only"
    );
    api.call(Req::load("get-webhook").tenant("globex"))
        .await
        .problem(404);
    api.call(Req::load("delete-webhook").tenant("globex"))
        .await
        .problem(404);

    let r = api.call(Req::load("delete-webhook")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(api.stored_webhook().await.is_none());
    api.call(Req::load("get-webhook")).await.problem(404);
}

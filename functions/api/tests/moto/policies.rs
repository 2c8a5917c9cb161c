//! Policy as code through the API, against moto: tenant policies managed with `/v1/policies` (admin,
//! compile-checked on PUT) and request policies checked on create / update / delete before anything is
//! written.

use crate::common;

use common::{Api, Req};
use lambda_http::http::Method;
use serde_json::json;

fn put(name: &str, source: &str) -> Req {
    Req::load("put-webhook")
        .method(Method::PUT)
        .path(&format!("/v1/policies/{name}"))
        .body(&json!({ "source": source }))
}

fn admin(method: Method, path: &str) -> Req {
    Req::load("put-webhook").method(method).path(path).raw_body("")
}

const MAX_NODES: &str = r#"package strato.request

deny contains msg if {
	input.action != "delete"
	input.node_count > 4
	msg := sprintf("node_count %d is over this tenant's limit of 4", [input.node_count])
}

warn contains "clusters in eu-west-1 are backed up weekly only" if input.region == "eu-west-1"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn tenant_policies_are_stored_listed_read_and_removed() {
    let api = Api::new().await;

    let r = api.call(put("max-nodes", MAX_NODES)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["name"], "max-nodes");
    assert_eq!(r.body["owner"], "tenant");
    assert_eq!(r.body["stage"], "request");

    let r = api.call(admin(Method::GET, "/v1/policies/max-nodes")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["source"], MAX_NODES);

    // The list has the platform's (read-only) and the tenant's, and the version of the whole set.
    let r = api.call(admin(Method::GET, "/v1/policies")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let names: Vec<(String, String)> = r.body["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["owner"].as_str().unwrap().to_owned(),
                p["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        names.contains(&("tenant".into(), "max-nodes".into())),
        "{names:?}"
    );
    assert!(
        names.contains(&("platform".into(), "regions".into())),
        "{names:?}"
    );
    assert!(
        r.body["version"].as_str().unwrap().starts_with("sha256:"),
        "{}",
        r.text
    );
    let version = r.body["version"].clone();

    // Another tenant sees none of it.
    let r = api
        .call(admin(Method::GET, "/v1/policies/max-nodes").tenant("globex"))
        .await;
    r.problem(404);

    let r = api.call(admin(Method::DELETE, "/v1/policies/max-nodes")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["deleted"], true);
    api.call(admin(Method::GET, "/v1/policies/max-nodes"))
        .await
        .problem(404);
    api.call(admin(Method::DELETE, "/v1/policies/max-nodes"))
        .await
        .problem(404);
    let r = api.call(admin(Method::GET, "/v1/policies")).await;
    assert_ne!(r.body["version"], version, "the version follows the set");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_that_does_not_compile_is_refused_naming_source() {
    let api = Api::new().await;
    let r = api
        .call(put("broken", "package strato.request\ndeny contains msg if {"))
        .await;
    r.problem(422);
    let e = r.error_for("source");
    assert!(
        e["problem"].as_str().unwrap().contains("does not compile"),
        "{}",
        r.text
    );

    let r = api.call(put("elsewhere", "package acme.rules\n")).await;
    r.problem(422);
    r.assert_says("source", "problem", "strato.request");

    let big = format!(
        "package strato.request\n#{}\n",
        "x".repeat(strato_policy::MAX_SOURCE_BYTES)
    );
    let r = api.call(put("big", &big)).await;
    r.problem(422);
    r.assert_says("source", "allowed", "bytes");

    let r = api.call(put("Bad_Name", MAX_NODES)).await;
    r.problem(422);
    r.error_for("name");

    // Nothing was stored.
    let r = api.call(admin(Method::GET, "/v1/policies")).await;
    assert!(
        r.body["policies"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["owner"] == "platform"),
        "{}",
        r.text
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn changing_policies_needs_the_admin_scope_and_reading_them_does_not() {
    let api = Api::new().await;
    let r = api
        .call(put("max-nodes", MAX_NODES).scope(Some("clusters:write clusters:read")))
        .await;
    r.problem(403);
    let r = api
        .call(admin(Method::DELETE, "/v1/policies/max-nodes").scope(Some("clusters:write")))
        .await;
    r.problem(403);
    // Reading them is for everyone whose requests they check.
    let r = api
        .call(admin(Method::GET, "/v1/policies").scope(Some("clusters:read")))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_request_is_answered_422_before_anything_is_written() {
    let api = Api::new().await;
    assert_eq!(api.call(put("max-nodes", MAX_NODES)).await.status, 200);

    let mut body = Api::create_req("too-big").body_value();
    body["variables"]["node_count"] = json!(6);
    body["variables"]["max_nodes"] = json!(10);
    let r = api.call(Req::load("create-cluster").body(&body)).await;
    let p = r.problem(422);
    assert_eq!(p["type"], "urn:strato:problem:policy-denied", "{}", r.text);
    assert!(
        p["detail"].as_str().unwrap().contains("step: policy"),
        "{}",
        r.text
    );
    assert_eq!(
        r.error_for("policy")["problem"],
        "tenant/max-nodes: node_count 6 is over this tenant's limit of 4"
    );
    // No cluster, no operation, no job.
    let list = api.call(Req::load("list-clusters").query("")).await;
    assert_eq!(
        list.body["clusters"].as_array().unwrap().len(),
        0,
        "{}",
        list.text
    );
    assert!(api.jobs().await.is_empty());

    // A platform policy denies too: a region the platform does not operate in.
    let mut body = Api::create_req("far-away").body_value();
    body["region"] = json!("sa-east-1");
    let r = api.call(Req::load("create-cluster").body(&body)).await;
    r.problem(422);
    assert_eq!(r.body["type"], "urn:strato:problem:policy-denied", "{}", r.text);
    assert!(
        r.error_for("policy")["problem"]
            .as_str()
            .unwrap()
            .starts_with("platform/regions: ")
    );
    assert!(api.jobs().await.is_empty());

    // An allowed create records the policy version and the warnings as notes.
    let r = api.call(Api::create_req("small")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let op = &r.body["operation"];
    assert!(
        op["policy_version"].as_str().unwrap().starts_with("sha256:"),
        "{}",
        r.text
    );
    let notes: Vec<&str> = op["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.contains(&"policy warning: tenant/max-nodes: clusters in eu-west-1 are backed up weekly only"),
        "{notes:?}"
    );
    let cid = r.body["cluster"]["id"].as_str().unwrap().to_owned();
    assert_eq!(api.jobs().await.len(), 1);

    // An update the policy denies changes nothing.
    let r = api
        .call(
            Req::load("update-cluster")
                .path(&format!("/v1/clusters/{cid}"))
                .body(&json!({ "variables": { "node_count": 9, "max_nodes": 10 } })),
        )
        .await;
    r.problem(422);
    r.assert_says("policy", "problem", "node_count 9");
    let ops = api
        .call(Req::load("list-cluster-operations").path(&format!("/v1/clusters/{cid}/operations")))
        .await;
    assert_eq!(
        ops.body["operations"].as_array().unwrap().len(),
        1,
        "{}",
        ops.text
    );
    assert!(api.jobs().await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operators_policy_for_a_tenant_holds_its_requests_and_only_the_operator_changes_it() {
    let api = Api::new().await;
    let ops = api.with_operator().await;
    let body = json!({"id": "initech"});
    let r = common::call_with(&ops, Req::operator(Method::POST, "/v1/admin/tenants").body(&body)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let path = "/v1/admin/tenants/initech/policies/max-nodes";

    // Checked as a tenant's is; nothing stored when it does not compile.
    let broken = json!({"source": "package strato.request\ndeny contains msg if {"});
    let r = common::call_with(&ops, Req::operator(Method::PUT, path).body(&broken)).await;
    r.problem(422);
    r.error_for("source");
    // A tenant that is not registered gets none.
    let r = common::call_with(
        &ops,
        Req::operator(Method::PUT, "/v1/admin/tenants/nobody/policies/max-nodes")
            .body(&json!({ "source": MAX_NODES })),
    )
    .await;
    r.problem(404);
    let r = common::call_with(
        &ops,
        Req::operator(Method::PUT, path).body(&json!({ "source": MAX_NODES })),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["owner"], "operator");

    // The tenant reads it (owner operator) and is held to it; it cannot remove it.
    let tenant = |r: Req| r.tenant("initech");
    let r = api.call(tenant(admin(Method::GET, "/v1/policies"))).await;
    let owners: Vec<(String, String)> = r.body["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["owner"].as_str().unwrap().into(),
                p["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        owners.contains(&("operator".into(), "max-nodes".into())),
        "{owners:?}"
    );
    let r = api
        .call(tenant(admin(Method::GET, "/v1/policies/max-nodes")))
        .await;
    assert_eq!(r.body["owner"], "operator", "{}", r.text);
    let mut create = Api::create_req("too-big").tenant("initech").body_value();
    create["variables"]["node_count"] = json!(6);
    create["variables"]["max_nodes"] = json!(10);
    let r = api
        .call(Req::load("create-cluster").tenant("initech").body(&create))
        .await;
    r.problem(422);
    assert_eq!(
        r.error_for("policy")["problem"],
        "operator/max-nodes: node_count 6 is over this tenant's limit of 4"
    );
    let r = api
        .call(tenant(admin(Method::DELETE, "/v1/policies/max-nodes")))
        .await;
    let p = r.problem(409);
    assert!(
        p["detail"].as_str().unwrap().contains("platform operator"),
        "{}",
        r.text
    );
    // A tenant's own policy of the same name is its own, beside the operator's.
    let r = api.call(put("max-nodes", MAX_NODES).tenant("initech")).await;
    assert_eq!(r.body["owner"], "tenant", "{}", r.text);
    // Another tenant is not held to it.
    let r = api
        .call(admin(Method::GET, "/v1/policies").tenant("globex"))
        .await;
    assert!(!r.text.contains("\"operator\""), "{}", r.text);

    // The operator lists what the tenant is held to, and removes its own policy only.
    let r = common::call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/tenants/initech/policies"),
    )
    .await;
    let listed = r.body["policies"].as_array().unwrap();
    assert!(listed.iter().any(|p| p["owner"] == "operator"), "{}", r.text);
    assert!(listed.iter().any(|p| p["owner"] == "tenant"), "{}", r.text);
    let r = common::call_with(&ops, Req::operator(Method::DELETE, path).raw_body("")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    common::call_with(&ops, Req::operator(Method::DELETE, path).raw_body(""))
        .await
        .problem(404);
    let r = api
        .call(tenant(admin(Method::GET, "/v1/policies/max-nodes")))
        .await;
    assert_eq!(r.body["owner"], "tenant", "the tenant's own stays: {}", r.text);

    // Both operator actions are in the tenant's audit log under the operator's subject.
    let r = common::call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/tenants/initech/audit").query("actor=ops-1"),
    )
    .await;
    let actions = r.each("entries", "action");
    assert!(actions.contains(&"admin.tenant.policy.put"), "{actions:?}");
    assert!(actions.contains(&"admin.tenant.policy.delete"), "{actions:?}");
}

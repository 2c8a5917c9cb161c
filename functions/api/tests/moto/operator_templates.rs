//! The operator's template catalog against moto: a version published from a bundle upload (checked, 201;
//! the same version again 409; a bad bundle 422 naming `bundle`), listed with its standing; a deprecated
//! version refuses new clusters (422 on `template.version` naming the newest usable) while a cluster on it
//! keeps working; a yanked one needs a reason, is hidden from tenants, refuses a move to it and is final;
//! every action in the platform's audit log under the operator's `sub`.

use crate::common;

use base64::Engine;
use common::{Api, Req, Resp, call_with};
use lambda_http::http::{Method, StatusCode};
use serde_json::{Value, json};
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::model::{ClusterState, OperationStatus};

fn bundle_b64() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates");
    let b =
        strato_terraform::bundle::pack(&root.join("catalog/aws-eks-basic"), &root.join("modules")).unwrap();
    base64::engine::general_purpose::STANDARD.encode(&b.bytes)
}

fn version_of(list: &Value, name: &str, version: &str) -> Value {
    list["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .and_then(|t| {
            t["versions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["version"] == version)
        })
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bundle_is_published_through_the_api_with_its_checks_and_versions_are_immutable() {
    let api = Api::new().await;
    let ops = api.with_operator().await;
    let manifest = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../templates/catalog/aws-eks-basic/template.toml"),
    )
    .unwrap();
    let version = strato_domain::template::Template::from_toml(&manifest)
        .unwrap()
        .version()
        .to_owned();
    let path = format!("/v1/admin/templates/aws-eks-basic/versions/{version}");
    let post = |p: &str, body: Value| Req::operator(Method::POST, p).body(&body);

    let r = call_with(&ops, post(&path, json!({"bundle": "%%% not base64"}))).await;
    r.problem(422);
    assert_eq!(r.fields(), ["bundle"], "{}", r.text);
    let junk = base64::engine::general_purpose::STANDARD.encode(b"not a tarball");
    let r = call_with(&ops, post(&path, json!({"bundle": junk}))).await;
    r.problem(422);
    assert!(r.text.contains("tar.gz"), "{}", r.text);
    // A bundle of another version than the path names.
    let r = call_with(
        &ops,
        post(
            "/v1/admin/templates/aws-eks-basic/versions/9.9.9",
            json!({"bundle": bundle_b64()}),
        ),
    )
    .await;
    r.problem(422);
    assert!(r.text.contains("the path names"), "{}", r.text);

    let r = call_with(&ops, post(&path, json!({"bundle": bundle_b64()}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["standing"], "active");
    let stored = api
        .ctx
        .store
        .get_template("aws-eks-basic", &version)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.body["sha256"], stored.sha256.as_str());
    // The object is where the catalog item says.
    api.env
        .aws
        .s3
        .head_object()
        .bucket(api.env.names.bucket("templates"))
        .key(&stored.bundle_key)
        .send()
        .await
        .unwrap();
    // Versions are immutable: the same upload again is a conflict.
    let r = call_with(&ops, post(&path, json!({"bundle": bundle_b64()}))).await;
    r.problem(409);
    assert!(r.text.contains("immutable"), "{}", r.text);

    let r = call_with(&ops, Req::operator(Method::GET, "/v1/admin/templates")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        version_of(&r.body, "aws-eks-basic", &version)["standing"],
        "active"
    );
    assert_eq!(version_of(&r.body, "api-test", "1.0.0")["standing"], "active");

    let audit = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/tenants/strato-platform/audit"),
    )
    .await;
    assert_eq!(audit.status, StatusCode::OK, "{}", audit.text);
    let published: Vec<&Value> = audit.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "admin.template.publish" && e["status"] == 201)
        .collect();
    assert_eq!(published.len(), 1, "{}", audit.text);
    assert_eq!(published[0]["actor"], "ops-1", "{}", audit.text);
}

/// The cluster `id` of `tenant` made ACTIVE with its create finished, as a runner would leave it.
async fn finished(api: &Api, tenant: &str, cid: &str, oid: &str) {
    let t = tenant.parse().unwrap();
    let id: ClusterId = cid.parse().unwrap();
    let mut c = api.ctx.store.get_cluster(&t, &id).await.unwrap().unwrap();
    c = c.in_state(ClusterState::Active);
    c.pending_operation = None;
    api.ctx.store.save_cluster(&mut c).await.unwrap();
    let oid: OperationId = oid.parse().unwrap();
    let mut op = api.ctx.store.get_operation(&oid).await.unwrap().unwrap();
    op.status = OperationStatus::Succeeded;
    api.ctx.store.save_operation(&mut op, false).await.unwrap();
}

/// The tenant `acme`'s catalog as it lists it, and its entry for `api-test`.
async fn tenants_api_test(ops: &strato_api::ApiService) -> (Resp, Value) {
    let r = call_with(ops, Req::load("list-templates").tenant("acme")).await;
    let t = r.body["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "api-test")
        .unwrap()
        .clone();
    (r, t)
}

#[tokio::test(flavor = "multi_thread")]
async fn deprecate_refuses_new_clusters_and_yank_refuses_moves_while_clusters_on_them_keep_working() {
    let api = Api::new().await;
    // One service for every call: a standing applies at once where it was set (elsewhere within 30 s).
    let ops = api.with_operator().await;
    let create = |name: &str| Api::create_req(name).tenant("acme");
    let r = call_with(&ops, create("before")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let cid = r.body["cluster"]["id"].as_str().unwrap().to_owned();
    let oid = r.body["operation"]["id"].as_str().unwrap().to_owned();
    finished(&api, "acme", &cid, &oid).await;

    let dep = "/v1/admin/templates/api-test/versions/1.0.0/deprecate";
    let r = call_with(
        &ops,
        Req::operator(Method::POST, dep).body(&json!({"reason": "use 1.1"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["standing"], "deprecated");
    assert_eq!(r.body["by"], "ops-1");
    let missing = "/v1/admin/templates/api-test/versions/7.0.0/deprecate";
    call_with(&ops, Req::operator(Method::POST, missing).body(&json!({})))
        .await
        .problem(404);

    // A new cluster on it: refused, naming the field and the newest usable version.
    let r = call_with(&ops, create("after")).await;
    r.problem(422);
    let e = r.error_for("template.version");
    assert!(e["allowed"].as_str().unwrap().contains("1.1.0"), "{}", r.text);
    // The tenant's catalog marks it.
    let (r, t) = tenants_api_test(&ops).await;
    assert_eq!(t["deprecated"], json!(["1.0.0"]), "{}", r.text);
    assert_eq!(t["version"], "1.1.0");
    // The cluster on it keeps working: a change of its variables is accepted.
    let patch = |body: Value| {
        Req::load("update-cluster")
            .path(&format!("/v1/clusters/{cid}"))
            .tenant("acme")
            .body(&body)
    };
    let r = call_with(&ops, patch(json!({"variables": {"node_count": 4}}))).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let oid2 = r.body["operation"]["id"].as_str().unwrap().to_owned();
    finished(&api, "acme", &cid, &oid2).await;

    // A yank needs a reason; with one, the version is hidden from tenants and refuses moves to it.
    let yank = "/v1/admin/templates/api-test/versions/1.1.0/yank";
    let r = call_with(&ops, Req::operator(Method::POST, yank).body(&json!({}))).await;
    r.problem(422);
    assert_eq!(r.fields(), ["reason"], "{}", r.text);
    let r = call_with(
        &ops,
        Req::operator(Method::POST, yank).body(&json!({"reason": "CVE-2026-1"})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let (r, t) = tenants_api_test(&ops).await;
    assert_eq!(t["versions"], json!(["1.0.0"]), "{}", r.text);
    let r = call_with(&ops, patch(json!({"template_version": "1.1.0"}))).await;
    r.problem(422);
    r.assert_says("template_version", "problem", "CVE-2026-1");
    // Nothing usable is left for a new cluster.
    let r = call_with(&ops, create("none")).await;
    r.problem(422);
    r.assert_says("template.version", "allowed", "has none");
    // A yank is final.
    let undo = "/v1/admin/templates/api-test/versions/1.1.0/deprecate";
    call_with(&ops, Req::operator(Method::POST, undo).body(&json!({})))
        .await
        .problem(409);

    let r = call_with(&ops, Req::operator(Method::GET, "/v1/admin/templates")).await;
    let v = version_of(&r.body, "api-test", "1.1.0");
    assert_eq!(
        (v["standing"].as_str(), v["reason"].as_str()),
        (Some("yanked"), Some("CVE-2026-1"))
    );
    let audit = call_with(
        &ops,
        Req::operator(Method::GET, "/v1/admin/tenants/strato-platform/audit"),
    )
    .await;
    let actions: Vec<(&str, i64)> = audit.body["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["actor"] == "ops-1")
        .map(|e| (e["action"].as_str().unwrap(), e["status"].as_i64().unwrap()))
        .collect();
    assert!(
        actions.contains(&("admin.template.deprecate", 200)),
        "{actions:?}"
    );
    assert!(actions.contains(&("admin.template.yank", 200)), "{actions:?}");
    assert!(actions.contains(&("admin.template.yank", 422)), "{actions:?}");
}

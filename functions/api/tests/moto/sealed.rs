//! Sensitive variables at rest, against moto (its KMS and DynamoDB): sealed before any item is written,
//! opened only with the item's own identity, kept as they are by a PATCH that does not change them, and never
//! accepted sealed from a caller.

use crate::common;

use common::{Api, Req, TENANT};
use lambda_http::http::StatusCode;
use serde_json::{Value, json};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::ClusterSpec;
use strato_domain::sealed::{self, as_sealed};

const PASSWORD: &str = "hunter2-but-longer";

async fn op_spec(api: &Api, oid: &str) -> ClusterSpec {
    api.ctx
        .store
        .get_operation(&oid.parse::<OperationId>().unwrap())
        .await
        .unwrap()
        .unwrap()
        .spec
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn sensitive_variables_are_sealed_at_rest_and_open_only_where_they_belong() {
    let api = Api::new().await;
    let (cid, oid) = api.create(TENANT, "prod-eu").await;
    for table in ["clusters", "operations"] {
        let raw = api.raw_items(table).await;
        assert!(
            !raw.contains(PASSWORD),
            "{table} holds the password in the clear: {raw}"
        );
        assert!(raw.contains(sealed::SEALED_MEMBER), "{table}: {raw}");
        assert!(
            raw.contains("ops@acme.example"),
            "non-sensitive values stay readable: {raw}"
        );
    }
    let tenant: TenantId = TENANT.parse().unwrap();
    let cluster: ClusterId = cid.parse().unwrap();
    let spec = op_spec(&api, &oid).await;
    let opened = sealed::open_spec(&api.ctx.keys, &tenant, &cluster, &spec)
        .await
        .unwrap();
    assert_eq!(opened.variables["db_password"], json!(PASSWORD));

    // The same ciphertext in another tenant's (or another cluster's) item does not open.
    let globex: TenantId = "globex".parse().unwrap();
    assert!(
        sealed::open_spec(&api.ctx.keys, &globex, &cluster, &spec)
            .await
            .is_err()
    );
    assert!(
        sealed::open_spec(&api.ctx.keys, &tenant, &ClusterId::generate(), &spec)
            .await
            .is_err()
    );

    // A PATCH that leaves the password alone keeps its ciphertext.
    let before = as_sealed(&spec.variables["db_password"]).unwrap();
    let path = format!("/v1/clusters/{cid}");
    let r = api.call(Req::load("update-cluster").path(&path)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let patched = op_spec(&api, r.body["operation"]["id"].as_str().unwrap()).await;
    assert_eq!(as_sealed(&patched.variables["db_password"]).unwrap(), before);
    assert_eq!(patched.variables["node_count"], json!(4));

    // One that changes it seals the new value.
    let body = json!({"variables": {"db_password": "correct-horse-battery"}});
    let r = api
        .call(Req::load("update-cluster").path(&path).body(&body))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert!(!r.text.contains("correct-horse"), "{}", r.text);
    let patched = op_spec(&api, r.body["operation"]["id"].as_str().unwrap()).await;
    let opened = sealed::open_spec(&api.ctx.keys, &tenant, &cluster, &patched)
        .await
        .unwrap();
    assert_eq!(opened.variables["db_password"], json!("correct-horse-battery"));
    assert!(!api.raw_items("operations").await.contains("correct-horse"));

    // A sealed value is Strato's to write: one sent by a caller (copied from elsewhere) is refused.
    let copied: Value = spec.variables["db_password"].clone();
    let body = json!({"variables": {"db_password": copied}});
    let r = api
        .call(Req::load("update-cluster").path(&path).body(&body))
        .await;
    r.problem(422);
    assert_eq!(r.fields(), ["variables.db_password"], "{}", r.text);
    let mut create = Api::create_req("other").body_value();
    create["variables"]["db_password"] = copied;
    let r = api.call(Req::load("create-cluster").body(&create)).await;
    r.problem(422);
    assert_eq!(r.fields(), ["variables.db_password"], "{}", r.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cloud_token_is_sealed_at_rest_never_shown_and_rotatable() {
    const TOKEN: &str = "dop_v1_9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddccbbaa";
    const ROTATED: &str = "dop_v1_00112233445566778899aabbccddeeff00112233";
    let api = Api::new().await;
    let req = |m: lambda_http::http::Method, path: &str| Req::load("put-webhook").method(m).path(path);
    let put = |token: &str| {
        req(
            lambda_http::http::Method::PUT,
            "/v1/tenant/cloud-tokens/digitalocean",
        )
        .body(&serde_json::json!({"token": token}))
    };
    let r = api.call(put(TOKEN)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["provider"], "digitalocean");
    assert!(!r.text.contains(TOKEN), "{}", r.text);
    let raw = api.raw_items("tenants").await;
    assert!(!raw.contains(TOKEN), "in the clear at rest: {raw}");
    assert!(raw.contains("cloud_tokens"), "{raw}");
    // The runner's side: it opens under the tenant and cloud it was sealed for.
    let tenant: TenantId = TENANT.parse().unwrap();
    let stored = api.ctx.store.cloud_tokens(&tenant).await.unwrap();
    let opened = strato_domain::identity::cloud_tokens::open_cloud_token(
        &api.ctx.keys,
        &tenant,
        strato_domain::model::CloudProvider::Digitalocean,
        &stored["digitalocean"].sealed,
    )
    .await
    .unwrap();
    assert_eq!(opened.expose(), TOKEN);

    let r = api
        .call(req(lambda_http::http::Method::GET, "/v1/tenant/cloud-tokens").raw_body(""))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["tokens"][0]["provider"], "digitalocean");
    assert!(r.body["tokens"][0]["set_by"].is_string());
    assert!(!r.text.contains(TOKEN));

    // Rotation replaces it; a bad one is refused without echoing it; a federating cloud takes none.
    assert_eq!(api.call(put(ROTATED)).await.status, StatusCode::OK);
    let stored = api.ctx.store.cloud_tokens(&tenant).await.unwrap();
    assert_eq!(stored.len(), 1);
    let bad = "dop v1 with spaces and a secret-ish tail 1234";
    let r = api.call(put(bad)).await;
    r.problem(422);
    assert_eq!(r.body["errors"][0]["field"], "token");
    assert!(!r.text.contains(bad), "{}", r.text);
    let r = api
        .call(
            req(lambda_http::http::Method::PUT, "/v1/tenant/cloud-tokens/gcp")
                .body(&serde_json::json!({"token": TOKEN})),
        )
        .await;
    r.problem(404);
    assert!(!r.text.contains(TOKEN));

    // The audit log names the calls, never a value.
    let audit = api.raw_items("audit").await;
    assert!(audit.contains("cloud_token.put"), "{audit}");
    for secret in [TOKEN, ROTATED, bad] {
        assert!(!audit.contains(secret), "audit holds a token: {audit}");
    }

    // An object storage key pair set with the token: sealed apart from it, shown only as set.
    const KEY_ID: &str = "DO00KEYIDABCDEFGHIJK";
    const SECRET: &str = "spaces/SECRET0123456789abcdefABCDEFGHIJ";
    let with_keys = serde_json::json!({
        "token": ROTATED,
        "storage_access_key_id": KEY_ID,
        "storage_secret_access_key": SECRET,
    });
    let r = api
        .call(
            req(
                lambda_http::http::Method::PUT,
                "/v1/tenant/cloud-tokens/digitalocean",
            )
            .body(&with_keys),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["storage_keys"], true, "{}", r.text);
    assert!(!r.text.contains(KEY_ID) && !r.text.contains(SECRET), "{}", r.text);
    let raw = api.raw_items("tenants").await;
    for plain in [KEY_ID, SECRET, ROTATED] {
        assert!(!raw.contains(plain), "in the clear at rest: {raw}");
    }
    let stored = api.ctx.store.cloud_tokens(&tenant).await.unwrap();
    let pair = strato_domain::identity::cloud_tokens::open_storage_keys(
        &api.ctx.keys,
        &tenant,
        strato_domain::model::CloudProvider::Digitalocean,
        stored["digitalocean"].storage_keys.as_ref().unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        (pair.access_key_id.as_str(), pair.secret_access_key.expose()),
        (KEY_ID, SECRET)
    );
    let r = api
        .call(req(lambda_http::http::Method::GET, "/v1/tenant/cloud-tokens").raw_body(""))
        .await;
    assert_eq!(r.body["tokens"][0]["storage_keys"], true, "{}", r.text);
    assert!(!r.text.contains(KEY_ID) && !r.text.contains(SECRET), "{}", r.text);
    // A PUT replaces the record: without a pair, none is kept.
    assert_eq!(api.call(put(ROTATED)).await.body["storage_keys"], false);
    let stored = api.ctx.store.cloud_tokens(&tenant).await.unwrap();
    assert!(stored["digitalocean"].storage_keys.is_none());
    let audit = api.raw_items("audit").await;
    for secret in [KEY_ID, SECRET] {
        assert!(!audit.contains(secret), "audit holds a key: {audit}");
    }

    let del = || {
        req(
            lambda_http::http::Method::DELETE,
            "/v1/tenant/cloud-tokens/digitalocean",
        )
        .raw_body("")
    };
    assert_eq!(api.call(del()).await.status, StatusCode::OK);
    api.call(del()).await.problem(404);
    assert!(api.ctx.store.cloud_tokens(&tenant).await.unwrap().is_empty());
}

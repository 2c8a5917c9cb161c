//! Roles within a tenant (issue 22): every tenant route checks the token's scope before anything is read or
//! written; a missing scope is a 403 problem naming it.

use crate::common;

use common::{Api, Req};

const TENANT: &str = "acme";

#[tokio::test]
async fn a_viewer_reads_but_cannot_change_anything() {
    let api = Api::new().await;
    let (cid, oid) = api.create(TENANT, "acme-roles").await;
    let viewer = Some("clusters:read");

    let r = api
        .call(
            Req::load("get-cluster")
                .path(&format!("/v1/clusters/{cid}"))
                .scope(viewer),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.call(Req::load("list-templates").scope(viewer)).await;
    assert_eq!(r.status, 200, "{}", r.text);

    // `jobs` takes what is queued: the create's job goes now, so any job seen later is a refused request's.
    assert_eq!(api.jobs().await.len(), 1);
    for (req, need) in [
        (Api::create_req("acme-viewer").scope(viewer), "clusters:write"),
        (
            Req::load("delete-cluster")
                .path(&format!("/v1/clusters/{cid}"))
                .scope(viewer),
            "clusters:write",
        ),
        (
            Req::load("update-cluster")
                .path(&format!("/v1/clusters/{cid}"))
                .scope(viewer),
            "clusters:write",
        ),
        (
            Req::load("cancel-operation")
                .path(&format!("/v1/operations/{oid}/cancel"))
                .scope(viewer),
            "clusters:write",
        ),
        (Req::load("put-webhook").scope(viewer), "admin"),
        (
            Req::load("put-webhook").scope(Some("clusters:write clusters:read")),
            "admin",
        ),
    ] {
        let r = api.call(req).await;
        let p = r.problem(403);
        assert_eq!(p["type"], "urn:strato:problem:forbidden");
        assert!(p["detail"].as_str().unwrap().contains(need), "{}", r.text);
        assert_eq!(r.error_for("scope")["problem"], format!("'{need}' is missing"));
    }
    // Nothing was queued or changed by the refused requests.
    assert!(api.jobs().await.is_empty());
    let r = api
        .call(Req::load("get-cluster").path(&format!("/v1/clusters/{cid}")))
        .await;
    assert_eq!(r.body["state"], "PENDING", "{}", r.text);
}

#[tokio::test]
async fn a_token_without_scopes_reads_nothing_and_stronger_scopes_include_weaker_ones() {
    let api = Api::new().await;
    let r = api.call(Req::load("list-clusters").query("").scope(None)).await;
    assert!(
        r.problem(403)["detail"]
            .as_str()
            .unwrap()
            .contains("clusters:read")
    );
    // Even where the tenant's id is the only thing needed to answer.
    let r = api
        .call(Req::load("create-ws-ticket").scope(Some("openid profile")))
        .await;
    r.problem(403);

    let r = api
        .call(Req::load("list-clusters").query("").scope(Some("admin")))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // A resource-server scope (Cognito's `https://…/clusters:write`) counts only under a configured
    // `STRATO_SCOPE_PREFIX` (see `governance`): by default it is not Strato's.
    let r = api
        .call(Api::create_req("acme-cognito").scope(Some("openid https://api.example.com/clusters:write")))
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
    let r = api.call(Req::load("put-webhook").scope(Some("admin"))).await;
    assert_ne!(r.status, 403, "{}", r.text);
}

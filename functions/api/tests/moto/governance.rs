//! Governance through the real handler, on moto: every method of every route is authorized (HEAD as GET),
//! a change needs a token subject, scopes match exactly (under `STRATO_SCOPE_PREFIX`), a writer cannot lower
//! a cluster's approval requirement while an admin's lowering is audited, and a decision names the plan.

use crate::common;

use common::{Api, Req, Resp, call_with};
use lambda_http::http::Method;
use serde_json::json;
use strato_api::service;

/// A request without the token's `sub` claim (the authorizer accepted the token all the same).
fn without_sub(req: Req) -> Req {
    req.drop_claim("sub")
}

fn get_cluster(id: &str) -> Req {
    Req::load("get-cluster").path(&format!("/v1/clusters/{id}"))
}

fn patch(id: &str, body: serde_json::Value) -> Req {
    Req::load("update-cluster")
        .path(&format!("/v1/clusters/{id}"))
        .body(&body)
}

#[tokio::test]
async fn head_is_authorized_as_get_and_never_answers_what_the_token_may_not_read() {
    let api = Api::new().await;
    let (cid, _) = api.create("acme", "acme-head").await;
    // The audit log is an admin's: HEAD with no scope, or a writer's, is refused like GET.
    for scope in [None, Some("clusters:write clusters:read")] {
        let r = api
            .call(Req::load("list-audit").method(Method::HEAD).scope(scope))
            .await;
        assert_eq!(r.status, 403, "HEAD /v1/audit with {scope:?}: {}", r.text);
        assert!(r.headers.get("etag").is_none());
    }
    let r = api.call(get_cluster(&cid).method(Method::HEAD).scope(None)).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(r.headers.get("etag").is_none(), "{:?}", r.headers);
    // With the scope GET needs, HEAD answers as GET does (without the body).
    let r = api
        .call(
            get_cluster(&cid)
                .method(Method::HEAD)
                .scope(Some("clusters:read")),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.headers.get("etag").is_some(), "{:?}", r.headers);
    let r = api
        .call(Req::load("list-audit").method(Method::HEAD).scope(Some("admin")))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // A method the route table does not have for a path is a 405 problem, whatever the token.
    let r = api
        .call(
            Req::load("list-audit")
                .method(Method::DELETE)
                .scope(Some("admin")),
        )
        .await;
    r.problem(405);
}

#[tokio::test]
async fn a_token_without_a_subject_changes_nothing() {
    let api = Api::new().await;
    let (cid, oid) = api.create("acme", "acme-named").await;
    let all = Some("clusters:write clusters:read operations:approve admin");
    let mutating = [
        Api::create_req("acme-anonymous"),
        patch(&cid, json!({"variables": {"node_count": 4}})),
        Req::load("delete-cluster").path(&format!("/v1/clusters/{cid}")),
        Req::load("cancel-operation").path(&format!("/v1/operations/{oid}/cancel")),
        Req::load("cancel-operation").path(&format!("/v1/operations/{oid}/approve")),
        Req::load("put-webhook"),
        Req::load("create-ws-ticket"),
        Req::load("create-estimate"),
    ];
    assert_eq!(api.jobs().await.len(), 1, "the create's job");
    for req in mutating {
        let r = api.call(without_sub(req).scope(all)).await;
        let p = r.problem(401);
        assert_eq!(p["type"], "urn:strato:problem:unauthorized");
        assert!(p["detail"].as_str().unwrap().contains("'sub'"), "{}", r.text);
    }
    assert!(api.jobs().await.is_empty(), "nothing was queued");
    // Reads do not record anyone: they stay open to such a token.
    let r = api.call(without_sub(get_cluster(&cid)).scope(all)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["state"], "PENDING");
}

/// The api with `STRATO_SCOPE_PREFIX` set.
async fn with_prefix(api: &Api, prefix: &str) -> strato_api::ApiService {
    service(api.ctx_with(&[("STRATO_SCOPE_PREFIX", prefix)]).await)
}

#[tokio::test]
async fn scopes_match_exactly_never_by_their_last_path_segment() {
    let api = Api::new().await;
    let audit = |scope: &'static str| Req::load("list-audit").scope(Some(scope));
    // Another resource server's `admin` is not Strato's.
    for scope in [
        "https://other.example/admin",
        "openid https://other.example/admin",
    ] {
        let r = api.call(audit(scope)).await;
        assert_eq!(r.error_for("scope")["problem"], "'admin' is missing", "{scope}");
    }
    assert_eq!(api.call(audit("admin")).await.status, 200);

    // A resource server's scopes count under the configured prefix, exactly.
    let svc = with_prefix(&api, "https://api.example.com/").await;
    let r = call_with(&svc, audit("https://api.example.com/admin")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for scope in [
        "admin",
        "https://other.example/admin",
        "https://api.example.com/x/admin",
    ] {
        let r = call_with(&svc, audit(scope)).await;
        assert_eq!(r.status, 403, "{scope}: {}", r.text);
    }
}

#[tokio::test]
async fn a_writer_cannot_lower_a_clusters_approval_and_an_admins_lowering_is_audited() {
    let api = Api::new().await;
    let writer = Some("clusters:write clusters:read");
    let mut body = Api::create_req("acme-gated").body_value();
    body["approval"] = json!("required");
    let r = api
        .call(Api::create_req("acme-gated").body(&body).scope(writer))
        .await;
    assert_eq!(r.status, 202, "tightening is a writer's: {}", r.text);
    let cid = r.body["cluster"]["id"].as_str().unwrap().to_owned();

    // In the same PATCH as a variable change too.
    for body in [
        json!({"approval": "auto"}),
        json!({"variables": {"node_count": 4}, "approval": "auto"}),
    ] {
        let r = api.call(patch(&cid, body).scope(writer)).await;
        let p = r.problem(403);
        assert_eq!(p["type"], "urn:strato:problem:forbidden");
        let e = r.error_for("approval");
        assert!(e["allowed"].as_str().unwrap().contains("'admin'"), "{}", r.text);
        assert!(
            p["detail"].as_str().unwrap().contains("'admin' scope"),
            "{}",
            r.text
        );
    }
    let r = api.call(get_cluster(&cid)).await;
    assert_eq!(r.body["approval"], "required", "{}", r.text);

    let r = api
        .call(
            patch(&cid, json!({"approval": "auto"}))
                .scope(Some("admin"))
                .sub("root-1"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["approval"], "auto");
    let r = api
        .call(
            Req::load("list-audit")
                .query(&format!("cluster={cid}"))
                .scope(Some("admin")),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let entries = r.body["entries"].as_array().unwrap();
    let lowered = entries
        .iter()
        .find(|e| e["actor"] == "root-1" && e["action"] == "cluster.update")
        .unwrap_or_else(|| panic!("no entry of the admin's PATCH: {}", r.text));
    assert_eq!(lowered["outcome"], "succeeded");
    assert_eq!(
        lowered["detail"],
        "approval setting lowered by an admin: required -> auto (applies now: auto)"
    );
    // The writers' refused attempts are there too.
    assert_eq!(
        entries.iter().filter(|e| e["status"] == 403).count(),
        2,
        "{}",
        r.text
    );
}

/// The approver's request on `op` naming `seen`.
fn decide(op: &str, verb: &str, seen: serde_json::Value) -> Req {
    Req::load("cancel-operation")
        .path(&format!("/v1/operations/{op}/{verb}"))
        .scope(Some("operations:approve"))
        .sub("lead-approver")
        .body(&seen)
}

#[tokio::test]
async fn a_decision_names_the_plan_it_saw_and_another_pending_one_is_a_409() {
    let api = Api::new().await;
    let (_, oid) = api.create("acme", "acme-pinned").await;
    let id: strato_domain::ids::OperationId = oid.parse().unwrap();
    // Round 1 was shown to the approver; the runner planned again meanwhile: round 2 waits.
    let shown = strato_fakes::saved_plan();
    let mut pending = shown.clone();
    pending.plan_sha256 = "cd".repeat(32);
    let mut op = api.ctx.store.get_operation(&id).await.unwrap().unwrap();
    op.status = strato_domain::model::OperationStatus::AwaitingApproval;
    let now = strato_domain::ts::now();
    let first =
        strato_domain::approval::Approval::request(shown.clone(), None, now, time::Duration::hours(1));
    op.approval = Some(strato_domain::approval::Approval::request(
        pending.clone(),
        Some(&first),
        now,
        time::Duration::hours(1),
    ));
    api.ctx.store.save_operation(&mut op, false).await.unwrap();

    let seen = json!({"comment": "lgtm", "plan_sha256": shown.plan_sha256, "round": 1, "stage": shown.stage});
    for verb in ["approve", "reject"] {
        let r: Resp = api.call(decide(&oid, verb, seen.clone())).await;
        let p = r.problem(409);
        assert_eq!(p["type"], "urn:strato:problem:plan-changed", "{}", r.text);
        let detail = p["detail"].as_str().unwrap();
        for part in [
            pending.plan_sha256.as_str(),
            "round 2",
            &format!("stage {}", pending.stage),
        ] {
            assert!(detail.contains(part), "{part}: {detail}");
        }
        assert!(
            r.error_for("plan_sha256")["allowed"]
                .as_str()
                .unwrap()
                .contains(&pending.plan_sha256)
        );
    }
    let r = api
        .call(Req::load("get-operation").path(&format!("/v1/operations/{oid}")))
        .await;
    assert_eq!(
        r.body["status"], "awaiting_approval",
        "nothing decided: {}",
        r.text
    );
    assert!(r.body["approval"]["decision"].is_null(), "{}", r.text);

    // A malformed checksum is a 422 naming it; the pending plan, named, is approved.
    let r = api
        .call(decide(
            &oid,
            "approve",
            json!({"plan_sha256": "nope", "round": 0}),
        ))
        .await;
    r.problem(422);
    assert_eq!(r.fields(), ["plan_sha256", "round"]);
    let pinned = json!({"plan_sha256": pending.plan_sha256, "round": 2, "stage": pending.stage});
    let r = api.call(decide(&oid, "approve", pinned)).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["approval"]["decision"]["verdict"], "approved");
}

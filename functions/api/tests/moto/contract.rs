//! One real request to every route, against moto, and each answer checked against the generated OpenAPI
//! document: its status must be documented for the route, its content type documented for that status, and
//! its body valid against that response's schema (JSON Schema 2020-12, `$ref`s into the document's
//! components).

use crate::common;

use std::collections::BTreeSet;

use crate::conformance;

use common::{Api, Req, Resp, call_with};
use conformance::{conforms, spec};
use lambda_http::http::Method;
use serde_json::json;
use strato_api::routes::ROUTES;
use strato_api::{ApiService, Config, Ctx, service};
use strato_domain::model::ClusterState;

/// One call of each operator route, with the operator's token: (method, path template, answer).
async fn operator_routes(api: &Api) -> Vec<(Method, &'static str, Resp)> {
    let ops = api.with_operator().await;
    let mut out = Vec::new();
    let r = call_with(
        &ops,
        Req::operator(Method::POST, "/v1/admin/tenants")
            .body(&json!({"id": "contract-co", "max_clusters": 4})),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text);
    out.push((Method::POST, "/v1/admin/tenants", r));
    let r = call_with(&ops, Req::operator(Method::GET, "/v1/admin/tenants")).await;
    out.push((Method::GET, "/v1/admin/tenants", r));
    let one = "/v1/admin/tenants/contract-co";
    let r = call_with(&ops, Req::operator(Method::GET, one)).await;
    out.push((Method::GET, "/v1/admin/tenants/{tenant}", r));
    let r = call_with(
        &ops,
        Req::operator(Method::PATCH, one).body(&json!({"monthly_budget": 50, "approval": "required"})),
    )
    .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::PATCH, "/v1/admin/tenants/{tenant}", r));
    let r = call_with(&ops, Req::operator(Method::GET, &format!("{one}/audit"))).await;
    out.push((Method::GET, "/v1/admin/tenants/{tenant}/audit", r));
    let r = call_with(&ops, Req::operator(Method::GET, "/v1/admin/clusters")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/admin/clusters", r));
    out.extend(Box::pin(template_routes(&ops)).await);
    let r = call_with(
        &issuing,
        call("healthz", Method::GET, "/.well-known/openid-configuration"),
    )
    .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    assert_eq!(
        r.body["jwks_uri"],
        "https://api.strato.example.com/.well-known/jwks.json"
    );
    check(Method::GET, "/.well-known/openid-configuration", &r);
    let r = call_with(&issuing, call("healthz", Method::GET, "/.well-known/jwks.json")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    assert_eq!(r.body["keys"][0]["alg"], "RS256");
    assert_eq!(r.body["keys"][0]["kty"], "RSA");
    check(Method::GET, "/.well-known/jwks.json", &r);
    let r = call_with(&issuing, Req::load("get-target-access")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    assert_eq!(
        r.body["federation"]["gcp"]["attribute_mapping"]["google.subject"],
        "assertion.sub"
    );
    check(Method::GET, "/v1/tenant/target-access", &r);
    // No cluster has this agent token (401 problem).
    check(
        Method::POST,
        "/v1/agent/register",
        &api.call(Req::load("agent-register")).await,
    );
    check(
        Method::POST,
        "/v1/agent/heartbeat",
        &api.call(Req::load("agent-heartbeat")).await,
    );
    check(
        Method::POST,
        "/v1/agent/credential",
        &api.call(Req::load("agent-credential")).await,
    );

    check(Method::GET, "/v1/audit", &api.call(Req::load("list-audit")).await);

    // The platform operator's routes, with the operator's token (boxed: this test's future is large).
    for (m, template, r) in Box::pin(operator_routes(&api)).await {
        check(m, template, &r);
    }

    let all: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    assert_eq!(covered, all, "every route is exercised");
}

#[tokio::test(flavor = "multi_thread")]
async fn problems_conform_too() {
    let api = Api::new().await;
    let spec = spec();
    // Field errors (422), malformed JSON (400), no token (401), unknown id (404), a body over the limit (413).
    let r = api
        .call(Req::load("create-cluster").body(&json!({"name": 1, "template": "x", "extra": true})))
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(r.fields(), ["extra", "name", "provider", "region", "template"]);
    conforms(&spec, "POST", "/v1/clusters", &r);
    let r = api.call(Req::load("create-cluster").raw_body("{")).await;
    assert_eq!(r.status, 400);
    conforms(&spec, "POST", "/v1/clusters", &r);
    let r = api.call(Req::load("list-clusters").without_claims()).await;
    assert_eq!(r.status, 401);
    conforms(&spec, "GET", "/v1/clusters", &r);
    let r = api
        .call(Req::load("get-operation").path("/v1/operations/op-nope"))
        .await;
    assert_eq!(r.status, 404);
    conforms(&spec, "GET", "/v1/operations/{id}", &r);
    let r = api
        .call(Req::load("get-operation-timeline").path("/v1/operations/op-nope/timeline"))
        .await;
    assert_eq!(r.status, 404);
    conforms(&spec, "GET", "/v1/operations/{id}/timeline", &r);
    let big = json!({"name": "x".repeat(70 * 1024)});
    let r = api.call(Req::load("put-webhook").body(&big)).await;
    assert_eq!(r.status, 413);
    conforms(&spec, "PUT", "/v1/webhook", &r);
    let r = api
        .call(Req::load("put-webhook").body(&json!({"url": 5, "secret": null, "x": 1})))
        .await;
    assert_eq!(r.fields(), ["x", "url", "secret"]);
    conforms(&spec, "PUT", "/v1/webhook", &r);
    let r = api
        .call(Req::load("create-cluster").header("idempotency-key", ""))
        .await;
    assert_eq!(r.status, 400);
    conforms(&spec, "POST", "/v1/clusters", &r);
}

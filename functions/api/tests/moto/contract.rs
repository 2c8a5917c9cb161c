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
use strato_api::{ApiService, service};
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
    let policy = format!("{one}/policies/no-big");
    let source = "package strato.request\n\ndeny contains \"too many nodes\" if input.node_count > 50\n";
    let r = call_with(
        &ops,
        Req::operator(Method::PUT, &policy).body(&json!({ "source": source })),
    )
    .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::PUT, "/v1/admin/tenants/{tenant}/policies/{name}", r));
    let r = call_with(&ops, Req::operator(Method::GET, &format!("{one}/policies"))).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/admin/tenants/{tenant}/policies", r));
    let r = call_with(&ops, Req::operator(Method::DELETE, &policy).raw_body("")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::DELETE, "/v1/admin/tenants/{tenant}/policies/{name}", r));
    let r = call_with(&ops, Req::operator(Method::GET, "/v1/admin/clusters")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/admin/clusters", r));
    let r = call_with(&ops, Req::operator(Method::GET, "/v1/admin/operations")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/admin/operations", r));
    // Boxed: this future is already large.
    out.extend(Box::pin(template_routes(&ops)).await);
    out
}

/// The template catalog: a version published through the API, deprecated, then yanked.
async fn template_routes(ops: &ApiService) -> Vec<(Method, &'static str, Resp)> {
    let mut out = Vec::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates");
    let bundle =
        strato_terraform::bundle::pack(&root.join("catalog/aws-eks-basic"), &root.join("modules")).unwrap();
    let encoded = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&bundle.bytes)
    };
    let version = format!(
        "/v1/admin/templates/aws-eks-basic/versions/{}",
        bundle.template.version()
    );
    let post = |path: &str, body: serde_json::Value| Req::operator(Method::POST, path).body(&body);
    let r = call_with(ops, post(&version, json!({"bundle": encoded}))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text);
    out.push((Method::POST, "/v1/admin/templates/{name}/versions/{version}", r));
    let r = call_with(ops, Req::operator(Method::GET, "/v1/admin/templates")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/admin/templates", r));
    let r = call_with(ops, post(&format!("{version}/deprecate"), json!({}))).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((
        Method::POST,
        "/v1/admin/templates/{name}/versions/{version}/deprecate",
        r,
    ));
    let r = call_with(
        ops,
        post(&format!("{version}/yank"), json!({"reason": "contract"})),
    )
    .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((
        Method::POST,
        "/v1/admin/templates/{name}/versions/{version}/yank",
        r,
    ));
    out
}

/// One call of each rollout route: a tenant's preview of its own new cluster on 1.1.0, steered through
/// pause, resume and abort; then the same by the platform operator, across tenants.
async fn rollout_routes(api: &Api) -> Vec<(Method, &'static str, Resp)> {
    let mut out = Vec::new();
    let r = api.call(Api::create_req("roll-one")).await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.text);
    let cid = r.body["cluster"]["id"].as_str().unwrap().to_owned();
    let body = json!({"template": "api-test", "to_version": "1.1.0", "mode": "preview",
        "selector": {"clusters": ["roll-one"]}});
    let tenant = |m: Method, path: &str| {
        Req::load("list-clusters")
            .query("")
            .method(m)
            .path(path)
            .scope(Some("admin"))
    };
    let r = api.call(tenant(Method::POST, "/v1/rollouts").body(&body)).await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.text);
    assert_eq!(r.body["members"][0]["status"], "planning", "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    out.push((Method::POST, "/v1/rollouts", r));
    let r = api.call(tenant(Method::GET, "/v1/rollouts")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/rollouts", r));
    let one = format!("/v1/rollouts/{id}");
    let r = api.call(tenant(Method::GET, &one)).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/rollouts/{id}", r));
    for (verb, template) in [
        ("pause", "/v1/rollouts/{id}/pause"),
        ("resume", "/v1/rollouts/{id}/resume"),
        ("abort", "/v1/rollouts/{id}/abort"),
    ] {
        let r = api.call(tenant(Method::POST, &format!("{one}/{verb}"))).await;
        assert_eq!(r.status.as_u16(), 200, "{verb}: {}", r.text);
        out.push((Method::POST, template, r));
    }

    let ops = api.with_operator().await;
    let body = json!({"template": "api-test", "to_version": "1.1.0", "mode": "preview",
        "selector": {"clusters": [cid], "tenants": [common::TENANT]}});
    let r = call_with(
        &ops,
        Req::operator(Method::POST, "/v1/admin/rollouts").body(&body),
    )
    .await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    out.push((Method::POST, "/v1/admin/rollouts", r));
    let r = call_with(&ops, Req::operator(Method::GET, "/v1/admin/rollouts")).await;
    out.push((Method::GET, "/v1/admin/rollouts", r));
    let one = format!("/v1/admin/rollouts/{id}");
    let r = call_with(&ops, Req::operator(Method::GET, &one)).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    out.push((Method::GET, "/v1/admin/rollouts/{id}", r));
    for (verb, template) in [
        ("pause", "/v1/admin/rollouts/{id}/pause"),
        ("resume", "/v1/admin/rollouts/{id}/resume"),
        ("abort", "/v1/admin/rollouts/{id}/abort"),
    ] {
        let r = call_with(&ops, Req::operator(Method::POST, &format!("{one}/{verb}"))).await;
        assert_eq!(r.status.as_u16(), 200, "{verb}: {}", r.text);
        out.push((Method::POST, template, r));
    }
    out
}

/// On a thread with a large stack: this test's future, awaiting every route's handler directly, is deep in a
/// debug build (a rollout's start runs the plan decision of each member within the request) and overflowed
/// libtest's 2 MiB test thread.
#[test]
fn every_route_answers_as_the_document_says() {
    strato_testbed::run_async("every_route_answers_as_the_document_says", every_route_answers);
}

async fn every_route_answers() {
    let api = Api::new().await;
    let spec = spec();
    let mut covered = BTreeSet::new();
    let mut check = |method: Method, template: &str, r: &Resp| {
        covered.insert(conforms(&spec, method.as_str(), template, r));
    };
    let call = |name: &str, method: Method, path: &str| Req::load(name).method(method).path(path);

    check(
        Method::GET,
        "/healthz",
        &api.call(call("healthz", Method::GET, "/healthz")).await,
    );
    let r = api.call(Req::load("create-cluster")).await;
    check(Method::POST, "/v1/clusters", &r);
    let cid = r.body["cluster"]["id"].as_str().unwrap().to_owned();
    let oid = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let cluster = format!("/v1/clusters/{cid}");
    check(
        Method::GET,
        "/v1/clusters",
        &api.call(Req::load("list-clusters").query("")).await,
    );
    let r = api.call(call("get-cluster", Method::GET, &cluster)).await;
    check(Method::GET, "/v1/clusters/{id}", &r);
    let r = api
        .call(
            call("update-cluster-drift", Method::PATCH, &cluster)
                .body(&json!({"drift": {"policy": "reconcile"}})),
        )
        .await;
    check(Method::PATCH, "/v1/clusters/{id}", &r);
    // A PENDING cluster cannot be retried (409 problem).
    let r = api
        .call(call("retry-cluster", Method::POST, &format!("{cluster}/retry")))
        .await;
    check(Method::POST, "/v1/clusters/{id}/retry", &r);
    let r = api
        .call(call(
            "get-cluster",
            Method::GET,
            &format!("{cluster}/state-versions"),
        ))
        .await;
    check(Method::GET, "/v1/clusters/{id}/state-versions", &r);
    let r = api
        .call(call(
            "retry-cluster",
            Method::POST,
            &format!("{cluster}/state-versions/v-nope/restore"),
        ))
        .await;
    check(
        Method::POST,
        "/v1/clusters/{id}/state-versions/{version}/restore",
        &r,
    );
    let r = api
        .call(call(
            "list-cluster-operations",
            Method::GET,
            &format!("{cluster}/operations"),
        ))
        .await;
    check(Method::GET, "/v1/clusters/{id}/operations", &r);
    let operation = format!("/v1/operations/{oid}");
    check(
        Method::GET,
        "/v1/operations/{id}",
        &api.call(call("get-operation", Method::GET, &operation)).await,
    );
    let r = api
        .call(call(
            "get-operation-timeline",
            Method::GET,
            &format!("{operation}/timeline"),
        ))
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["entries"][0]["event"], "queued");
    check(Method::GET, "/v1/operations/{id}/timeline", &r);

    // An ACTIVE cluster: a drift check, then a delete, are queued (202).
    let mut c = api
        .ctx
        .store
        .get_cluster(&common::TENANT.parse().unwrap(), &cid.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    // No endpoint yet: no kubeconfig (409 saying why).
    let kubeconfig = format!("{cluster}/kubeconfig");
    let r = api.call(call("get-cluster", Method::GET, &kubeconfig)).await;
    assert_eq!(r.status, 409, "{:?}", r.body);
    check(Method::GET, "/v1/clusters/{id}/kubeconfig", &r);
    c = c.in_state(ClusterState::Active);
    c.outputs.insert(
        "cluster_endpoint".into(),
        json!("https://abc.gr7.eu-west-1.eks.amazonaws.com"),
    );
    c.outputs.insert(
        "cluster_ca_certificate".into(),
        json!("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="),
    );
    api.ctx.store.save_cluster(&mut c).await.unwrap();
    let r = api.call(call("get-cluster", Method::GET, &kubeconfig)).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["context"], "strato-prod-eu", "{:?}", r.body);
    assert!(
        r.body["kubeconfig"].as_str().unwrap().contains("get-token"),
        "{:?}",
        r.body
    );
    check(Method::GET, "/v1/clusters/{id}/kubeconfig", &r);
    let r = api
        .call(call(
            "drift-check",
            Method::POST,
            &format!("{cluster}/drift-check"),
        ))
        .await;
    check(Method::POST, "/v1/clusters/{id}/drift-check", &r);
    let check_op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let r = api
        .call(call(
            "cancel-operation",
            Method::POST,
            &format!("/v1/operations/{check_op}/cancel"),
        ))
        .await;
    check(Method::POST, "/v1/operations/{id}/cancel", &r);

    // A preview of an update of the ACTIVE cluster: a `plan` operation queued (202), the cluster unchanged.
    let r = api
        .call(
            call("update-cluster", Method::POST, &format!("{cluster}/plan"))
                .body(&json!({"variables": {"node_count": 4}})),
        )
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    assert_eq!(r.body["operation"]["kind"], "plan", "{:?}", r.body);
    assert_eq!(r.body["cluster"]["state"], "ACTIVE", "{:?}", r.body);
    check(Method::POST, "/v1/clusters/{id}/plan", &r);

    // Another check, parked as a planned operation awaiting approval: approved (202, with its plan and the
    // decision), then a rejection is too late (409).
    let r = api
        .call(call(
            "drift-check",
            Method::POST,
            &format!("{cluster}/drift-check"),
        ))
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let waiting: strato_domain::ids::OperationId =
        r.body["operation"]["id"].as_str().unwrap().parse().unwrap();
    let mut op = api.ctx.store.get_operation(&waiting).await.unwrap().unwrap();
    op.status = strato_domain::model::OperationStatus::AwaitingApproval;
    op.approval = Some(strato_domain::approval::Approval::request(
        strato_fakes::saved_plan(),
        None,
        strato_domain::ts::now(),
        time::Duration::hours(1),
    ));
    api.ctx.store.save_operation(&mut op, false).await.unwrap();
    let decide = |verb: &str| {
        call(
            "cancel-operation",
            Method::POST,
            &format!("/v1/operations/{waiting}/{verb}"),
        )
        .scope(Some("operations:approve"))
        .sub("lead-approver")
        .body(&json!({"comment": "contract"}))
    };
    let r = api.call(decide("approve")).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    assert_eq!(
        r.body["approval"]["decision"]["verdict"], "approved",
        "{:?}",
        r.body
    );
    check(Method::POST, "/v1/operations/{id}/approve", &r);
    let r = api.call(decide("reject")).await;
    assert_eq!(r.status, 409, "{:?}", r.body);
    check(Method::POST, "/v1/operations/{id}/reject", &r);
    check(
        Method::DELETE,
        "/v1/clusters/{id}",
        &api.call(call("delete-cluster", Method::DELETE, &cluster)).await,
    );

    check(
        Method::POST,
        "/v1/estimates",
        &api.call(Req::load("create-estimate")).await,
    );
    check(
        Method::GET,
        "/v1/webhook",
        &api.call(Req::load("get-webhook")).await,
    );
    check(
        Method::PUT,
        "/v1/webhook",
        &api.call(Req::load("put-webhook")).await,
    );
    check(
        Method::DELETE,
        "/v1/webhook",
        &api.call(Req::load("delete-webhook")).await,
    );
    let policy = |m: Method, path: &str| Req::load("put-webhook").method(m).path(path);
    let rego = json!({"source": "package strato.request\n\ndeny contains \"never\" if false\n"});
    let r = api
        .call(policy(Method::PUT, "/v1/policies/sample").body(&rego))
        .await;
    check(Method::PUT, "/v1/policies/{name}", &r);
    let r = api.call(policy(Method::GET, "/v1/policies").raw_body("")).await;
    check(Method::GET, "/v1/policies", &r);
    let r = api
        .call(policy(Method::GET, "/v1/policies/sample").raw_body(""))
        .await;
    check(Method::GET, "/v1/policies/{name}", &r);
    let r = api
        .call(policy(Method::DELETE, "/v1/policies/sample").raw_body(""))
        .await;
    check(Method::DELETE, "/v1/policies/{name}", &r);
    let token = json!({
        "token": "dop_v1_contract0123456789abcdef0123456789",
        "storage_access_key_id": "DO00CONTRACT0123456789",
        "storage_secret_access_key": "contract/secret0123456789abcdefABCDEF",
    });
    let r = api
        .call(policy(Method::PUT, "/v1/tenant/cloud-tokens/digitalocean").body(&token))
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    check(Method::PUT, "/v1/tenant/cloud-tokens/{provider}", &r);
    let r = api
        .call(policy(Method::GET, "/v1/tenant/cloud-tokens").raw_body(""))
        .await;
    check(Method::GET, "/v1/tenant/cloud-tokens", &r);
    let r = api
        .call(policy(Method::DELETE, "/v1/tenant/cloud-tokens/digitalocean").raw_body(""))
        .await;
    check(Method::DELETE, "/v1/tenant/cloud-tokens/{provider}", &r);
    check(
        Method::GET,
        "/v1/tenant/target-access",
        &api.call(Req::load("get-target-access")).await,
    );
    check(
        Method::GET,
        "/v1/templates",
        &api.call(Req::load("list-templates")).await,
    );
    let r = api
        .call(call("get-template", Method::GET, "/v1/templates/api-test").query(""))
        .await;
    check(Method::GET, "/v1/templates/{name}", &r);
    // Tickets need the ws function's signing secret.
    let ticketing = api
        .ctx_with(&[("STRATO_JWT_SECRET", "contract-secret-0123456789abcdef0123")])
        .await;
    check(
        Method::POST,
        "/v1/ws-tickets",
        &call_with(&service(ticketing), Req::load("create-ws-ticket")).await,
    );
    // The issuer's documents: 404 where the deployment issues no tokens, 200 where it does (its
    // signing key on moto's KMS); the JWKS's key is the one that signs.
    for path in ["/.well-known/openid-configuration", "/.well-known/jwks.json"] {
        let r = api.call(call("healthz", Method::GET, path)).await;
        assert_eq!(r.status.as_u16(), 404, "{}", r.text);
        check(Method::GET, path, &r);
    }
    strato_aws::resources::create_signing_key(&api.env.aws, &api.env.names)
        .await
        .unwrap();
    let issuing = service(
        api.ctx_with(&[("STRATO_OIDC_ISSUER", "https://api.strato.example.com")])
            .await,
    );
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
    for (m, template, r) in Box::pin(rollout_routes(&api)).await {
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

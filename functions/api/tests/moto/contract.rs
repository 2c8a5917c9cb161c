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

/// The answers so far, each under the route (method, path template) it is an answer of.
#[derive(Default)]
struct Answers(Vec<(Method, &'static str, Resp)>);

impl Answers {
    /// Sends `req` to `svc` as a call of route `template` (by the request's method) and keeps the answer;
    /// when `status` is given, the answer must have it.
    async fn call(
        &mut self,
        svc: &ApiService,
        template: &'static str,
        req: Req,
        status: Option<u16>,
    ) -> &Resp {
        let method = req.http_method();
        let r = call_with(svc, req).await;
        if let Some(status) = status {
            assert_eq!(r.status.as_u16(), status, "{method} {template}: {}", r.text);
        }
        self.0.push((method, template, r));
        &self.0.last().expect("just kept").2
    }

    /// Sends each (sample, route template) of the samples whose method and path are the route's own.
    async fn samples(&mut self, svc: &ApiService, samples: &[(&str, &'static str)]) {
        for (sample, template) in samples {
            self.call(svc, template, Req::load(sample), None).await;
        }
    }
}

/// One call of each operator route, with the operator's token.
async fn operator_routes(api: &Api) -> Answers {
    let ops = api.with_operator().await;
    let mut out = Answers::default();
    let op = Req::operator;
    let tenant = json!({"id": "contract-co", "max_clusters": 4});
    let tenants = "/v1/admin/tenants";
    out.call(&ops, tenants, op(Method::POST, tenants).body(&tenant), Some(201))
        .await;
    out.call(&ops, tenants, op(Method::GET, tenants), None).await;
    let one = "/v1/admin/tenants/contract-co";
    out.call(&ops, "/v1/admin/tenants/{tenant}", op(Method::GET, one), None)
        .await;
    let settings = json!({"monthly_budget": 50, "approval": "required"});
    let req = op(Method::PATCH, one).body(&settings);
    out.call(&ops, "/v1/admin/tenants/{tenant}", req, Some(200)).await;
    let req = op(Method::GET, &format!("{one}/audit"));
    out.call(&ops, "/v1/admin/tenants/{tenant}/audit", req, None)
        .await;
    let policy = format!("{one}/policies/no-big");
    let source = "package strato.request\n\ndeny contains \"too many nodes\" if input.node_count > 50\n";
    let named = "/v1/admin/tenants/{tenant}/policies/{name}";
    let req = op(Method::PUT, &policy).body(&json!({ "source": source }));
    out.call(&ops, named, req, Some(200)).await;
    let req = op(Method::GET, &format!("{one}/policies"));
    out.call(&ops, "/v1/admin/tenants/{tenant}/policies", req, Some(200))
        .await;
    let req = op(Method::DELETE, &policy).raw_body("");
    out.call(&ops, named, req, Some(200)).await;
    for listed in ["/v1/admin/clusters", "/v1/admin/operations"] {
        out.call(&ops, listed, op(Method::GET, listed), Some(200)).await;
    }
    // Boxed: this future is already large.
    Box::pin(template_routes(&ops, &mut out)).await;
    out
}

/// The template catalog: a version published through the API, deprecated, then yanked.
async fn template_routes(ops: &ApiService, out: &mut Answers) {
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
    let req = post(&version, json!({"bundle": encoded}));
    out.call(
        ops,
        "/v1/admin/templates/{name}/versions/{version}",
        req,
        Some(201),
    )
    .await;
    let req = Req::operator(Method::GET, "/v1/admin/templates");
    out.call(ops, "/v1/admin/templates", req, Some(200)).await;
    let req = post(&format!("{version}/deprecate"), json!({}));
    let template = "/v1/admin/templates/{name}/versions/{version}/deprecate";
    out.call(ops, template, req, Some(200)).await;
    let req = post(&format!("{version}/yank"), json!({"reason": "contract"}));
    let template = "/v1/admin/templates/{name}/versions/{version}/yank";
    out.call(ops, template, req, Some(200)).await;
}

/// One call of each rollout route: a tenant's preview of its own new cluster on 1.1.0, steered through
/// pause, resume and abort; then the same by the platform operator, across tenants.
async fn rollout_routes(api: &Api) -> Answers {
    let mut out = Answers::default();
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
    let req = tenant(Method::POST, "/v1/rollouts").body(&body);
    let r = out.call(&api.svc, "/v1/rollouts", req, Some(202)).await;
    assert_eq!(r.body["members"][0]["status"], "planning", "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    let req = tenant(Method::GET, "/v1/rollouts");
    out.call(&api.svc, "/v1/rollouts", req, Some(200)).await;
    let one = format!("/v1/rollouts/{id}");
    let req = tenant(Method::GET, &one);
    out.call(&api.svc, "/v1/rollouts/{id}", req, Some(200)).await;
    for (verb, template) in [
        ("pause", "/v1/rollouts/{id}/pause"),
        ("resume", "/v1/rollouts/{id}/resume"),
        ("abort", "/v1/rollouts/{id}/abort"),
    ] {
        let req = tenant(Method::POST, &format!("{one}/{verb}"));
        out.call(&api.svc, template, req, Some(200)).await;
    }

    let ops = api.with_operator().await;
    let body = json!({"template": "api-test", "to_version": "1.1.0", "mode": "preview",
        "selector": {"clusters": [cid], "tenants": [common::TENANT]}});
    let req = Req::operator(Method::POST, "/v1/admin/rollouts").body(&body);
    let r = out.call(&ops, "/v1/admin/rollouts", req, Some(202)).await;
    let id = r.body["id"].as_str().unwrap().to_owned();
    let req = Req::operator(Method::GET, "/v1/admin/rollouts");
    out.call(&ops, "/v1/admin/rollouts", req, None).await;
    let one = format!("/v1/admin/rollouts/{id}");
    let req = Req::operator(Method::GET, &one);
    out.call(&ops, "/v1/admin/rollouts/{id}", req, Some(200)).await;
    for (verb, template) in [
        ("pause", "/v1/admin/rollouts/{id}/pause"),
        ("resume", "/v1/admin/rollouts/{id}/resume"),
        ("abort", "/v1/admin/rollouts/{id}/abort"),
    ] {
        let req = Req::operator(Method::POST, &format!("{one}/{verb}"));
        out.call(&ops, template, req, Some(200)).await;
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
    let svc = &api.svc;
    let mut out = Answers::default();
    let call = |name: &str, method: Method, path: &str| Req::load(name).method(method).path(path);

    out.call(svc, "/healthz", call("healthz", Method::GET, "/healthz"), None)
        .await;
    let r = out
        .call(svc, "/v1/clusters", Req::load("create-cluster"), None)
        .await;
    let cid = r.body["cluster"]["id"].as_str().unwrap().to_owned();
    let oid = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let cluster = format!("/v1/clusters/{cid}");
    let req = Req::load("list-clusters").query("");
    out.call(svc, "/v1/clusters", req, None).await;
    let req = call("get-cluster", Method::GET, &cluster);
    out.call(svc, "/v1/clusters/{id}", req, None).await;
    let req = call("update-cluster-drift", Method::PATCH, &cluster)
        .body(&json!({"drift": {"policy": "reconcile"}}));
    out.call(svc, "/v1/clusters/{id}", req, None).await;
    // A PENDING cluster cannot be retried (409 problem).
    let req = call("retry-cluster", Method::POST, &format!("{cluster}/retry"));
    out.call(svc, "/v1/clusters/{id}/retry", req, None).await;
    let req = call("get-cluster", Method::GET, &format!("{cluster}/state-versions"));
    out.call(svc, "/v1/clusters/{id}/state-versions", req, None).await;
    let restore = format!("{cluster}/state-versions/v-nope/restore");
    let req = call("retry-cluster", Method::POST, &restore);
    let template = "/v1/clusters/{id}/state-versions/{version}/restore";
    out.call(svc, template, req, None).await;
    let req = call(
        "list-cluster-operations",
        Method::GET,
        &format!("{cluster}/operations"),
    );
    out.call(svc, "/v1/clusters/{id}/operations", req, None).await;
    let operation = format!("/v1/operations/{oid}");
    let req = call("get-operation", Method::GET, &operation);
    out.call(svc, "/v1/operations/{id}", req, None).await;
    let req = call(
        "get-operation-timeline",
        Method::GET,
        &format!("{operation}/timeline"),
    );
    let r = out.call(svc, "/v1/operations/{id}/timeline", req, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["entries"][0]["event"], "queued");

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
    let req = call("get-cluster", Method::GET, &kubeconfig);
    let r = out.call(svc, "/v1/clusters/{id}/kubeconfig", req, None).await;
    assert_eq!(r.status, 409, "{:?}", r.body);
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
    let req = call("get-cluster", Method::GET, &kubeconfig);
    let r = out.call(svc, "/v1/clusters/{id}/kubeconfig", req, None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["context"], "strato-prod-eu", "{:?}", r.body);
    assert!(
        r.body["kubeconfig"].as_str().unwrap().contains("get-token"),
        "{:?}",
        r.body
    );
    let req = call("drift-check", Method::POST, &format!("{cluster}/drift-check"));
    let r = out.call(svc, "/v1/clusters/{id}/drift-check", req, None).await;
    let check_op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let cancel = format!("/v1/operations/{check_op}/cancel");
    let req = call("cancel-operation", Method::POST, &cancel);
    out.call(svc, "/v1/operations/{id}/cancel", req, None).await;

    // A preview of an update of the ACTIVE cluster: a `plan` operation queued (202), the cluster unchanged.
    let req = call("update-cluster", Method::POST, &format!("{cluster}/plan"))
        .body(&json!({"variables": {"node_count": 4}}));
    let r = out.call(svc, "/v1/clusters/{id}/plan", req, None).await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    assert_eq!(r.body["operation"]["kind"], "plan", "{:?}", r.body);
    assert_eq!(r.body["cluster"]["state"], "ACTIVE", "{:?}", r.body);

    // Another check, parked as a planned operation awaiting approval: approved (202, with its plan and the
    // decision), then a rejection is too late (409).
    let req = call("drift-check", Method::POST, &format!("{cluster}/drift-check"));
    let r = api.call(req).await;
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
    let r = out
        .call(svc, "/v1/operations/{id}/approve", decide("approve"), None)
        .await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    assert_eq!(
        r.body["approval"]["decision"]["verdict"], "approved",
        "{:?}",
        r.body
    );
    let r = out
        .call(svc, "/v1/operations/{id}/reject", decide("reject"), None)
        .await;
    assert_eq!(r.status, 409, "{:?}", r.body);
    let req = call("delete-cluster", Method::DELETE, &cluster);
    out.call(svc, "/v1/clusters/{id}", req, None).await;

    // The samples whose method and path are the route's own.
    out.samples(
        svc,
        &[
            ("create-estimate", "/v1/estimates"),
            ("get-webhook", "/v1/webhook"),
            ("put-webhook", "/v1/webhook"),
            ("delete-webhook", "/v1/webhook"),
        ],
    )
    .await;
    let policy = |m: Method, path: &str| Req::load("put-webhook").method(m).path(path);
    let rego = json!({"source": "package strato.request\n\ndeny contains \"never\" if false\n"});
    let req = policy(Method::PUT, "/v1/policies/sample").body(&rego);
    out.call(svc, "/v1/policies/{name}", req, None).await;
    let req = policy(Method::GET, "/v1/policies").raw_body("");
    out.call(svc, "/v1/policies", req, None).await;
    for m in [Method::GET, Method::DELETE] {
        let req = policy(m, "/v1/policies/sample").raw_body("");
        out.call(svc, "/v1/policies/{name}", req, None).await;
    }
    let token = json!({
        "token": "dop_v1_contract0123456789abcdef0123456789",
        "storage_access_key_id": "DO00CONTRACT0123456789",
        "storage_secret_access_key": "contract/secret0123456789abcdefABCDEF",
    });
    let req = policy(Method::PUT, "/v1/tenant/cloud-tokens/digitalocean").body(&token);
    out.call(svc, "/v1/tenant/cloud-tokens/{provider}", req, Some(200))
        .await;
    let req = policy(Method::GET, "/v1/tenant/cloud-tokens").raw_body("");
    out.call(svc, "/v1/tenant/cloud-tokens", req, None).await;
    let req = policy(Method::DELETE, "/v1/tenant/cloud-tokens/digitalocean").raw_body("");
    out.call(svc, "/v1/tenant/cloud-tokens/{provider}", req, None)
        .await;
    out.samples(
        svc,
        &[
            ("get-target-access", "/v1/tenant/target-access"),
            ("list-templates", "/v1/templates"),
        ],
    )
    .await;
    let req = call("get-template", Method::GET, "/v1/templates/api-test").query("");
    out.call(svc, "/v1/templates/{name}", req, None).await;
    // Tickets need the ws function's signing secret.
    let ticketing = api
        .ctx_with(&[("STRATO_JWT_SECRET", "contract-secret-0123456789abcdef0123")])
        .await;
    let req = Req::load("create-ws-ticket");
    out.call(&service(ticketing), "/v1/ws-tickets", req, None).await;
    // The issuer's documents: 404 where the deployment issues no tokens, 200 where it does (its
    // signing key on moto's KMS); the JWKS's key is the one that signs.
    for path in ["/.well-known/openid-configuration", "/.well-known/jwks.json"] {
        out.call(svc, path, call("healthz", Method::GET, path), Some(404))
            .await;
    }
    strato_aws::resources::create_signing_key(&api.env.aws, &api.env.names)
        .await
        .unwrap();
    let issuing = service(
        api.ctx_with(&[("STRATO_OIDC_ISSUER", "https://api.strato.example.com")])
            .await,
    );
    let path = "/.well-known/openid-configuration";
    let r = out
        .call(&issuing, path, call("healthz", Method::GET, path), Some(200))
        .await;
    assert_eq!(
        r.body["jwks_uri"],
        "https://api.strato.example.com/.well-known/jwks.json"
    );
    let path = "/.well-known/jwks.json";
    let r = out
        .call(&issuing, path, call("healthz", Method::GET, path), Some(200))
        .await;
    assert_eq!(r.body["keys"][0]["alg"], "RS256");
    assert_eq!(r.body["keys"][0]["kty"], "RSA");
    let req = Req::load("get-target-access");
    let r = out
        .call(&issuing, "/v1/tenant/target-access", req, Some(200))
        .await;
    assert_eq!(
        r.body["federation"]["gcp"]["attribute_mapping"]["google.subject"],
        "assertion.sub"
    );
    // No cluster has this agent token (401 problem); the audit log.
    out.samples(
        svc,
        &[
            ("agent-register", "/v1/agent/register"),
            ("agent-heartbeat", "/v1/agent/heartbeat"),
            ("agent-credential", "/v1/agent/credential"),
            ("list-audit", "/v1/audit"),
        ],
    )
    .await;

    // The platform operator's routes, with the operator's token (boxed: this test's future is large).
    let operator = Box::pin(operator_routes(&api)).await;
    let rollouts = Box::pin(rollout_routes(&api)).await;

    // Each answer as the document says.
    let spec = spec();
    let covered: BTreeSet<_> = [out, operator, rollouts]
        .iter()
        .flat_map(|answers| &answers.0)
        .map(|(m, template, r)| conforms(&spec, m.as_str(), template, r))
        .collect();
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

#![allow(dead_code)] // Shared by several test binaries; each uses a different part.
//! Test harness: the library's `handle` driven with the sample API Gateway events in `events/api/`,
//! against a private moto with its own resources and the fixture templates published.

use std::collections::HashMap;
use std::path::PathBuf;

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use lambda_http::http::{HeaderMap, HeaderValue, Method, StatusCode};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Request};
use serde_json::Value;
use strato_api::{ApiService, Config, Ctx, service};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::JobMessage;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationStatus};
use strato_domain::template::Template;
use strato_domain::webhook::Webhook;
use strato_testbed::TestEnv;

pub const TENANT: &str = "acme";
pub const SUBJECT: &str = "user-7f3a";

/// The workspace root, found from whichever crate includes this module (strato-api, strato-tests).
pub fn workspace() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("Cargo.lock").exists())
        .map(PathBuf::from)
        .unwrap_or(here)
}

pub fn fixture_template(version: &str) -> Template {
    let path = workspace().join(format!(
        "functions/api/tests/fixtures/api-test/template-{version}.toml"
    ));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Template::from_toml(&text).unwrap()
}

/// A stored spec's variable as the runner sees it: sealed values opened with Strato's key (moto's KMS),
/// bound to the tenant and cluster the spec belongs to.
pub async fn opened(
    api: &Api,
    spec: &strato_domain::model::ClusterSpec,
    tenant: &str,
    cluster: &str,
    var: &str,
) -> Value {
    let spec = strato_domain::sealed::open_spec(
        &api.ctx.keys,
        &tenant.parse().unwrap(),
        &cluster.parse().unwrap(),
        spec,
    )
    .await
    .expect("sealed values open for their own item");
    spec.variables[var].clone()
}

pub struct Api {
    pub env: TestEnv,
    pub ctx: Ctx,
    /// The router over `ctx`, built once.
    pub svc: ApiService,
}

/// One response, with its body parsed.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Resp {
    /// Asserts an RFC 9457 problem with `status`, and returns it.
    pub fn problem(&self, status: u16) -> &Value {
        assert_eq!(self.status.as_u16(), status, "{}", self.text);
        assert_eq!(self.headers["content-type"], "application/problem+json");
        let b = &self.body;
        assert_eq!(b["status"], status, "{}", self.text);
        assert!(
            b["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("urn:strato:problem:"))
        );
        assert!(b["title"].as_str().is_some_and(|t| !t.is_empty()));
        assert!(b["detail"].as_str().is_some_and(|t| !t.is_empty()));
        b
    }

    /// Asserts a problem with `status` whose `type` ends in `kind`.
    pub fn assert_problem(&self, status: u16, kind: &str) {
        let t = self.problem(status)["type"].as_str().unwrap();
        assert!(t.ends_with(kind), "{t}: {}", self.text);
    }

    /// The `errors[].field` values of a problem.
    pub fn fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| e["field"].as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn error_for(&self, field: &str) -> &Value {
        self.body["errors"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["field"] == field))
            .unwrap_or_else(|| panic!("no error for {field}: {}", self.text))
    }

    /// The string `field` of each item of the body's array `list`, in order.
    pub fn each(&self, list: &str, field: &str) -> Vec<&str> {
        let items = self.body[list]
            .as_array()
            .unwrap_or_else(|| panic!("no array {list}: {}", self.text));
        items.iter().map(|x| x[field].as_str().unwrap()).collect()
    }

    /// Asserts that the error for `field` says `needle` in its `key` (`problem` or `allowed`).
    pub fn assert_says(&self, field: &str, key: &str, needle: &str) {
        let said = self.error_for(field)[key]
            .as_str()
            .unwrap_or_else(|| panic!("the error for {field} has no {key}: {}", self.text));
        assert!(said.contains(needle), "{}", self.text);
    }
}

/// A sample event, patched per test.
pub struct Req(ApiGatewayV2httpRequest);

impl Req {
    /// `events/api/<name>.json`, or its copy in `tests/fixtures/events/` where the sample names a template:
    /// the published samples name the catalog's (what devstack publishes), these tests the `api-test`
    /// fixture, which has a variable of every kind.
    pub fn load(name: &str) -> Self {
        let fixture = workspace().join(format!("functions/api/tests/fixtures/events/{name}.json"));
        let path = if fixture.is_file() {
            fixture
        } else {
            workspace().join(format!("events/api/{name}.json"))
        };
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Self(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
    }

    pub fn path(mut self, path: &str) -> Self {
        self.0.raw_path = Some(path.to_owned());
        self.0.request_context.http.path = Some(path.to_owned());
        self
    }

    pub fn method(mut self, m: Method) -> Self {
        self.0.request_context.http.method = m;
        self
    }

    pub fn query(mut self, q: &str) -> Self {
        self.0.raw_query_string = Some(q.to_owned());
        self
    }

    /// A JSON body, declared as such (a sample without a body has no `Content-Type`).
    pub fn body(mut self, v: &Value) -> Self {
        self.0.body = Some(v.to_string());
        self.0
            .headers
            .entry("content-type")
            .or_insert(HeaderValue::from_static("application/json"));
        self
    }

    pub fn raw_body(mut self, s: &str) -> Self {
        self.0.body = Some(s.to_owned());
        self
    }

    pub fn header(mut self, k: &'static str, v: &str) -> Self {
        self.0.headers.insert(k, HeaderValue::from_str(v).unwrap());
        self
    }

    /// The token's claims, to change.
    fn claims(&mut self) -> &mut HashMap<String, String> {
        let jwt = self
            .0
            .request_context
            .authorizer
            .as_mut()
            .and_then(|a| a.jwt.as_mut());
        &mut jwt.expect("event has JWT claims").claims
    }

    pub fn tenant(mut self, t: &str) -> Self {
        self.claims().insert("tenant_id".into(), t.into());
        self
    }

    /// The token's `scope` claim (`None`: no scope claim at all).
    pub fn scope(mut self, scope: Option<&str>) -> Self {
        match scope {
            Some(s) => self.claims().insert("scope".into(), s.into()),
            None => self.claims().remove("scope"),
        };
        self
    }

    /// The token's `sub` claim (the principal the audit log records).
    pub fn sub(mut self, sub: &str) -> Self {
        self.claims().insert("sub".into(), sub.into());
        self
    }

    /// The platform operator's token (devstack's audience `strato-operator`, no tenant claim,
    /// `platform:admin`, `sub` = `ops-1`), on `method path`.
    pub fn operator(method: Method, path: &str) -> Self {
        let mut r = Req::load("list-clusters")
            .query("")
            .method(method)
            .path(path)
            .drop_claim("tenant_id")
            .scope(Some("platform:admin"))
            .sub("ops-1");
        r.claims().insert("aud".into(), OPERATOR_AUDIENCE.into());
        r
    }

    /// The token without `claim` (e.g. a token without `sub`, which the authorizer still accepts).
    pub fn drop_claim(mut self, claim: &str) -> Self {
        self.claims().remove(claim);
        self
    }

    pub fn without_claims(mut self) -> Self {
        self.0.request_context.authorizer = None;
        self
    }

    /// The request's method.
    pub fn http_method(&self) -> Method {
        self.0.request_context.http.method.clone()
    }

    pub fn body_value(&self) -> Value {
        serde_json::from_str(self.0.body.as_deref().unwrap_or("null")).unwrap()
    }

    pub fn into_request(self) -> Request {
        Request::from(LambdaRequest::ApiGatewayV2(self.0))
    }
}

/// The operator audience [`Api::with_operator`] configures.
pub const OPERATOR_AUDIENCE: &str = "strato-operator";

/// A context on `env`'s resources with the settings `extra` (name, value) besides the resource prefix.
async fn ctx_on(env: &TestEnv, extra: &[(&str, &str)]) -> Ctx {
    Ctx::new(&env.aws, config_on(env, extra)).await.unwrap()
}

/// The api's settings on `env`'s resources: `extra` (name, value) besides the resource prefix.
fn config_on(env: &TestEnv, extra: &[(&str, &str)]) -> Config {
    let prefix = env.names.prefix().to_owned();
    Config::from_lookup(|k| {
        if k == "STRATO_RESOURCE_PREFIX" {
            return Some(prefix.clone());
        }
        let setting = extra.iter().find(|(name, _)| *name == k);
        setting.map(|(_, value)| (*value).to_owned())
    })
    .unwrap()
}

impl Api {
    /// The same resources served with an operator identity configured (`STRATO_OPERATOR_AUDIENCE`).
    pub async fn with_operator(&self) -> ApiService {
        service(
            self.ctx_with(&[("STRATO_OPERATOR_AUDIENCE", OPERATOR_AUDIENCE)])
                .await,
        )
    }

    /// A fresh api process on the same resources whose AWS calls `counter` counts.
    pub async fn counted(&self, counter: &strato_aws::aws::CallCounter) -> ApiService {
        let config = config_on(&self.env, &[]);
        service(Ctx::new(&self.env.aws.counted(counter), config).await.unwrap())
    }

    /// A context on the same resources with the settings `extra` (name, value) besides the resource prefix.
    pub async fn ctx_with(&self, extra: &[(&str, &str)]) -> Ctx {
        ctx_on(&self.env, extra).await
    }

    pub async fn new() -> Self {
        let env = TestEnv::new().await;
        let ctx = ctx_on(&env, &[]).await;
        for v in ["1.0.0", "1.1.0"] {
            let t = fixture_template(v);
            ctx.store
                .put_template(
                    &t.manifest,
                    &"0".repeat(64),
                    &format!("templates/api-test/{v}.tar.gz"),
                )
                .await
                .unwrap();
        }
        let svc = service(ctx.clone());
        Self { env, ctx, svc }
    }

    /// The tenant's cluster `id` as stored.
    pub async fn stored_cluster(&self, id: &ClusterId) -> Cluster {
        let tenant: TenantId = TENANT.parse().unwrap();
        self.ctx.store.get_cluster(&tenant, id).await.unwrap().unwrap()
    }

    /// The tenant's webhook settings as stored, if any.
    pub async fn stored_webhook(&self) -> Option<Webhook> {
        let tenant: TenantId = TENANT.parse().unwrap();
        self.ctx.store.tenant_webhook(&tenant).await.unwrap()
    }

    /// Moves the tenant's cluster `id` to `state` in the store, as a run would have.
    pub async fn set_state(&self, id: &str, state: ClusterState) {
        let mut c = self.stored_cluster(&id.parse().unwrap()).await;
        c = c.in_state(state);
        self.ctx.store.save_cluster(&mut c).await.unwrap();
    }

    /// Operation `id` as stored.
    pub async fn stored_operation(&self, id: &str) -> Operation {
        let id: OperationId = id.parse().unwrap();
        self.ctx.store.get_operation(&id).await.unwrap().unwrap()
    }

    /// Every operation of cluster `id`, as stored.
    pub async fn stored_operations(&self, id: &str) -> Vec<Operation> {
        let id: ClusterId = id.parse().unwrap();
        self.ctx.store.list_operations(&id).await.unwrap()
    }

    /// Sets operation `id`'s status in the store, as a run would have.
    pub async fn set_op_status(&self, id: &str, status: OperationStatus) {
        let mut op = self.stored_operation(id).await;
        let was_terminal = op.status.is_terminal();
        op.status = status;
        self.ctx
            .store
            .save_operation(&mut op, was_terminal)
            .await
            .unwrap();
    }

    /// Every item of a table, as DynamoDB returns it (no deserialization: what is at rest).
    pub async fn raw_items(&self, logical: &str) -> String {
        let out = self
            .env
            .aws
            .dynamodb
            .scan()
            .table_name(self.env.names.table(logical))
            .send()
            .await
            .unwrap();
        format!("{:?}", out.items())
    }

    /// The request `make` builds, sent twice with the same `Idempotency-Key`: the first answer and the
    /// replay.
    pub async fn twice_with_key(&self, make: impl Fn() -> Req, key: &str) -> (Resp, Resp) {
        let first = self.call(make().header("idempotency-key", key)).await;
        let again = self.call(make().header("idempotency-key", key)).await;
        (first, again)
    }

    pub async fn call(&self, req: Req) -> Resp {
        call_with(&self.svc, req).await
    }

    /// The create sample, with `name` and extra variables merged in.
    pub fn create_req(name: &str) -> Req {
        let r = Req::load("create-cluster");
        let mut body = r.body_value();
        body["name"] = name.into();
        r.body(&body)
    }

    /// Creates a cluster for `tenant`; returns (cluster id, operation id).
    pub async fn create(&self, tenant: &str, name: &str) -> (String, String) {
        let r = self.call(Self::create_req(name).tenant(tenant)).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
        (
            r.body["cluster"]["id"].as_str().unwrap().to_owned(),
            r.body["operation"]["id"].as_str().unwrap().to_owned(),
        )
    }

    /// Every job message currently in the jobs queue.
    pub async fn jobs(&self) -> Vec<JobMessage> {
        let mut out = Vec::new();
        loop {
            let page = self
                .env
                .aws
                .sqs
                .receive_message()
                .queue_url(&self.ctx.queues.jobs)
                .max_number_of_messages(10)
                .visibility_timeout(300)
                .send()
                .await
                .unwrap();
            let msgs = page.messages.unwrap_or_default();
            if msgs.is_empty() {
                return out;
            }
            for m in msgs {
                out.push(serde_json::from_str(m.body().unwrap()).unwrap());
            }
        }
    }
}

/// Calls the API as built once by [`service`] (a test with its own context builds its own).
pub async fn call_with(svc: &ApiService, req: Req) -> Resp {
    let resp = svc.handle(req.into_request()).await;
    let (parts, body) = resp.into_parts();
    let text = match body {
        Body::Empty => String::new(),
        Body::Text(t) => t,
        Body::Binary(b) => String::from_utf8(b).unwrap(),
        other => panic!("unexpected body {other:?}"),
    };
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("response is not JSON ({e}): {text}"))
    };
    Resp {
        status: parts.status,
        headers: parts.headers,
        body,
        text,
    }
}

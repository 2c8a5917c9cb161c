//! Strato's HTTP API (API Gateway HTTP API, payload v2). Tenants come from the JWT authorizer's claims;
//! every route is in [`ROUTES`], which the router, the OpenAPI document and its test all agree on.

mod agent;
mod clusters;
mod drift;
pub mod error;
mod estimates;
mod idempotency;
mod operations;
mod state;
mod target;
mod templates;
mod tenant;
mod tickets;
mod views;

use lambda_http::http::{Method, StatusCode, header};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::Value;
use strato_aws::aws::AwsClients;
use strato_aws::env::Env;
use strato_aws::queues::QueueUrls;
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_domain::ids::TenantId;

pub use error::ApiError;
pub use tickets::{TICKET_TTL, TicketSettings};

/// Settings read once per process from the environment.
#[derive(Clone)]
pub struct Config {
    /// Physical resource names (`STRATO_RESOURCE_PREFIX`, required).
    pub names: Names,
    /// The JWT claim that holds the tenant id (`STRATO_TENANT_CLAIM`, default `tenant_id`).
    pub tenant_claim: String,
    /// Largest accepted request body (`STRATO_MAX_BODY_BYTES`, default 64 KiB). Specs are small; anything
    /// bigger is a mistake or an attack, and is refused before it is parsed.
    pub max_body_bytes: usize,
    /// Secret the cluster agents' registration tokens are derived from (`STRATO_AGENT_TOKEN_SECRET`; in AWS
    /// injected from Secrets Manager). Needed only by templates that install the agent.
    pub agent_token_secret: Option<Vec<u8>>,
    /// How WebSocket tickets are signed (`STRATO_JWT_SECRET`, `STRATO_JWT_ISSUER`, `STRATO_JWT_AUDIENCE`: the
    /// ws function's own settings). Unset: `POST /v1/ws-tickets` fails.
    pub ws_tickets: Option<TicketSettings>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets are never printed.
        f.debug_struct("Config")
            .field("names", &self.names)
            .field("tenant_claim", &self.tenant_claim)
            .field("max_body_bytes", &self.max_body_bytes)
            .field(
                "agent_token_secret",
                &self.agent_token_secret.as_ref().map(|_| "(sensitive)"),
            )
            .field("ws_tickets", &self.ws_tickets)
            .finish()
    }
}

impl Config {
    pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;

    pub fn from_env() -> Result<Self, ApiError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The same parsing with another source of variables (tests, devstack).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ApiError> {
        let env = Env::new(get);
        Ok(Self {
            names: env.names()?,
            tenant_claim: env.or("STRATO_TENANT_CLAIM", "tenant_id"),
            max_body_bytes: env.positive("STRATO_MAX_BODY_BYTES", Self::DEFAULT_MAX_BODY_BYTES as u64)?
                as usize,
            agent_token_secret: env.optional("STRATO_AGENT_TOKEN_SECRET").map(String::into_bytes),
            ws_tickets: env.optional("STRATO_JWT_SECRET").map(|secret| TicketSettings {
                secret: secret.into_bytes(),
                issuer: env.optional("STRATO_JWT_ISSUER"),
                audience: env.optional("STRATO_JWT_AUDIENCE"),
            }),
        })
    }
}

/// Everything a request needs, built once per process and shared by every invocation.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub store: Store,
    pub sqs: aws_sdk_sqs::Client,
    pub s3: aws_sdk_s3::Client,
    pub queues: QueueUrls,
    pub config: Config,
}

impl Ctx {
    pub async fn new(aws: &AwsClients, config: Config) -> Result<Self, ApiError> {
        let queues = QueueUrls::resolve(&aws.sqs, &config.names).await?;
        Ok(Self {
            store: Store::new(aws.dynamodb.clone(), &config.names),
            sqs: aws.sqs.clone(),
            s3: aws.s3.clone(),
            queues,
            config,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    CreateCluster,
    ListClusters,
    GetCluster,
    UpdateCluster,
    DeleteCluster,
    RetryCluster,
    DriftCheck,
    ListStateVersions,
    RestoreStateVersion,
    ListClusterOperations,
    GetOperation,
    CancelOperation,
    CreateEstimate,
    GetWebhook,
    PutWebhook,
    DeleteWebhook,
    CreateWsTicket,
    ListTemplates,
    GetTemplate,
    AgentRegister,
    AgentHeartbeat,
}

#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: &'static str,
    /// Path template; `{x}` matches one non-empty segment.
    pub path: &'static str,
    pub endpoint: Endpoint,
}

const fn route(method: &'static str, path: &'static str, endpoint: Endpoint) -> Route {
    Route {
        method,
        path,
        endpoint,
    }
}

/// The API's route table: the router matches against it and `openapi.yaml` must document exactly it.
pub const ROUTES: &[Route] = &[
    route("GET", "/healthz", Endpoint::Health),
    route("POST", "/v1/clusters", Endpoint::CreateCluster),
    route("GET", "/v1/clusters", Endpoint::ListClusters),
    route("GET", "/v1/clusters/{id}", Endpoint::GetCluster),
    route("PATCH", "/v1/clusters/{id}", Endpoint::UpdateCluster),
    route("DELETE", "/v1/clusters/{id}", Endpoint::DeleteCluster),
    route("POST", "/v1/clusters/{id}/retry", Endpoint::RetryCluster),
    route("POST", "/v1/clusters/{id}/drift-check", Endpoint::DriftCheck),
    route(
        "GET",
        "/v1/clusters/{id}/state-versions",
        Endpoint::ListStateVersions,
    ),
    route(
        "POST",
        "/v1/clusters/{id}/state-versions/{version}/restore",
        Endpoint::RestoreStateVersion,
    ),
    route(
        "GET",
        "/v1/clusters/{id}/operations",
        Endpoint::ListClusterOperations,
    ),
    route("GET", "/v1/operations/{id}", Endpoint::GetOperation),
    route("POST", "/v1/operations/{id}/cancel", Endpoint::CancelOperation),
    route("POST", "/v1/estimates", Endpoint::CreateEstimate),
    route("GET", "/v1/webhook", Endpoint::GetWebhook),
    route("PUT", "/v1/webhook", Endpoint::PutWebhook),
    route("DELETE", "/v1/webhook", Endpoint::DeleteWebhook),
    route("POST", "/v1/ws-tickets", Endpoint::CreateWsTicket),
    route("GET", "/v1/templates", Endpoint::ListTemplates),
    route("GET", "/v1/templates/{name}", Endpoint::GetTemplate),
    // Authenticated by the cluster agent's token, not by a tenant JWT.
    route("POST", "/v1/agent/register", Endpoint::AgentRegister),
    route("POST", "/v1/agent/heartbeat", Endpoint::AgentHeartbeat),
];

/// Matches `path` against a route template, returning the captured segments in order.
fn match_path<'a>(template: &str, path: &'a str) -> Option<Vec<&'a str>> {
    let mut t = template.trim_matches('/').split('/');
    let mut p = path.trim_end_matches('/').trim_start_matches('/').split('/');
    let mut params = Vec::new();
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(params),
            (Some(ts), Some(ps)) if ts.starts_with('{') && !ps.is_empty() => params.push(ps),
            (Some(ts), Some(ps)) if ts == ps => {}
            _ => return None,
        }
    }
}

/// The route for `method path`, or the methods the path does support (405), or nothing (404).
fn find_route<'a>(method: &Method, path: &'a str) -> Result<(&'static Route, Vec<&'a str>), ApiError> {
    let mut allowed = Vec::new();
    for r in ROUTES {
        if let Some(params) = match_path(r.path, path) {
            if r.method == method.as_str() {
                return Ok((r, params));
            }
            allowed.push(r.method);
        }
    }
    if allowed.is_empty() {
        Err(ApiError::NotFound(format!(
            "no resource at {}",
            truncate(path, 100)
        )))
    } else {
        Err(ApiError::MethodNotAllowed { allowed })
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max).collect::<String>() + "…"
    }
}

/// A successful answer before it becomes an HTTP response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub location: Option<String>,
}

impl Reply {
    pub fn ok(body: Value) -> Self {
        Self {
            status: StatusCode::OK,
            body,
            location: None,
        }
    }

    pub fn accepted(body: Value, location: String) -> Self {
        Self {
            status: StatusCode::ACCEPTED,
            body,
            location: Some(location),
        }
    }

    fn into_response(self) -> Response<Body> {
        json_response(self.status, self.body.to_string(), self.location)
    }
}

pub(crate) fn json_response(status: StatusCode, body: String, location: Option<String>) -> Response<Body> {
    let content_type = if status.is_client_error() || status.is_server_error() {
        error::PROBLEM_JSON
    } else {
        "application/json"
    };
    let mut b = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type);
    if let Some(loc) = location {
        b = b.header(header::LOCATION, loc);
    }
    b.body(Body::Text(body))
        .unwrap_or_else(|_| Response::new(Body::Empty))
}

/// The authenticated caller: the tenant from the configured claim and the JWT subject.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub tenant: TenantId,
    pub subject: Option<String>,
}

fn caller(config: &Config, req: &Request) -> Result<Caller, ApiError> {
    let claims = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(rc)) => rc
            .authorizer
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .map(|j| &j.claims),
        _ => None,
    };
    let claims = claims.ok_or_else(|| ApiError::Unauthorized("the request carries no JWT claims".into()))?;
    let raw = claims
        .get(&config.tenant_claim)
        .ok_or_else(|| ApiError::Unauthorized(format!("the token has no '{}' claim", config.tenant_claim)))?;
    let tenant = raw.parse::<TenantId>().map_err(|_| {
        // The raw value is not echoed: it is attacker-controlled and useless to a legitimate caller.
        ApiError::Unauthorized(format!(
            "the token's '{}' claim is not a valid tenant id",
            config.tenant_claim
        ))
    })?;
    Ok(Caller {
        tenant,
        subject: claims.get("sub").cloned(),
    })
}

/// The path as the client sent it, without an API Gateway stage prefix (named stages put it there).
fn request_path(req: &Request) -> String {
    let raw = req.raw_http_path();
    let path = if raw.is_empty() { req.uri().path() } else { raw };
    if let Some(RequestContext::ApiGatewayV2(rc)) = req.request_context_ref()
        && let Some(stage) = rc.stage.as_deref().filter(|s| *s != "$default")
        && let Some(rest) = path.strip_prefix(&format!("/{stage}/"))
    {
        return format!("/{rest}");
    }
    path.to_owned()
}

/// Handles one request; never fails: every error becomes a problem document.
pub async fn handle(ctx: &Ctx, req: Request) -> Response<Body> {
    let request_id = req.lambda_context_ref().map(|c| c.request_id.clone());
    let path = request_path(&req);
    let resp = match route_request(ctx, &req, &path).await {
        Ok(r) => r,
        Err(e) => e.into_response(request_id.as_deref()),
    };
    tracing::info!(
        method = %req.method(),
        path = %truncate(&path, 200),
        status = resp.status().as_u16(),
        request_id,
        "request"
    );
    resp
}

async fn route_request(ctx: &Ctx, req: &Request, path: &str) -> Result<Response<Body>, ApiError> {
    let (route, params) = find_route(req.method(), path)?;
    if route.endpoint == Endpoint::Health {
        // No auth and no AWS call: a liveness probe must not depend on DynamoDB.
        return Ok(Reply::ok(serde_json::json!({"status": "ok"})).into_response());
    }
    let body: &[u8] = req.body().as_ref();
    if body.len() > ctx.config.max_body_bytes {
        return Err(ApiError::PayloadTooLarge {
            size: body.len(),
            limit: ctx.config.max_body_bytes,
        });
    }
    if matches!(route.endpoint, Endpoint::AgentRegister | Endpoint::AgentHeartbeat) {
        let register = route.endpoint == Endpoint::AgentRegister;
        return Ok(agent::handle(ctx, req, body, register).await?.into_response());
    }
    let caller = caller(&ctx.config, req)?;
    let params: Vec<&str> = params.to_vec();
    let mutating = matches!(*req.method(), Method::POST | Method::PATCH | Method::DELETE);
    let key = req
        .headers()
        .get("idempotency-key")
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    // A ticket is not kept for replay: the stored answer would be a credential, and a new one is harmless.
    if mutating
        && route.endpoint != Endpoint::CreateWsTicket
        && let Some(key) = key
    {
        let request = idempotency::Fingerprint::new(req.method().as_str(), path, body);
        return idempotency::run(ctx, &caller, &key, &request, || async {
            endpoint(ctx, req, route.endpoint, &params, &caller, body).await
        })
        .await;
    }
    Ok(endpoint(ctx, req, route.endpoint, &params, &caller, body)
        .await?
        .into_response())
}

async fn endpoint(
    ctx: &Ctx,
    req: &Request,
    endpoint: Endpoint,
    params: &[&str],
    caller: &Caller,
    body: &[u8],
) -> Result<Reply, ApiError> {
    let param = params.first().copied().unwrap_or_default();
    match endpoint {
        Endpoint::Health => Ok(Reply::ok(serde_json::json!({"status": "ok"}))),
        Endpoint::CreateCluster => clusters::create(ctx, caller, body).await,
        Endpoint::ListClusters => clusters::list(ctx, caller, &req.query_string_parameters()).await,
        Endpoint::GetCluster => clusters::get(ctx, caller, param).await,
        Endpoint::UpdateCluster => clusters::update(ctx, caller, param, body).await,
        Endpoint::DeleteCluster => clusters::delete(ctx, caller, param).await,
        Endpoint::RetryCluster => clusters::retry(ctx, caller, param).await,
        Endpoint::DriftCheck => clusters::drift_check(ctx, caller, param).await,
        Endpoint::ListStateVersions => state::list(ctx, caller, param).await,
        Endpoint::RestoreStateVersion => {
            state::restore(ctx, caller, param, params.get(1).copied().unwrap_or_default()).await
        }
        Endpoint::ListClusterOperations => operations::list_for_cluster(ctx, caller, param).await,
        Endpoint::GetOperation => operations::get(ctx, caller, param).await,
        Endpoint::CancelOperation => operations::cancel(ctx, caller, param).await,
        Endpoint::CreateEstimate => estimates::create(ctx, caller, body).await,
        Endpoint::GetWebhook => tenant::get_webhook(ctx, caller).await,
        Endpoint::PutWebhook => tenant::put_webhook(ctx, caller, body).await,
        Endpoint::DeleteWebhook => tenant::delete_webhook(ctx, caller).await,
        Endpoint::CreateWsTicket => tickets::create(ctx, caller),
        Endpoint::ListTemplates => templates::list(ctx).await,
        Endpoint::GetTemplate => templates::get(ctx, param, &req.query_string_parameters()).await,
        Endpoint::AgentRegister | Endpoint::AgentHeartbeat => {
            // Routed before tenant authentication in `route_request`.
            Err(ApiError::NotFound("agent routes take no tenant token".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_templates_segment_by_segment() {
        assert_eq!(
            match_path("/v1/clusters/{id}", "/v1/clusters/cl-1"),
            Some(vec!["cl-1"])
        );
        assert_eq!(
            match_path("/v1/clusters/{id}", "/v1/clusters/cl-1/"),
            Some(vec!["cl-1"])
        );
        assert_eq!(match_path("/v1/clusters/{id}", "/v1/clusters/"), None);
        assert_eq!(match_path("/v1/clusters/{id}", "/v1/clusters/a/b"), None);
        assert_eq!(match_path("/v1/clusters", "/v1/clusters"), Some(vec![]));
        assert_eq!(match_path("/v1/clusters", "/v1/cluster"), None);
    }

    #[test]
    fn unknown_method_on_a_known_path_is_405_with_the_allowed_methods() {
        match find_route(&Method::PUT, "/v1/clusters/cl-1") {
            Err(ApiError::MethodNotAllowed { allowed }) => assert_eq!(allowed, ["GET", "PATCH", "DELETE"]),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            find_route(&Method::GET, "/v2/x"),
            Err(ApiError::NotFound(_))
        ));
        let (r, p) = find_route(&Method::POST, "/v1/operations/op-9/cancel").unwrap();
        assert_eq!((r.endpoint, p), (Endpoint::CancelOperation, vec!["op-9"]));
    }

    #[test]
    fn config_defaults_and_errors() {
        let c = Config::from_lookup(|k| (k == "STRATO_RESOURCE_PREFIX").then(|| "prod".to_owned())).unwrap();
        assert_eq!(c.tenant_claim, "tenant_id");
        assert_eq!(c.max_body_bytes, 65536);
        assert!(Config::from_lookup(|_| None).is_err());
        let bad = Config::from_lookup(|k| match k {
            "STRATO_RESOURCE_PREFIX" => Some("prod".into()),
            "STRATO_MAX_BODY_BYTES" => Some("lots".into()),
            _ => None,
        });
        assert!(matches!(bad, Err(ApiError::Config(m)) if m.contains("lots")));
    }
}

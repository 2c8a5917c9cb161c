//! The HTTP API as an axum [`Router`]: one handler per route of [`ROUTES`], every request authorized by one
//! route layer ([`authorize`]: the tenant, subject and scopes from the JWT authorizer's claims, as the
//! [`Caller`]), the body limit and `Idempotency-Key` as route layers, and
//! problem documents for unknown paths (404) and methods (405). [`service`] wraps the router with what must
//! happen before routing (the API Gateway stage prefix) and after it (the request id, one log line).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::request::Parts;
use axum::http::{Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};
use lambda_http::RequestExt;
use lambda_http::request::RequestContext;
use strato_domain::telemetry::{self, Traceparent, fields};
use tower::ServiceExt;

use crate::access::Who;
use crate::caller::Caller;
use crate::edge::AppState;
use crate::policies::TenantRead;
use crate::problem::Problem;
use crate::requests::truncate;
use crate::route::{self, Access, Route};
use crate::routes::ROUTES;
use crate::routes::route_for;
use crate::{context::Ctx, error::ApiError, idempotency};

/// Who may call `parts`' route ([`crate::access::check`]), with the request's trace on a tenant caller. A
/// method and path the route table does not know is refused (405): the check fails closed, never open.
fn authenticate(parts: &Parts, ctx: &Ctx) -> Result<(&'static Route, Who), ApiError> {
    let Some(route) = route_of(parts) else {
        return Err(ApiError::MethodNotAllowed {
            allowed: allowed_methods(parts.uri.path()),
        });
    };
    let who = crate::access::check(route, crate::recording::claims(&parts.extensions), &ctx.config)?;
    Ok(match who {
        Who::Tenant(caller) => {
            tracing::Span::current().record(fields::TENANT_ID, caller.tenant.as_str());
            Who::Tenant(Caller {
                traceparent: parts.extensions.get::<Traceparent>().copied(),
                ..caller
            })
        }
        other => other,
    })
    .map(|who| (route, who))
}

/// A tenant the platform operator suspended may read, not change anything: a tenant call that changes
/// something reuses this process's answer of the last 30 s (`suspension::MAX_AGE`) or reads the tenant item —
/// whole, what governs its changes ([`strato_aws::store::Store::tenant_governance`]), so a change that is
/// checked against the tenant's policies uses that read ([`TenantRead`]) instead of a second one. Reads cost
/// nothing more.
async fn suspension(ctx: &Ctx, route: &Route, caller: &Caller) -> Result<Option<TenantRead>, ApiError> {
    let Access::Tenant(need) = route.access else {
        return Ok(None);
    };
    if !crate::operator::changes(route.method, need) {
        return Ok(None);
    }
    let now = std::time::Instant::now();
    let (suspended, read) = match ctx.suspensions.get(&caller.tenant, now) {
        Some(known) => (known, None),
        None => {
            let read = ctx.store.tenant_governance(&caller.tenant).await?;
            ctx.suspensions.put(&caller.tenant, read.suspended.clone(), now);
            (read.suspended.clone(), Some(TenantRead(Arc::new(read))))
        }
    };
    crate::operator::suspension_allows(route.method, need, suspended.as_deref())?;
    Ok(read)
}

/// Route layer over every route: authentication and the route's scope, before the route's own layers (the
/// body limit, `Idempotency-Key`) and its handler. Being a layer rather than the handlers' extractor, it
/// runs for every matched request whatever the handler extracts — HEAD included, which axum answers with the
/// GET handler.
async fn authorize(State(ctx): State<AppState>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    match authenticate(&parts, &ctx) {
        Ok((route, Who::Tenant(caller))) => {
            match suspension(&ctx, route, &caller).await {
                Ok(Some(read)) => {
                    parts.extensions.insert(read);
                }
                Ok(None) => {}
                Err(e) => return e.into_response(),
            }
            parts.extensions.insert(caller);
        }
        Ok((_, Who::Operator(operator))) => {
            parts.extensions.insert(operator);
        }
        Ok((_, Who::Nobody)) => {}
        Err(e) => return e.into_response(),
    }
    next.run(Request::from_parts(parts, body)).await
}

/// The entry of [`ROUTES`] the router matched for this request.
fn route_of(parts: &Parts) -> Option<&'static Route> {
    let matched = parts.extensions.get::<axum::extract::MatchedPath>()?;
    route_for(parts.method.as_str(), matched.as_str())
}

/// Refuses a body over `max_body_bytes` before anything reads it (413) and a body not declared JSON (415,
/// see [`crate::requests::json_media_type`]), and buffers it for the handler.
async fn limit_body(State(ctx): State<AppState>, req: Request, next: Next) -> Result<Response, ApiError> {
    let limit = ctx.config.max_body_bytes;
    limited(limit, req, next).await
}

/// The largest body of a bundle upload: a 4 MiB bundle, base64 (4/3), and the JSON around it. Under Lambda's
/// 6 MB synchronous request limit and API Gateway's 10 MB: a body over those never reaches the function
/// (API Gateway answers 413 above 10 MB; between 6 and 10 MB the Lambda invoke fails and API Gateway
/// answers 500/502), which is why the limit is the bundle's, checked here with a problem that says so.
pub(crate) const MAX_BUNDLE_BODY_BYTES: usize = 5_600_000;

async fn limit_bundle(req: Request, next: Next) -> Result<Response, ApiError> {
    limited(MAX_BUNDLE_BODY_BYTES, req, next).await
}

async fn limited(limit: usize, req: Request, next: Next) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    // API Gateway delivers the whole body at once, so it is in memory already; the limit applies to it.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|e| ApiError::BadRequest {
            detail: format!("the request body could not be read: {e}"),
            errors: Vec::new(),
        })?;
    if bytes.len() > limit {
        return Err(ApiError::PayloadTooLarge {
            size: bytes.len(),
            limit,
        });
    }
    crate::requests::json_media_type(&parts.method, &parts.headers, &bytes)?;
    Ok(next.run(Request::from_parts(parts, Body::from(bytes))).await)
}

/// `Idempotency-Key` on a mutating route: the first answer for a key is stored and replayed.
async fn idempotent(
    State(ctx): State<AppState>,
    caller: Caller,
    req: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let Some(key) = req.headers().get("idempotency-key") else {
        return Ok(next.run(req).await);
    };
    let key = key.to_str().unwrap_or_default().to_owned();
    let (parts, body) = req.into_parts();
    // Buffered by `limit_body`: this only takes the bytes back.
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let if_match = parts.headers.get(header::IF_MATCH).map(|v| v.as_bytes());
    let request = idempotency::Fingerprint::new(parts.method.as_str(), parts.uri.path(), if_match, &bytes);
    let req = Request::from_parts(parts, Body::from(bytes));
    idempotency::run(&ctx, &caller, &key, &request, || next.run(req)).await
}

/// One route's method router with the layers its [`route::Body`] asks for: the body limit (and media type), then
/// `Idempotency-Key` on the keyed ones.
fn layered(state: &AppState, route: &Route) -> MethodRouter<AppState> {
    let Some(filter) = method_filter(route.method) else {
        unreachable!("the route table names only the methods method_filter knows")
    };
    let handler = (route.handler)(filter);
    match route.body {
        route::Body::Ignored => handler,
        route::Body::Limited => {
            handler.route_layer(middleware::from_fn_with_state(state.clone(), limit_body))
        }
        route::Body::Bundle => handler.route_layer(middleware::from_fn(limit_bundle)),
        route::Body::Keyed => handler
            .route_layer(middleware::from_fn_with_state(state.clone(), idempotent))
            .route_layer(middleware::from_fn_with_state(state.clone(), limit_body)),
    }
}

fn method_filter(method: &str) -> Option<MethodFilter> {
    Some(match method {
        "GET" => MethodFilter::GET,
        "POST" => MethodFilter::POST,
        "PUT" => MethodFilter::PUT,
        "PATCH" => MethodFilter::PATCH,
        "DELETE" => MethodFilter::DELETE,
        _ => return None,
    })
}

/// The API's routes: exactly [`ROUTES`], each path's methods merged in table order.
pub fn router(ctx: Ctx) -> Router {
    router_of(Arc::new(ctx))
}

fn router_of(s: AppState) -> Router {
    let mut paths: Vec<(&str, MethodRouter<AppState>)> = Vec::new();
    for route in ROUTES {
        let methods = layered(&s, route);
        match paths.iter_mut().find(|(p, _)| *p == route.path) {
            Some((_, merged)) => *merged = std::mem::take(merged).merge(methods),
            None => paths.push((route.path, methods)),
        }
    }
    let mut router = Router::new();
    for (path, methods) in paths {
        router = router.route(path, methods);
    }
    router
        // Every route, every method: who may call it (the entry's `access`), before anything else of it runs.
        .route_layer(middleware::from_fn_with_state(s.clone(), authorize))
        // Every route: audited ones (the entry's `audit`) get their entry after the answer, refused ones
        // (401, 403) included.
        .route_layer(middleware::from_fn_with_state(
            s.clone(),
            crate::recording::record,
        ))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // `limit_body` enforces the configured limit; axum's own (2 MB) would answer in plain text.
        .layer(DefaultBodyLimit::disable())
        .with_state(s)
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no resource at {}", truncate(uri.path(), 100)))
}

async fn method_not_allowed(uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        allowed: allowed_methods(uri.path()),
    }
}

/// The methods [`ROUTES`] has for `path`, in table order.
fn allowed_methods(path: &str) -> Vec<&'static str> {
    ROUTES
        .iter()
        .filter(|r| match_path(r.path, path))
        .map(|r| r.method)
        .collect()
}

/// Whether `path` matches a route template (`{x}` matches one non-empty segment).
pub(crate) fn match_path(template: &str, path: &str) -> bool {
    let mut t = template.trim_matches('/').split('/');
    let mut p = path.trim_end_matches('/').trim_start_matches('/').split('/');
    loop {
        match (t.next(), p.next()) {
            (None, None) => return true,
            (Some(ts), Some(ps)) if ts.starts_with('{') && !ps.is_empty() => {}
            (Some(ts), Some(ps)) if ts == ps => {}
            _ => return false,
        }
    }
}

/// The path as the client sent it, without an API Gateway stage prefix (named stages put it there) and
/// without a trailing slash.
fn request_path<B>(req: &axum::http::Request<B>) -> String {
    let raw = req.raw_http_path();
    let path = if raw.is_empty() { req.uri().path() } else { raw };
    let mut path = path.to_owned();
    if let Some(RequestContext::ApiGatewayV2(rc)) = req.request_context_ref()
        && let Some(stage) = rc.stage.as_deref().filter(|s| *s != "$default")
        && let Some(rest) = path.strip_prefix(&format!("/{stage}/"))
    {
        path = format!("/{rest}");
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The cluster or operation a path names, on the request's span: only well-formed ids, so nothing a client
/// typed lands in the logs unchecked.
fn record_path_ids(span: &tracing::Span, path: &str) {
    use strato_domain::ids::{ClusterId, OperationId};
    let mut segments = path.trim_start_matches('/').split('/');
    match (segments.next(), segments.next(), segments.next()) {
        (Some("v1"), Some("clusters"), Some(id)) if id.parse::<ClusterId>().is_ok() => {
            telemetry::record(span, fields::CLUSTER_ID, id);
        }
        (Some("v1"), Some("operations"), Some(id)) if id.parse::<OperationId>().is_ok() => {
            telemetry::record(span, fields::OPERATION_ID, id);
        }
        _ => {}
    }
}

/// The router behind what must happen outside it: the path rewritten before routing, the request id put
/// into problem documents, one log line per request. This is what the Lambda runtime runs.
#[derive(Clone)]
pub struct ApiService {
    router: Router,
    /// The context the router serves, for the `rollouts` queue's records ([`ApiService::drain`]).
    ctx: AppState,
}

/// The API as a service of payload-v2 requests, for `lambda_http::run`.
pub fn service(ctx: Ctx) -> ApiService {
    let ctx: AppState = Arc::new(ctx);
    ApiService {
        router: router_of(ctx.clone()),
        ctx,
    }
}

impl ApiService {
    /// Drains a batch of the `rollouts` queue (see [`crate::rollout_queue`]).
    pub async fn drain(
        &self,
        event: aws_lambda_events::sqs::SqsEvent,
    ) -> aws_lambda_events::sqs::SqsBatchResponse {
        crate::rollout_queue::drain(&self.ctx, event).await
    }
}

impl tower::Service<lambda_http::Request> for ApiService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: lambda_http::Request) -> Self::Future {
        let router = self.router.clone();
        Box::pin(async move { Ok(serve(router, req).await) })
    }
}

async fn serve(router: Router, mut req: lambda_http::Request) -> Response {
    use tracing::Instrument;
    let request_id = req.lambda_context_ref().map(|c| c.request_id.clone());
    let path = request_path(&req);
    let uri = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path.clone(),
    };
    if let Ok(uri) = uri.parse::<Uri>() {
        *req.uri_mut() = uri;
    }
    let method = req.method().clone();
    // The caller's trace (a malformed header is ignored, as W3C says: the request starts a new trace).
    let incoming = req
        .headers()
        .get(telemetry::TRACEPARENT_ATTRIBUTE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<Traceparent>().ok());
    let me = Traceparent::child_or_root(incoming.as_ref());
    req.extensions_mut().insert(me);
    let span = telemetry::span("api_request", &me, incoming.as_ref());
    if let Some(id) = &request_id {
        telemetry::record(&span, fields::REQUEST_ID, id);
    }
    record_path_ids(&span, &path);
    async {
        let Ok(mut resp) = router.oneshot(req).await;
        if let (Some(id), Some(problem)) = (&request_id, resp.extensions_mut().remove::<Problem>()) {
            let problem = Problem {
                request_id: Some(id.clone()),
                ..problem
            };
            // The body grows: the length the router computed no longer holds.
            resp.headers_mut().remove(header::CONTENT_LENGTH);
            *resp.body_mut() = Body::from(serde_json::to_string(&problem).unwrap_or_default());
        }
        tracing::info!(
            method = %method,
            path = %truncate(&path, 200),
            status = resp.status().as_u16(),
            "request"
        );
        resp
    }
    .instrument(span)
    .await
}

impl ApiService {
    /// Handles one request outside the Lambda runtime (devstack, tests): never fails, every error becomes a
    /// problem document. The router was built once, by [`service`]; each call only clones its handle.
    pub async fn handle(&self, req: lambda_http::Request) -> lambda_http::Response<lambda_http::Body> {
        let resp = serve(self.router.clone(), req).await;
        let (parts, body) = resp.into_parts();
        // Every answer is a small JSON document (or empty).
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        let body = if bytes.is_empty() {
            lambda_http::Body::Empty
        } else {
            match String::from_utf8(bytes.to_vec()) {
                Ok(text) => lambda_http::Body::Text(text),
                Err(e) => lambda_http::Body::Binary(e.into_bytes()),
            }
        };
        lambda_http::Response::from_parts(parts, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn paths_match_templates_segment_by_segment() {
        assert!(match_path("/v1/clusters/{id}", "/v1/clusters/cl-1"));
        assert!(match_path("/v1/clusters/{id}", "/v1/clusters/cl-1/"));
        assert!(!match_path("/v1/clusters/{id}", "/v1/clusters/"));
        assert!(!match_path("/v1/clusters/{id}", "/v1/clusters/a/b"));
        assert!(match_path("/v1/clusters", "/v1/clusters"));
        assert!(!match_path("/v1/clusters", "/v1/cluster"));
    }

    #[tokio::test]
    async fn problems_carry_the_lambda_request_id_and_a_right_length() {
        let mut lambda = lambda_http::Context::default();
        lambda.request_id = "req-42".into();
        let req = axum::http::Request::builder()
            .uri("/v2/nothing")
            .extension(lambda)
            .body(lambda_http::Body::Empty)
            .unwrap();
        let resp = serve(Router::new().fallback(not_found), req).await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert!(resp.headers().get(header::CONTENT_LENGTH).is_none());
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc["request_id"], "req-42");
        assert_eq!(doc["detail"], "no resource at /v2/nothing");
    }

    #[test]
    fn method_not_allowed_lists_the_methods_in_route_order() {
        let allowed: Vec<_> = ROUTES
            .iter()
            .filter(|r| match_path(r.path, "/v1/clusters/cl-1"))
            .map(|r| r.method)
            .collect();
        assert_eq!(allowed, ["GET", "PATCH", "DELETE"]);
    }
}

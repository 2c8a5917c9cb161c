//! API Gateway HTTP API emulation: every request becomes a payload-v2 event for the api function (with the
//! JWT authorizer's claims), and the function's response goes back unchanged.
//!
//! Like a `$default` route with a JWT authorizer, every path needs a valid bearer token except the routes
//! the api declares public (`/healthz` and the cluster agent's routes, which carry their own token).
//! A missing or bad token is answered 401 with a problem document without invoking the function.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, RequestExt};
use serde_json::{Value, json};

use crate::auth::{Authenticator, claims_as_strings};
use crate::registry::HttpHandler;

/// API Gateway's payload limit for HTTP APIs.
pub const MAX_PAYLOAD_BYTES: usize = 10 * 1024 * 1024;
pub const ACCOUNT_ID: &str = "123456789012";
pub const API_ID: &str = "devstack";

#[derive(Clone)]
pub struct Gateway {
    pub handler: HttpHandler,
    pub auth: Authenticator,
    /// Paths served without the JWT authorizer.
    pub public_paths: Vec<String>,
    /// The web console, when built: every GET outside `/v1` (CloudFront's behaviour in AWS).
    pub console: Option<Arc<crate::console::ConsoleSite>>,
}

impl Gateway {
    /// The api's public routes (no tenant token): liveness and the cluster agent's routes.
    pub fn new(handler: HttpHandler, auth: Authenticator) -> Self {
        let public_paths = strato_api::routes::ROUTES
            .iter()
            .filter(|r| r.scope().is_none())
            .map(|r| r.path.to_owned())
            .collect();
        Self {
            handler,
            auth,
            public_paths,
            console: None,
        }
    }

    /// The same gateway, serving the console too.
    pub fn with_console(self, console: Option<crate::console::ConsoleSite>) -> Self {
        Self {
            console: console.map(Arc::new),
            ..self
        }
    }

    pub fn router(self) -> axum::Router {
        axum::Router::new()
            // devstack's own, not the api's (which has no such route): what CloudWatch would hold.
            .route("/metrics", axum::routing::get(prometheus_metrics))
            .route("/metrics/emf", axum::routing::get(emf_metrics))
            .route("/traces/{operation_id}", axum::routing::get(operation_trace))
            .route(
                "/traces/{operation_id}/xray",
                axum::routing::get(operation_segments),
            )
            .fallback(serve)
            .with_state(Arc::new(self))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_PAYLOAD_BYTES))
    }
}

/// `GET /metrics`: every metric so far as Prometheus text (see [`crate::metrics`]).
async fn prometheus_metrics() -> impl IntoResponse {
    (
        [("content-type", "text/plain; version=0.0.4")],
        crate::metrics::store().prometheus(),
    )
}

/// `GET /metrics/emf`: the EMF documents so far, one JSON per line.
async fn emf_metrics() -> impl IntoResponse {
    (
        [("content-type", "application/x-ndjson")],
        crate::metrics::store().emf_lines(),
    )
}

/// `GET /traces/{operation_id}`: the span tree of the operation's trace(s), as devstack captured them (404
/// when it has none: an unknown operation, or capture not installed in this process).
async fn operation_trace(
    axum::extract::Path(operation_id): axum::extract::Path<String>,
) -> axum::response::Response {
    let tree = crate::capture::global()
        .map(|c| c.span_tree(&operation_id))
        .unwrap_or_default();
    if tree.is_empty() {
        return (StatusCode::NOT_FOUND, "no spans for that operation\n").into_response();
    }
    ([("content-type", "text/plain; charset=utf-8")], tree).into_response()
}

/// `GET /traces/{operation_id}/xray`: the X-Ray segment documents of the operation's trace(s) as devstack's
/// daemon received them, a JSON array oldest first (404 when there are none).
async fn operation_segments(
    axum::extract::Path(operation_id): axum::extract::Path<String>,
) -> axum::response::Response {
    let segments = crate::xray::running()
        .map(|c| c.operation_segments(&operation_id))
        .unwrap_or_default();
    if segments.is_empty() {
        return (StatusCode::NOT_FOUND, "no segments for that operation\n").into_response();
    }
    axum::Json(segments).into_response()
}

/// 401 as a problem document, as the api's own 401s (API Gateway's JWT authorizer itself answers
/// `application/json` `{"message":"Unauthorized"}`, which the spec lists too); RFC 6750's challenge (an
/// error only for a bad token).
fn unauthorized(detail: Option<String>) -> axum::response::Response {
    let problem = serde_json::json!({
        "type": "urn:strato:problem:unauthorized",
        "title": "Unauthorized",
        "status": 401,
        "detail": match &detail {
            None => "the request has no bearer token: send Authorization: Bearer <token>".to_owned(),
            Some(d) => format!("the bearer token was refused ({d}); get a fresh one"),
        },
    });
    let mut resp = (
        StatusCode::UNAUTHORIZED,
        [("content-type", "application/problem+json")],
        problem.to_string(),
    )
        .into_response();
    let challenge = match detail {
        None => "Bearer".to_owned(),
        Some(d) => format!(
            "Bearer error=\"invalid_token\" error_description=\"{}\"",
            d.replace('"', "'")
        ),
    };
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        resp.headers_mut().insert("www-authenticate", v);
    }
    resp
}

/// One request through the emulated HTTP API: route, authorizer, payload-v2 event, the function, the response.
/// Kept as one function because it mirrors API Gateway's request pipeline step by step, in order.
async fn serve(
    State(gw): State<Arc<Gateway>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: axum::extract::Request,
) -> axum::response::Response {
    let (parts, body) = req.into_parts();
    if let Some(console) = &gw.console
        && crate::console::ConsoleSite::claims(&parts.method, parts.uri.path())
    {
        return console.serve(parts.uri.path()).await;
    }
    let body = match axum::body::to_bytes(body, MAX_PAYLOAD_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                [("content-type", "application/json")],
                r#"{"message":"Request Entity Too Large"}"#,
            )
                .into_response();
        }
    };
    let path = parts.uri.path().to_owned();
    let request_id = uuid::Uuid::new_v4().simple().to_string()[..16].to_owned();
    let claims = if gw
        .public_paths
        .iter()
        .any(|p| p == path.trim_end_matches('/') || *p == path)
    {
        None
    } else {
        let header = parts.headers.get("authorization").and_then(|v| v.to_str().ok());
        match gw.auth.verify_header(header) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::info!(method = %parts.method, path = %path, request_id, reason = %e, "HTTP API: 401");
                return unauthorized(match e {
                    crate::auth::AuthError::Missing => None,
                    other => Some(other.to_string()),
                });
            }
        }
    };
    let event = to_event(&parts, &body, peer, &request_id, claims.as_ref());
    let event: ApiGatewayV2httpRequest = match serde_json::from_value(event) {
        Ok(e) => e,
        Err(e) => {
            tracing::error!(error = %e, "HTTP API: could not build the payload v2 event");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"message":"Internal Server Error"}"#,
            )
                .into_response();
        }
    };
    let mut ctx = lambda_http::Context::default();
    ctx.request_id = request_id.clone();
    ctx.invoked_function_arn = format!("arn:aws:lambda:us-east-1:{ACCOUNT_ID}:function:strato-api");
    let request = lambda_http::Request::from(LambdaRequest::ApiGatewayV2(event)).with_lambda_context(ctx);
    // A panicking function is a 500 from API Gateway, not a dead emulator.
    let handler = gw.handler.clone();
    let invocation = tracing::Instrument::instrument(
        async move { handler(request).await },
        crate::capture::component_span("api"),
    );
    let response = match tokio::spawn(invocation).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(request_id, error = %e, "HTTP API: the function crashed");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                [("content-type", "application/json")],
                r#"{"message":"Internal Server Error"}"#,
            )
                .into_response();
        }
    };
    let (rparts, rbody) = response.into_parts();
    let operation_id = rparts
        .headers
        .get("location")
        .and_then(|l| l.to_str().ok())
        .and_then(|l| l.rsplit('/').next())
        .filter(|s| s.starts_with("op-"))
        .map(str::to_owned)
        .or_else(|| path.split('/').find(|s| s.starts_with("op-")).map(str::to_owned));
    let tenant = claims
        .as_ref()
        .and_then(|c| c.get(gw.auth.tenant_claim()))
        .and_then(serde_json::Value::as_str);
    tracing::info!(
        method = %parts.method,
        path = %path,
        status = rparts.status.as_u16(),
        request_id,
        tenant,
        operation_id,
        "HTTP API"
    );
    let bytes: Vec<u8> = match rbody {
        Body::Empty => Vec::new(),
        Body::Text(t) => t.into_bytes(),
        Body::Binary(b) => b,
        _ => Vec::new(),
    };
    let mut out = axum::response::Response::new(axum::body::Body::from(bytes));
    *out.status_mut() = rparts.status;
    *out.headers_mut() = rparts.headers;
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        out.headers_mut().insert("apigw-requestid", v);
    }
    out
}

/// The payload v2 event as API Gateway sends it (same JSON shape, so the function sees what it would see).
pub fn to_event(
    parts: &axum::http::request::Parts,
    body: &Bytes,
    peer: SocketAddr,
    request_id: &str,
    claims: Option<&BTreeMap<String, Value>>,
) -> Value {
    let headers = combined_headers(&parts.headers);
    let cookies: Vec<String> = parts
        .headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';').map(|c| c.trim().to_owned()).collect::<Vec<_>>())
        .filter(|c| !c.is_empty())
        .collect();
    let raw_query = parts.uri.query().unwrap_or("").to_owned();
    let mut query: BTreeMap<String, String> = BTreeMap::new();
    if let Ok(axum::extract::Query(pairs)) =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
    {
        for (k, v) in pairs {
            query
                .entry(k)
                .and_modify(|e| {
                    e.push(',');
                    e.push_str(&v);
                })
                .or_insert(v);
        }
    }
    let host = headers.get("host").cloned().unwrap_or_else(|| "localhost".into());
    let now = time::OffsetDateTime::now_utc();
    let time_fmt =
        time::macros::format_description!("[day]/[month repr:short]/[year]:[hour]:[minute]:[second] +0000");
    let (body_value, b64) = match std::str::from_utf8(body) {
        _ if body.is_empty() => (Value::Null, false),
        Ok(s) => (Value::String(s.to_owned()), false),
        Err(_) => (Value::String(base64(body)), true),
    };
    let mut ev = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.uri.path(),
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": API_ID,
            "domainName": host,
            "domainPrefix": host.split('.').next().unwrap_or(""),
            "http": {
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
                "protocol": format!("{:?}", parts.version),
                "sourceIp": peer.ip().to_string(),
                "userAgent": headers.get("user-agent").cloned().unwrap_or_default(),
            },
            "requestId": request_id,
            "routeKey": "$default",
            "stage": "$default",
            "time": now.format(&time_fmt).unwrap_or_default(),
            "timeEpoch": (now.unix_timestamp_nanos() / 1_000_000) as i64,
        },
        "isBase64Encoded": b64,
    });
    if !body_value.is_null() {
        ev["body"] = body_value;
    }
    if !cookies.is_empty() {
        ev["cookies"] = json!(cookies);
    }
    if !query.is_empty() {
        ev["queryStringParameters"] = json!(query);
    }
    if let Some(c) = claims {
        ev["requestContext"]["authorizer"] = json!({"jwt": {"claims": claims_as_strings(c), "scopes": null}});
    }
    ev
}

/// Header names lowercased, repeated headers joined with commas, cookies moved to `cookies` (as API Gateway
/// does for payload v2).
fn combined_headers(h: &HeaderMap) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in h {
        if k == "cookie" {
            continue;
        }
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        out.entry(k.as_str().to_owned())
            .and_modify(|e| {
                e.push(',');
                e.push_str(&v);
            })
            .or_insert(v);
    }
    out
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_with_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xff, 0xfe]), "//4=");
    }

    #[test]
    fn requests_become_payload_v2_events_the_api_types_accept() {
        let req = axum::http::Request::builder()
            .method("POST")
            .uri("/v1/clusters?state=ACTIVE&limit=5&state=FAILED")
            .header("Host", "127.0.0.1:8080")
            .header("Cookie", "a=1; b=2")
            .header("X-Multi", "1")
            .header("X-Multi", "2")
            .body(())
            .unwrap();
        let (parts, ()) = req.into_parts();
        let claims = BTreeMap::from([
            ("tenant_id".to_owned(), Value::from("demo")),
            ("exp".into(), 5.into()),
        ]);
        let ev = to_event(
            &parts,
            &Bytes::from_static(b"{}"),
            "127.0.0.1:5000".parse().unwrap(),
            "r1",
            Some(&claims),
        );
        assert_eq!(ev["queryStringParameters"]["state"], "ACTIVE,FAILED");
        assert_eq!(ev["headers"]["x-multi"], "1,2");
        assert_eq!(ev["cookies"], json!(["a=1", "b=2"]));
        assert!(ev["headers"].get("cookie").is_none());
        assert_eq!(ev["requestContext"]["authorizer"]["jwt"]["claims"]["exp"], "5");
        let typed: ApiGatewayV2httpRequest = serde_json::from_value(ev).unwrap();
        let r = lambda_http::Request::from(LambdaRequest::ApiGatewayV2(typed));
        assert_eq!(r.uri().path(), "/v1/clusters");
        assert_eq!(r.body().as_ref(), b"{}");
    }
}

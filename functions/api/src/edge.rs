//! What every handler of the HTTP edge shares: the state they run with ([`AppState`]), the authenticated
//! [`Caller`] the router's authorization layer establishes, a successful answer ([`Reply`]), the lookup of a
//! request's entry in the route table ([`route_for`]). Below the router, the handlers and the resources'
//! modules, which all use it.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use strato_domain::ids::TenantId;
use strato_domain::telemetry::Traceparent;

use crate::routes::{ROUTES, Route};
use crate::scopes::Scope;
use crate::{ApiError, Ctx};

pub(crate) type AppState = Arc<Ctx>;

/// A successful answer: a status, a JSON body and, for a 202, where to follow the operation.
#[derive(Debug)]
pub(crate) struct Reply<T> {
    pub status: StatusCode,
    pub body: T,
    pub location: Option<String>,
    /// The `ETag` of a cluster in the body (its `version`), for `If-Match`.
    pub etag: Option<String>,
}

impl<T> Reply<T> {
    pub fn ok(body: T) -> Self {
        Self {
            status: StatusCode::OK,
            body,
            location: None,
            etag: None,
        }
    }

    pub fn accepted(body: T, location: String) -> Self {
        Self {
            status: StatusCode::ACCEPTED,
            body,
            location: Some(location),
            etag: None,
        }
    }

    /// The answer with the `ETag` of the cluster at `version`.
    pub fn with_etag(self, version: u64) -> Self {
        Self {
            etag: Some(crate::decide::etag(version)),
            ..self
        }
    }
}

impl<T: Serialize> IntoResponse for Reply<T> {
    fn into_response(self) -> Response {
        let body = match serde_json::to_string(&self.body) {
            Ok(b) => b,
            Err(e) => return ApiError::Config(format!("serializing a response: {e}")).into_response(),
        };
        let mut resp = (self.status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
        if let Some(loc) = self.location.and_then(|l| l.parse().ok()) {
            resp.headers_mut().insert(header::LOCATION, loc);
        }
        if let Some(tag) = self.etag.and_then(|t| t.parse().ok()) {
            resp.headers_mut().insert(header::ETAG, tag);
        }
        resp
    }
}

/// The authenticated caller: the tenant from the configured claim, the JWT subject and Strato's scopes the
/// token grants.
#[derive(Debug, Clone)]
pub struct Caller {
    pub tenant: TenantId,
    /// Always set on a route that changes something (the router's `authorize` refuses a token without one there).
    pub subject: Option<String>,
    /// The request's trace context: operations this request creates join its trace.
    pub traceparent: Option<Traceparent>,
    /// Strato's scopes the token grants (matched exactly; see [`crate::scopes`]).
    pub scopes: Vec<Scope>,
}

impl Caller {
    /// Who the caller is, for records of reads: the token's subject (`anonymous` without one).
    pub fn principal(&self) -> &str {
        self.subject.as_deref().unwrap_or("anonymous")
    }

    /// Who asks for a change: the token's subject. A request nobody can be named for is refused (401),
    /// as the router does for every mutating route: an unnamed requester could approve their own request.
    pub fn requester(&self) -> Result<&str, ApiError> {
        self.subject
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| ApiError::Unauthorized(NO_SUBJECT.into()))
    }

    /// Whether the token grants `scope` (or one that includes it).
    pub fn has(&self, scope: Scope) -> bool {
        crate::scopes::allows(&self.scopes, scope)
    }

    /// `op`, created by this request, joins its trace; its ids go on the request's log span.
    pub fn joins(&self, op: &mut strato_domain::model::Operation) {
        if let Some(tp) = self.traceparent {
            op.traceparent = Some(tp);
        }
        op.record_on(&tracing::Span::current());
    }
}

pub(crate) const NO_SUBJECT: &str = "the token has no 'sub' claim: a change must name who asks for it (the audit log, \
                          separation of duties); use a token that identifies its principal";

/// The [`Caller`] the router's `authorize` established for this request. A handler that extracts one on a route the
/// layer let through without a caller (a public route) gets a 401: this never falls back to no check.
impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::Unauthorized("the request carries no JWT claims".into()))
    }
}

/// The entry of [`ROUTES`] for a method and a matched path template. HEAD is GET without the body (axum
/// answers it with the GET handler), so it is GET's entry: the same scope, the same audit (none).
pub(crate) fn route_for(method: &str, matched: &str) -> Option<&'static Route> {
    let method = if method == "HEAD" { "GET" } else { method };
    ROUTES.iter().find(|r| r.path == matched && r.method == method)
}

//! What every handler of the HTTP edge shares: the state they run with ([`AppState`]), the authenticated
//! [`Caller`] the router's authorization layer establishes (extracted here; defined below the decisions), a
//! successful answer ([`Reply`]). Below the router, the handlers and the resources'
//! modules, which all use it.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::caller::Caller;
use crate::{context::Ctx, error::ApiError};

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

    /// The same answer with its body mapped (one handler answering two shapes).
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Reply<U> {
        Reply {
            status: self.status,
            body: f(self.body),
            location: self.location,
            etag: self.etag,
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

/// The [`Caller`] the router's `authorize` established for this request. A handler that extracts one on a route the
/// layer let through without a caller (a public route) gets a 401: this never falls back to no check.
impl FromRequestParts<AppState> for crate::operator::Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<crate::operator::Operator>()
            .cloned()
            .ok_or_else(|| ApiError::Unauthorized("the request carries no operator token".into()))
    }
}

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

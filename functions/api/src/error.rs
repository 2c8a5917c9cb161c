//! The crate's one error type, and how each variant is shown to a client: an RFC 9457
//! `application/problem+json` document with `type`, `title`, `status`, `detail` and, for request
//! problems, `errors: [{field, problem, allowed}]`.

use lambda_http::http::{StatusCode, header};
use lambda_http::{Body, Response};
use serde_json::json;
use strato_domain::validate::FieldError;

pub const PROBLEM_JSON: &str = "application/problem+json";

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// Also what a tenant gets for another tenant's resources: existence is not disclosed.
    #[error("not found: {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed { allowed: Vec<&'static str> },
    #[error("request body of {size} bytes exceeds {limit}")]
    PayloadTooLarge { size: usize, limit: usize },
    /// The request cannot be read at all (not JSON, bad query parameter).
    #[error("bad request: {detail}")]
    BadRequest { detail: String, errors: Vec<FieldError> },
    /// The request was read but asks for something invalid (schema, template, name).
    #[error("invalid request: {detail}")]
    Invalid { detail: String, errors: Vec<FieldError> },
    #[error("idempotency key reused with a different request")]
    IdempotencyMismatch,
    /// The resource's current state forbids the request; `detail` says why and what to do.
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("quota exceeded: {0}")]
    Quota(String),
    /// Something that was possible has expired for good (an agent registration past its deadline).
    #[error("gone: {0}")]
    Gone(String),
    #[error("configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Store(#[from] strato_aws::Error),
}

impl ApiError {
    pub fn invalid(errors: Vec<FieldError>) -> Self {
        let n = errors.len();
        ApiError::Invalid {
            detail: format!(
                "the request has {n} problem{}; see errors",
                if n == 1 { "" } else { "s" }
            ),
            errors,
        }
    }

    pub fn field(field: &str, problem: impl Into<String>, allowed: impl Into<String>) -> FieldError {
        FieldError {
            field: field.to_owned(),
            problem: problem.into(),
            allowed: allowed.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Invalid { .. } | ApiError::IdempotencyMismatch => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            // A lost optimistic-concurrency race: the client may simply try again.
            ApiError::Store(strato_aws::Error::Conflict(_)) => StatusCode::CONFLICT,
            ApiError::Quota(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::Config(_) | ApiError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn slug_and_title(&self) -> (&'static str, &'static str) {
        match self {
            ApiError::Unauthorized(_) => ("unauthorized", "Unauthorized"),
            ApiError::NotFound(_) => ("not-found", "Not found"),
            ApiError::MethodNotAllowed { .. } => ("method-not-allowed", "Method not allowed"),
            ApiError::PayloadTooLarge { .. } => ("payload-too-large", "Request body too large"),
            ApiError::BadRequest { .. } => ("bad-request", "Malformed request"),
            ApiError::Invalid { .. } => ("validation", "Invalid request"),
            ApiError::IdempotencyMismatch => ("idempotency-key-reused", "Idempotency key reused"),
            ApiError::Conflict(_) | ApiError::Store(strato_aws::Error::Conflict(_)) => {
                ("conflict", "Conflict")
            }
            ApiError::Quota(_) => ("quota-exceeded", "Quota exceeded"),
            ApiError::Gone(_) => ("gone", "Gone"),
            ApiError::Config(_) | ApiError::Store(_) => ("internal", "Internal error"),
        }
    }

    /// The problem document. Internal errors are logged, never shown: they may name tables or AWS details.
    pub fn into_response(self, request_id: Option<&str>) -> Response<Body> {
        let status = self.status();
        let (slug, title) = self.slug_and_title();
        let mut allow = None;
        let (detail, errors) = match self {
            ApiError::Unauthorized(d)
            | ApiError::NotFound(d)
            | ApiError::Conflict(d)
            | ApiError::Quota(d)
            | ApiError::Gone(d) => (d, Vec::new()),
            ApiError::MethodNotAllowed { allowed } => {
                let list = allowed.join(", ");
                let d = format!("this resource supports {list}");
                allow = Some(list);
                (d, Vec::new())
            }
            ApiError::PayloadTooLarge { size, limit } => (
                format!("the request body is {size} bytes; the limit is {limit} bytes"),
                Vec::new(),
            ),
            ApiError::BadRequest { detail, errors } | ApiError::Invalid { detail, errors } => {
                (detail, errors)
            }
            ApiError::IdempotencyMismatch => (
                "this Idempotency-Key was already used with a different method, path or body; \
                 use a new key for a different request"
                    .to_owned(),
                Vec::new(),
            ),
            ApiError::Store(strato_aws::Error::Conflict(_)) => (
                "the resource changed while this request was processed; read it again and retry".to_owned(),
                Vec::new(),
            ),
            e @ (ApiError::Config(_) | ApiError::Store(_)) => {
                tracing::error!(error = %e, request_id, "request failed");
                (
                    "Strato could not complete the request; retry, and report the request id if it persists"
                        .to_owned(),
                    Vec::new(),
                )
            }
        };
        let mut doc = json!({
            "type": format!("urn:strato:problem:{slug}"),
            "title": title,
            "status": status.as_u16(),
            "detail": detail,
        });
        if !errors.is_empty() {
            doc["errors"] = json!(errors);
        }
        if let Some(id) = request_id {
            doc["request_id"] = json!(id);
        }
        let mut builder = Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, PROBLEM_JSON);
        if let Some(allow) = allow {
            builder = builder.header(header::ALLOW, allow);
        }
        builder
            .body(Body::Text(doc.to_string()))
            .unwrap_or_else(|_| Response::new(Body::Empty))
    }
}

/// A domain refusal that reaches here unhandled is an internal fault, like a store error.
impl From<strato_domain::Error> for ApiError {
    fn from(e: strato_domain::Error) -> Self {
        ApiError::Store(e.into())
    }
}

impl From<strato_aws::env::EnvError> for ApiError {
    fn from(e: strato_aws::env::EnvError) -> Self {
        ApiError::Config(e.to_string())
    }
}

//! How each [`ApiError`] is shown to a client: an RFC 9457 `application/problem+json` document with `type`,
//! `title`, `status`, `detail` and, for request problems, `errors: [{field, problem, allowed}]`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use strato_domain::validate::FieldError;
use utoipa::ToSchema;

use crate::error::ApiError;

pub const PROBLEM_JSON: &str = "application/problem+json";

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. }
            | ApiError::ForbiddenField { .. }
            | ApiError::SelfApproval(_)
            | ApiError::NotOperator(_)
            | ApiError::Suspended(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Invalid { .. } | ApiError::IdempotencyMismatch | ApiError::PolicyDenied { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::Conflict(_) | ApiError::OtherPlan(_) => StatusCode::CONFLICT,
            // A lost optimistic-concurrency race: the client may simply try again.
            ApiError::Store(strato_aws::Error::Conflict(_)) | ApiError::KeptChanging(_) => {
                StatusCode::CONFLICT
            }
            ApiError::Quota(_) | ApiError::TooSoon { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            ApiError::Config(_) | ApiError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn slug_and_title(&self) -> (&'static str, &'static str) {
        match self {
            ApiError::Unauthorized(_) => ("unauthorized", "Unauthorized"),
            ApiError::Forbidden { .. } | ApiError::ForbiddenField { .. } => ("forbidden", "Forbidden"),
            ApiError::OtherPlan(_) => ("plan-changed", "Another plan is pending"),
            ApiError::SelfApproval(_) => ("self-approval", "Approver is the requester"),
            ApiError::NotOperator(_) => ("not-operator", "Not the platform operator"),
            ApiError::Suspended(_) => ("tenant-suspended", "Tenant suspended"),
            ApiError::NotFound(_) => ("not-found", "Not found"),
            ApiError::MethodNotAllowed { .. } => ("method-not-allowed", "Method not allowed"),
            ApiError::PayloadTooLarge { .. } => ("payload-too-large", "Request body too large"),
            ApiError::UnsupportedMediaType { .. } => ("unsupported-media-type", "Unsupported media type"),
            ApiError::BadRequest { .. } => ("bad-request", "Malformed request"),
            ApiError::Invalid { .. } => ("validation", "Invalid request"),
            ApiError::IdempotencyMismatch => ("idempotency-key-reused", "Idempotency key reused"),
            ApiError::PolicyDenied { .. } => ("policy-denied", "Denied by policy"),
            ApiError::Conflict(_)
            | ApiError::KeptChanging(_)
            | ApiError::Store(strato_aws::Error::Conflict(_)) => ("conflict", "Conflict"),
            ApiError::Quota(_) => ("quota-exceeded", "Quota exceeded"),
            ApiError::TooSoon { .. } => ("too-many-requests", "Too many requests"),
            ApiError::Gone(_) => ("gone", "Gone"),
            ApiError::PreconditionFailed(_) => ("precondition-failed", "Precondition failed"),
            ApiError::Store(strato_aws::Error::StateRestore { .. }) => {
                ("state-restore-failed", "State restore failed")
            }
            ApiError::Config(_) | ApiError::Store(_) => ("internal", "Internal error"),
        }
    }

    /// The problem document and, for a 405, the `Allow` header. Internal errors are logged, never shown:
    /// they may name tables or AWS details.
    pub fn problem(self) -> (Problem, Option<String>) {
        let status = self.status();
        let (slug, title) = self.slug_and_title();
        let mut allow = None;
        let (detail, errors) = match self {
            ApiError::Unauthorized(d)
            | ApiError::NotFound(d)
            | ApiError::Conflict(d)
            | ApiError::Quota(d)
            | ApiError::PreconditionFailed(d)
            | ApiError::Gone(d)
            | ApiError::SelfApproval(d)
            | ApiError::NotOperator(d)
            | ApiError::Suspended(d)
            | ApiError::TooSoon { detail: d, .. } => (d, Vec::new()),
            ApiError::Forbidden {
                need: crate::scopes::Scope::PlatformAdmin,
            } => (
                "this operator token lacks the 'platform:admin' scope the operator's routes need".into(),
                vec![FieldError {
                    field: "scope".into(),
                    problem: "'platform:admin' is missing".into(),
                    allowed: "an operator token with the 'platform:admin' scope".into(),
                }],
            ),
            ApiError::Forbidden { need } => {
                let need = need.as_str();
                (
                    format!(
                        "this token lacks the '{need}' scope this request needs; ask your tenant's administrator \
                         for a token that has it (or 'admin')"
                    ),
                    vec![FieldError {
                        field: "scope".into(),
                        problem: format!("'{need}' is missing"),
                        allowed: format!("a token with the '{need}' scope, or 'admin'"),
                    }],
                )
            }
            ApiError::ForbiddenField { field, need, problem } => {
                let need = need.as_str();
                (
                    format!(
                        "{problem}; that needs the '{need}' scope, which this token lacks: ask your tenant's \
                         administrator, or leave '{field}' out"
                    ),
                    vec![FieldError {
                        field: field.into(),
                        problem,
                        allowed: format!("a token with the '{need}' scope"),
                    }],
                )
            }
            // What is pending now, so the approver can review it and decide again.
            ApiError::OtherPlan(p) => (
                format!(
                    "the operation's pending plan is not the one this decision names: now pending is round {} \
                     of stage {} with plan_sha256 {}; nothing was decided. Review that plan (GET the operation) \
                     and decide again naming it",
                    p.round, p.stage, p.plan_sha256
                ),
                vec![FieldError {
                    field: "plan_sha256".into(),
                    problem: "names a plan that is not the one pending".into(),
                    allowed: format!(
                        "the pending plan: plan_sha256 {}, round {}, stage {}",
                        p.plan_sha256, p.round, p.stage
                    ),
                }],
            ),
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
            ApiError::UnsupportedMediaType { sent } => {
                let what = match &sent {
                    Some(t) => format!("is '{t}'"),
                    None => "is missing".to_owned(),
                };
                (
                    format!(
                        "the request body's Content-Type {what}; this API reads only JSON bodies: send \
                         Content-Type: application/json"
                    ),
                    vec![FieldError {
                        field: "Content-Type".into(),
                        problem: format!("{what}, not JSON"),
                        allowed: "application/json (parameters such as charset allowed), or an \
                                  application/*+json type"
                            .into(),
                    }],
                )
            }
            ApiError::BadRequest { detail, errors } | ApiError::Invalid { detail, errors } => {
                (detail, errors)
            }
            // One entry per denying rule, named by its policy; the detail says what/step/fix.
            ApiError::PolicyDenied { deny, version } => (
                format!(
                    "what: the request is denied by {} policy rule(s) and nothing was written; step: policy \
                     (policy version {version}); fix: change the request so every rule in errors allows it, or \
                     ask your tenant's administrator about the policy (GET /v1/policies)",
                    deny.len()
                ),
                deny.into_iter()
                    .map(|f| FieldError {
                        field: "policy".into(),
                        problem: f.to_string(),
                        allowed: "a request every platform and tenant policy allows".into(),
                    })
                    .collect(),
            ),
            ApiError::IdempotencyMismatch => (
                "this Idempotency-Key was already used with a different method, path or body; \
                 use a new key for a different request"
                    .to_owned(),
                Vec::new(),
            ),
            ApiError::Store(strato_aws::Error::Conflict(_)) | ApiError::KeptChanging(_) => (
                "the resource changed while this request was processed; read it again and retry".to_owned(),
                Vec::new(),
            ),
            // What failed, at which step, whether the state was left as it was, and what to do; the AWS
            // detail (which may name tables) is logged only.
            ApiError::Store(e @ strato_aws::Error::StateRestore { .. }) => {
                tracing::error!(error = %e, "state restore failed");
                let strato_aws::Error::StateRestore { step, unchanged, .. } = e else {
                    unreachable!("matched above")
                };
                let outcome = if unchanged {
                    "the current state and Terraform's digest of it are as they were before the restore"
                } else {
                    "Terraform's digest may not match the current state, so a plan may fail its checksum \
                     until a restore completes"
                };
                (
                    format!(
                        "what: the state restore failed; step: {step}; {outcome}. fix: retry the restore; \
                         if it fails again, report the request id (the api's access to the state bucket and \
                         Terraform's lock table needs checking)"
                    ),
                    Vec::new(),
                )
            }
            e @ (ApiError::Config(_) | ApiError::Store(_)) => {
                // The request id is on the enclosing span (see `router::serve`).
                tracing::error!(error = %e, "request failed");
                (
                    "Strato could not complete the request; retry, and report the request id if it persists"
                        .to_owned(),
                    Vec::new(),
                )
            }
        };
        let problem = Problem {
            kind: format!("urn:strato:problem:{slug}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail,
            errors: errors.into_iter().map(FieldErrorView::from).collect(),
            request_id: None,
        };
        (problem, allow)
    }
}

/// An RFC 9457 problem document, what every 4xx and 5xx answer carries.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// `urn:strato:problem:<slug>`, stable for programs to match on.
    #[serde(rename = "type")]
    #[schema(rename = "type", pattern = "^urn:strato:problem:[a-z-]+$")]
    pub kind: String,
    pub title: String,
    /// The HTTP status, repeated.
    #[schema(minimum = 400, maximum = 599)]
    pub status: u16,
    /// What is wrong and what to do about it.
    pub detail: String,
    /// Every problem with the request, each naming its field (request problems only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldErrorView>,
    /// The Lambda request id, to quote when reporting a problem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// One problem with one field of a request.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = FieldError)]
pub struct FieldErrorView {
    /// Where in the request, e.g. `variables.node_count`, `target.role_arn` or `Idempotency-Key`.
    pub field: String,
    pub problem: String,
    /// What would be accepted.
    pub allowed: String,
}

impl From<FieldError> for FieldErrorView {
    fn from(e: FieldError) -> Self {
        Self {
            field: e.field,
            problem: e.problem,
            allowed: e.allowed,
        }
    }
}

impl Problem {
    /// The problem as an HTTP response; the document also rides in the response's extensions so the outer
    /// service can add the request id.
    pub fn into_response_with(self, allow: Option<String>) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_string(&self).unwrap_or_default();
        let mut resp = (status, [(header::CONTENT_TYPE, PROBLEM_JSON)], body).into_response();
        if let Some(allow) = allow.and_then(|a| HeaderValue::from_str(&a).ok()) {
            resp.headers_mut().insert(header::ALLOW, allow);
        }
        resp.extensions_mut().insert(self);
        resp
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = match &self {
            ApiError::TooSoon { retry_after_secs, .. } => Some(*retry_after_secs),
            _ => None,
        };
        let (problem, allow) = self.problem();
        let mut resp = problem.into_response_with(allow);
        if let Some(secs) = retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed state restore is a problem document saying what, which step and how to fix it (issue 16:
    /// it was a bare internal error), never the AWS detail.
    #[test]
    fn a_failed_restore_says_what_step_and_fix() {
        let e = ApiError::Store(strato_aws::Error::StateRestore {
            step: "recording Terraform's digest of the restored state",
            unchanged: true,
            source: Box::new(strato_aws::Error::Conflict(
                "AccessDeniedException on strato-tf-locks".into(),
            )),
        });
        let (p, _) = e.problem();
        assert_eq!(p.kind, "urn:strato:problem:state-restore-failed");
        for part in [
            "what:",
            "step: recording Terraform's digest",
            "as they were",
            "fix: retry",
        ] {
            assert!(p.detail.contains(part), "{part}: {}", p.detail);
        }
        assert!(!p.detail.contains("tf-locks"), "{}", p.detail);
    }
}

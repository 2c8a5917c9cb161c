//! The crate's one error type: what went wrong, in the decisions' terms and the edge's. How a client sees
//! each variant (a problem document and its status) is the HTTP edge's business, in [`crate::problem`].

use strato_domain::validate::FieldError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// A valid token without the scope the route needs (roles within a tenant).
    #[error("forbidden: the token lacks the '{}' scope", .need.as_str())]
    Forbidden { need: crate::scopes::Scope },
    /// A valid token whose scopes allow the route but not this use of one of its fields (a writer lowering
    /// a cluster's approval requirement).
    #[error("forbidden: {field} needs the '{}' scope: {problem}", .need.as_str())]
    ForbiddenField {
        field: &'static str,
        need: crate::scopes::Scope,
        problem: String,
    },
    /// The decision names a plan other than the one pending now: what is pending is in the detail.
    #[error("conflict: another plan is pending (round {}, stage {})", .0.round, .0.stage)]
    OtherPlan(Box<strato_domain::approval_rules::Pending>),
    /// An operator route called with a token that is not the platform operator's ([`crate::operator`]).
    #[error("forbidden: {0}")]
    NotOperator(String),
    /// A change asked by a tenant the platform operator suspended; reads still work.
    #[error("forbidden: {0}")]
    Suspended(String),
    /// Separation of duties: the requester of an operation may not approve it.
    #[error("forbidden: {0}")]
    SelfApproval(String),
    /// Also what a tenant gets for another tenant's resources: existence is not disclosed.
    #[error("not found: {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed { allowed: Vec<&'static str> },
    #[error("request body of {size} bytes exceeds {limit}")]
    PayloadTooLarge { size: usize, limit: usize },
    /// A request body declared (or left undeclared) as something other than JSON: `sent` is the
    /// `Content-Type` as sent (truncated), `None` when there was none.
    #[error("unsupported media type")]
    UnsupportedMediaType { sent: Option<String> },
    /// The request cannot be read at all (not JSON, bad query parameter).
    #[error("bad request: {detail}")]
    BadRequest { detail: String, errors: Vec<FieldError> },
    /// The request was read but asks for something invalid (schema, template, name).
    #[error("invalid request: {detail}")]
    Invalid { detail: String, errors: Vec<FieldError> },
    #[error("idempotency key reused with a different request")]
    IdempotencyMismatch,
    /// The request's policies (platform and tenant) deny it; nothing was written.
    #[error("denied by policy {version}: {} rule(s)", .deny.len())]
    PolicyDenied {
        deny: Vec<strato_policy::Finding>,
        version: String,
    },
    /// The resource's current state forbids the request; `detail` says why and what to do.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The resource kept changing under the decision's optimistic writes until it gave up; the client may
    /// read it again and retry (what a lost conditional write of the store also is).
    #[error("conflict: {0}")]
    KeptChanging(String),
    /// `If-Match` names a version the resource is no longer at (optimistic concurrency for clients).
    #[error("precondition failed: {0}")]
    PreconditionFailed(String),
    #[error("quota exceeded: {0}")]
    Quota(String),
    /// Too soon after the caller's last accepted request (an agent's reports): answered with `Retry-After`.
    #[error("too many requests: {detail}")]
    TooSoon { retry_after_secs: u64, detail: String },
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
}

/// A domain refusal that reaches here unhandled is an internal fault, like a store error; a port failure is the
/// adapter's error again (a lost conditional write stays a 409 to retry).
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

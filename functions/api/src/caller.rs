//! Who calls: the tenant, subject and scopes an authenticated request carries. Below the decisions, which
//! take it; the HTTP edge establishes it from the token (the router's `authorize`) and hands it down.

use strato_domain::ids::TenantId;
use strato_domain::telemetry::Traceparent;

use crate::error::ApiError;
use crate::scopes::Scope;

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

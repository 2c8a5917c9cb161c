//! Errors. `Error` is the domain crate's one error enum (what the pure rules refuse and what a port call can
//! fail with); `UserError` is what a tenant is shown when an operation fails.

use serde::{Deserialize, Serialize};

use crate::state_machine::TransitionError;

#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("invalid {kind} '{value}': {reason}")]
pub struct IdError {
    pub kind: &'static str,
    pub value: String,
    pub reason: &'static str,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Id(#[from] IdError),
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error("template manifest {name}: {reason}")]
    Manifest { name: String, reason: String },
    #[error("provider catalog {provider}: {reason}")]
    Catalog { provider: String, reason: String },
    #[error("spec is invalid ({} problem(s))", .0.len())]
    Validation(Vec<FieldError>),
    #[error("rendering {what}: {source}")]
    Render {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what} is malformed: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A template bundle whose bytes do not hash to the recorded sha256.
    #[error("bundle {key} is corrupt: sha256 {actual}, catalog says {expected}")]
    Checksum {
        key: String,
        expected: String,
        actual: String,
    },
    /// A conditional write lost: someone changed the item since it was read. Re-read and retry.
    #[error("conflict: {0}")]
    Conflict(String),
    /// Something the caller relies on does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The backing service could not be reached or refused for now.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// An adapter's own error with no domain meaning, kept whole so the adapter can get it back by downcasting.
    #[error(transparent)]
    Other(BoxError),
}

/// Broad classes of failure; they decide retries and alerts, and pick the default fix hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCategory {
    Transient,
    Quota,
    Credentials,
    InvalidConfiguration,
    AlreadyExists,
    StateLocked,
    StateUnreadable,
    Timeout,
    Cancelled,
    /// A failed create whose cleanup also failed: resources are left and an operator must act.
    CleanupFailed,
    Internal,
    Unknown,
}

impl ErrorCategory {
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorCategory::Transient | ErrorCategory::StateLocked | ErrorCategory::Timeout
        )
    }

    pub fn default_fix(self) -> &'static str {
        match self {
            ErrorCategory::Transient => "This is usually temporary; retry the operation.",
            ErrorCategory::Quota => {
                "Request a quota increase from the cloud provider or choose fewer/smaller resources."
            }
            ErrorCategory::Credentials => {
                "Check the target account's role ARN, external id and trust policy, and the permissions granted to Strato."
            }
            ErrorCategory::InvalidConfiguration => {
                "Correct the variables named in the error and submit the request again."
            }
            ErrorCategory::AlreadyExists => {
                "A resource with the same name exists outside this cluster's state; rename the cluster or remove the resource."
            }
            ErrorCategory::StateLocked => {
                "Another run holds the state lock; wait for it to finish, or let the sweeper release a lock left by a dead run."
            }
            ErrorCategory::StateUnreadable => {
                "The Terraform state object is corrupted; restore an earlier version via the state-versions API."
            }
            ErrorCategory::Timeout => {
                "The operation exceeded its time limit; retry it or raise the limit for this template."
            }
            ErrorCategory::Cancelled => "The operation was cancelled; start it again when ready.",
            ErrorCategory::CleanupFailed => {
                "Resources were left behind after a failed create; an operator must remove them before retrying."
            }
            ErrorCategory::Internal => {
                "This is a Strato fault; retry, and report the operation id if it persists."
            }
            ErrorCategory::Unknown => {
                "Read the log of the failed step for the engine's message; retry if it looks temporary."
            }
        }
    }
}

/// What a user sees about a failure: what happened, at which step, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{what} (step: {step}; fix: {fix})")]
pub struct UserError {
    pub what: String,
    pub step: String,
    pub fix: String,
    pub category: ErrorCategory,
    pub retryable: bool,
}

impl UserError {
    pub fn new(category: ErrorCategory, step: impl Into<String>, what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            step: step.into(),
            fix: category.default_fix().to_owned(),
            category,
            retryable: category.is_retryable(),
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = fix.into();
        self
    }
}

/// Any error an adapter reports that has no port meaning of its own; kept whole so the adapter can get it
/// back (by downcasting) when it converts a `strato_domain::ports::PortError` into its own error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// One field of a request that is not valid: where, what is wrong, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldError {
    /// JSON-path-like location in the request, e.g. `variables.node_count` or `variables.tags.env`.
    pub field: String,
    pub problem: String,
    pub allowed: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} (allowed: {})", self.field, self.problem, self.allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_error_carries_what_step_fix() {
        let e = UserError::new(ErrorCategory::Quota, "apply", "VpcLimitExceeded: too many VPCs");
        assert_eq!(e.step, "apply");
        assert!(!e.retryable);
        assert!(e.fix.contains("quota"));
        let shown = e.to_string();
        assert!(shown.contains("VpcLimitExceeded") && shown.contains("apply") && shown.contains("quota"));
        let e = UserError::new(ErrorCategory::Transient, "plan", "Throttling").with_fix("wait");
        assert!(e.retryable);
        assert_eq!(e.fix, "wait");
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["category"], "transient");
        assert_eq!(serde_json::from_value::<UserError>(json).unwrap(), e);
    }

    #[test]
    fn every_category_has_a_fix() {
        use ErrorCategory::*;
        for c in [
            Transient,
            Quota,
            Credentials,
            InvalidConfiguration,
            AlreadyExists,
            StateLocked,
            StateUnreadable,
            Timeout,
            Cancelled,
            CleanupFailed,
            Internal,
            Unknown,
        ] {
            assert!(c.default_fix().len() > 20, "{c:?}");
        }
    }
}

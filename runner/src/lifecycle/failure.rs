//! Why a step failed, in user terms.

use strato_domain::ErrorCategory;
use strato_domain::error::UserError;

use crate::classify::{classify, error_summary, invalid_variable};
use crate::outcome::{Outcome, StopReason};

/// A failed step: what the tenant is told (category, what happened, how to fix it) and whether the run was
/// stopped (cancel, time limit, SIGTERM) rather than failing on its own.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    pub(super) step: String,
    pub(super) category: ErrorCategory,
    pub(super) what: String,
    pub(super) fix: String,
    pub(super) stopped: Option<StopReason>,
    /// The resource an "already exists" failure names (for adoption after a false failure).
    pub(super) address: Option<String>,
}

impl Failure {
    pub(super) fn new(step: &str, category: ErrorCategory, what: impl Into<String>) -> Self {
        Self {
            step: step.to_owned(),
            category,
            what: what.into(),
            fix: category.default_fix().to_owned(),
            stopped: None,
            address: None,
        }
    }

    pub(super) fn stopped(step: &str, reason: StopReason) -> Self {
        let (category, what) = match reason {
            StopReason::Cancelled => (ErrorCategory::Cancelled, "the operation was cancelled".to_owned()),
            StopReason::TimedOut => (
                ErrorCategory::Timeout,
                "the operation exceeded its time limit; Terraform was interrupted".to_owned(),
            ),
            StopReason::Terminated => (
                ErrorCategory::Transient,
                "the runner task was stopped (SIGTERM); Terraform was interrupted gracefully so its state was \
                 saved and its lock released"
                    .to_owned(),
            ),
        };
        Self {
            stopped: Some(reason),
            ..Self::new(step, category, what)
        }
    }

    pub(super) fn from_outcome(step: &str, out: &Outcome) -> Self {
        if let Some(r) = out.stopped {
            return Self::stopped(step, r);
        }
        let summary = error_summary(&out.user_text);
        // Classify the diagnostics only: plan output before them may name anything (a resource called
        // "quota-…" must not make a failure a quota problem).
        let diagnostics = out
            .user_text
            .find("Error:")
            .map(|i| &out.user_text[i..])
            .unwrap_or(&out.user_text);
        let c = classify(diagnostics);
        let mut what = if summary.is_empty() {
            format!("the engine exited with code {:?}", out.code)
        } else {
            summary
        };
        if c.category == ErrorCategory::StateUnreadable {
            what = format!("the cluster's Terraform state is unreadable: {what}");
        }
        let mut fix = c.fix;
        // A value the template's rules refuse: the tenant needs the variable's name, not the engine's
        // generic headline.
        if c.category == ErrorCategory::InvalidConfiguration
            && let Some(v) = invalid_variable(diagnostics)
        {
            what = if v.reason.is_empty() {
                format!("the value of variable {} is invalid", v.name)
            } else {
                format!("the value of variable {} is invalid: {}", v.name, v.reason)
            };
            fix = format!(
                "Check the value of variable {} against the template's rules (GET /v1/templates/{{name}} lists each \
                 variable's type and constraints), correct it (PATCH the cluster's variables), then retry.",
                v.name
            );
        }
        let address = (c.category == ErrorCategory::AlreadyExists)
            .then(|| strato_domain::template::adopt::failed_address(diagnostics).map(str::to_owned))
            .flatten();
        Self {
            fix,
            address,
            ..Self::new(step, c.category, what)
        }
    }

    pub(super) fn internal(step: &str, what: impl std::fmt::Display) -> Self {
        Self::new(step, ErrorCategory::Internal, what.to_string())
    }

    /// Transient and not a stop: worth retrying.
    pub(super) fn is_retryable(&self) -> bool {
        self.stopped.is_none() && self.category == ErrorCategory::Transient
    }

    pub(super) fn user_error(&self) -> UserError {
        UserError::new(self.category, &self.step, &self.what).with_fix(&self.fix)
    }
}

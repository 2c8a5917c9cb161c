//! devstack's error type: what failed, and the fix when there is an obvious one.

#[derive(Debug, thiserror::Error)]
pub enum DevstackError {
    #[error("installing or starting the test bed: {0}")]
    TestBed(String),
    #[error("{step}: {detail}")]
    Step { step: String, detail: String },
    #[error("configuration {field}: {reason}")]
    Config { field: &'static str, reason: String },
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
    #[error("AWS {operation} failed: {message}")]
    Aws {
        operation: &'static str,
        message: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl DevstackError {
    pub fn step(step: impl Into<String>, detail: impl ToString) -> Self {
        Self::Step {
            step: step.into(),
            detail: detail.to_string(),
        }
    }

    /// Any SDK error, with its whole cause chain (the top-level message alone is often just "service error").
    pub fn aws<E>(operation: &'static str, e: E) -> Self
    where
        E: std::error::Error,
    {
        Self::Aws {
            operation,
            message: aws_sdk_sqs::error::DisplayErrorContext(e).to_string(),
        }
    }

    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}

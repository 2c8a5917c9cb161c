//! The adapter crate's one error enum. AWS SDK errors keep their source; their message shows the whole
//! chain, because the SDK's own Display says only "service error".

use strato_domain::ports::PortError;

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Anything the pure domain refused (ids, manifests, validation, transitions, rendering, checksums), or a
    /// port error with no adapter meaning of its own (what the domain's hand-off rules found missing).
    #[error(transparent)]
    Domain(strato_domain::Error),
    #[error("AWS {operation} failed: {}", chain(source.as_ref()))]
    Aws {
        operation: &'static str,
        #[source]
        source: BoxError,
    },
    #[error("serializing {what}: {source}")]
    Render {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("invalid {what}: {reason}")]
    Config { what: &'static str, reason: String },
    /// A conditional write lost: someone else changed the item first (optimistic concurrency).
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("stored item {what} is malformed: {reason}")]
    Corrupt { what: String, reason: String },
    /// A state restore that failed at `step`. `unchanged`: the current state and Terraform's digest of it are
    /// as they were before the restore (it rolled back, or had not changed anything yet).
    #[error("state restore failed while {step} ({}): {source}",
        if *unchanged { "the state is unchanged" } else { "the digest could not be put back" })]
    StateRestore {
        step: &'static str,
        unchanged: bool,
        #[source]
        source: Box<Error>,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// `err` and every source under it, joined by ": ".
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

impl Error {
    /// An SDK call named `operation` failed; the error is kept as the source.
    pub fn aws(operation: &'static str, err: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Aws {
            operation,
            source: Box::new(err),
        }
    }
}

impl From<strato_domain::error::IdError> for Error {
    fn from(e: strato_domain::error::IdError) -> Self {
        Error::Domain(e.into())
    }
}

impl From<strato_domain::state_machine::TransitionError> for Error {
    fn from(e: strato_domain::state_machine::TransitionError) -> Self {
        Error::Domain(e.into())
    }
}

/// What the decision logic sees of an adapter error: a lost conditional write is a conflict; a domain error is
/// itself; anything else travels whole, so [`From<PortError>`] gets it back.
impl From<Error> for PortError {
    fn from(e: Error) -> Self {
        match e {
            Error::Conflict(m) => PortError::Conflict(m),
            Error::Domain(d) => d,
            e => PortError::Other(Box::new(e)),
        }
    }
}

impl From<PortError> for Error {
    fn from(e: PortError) -> Self {
        match e {
            PortError::Conflict(m) => Error::Conflict(m),
            PortError::Other(b) => match b.downcast::<Error>() {
                Ok(e) => *e,
                Err(b) => Error::Domain(PortError::Other(b)),
            },
            d => Error::Domain(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_error_keeps_the_chain_and_the_source() {
        #[derive(Debug, thiserror::Error)]
        #[error("service error")]
        struct Outer(#[source] std::io::Error);
        let e = Error::aws("PutItem", Outer(std::io::Error::other("ConditionalCheckFailed")));
        assert!(
            e.to_string()
                .contains("PutItem failed: service error: ConditionalCheckFailed")
        );
        let source = std::error::Error::source(&e).expect("source kept");
        assert_eq!(source.to_string(), "service error");
    }

    #[test]
    fn errors_survive_a_trip_through_the_ports() {
        let e = Error::aws("GetItem", std::io::Error::other("timeout"));
        let p = PortError::from(e);
        assert!(matches!(p, PortError::Other(_)));
        let back = Error::from(p);
        assert!(
            matches!(
                &back,
                Error::Aws {
                    operation: "GetItem",
                    ..
                }
            ),
            "{back}"
        );
        assert!(matches!(
            PortError::from(Error::Conflict("c".into())),
            PortError::Conflict(m) if m == "c"
        ));
        assert!(matches!(
            Error::from(PortError::Conflict("c".into())),
            Error::Conflict(m) if m == "c"
        ));
        let missing = Error::from(PortError::NotFound("cluster x".into()));
        assert!(matches!(missing, Error::Domain(PortError::NotFound(_))));
        assert!(matches!(PortError::from(missing), PortError::NotFound(_)));
    }
}

//! The Fargate task: runs Terraform/OpenTofu for one operation and reports to the control plane.
//!
//! One run: read the operation and cluster, fetch and verify the template bundle, compose each stage's root
//! module, check credentials (preflight), then run the kind's lifecycle (create/update: init → plan → show →
//! apply → output per stage; delete: init → destroy in reverse; plan; drift-check), reporting steps,
//! heartbeats and plans on the `events` queue and streaming logs. Exactly one final event ends the run.
//!
//! The run is written against the [`ports`]; [`aws`] holds their AWS adapters (and [`engine`] the engine
//! process), `fakes` their in-memory stand-ins with a scripted engine.

pub mod aws;
mod aws_calls;
pub use aws_calls::{AWS_CALLS, STATE_ROLE_CALLS};
pub mod classify;
pub mod clouds;
pub mod config;
pub mod credentials;
pub mod engine;
#[cfg(any(test, feature = "fakes"))]
pub mod fakes;
pub mod kube;
mod lifecycle;
pub mod liveness;
pub mod logs;
pub mod outcome;
pub mod ports;
pub mod progress;
pub mod secrets;
pub mod sinks;
pub mod state_lock;
pub mod trust;
pub mod workspace;

use strato_domain::error::UserError;
use strato_domain::ids::OperationId;
use strato_domain::messages::RunnerEvent;

pub use aws::{Clients, SqsReporter};
pub use config::Config;
pub use lifecycle::{run_operation, run_with};

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_domain::Error),
    #[error("operation {0} not found; the dispatcher starts the runner only for recorded operations")]
    OperationNotFound(OperationId),
    #[error("cluster {0} of the operation not found")]
    ClusterNotFound(String),
    #[error(
        "the cluster lock no longer holds fencing token {0}; another run owns the cluster, nothing written"
    )]
    Fenced(u64),
    #[error("sending the final event failed: {0}")]
    FinalEvent(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    User(UserError),
    #[error(
        "the run passed its hard deadline ({}s: time limit, engine grace, exit margin); it was dropped unfinished",
        .0.as_secs()
    )]
    HardDeadline(std::time::Duration),
}

/// `tokio::spawn` inside the caller's span: the run's root span (operation, tenant, trace) goes on every line
/// the background tasks log too.
pub(crate) fn spawn<F>(f: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(tracing::Instrument::in_current_span(f))
}

/// How a run ended, for the process exit code: the final event was sent (exit 0) or not.
#[derive(Debug)]
pub struct RunSummary {
    pub final_event: RunnerEvent,
    pub last_log_seq: u64,
}

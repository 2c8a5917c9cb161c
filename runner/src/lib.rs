//! The Fargate task: runs Terraform/OpenTofu for one operation and reports to the control plane.
//!
//! One run: read the operation and cluster, fetch and verify the template bundle, compose each stage's root
//! module, check credentials (preflight), then run the kind's lifecycle (create/update: init → plan → show →
//! apply → output per stage; delete: init → destroy in reverse; plan; drift-check), reporting steps,
//! heartbeats and plans on the `events` queue and streaming logs. Exactly one final event ends the run.

mod aws_calls;
pub use aws_calls::{AWS_CALLS, STATE_ROLE_CALLS};
pub mod classify;
pub mod config;
pub mod credentials;
pub mod engine;
mod lifecycle;
pub mod logs;
pub mod progress;
pub mod secrets;
pub mod state_lock;
pub mod trust;
pub mod workspace;

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use strato_aws::aws::AwsClients;
use strato_aws::queues::QueueUrls;
use strato_aws::store::Store;
use strato_domain::error::UserError;
use strato_domain::ids::OperationId;
use strato_domain::messages::RunnerEvent;
use strato_domain::run_proof;

pub use config::Config;
pub use lifecycle::run_operation;

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

/// Sends runner events for one operation.
#[derive(Clone)]
pub struct Reporter {
    pub sqs: aws_sdk_sqs::Client,
    pub events_url: String,
    pub operation_id: OperationId,
    pub fencing_token: u64,
    /// The run's proof (`STRATO_RUN_PROOF`), on every event so status knows this run sent it.
    pub proof: SecretString,
    /// The run's trace context, as the `traceparent` attribute of every event.
    pub traceparent: Option<strato_domain::telemetry::Traceparent>,
}

impl Reporter {
    pub async fn send(&self, ev: &RunnerEvent) -> Result<(), String> {
        let body = run_proof::proven_body(ev, self.proof.expose_secret()).map_err(|e| e.to_string())?;
        self.send_body(body.to_string()).await
    }

    /// The final event; one larger than an SQS message (big outputs, a long drift list) is stored in the
    /// `artifacts` bucket and the message names it (`strato_aws::spill`), without outputs, drift or
    /// estimate.
    pub async fn send_final(
        &self,
        ev: &RunnerEvent,
        s3: &aws_sdk_s3::Client,
        bucket: &str,
    ) -> Result<(), String> {
        let small = || match ev.clone() {
            RunnerEvent::Succeeded {
                operation_id,
                fencing_token,
                at,
                ..
            } => RunnerEvent::Succeeded {
                operation_id,
                fencing_token,
                outputs: Default::default(),
                drift: None,
                estimate: None,
                at,
            },
            other => other,
        };
        let body = strato_aws::spill::spill_if_large(s3, bucket, ev, self.proof.expose_secret(), small)
            .await
            .map_err(|e| {
                format!("{e}; the final event is too large for SQS and could not be stored in {bucket}")
            })?;
        self.send_body(body).await
    }

    async fn send_body(&self, body: String) -> Result<(), String> {
        let mut last = String::new();
        // A few quick attempts: the SDK retries throttling itself, this covers short outages.
        for attempt in 0..4u32 {
            match self
                .sqs
                .send_message()
                .queue_url(&self.events_url)
                .message_body(body.clone())
                .set_message_attributes(self.traceparent.as_ref().map(|tp| {
                    [(
                        strato_domain::telemetry::TRACEPARENT_ATTRIBUTE.to_owned(),
                        strato_aws::telemetry::trace_attribute(tp),
                    )]
                    .into()
                }))
                .send()
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) => last = strato_aws::Error::aws("SendMessage", e).to_string(),
            }
            tokio::time::sleep(Duration::from_millis(250 * 2u64.pow(attempt))).await;
        }
        Err(last)
    }

    /// Best-effort progress event: a lost step or heartbeat event is logged, not fatal.
    pub async fn progress(&self, ev: RunnerEvent) {
        if let RunnerEvent::StepStarted { step, .. } = &ev {
            tracing::Span::current().record(strato_domain::telemetry::fields::STEP, step.as_str());
        }
        if let Err(e) = self.send(&ev).await {
            tracing::warn!(error = %e, "progress event not sent");
        }
    }
}

/// Everything the runner talks to.
#[derive(Clone)]
pub struct Clients {
    pub aws: AwsClients,
    pub secrets: aws_sdk_secretsmanager::Client,
    pub store: Store,
    pub queues: QueueUrls,
}

impl Clients {
    pub async fn new(aws: AwsClients, cfg: &Config) -> Result<Self, RunnerError> {
        let queues = QueueUrls::resolve(&aws.sqs, &cfg.names).await?;
        Ok(Self {
            secrets: aws_sdk_secretsmanager::Client::new(&aws.config),
            store: Store::new(aws.dynamodb.clone(), &cfg.names),
            queues,
            aws,
        })
    }
}

/// How a run ended, for the process exit code: the final event was sent (exit 0) or not.
#[derive(Debug)]
pub struct RunSummary {
    pub final_event: RunnerEvent,
    pub last_log_seq: u64,
}

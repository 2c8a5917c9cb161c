//! Queue URLs resolved once per process, the one way to enqueue a job, and redelivery delays.

use aws_sdk_sqs::Client;

use crate::error::Error;
use crate::resources::{Names, QUEUES};
use strato_domain::messages::JobMessage;

#[derive(Debug, Clone)]
pub struct QueueUrls {
    pub jobs: String,
    pub events: String,
    pub logs: String,
    pub webhooks: String,
    /// `rollouts.fifo`: a rollout's inputs, drained by the api function.
    pub rollouts: String,
}

impl QueueUrls {
    pub async fn resolve(sqs: &Client, names: &Names) -> Result<Self, Error> {
        let mut urls = Vec::new();
        for q in QUEUES {
            let out = sqs
                .get_queue_url()
                .queue_name(names.queue(q.logical))
                .send()
                .await
                .map_err(|e| Error::aws("GetQueueUrl", e))?;
            urls.push((q.logical, out.queue_url.unwrap_or_default()));
        }
        let get = |l: &str| {
            urls.iter()
                .find(|(n, _)| *n == l)
                .map(|(_, u)| u.clone())
                .unwrap_or_default()
        };
        Ok(Self {
            jobs: get("jobs"),
            events: get("events"),
            logs: get("logs"),
            webhooks: get("webhooks"),
            rollouts: get("rollouts"),
        })
    }
}

/// Sends a job to `jobs.fifo`, grouped by cluster so one cluster's jobs stay ordered. `wake` distinguishes
/// a deliberate re-enqueue (lock released, sweeper) from a duplicate send, which FIFO deduplication drops.
pub async fn enqueue_job(sqs: &Client, jobs_url: &str, job: &JobMessage, wake: &str) -> Result<(), Error> {
    let body = serde_json::to_string(job).map_err(|source| Error::Render {
        what: "job message",
        source,
    })?;
    sqs.send_message()
        .queue_url(jobs_url)
        .message_body(body)
        .message_group_id(job.cluster_id.as_str())
        .message_deduplication_id(format!("{}-{wake}", job.operation_id))
        .send()
        .await
        .map_err(|e| Error::aws("SendMessage", e))?;
    Ok(())
}

/// Sends `message` as JSON to a standard queue (`what` names it in errors), after `delay_secs` (0–900).
pub async fn send_json(
    sqs: &Client,
    url: &str,
    what: &'static str,
    message: &impl serde::Serialize,
    delay_secs: i32,
) -> Result<(), Error> {
    let body = serde_json::to_string(message).map_err(|source| Error::Render { what, source })?;
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .delay_seconds(delay_secs.clamp(0, 900))
        .set_message_attributes(strato_telemetry::current_trace_attributes())
        .send()
        .await
        .map_err(|e| Error::aws("SendMessage", e))?;
    Ok(())
}

/// Makes a received message visible again after `secs` (backoff for a retry). Best effort: if this fails,
/// the message simply comes back after the queue's visibility timeout.
pub async fn delay_redelivery(sqs: &Client, queue_url: &str, receipt_handle: Option<&str>, secs: i32) {
    let Some(handle) = receipt_handle else {
        return;
    };
    if let Err(e) = sqs
        .change_message_visibility()
        .queue_url(queue_url)
        .receipt_handle(handle)
        .visibility_timeout(secs)
        .send()
        .await
    {
        tracing::warn!(error = %Error::aws("ChangeMessageVisibility", e), "could not delay redelivery");
    }
}

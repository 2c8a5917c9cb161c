//! The `rollouts` queue: a rollout's inputs (a member's ended run, the scheduler's tick), drained by the api
//! function (`strato_rollout::feed`).

use strato_rollout::feed::{Queue, RolloutMessage};

use crate::error::Error;

/// `rollouts.fifo` through SQS: grouped by rollout, deduplicated by the input
/// ([`RolloutMessage::dedup_id`]).
#[derive(Debug, Clone, Copy)]
pub struct SqsRollouts<'a> {
    pub sqs: &'a aws_sdk_sqs::Client,
    pub url: &'a str,
}

impl Queue for SqsRollouts<'_> {
    async fn send(&self, m: &RolloutMessage, now: i64) -> Result<(), String> {
        let body = serde_json::to_string(m).map_err(|e| format!("rendering the rollout message: {e}"))?;
        self.sqs
            .send_message()
            .queue_url(self.url)
            .message_body(body)
            .message_group_id(m.group())
            .message_deduplication_id(m.dedup_id(now))
            .set_message_attributes(strato_telemetry::current_trace_attributes())
            .send()
            .await
            .map_err(|e| Error::aws("SendMessage", e).to_string())?;
        Ok(())
    }
}

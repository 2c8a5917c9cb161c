//! One SQS batch: each record is parsed and routed to its handler; records that fail, or must wait, are
//! reported back so SQS redelivers them.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use strato_aws::queues;

use crate::incoming::{Incoming, parse_body};
use crate::{Ctx, StatusError, agent, runner_events, task_change};

/// What becomes of a record that was handled without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ack,
    /// Not yet: hand it back, visible again after this many seconds.
    RetryAfter(i32),
}

/// Processes a batch; records that failed (or must wait) are reported in `batch_item_failures`.
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> Result<SqsBatchResponse, StatusError> {
    let mut response = SqsBatchResponse::default();
    for record in &event.records {
        let id = record.message_id.clone().unwrap_or_default();
        match process(ctx, record).await {
            Ok(Outcome::Ack) => {}
            Ok(Outcome::RetryAfter(secs)) => {
                queues::delay_redelivery(
                    &ctx.sqs,
                    &ctx.queues.events,
                    record.receipt_handle.as_deref(),
                    secs,
                )
                .await;
                response.add_failure(id);
            }
            Err(e) => {
                tracing::error!(message_id = %id, error = %e, "event failed; SQS will redeliver it");
                response.add_failure(id);
            }
        }
    }
    Ok(response)
}

async fn process(ctx: &Ctx, record: &SqsMessage) -> Result<Outcome, StatusError> {
    let message_id = record.message_id.clone().unwrap_or_default();
    let body = record.body.as_deref().ok_or_else(|| StatusError::EmptyBody {
        message_id: message_id.clone(),
    })?;
    match parse_body(&message_id, body)? {
        Incoming::Runner(ev) => {
            runner_events::apply_runner_event(ctx, &ev).await?;
            Ok(Outcome::Ack)
        }
        Incoming::Task(task) => {
            let receives = record
                .attributes
                .get("ApproximateReceiveCount")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            task_change::apply_task_change(ctx, &task, receives).await
        }
        Incoming::Control(ev) => agent::apply_control(ctx, &ev).await,
        Incoming::Other(kind) => {
            tracing::warn!(%kind, "ignoring an event this function does not handle");
            Ok(Outcome::Ack)
        }
    }
}

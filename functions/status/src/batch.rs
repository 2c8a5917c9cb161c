//! One SQS batch: each record is parsed and routed to its handler; records that fail, or must wait, are
//! reported back so SQS redelivers them.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use strato_aws::batch::{for_each_record, receive_count};
use strato_aws::queues;

use crate::incoming::{Incoming, parse_body};
use crate::{Ctx, StatusError, agent, runner_events, task_change};

/// What becomes of a record that was handled without error (`RetryAfter`: not yet, hand it back).
pub(crate) use strato_aws::batch::Outcome;

/// Processes a batch; records that failed (or must wait) are reported in `batch_item_failures`. The events
/// queue is a standard one, so no record is held back for another's failure.
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> Result<SqsBatchResponse, StatusError> {
    Ok(for_each_record(
        &event.records,
        |record| process(ctx, record),
        |handle, secs| queues::delay_redelivery(&ctx.sqs, &ctx.queues.events, Some(handle), secs),
    )
    .await)
}

async fn process(ctx: &Ctx, record: &SqsMessage) -> Result<Outcome, StatusError> {
    let message_id = record.message_id.clone().unwrap_or_default();
    let body = record.body.as_deref().ok_or_else(|| StatusError::EmptyBody {
        message_id: message_id.clone(),
    })?;
    // A runner event too large for SQS arrives as a reference to the stored event.
    let body = strato_aws::spill::unspill(&ctx.s3, &ctx.config.names.bucket("artifacts"), body).await?;
    match parse_body(&message_id, &body)? {
        Incoming::Runner(ev) => {
            runner_events::apply_runner_event(ctx, &ev).await?;
            Ok(Outcome::Ack)
        }
        Incoming::Task(task) => task_change::apply_task_change(ctx, &task, receive_count(record)).await,
        Incoming::Control(ev) => agent::apply_control(ctx, &ev).await,
        Incoming::Other(kind) => {
            tracing::warn!(%kind, "ignoring an event this function does not handle");
            Ok(Outcome::Ack)
        }
    }
}

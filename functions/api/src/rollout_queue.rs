//! The api function also drains the `rollouts` queue (SQS FIFO, grouped by rollout): each record is one
//! input of a rollout — a member's ended plan or update (sent by the status function), the clock (the
//! scheduler's tick after a soak). Only the api links the decisions that start a member's run (validation,
//! the member tenant's policies and rules, approvals), so the input is applied here and what it decides
//! carried out here ([`strato_rollout::feed::consume`]).
//!
//! A record that cannot be read, or names a rollout that does not exist, is acknowledged and logged (it
//! would fail the same way forever); one whose store write failed or kept losing to other writers is
//! handed back (`batchItemFailures`), with the rest of its rollout's group. After each applied input, the
//! rollout's clusters per member status are emitted (`RolloutMembers`).

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use strato_aws::batch::{Outcome, for_each_record};
use strato_rollout::feed::{Consumed, consume};

use crate::context::Ctx;
use crate::rollouts::CtxRuns;

/// Handles one batch of the `rollouts` queue.
pub(crate) async fn drain(ctx: &Ctx, event: SqsEvent) -> SqsBatchResponse {
    let runs = CtxRuns { ctx };
    let (runs, store) = (&runs, &ctx.store);
    for_each_record(
        &event.records,
        |record| async move {
            let body = record.body.as_deref().unwrap_or_default();
            let now = strato_domain::ts::now().unix_timestamp();
            // Boxed: the decisions' futures are large (see `rollouts::start`).
            match Box::pin(consume(store, runs, body, now)).await {
                Consumed::Applied(r) => {
                    strato_domain::vitals::rollout_members(r.id.as_str(), &r.rollout.status_counts());
                    tracing::info!(rollout = %r.id, phase = ?r.rollout.phase, "rollout input applied");
                    Ok(Outcome::Ack)
                }
                Consumed::Dropped(why) => {
                    let id = record.message_id.as_deref().unwrap_or_default();
                    tracing::warn!(message_id = %id, reason = %why, "rollout message dropped");
                    Ok(Outcome::Ack)
                }
                Consumed::Retry(why) => Err(why),
            }
        },
        |_, _| async {},
    )
    .await
}

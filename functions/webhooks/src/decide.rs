//! The consumer's decisions, written against ports: what one delivery of a queued notification does (post,
//! retry later, give up) and the note it leaves. The Lambda handler runs them on AWS ([`crate::handle`]);
//! `tests/decisions.rs` on fakes.

use std::future::Future;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use strato_aws::batch::{for_each_record, receive_count};
use strato_coordination::update_operation;
use strato_domain::ids::TenantId;
use strato_domain::messages::WebhookMessage;
use strato_domain::ports::{Clock, Operations, PortError};
use strato_domain::webhook::Webhook;

use crate::WebhooksError;
use crate::deliver::{Attempt, NoteState, note, note_state, set_note};

pub use strato_aws::batch::Outcome;

/// Tenants' webhook receivers: where they are, one attempt at posting, and the queue's back-off.
pub trait Receivers: Send + Sync {
    /// The tenant's webhook; `None` when it has none (any more).
    fn webhook_of(
        &self,
        tenant: &TenantId,
    ) -> impl Future<Output = Result<Option<Webhook>, PortError>> + Send;

    /// One POST of `body` (event type `event`, event id `delivery_id`) to `hook`, signed.
    fn post(
        &self,
        hook: &Webhook,
        event: &str,
        delivery_id: &str,
        body: &[u8],
    ) -> impl Future<Output = Attempt> + Send;

    /// Makes the message with `receipt_handle` visible again after `secs` (best effort).
    fn retry_after(&self, receipt_handle: &str, secs: i32) -> impl Future<Output = ()> + Send;
}

/// Back-off before attempt `attempt + 1`: 10 s, 20 s, 40 s… capped at 5 minutes (below the queue's 12 h
/// visibility limit, and short enough that a receiver back after an outage hears within minutes).
pub fn backoff_secs(attempt: u32) -> i32 {
    let exp = attempt.saturating_sub(1).min(5);
    (10_i32 << exp).min(300)
}

/// The consumer's dependencies, as ports.
#[derive(Debug, Clone, Copy)]
pub struct Deliveries<'a, S, R, C> {
    /// Operations: the outcome is noted on them.
    pub store: &'a S,
    pub receivers: &'a R,
    pub clock: &'a C,
    /// Attempts before giving up (the queue's deliveries before its DLQ): the last failure is final.
    pub max_attempts: u32,
}

impl<S, R, C> Deliveries<'_, S, R, C>
where
    S: Operations,
    R: Receivers,
    C: Clock,
{
    /// Processes a batch: records to retry are reported in `batch_item_failures`, after a back-off.
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        for_each_record(
            &event.records,
            |record| self.process(record),
            |handle, secs| self.receivers.retry_after(handle, secs),
        )
        .await
    }

    async fn process(&self, record: &SqsMessage) -> Result<Outcome, WebhooksError> {
        let message_id = record.message_id.clone().unwrap_or_default();
        let body = record.body.as_deref().ok_or_else(|| WebhooksError::EmptyBody {
            message_id: message_id.clone(),
        })?;
        let msg: WebhookMessage =
            serde_json::from_str(body).map_err(|source| WebhooksError::BadBody { message_id, source })?;
        let span = tracing::Span::current();
        if let Some(id) = &msg.operation_id {
            strato_domain::telemetry::record(
                &span,
                strato_domain::telemetry::fields::OPERATION_ID,
                id.as_str(),
            );
        }
        strato_domain::telemetry::record(
            &span,
            strato_domain::telemetry::fields::TENANT_ID,
            msg.tenant_id.as_str(),
        );
        self.deliver(&msg, receive_count(record)).await
    }

    /// Delivery number `attempt` of `msg`: skipped when its note says it is done (a duplicate message),
    /// else, if the tenant's webhook subscribes to
    /// the event, one POST whose outcome replaces the delivery's note (when the event has an operation).
    pub async fn deliver(&self, msg: &WebhookMessage, attempt: u32) -> Result<Outcome, WebhooksError> {
        let op_id = msg.operation_id.as_ref();
        if let Some(id) = op_id {
            let Some(op) = self.store.load_operation(id).await? else {
                tracing::warn!(operation_id = %id, delivery = %msg.delivery_id, "operation gone; webhook dropped");
                return Ok(Outcome::Ack);
            };
            if note_state(&op.notes, &msg.delivery_id) == Some(NoteState::Final) {
                return Ok(Outcome::Ack);
            }
        }
        let Some(hook) = self.receivers.webhook_of(&msg.tenant_id).await? else {
            tracing::info!(delivery = %msg.delivery_id, tenant_id = %msg.tenant_id, "tenant has no webhook; nothing sent");
            return Ok(Outcome::Ack);
        };
        // The subscription may have changed since the event was queued: it decides now.
        if !hook.wants(&msg.event) {
            tracing::info!(delivery = %msg.delivery_id, event = %msg.event, "webhook does not subscribe to the event; nothing sent");
            return Ok(Outcome::Ack);
        }
        let body = serde_json::to_vec(&msg.payload).map_err(|source| WebhooksError::Render { source })?;
        let outcome = self
            .receivers
            .post(&hook, &msg.event, &msg.delivery_id, &body)
            .await;
        let (last, next) = match &outcome {
            Attempt::Delivered { .. } => {
                tracing::info!(delivery = %msg.delivery_id, to = %hook.display_url(), attempt, "webhook delivered");
                strato_domain::vitals::webhook_delivery("delivered");
                (true, Outcome::Ack)
            }
            Attempt::Failed { retryable, error, .. } => {
                let last = !retryable || attempt >= self.max_attempts;
                tracing::warn!(delivery = %msg.delivery_id, to = %hook.display_url(), attempt, last, %error,
                    "webhook attempt failed");
                strato_domain::vitals::webhook_delivery(if last { "failed" } else { "retrying" });
                let next = if last {
                    Outcome::Ack
                } else {
                    Outcome::RetryAfter(backoff_secs(attempt))
                };
                (last, next)
            }
        };
        let line = note(
            &hook,
            &msg.event,
            &msg.delivery_id,
            &outcome,
            attempt,
            self.max_attempts,
            last,
            self.clock.now(),
        );
        // A failure to record is an error: the message comes back and the note is written then (a
        // delivered notification may then be posted again; receivers deduplicate on the event id).
        if let Some(id) = op_id {
            update_operation(self.store, id, |o| {
                set_note(&mut o.notes, &msg.delivery_id, line.clone())
            })
            .await?;
        }
        Ok(next)
    }
}

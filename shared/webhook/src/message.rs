//! The `webhooks` queue's message: one event on its way to a tenant's receiver.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use strato_model::ids::{OperationId, TenantId};

/// `webhooks` queue: one lifecycle event for a tenant's webhook, queued by the function that saw it (the
/// status function after the result and hand-off are saved, the scheduler) and posted by the webhooks
/// consumer, so a slow receiver never holds up a state change. `delivery_id` is the event's deterministic
/// id ([`event_id`](super::event_id), `webhook-id`): every attempt and every duplicate carries it, so
/// receivers deduplicate on it and the consumer keeps one note per delivery on the operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookMessage {
    pub tenant_id: TenantId,
    /// The operation the event is about; its notes record the outcome. `None` for an event no operation
    /// caused (`cluster.expiring`): delivered without a note, receivers deduplicate on the id.
    #[serde(default)]
    pub operation_id: Option<OperationId>,
    /// The event type's name, e.g. [`DRIFT_DETECTED`](super::DRIFT_DETECTED) (the body's `type`).
    pub event: String,
    pub delivery_id: String,
    /// The JSON body posted: a [`Envelope`](super::Envelope).
    pub payload: serde_json::Value,
}

impl WebhookMessage {
    /// Event `kind` about `subject` (what makes its id unique: an operation id, a cluster and its new
    /// state…), for `tenant`, noted on `operation` if any, with `data` as the body's `data`.
    pub fn event(
        tenant: TenantId,
        operation: Option<OperationId>,
        kind: super::EventType,
        subject: &str,
        at: OffsetDateTime,
        data: serde_json::Value,
    ) -> Result<Self, serde_json::Error> {
        let envelope = super::Envelope::new(kind, at, data);
        Ok(Self {
            tenant_id: tenant,
            operation_id: operation,
            event: kind.as_str().to_owned(),
            delivery_id: super::event_id(kind, subject),
            payload: serde_json::to_value(&envelope)?,
        })
    }
}

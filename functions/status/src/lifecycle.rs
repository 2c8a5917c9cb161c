//! Lifecycle events for the tenant's webhook: `operation.started` when the runner's first event moves an
//! operation to running, `operation.succeeded` / `operation.failed` once its end is saved and handed off,
//! `cluster.state_changed` when that end moved the cluster. Queued on the `webhooks` queue (the consumer
//! signs, posts and notes the outcome on the operation), only when the tenant's webhook subscribes to the
//! event. Each event's id is deterministic (the operation, or the cluster, state and operation), so an
//! event queued twice is one event to receivers.
//!
//! Emitted by the delivery that made the change; a failure to queue is logged and does not fail the record
//! (the state change is saved; the event is the least of it).

use serde::Serialize;
use strato_domain::messages::WebhookMessage;
use strato_domain::model::{Cluster, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Clock, Webhooks};
use strato_domain::webhook::{ClusterStateEvent, EventType, OperationEvent};

use crate::ports::{Ports, Status};

/// Queues event `kind` about `subject` for `op`'s tenant, if its webhook wants it.
pub(crate) async fn emit<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    kind: EventType,
    subject: &str,
    data: &impl Serialize,
) {
    let result = async {
        let wanted = ctx
            .webhooks
            .webhook_of(&op.tenant_id)
            .await?
            .is_some_and(|h| h.wants(kind.as_str()));
        if !wanted {
            return Ok(false);
        }
        let data = serde_json::to_value(data)
            .map_err(|e| strato_domain::Error::Unavailable(format!("rendering {kind}: {e}")))?;
        let msg = WebhookMessage::event(
            op.tenant_id.clone(),
            Some(op.operation_id.clone()),
            kind,
            subject,
            ctx.clock.now(),
            data,
        )
        .map_err(|e| strato_domain::Error::Unavailable(format!("rendering {kind}: {e}")))?;
        ctx.webhooks.enqueue(&msg).await?;
        Ok::<_, strato_domain::Error>(true)
    }
    .await;
    match result {
        Ok(true) => tracing::info!(operation_id = %op.operation_id, event = %kind, "webhook event queued"),
        Ok(false) => {}
        Err(e) => tracing::warn!(operation_id = %op.operation_id, event = %kind, error = %e,
            "webhook event not queued"),
    }
}

/// The event an operation's status calls for, if any.
pub(crate) fn operation_event(status: OperationStatus) -> Option<EventType> {
    match status {
        OperationStatus::Running => Some(EventType::OperationStarted),
        OperationStatus::Succeeded => Some(EventType::OperationSucceeded),
        OperationStatus::Failed | OperationStatus::Cancelled => Some(EventType::OperationFailed),
        // Emitted with its plan's round (see `approval`), not from the status alone.
        OperationStatus::Queued | OperationStatus::Dispatched | OperationStatus::AwaitingApproval => None,
    }
}

/// `operation.started`: `op` was just saved as running for the first time.
pub(crate) async fn started<P: Ports>(ctx: &Status<'_, P>, op: &Operation) {
    emit(
        ctx,
        op,
        EventType::OperationStarted,
        op.operation_id.as_str(),
        &OperationEvent::of(op),
    )
    .await;
}

/// The end of `done`, and the state its end moved `cluster` to (a drift check's recorded result is not a
/// state change).
pub(crate) async fn ended<P: Ports>(ctx: &Status<'_, P>, done: &Operation, cluster: Option<&Cluster>) {
    if let Some(kind) = operation_event(done.status) {
        emit(
            ctx,
            done,
            kind,
            done.operation_id.as_str(),
            &OperationEvent::of(done),
        )
        .await;
    }
    if let Some(c) = cluster
        && done.kind != OperationKind::DriftCheck
    {
        let data = ClusterStateEvent {
            tenant_id: c.tenant_id.clone(),
            cluster_id: c.cluster_id.clone(),
            cluster_name: c.spec.name.to_string(),
            state: c.state(),
            operation_id: done.operation_id.clone(),
        };
        let subject = format!("{}/{}/{}", c.cluster_id, c.state().as_str(), done.operation_id);
        emit(ctx, done, EventType::ClusterStateChanged, &subject, &data).await;
    }
}

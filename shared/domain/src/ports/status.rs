//! The ports only the status function (the end of an operation) needs beyond the shared ones: renewing a
//! lock's lease on a heartbeat, reading a tenant's slots (to finish an interrupted hand-off), releasing a
//! deleted cluster's name, the events queue (timers, redelivery delays), frames for subscribers, the run's
//! log archive in S3, and tenant webhooks.

use std::future::Future;

use time::{Duration, OffsetDateTime};

use super::PortError;
use crate::ids::{ClusterId, OperationId, TenantId};
use crate::messages::{ControlEvent, LogFrame, WebhookMessage};
use crate::model::Cluster;
use crate::webhook::Webhook;

/// Extends a held cluster lock (a runner's heartbeat).
pub trait LeaseRenewal: Send + Sync {
    /// Moves the lease to `now + lease` only while `op` holds the lock with `fencing_token`; `false` when
    /// it does not (the runner is a zombie, or the lock was released).
    fn renew_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
        lease: Duration,
        now: OffsetDateTime,
    ) -> impl Future<Output = Result<bool, PortError>> + Send;
}

/// Who holds a tenant's slots.
pub trait SlotHolders: Send + Sync {
    fn slot_holders(
        &self,
        tenant: &TenantId,
    ) -> impl Future<Output = Result<Vec<OperationId>, PortError>> + Send;
}

/// A tenant's cluster names, reserved while a cluster of that name is not DELETED.
pub trait NameReservations: Send + Sync {
    /// Frees the name of a DELETED cluster (only while the reservation is still this cluster's).
    fn release_name(&self, cluster: &Cluster) -> impl Future<Output = Result<(), PortError>> + Send;
}

/// The status function's own queue (`events`): control timers sent to itself, and the back-off of a record
/// being handled.
pub trait EventsQueue: Send + Sync {
    /// Sends `event`, delivered after `delay_secs` (SQS caps a delay at 900 s).
    fn send_control(
        &self,
        event: &ControlEvent,
        delay_secs: i32,
    ) -> impl Future<Output = Result<(), PortError>> + Send;

    /// Makes a received record visible again after `secs`. Best effort: otherwise it returns after the
    /// queue's visibility timeout.
    fn retry_after(&self, receipt_handle: &str, secs: i32) -> impl Future<Output = ()> + Send;
}

/// Frames for an operation's WebSocket subscribers (the `logs` queue).
pub trait FrameSink: Send + Sync {
    fn publish_frame(&self, frame: &LogFrame) -> impl Future<Output = Result<(), PortError>> + Send;
}

/// What the run left in the artifacts bucket.
pub trait RunArchive: Send + Sync {
    /// The number of the last archived log line (0 if none).
    fn last_archived_seq(&self, op: &OperationId) -> impl Future<Output = Result<u64, PortError>> + Send;

    /// Whether the runner marked its log archive complete. The runner writes the marker just before it
    /// sends its final report, so a complete archive proves the run reached its end.
    fn archive_complete(&self, op: &OperationId) -> impl Future<Output = Result<bool, PortError>> + Send;

    /// The stored event a message names when the runner's final event was too large for SQS (checked to be
    /// the same operation's, with the same fencing token); `None` for an ordinary message.
    fn unspill(&self, body: &str) -> impl Future<Output = Result<Option<String>, PortError>> + Send;
}

/// Where tenant webhook notifications are queued (the `webhooks` queue): they are posted by their own
/// consumer, outside the state machine's path.
pub trait Webhooks: Send + Sync {
    /// The tenant's webhook; `None` when it has none (then nothing is queued).
    fn webhook_of(
        &self,
        tenant: &TenantId,
    ) -> impl Future<Output = Result<Option<Webhook>, PortError>> + Send;

    /// Queues `delivery`; the consumer reads the tenant's webhook, posts it and notes the outcome.
    fn enqueue(&self, delivery: &WebhookMessage) -> impl Future<Output = Result<(), PortError>> + Send;
}

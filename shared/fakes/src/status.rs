//! The fakes only the status function needs: lease renewal, slot holders and name releases on the store,
//! its queues (timers, back-offs, frames), the run's log archive and the `webhooks` queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use time::{Duration, OffsetDateTime};

use super::{FakeStore, lock};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::{ControlEvent, LogFrame, WebhookMessage};
use strato_domain::model::Cluster;
use strato_domain::ports::{
    EventsQueue, FrameSink, LeaseRenewal, NameReservations, PortError, RunArchive, SlotHolders, Webhooks,
};
use strato_domain::webhook::Webhook;

impl LeaseRenewal for FakeStore {
    async fn renew_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
        lease: Duration,
        now: OffsetDateTime,
    ) -> Result<bool, PortError> {
        let mut s = lock(&self.state);
        match s.locks.get_mut(cluster) {
            Some(item) if item.owner.as_ref() == Some(op) && item.fencing_token == fencing_token => {
                item.lease_expires_at = Some(now + lease);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

impl SlotHolders for FakeStore {
    async fn slot_holders(&self, tenant: &TenantId) -> Result<Vec<OperationId>, PortError> {
        Ok(self.slots(tenant))
    }
}

/// The fake store derives a name's reservation from the clusters it holds (see its `Intake`), so a DELETED
/// cluster's name is already free.
impl NameReservations for FakeStore {
    async fn release_name(&self, _cluster: &Cluster) -> Result<(), PortError> {
        Ok(())
    }
}

#[derive(Debug, Default)]
struct EventsState {
    controls: Vec<(ControlEvent, i32)>,
    visibility: Vec<(String, i32)>,
    frames: Vec<LogFrame>,
}

/// The `events` and `logs` queues in memory: keeps the timers sent (with their delays), the back-offs asked
/// for and the frames published. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeStatusQueues {
    state: Arc<Mutex<EventsState>>,
}

impl FakeStatusQueues {
    /// Control events sent, with their delay in seconds.
    pub fn controls(&self) -> Vec<(ControlEvent, i32)> {
        lock(&self.state).controls.clone()
    }

    /// `(receipt handle, seconds)` of every back-off, in order.
    pub fn visibility_changes(&self) -> Vec<(String, i32)> {
        lock(&self.state).visibility.clone()
    }

    /// Frames published, in order.
    pub fn frames(&self) -> Vec<LogFrame> {
        lock(&self.state).frames.clone()
    }
}

impl EventsQueue for FakeStatusQueues {
    async fn send_control(&self, event: &ControlEvent, delay_secs: i32) -> Result<(), PortError> {
        lock(&self.state)
            .controls
            // As asked, not clamped as the adapter does: a test sees a timer that asks SQS for too much.
            .push((event.clone(), delay_secs));
        Ok(())
    }

    async fn retry_after(&self, receipt_handle: &str, secs: i32) {
        lock(&self.state)
            .visibility
            .push((receipt_handle.to_owned(), secs));
    }
}

impl FrameSink for FakeStatusQueues {
    async fn publish_frame(&self, frame: &LogFrame) -> Result<(), PortError> {
        lock(&self.state).frames.push(frame.clone());
        Ok(())
    }
}

/// Runs' log archives in memory: the last archived line and whether the archive is marked complete.
/// Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeRunArchive {
    state: Arc<Mutex<HashMap<OperationId, (u64, bool)>>>,
}

impl FakeRunArchive {
    /// The runner archived lines up to `last_seq`, and marked the archive complete when `complete`.
    pub fn archived(&self, op: &OperationId, last_seq: u64, complete: bool) {
        lock(&self.state).insert(op.clone(), (last_seq, complete));
    }
}

impl RunArchive for FakeRunArchive {
    async fn last_archived_seq(&self, op: &OperationId) -> Result<u64, PortError> {
        Ok(lock(&self.state).get(op).map_or(0, |a| a.0))
    }

    async fn archive_complete(&self, op: &OperationId) -> Result<bool, PortError> {
        Ok(lock(&self.state).get(op).is_some_and(|a| a.1))
    }

    /// The fakes' runners never spill: their events are small.
    async fn unspill(&self, _body: &str) -> Result<Option<String>, PortError> {
        Ok(None)
    }
}

/// The `webhooks` queue in memory: what was queued, in order. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeWebhooks {
    hooks: Arc<Mutex<HashMap<TenantId, Webhook>>>,
    queued: Arc<Mutex<Vec<WebhookMessage>>>,
    failures: Arc<Mutex<usize>>,
}

impl FakeWebhooks {
    pub fn set(&self, tenant: &TenantId, hook: Webhook) {
        lock(&self.hooks).insert(tenant.clone(), hook);
    }

    /// The next `n` sends fail (the queue unavailable).
    pub fn fail_sends(&self, n: usize) {
        *lock(&self.failures) = n;
    }

    /// Notifications queued, in order.
    pub fn queued(&self) -> Vec<WebhookMessage> {
        lock(&self.queued).clone()
    }
}

impl Webhooks for FakeWebhooks {
    async fn webhook_of(&self, tenant: &TenantId) -> Result<Option<Webhook>, PortError> {
        Ok(lock(&self.hooks).get(tenant).cloned())
    }

    async fn enqueue(&self, delivery: &WebhookMessage) -> Result<(), PortError> {
        {
            let mut failures = lock(&self.failures);
            if *failures > 0 {
                *failures -= 1;
                return Err(PortError::Unavailable("webhooks queue (injected)".into()));
            }
        }
        lock(&self.queued).push(delivery.clone());
        Ok(())
    }
}

//! The fakes only the status function needs: lease renewal, slot holders and name releases on the store,
//! its queues (timers, back-offs, frames), the run's log archive and tenant webhooks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use time::{Duration, OffsetDateTime};

use super::{FakeStore, lock};
use crate::ids::{ClusterId, OperationId, TenantId};
use crate::messages::{ControlEvent, LogFrame};
use crate::model::Cluster;
use crate::ports::{
    EventsQueue, FrameSink, LeaseRenewal, NameReservations, PortError, RunArchive, SlotHolders,
    WebhookDelivery, Webhooks,
};
use crate::webhook::Webhook;

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

/// A webhook call the fake made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookCall {
    pub tenant_url: String,
    pub event: String,
    pub delivery_id: String,
    pub body: Vec<u8>,
}

#[derive(Debug, Default)]
struct WebhooksState {
    hooks: HashMap<TenantId, Webhook>,
    calls: Vec<WebhookCall>,
}

/// Tenants' webhooks in memory: every call is delivered at the first attempt and kept. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeWebhooks {
    state: Arc<Mutex<WebhooksState>>,
}

impl FakeWebhooks {
    pub fn set(&self, tenant: &TenantId, hook: Webhook) {
        lock(&self.state).hooks.insert(tenant.clone(), hook);
    }

    /// Calls made, in order.
    pub fn calls(&self) -> Vec<WebhookCall> {
        lock(&self.state).calls.clone()
    }
}

impl Webhooks for FakeWebhooks {
    async fn webhook_of(&self, tenant: &TenantId) -> Result<Option<Webhook>, PortError> {
        Ok(lock(&self.state).hooks.get(tenant).cloned())
    }

    async fn deliver(&self, hook: &Webhook, event: &str, delivery_id: &str, body: &[u8]) -> WebhookDelivery {
        lock(&self.state).calls.push(WebhookCall {
            tenant_url: hook.url().to_owned(),
            event: event.to_owned(),
            delivery_id: delivery_id.to_owned(),
            body: body.to_vec(),
        });
        WebhookDelivery {
            delivered: true,
            attempts: 1,
            status: Some(200),
            error: None,
        }
    }
}

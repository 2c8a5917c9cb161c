//! Cluster expiry, run with every sweep: clusters past their `expires_at` get a `delete` operation
//! (requested by [`SCHEDULER`]), and clusters within the notice window a `cluster.expiring` event, once per
//! expiry time. Found through the sparse `by_expiry` index (a Query, never a Scan), soonest first.
//!
//! Never a delete while another operation of the cluster is open: the cluster stays due and is looked at
//! again next run. Overlapping runs cannot both queue one: the delete is recorded on the cluster version
//! read (the cluster's pending-operation marker, as the drift checks do), so the loser's write fails.
//! The notice is queued before it is recorded as sent: a failure between the two sends it again on the
//! next run with the same event id (receivers deduplicate on it).

use serde_json::json;
use strato_domain::audit::{self, AuditEntry, AuditLog};
use strato_domain::expiry::{self, ExpiringEvent, ExpiryAction};
use strato_domain::messages::{JobMessage, WebhookMessage};
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind};
use strato_domain::ports::{Clusters, Intake, JobQueue, Operations, PortError, Webhooks};
use strato_domain::ts;
use strato_domain::webhook::EventType;
use time::{Duration, OffsetDateTime};

use crate::decide::{Report, SCHEDULER};

/// An expiry delete that failed is queued again this long after it ended.
pub const DELETE_RETRY: Duration = Duration::hours(1);

/// How many of a cluster's newest operations are read to find the scheduler's last delete try.
const RECENT_OPERATIONS: u32 = 20;

/// The expiry run's dependencies, as ports, and its settings.
#[derive(Debug, Clone, Copy)]
pub struct Expirer<'a, S, Q, W, A> {
    pub store: &'a S,
    pub jobs: &'a Q,
    pub webhooks: &'a W,
    /// Each expiry delete is recorded here, as `strato:scheduler`.
    pub audit: &'a A,
    /// How long before its expiry a cluster's `cluster.expiring` is sent.
    pub notice: Duration,
    /// At most this many clusters per run; the rest are the next run's.
    pub batch: i32,
}

impl<S, Q, W, A> Expirer<'_, S, Q, W, A>
where
    S: Operations + Clusters + Intake,
    Q: JobQueue,
    W: Webhooks,
    A: AuditLog,
{
    /// One run at `now`; counts go to `report`.
    pub async fn run(&self, now: OffsetDateTime, report: &mut Report) -> Result<(), PortError> {
        for c in self
            .store
            .clusters_expiring_before(now + self.notice, self.batch)
            .await?
        {
            match expiry::action(&c, now, self.notice) {
                ExpiryAction::Delete => self.delete(c, now, report).await?,
                ExpiryAction::Notify => self.notify(c, now, report).await?,
                ExpiryAction::Nothing => self.drop_from_index(c).await?,
            }
        }
        Ok(())
    }

    async fn delete(&self, c: Cluster, now: OffsetDateTime, report: &mut Report) -> Result<(), PortError> {
        let open = !self
            .store
            .open_cluster_operations(&c.cluster_id)
            .await?
            .iter()
            .all(|o| o.status.is_terminal());
        // A cluster mid-change (or with anything open) is deleted once it settles.
        let settled = matches!(c.state(), ClusterState::Active | ClusterState::Failed);
        // An expiry delete that failed is tried again, but not on every run: its last try is among the
        // cluster's newest operations (a FAILED cluster gets no drift checks in between).
        let recent = self
            .store
            .recent_cluster_operations(&c.cluster_id, RECENT_OPERATIONS)
            .await?;
        let last_try = recent
            .iter()
            .filter(|o| o.kind == OperationKind::Delete && o.requested_by.as_deref() == Some(SCHEDULER))
            .map(|o| o.updated_at)
            .max();
        if open || !settled || last_try.is_some_and(|t| t + DELETE_RETRY > now) {
            report.expiry_postponed_busy += 1;
            return Ok(());
        }
        let expired_at = c.expires_at.map(ts::format).unwrap_or_default();
        let mut op = Operation::new(
            c.tenant_id.clone(),
            c.cluster_id.clone(),
            OperationKind::Delete,
            now,
        );
        op.requested_by = Some(SCHEDULER.into());
        // The cluster's spec was validated when it was recorded (as a reconcile update reuses it).
        op.spec = Some(c.spec.clone());
        op.notes.push(format!(
            "{}: the cluster expired at {expired_at}; deleted by the scheduler",
            ts::format(now)
        ));
        let mut claimed = c;
        match self.store.add_operation_on(&mut claimed, &op).await {
            Ok(Ok(())) => {}
            Ok(Err(rejected)) => {
                tracing::warn!(cluster_id = %claimed.cluster_id, ?rejected, "expiry delete not queued: tenant quota; next run");
                report.expiry_postponed_busy += 1;
                return Ok(());
            }
            // Someone changed the cluster since it was read (another run, a request): next run decides.
            Err(PortError::Conflict(_)) => {
                report.expiry_postponed_busy += 1;
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        // The first enqueue of a new operation; the sweeper re-sends it if this one is lost.
        self.jobs.enqueue(&JobMessage::from(&op), "0").await?;
        tracing::info!(cluster_id = %claimed.cluster_id, operation_id = %op.operation_id, %expired_at, "expired cluster: delete queued");
        let entry = AuditEntry::system(
            "scheduler",
            op.tenant_id.clone(),
            now,
            "cluster.expire",
            audit::Outcome::Succeeded,
        )
        .on_cluster(Some(op.cluster_id.clone()))
        .on_operation(Some(op.operation_id.clone()))
        .with_detail(format!("expired at {expired_at}; delete queued"));
        audit::record(self.audit, entry).await;
        report.expiry_deletes_queued += 1;
        Ok(())
    }

    async fn notify(&self, c: Cluster, now: OffsetDateTime, report: &mut Report) -> Result<(), PortError> {
        let Some(at) = c.expires_at else {
            return Ok(());
        };
        let wanted = self
            .webhooks
            .webhook_of(&c.tenant_id)
            .await?
            .is_some_and(|h| h.wants(EventType::ClusterExpiring.as_str()));
        if wanted {
            let data = ExpiringEvent {
                tenant_id: c.tenant_id.clone(),
                cluster_id: c.cluster_id.clone(),
                cluster_name: c.spec.name.to_string(),
                expires_at: at,
            };
            let msg = WebhookMessage::event(
                c.tenant_id.clone(),
                None,
                EventType::ClusterExpiring,
                &format!("{}/{}", c.cluster_id, ts::format(at)),
                now,
                serde_json::to_value(&data).unwrap_or_else(|_| json!({})),
            )
            .map_err(|e| PortError::Unavailable(format!("rendering cluster.expiring: {e}")))?;
            self.webhooks.enqueue(&msg).await?;
        }
        let mut told = c;
        told.expiry_notified_for = Some(at);
        match self.store.store_cluster(&mut told).await {
            Ok(()) => {}
            // Changed meanwhile: next run looks again (the same event id if the expiry is unchanged).
            Err(PortError::Conflict(_)) => return Ok(()),
            Err(e) => return Err(e),
        }
        report.expiry_notices_sent += u32::from(wanted);
        Ok(())
    }

    /// A cluster the index still lists but that has nothing due (being deleted, expiry cleared): saved
    /// again, which drops it from the sparse index so it no longer takes a place in every run's batch.
    async fn drop_from_index(&self, c: Cluster) -> Result<(), PortError> {
        if expiry::index_bucket(&c).is_some() {
            return Ok(());
        }
        let mut c = c;
        match self.store.store_cluster(&mut c).await {
            Ok(()) | Err(PortError::Conflict(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

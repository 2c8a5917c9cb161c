//! A cluster's health as its agent reports it: `healthy` when at least the requested nodes are Ready and
//! every reported core component has all its replicas; `degraded` with the reasons otherwise (or when the
//! agent went silent); `unknown` before the first report. Pure decisions: the API applies them to each
//! accepted report, the scheduler to agents that stopped reporting. A bounded summary is kept on the
//! cluster item (DynamoDB items are at most 400 KB, and the report's own bounds are in `strato-agent-wire`).

use serde::{Deserialize, Serialize};
use strato_agent_wire::Report;
use time::{Duration, OffsetDateTime};

use crate::ids::{ClusterId, TenantId};
use crate::messages::WebhookMessage;
use crate::model::{Cluster, ClusterState};
use crate::ports::{PortError, Webhooks};
use crate::webhook::EventType;

/// The scheduler's setting: an agent silent this long marks its cluster degraded (seconds).
pub const STALE_ENV: &str = "STRATO_AGENT_STALE_SECS";
pub const DEFAULT_STALE_SECS: u64 = 600;

/// The partition key value of the sparse `by_agent_seen` index: set on clusters whose registered agent is
/// expected to report (ACTIVE or UPDATING) and that are not already marked silent.
pub const WATCH_BUCKET: &str = "reporting";

pub use strato_model::health::{ClusterHealth, HealthStatus, WARNINGS_KEPT};

/// A change of a cluster's health status: what `cluster.health_changed` tells and the metric counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthChange {
    pub from: HealthStatus,
    pub to: HealthStatus,
    pub reasons: Vec<String>,
}

/// The `data` of the `cluster.health_changed` webhook event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthChangedEvent {
    pub tenant_id: TenantId,
    pub cluster_id: ClusterId,
    pub cluster_name: String,
    pub from: HealthStatus,
    pub to: HealthStatus,
    pub reasons: Vec<String>,
    /// When the new status began.
    #[serde(with = "crate::ts")]
    pub at: OffsetDateTime,
}

impl HealthChangedEvent {
    pub fn of(c: &Cluster, change: &HealthChange, at: OffsetDateTime) -> Self {
        Self {
            tenant_id: c.tenant_id.clone(),
            cluster_id: c.cluster_id.clone(),
            cluster_name: c.spec.name.to_string(),
            from: change.from,
            to: change.to,
            reasons: change.reasons.clone(),
            at,
        }
    }

    /// The event's subject for its id: the cluster and the moment of the change, so a re-sent event
    /// keeps its id.
    pub fn subject(&self) -> String {
        format!("{}/{}/{}", self.cluster_id, self.to, crate::ts::format(self.at))
    }
}

/// The health a report shows, for a cluster that asked for `requested` Ready nodes.
pub fn assess(report: &Report, requested: u64, now: OffsetDateTime) -> ClusterHealth {
    let mut reasons = Vec::new();
    if u64::from(report.nodes_ready) < requested {
        reasons.push(format!(
            "{} of {requested} requested nodes are Ready",
            report.nodes_ready
        ));
    }
    let unhealthy: Vec<String> = report
        .components
        .iter()
        .filter(|c| !c.healthy())
        .map(|c| c.name.clone())
        .collect();
    for c in report.components.iter().filter(|c| !c.healthy()) {
        reasons.push(format!(
            "{} ({}) has {} of {} replicas ready",
            c.name, c.role, c.ready, c.desired
        ));
    }
    let status = if reasons.is_empty() {
        HealthStatus::Healthy
    } else {
        HealthStatus::Degraded
    };
    ClusterHealth {
        status,
        reasons,
        since: now,
        nodes_ready: report.nodes_ready,
        nodes_total: report.nodes_total,
        nodes_requested: requested,
        kubernetes_version: report.kubernetes_version.clone(),
        unhealthy_components: unhealthy,
        warnings: report.warnings.iter().take(WARNINGS_KEPT).cloned().collect(),
        agent_version: report.agent_version.clone(),
        last_seen: now,
        silent: false,
    }
}

/// Records `next` on the cluster, keeping `since` when the status did not change; the change, if any.
pub fn record(c: &mut Cluster, mut next: ClusterHealth) -> Option<HealthChange> {
    let from = c.health.as_ref().map(|h| h.status).unwrap_or_default();
    let change = (from != next.status).then(|| HealthChange {
        from,
        to: next.status,
        reasons: next.reasons.clone(),
    });
    if change.is_none()
        && let Some(prev) = &c.health
    {
        next.since = prev.since;
    }
    c.health = Some(next);
    change
}

/// Whether the cluster's agent is expected to report now: registered with a credential that was not
/// revoked (a delete revokes it), and the cluster ACTIVE or UPDATING.
pub fn expects_reports(c: &Cluster) -> bool {
    c.agent_registered_at.is_some()
        && c.agent_credential_hash.is_some()
        && matches!(c.state(), ClusterState::Active | ClusterState::Updating)
}

/// The partition key of the sparse `by_agent_seen` index (its sort key is `agent_last_seen`): clusters
/// whose agent is expected to report and that are not already marked silent.
pub fn watch_bucket(c: &Cluster) -> Option<String> {
    let silent = c.health.as_ref().is_some_and(|h| h.silent);
    (expects_reports(c) && c.agent_last_seen.is_some() && !silent).then(|| WATCH_BUCKET.to_owned())
}

/// What [`mark_silent`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Silence {
    /// The agent reported recently enough (or the cluster expects no reports, or is already marked).
    NotDue,
    /// Marked silent; `change` is the status change, `None` when it was degraded already.
    Marked { change: Option<HealthChange> },
}

/// The scheduler's decision for a cluster whose agent last reported at `agent_last_seen`: degraded with
/// the reason "the agent has not reported since <time>", once, when it has been silent for `stale_after`
/// or longer. The next accepted report replaces it ([`assess`], [`record`]).
pub fn mark_silent(c: &mut Cluster, now: OffsetDateTime, stale_after: Duration) -> Silence {
    let Some(last) = c.agent_last_seen else {
        return Silence::NotDue;
    };
    if !expects_reports(c) || now - last < stale_after || c.health.as_ref().is_some_and(|h| h.silent) {
        return Silence::NotDue;
    }
    let from = c.health.as_ref().map(|h| h.status).unwrap_or_default();
    let mut next = c.health.clone().unwrap_or(ClusterHealth {
        status: HealthStatus::Unknown,
        reasons: Vec::new(),
        since: now,
        nodes_ready: 0,
        nodes_total: 0,
        nodes_requested: 0,
        kubernetes_version: None,
        unhealthy_components: Vec::new(),
        warnings: Vec::new(),
        agent_version: None,
        last_seen: last,
        silent: false,
    });
    next.reasons.insert(
        0,
        format!("the agent has not reported since {}", crate::ts::format(last)),
    );
    next.silent = true;
    next.status = HealthStatus::Degraded;
    let change = (from != HealthStatus::Degraded).then(|| HealthChange {
        from,
        to: HealthStatus::Degraded,
        reasons: next.reasons.clone(),
    });
    if change.is_some() {
        next.since = now;
    }
    c.health = Some(next);
    Silence::Marked { change }
}

/// Tells of a change: the metric always, the `cluster.health_changed` webhook event when the tenant's
/// webhook wants it (queued for the webhooks function, which signs and posts it). Whether it was queued.
pub async fn announce(
    webhooks: &impl Webhooks,
    c: &Cluster,
    change: &HealthChange,
    at: OffsetDateTime,
) -> Result<bool, PortError> {
    crate::vitals::health_changed(change.from.as_str(), change.to.as_str());
    let wanted = webhooks
        .webhook_of(&c.tenant_id)
        .await?
        .is_some_and(|h| h.wants(EventType::ClusterHealthChanged.as_str()));
    if !wanted {
        return Ok(false);
    }
    let data = HealthChangedEvent::of(c, change, at);
    let body = serde_json::to_value(&data)
        .map_err(|e| PortError::Unavailable(format!("rendering cluster.health_changed: {e}")))?;
    let msg = WebhookMessage::event(
        c.tenant_id.clone(),
        None,
        EventType::ClusterHealthChanged,
        &data.subject(),
        at,
        body,
    )
    .map_err(|e| PortError::Unavailable(format!("rendering cluster.health_changed: {e}")))?;
    webhooks.enqueue(&msg).await?;
    Ok(true)
}

#[cfg(test)]
mod tests;

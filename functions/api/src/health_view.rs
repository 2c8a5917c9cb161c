//! How a cluster's health shows in the cluster views (`GET /v1/clusters/{id}`, the list): the summary its
//! agent's reports left on the cluster item, or `unknown` before the first report.

use serde::Serialize;
use strato_domain::health::{ClusterHealth, HealthStatus};
use strato_domain::ts;
use utoipa::ToSchema;

use crate::schema;

/// The cluster's health as its agent reports it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ClusterHealth)]
pub(crate) struct HealthView {
    /// `healthy`: at least the requested nodes Ready and every reported core component has its replicas;
    /// `degraded`: see `reasons`; `unknown`: no report yet (or the template installs no agent).
    #[schema(value_type = String, example = "healthy")]
    pub status: HealthStatus,
    /// Why it is degraded (empty otherwise), e.g. "the agent has not reported since <time>".
    pub reasons: Vec<String>,
    /// When `status` took its current value; null while unknown.
    #[schema(value_type = Option<schema::Timestamp>)]
    pub since: Option<String>,
    pub nodes_ready: Option<u32>,
    pub nodes_total: Option<u32>,
    /// Ready nodes the cluster asked for.
    pub nodes_requested: Option<u64>,
    pub kubernetes_version: Option<String>,
    /// Core components without all their replicas ready.
    pub unhealthy_components: Vec<String>,
    /// The newest warnings of the last report (at most 5).
    pub warnings: Vec<HealthWarningView>,
    pub agent_version: Option<String>,
    /// When the agent last reported.
    #[schema(value_type = Option<schema::Timestamp>)]
    pub last_seen: Option<String>,
}

/// A `Warning` event the agent reported.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ClusterHealthWarning)]
pub(crate) struct HealthWarningView {
    pub reason: String,
    /// `kind/namespace/name` of the object the event is about.
    pub object: String,
    pub message: String,
    pub count: u32,
    pub last_seen: String,
}

impl HealthView {
    pub fn of(h: Option<&ClusterHealth>) -> Self {
        let Some(h) = h else {
            return Self {
                status: HealthStatus::Unknown,
                reasons: Vec::new(),
                since: None,
                nodes_ready: None,
                nodes_total: None,
                nodes_requested: None,
                kubernetes_version: None,
                unhealthy_components: Vec::new(),
                warnings: Vec::new(),
                agent_version: None,
                last_seen: None,
            };
        };
        Self {
            status: h.status,
            reasons: h.reasons.clone(),
            since: Some(ts::format(h.since)),
            nodes_ready: Some(h.nodes_ready),
            nodes_total: Some(h.nodes_total),
            nodes_requested: Some(h.nodes_requested),
            kubernetes_version: h.kubernetes_version.clone(),
            unhealthy_components: h.unhealthy_components.clone(),
            warnings: h
                .warnings
                .iter()
                .map(|w| HealthWarningView {
                    reason: w.reason.clone(),
                    object: w.object.clone(),
                    message: w.message.clone(),
                    count: w.count,
                    last_seen: w.last_seen.clone(),
                })
                .collect(),
            agent_version: h.agent_version.clone(),
            last_seen: Some(ts::format(h.last_seen)),
        }
    }
}

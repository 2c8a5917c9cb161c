//! What the cluster item keeps of its agent's reports: the record the model carries. How a report is
//! assessed and when a cluster is marked silent are the domain's (`strato_domain::health`).

use serde::{Deserialize, Serialize};
use strato_agent_wire::Warning;
use time::OffsetDateTime;

/// How many of a report's warnings the cluster item keeps (the newest).
pub const WARNINGS_KEPT: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    #[default]
    Unknown,
    Healthy,
    Degraded,
}

impl HealthStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthStatus::Unknown => "unknown",
            HealthStatus::Healthy => "healthy",
            HealthStatus::Degraded => "degraded",
        }
    }
}

impl std::fmt::Display for HealthStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the cluster item keeps of its agent's reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterHealth {
    pub status: HealthStatus,
    /// Why it is degraded (empty when healthy).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// When `status` took its current value.
    #[serde(with = "crate::ts")]
    pub since: OffsetDateTime,
    pub nodes_ready: u32,
    pub nodes_total: u32,
    pub nodes_requested: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Names of the reported components without all their replicas ready.
    #[serde(default)]
    pub unhealthy_components: Vec<String>,
    /// The newest [`WARNINGS_KEPT`] warnings of the last report.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
    /// When the agent's last accepted report arrived.
    #[serde(with = "crate::ts")]
    pub last_seen: OffsetDateTime,
    /// Whether the scheduler marked it degraded because the agent stopped reporting.
    #[serde(default)]
    pub silent: bool,
}

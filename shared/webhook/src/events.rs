//! Lifecycle event types a webhook can subscribe to, the body every call carries, and event ids.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::WebhookError;

/// What happened. The wire name ([`EventType::as_str`]) is the body's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventType {
    #[serde(rename = "operation.started")]
    OperationStarted,
    #[serde(rename = "operation.succeeded")]
    OperationSucceeded,
    #[serde(rename = "operation.failed")]
    OperationFailed,
    /// Defined for plan approvals; nothing emits it yet.
    #[serde(rename = "operation.awaiting_approval")]
    OperationAwaitingApproval,
    #[serde(rename = "cluster.state_changed")]
    ClusterStateChanged,
    #[serde(rename = "drift.detected")]
    DriftDetected,
    #[serde(rename = "cluster.expiring")]
    ClusterExpiring,
    /// The health its agent's reports show changed (`unknown`, `healthy`, `degraded`), or its agent went
    /// silent.
    #[serde(rename = "cluster.health_changed")]
    ClusterHealthChanged,
    /// A rollout stopped itself (a cluster failed, a plan broke a stop rule) or an operator paused it.
    #[serde(rename = "rollout.paused")]
    RolloutPaused,
    #[serde(rename = "rollout.completed")]
    RolloutCompleted,
    #[serde(rename = "rollout.aborted")]
    RolloutAborted,
}

impl EventType {
    pub const ALL: [EventType; 11] = [
        EventType::OperationStarted,
        EventType::OperationSucceeded,
        EventType::OperationFailed,
        EventType::OperationAwaitingApproval,
        EventType::ClusterStateChanged,
        EventType::DriftDetected,
        EventType::ClusterExpiring,
        EventType::ClusterHealthChanged,
        EventType::RolloutPaused,
        EventType::RolloutCompleted,
        EventType::RolloutAborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::OperationStarted => "operation.started",
            EventType::OperationSucceeded => "operation.succeeded",
            EventType::OperationFailed => "operation.failed",
            EventType::OperationAwaitingApproval => "operation.awaiting_approval",
            EventType::ClusterStateChanged => "cluster.state_changed",
            EventType::DriftDetected => "drift.detected",
            EventType::ClusterExpiring => "cluster.expiring",
            EventType::ClusterHealthChanged => "cluster.health_changed",
            EventType::RolloutPaused => "rollout.paused",
            EventType::RolloutCompleted => "rollout.completed",
            EventType::RolloutAborted => "rollout.aborted",
        }
    }

    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|e| e.as_str()).collect()
    }

    pub fn parse(name: &str) -> Result<Self, WebhookError> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == name.trim())
            .ok_or_else(|| WebhookError::UnknownEvent(name.trim().to_owned()))
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A comma-separated list of event names (`a,b`), deduplicated and sorted.
pub fn parse_event_list(list: &str) -> Result<Vec<EventType>, WebhookError> {
    let mut out = list
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(EventType::parse)
        .collect::<Result<Vec<_>, _>>()?;
    out.sort();
    out.dedup();
    Ok(out)
}

/// The body of every call: `{"type", "timestamp", "data"}` as the Standard Webhooks spec recommends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    #[serde(rename = "type")]
    pub kind: String,
    /// When the event happened (not when this attempt was sent).
    #[serde(with = "strato_model::ts")]
    pub timestamp: OffsetDateTime,
    pub data: serde_json::Value,
}

impl Envelope {
    pub fn new(kind: EventType, timestamp: OffsetDateTime, data: serde_json::Value) -> Self {
        Self {
            kind: kind.as_str().to_owned(),
            timestamp,
            data,
        }
    }
}

/// The `webhook-id` of event `kind` about `subject` (e.g. an operation id, or a cluster id and the state it
/// entered): the same inputs give the same id, so a redelivered or re-emitted event is recognised by
/// receivers. `evt_` and 32 hex characters (no `.`, which the signed content uses as a separator).
pub fn event_id(kind: EventType, subject: &str) -> String {
    let h = Sha256::digest(format!("{}/{subject}", kind.as_str()).as_bytes());
    format!("evt_{}", hex::encode(&h[..16]))
}

/// The `data` of `operation.started`, `operation.succeeded` and `operation.failed` (a cancelled
/// operation is `operation.failed` with status `cancelled`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationEvent {
    pub tenant_id: strato_model::ids::TenantId,
    pub cluster_id: strato_model::ids::ClusterId,
    pub operation_id: strato_model::ids::OperationId,
    pub kind: strato_model::model::OperationKind,
    pub status: strato_model::model::OperationStatus,
    /// Who asked for it (`strato:scheduler` for an expiry delete or a drift check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// Why it failed, as the operation says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl OperationEvent {
    pub fn of(op: &strato_model::model::Operation) -> Self {
        Self {
            tenant_id: op.tenant_id.clone(),
            cluster_id: op.cluster_id.clone(),
            operation_id: op.operation_id.clone(),
            kind: op.kind,
            status: op.status,
            requested_by: op.requested_by.clone(),
            error: op.error.as_ref().map(|e| e.to_string()),
        }
    }
}

/// The `data` of `cluster.state_changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterStateEvent {
    pub tenant_id: strato_model::ids::TenantId,
    pub cluster_id: strato_model::ids::ClusterId,
    pub cluster_name: String,
    pub state: strato_model::model::ClusterState,
    /// The operation whose end moved it.
    pub operation_id: strato_model::ids::OperationId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_lists_parse() {
        for e in EventType::ALL {
            assert_eq!(EventType::parse(e.as_str()), Ok(e));
            assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
        }
        assert_eq!(
            parse_event_list("cluster.expiring, operation.failed,cluster.expiring"),
            Ok(vec![EventType::OperationFailed, EventType::ClusterExpiring])
        );
        assert_eq!(parse_event_list(""), Ok(vec![]));
        let err = parse_event_list("operation.failed,cluster.exploded").unwrap_err();
        assert_eq!(err, WebhookError::UnknownEvent("cluster.exploded".into()));
        assert!(err.to_string().contains("cluster.expiring"), "{err}");
    }

    #[test]
    fn event_ids_are_deterministic_and_distinct() {
        let a = event_id(EventType::OperationStarted, "op-1");
        assert_eq!(a, event_id(EventType::OperationStarted, "op-1"));
        assert_ne!(a, event_id(EventType::OperationSucceeded, "op-1"));
        assert_ne!(a, event_id(EventType::OperationStarted, "op-2"));
        assert!(a.starts_with("evt_") && a.len() == 36 && !a.contains('.'), "{a}");
    }
}

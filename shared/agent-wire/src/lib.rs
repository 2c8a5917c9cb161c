//! What `strato-agent` and the control plane say to each other. Both sides build on these types, so a
//! field renamed on one side breaks the other's build, not a cluster's heartbeat. Serde only: the agent's
//! image links nothing of the control plane.
//!
//! The exchange (all `POST`, JSON, `Authorization: Bearer …`):
//! - `/v1/agent/register` with the one-time registration token the configure step installed, body
//!   [`Report`] → 201 [`Registered`]: the agent's own long-lived credential for this cluster.
//! - `/v1/agent/heartbeat` with that credential, body [`Report`] → 200 [`Ack`].
//! - `/v1/agent/credential` with the credential, empty body → 200 [`Rotated`]: a new credential; the old one
//!   keeps working until the new one is first used.
//!
//! A credential is `<cluster id>.<secret>` so the control plane finds its cluster without an index and
//! compares the secret's hash in constant time.

use serde::{Deserialize, Serialize};

/// A report's body may be this large at most (the control plane answers 413 above it).
pub const MAX_REPORT_BYTES: usize = 16 * 1024;
/// Components and warnings a report may carry at most (the agent keeps the most relevant).
pub const MAX_COMPONENTS: usize = 32;
pub const MAX_WARNINGS: usize = 20;
/// Longest text field (names, reasons, messages), in characters; the agent cuts longer ones.
pub const MAX_TEXT: usize = 256;
/// The control plane refuses heartbeats closer together than this (429 with Retry-After).
pub const MIN_HEARTBEAT_SECS: u64 = 10;
/// The interval an agent uses until the control plane says otherwise.
pub const DEFAULT_HEARTBEAT_SECS: u64 = 60;

/// What the agent saw in its cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Nodes whose `Ready` condition is `True`.
    pub nodes_ready: u32,
    /// All nodes the API server lists.
    #[serde(default)]
    pub nodes_total: u32,
    /// The API server's `gitVersion`, e.g. `v1.31.2-eks-1234`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Core components in `kube-system` (CoreDNS, kube-proxy, the CNI).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// Recent `Warning` events, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
    /// Reports the agent could not deliver since its last delivered one (the control plane was unreachable).
    #[serde(default)]
    pub missed_reports: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ComponentKind {
    Deployment,
    DaemonSet,
}

/// A workload the cluster needs, with its ready and desired replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    /// What it is for: `dns`, `proxy` or `cni`.
    pub role: String,
    /// The workload's name in `kube-system`, e.g. `coredns`, `kube-proxy`, `aws-node`.
    pub name: String,
    pub kind: ComponentKind,
    pub ready: u32,
    pub desired: u32,
}

impl Component {
    pub fn healthy(&self) -> bool {
        self.desired > 0 && self.ready >= self.desired
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub reason: String,
    /// `kind/namespace/name` of the object the event is about.
    pub object: String,
    pub message: String,
    pub count: u32,
    /// RFC 3339.
    pub last_seen: String,
}

/// The answer to a registration: keep `credential` (the agent stores it in its Secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registered {
    pub cluster_id: String,
    pub credential: String,
    pub heartbeat_secs: u64,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ack {
    pub cluster_id: String,
    /// When to report next (the agent adds jitter).
    pub heartbeat_secs: u64,
    /// The cluster's health as the control plane now records it: `healthy`, `degraded` or `unknown`.
    pub health: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rotated {
    pub credential: String,
}

/// The cluster id a credential belongs to (the part before the first `.`), if it has the credential's shape.
pub fn credential_cluster(credential: &str) -> Option<&str> {
    let (cluster, secret) = credential.split_once('.')?;
    (!cluster.is_empty() && !secret.is_empty()).then_some(cluster)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_report_reads_and_the_optional_parts_stay_out_when_empty() {
        let r: Report = serde_json::from_str(r#"{"nodes_ready": 3}"#).unwrap();
        assert_eq!(r.nodes_ready, 3);
        assert!(r.components.is_empty() && r.kubernetes_version.is_none());
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            !text.contains("components") && !text.contains("kubernetes_version"),
            "{text}"
        );
    }

    #[test]
    fn a_credential_names_its_cluster() {
        assert_eq!(credential_cluster("cl-abc.s3cret"), Some("cl-abc"));
        assert_eq!(credential_cluster("nodot"), None);
        assert_eq!(credential_cluster(".s"), None);
        assert_eq!(credential_cluster("cl-abc."), None);
    }

    #[test]
    fn a_component_is_healthy_only_with_every_desired_replica_ready() {
        let c = |ready, desired| Component {
            role: "dns".into(),
            name: "coredns".into(),
            kind: ComponentKind::Deployment,
            ready,
            desired,
        };
        assert!(c(2, 2).healthy());
        assert!(!c(1, 2).healthy());
        assert!(!c(0, 0).healthy(), "a component scaled to nothing serves nothing");
    }
}

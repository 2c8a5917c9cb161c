//! What the agent's decisions need from the outside, as small traits with in-memory fakes in tests.

use std::future::Future;
use std::time::Duration;

use secrecy::SecretString;
use strato_agent_wire::{Ack, ComponentKind, Registered, Report, Rotated};

use crate::AgentError;

/// One node as the agent counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub name: String,
    /// Its `Ready` condition is `True`.
    pub ready: bool,
}

/// A Deployment or DaemonSet in `kube-system`, with its ready and desired replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub kind: ComponentKind,
    pub name: String,
    pub ready: u32,
    pub desired: u32,
}

/// A `Warning` event as read, before the report's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarningEvent {
    pub reason: String,
    /// `kind/namespace/name`.
    pub object: String,
    pub message: String,
    pub count: u32,
    /// RFC 3339, and the same instant as seconds since the epoch (for ordering).
    pub last_seen: String,
    pub last_seen_unix: i64,
}

/// What the agent saw in its cluster at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    pub nodes: Vec<NodeState>,
    pub kubernetes_version: Option<String>,
    pub workloads: Vec<Workload>,
    pub warnings: Vec<WarningEvent>,
}

/// The cluster the agent runs in.
pub trait Cluster: Send + Sync {
    fn observe(&self) -> impl Future<Output = Result<Observation, AgentError>> + Send;
}

/// Why a call to the control plane did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// 401 or 403: the token or credential was refused.
    Refused,
    /// 429, with the Retry-After it gave.
    TooMany { retry_after: Option<Duration> },
    /// No answer, or a 5xx: try again later.
    Unreachable(String),
    /// Another 4xx: the control plane does not accept what the agent sent.
    Rejected { status: u16, detail: String },
}

/// The control plane's `/v1/agent` endpoints.
pub trait ControlPlane: Send + Sync {
    fn register(
        &self,
        token: &SecretString,
        report: &Report,
    ) -> impl Future<Output = Result<Registered, CallError>> + Send;
    fn heartbeat(
        &self,
        credential: &SecretString,
        report: &Report,
    ) -> impl Future<Output = Result<Ack, CallError>> + Send;
    fn rotate(&self, credential: &SecretString) -> impl Future<Output = Result<Rotated, CallError>> + Send;
}

/// What the agent's Secret holds.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub registration_token: Option<SecretString>,
    pub credential: Option<SecretString>,
}

/// The agent's Secret: the registration token the configure step put there, and the credential the agent
/// keeps there.
pub trait CredentialStore: Send + Sync {
    fn load(&self) -> impl Future<Output = Result<Stored, AgentError>> + Send;
    fn save_credential(
        &self,
        credential: &SecretString,
    ) -> impl Future<Output = Result<(), AgentError>> + Send;
}

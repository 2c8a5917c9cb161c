//! strato-agent: runs in a tenant's cluster, registers with the control plane once with the registration
//! token the configure step installed, keeps the credential it is given in its Secret, then reports the
//! cluster's nodes, core components and warnings on every heartbeat (shared/agent-wire is the contract).
//!
//! The decisions (`agent`, `report`, `backoff`) work on the ports in `ports`; `kube_cluster` and
//! `control_plane` are the real adapters, `run` wires them, `probe` is the liveness check.

pub mod agent;
pub mod backoff;
pub mod control_plane;
pub mod kube_cluster;
pub mod ports;
pub mod probe;
pub mod report;
pub mod run;

#[cfg(test)]
mod fakes;
#[cfg(test)]
mod tests;

/// Everything that can go wrong in the agent's library.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("setting {name}: {problem}")]
    Setting { name: &'static str, problem: String },
    #[error("Kubernetes API: {0}")]
    Kube(String),
    #[error("the Secret {namespace}/{name}: {problem}")]
    Secret {
        namespace: String,
        name: String,
        problem: String,
    },
    #[error("HTTP client: {0}")]
    Http(String),
    #[error("liveness: {0}")]
    Probe(String),
}

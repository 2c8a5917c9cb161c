//! `strato-agent run`: the settings from the environment, the real adapters, and the loop.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use crate::AgentError;
use crate::agent::{Agent, Policy};
use crate::control_plane::{HttpControlPlane, client};
use crate::kube_cluster::{KubeCluster, KubeSecret};
use crate::probe;

/// A turn that takes longer than this is abandoned (and retried): the probe's file must keep moving.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The control plane's base URL (`STRATO_API_URL`).
    pub api_url: String,
    /// `STRATO_CLUSTER_ID`: which cluster this agent reports for (logged; the credential names it too).
    pub cluster_id: String,
    /// `STRATO_AGENT_SECRET` (default `strato-agent`) in `STRATO_AGENT_NAMESPACE` (default: the pod's own
    /// namespace from its service account, else `strato-system`).
    pub secret: String,
    pub namespace: String,
    /// `STRATO_AGENT_ALIVE_FILE` (default /tmp/strato-agent-alive).
    pub alive_file: PathBuf,
}

impl Settings {
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Self, AgentError> {
        let get = |name| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let api_url = get("STRATO_API_URL").ok_or(AgentError::Setting {
            name: "STRATO_API_URL",
            problem: "missing: set it to the control plane's URL, e.g. https://api.strato.example".into(),
        })?;
        if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
            return Err(AgentError::Setting {
                name: "STRATO_API_URL",
                problem: format!("{api_url:?} is not an http(s) URL: use e.g. https://api.strato.example"),
            });
        }
        let cluster_id = get("STRATO_CLUSTER_ID").ok_or(AgentError::Setting {
            name: "STRATO_CLUSTER_ID",
            problem: "missing: set it to the cluster's id (the configure step fills it in)".into(),
        })?;
        let namespace = get("STRATO_AGENT_NAMESPACE")
            .or_else(|| {
                std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                    .ok()
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| "strato-system".into());
        Ok(Settings {
            api_url,
            cluster_id,
            secret: get("STRATO_AGENT_SECRET").unwrap_or_else(|| "strato-agent".into()),
            namespace,
            alive_file: get("STRATO_AGENT_ALIVE_FILE")
                .map(PathBuf::from)
                .unwrap_or_else(|| probe::DEFAULT_FILE.into()),
        })
    }
}

/// Waits `total`, writing the probe's file at least every [`probe::TOUCH_EVERY`].
async fn wait(total: Duration, alive: &std::path::Path) {
    let until = Instant::now() + total;
    loop {
        if let Err(e) = probe::touch(alive, SystemTime::now()) {
            tracing::warn!(error = %e, "the liveness file could not be written");
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left.min(probe::TOUCH_EVERY)).await;
    }
}

/// Runs forever: every failure is retried inside the loop, so the pod does not crash-loop.
pub async fn run(settings: Settings, kube: kube::Client) -> Result<(), AgentError> {
    tracing::info!(cluster_id = %settings.cluster_id, api = %settings.api_url, "strato-agent starting");
    let cluster = KubeCluster::start(kube.clone());
    let secret = KubeSecret::new(kube, &settings.namespace, &settings.secret);
    let plane = HttpControlPlane::new(client()?, &settings.api_url);
    let mut agent = Agent::new(
        cluster,
        plane,
        secret,
        Policy::default(),
        Box::new(rand::random::<f64>),
    );
    // Alive from the start: the first turn may wait for the first node list.
    if let Err(e) = probe::touch(&settings.alive_file, SystemTime::now()) {
        tracing::warn!(error = %e, "the liveness file could not be written");
    }
    loop {
        let wait_for = match tokio::time::timeout(TURN_TIMEOUT, agent.turn(Instant::now())).await {
            Ok(turn) => {
                tracing::info!(outcome = ?turn.outcome, wait_secs = turn.wait.as_secs(), missed = agent.missed_reports(), "turn");
                turn.wait
            }
            Err(_) => {
                tracing::warn!(
                    what = "a turn took longer than its limit",
                    step = "turn",
                    fix = "check the API server's and the control plane's latency; the agent retries",
                    "strato-agent could not complete a step"
                );
                crate::backoff::retry_wait(1, rand::random())
            }
        };
        wait(wait_for, &settings.alive_file).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn settings_name_the_missing_or_bad_variable_and_the_fix() {
        let err = Settings::from_env(env(&[("STRATO_CLUSTER_ID", "cl-1")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("STRATO_API_URL") && err.contains("https://"),
            "{err}"
        );
        let err = Settings::from_env(env(&[
            ("STRATO_API_URL", "api.example"),
            ("STRATO_CLUSTER_ID", "c"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(err.contains("not an http(s) URL"), "{err}");
        let err = Settings::from_env(env(&[("STRATO_API_URL", "https://a")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("STRATO_CLUSTER_ID"), "{err}");
        let s = Settings::from_env(env(&[
            ("STRATO_API_URL", "https://a"),
            ("STRATO_CLUSTER_ID", "cl-1"),
            ("STRATO_AGENT_NAMESPACE", "ns"),
        ]))
        .unwrap();
        assert_eq!((s.secret.as_str(), s.namespace.as_str()), ("strato-agent", "ns"));
        assert_eq!(s.alive_file, PathBuf::from(probe::DEFAULT_FILE));
    }
}

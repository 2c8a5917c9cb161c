//! The cluster and the agent's Secret through kube-rs. Nodes come from a watcher-fed reflector store (one
//! list, then a watch that resumes from bookmarks); the rest is read on each turn. Every call stays within
//! agent/deploy/agent.yaml's RBAC: nodes get/list/watch; kube-system deployments, daemonsets and events
//! list; the one Secret get and patch (server-side apply).

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Event, Node, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use strato_agent_wire::ComponentKind;

use crate::AgentError;
use crate::ports::{Cluster, CredentialStore, NodeState, Observation, Stored, WarningEvent, Workload};

/// The field manager of the agent's writes (its Secret's `credential`).
pub const FIELD_MANAGER: &str = "strato-agent";
const SYSTEM: &str = "kube-system";

pub struct KubeCluster {
    client: kube::Client,
    nodes: Store<Node>,
    _watch: tokio::task::JoinHandle<()>,
}

fn kube_err(e: impl std::fmt::Display) -> AgentError {
    AgentError::Kube(e.to_string())
}

impl KubeCluster {
    /// Starts watching nodes; the store fills in the background (and re-lists after a 410).
    pub fn start(client: kube::Client) -> Self {
        let (nodes, writer) = reflector::store::<Node>();
        let api: Api<Node> = Api::all(client.clone());
        let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()).default_backoff());
        let watch = tokio::spawn(async move {
            stream
                .for_each(|event| async move {
                    if let Err(e) = event {
                        tracing::warn!(error = %e, "the node watch failed; it retries with back-off");
                    }
                })
                .await;
        });
        KubeCluster {
            client,
            nodes,
            _watch: watch,
        }
    }

    async fn workloads(&self) -> Result<Vec<Workload>, AgentError> {
        let lp = ListParams::default();
        let deployments = Api::<Deployment>::namespaced(self.client.clone(), SYSTEM)
            .list(&lp)
            .await
            .map_err(kube_err)?;
        let daemonsets = Api::<DaemonSet>::namespaced(self.client.clone(), SYSTEM)
            .list(&lp)
            .await
            .map_err(kube_err)?;
        let count = |n: Option<i32>| n.unwrap_or(0).max(0) as u32;
        let mut out: Vec<Workload> = deployments
            .items
            .iter()
            .map(|d| Workload {
                kind: ComponentKind::Deployment,
                name: d.metadata.name.clone().unwrap_or_default(),
                ready: count(d.status.as_ref().and_then(|s| s.ready_replicas)),
                desired: count(d.spec.as_ref().and_then(|s| s.replicas).or(Some(1))),
            })
            .collect();
        out.extend(daemonsets.items.iter().map(|d| Workload {
            kind: ComponentKind::DaemonSet,
            name: d.metadata.name.clone().unwrap_or_default(),
            ready: count(d.status.as_ref().map(|s| s.number_ready)),
            desired: count(d.status.as_ref().map(|s| s.desired_number_scheduled)),
        }));
        Ok(out)
    }

    async fn warnings(&self) -> Result<Vec<WarningEvent>, AgentError> {
        let lp = ListParams::default().fields("type=Warning");
        let events = Api::<Event>::namespaced(self.client.clone(), SYSTEM)
            .list(&lp)
            .await
            .map_err(kube_err)?;
        Ok(events.items.iter().map(warning).collect())
    }
}

fn warning(e: &Event) -> WarningEvent {
    let o = &e.involved_object;
    let seen = e
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0));
    WarningEvent {
        reason: e.reason.clone().unwrap_or_default(),
        object: format!(
            "{}/{}/{}",
            o.kind.as_deref().unwrap_or_default(),
            o.namespace.as_deref().unwrap_or_default(),
            o.name.as_deref().unwrap_or_default()
        ),
        message: e.message.clone().unwrap_or_default(),
        count: e.count.unwrap_or(1).max(0) as u32,
        last_seen: seen.map(|t| t.to_string()).unwrap_or_default(),
        last_seen_unix: seen.map(|t| t.as_second()).unwrap_or(0),
    }
}

fn node_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

impl Cluster for KubeCluster {
    async fn observe(&self) -> Result<Observation, AgentError> {
        // The first list may still be under way; a turn waits for it a little, then fails (and retries).
        tokio::time::timeout(Duration::from_secs(20), self.nodes.wait_until_ready())
            .await
            .map_err(|_| AgentError::Kube("the node list has not arrived yet".into()))?
            .map_err(kube_err)?;
        let mut nodes: Vec<NodeState> = self
            .nodes
            .state()
            .iter()
            .map(|n| NodeState {
                name: n.metadata.name.clone().unwrap_or_default(),
                ready: node_ready(n),
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let version = self.client.apiserver_version().await.map_err(kube_err)?;
        Ok(Observation {
            nodes,
            kubernetes_version: Some(version.git_version),
            workloads: self.workloads().await?,
            warnings: self.warnings().await?,
        })
    }
}

/// The agent's Secret (`STRATO_AGENT_SECRET` in `STRATO_AGENT_NAMESPACE`).
pub struct KubeSecret {
    api: Api<Secret>,
    namespace: String,
    name: String,
}

impl KubeSecret {
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        KubeSecret {
            api: Api::namespaced(client, namespace),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn err(&self, e: impl std::fmt::Display) -> AgentError {
        AgentError::Secret {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            problem: e.to_string(),
        }
    }
}

impl CredentialStore for KubeSecret {
    async fn load(&self) -> Result<Stored, AgentError> {
        let secret = self.api.get(&self.name).await.map_err(|e| self.err(e))?;
        let data = secret.data.unwrap_or_default();
        let text = |key: &str| {
            data.get(key)
                .and_then(|v| String::from_utf8(v.0.clone()).ok())
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .map(SecretString::from)
        };
        Ok(Stored {
            registration_token: text("registration-token"),
            credential: text("credential"),
        })
    }

    /// Server-side apply of `data.credential` only, as field manager `strato-agent`: the configure step's
    /// re-apply of the Secret (its own manager, its own `registration-token`) leaves it in place. Forced:
    /// the agent is the only writer of that key by design, so a stale owner must not block it.
    async fn save_credential(&self, credential: &SecretString) -> Result<(), AgentError> {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(credential.expose_secret());
        let patch = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "data": {"credential": encoded},
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.api
            .patch(&self.name, &params, &Patch::Apply(&patch))
            .await
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

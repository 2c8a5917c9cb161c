//! The tenant clusters of agent templates, emulated for as long as each cluster lives: moto's EKS endpoint
//! answers nothing, so when a runner task starts for a cluster whose template has the runner install the
//! cluster agent (`[agent] install = "runner"`), devstack gives that cluster its own [`EmulatedCluster`]
//! (kubefake behind TLS) and points that task's runner at it (`STRATO_KUBE_ENDPOINT`/`_CA_PEM`, per task).
//! Once the runner has applied the agent's Deployment, devstack starts the real `strato-agent` binary as the
//! kubelet would. The emulated cluster and its agent outlive the runner: a later runner of the same cluster
//! (an update, a delete) gets the same one, and both go once the cluster is DELETED. Tests (and operators)
//! stop and restart an agent with [`ClusterAgents::stop_agent`] and [`ClusterAgents::start_agent`].
//!
//! Without the agent binary (not built) the cluster is still emulated, so the runner's install step works,
//! and a warning says the cluster will wait in CONFIGURING until its agent deadline fails it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use strato_aws::store::Store;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{ClusterSpec, ClusterState, OperationKind};
use strato_domain::template::{AgentInstall, Template};
use tokio::sync::{Mutex, watch};

use crate::DevstackError;
use crate::kube::{AgentProcess, EmulatedCluster};

/// How long the kubelet stand-in waits for the runner to apply the agent's Deployment (a create's apply
/// comes first, and can be slow on a busy machine).
const DEPLOYMENT_WAIT: Duration = Duration::from_secs(1800);
/// How often clusters are checked for DELETED.
const REAP_EVERY: Duration = Duration::from_secs(2);

/// Extra environment for one runner task, decided when the task starts (the Fargate emulation asks).
pub trait TaskEnv: Send + Sync {
    fn task_env<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Vec<(String, String)>>;
}

/// The Ready nodes devstack's cluster of `spec` starts with, if its template has the runner install the
/// agent: the agent's `ready_nodes_variable` as the spec sets it, else its default, else 1.
pub fn emulated_nodes(template: &Template, spec: &ClusterSpec) -> Option<u32> {
    let agent = template.manifest.agent.as_ref()?;
    if agent.install != AgentInstall::Runner {
        return None;
    }
    let var = &agent.ready_nodes_variable;
    let value = spec.variables.get(var).or_else(|| {
        template
            .manifest
            .variables
            .get(var)
            .and_then(|d| d.default.as_ref())
    });
    Some(
        value
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1),
    )
}

/// One emulated cluster and its agent process (when running).
pub struct ClusterEmulation {
    pub tenant: TenantId,
    pub cluster: EmulatedCluster,
    agent: Mutex<Option<AgentProcess>>,
    /// The agent's log file (stdout and stderr of every start, appended).
    log: std::sync::Mutex<Option<PathBuf>>,
}

impl ClusterEmulation {
    /// Everything the agent logged so far, across restarts.
    pub fn agent_log(&self) -> String {
        let path = self.log.lock().unwrap_or_else(|p| p.into_inner()).clone();
        path.and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default()
    }

    /// The credential the agent stored in its Secret (a test posts it after DELETE, to see it refused).
    pub fn agent_credential(&self) -> Option<String> {
        use base64::Engine as _;
        let secret = self
            .cluster
            .fake
            .get("v1", "Secret", Some("strato-system"), "strato-agent")?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(secret["data"]["credential"].as_str()?)
            .ok()?;
        String::from_utf8(bytes).ok()
    }

    /// True while the agent process runs.
    pub async fn agent_running(&self) -> bool {
        match self.agent.lock().await.as_mut() {
            Some(a) => matches!(a.child.try_wait(), Ok(None)),
            None => false,
        }
    }

    async fn kill_agent(&self) -> bool {
        let Some(mut a) = self.agent.lock().await.take() else {
            return false;
        };
        // SIGKILL, as a node failure or an OOM kill would end it: nothing gets to say goodbye.
        let _ = a.child.kill().await;
        true
    }

    async fn run_agent(&self, binary: &std::path::Path, wait: Duration) -> Result<(), DevstackError> {
        let process = self.cluster.start_agent(binary, wait).await?;
        *self.log.lock().unwrap_or_else(|p| p.into_inner()) = Some(process.log.clone());
        if let Some(mut old) = self.agent.lock().await.replace(process) {
            let _ = old.child.kill().await;
        }
        Ok(())
    }
}

/// Devstack's clusters of agent templates, by cluster id.
pub struct ClusterAgents {
    store: Store,
    /// The `strato-agent` binary; `None` when it is not built.
    binary: Option<PathBuf>,
    clusters: Mutex<HashMap<String, Arc<ClusterEmulation>>>,
}

impl ClusterAgents {
    pub fn new(store: Store, binary: Option<PathBuf>) -> Arc<Self> {
        if binary.is_none() {
            tracing::warn!(
                "devstack: the strato-agent binary is not built (`cargo build -p strato-agent`): clusters of agent \
                 templates get an emulated Kubernetes API, but no agent reports from them, so they stay \
                 CONFIGURING until their agent deadline fails them"
            );
        }
        Arc::new(Self {
            store,
            binary,
            clusters: Mutex::new(HashMap::new()),
        })
    }

    /// The emulated cluster of `cluster_id`, once a runner of it has started.
    pub async fn emulation(&self, cluster_id: &str) -> Option<Arc<ClusterEmulation>> {
        self.clusters.lock().await.get(cluster_id).cloned()
    }

    /// Kills the agent of `cluster_id` (SIGKILL); its emulated cluster stays.
    pub async fn stop_agent(&self, cluster_id: &str) -> Result<(), DevstackError> {
        let e = self.require(cluster_id).await?;
        if !e.kill_agent().await {
            return Err(DevstackError::step(
                "stopping an agent",
                format!("the agent of {cluster_id} is not running"),
            ));
        }
        tracing::warn!(cluster_id, "devstack: cluster agent killed (SIGKILL) on request");
        Ok(())
    }

    /// Starts the agent of `cluster_id` again (its Deployment is applied already; its credential is in
    /// its Secret, so it goes on heartbeating).
    pub async fn start_agent(&self, cluster_id: &str) -> Result<(), DevstackError> {
        let e = self.require(cluster_id).await?;
        let binary = self.binary.as_deref().ok_or_else(|| {
            DevstackError::step(
                "starting an agent",
                "the strato-agent binary is not built; run `cargo build -p strato-agent`",
            )
        })?;
        e.run_agent(binary, Duration::from_secs(5)).await?;
        tracing::info!(cluster_id, "devstack: cluster agent started on request");
        Ok(())
    }

    async fn require(&self, cluster_id: &str) -> Result<Arc<ClusterEmulation>, DevstackError> {
        self.emulation(cluster_id).await.ok_or_else(|| {
            DevstackError::step(
                "cluster agent",
                format!("{cluster_id} has no emulated cluster (its template does not install the agent, or no runner of it started)"),
            )
        })
    }

    /// The runner environment of `operation_id`'s task: the emulated cluster's endpoint and CA when the
    /// operation's cluster is one of an agent template (started on its first runner), else nothing.
    async fn env_for(&self, operation_id: &str) -> Result<Vec<(String, String)>, DevstackError> {
        let Ok(op_id) = operation_id.parse::<OperationId>() else {
            return Ok(Vec::new());
        };
        let Some(op) = self.store.get_operation(&op_id).await? else {
            return Ok(Vec::new());
        };
        let key = op.cluster_id.to_string();
        let mut clusters = self.clusters.lock().await;
        if let Some(e) = clusters.get(&key) {
            return Ok(e.cluster.runner_env());
        }
        // Only a create or an update of a cluster brings its API up; an estimate has no cluster.
        if !matches!(op.kind, OperationKind::Create | OperationKind::Update) {
            return Ok(Vec::new());
        }
        let spec = match op.spec {
            Some(s) => s,
            None => match self.store.get_cluster(&op.tenant_id, &op.cluster_id).await? {
                Some(c) => c.spec,
                None => return Ok(Vec::new()),
            },
        };
        let Some(stored) = self
            .store
            .get_template(&spec.template.name, &spec.template.version)
            .await?
        else {
            return Ok(Vec::new());
        };
        let Some(nodes) = emulated_nodes(&stored.template, &spec) else {
            return Ok(Vec::new());
        };
        let cluster = EmulatedCluster::start(&spec.region, nodes).await?;
        tracing::info!(cluster_id = %key, endpoint = %cluster.endpoint, nodes, "devstack: emulated cluster for the agent");
        let env = cluster.runner_env();
        let e = Arc::new(ClusterEmulation {
            tenant: op.tenant_id.clone(),
            cluster,
            agent: Mutex::new(None),
            log: std::sync::Mutex::new(None),
        });
        clusters.insert(key.clone(), e.clone());
        // The kubelet: the agent's pod starts once the runner has applied its Deployment.
        if let Some(binary) = self.binary.clone() {
            tokio::spawn(async move {
                match e.run_agent(&binary, DEPLOYMENT_WAIT).await {
                    Ok(()) => tracing::info!(cluster_id = %key, "devstack: cluster agent started"),
                    Err(err) => {
                        tracing::warn!(cluster_id = %key, error = %err, "devstack: cluster agent not started")
                    }
                }
            });
        }
        Ok(env)
    }

    /// Drops the emulated cluster (and kills the agent) of every cluster that is DELETED or gone.
    async fn reap(&self) {
        let entries: Vec<(String, Arc<ClusterEmulation>)> = self
            .clusters
            .lock()
            .await
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, e) in entries {
            let Ok(id) = key.parse::<ClusterId>() else {
                continue;
            };
            let gone = match self.store.get_cluster(&e.tenant, &id).await {
                Ok(Some(c)) => c.state() == ClusterState::Deleted,
                Ok(None) => true,
                Err(_) => false,
            };
            if gone {
                e.kill_agent().await;
                self.clusters.lock().await.remove(&key);
                tracing::info!(cluster_id = %key, "devstack: cluster deleted; its agent and emulated cluster are gone");
            }
        }
    }

    /// Reaps deleted clusters until `stop`, then kills every agent.
    pub fn spawn_reaper(self: &Arc<Self>, mut stop: watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(REAP_EVERY) => {}
                    _ = stop.changed() => {}
                }
                if *stop.borrow() {
                    break;
                }
                me.reap().await;
            }
            let all: Vec<_> = me.clusters.lock().await.drain().map(|(_, e)| e).collect();
            for e in all {
                e.kill_agent().await;
            }
        })
    }
}

impl TaskEnv for ClusterAgents {
    fn task_env<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Vec<(String, String)>> {
        Box::pin(async move {
            self.env_for(operation_id).await.unwrap_or_else(|e| {
                tracing::warn!(operation_id, error = %e, "devstack: no emulated cluster for this runner");
                Vec::new()
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
name = "t"
version = "1.0.0"
providers = ["aws"]
stages = [{ name = "main", modules = ["m"] }]
[variables.node_count]
type = "integer"
default = 3
[variables.agent_token]
type = "string"
managed = true
sensitive = true
[variables.control_plane_url]
type = "string"
managed = true
"#;

    fn spec(vars: serde_json::Value) -> ClusterSpec {
        serde_json::from_value(serde_json::json!({
            "name": "demo", "template": {"name": "t", "version": "1.0.0"},
            "provider": "aws", "region": "us-east-1", "variables": vars,
        }))
        .unwrap()
    }

    #[test]
    fn only_a_runner_installed_agent_gets_an_emulated_cluster_with_the_requested_nodes() {
        let runner = Template::from_toml(&format!(
            "{BASE}[agent]\ninstall = \"runner\"\nendpoint_output = \"e\"\nca_output = \"c\"\nname_output = \"n\"\n"
        ))
        .unwrap();
        assert_eq!(
            emulated_nodes(&runner, &spec(serde_json::json!({"node_count": 5}))),
            Some(5)
        );
        assert_eq!(
            emulated_nodes(&runner, &spec(serde_json::json!({}))),
            Some(3),
            "the default"
        );
        let by_template = Template::from_toml(&format!("{BASE}[agent]\ndeadline_secs = 60\n")).unwrap();
        assert_eq!(emulated_nodes(&by_template, &spec(serde_json::json!({}))), None);
        let none = Template::from_toml(BASE).unwrap();
        assert_eq!(emulated_nodes(&none, &spec(serde_json::json!({}))), None);
    }
}

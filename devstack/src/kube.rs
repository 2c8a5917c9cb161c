//! An emulated tenant Kubernetes cluster, for the cluster agent end to end (emulators only): moto's EKS
//! endpoint answers nothing, so strato-kubefake stands in for the cluster's API.
//!
//! - The runner reaches it over TLS (it only speaks `https://` to a cluster), at the endpoint and CA that
//!   [`EmulatedCluster::runner_env`] gives it (`STRATO_KUBE_ENDPOINT`, `STRATO_KUBE_CA_PEM`, which replace
//!   the template's outputs). The certificate is the runner's test material
//!   (`runner/tests/fixtures/kube-tls`, a CA and a server certificate for 127.0.0.1; its key protects
//!   nothing).
//! - The runner's EKS token is accepted as the cluster's creator (a superuser) when it is a presigned STS
//!   `GetCallerIdentity` for the region with the cluster name signed ([`eks_shaped`]). Its signature is not
//!   recomputed: the runner signs with the session moto's STS made up when the runner assumed its role, whose
//!   secret devstack never sees (the runner's own tests check the signature).
//! - The agent's service-account token maps to `system:serviceaccount:strato-system:strato-agent`, and
//!   `agent/deploy/agent.yaml`'s RBAC is enforced for it: a request outside it is a 403.
//! - [`EmulatedCluster::start_agent`] plays the kubelet: once the runner has applied the Deployment
//!   `strato-system/strato-agent`, it runs the real `strato-agent` binary with the Deployment's environment
//!   and a kubeconfig in place of the in-cluster service account.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value;
use strato_kubefake::{KubeFake, Rbac};

use crate::DevstackError;

/// The manifests the runner applies: their RBAC is what the fake enforces for the agent.
const AGENT_YAML: &str = include_str!("../../agent/deploy/agent.yaml");
const CA_PEM: &str = include_str!("../../runner/tests/fixtures/kube-tls/ca.pem");
const SERVER_PEM: &[u8] = include_bytes!("../../runner/tests/fixtures/kube-tls/server.pem");
const SERVER_KEY: &[u8] = include_bytes!("../../runner/tests/fixtures/kube-tls/server.key");

/// The agent's service account, as its token is authenticated.
pub const AGENT_IDENTITY: &str = "system:serviceaccount:strato-system:strato-agent";
/// Who an EKS token authenticates as: the cluster's creator, an administrator.
pub const CREATOR_IDENTITY: &str = "eks-cluster-creator";
const NAMESPACE: &str = "strato-system";
const NAME: &str = "strato-agent";

/// A running emulated cluster: the fake, its TLS front, and the agent's files.
pub struct EmulatedCluster {
    pub fake: KubeFake,
    /// `https://127.0.0.1:<port>`: the TLS front.
    pub endpoint: String,
    dir: tempfile::TempDir,
    front: tokio::task::JoinHandle<()>,
}

impl Drop for EmulatedCluster {
    fn drop(&mut self) {
        self.front.abort();
    }
}

/// The real agent, running as a process (killed when dropped).
pub struct AgentProcess {
    pub child: tokio::process::Child,
    /// Its JSON log lines (stdout and stderr).
    pub log: PathBuf,
}

impl AgentProcess {
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// True if `token` is shaped as EKS's authenticator needs: `k8s-aws-v1.` + base64url of a presigned STS
/// `GetCallerIdentity` URL for `region` with the cluster-name header among the signed ones.
pub fn eks_shaped(token: &str, region: &str) -> bool {
    let Some(encoded) = token.strip_prefix("k8s-aws-v1.") else {
        return false;
    };
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded) else {
        return false;
    };
    let Ok(url) = url::Url::parse(&String::from_utf8_lossy(&bytes)) else {
        return false;
    };
    let q = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    url.scheme() == "https"
        && url.host_str() == Some(format!("sts.{region}.amazonaws.com").as_str())
        && q("Action") == "GetCallerIdentity"
        && q("X-Amz-SignedHeaders").split(';').any(|h| h == "x-k8s-aws-id")
        && !q("X-Amz-Signature").is_empty()
}

impl EmulatedCluster {
    /// A cluster in `region` with `nodes` Ready nodes and healthy core components (CoreDNS, kube-proxy,
    /// the VPC CNI), as a new EKS cluster has them.
    pub async fn start(region: &str, nodes: u32) -> Result<Self, DevstackError> {
        let step = |e: &dyn std::fmt::Display| DevstackError::step("emulated cluster", e);
        let rbac = Rbac::from_manifests(AGENT_YAML)
            .map_err(|e| step(&e))?
            .superuser(CREATOR_IDENTITY);
        let agent_token = uuid::Uuid::new_v4().simple().to_string();
        let (region, sa) = (region.to_owned(), agent_token.clone());
        let fake = KubeFake::builder()
            .validator(move |t| {
                if t == sa {
                    Some(AGENT_IDENTITY.to_owned())
                } else {
                    eks_shaped(t, &region).then(|| CREATOR_IDENTITY.to_owned())
                }
            })
            .rbac(rbac)
            .bookmark_interval(Duration::from_secs(5))
            .start()
            .await
            .map_err(|e| step(&e))?;
        fake.put_namespace("kube-system");
        for n in 0..nodes {
            fake.put_node(&format!("node-{n}"), true);
        }
        fake.put_deployment("kube-system", "coredns", 2, 2);
        fake.put_daemonset("kube-system", "kube-proxy", nodes, nodes);
        fake.put_daemonset("kube-system", "aws-node", nodes, nodes);
        let (endpoint, front) = strato_kubefake::tls_front(fake.url(), SERVER_PEM, SERVER_KEY)
            .await
            .map_err(|e| step(&e))?;
        let dir = tempfile::tempdir().map_err(DevstackError::io("emulated cluster dir"))?;
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: emulated\n  cluster:\n    server: {}\n\
             contexts:\n- name: agent\n  context:\n    cluster: emulated\n    user: agent\n    namespace: {NAMESPACE}\n\
             current-context: agent\nusers:\n- name: agent\n  user:\n    token: {agent_token}\n",
            fake.url()
        );
        std::fs::write(dir.path().join("kubeconfig"), kubeconfig).map_err(DevstackError::io("kubeconfig"))?;
        Ok(Self {
            fake,
            endpoint,
            dir,
            front,
        })
    }

    /// The runner's settings that point its agent install here.
    pub fn runner_env(&self) -> Vec<(String, String)> {
        vec![
            ("STRATO_KUBE_ENDPOINT".into(), self.endpoint.clone()),
            ("STRATO_KUBE_CA_PEM".into(), CA_PEM.into()),
        ]
    }

    /// The agent's Deployment, once the runner has applied it.
    pub fn agent_deployment(&self) -> Option<Value> {
        self.fake.get("apps/v1", "Deployment", Some(NAMESPACE), NAME)
    }

    /// Waits up to `timeout` for the runner to apply the agent's Deployment, then runs `binary` (the real
    /// `strato-agent`) with the environment its container declares, as a kubelet would start its pod.
    pub async fn start_agent(&self, binary: &Path, timeout: Duration) -> Result<AgentProcess, DevstackError> {
        let started = Instant::now();
        let deployment = loop {
            if let Some(d) = self.agent_deployment() {
                break d;
            }
            if started.elapsed() > timeout {
                return Err(DevstackError::step(
                    "start the agent",
                    format!("the runner did not apply the Deployment {NAMESPACE}/{NAME} within {timeout:?}"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let env: Vec<(String, String)> = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| {
                // The kubelet resolves the pod's own namespace (the only field reference the manifest uses).
                let value = match (
                    e["value"].as_str(),
                    e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
                ) {
                    (Some(v), _) => v,
                    (None, Some("metadata.namespace")) => NAMESPACE,
                    _ => return None,
                };
                Some((e["name"].as_str()?.to_owned(), value.to_owned()))
            })
            .collect();
        let log = self.dir.path().join("agent.log");
        // Appended: a restarted agent's log follows the one before it.
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(DevstackError::io("agent log"))?;
        let err = out.try_clone().map_err(DevstackError::io("agent log"))?;
        let child = tokio::process::Command::new(binary)
            .arg("run")
            .env_clear()
            .envs(env)
            .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
            .env("STRATO_AGENT_ALIVE_FILE", self.dir.path().join("alive"))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(DevstackError::io(format!("starting {}", binary.display())))?;
        Ok(AgentProcess { child, log })
    }
}

/// The `strato-agent` binary of this cargo target directory, built first if it is missing (`cargo build -p
/// strato-agent`, as devstack's binary builds the runner).
pub fn agent_binary() -> Result<PathBuf, DevstackError> {
    let path = crate::paths::sibling_binary("strato-agent");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-q", "-p", "strato-agent", "--bin", "strato-agent"])
            .current_dir(crate::paths::workspace_root())
            .status()
            .map_err(DevstackError::io("running cargo to build strato-agent"))?;
        if !status.success() || !path.exists() {
            return Err(DevstackError::step(
                "build strato-agent",
                format!(
                    "`cargo build -p strato-agent` failed ({status}); {} is missing",
                    path.display()
                ),
            ));
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_presigned_get_caller_identity_for_the_region_passes_for_an_eks_token() {
        let keys = strato_aws::eks_token::SigningKeys {
            access_key_id: "AKIDEXAMPLE",
            secret_access_key: "secret",
            session_token: None,
        };
        let token =
            strato_aws::eks_token::mint(&keys, "us-east-1", "demo", std::time::SystemTime::now()).unwrap();
        assert!(eks_shaped(&token, "us-east-1"));
        assert!(!eks_shaped(&token, "eu-west-1"), "another region's STS");
        assert!(!eks_shaped("k8s-aws-v1.bm90IGEgdXJs", "us-east-1"));
        assert!(!eks_shaped("a-service-account-token", "us-east-1"));
    }
}

//! strato-kubefake: an in-memory Kubernetes API server that speaks the real wire protocol for the calls
//! strato's agent and runner make (discovery, list, get, watch with bookmarks and 410, server-side apply
//! with field managers and conflicts, JSON merge patch, bearer authentication, RBAC), so kube-rs and a plain
//! HTTP client work against it unchanged. See README.md for what it does not reproduce.

mod fields;
mod rbac;
mod resources;
mod server;
mod store;
mod tls;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

pub use rbac::{Attributes, PolicyRule, Rbac};
pub use resources::{RESOURCES, ResourceType};
pub use tls::tls_front;

#[derive(Debug, thiserror::Error)]
pub enum KubeFakeError {
    #[error("the fake API server could not listen on 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
    #[error("the manifest does not read as YAML documents: {0}")]
    Manifest(String),
    #[error("the fake does not serve {api_version} {kind}")]
    UnknownKind { api_version: String, kind: String },
}

/// Who a bearer token is (`None`: the token is refused with 401).
pub type TokenValidator = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// One request the fake answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    /// The raw query string.
    pub query: String,
    /// Who the token said; none when it was missing or refused.
    pub identity: Option<String>,
    pub status: u16,
}

pub(crate) struct Shared {
    store: Mutex<store::Store>,
    log: Mutex<Vec<RequestRecord>>,
    validator: TokenValidator,
    rbac: Option<Rbac>,
    bookmark_interval: Duration,
    git_version: String,
    minor: String,
    /// Bumped to end every open watch (as an API server restart or a watch timeout does).
    watch_epoch: tokio::sync::watch::Sender<u64>,
}

/// How to start a fake.
pub struct Builder {
    tokens: BTreeMap<String, String>,
    validator: Option<TokenValidator>,
    rbac: Option<Rbac>,
    bookmark_interval: Duration,
    git_version: String,
}

impl Builder {
    /// A token the fake accepts, and who it is (e.g. `system:serviceaccount:strato-system:strato-agent`).
    pub fn token(mut self, token: &str, identity: &str) -> Self {
        self.tokens.insert(token.to_string(), identity.to_string());
        self
    }

    /// Decides every token instead of the fixed [`Builder::token`] list.
    pub fn validator(mut self, f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.validator = Some(Arc::new(f));
        self
    }

    /// Enforces these rules: a request they do not allow is answered 403.
    pub fn rbac(mut self, rbac: Rbac) -> Self {
        self.rbac = Some(rbac);
        self
    }

    /// How often a watch that allows bookmarks gets one (the real server: about a minute).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }

    /// The `gitVersion` `/version` answers, e.g. `v1.33.1`.
    pub fn git_version(mut self, v: &str) -> Self {
        self.git_version = v.to_string();
        self
    }

    /// Listens on 127.0.0.1 on a free port and serves until the handle is dropped.
    pub async fn start(self) -> Result<KubeFake, KubeFakeError> {
        let tokens = self.tokens;
        let validator = self
            .validator
            .unwrap_or_else(|| Arc::new(move |t: &str| tokens.get(t).cloned()));
        let minor = self.git_version.split('.').nth(1).unwrap_or("33").to_string();
        let shared = Arc::new(Shared {
            store: Mutex::new(store::Store::new()),
            log: Mutex::new(Vec::new()),
            validator,
            rbac: self.rbac,
            bookmark_interval: self.bookmark_interval,
            git_version: self.git_version,
            minor,
            watch_epoch: tokio::sync::watch::channel(0).0,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(KubeFakeError::Bind)?;
        let addr: SocketAddr = listener.local_addr().map_err(KubeFakeError::Bind)?;
        let app = axum::Router::new()
            .fallback(server::handle)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            // The server ends with the runtime or when the handle aborts it.
            let _ = axum::serve(listener, app).await;
        });
        Ok(KubeFake {
            url: format!("http://{addr}"),
            shared,
            task,
        })
    }
}

/// A running fake and the test's handle on its objects.
pub struct KubeFake {
    url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KubeFake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn resource_of(api_version: &str, kind: &str) -> Result<ResourceType, KubeFakeError> {
    resources::by_kind(api_version, kind).ok_or_else(|| KubeFakeError::UnknownKind {
        api_version: api_version.into(),
        kind: kind.into(),
    })
}

fn now() -> String {
    let t = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("0 is a valid nanosecond");
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats")
}

impl KubeFake {
    pub fn builder() -> Builder {
        Builder {
            tokens: BTreeMap::new(),
            validator: None,
            rbac: None,
            bookmark_interval: Duration::from_secs(60),
            git_version: "v1.33.1".to_string(),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn store(&self) -> std::sync::MutexGuard<'_, store::Store> {
        self.shared.store.lock().expect("store lock")
    }

    /// Creates or replaces an object (by its `apiVersion`, `kind`, `metadata.name` and `.namespace`) as the
    /// cluster's own controllers would: no manager, status included. Returns it as stored.
    pub fn put(&self, object: Value) -> Result<Value, KubeFakeError> {
        let rt = resource_of(
            object["apiVersion"].as_str().unwrap_or_default(),
            object["kind"].as_str().unwrap_or_default(),
        )?;
        Ok(self.store().put(&rt, object))
    }

    pub fn get(&self, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let rt = resource_of(api_version, kind).ok()?;
        self.store().get(&rt, namespace, name)
    }

    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let rt = resource_of(api_version, kind).ok()?;
        self.store().delete(&rt, namespace, name)
    }

    /// Each manager of an object and the fields it owns (`.data.credential`).
    pub fn managers(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> BTreeMap<String, Vec<String>> {
        let Ok(rt) = resource_of(api_version, kind) else {
            return BTreeMap::new();
        };
        self.store()
            .managers(&rt, namespace, name)
            .into_iter()
            .map(|(m, owned)| (m, owned.paths.iter().map(|p| fields::display(p)).collect()))
            .collect()
    }

    /// A node with a `Ready` condition (`True` or `False`); replaces one of the same name.
    pub fn put_node(&self, name: &str, ready: bool) {
        let node = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                "reason": if ready { "KubeletReady" } else { "KubeletNotReady" }, "lastTransitionTime": now()}],
                "nodeInfo": {"kubeletVersion": "v1.33.1"}}});
        self.store()
            .put(&resources::by_kind("v1", "Node").expect("nodes are served"), node);
    }

    pub fn put_namespace(&self, name: &str) {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        self.store().put(
            &resources::by_kind("v1", "Namespace").expect("namespaces are served"),
            ns,
        );
    }

    /// A Deployment with `ready` of `desired` replicas ready.
    pub fn put_deployment(&self, namespace: &str, name: &str, ready: u32, desired: u32) {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": desired, "selector": {"matchLabels": {"app": name}}, "template": {}},
            "status": {"replicas": desired, "readyReplicas": ready, "availableReplicas": ready}});
        self.store().put(
            &resources::by_kind("apps/v1", "Deployment").expect("deployments are served"),
            d,
        );
    }

    /// A DaemonSet with `ready` of `desired` pods ready.
    pub fn put_daemonset(&self, namespace: &str, name: &str, ready: u32, desired: u32) {
        let d = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {}},
            "status": {"desiredNumberScheduled": desired, "numberReady": ready, "currentNumberScheduled": desired,
                "numberMisscheduled": 0}});
        self.store().put(
            &resources::by_kind("apps/v1", "DaemonSet").expect("daemonsets are served"),
            d,
        );
    }

    /// A `Warning` event about `kind/name` in `namespace`, last seen now.
    pub fn add_warning(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
        reason: &str,
        message: &str,
        count: u32,
    ) {
        let rv = self.store().resource_version();
        let e = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{name}.{rv:x}"), "namespace": namespace},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
            "reason": reason, "message": message, "type": "Warning", "count": count,
            "firstTimestamp": now(), "lastTimestamp": now(), "source": {"component": "kubefake"}});
        self.store()
            .put(&resources::by_kind("v1", "Event").expect("events are served"), e);
    }

    /// Forgets the watch history: a watch resuming from an older resource version gets 410 Expired.
    pub fn compact(&self) {
        self.store().compact();
    }

    /// Ends every open watch stream cleanly, as an API server restart or a watch's timeout does: clients
    /// watch again from the last version they saw (and get 410 if it was compacted meanwhile).
    pub fn close_watches(&self) {
        self.shared.watch_epoch.send_modify(|e| *e += 1);
    }

    /// Makes every client's resource version too old and ends the open watches, at once: each watcher's next
    /// watch gets 410 Expired and must list again (as after a long disconnection and etcd's compaction).
    pub fn expire_watches(&self) {
        let mut store = self.store();
        store.expire();
        // Under the store's lock: no bookmark can announce the new version before the watches end.
        self.shared.watch_epoch.send_modify(|e| *e += 1);
    }

    /// The requests answered so far, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.log.lock().expect("log lock").clone()
    }
}

#[cfg(test)]
mod tests;

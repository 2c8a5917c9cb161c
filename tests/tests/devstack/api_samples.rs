//! The `events/api/` samples work against what devstack publishes: the real `strato-api` binary behind
//! devstack's Lambda Runtime API emulator (what `cargo lambda invoke` talks to), on a store holding the
//! template catalog exactly as devstack publishes it. Every sample is answered 2xx or 3xx, in a walk through
//! a cluster's life; samples naming a cluster or operation get the id of the one this walk made (their ids are
//! placeholders, as functions/api/README.md says). The agent samples are the exception: their bearer is the per-cluster
//! token only the runner hands to the cluster's agent, so a placeholder is answered 401
//! (functions/api/tests/moto/agent.rs covers them with real tokens).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use strato_aws::store::Store;
use strato_devstack::runtime_api::{LambdaProcess, sample_events};
use strato_devstack::stack::{publish_catalog, sibling_binary};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{ClusterState, OperationStatus};
use strato_testbed::TestEnv;

const TIMEOUT: Duration = Duration::from_secs(60);
/// The tenant of the samples' JWT claims.
const TENANT: &str = "acme";
/// Samples whose bearer is a cluster agent's token (see the module docs).
const AGENT_SAMPLES: [&str; 3] = ["agent-register", "agent-heartbeat", "agent-credential"];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The api binary; `cargo test --workspace` builds it, a run of this package alone builds it here.
fn binary(package: &str) -> PathBuf {
    let path = sibling_binary(package);
    if !path.is_file() {
        let status = Command::new(option_env!("CARGO").unwrap_or("cargo"))
            .args(["build", "--quiet", "-p", package, "--bin", package])
            .current_dir(workspace())
            .status()
            .expect("running cargo build");
        assert!(status.success(), "cargo build -p {package} failed");
    }
    path
}

/// A sample with its `{id}` path parameter replaced by `id` (the samples' ids are placeholders).
fn retarget(mut event: Value, id: &str) -> Value {
    let placeholder = event["pathParameters"]["id"].as_str().map(str::to_owned);
    if let Some(p) = placeholder {
        for ptr in ["/rawPath", "/requestContext/http/path"] {
            if let Some(v) = event.pointer_mut(ptr)
                && let Some(s) = v.as_str()
            {
                *v = Value::String(s.replace(&p, id));
            }
        }
        event["pathParameters"]["id"] = Value::String(id.to_owned());
    }
    event
}

/// The api function and the store under it.
struct Walk {
    f: LambdaProcess,
    store: Store,
    samples: BTreeMap<String, Value>,
    answered: BTreeMap<String, u64>,
}

impl Walk {
    /// Invokes a sample (retargeted at `id` when given) and returns its status and parsed body.
    async fn send(&mut self, name: &str, id: Option<&str>) -> (u64, Value) {
        let mut event = self
            .samples
            .get(name)
            .unwrap_or_else(|| panic!("no events/api/{name}.json"))
            .clone();
        if let Some(id) = id {
            event = retarget(event, id);
        }
        let r = self
            .f
            .invoke(event, TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let status = r["statusCode"].as_u64().unwrap_or_else(|| panic!("{name}: {r}"));
        let body = r["body"]
            .as_str()
            .and_then(|b| serde_json::from_str(b).ok())
            .unwrap_or(Value::Null);
        self.answered.insert(name.to_owned(), status);
        (status, body)
    }

    /// Sends a sample that must succeed.
    async fn ok(&mut self, name: &str, id: Option<&str>) -> Value {
        let (status, body) = self.send(name, id).await;
        assert!(
            (200..400).contains(&status),
            "events/api/{name}.json answered {status} against devstack's catalog: {body}"
        );
        body
    }

    /// Where the runner and the status function would leave things: `op` succeeded, the cluster ACTIVE.
    async fn finish(&self, cluster: &str, op: &str) {
        let oid: OperationId = op.parse().unwrap();
        let mut o = self.store.get_operation(&oid).await.unwrap().unwrap();
        let was_terminal = o.status.is_terminal();
        o.status = OperationStatus::Succeeded;
        self.store.save_operation(&mut o, was_terminal).await.unwrap();
        let (tenant, cid): (TenantId, ClusterId) = (TENANT.parse().unwrap(), cluster.parse().unwrap());
        let mut c = self.store.get_cluster(&tenant, &cid).await.unwrap().unwrap();
        c = c.in_state(ClusterState::Active);
        self.store.save_cluster(&mut c).await.unwrap();
    }
}

fn op_id(body: &Value) -> String {
    body["operation"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no operation id in {body}"))
        .to_owned()
}

/// A walk through a cluster's life, one sample per step; long because it is that list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_sample_is_answered_2xx_against_the_catalog_devstack_publishes() {
    let bin = tokio::task::spawn_blocking(|| binary("strato-api"))
        .await
        .unwrap();
    let env = TestEnv::new().await;
    let published = publish_catalog(&env.aws, &env.names, Some(&workspace().join("templates")), &[]).await;
    assert!(published.failed.is_empty(), "{:?}", published.failed);
    assert!(
        published.published.iter().any(|(n, _)| n == "aws-eks-basic"),
        "{:?}",
        published.published
    );
    let api_env: Vec<(String, String)> = vec![
        ("AWS_ENDPOINT_URL".into(), env.endpoint.clone()),
        ("AWS_REGION".into(), env.region.clone()),
        ("AWS_ACCESS_KEY_ID".into(), "testing".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "testing".into()),
        ("STRATO_RESOURCE_PREFIX".into(), env.names.prefix().to_owned()),
        (
            "STRATO_JWT_SECRET".into(),
            "api-samples-test-secret-0123456789abcdef".into(),
        ),
        (
            "STRATO_AGENT_TOKEN_SECRET".into(),
            "api-samples-agent-secret".into(),
        ),
    ];
    let f = LambdaProcess::spawn(&bin, "strato-api", &api_env).await.unwrap();
    let samples: BTreeMap<String, Value> = sample_events(&workspace().join("events"), "api")
        .unwrap()
        .into_iter()
        .collect();
    let mut w = Walk {
        f,
        store: Store::new(env.aws.dynamodb.clone(), &env.names),
        samples,
        answered: BTreeMap::new(),
    };

    // Reads and settings that need nothing before them.
    for name in [
        "healthz",
        "list-templates",
        "get-template",
        "create-estimate",
        "get-target-access",
        "put-webhook",
        "get-webhook",
        "delete-webhook",
        "create-ws-ticket",
        "list-clusters",
    ] {
        w.ok(name, None).await;
    }
    let templates = w.ok("list-templates", None).await;
    assert!(templates.to_string().contains("aws-eks-basic"), "{templates}");

    // A cluster from the catalog, its reads, then cancel (queued: the cluster becomes FAILED) and retry.
    let created = w.ok("create-cluster", None).await;
    let cluster = created["cluster"]["id"].as_str().unwrap().to_owned();
    let create = op_id(&created);
    for name in ["get-cluster", "list-cluster-operations"] {
        w.ok(name, Some(&cluster)).await;
    }
    w.ok("get-operation", Some(&create)).await;
    let timeline = w.ok("get-operation-timeline", Some(&create)).await;
    assert_eq!(timeline["entries"][0]["event"], "queued", "{timeline}");
    w.ok("cancel-operation", Some(&create)).await;
    let retry = op_id(&w.ok("retry-cluster", Some(&cluster)).await);
    w.finish(&cluster, &retry).await;

    // ACTIVE: drift settings, a drift check, an update, then the delete.
    w.ok("update-cluster-drift", Some(&cluster)).await;
    let drift = op_id(&w.ok("drift-check", Some(&cluster)).await);
    w.finish(&cluster, &drift).await;
    let update = op_id(&w.ok("update-cluster", Some(&cluster)).await);
    w.finish(&cluster, &update).await;
    w.ok("delete-cluster", Some(&cluster)).await;

    // Into the tenant's own account (the target sample): accepted like the first.
    w.ok("create-cluster-target", None).await;

    // The audit log (an admin's read) holds the walk's calls.
    let audit = w.ok("list-audit", None).await;
    assert!(audit.to_string().contains("cluster.delete"), "{audit}");

    for name in AGENT_SAMPLES {
        let (status, body) = w.send(name, None).await;
        assert_eq!(status, 401, "{name} with a placeholder agent token: {body}");
    }

    // Every sample was sent: a new one needs its step here.
    let unsent: Vec<&String> = w
        .samples
        .keys()
        .filter(|n| !w.answered.contains_key(*n))
        .collect();
    assert!(unsent.is_empty(), "samples this walk does not send: {unsent:?}");
    w.f.stop().await;
}

//! The agent with its real adapters against strato-kubefake (enforcing agent/deploy/agent.yaml's RBAC for
//! the agent's token) and a small HTTP server standing in for the control plane's /v1/agent endpoints.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use secrecy::SecretString;
use strato_agent_wire::{Ack, Registered, Report};
use strato_kubefake::{KubeFake, Rbac, RequestRecord};

use crate::agent::{Agent, Outcome, Policy, Turn};
use crate::control_plane::HttpControlPlane;
use crate::kube_cluster::{KubeCluster, KubeSecret};

const ADMIN: &str = "admin-token";
const AGENT_TOKEN: &str = "agent-sa-token";
const AGENT_ID: &str = "system:serviceaccount:strato-system:strato-agent";
const REGISTRATION: &str = "reg-0123456789";
const CREDENTIAL: &str = "cl-1.s3cret";

/// What the stand-in control plane received: endpoint and report.
type Received = Arc<Mutex<Vec<(&'static str, Report)>>>;

fn bearer(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_string()
}

async fn register(State(got): State<Received>, headers: HeaderMap, Json(report): Json<Report>) -> Response {
    if bearer(&headers) != REGISTRATION {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    got.lock().unwrap().push(("register", report));
    let body = Registered {
        cluster_id: "cl-1".into(),
        credential: CREDENTIAL.into(),
        heartbeat_secs: 10,
    };
    (StatusCode::CREATED, Json(body)).into_response()
}

async fn heartbeat(State(got): State<Received>, headers: HeaderMap, Json(report): Json<Report>) -> Response {
    if bearer(&headers) != CREDENTIAL {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    got.lock().unwrap().push(("heartbeat", report));
    Json(Ack {
        cluster_id: "cl-1".into(),
        heartbeat_secs: 10,
        health: "healthy".into(),
    })
    .into_response()
}

async fn control_plane() -> (String, Received) {
    let got: Received = Arc::default();
    let app = axum::Router::new()
        .route("/v1/agent/register", post(register))
        .route("/v1/agent/heartbeat", post(heartbeat))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, got)
}

/// A cluster as the configure step leaves it: namespaces, the runner's Secret with the registration token
/// (applied as `strato-runner`), nodes, kube-system's workloads and a warning.
async fn cluster() -> KubeFake {
    let rbac = Rbac::from_manifests(include_str!("../../deploy/agent.yaml"))
        .unwrap()
        .superuser("admin");
    let k = KubeFake::builder()
        .token(ADMIN, "admin")
        .token(AGENT_TOKEN, AGENT_ID)
        .rbac(rbac)
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    k.put_namespace("strato-system");
    k.put_namespace("kube-system");
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: strato-agent\n  namespace: strato-system\ntype: Opaque\nstringData:\n  registration-token: \"{REGISTRATION}\"\n"
    );
    let r = crate::control_plane::client()
        .unwrap()
        .patch(format!(
            "{}/api/v1/namespaces/strato-system/secrets/strato-agent?fieldManager=strato-runner",
            k.url()
        ))
        .bearer_auth(ADMIN)
        .header("content-type", "application/apply-patch+yaml")
        .body(secret)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    k.put_node("n1", true);
    k.put_node("n2", true);
    k.put_deployment("kube-system", "coredns", 2, 2);
    k.put_daemonset("kube-system", "kube-proxy", 2, 2);
    k.put_daemonset("kube-system", "aws-node", 1, 2);
    k.add_warning(
        "kube-system",
        "Pod",
        "aws-node-x",
        "BackOff",
        "Back-off restarting failed container",
        4,
    );
    k
}

fn kube_client(k: &KubeFake) -> kube::Client {
    let mut config = kube::Config::new(k.url().parse().unwrap());
    config.auth_info.token = Some(SecretString::from(AGENT_TOKEN));
    kube::Client::try_from(config).unwrap()
}

/// Turns of an agent until its last report counts `nodes` (ready, total), `pause` apart; past `within` the
/// test fails saying `never`.
struct Until {
    nodes: (u32, u32),
    within: Duration,
    pause: Duration,
    never: &'static str,
}

impl Until {
    /// Turns `agent` (each turn's result checked by `check`) until a report in `got` counts the nodes.
    async fn run(
        &self,
        agent: &mut Agent<KubeCluster, HttpControlPlane, KubeSecret>,
        got: &Received,
        check: impl Fn(&Turn),
    ) {
        let deadline = Instant::now() + self.within;
        loop {
            check(&agent.turn(Instant::now()).await);
            let last = got.lock().unwrap().last().unwrap().1.clone();
            if (last.nodes_ready, last.nodes_total) == self.nodes {
                return;
            }
            assert!(Instant::now() < deadline, "{}: {last:?}", self.never);
            tokio::time::sleep(self.pause).await;
        }
    }
}

/// How many of the kube API requests in `log` listed nodes (`watch`: watched them).
fn node_requests(log: &[RequestRecord], watch: bool) -> usize {
    log.iter()
        .filter(|r| r.path == "/api/v1/nodes" && r.query.contains("watch=true") == watch)
        .count()
}

fn agent_for(k: &KubeFake, plane_url: &str) -> Agent<KubeCluster, HttpControlPlane, KubeSecret> {
    let client = kube_client(k);
    Agent::new(
        KubeCluster::start(client.clone()),
        HttpControlPlane::new(crate::control_plane::client().unwrap(), plane_url),
        KubeSecret::new(client, "strato-system", "strato-agent"),
        Policy::default(),
        Box::new(|| 0.0),
    )
}

#[tokio::test]
async fn the_agent_registers_stores_its_credential_reports_and_sees_a_node_turn_not_ready_through_its_watch()
{
    let k = cluster().await;
    let (plane_url, got) = control_plane().await;
    let mut agent = agent_for(&k, &plane_url);

    let turn = agent.turn(Instant::now()).await;
    assert_eq!(turn.outcome, Outcome::Registered { stored: true });
    let secret = k
        .get("v1", "Secret", Some("strato-system"), "strato-agent")
        .unwrap();
    assert_eq!(
        secret["data"]["credential"], "Y2wtMS5zM2NyZXQ=",
        "base64 of the credential"
    );
    let managers = k.managers("v1", "Secret", Some("strato-system"), "strato-agent");
    assert_eq!(managers["strato-agent"], [".data.credential"]);
    assert_eq!(
        managers["strato-runner"],
        [".data.registration-token", ".type"],
        "the runner's fields are left alone"
    );

    let first = got.lock().unwrap()[0].clone();
    assert_eq!(first.0, "register");
    let r = first.1;
    assert_eq!((r.nodes_ready, r.nodes_total), (2, 2));
    assert_eq!(r.kubernetes_version.as_deref(), Some("v1.33.1"));
    let components: Vec<(&str, &str, u32, u32)> = r
        .components
        .iter()
        .map(|c| (c.role.as_str(), c.name.as_str(), c.ready, c.desired))
        .collect();
    assert_eq!(
        components,
        [
            ("dns", "coredns", 2, 2),
            ("proxy", "kube-proxy", 2, 2),
            ("cni", "aws-node", 1, 2)
        ]
    );
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].object, "Pod/kube-system/aws-node-x");
    assert_eq!(
        (r.warnings[0].reason.as_str(), r.warnings[0].count),
        ("BackOff", 4)
    );

    k.put_node("n2", false);
    let turns = Until {
        nodes: (1, 2),
        within: Duration::from_secs(10),
        pause: Duration::from_millis(50),
        never: "the NotReady node never reached a report",
    };
    turns
        .run(&mut agent, &got, |turn| {
            assert_eq!(
                turn.outcome,
                Outcome::Reported {
                    health: "healthy".into()
                }
            );
        })
        .await;

    let log = k.requests();
    let node_lists = node_requests(&log, false);
    let node_watches = node_requests(&log, true);
    assert_eq!(node_lists, 1, "listed once, then followed by the watch: {log:?}");
    assert!(node_watches >= 1);

    // Every request the agent made was within agent/deploy/agent.yaml's RBAC (the fake enforced it).
    let agent_requests: Vec<_> = log
        .iter()
        .filter(|r| r.identity.as_deref() == Some(AGENT_ID))
        .collect();
    assert!(
        agent_requests.iter().all(|r| r.status != 403 && r.status != 401),
        "{agent_requests:?}"
    );
    assert!(
        agent_requests
            .iter()
            .any(|r| r.method == "PATCH" && r.path.ends_with("/secrets/strato-agent"))
    );
}

#[tokio::test]
async fn a_restarted_agent_reuses_the_stored_credential() {
    let k = cluster().await;
    let (plane_url, got) = control_plane().await;
    agent_for(&k, &plane_url).turn(Instant::now()).await;
    let mut restarted = agent_for(&k, &plane_url);
    let turn = restarted.turn(Instant::now()).await;
    assert_eq!(
        turn.outcome,
        Outcome::Reported {
            health: "healthy".into()
        }
    );
    let endpoints: Vec<&str> = got.lock().unwrap().iter().map(|(e, _)| *e).collect();
    assert_eq!(endpoints, ["register", "heartbeat"]);
}

#[tokio::test]
async fn rbac_outside_the_manifest_is_refused_so_the_enforcement_is_real() {
    let k = cluster().await;
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(kube_client(&k), "kube-system");
    let err = secrets.list(&Default::default()).await.unwrap_err();
    assert!(err.to_string().contains("forbidden"), "{err}");
}

#[tokio::test]
async fn the_run_loop_wires_the_adapters_registers_and_keeps_the_liveness_file_fresh() {
    let k = cluster().await;
    let (plane_url, got) = control_plane().await;
    let dir = std::env::temp_dir().join(format!("strato-agent-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let settings = crate::run::Settings {
        api_url: plane_url,
        cluster_id: "cl-1".into(),
        secret: "strato-agent".into(),
        namespace: "strato-system".into(),
        alive_file: dir.join("alive"),
    };
    let alive = settings.alive_file.clone();
    let task = tokio::spawn(crate::run::run(settings, kube_client(&k)));
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.lock().unwrap().is_empty() || !alive.exists() {
        assert!(
            Instant::now() < deadline,
            "the loop neither registered nor wrote its liveness file"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    task.abort();
    assert_eq!(got.lock().unwrap()[0].0, "register");
    crate::probe::check(&alive, crate::probe::MAX_AGE, std::time::SystemTime::now()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn after_its_watch_ends_and_the_history_is_compacted_the_agent_relists_and_still_sees_changes() {
    let k = cluster().await;
    let (plane_url, got) = control_plane().await;
    let mut agent = agent_for(&k, &plane_url);
    agent.turn(Instant::now()).await;
    // Its watch ends and the version it holds is compacted away: resuming is 410 Expired, so it lists again.
    k.expire_watches();
    k.put_node("n3", true);
    k.put_node("n1", false);
    let turns = Until {
        nodes: (2, 3),
        within: Duration::from_secs(15),
        pause: Duration::from_millis(100),
        never: "the change after the 410 never reached a report",
    };
    turns.run(&mut agent, &got, |_| {}).await;
    let log = k.requests();
    let lists = node_requests(&log, false);
    assert_eq!(lists, 2, "the 410 made the watcher list again: {log:?}");
}

/// The manifest as the configure step fills it, applied document by document through kube-rs discovery and
/// server-side apply (field manager `strato-runner`), as the runner applies it.
async fn apply_manifest(k: &KubeFake, token: &str) {
    use kube::api::{DynamicObject, Patch, PatchParams};
    use kube::discovery::{Discovery, Scope};
    let text = include_str!("../../deploy/agent.yaml")
        .replace("{{image}}", "strato-agent:test")
        .replace("{{api_url}}", "http://127.0.0.1:1")
        .replace("{{cluster_id}}", "cl-1")
        .replace("{{registration_token}}", token);
    let mut config = kube::Config::new(k.url().parse().unwrap());
    config.auth_info.token = Some(SecretString::from(ADMIN));
    let client = kube::Client::try_from(config).unwrap();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    use serde::Deserialize as _;
    for doc in serde_norway::Deserializer::from_str(&text) {
        let obj = DynamicObject::deserialize(doc).unwrap();
        let gvk = kube::api::GroupVersionKind::try_from(obj.types.as_ref().unwrap()).unwrap();
        let (resource, caps) = discovery.resolve_gvk(&gvk).unwrap();
        let api: kube::Api<DynamicObject> = match caps.scope {
            Scope::Namespaced => kube::Api::namespaced_with(
                client.clone(),
                obj.metadata.namespace.as_deref().unwrap(),
                &resource,
            ),
            Scope::Cluster => kube::Api::all_with(client.clone(), &resource),
        };
        let name = obj.metadata.name.clone().unwrap();
        api.patch(&name, &PatchParams::apply("strato-runner"), &Patch::Apply(&obj))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn the_manifest_applied_by_discovery_and_server_side_apply_gives_the_agent_what_it_needs() {
    let rbac = Rbac::from_manifests(include_str!("../../deploy/agent.yaml"))
        .unwrap()
        .superuser("admin");
    let k = KubeFake::builder()
        .token(ADMIN, "admin")
        .token(AGENT_TOKEN, AGENT_ID)
        .rbac(rbac)
        .start()
        .await
        .unwrap();
    k.put_namespace("kube-system");
    k.put_node("n1", true);
    apply_manifest(&k, REGISTRATION).await;
    assert!(
        k.get("apps/v1", "Deployment", Some("strato-system"), "strato-agent")
            .is_some()
    );
    assert!(
        k.get(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            "strato-agent"
        )
        .is_some()
    );

    let (plane_url, got) = control_plane().await;
    let mut agent = agent_for(&k, &plane_url);
    assert_eq!(
        agent.turn(Instant::now()).await.outcome,
        Outcome::Registered { stored: true }
    );
    assert_eq!(got.lock().unwrap()[0].1.nodes_ready, 1);

    // The configure step re-applies the manifest (a new token): the agent's credential stays.
    apply_manifest(&k, "reg-new").await;
    let secret = k
        .get("v1", "Secret", Some("strato-system"), "strato-agent")
        .unwrap();
    assert_eq!(secret["data"]["credential"], "Y2wtMS5zM2NyZXQ=");
    assert_eq!(secret["data"]["registration-token"], "cmVnLW5ldw==");
}

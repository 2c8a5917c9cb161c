//! Issue 15, defect 1, end to end through devstack: a template with an `[agent]` section
//! (`tests/fixtures/agent-handshake`, configure deadline 75 s) and the real runner and engine. After apply the
//! create waits in CONFIGURING; its runner exits 0 and the task's STOPPED event is delivered and applied. Then
//! a stand-in agent (this test, with the token the runner handed to Terraform) registers, gets its credential
//! and reports its Ready nodes with it: the cluster becomes ACTIVE and healthy. The credential rotates (the
//! old one retires when the new one is first used). A second cluster, whose agent never comes, ends FAILED
//! at the deadline with what / step / fix.
//!
//! Then the real agent: the runner installs it into devstack's emulated cluster and the `strato-agent` binary
//! registers, reports, and reports a node turning NotReady (second test).

use crate::devstack_support;

use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use devstack_support::fixtures;
use serde_json::{Value, json};
use strato_agent_wire::{Ack, MIN_HEARTBEAT_SECS, Registered, Rotated};
use strato_devstack::client::Client;
use strato_devstack::kube::{self, AgentProcess, EmulatedCluster};
use strato_devstack::{Devstack, DevstackConfig};
use strato_domain::agent::registration_token;
use strato_domain::ids::ClusterId;
use strato_domain::ts;

const DEADLINE_SECS: i64 = 75;

/// Waits until the runner task of `op` has exited (its STOPPED event goes out right after).
async fn runner_exited(stack: &Devstack, op: &str) {
    let start = Instant::now();
    loop {
        let tasks = stack.fargate_stats.tasks();
        let mine: Vec<_> = tasks
            .iter()
            .filter(|t| t.operation_id.as_deref() == Some(op))
            .collect();
        if !mine.is_empty() && mine.iter().all(|t| t.ended_at.is_some()) {
            assert_eq!(mine.len(), 1, "one runner for the create");
            assert_eq!(mine[0].exit_code, Some(0), "the runner exits 0 after its report");
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the runner of {op} has not exited"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Messages on the events queue that are visible or being handled (delayed timers not counted).
async fn events_in_flight(stack: &Devstack) -> u64 {
    let out = stack
        .env
        .aws
        .sqs
        .get_queue_attributes()
        .queue_url(&stack.env.queues.events)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .expect("events queue attributes");
    out.attributes()
        .map(|a| a.values().filter_map(|v| v.parse::<u64>().ok()).sum())
        .unwrap_or(0)
}

/// Waits until the status function has applied everything on the events queue — the runner's STOPPED
/// event included (a stop that waited for a report would stay in flight for minutes).
async fn events_applied(stack: &Devstack) {
    let start = Instant::now();
    let mut empty_reads = 0;
    while empty_reads < 3 {
        if events_in_flight(stack).await == 0 {
            empty_reads += 1;
        } else {
            empty_reads = 0;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the events queue did not drain"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn get(api: &Client, path: &str) -> Value {
    let r = api.get(path).await.unwrap();
    assert_eq!(r.status, 200, "{path}: {}", r.text);
    r.body
}

fn step<'a>(op: &'a Value, name: &str) -> &'a Value {
    op["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} step: {op}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_handshake_reaches_active_after_the_runner_stopped_or_fails_at_the_deadline() {
    let fixtures = fixtures();
    // The template gets the control plane's URL (a managed variable), so the API's address is chosen first.
    let http_addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let stack = devstack_support::start(DevstackConfig {
        templates_root: None,
        extra_templates: vec![(fixtures.join("agent-handshake"), fixtures)],
        http_addr,
        runner_env: vec![("STRATO_CONTROL_PLANE_URL".into(), format!("http://{http_addr}"))],
        ..devstack_support::config("ag").await
    })
    .await;
    let api = Client::new(&stack.endpoints.http_api).with_token(stack.token("acme"));
    let spec = |name: &str| {
        json!({
            "name": name,
            "template": {"name": "fixture-agent", "version": "0.1.0"},
            "provider": "aws",
            "region": "us-east-1",
            "variables": {}
        })
    };
    let (agented, agented_op, _) = api.create_cluster(&spec("agented")).await.unwrap();
    let (silent, silent_op, _) = api.create_cluster(&spec("silent")).await.unwrap();

    // Apply done: CONFIGURING, then the runners exit and their stops are applied.
    for c in [&agented, &silent] {
        let cluster = api
            .wait_cluster_state(c, &["CONFIGURING", "ACTIVE", "FAILED"], Duration::from_secs(300))
            .await
            .unwrap();
        assert_eq!(cluster["state"], "CONFIGURING", "after apply: {cluster}");
    }
    runner_exited(&stack, &agented_op).await;
    runner_exited(&stack, &silent_op).await;
    events_applied(&stack).await;
    for (c, op) in [(&agented, &agented_op), (&silent, &silent_op)] {
        let cluster = get(&api, &format!("/v1/clusters/{c}")).await;
        assert_eq!(
            cluster["state"], "CONFIGURING",
            "after the runner's stop: {cluster}"
        );
        let op = get(&api, &format!("/v1/operations/{op}")).await;
        assert_eq!(op["status"], "running", "the create waits for its agent: {op}");
    }

    // The stand-in agent: the token the runner derived for Terraform (the fixture checks it got one), from
    // the same secret; it registers once and gets its credential, which its heartbeats carry.
    let secret = stack.env.agent_token_secret.as_bytes();
    let token = registration_token(secret, &agented.parse::<ClusterId>().unwrap());
    let registrar = Client::new(&stack.endpoints.http_api).with_token(token);
    let r = registrar
        .post("/v1/agent/register", &json!({"nodes_ready": 1}))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "register: {}", r.text);
    let registered: Registered = serde_json::from_value(r.body.clone()).unwrap();
    assert_eq!(registered.cluster_id, agented);
    let cluster = get(&api, &format!("/v1/clusters/{agented}")).await;
    assert_eq!(cluster["state"], "CONFIGURING", "1 of 2 nodes Ready");
    assert_eq!(cluster["health"]["status"], "degraded", "{cluster}");
    assert_eq!(cluster["health"]["nodes_requested"], 2, "{cluster}");
    let agent = Client::new(&stack.endpoints.http_api).with_token(registered.credential.clone());
    let heartbeat = json!({"nodes_ready": 2, "kubernetes_version": "v1.31.2"});
    // The control plane takes a report at most every MIN_HEARTBEAT_SECS.
    let r = agent.post("/v1/agent/heartbeat", &heartbeat).await.unwrap();
    assert_eq!(r.status, 429, "too soon after registering: {}", r.text);
    tokio::time::sleep(Duration::from_secs(MIN_HEARTBEAT_SECS)).await;
    let r = agent.post("/v1/agent/heartbeat", &heartbeat).await.unwrap();
    assert_eq!(r.status, 200, "heartbeat: {}", r.text);
    let ack: Ack = serde_json::from_value(r.body.clone()).unwrap();
    assert_eq!(ack.health, "healthy", "{}", r.text);
    let done = api
        .wait_operation(&agented_op, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(step(&done, "configure")["ok"], true);
    api.wait_cluster_state(&agented, &["ACTIVE"], Duration::from_secs(30))
        .await
        .unwrap();
    let r = registrar
        .post("/v1/agent/register", &json!({"nodes_ready": 2}))
        .await
        .unwrap();
    assert_eq!(r.status, 409, "the token registers once: {}", r.text);

    // Rotation: the old credential works until the new one is first used.
    let r = agent.post("/v1/agent/credential", &json!({})).await.unwrap();
    assert_eq!(r.status, 200, "rotate: {}", r.text);
    let rotated: Rotated = serde_json::from_value(r.body.clone()).unwrap();
    let fresh = Client::new(&stack.endpoints.http_api).with_token(rotated.credential);
    tokio::time::sleep(Duration::from_secs(MIN_HEARTBEAT_SECS)).await;
    let r = fresh.post("/v1/agent/heartbeat", &heartbeat).await.unwrap();
    assert_eq!(r.status, 200, "the new credential: {}", r.text);
    tokio::time::sleep(Duration::from_secs(MIN_HEARTBEAT_SECS)).await;
    let r = agent.post("/v1/agent/heartbeat", &heartbeat).await.unwrap();
    assert_eq!(r.status, 401, "the old one is retired: {}", r.text);
    let cluster = get(&api, &format!("/v1/clusters/{agented}")).await;
    assert_eq!(cluster["health"]["status"], "healthy", "{cluster}");
    assert_eq!(cluster["health"]["kubernetes_version"], "v1.31.2", "{cluster}");

    // No agent: FAILED when the deadline passes, not before, saying what, where and what to do.
    let failed = api
        .wait_cluster_state(&silent, &["FAILED", "ACTIVE"], Duration::from_secs(300))
        .await
        .unwrap();
    assert_eq!(failed["state"], "FAILED", "{failed}");
    let err = &failed["last_error"];
    assert_eq!(err["step"], "configure", "{failed}");
    assert!(
        err["what"].as_str().unwrap().contains("agent did not register"),
        "{err}"
    );
    assert!(!err["fix"].as_str().unwrap().is_empty(), "{err}");
    let op = api
        .wait_operation(&silent_op, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(op["status"], "failed");
    assert_eq!(op["error"]["step"], "configure");
    let configure = step(&op, "configure");
    let waited = ts::parse(configure["finished_at"].as_str().unwrap()).unwrap()
        - ts::parse(configure["started_at"].as_str().unwrap()).unwrap();
    assert!(
        waited.whole_seconds() >= DEADLINE_SECS,
        "failed after {waited} of a {DEADLINE_SECS} s deadline"
    );
    println!(
        "agent handshake: ACTIVE after the runner's stop; the agentless cluster FAILED after {} s",
        waited.whole_seconds()
    );
    stack.shutdown(Duration::from_secs(30)).await;
}

/// Polls the cluster until its health is `status`, or fails with the agent's log after `timeout`.
async fn health_becomes(
    api: &Client,
    cluster: &str,
    status: &str,
    timeout: Duration,
    agent: &AgentProcess,
) -> Value {
    let start = Instant::now();
    loop {
        let c = get(api, &format!("/v1/clusters/{cluster}")).await;
        if c["health"]["status"] == status {
            return c;
        }
        assert!(
            start.elapsed() < timeout,
            "health is not {status} after {timeout:?}: {c}\nagent log:\n{}",
            agent.log_text()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The real agent end to end: a template with `[agent] install = "runner"` (`tests/fixtures/agent-runner`)
/// → the runner applies the manifests into devstack's emulated cluster (kubefake behind TLS, reached through
/// `STRATO_KUBE_ENDPOINT`/`_CA_PEM` with a real EKS token) → the `strato-agent` binary, started with the
/// Deployment's environment as a kubelet would, registers within `deploy/agent.yaml`'s RBAC and stores its
/// credential → ACTIVE and healthy → a node turns NotReady → the next heartbeat makes the health degraded.
#[tokio::test(flavor = "multi_thread")]
async fn the_runner_installs_the_real_agent_which_registers_and_reports_a_node_turning_not_ready() {
    let fixtures = fixtures();
    let binary = kube::agent_binary().expect("the strato-agent binary");
    let cluster_api = EmulatedCluster::start("us-east-1", 2).await.unwrap();
    let http_addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let mut runner_env = vec![("STRATO_CONTROL_PLANE_URL".into(), format!("http://{http_addr}"))];
    runner_env.extend(cluster_api.runner_env());
    let stack = devstack_support::start(DevstackConfig {
        templates_root: None,
        extra_templates: vec![(fixtures.join("agent-runner"), fixtures)],
        http_addr,
        runner_env,
        ..devstack_support::config("ar").await
    })
    .await;
    let api = Client::new(&stack.endpoints.http_api).with_token(stack.token("acme"));
    let spec = json!({
        "name": "real-agent",
        "template": {"name": "fixture-agent-runner", "version": "0.1.0"},
        "provider": "aws",
        "region": "us-east-1",
        "variables": {}
    });
    let (cluster, op, _) = api.create_cluster(&spec).await.unwrap();
    let started = Instant::now();

    // The runner applied every object as `strato-runner`; the agent starts as its pod would.
    let agent = cluster_api
        .start_agent(&binary, Duration::from_secs(240))
        .await
        .unwrap();
    for (kind, api_version, ns, name) in [
        ("Namespace", "v1", None, "strato-system"),
        ("Secret", "v1", Some("strato-system"), "strato-agent"),
        (
            "ClusterRole",
            "rbac.authorization.k8s.io/v1",
            None,
            "strato-agent",
        ),
        ("Deployment", "apps/v1", Some("strato-system"), "strato-agent"),
    ] {
        let managers = cluster_api.fake.managers(api_version, kind, ns, name);
        assert!(
            managers.contains_key("strato-runner"),
            "{kind} {name}: {managers:?}"
        );
    }

    let done = api.wait_operation(&op, Duration::from_secs(120)).await;
    let done = done.unwrap_or_else(|e| panic!("{e}\nagent log:\n{}", agent.log_text()));
    assert_eq!(
        done["status"],
        "succeeded",
        "{done}\nagent log:\n{}",
        agent.log_text()
    );
    assert_eq!(step(&done, "install-agent")["ok"], true, "{done}");
    assert_eq!(step(&done, "configure")["ok"], true, "{done}");
    let active = api
        .wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(active["health"]["status"], "healthy", "{active}");
    assert_eq!(active["health"]["nodes_requested"], 2, "{active}");

    // The credential is in the Secret, written by the agent alone; the runner's token key is left alone.
    let secret = cluster_api
        .fake
        .get("v1", "Secret", Some("strato-system"), "strato-agent")
        .unwrap();
    assert!(secret["data"]["credential"].is_string(), "{secret}");
    let managers = cluster_api
        .fake
        .managers("v1", "Secret", Some("strato-system"), "strato-agent");
    assert_eq!(managers["strato-agent"], [".data.credential"], "{managers:?}");

    // A node turns NotReady: the agent's watch sees it and its next heartbeat (the Ack's interval) says so.
    cluster_api.fake.put_node("node-1", false);
    let degraded = health_becomes(&api, &cluster, "degraded", Duration::from_secs(100), &agent).await;
    assert_eq!(degraded["health"]["nodes_ready"], 1, "{degraded}");
    assert_eq!(degraded["state"], "ACTIVE", "{degraded}");

    // Every request the agent made was within its RBAC (kubefake answers 403 otherwise).
    let agents: Vec<_> = cluster_api
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.identity.as_deref() == Some(kube::AGENT_IDENTITY))
        .collect();
    assert!(!agents.is_empty(), "the agent used the cluster's API");
    assert!(
        agents.iter().all(|r| r.status != 403 && r.status != 401),
        "{agents:?}"
    );
    println!(
        "real agent: installed by the runner, ACTIVE and healthy, degraded after a node turned NotReady; {} s",
        started.elapsed().as_secs()
    );
    drop(agent);
    stack.shutdown(Duration::from_secs(30)).await;
}

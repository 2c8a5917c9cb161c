//! Issue 15, defect 1, end to end through devstack: a template with an `[agent]` section
//! (`tests/fixtures/agent-handshake`, configure deadline 75 s) and the real runner and engine. After apply the
//! create waits in CONFIGURING; its runner exits 0 and the task's STOPPED event is delivered and applied. Then
//! a stand-in agent (this test, with the token the runner handed to Terraform) registers, gets its credential
//! and reports its Ready nodes with it: the cluster becomes ACTIVE and healthy. The credential rotates (the
//! old one retires when the new one is first used). A second cluster, whose agent never comes, ends FAILED
//! at the deadline with what / step / fix.
//!
//! Then the real agent (second test): a create of the catalog's `aws-eks-basic` with the agent on (its newest
//! version) becomes ACTIVE because the `strato-agent` binary, which the runner installed into the cluster
//! devstack emulates for it, reported the requested Ready nodes; killing the agent marks the cluster
//! degraded within the configured window and sends the signed webhook; restarting it clears that; a node
//! turning NotReady is reported; DELETE revokes its credential.

use crate::devstack_support;
use devstack_support::receiver::Receiver;

use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use devstack_support::fixtures;
use serde_json::{Value, json};
use strato_agent_wire::{Ack, MIN_HEARTBEAT_SECS, Registered, Rotated};
use strato_devstack::client::Client;
use strato_devstack::cluster_agents::ClusterEmulation;
use strato_devstack::kube;
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
    emulation: &ClusterEmulation,
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
            emulation.agent_log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The interval the api tells this test's agent to report at: the wire's minimum (10 s, up to 11 s with the
/// agent's jitter) instead of the default minute, so the silent window and the report after a node turns
/// NotReady are seconds, not minutes, of waiting; the behaviour checked is the same.
const HEARTBEAT_SECS: u64 = MIN_HEARTBEAT_SECS;
/// A silent agent marks its cluster degraded after this long. More than twice the heartbeat interval with
/// its jitter (11 s), so a live agent is never taken for a silent one even when one report is slow.
const STALE_SECS: u64 = 25;
const WEBHOOK_SECRET: &str = "devstack-agent-webhook-secret";

/// The cluster agent end to end, on the catalog's own template: `aws-eks-basic` at its newest version
/// (`[agent] install = "runner"`) → devstack emulates the new cluster (kubefake behind TLS) and points the
/// runner at it → the runner's install-agent step applies the manifests with a real EKS token → devstack
/// starts the `strato-agent` binary with the Deployment's environment, as the kubelet would → it registers
/// within `deploy/agent.yaml`'s RBAC and reports 2 of 2 nodes Ready → ACTIVE and healthy. Then: the agent
/// is killed → degraded within the stale window, `cluster.health_changed` delivered signed → restarted →
/// healthy → a node turns NotReady → degraded at its next heartbeat → DELETE → its credential is refused.
#[tokio::test(flavor = "multi_thread")]
async fn aws_eks_basic_with_the_agent_is_active_on_its_report_degraded_while_it_is_silent_and_revoked_on_delete()
 {
    let t0 = Instant::now();
    let binary = kube::agent_binary().expect("the strato-agent binary");
    let stack = devstack_support::start(DevstackConfig {
        agent_binary: Some(binary),
        agent_stale: Some(Duration::from_secs(STALE_SECS)),
        agent_heartbeat: Some(Duration::from_secs(HEARTBEAT_SECS)),
        // The silent-agent check is the sweeper's: often, so the mark follows the window closely.
        sweep_rate: Duration::from_secs(3),
        ..devstack_support::config("ar").await
    })
    .await;
    let api = Client::new(&stack.endpoints.http_api).with_token(stack.token("acme"));
    let receiver = Receiver::start().await;
    let r = api
        .request(
            reqwest::Method::PUT,
            "/v1/webhook",
            Some(&json!({"url": receiver.url, "secret": WEBHOOK_SECRET})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);

    // The newest published aws-eks-basic is the one with the agent.
    let newest = stack
        .published
        .iter()
        .filter(|(n, _)| n == "aws-eks-basic")
        .map(|(_, v)| v.clone())
        .max_by_key(|v| {
            v.split('.')
                .map(|p| p.parse::<u32>().unwrap())
                .collect::<Vec<_>>()
        })
        .expect("aws-eks-basic is published");
    assert_eq!(newest, "1.2.0");
    let spec = json!({
        "name": "real-agent",
        "template": {"name": "aws-eks-basic", "version": newest},
        "provider": "aws",
        "region": "us-east-1",
        "variables": {"node_count": 2}
    });
    let (cluster, op, _) = api.create_cluster(&spec).await.unwrap();
    let done = api.wait_operation(&op, Duration::from_secs(600)).await;
    let emulation = stack
        .agents
        .emulation(&cluster)
        .await
        .expect("devstack emulates the cluster of an agent template");
    let done = done.unwrap_or_else(|e| panic!("{e}\nagent log:\n{}", emulation.agent_log()));
    assert_eq!(
        done["status"],
        "succeeded",
        "{done}\nagent log:\n{}",
        emulation.agent_log()
    );
    assert_eq!(step(&done, "install-agent")["ok"], true, "{done}");
    assert_eq!(step(&done, "configure")["ok"], true, "{done}");
    let active = api
        .wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(active["health"]["status"], "healthy", "{active}");
    assert_eq!(active["health"]["nodes_requested"], 2, "{active}");
    assert_eq!(active["health"]["nodes_ready"], 2, "the agent's report: {active}");
    let created_in = t0.elapsed();

    // The runner applied every object as `strato-runner`; the credential is in the Secret, written by the
    // agent alone (the runner's token key left alone).
    let fake = &emulation.cluster.fake;
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
        let managers = fake.managers(api_version, kind, ns, name);
        assert!(
            managers.contains_key("strato-runner"),
            "{kind} {name}: {managers:?}"
        );
    }
    let managers = fake.managers("v1", "Secret", Some("strato-system"), "strato-agent");
    assert_eq!(managers["strato-agent"], [".data.credential"], "{managers:?}");

    // The agent dies: no report for the stale window marks the cluster degraded, and the tenant is told.
    stack.agents.stop_agent(&cluster).await.unwrap();
    let killed = Instant::now();
    let silent = health_becomes(
        &api,
        &cluster,
        "degraded",
        Duration::from_secs(STALE_SECS + 60),
        &emulation,
    )
    .await;
    let degraded_after = killed.elapsed();
    assert_eq!(
        silent["state"], "ACTIVE",
        "health is not a lifecycle state: {silent}"
    );
    assert!(
        silent["health"]["reasons"]
            .to_string()
            .contains("has not reported since"),
        "{silent}"
    );
    let health_hook = |to: &str| {
        receiver.deliveries(WEBHOOK_SECRET).into_iter().find(|d| {
            d.envelope.kind == "cluster.health_changed"
                && d.envelope.data["cluster_id"] == cluster.as_str()
                && d.envelope.data["to"] == to
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while health_hook("degraded").is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let hook = health_hook("degraded").expect("cluster.health_changed to degraded, signed");
    assert_eq!(hook.envelope.data["from"], "healthy", "{:?}", hook.envelope);

    // Restarted, it reads its credential from the Secret and reports at once: healthy again.
    stack.agents.start_agent(&cluster).await.unwrap();
    let healthy = health_becomes(&api, &cluster, "healthy", Duration::from_secs(60), &emulation).await;
    assert_eq!(healthy["health"]["nodes_ready"], 2, "{healthy}");

    // A node turns NotReady: the agent's watch sees it and its next heartbeat (the Ack's interval) says so.
    fake.put_node("node-1", false);
    let degraded = health_becomes(&api, &cluster, "degraded", Duration::from_secs(100), &emulation).await;
    assert_eq!(degraded["health"]["nodes_ready"], 1, "{degraded}");

    // Every request the agent made was within its RBAC (kubefake answers 403 otherwise).
    let agents: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.identity.as_deref() == Some(kube::AGENT_IDENTITY))
        .collect();
    assert!(!agents.is_empty(), "the agent used the cluster's API");
    assert!(
        agents.iter().all(|r| r.status != 403 && r.status != 401),
        "{agents:?}"
    );

    // DELETE revokes the agent's credential: the one in its Secret is refused from then on.
    let credential = emulation
        .agent_credential()
        .expect("the credential the agent stored");
    let r = api.delete(&format!("/v1/clusters/{cluster}")).await.unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let delete_op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let deleted = api
        .wait_operation(&delete_op, Duration::from_secs(300))
        .await
        .unwrap();
    assert_eq!(deleted["status"], "succeeded", "{deleted}");
    api.wait_cluster_state(&cluster, &["DELETED"], Duration::from_secs(60))
        .await
        .unwrap();
    let revoked = Client::new(&stack.endpoints.http_api).with_token(credential);
    let r = revoked
        .post("/v1/agent/heartbeat", &json!({"nodes_ready": 2}))
        .await
        .unwrap();
    assert_eq!(r.status, 401, "a deleted cluster's credential: {}", r.text);
    // devstack's emulated cluster and agent go with the cluster.
    let deadline = Instant::now() + Duration::from_secs(15);
    while stack.agents.emulation(&cluster).await.is_some() {
        assert!(Instant::now() < deadline, "the emulated cluster outlived DELETED");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "real agent on aws-eks-basic@{newest}: ACTIVE in {} s; degraded {} s after it was killed (window {STALE_SECS} s); \
         healthy after its restart; NotReady node reported; credential refused after DELETE; {} s in all",
        created_in.as_secs(),
        degraded_after.as_secs(),
        t0.elapsed().as_secs()
    );
    stack.shutdown(Duration::from_secs(30)).await;
}

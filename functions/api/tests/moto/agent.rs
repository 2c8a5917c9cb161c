//! The cluster agent's endpoints: registration (once, before the deadline) gives a credential; heartbeats
//! with it record health (and `cluster.health_changed`), are throttled (429) and bounded (400, 413); the
//! credential rotates and a delete revokes it; another cluster's id never opens a cluster; and the
//! `AgentReady` event lets the status function finish the create.

use crate::common;

use common::{Api, Req, call_with};
use lambda_http::http::StatusCode;
use serde_json::json;
use strato_agent_wire::{
    Ack, DEFAULT_HEARTBEAT_SECS, MAX_REPORT_BYTES, MAX_TEXT, MIN_HEARTBEAT_SECS, Registered, Rotated,
    credential_cluster,
};
use strato_api::{Ctx, service};
use strato_domain::agent::registration_token;
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::messages::{ControlEvent, WebhookMessage};
use strato_domain::model::{ClusterState, OperationStatus};
use strato_domain::template::Template;
use strato_domain::ts;

const SECRET: &str = "dev-agent-secret";

async fn setup() -> (Api, Ctx) {
    let api = Api::new().await;
    let ctx = api.ctx_with(&[("STRATO_AGENT_TOKEN_SECRET", SECRET)]).await;
    let text =
        std::fs::read_to_string(common::workspace().join("functions/api/tests/fixtures/agent-test.toml"))
            .unwrap();
    let t = Template::from_toml(&text).unwrap();
    ctx.store
        .put_template(&t.manifest, &"1".repeat(64), "templates/agent-test/1.0.0.tar.gz")
        .await
        .unwrap();
    (api, ctx)
}

async fn create(ctx: &Ctx, name: &str) -> (ClusterId, OperationId) {
    let body = json!({"name": name, "template": {"name": "agent-test", "version": "1.0.0"},
        "provider": "aws", "region": "us-east-1", "variables": {"node_count": 2}});
    let r = call_with(&service(ctx.clone()), Api::create_req(name).body(&body)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    (
        r.body["cluster"]["id"].as_str().unwrap().parse().unwrap(),
        r.body["operation"]["id"].as_str().unwrap().parse().unwrap(),
    )
}

/// Puts the cluster where the status function leaves it after apply: CONFIGURING, create op running.
async fn configuring(ctx: &Ctx, id: &ClusterId, op: &OperationId, deadline_in: time::Duration) {
    let mut c = ctx.store.find_cluster(id).await.unwrap().unwrap();
    c = c.in_state(ClusterState::Configuring);
    c.configuring_deadline = Some(ts::now() + deadline_in);
    ctx.store.save_cluster(&mut c).await.unwrap();
    let mut o = ctx.store.get_operation(op).await.unwrap().unwrap();
    o.status = OperationStatus::Running;
    ctx.store.save_operation(&mut o, false).await.unwrap();
}

fn report(route: &str, token: &str, nodes: u32) -> Req {
    Req::load(route)
        .header("authorization", &format!("Bearer {token}"))
        .body(&json!({"nodes_ready": nodes}))
}

fn rotate(credential: &str) -> Req {
    Req::load("agent-credential").header("authorization", &format!("Bearer {credential}"))
}

/// Moves the agent's last accepted report back past the minimum interval, as if that much time passed.
async fn later(ctx: &Ctx, id: &ClusterId) {
    let mut c = ctx.store.find_cluster(id).await.unwrap().unwrap();
    let back = time::Duration::seconds(MIN_HEARTBEAT_SECS as i64 + 1);
    c.agent_last_seen = c.agent_last_seen.map(|t| t - back);
    ctx.store.save_cluster(&mut c).await.unwrap();
}

/// Up to ten messages waiting on `queue`, each body parsed as a `T`.
async fn received<T: serde::de::DeserializeOwned>(api: &Api, queue: &str) -> Vec<T> {
    let out = api
        .env
        .aws
        .sqs
        .receive_message()
        .queue_url(queue)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    out.messages()
        .iter()
        .map(|m| serde_json::from_str(m.body().unwrap()).unwrap())
        .collect()
}

async fn control_events(api: &Api, ctx: &Ctx) -> Vec<ControlEvent> {
    received(api, &ctx.queues.events).await
}

async fn webhook_events(api: &Api, ctx: &Ctx) -> Vec<WebhookMessage> {
    received(api, &ctx.queues.webhooks).await
}

#[tokio::test(flavor = "multi_thread")]
async fn registration_gives_a_credential_for_heartbeats() {
    let (api, ctx) = setup().await;
    let svc = service(ctx.clone());
    let r = call_with(&svc, Req::load("put-webhook")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let (id, op) = create(&ctx, "agented").await;
    let stored = ctx.store.find_cluster(&id).await.unwrap().unwrap();
    let token = registration_token(SECRET.as_bytes(), &id);
    assert_eq!(
        stored.agent_token_hash.as_deref(),
        Some(strato_domain::agent::token_hash(&token).as_str())
    );
    let r = api
        .call(Req::load("get-cluster").path(&format!("/v1/clusters/{id}")))
        .await;
    assert!(
        !r.text.contains(&token) && !r.text.contains("agent_token_hash"),
        "token never shown: {}",
        r.text
    );
    assert_eq!(r.body["health"]["status"], "unknown", "no report yet");

    // Too early: the cluster is still PENDING.
    let r = call_with(&svc, report("agent-register", &token, 2)).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    configuring(&ctx, &id, &op, time::Duration::minutes(10)).await;

    let r = call_with(&svc, report("agent-register", &"f".repeat(64), 2)).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "wrong token");
    let r = call_with(&svc, Req::load("agent-register")).await;
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "sample event's token belongs to no cluster"
    );
    let r = call_with(&svc, report("agent-heartbeat", &token, 2)).await;
    assert_eq!(
        r.status,
        StatusCode::UNAUTHORIZED,
        "the registration token is no credential"
    );

    // Registered, but only 1 of 2 nodes Ready: no AgentReady yet, health degraded.
    let r = call_with(&svc, report("agent-register", &token, 1)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let registered: Registered = serde_json::from_value(r.body.clone()).unwrap();
    assert_eq!(registered.cluster_id, id.as_str());
    assert_eq!(registered.heartbeat_secs, DEFAULT_HEARTBEAT_SECS);
    let credential = registered.credential;
    assert_eq!(credential_cluster(&credential), Some(id.as_str()));
    assert!(control_events(&api, &ctx).await.is_empty());
    let c = ctx.store.find_cluster(&id).await.unwrap().unwrap();
    assert!(c.agent_registered_at.is_some() && c.agent_last_seen.is_some());
    assert_eq!(
        c.agent_credential_hash.as_deref(),
        Some(strato_domain::agent::token_hash(&credential).as_str()),
        "only the hash is kept"
    );
    let r = api
        .call(Req::load("get-cluster").path(&format!("/v1/clusters/{id}")))
        .await;
    let secret = credential.split_once('.').unwrap().1;
    assert!(
        !r.text.contains(secret),
        "credential never shown again: {}",
        r.text
    );
    assert_eq!(r.body["health"]["status"], "degraded", "{}", r.text);
    assert_eq!(r.body["health"]["nodes_requested"], 2);
    assert_eq!(r.body["health"]["reasons"][0], "1 of 2 requested nodes are Ready");
    let hooks = webhook_events(&api, &ctx).await;
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0].event, "cluster.health_changed");
    assert_eq!(hooks[0].payload["data"]["from"], "unknown");
    assert_eq!(hooks[0].payload["data"]["to"], "degraded");

    let r = call_with(&svc, report("agent-register", &token, 2)).await;
    assert_eq!(
        r.status,
        StatusCode::CONFLICT,
        "the token registers once: {}",
        r.text
    );

    // Too soon after registration: 429 with Retry-After, nothing written.
    let before = ctx.store.find_cluster(&id).await.unwrap().unwrap();
    let r = call_with(&svc, report("agent-heartbeat", &credential, 2)).await;
    r.problem(429);
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=MIN_HEARTBEAT_SECS).contains(&wait), "{wait}");
    let after = ctx.store.find_cluster(&id).await.unwrap().unwrap();
    assert_eq!(after.version, before.version, "nothing written");

    later(&ctx, &id).await;
    let r = call_with(&svc, report("agent-heartbeat", &credential, 2)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let ack: Ack = serde_json::from_value(r.body.clone()).unwrap();
    assert_eq!(
        (ack.cluster_id.as_str(), ack.health.as_str()),
        (id.as_str(), "healthy")
    );
    let events = control_events(&api, &ctx).await;
    assert_eq!(
        events,
        vec![ControlEvent::AgentReady {
            operation_id: op,
            cluster_id: id.clone(),
            nodes_ready: 2
        }]
    );
    let hooks = webhook_events(&api, &ctx).await;
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0].payload["data"]["to"], "healthy");
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_rotate_and_a_delete_revokes_them() {
    let (api, ctx) = setup().await;
    let svc = service(ctx.clone());
    let (id, op) = create(&ctx, "rotating").await;
    let (other, other_op) = create(&ctx, "neighbour").await;
    configuring(&ctx, &id, &op, time::Duration::minutes(10)).await;
    configuring(&ctx, &other, &other_op, time::Duration::minutes(10)).await;
    let register = |c: &ClusterId| report("agent-register", &registration_token(SECRET.as_bytes(), c), 2);
    let r = call_with(&svc, register(&id)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let old = r.body["credential"].as_str().unwrap().to_owned();
    let r = call_with(&svc, register(&other)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    // Another cluster's id with this cluster's valid secret: refused, as an unknown cluster is.
    let secret = old.split_once('.').unwrap().1;
    later(&ctx, &other).await;
    let r = call_with(&svc, report("agent-heartbeat", &format!("{other}.{secret}"), 2)).await;
    r.problem(401);
    let unknown = call_with(
        &svc,
        report(
            "agent-heartbeat",
            &format!("{}.{secret}", ClusterId::generate()),
            2,
        ),
    )
    .await;
    assert_eq!(unknown.body["detail"], r.body["detail"], "the same answer");

    // Bounds: a body over MAX_REPORT_BYTES is 413, a bad field a 400 naming it.
    let big = json!({"nodes_ready": 1, "warnings": [{"reason": "x".repeat(MAX_REPORT_BYTES)}]});
    let r = call_with(
        &svc,
        Req::load("agent-heartbeat")
            .header("authorization", &format!("Bearer {old}"))
            .body(&big),
    )
    .await;
    r.problem(413);
    let r = call_with(
        &svc,
        Req::load("agent-heartbeat")
            .header("authorization", &format!("Bearer {old}"))
            .body(&json!({"nodes_ready": 1, "kubernetes_version": "v".repeat(MAX_TEXT + 1)})),
    )
    .await;
    r.problem(400);
    assert_eq!(r.fields(), vec!["kubernetes_version"]);

    // Rotation: the old credential works until the new one is first used.
    let r = call_with(&svc, rotate(&old)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let new = serde_json::from_value::<Rotated>(r.body.clone())
        .unwrap()
        .credential;
    assert_ne!(new, old);
    later(&ctx, &id).await;
    let r = call_with(&svc, report("agent-heartbeat", &old, 2)).await;
    assert_eq!(r.status, StatusCode::OK, "old still works: {}", r.text);
    later(&ctx, &id).await;
    let r = call_with(&svc, report("agent-heartbeat", &new, 2)).await;
    assert_eq!(r.status, StatusCode::OK, "new works: {}", r.text);
    later(&ctx, &id).await;
    let r = call_with(&svc, report("agent-heartbeat", &old, 2)).await;
    r.problem(401);

    // A delete, once accepted, revokes the credential.
    let r = api
        .call(Req::load("delete-cluster").path(&format!("/v1/clusters/{id}")))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let c = ctx.store.find_cluster(&id).await.unwrap().unwrap();
    assert_eq!(
        (c.agent_credential_hash, c.agent_next_credential_hash),
        (None, None)
    );
    later(&ctx, &id).await;
    let r = call_with(&svc, report("agent-heartbeat", &new, 2)).await;
    r.problem(401);
    let r = call_with(&svc, rotate(&new)).await;
    r.problem(401);
}

#[tokio::test(flavor = "multi_thread")]
async fn registration_after_the_deadline_is_gone() {
    let (_api, ctx) = setup().await;
    let svc = service(ctx.clone());
    let (id, op) = create(&ctx, "late").await;
    configuring(&ctx, &id, &op, time::Duration::seconds(-1)).await;
    let token = registration_token(SECRET.as_bytes(), &id);
    let r = call_with(&svc, report("agent-register", &token, 2)).await;
    assert_eq!(r.status, StatusCode::GONE, "{}", r.text);
    assert!(
        r.body["detail"].as_str().unwrap().contains("deadline"),
        "{}",
        r.text
    );
    assert!(
        ctx.store
            .find_cluster(&id)
            .await
            .unwrap()
            .unwrap()
            .agent_registered_at
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_templates_need_the_token_secret() {
    let api = Api::new().await;
    let text =
        std::fs::read_to_string(common::workspace().join("functions/api/tests/fixtures/agent-test.toml"))
            .unwrap();
    let t = Template::from_toml(&text).unwrap();
    api.ctx
        .store
        .put_template(&t.manifest, &"1".repeat(64), "k")
        .await
        .unwrap();
    let body = json!({"name": "nosecret", "template": {"name": "agent-test", "version": "1.0.0"},
        "provider": "aws", "region": "us-east-1"});
    let r = api.call(Api::create_req("nosecret").body(&body)).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(ctx_has_no_clusters(&api).await, "nothing written");
}

async fn ctx_has_no_clusters(api: &Api) -> bool {
    let (list, _) = api
        .ctx
        .store
        .list_clusters(&"acme".parse().unwrap(), None, 10, None)
        .await
        .unwrap();
    list.is_empty()
}

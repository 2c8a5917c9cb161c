//! Cluster agent registration and heartbeats: valid, reused, wrong token, deadline passed, and the
//! `AgentReady` event that lets the status function finish the create.

use crate::common;

use common::{Api, Req, call_with};
use lambda_http::http::StatusCode;
use serde_json::json;
use strato_api::{Config, Ctx, service};
use strato_domain::agent::registration_token;
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::messages::ControlEvent;
use strato_domain::model::{ClusterState, OperationStatus};
use strato_domain::template::Template;
use strato_domain::ts;

const SECRET: &str = "dev-agent-secret";

async fn setup() -> (Api, Ctx) {
    let api = Api::new().await;
    let prefix = api.env.names.prefix().to_owned();
    let config = Config::from_lookup(|k| match k {
        "STRATO_RESOURCE_PREFIX" => Some(prefix.clone()),
        "STRATO_AGENT_TOKEN_SECRET" => Some(SECRET.into()),
        _ => None,
    })
    .unwrap();
    let ctx = Ctx::new(&api.env.aws, config).await.unwrap();
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

async fn control_events(api: &Api, ctx: &Ctx) -> Vec<ControlEvent> {
    let out = api
        .env
        .aws
        .sqs
        .receive_message()
        .queue_url(&ctx.queues.events)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    out.messages()
        .iter()
        .map(|m| serde_json::from_str(m.body().unwrap()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn registration_and_heartbeats() {
    let (api, ctx) = setup().await;
    let svc = service(ctx.clone());
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
    assert_eq!(r.status, StatusCode::CONFLICT, "heartbeat before registration");

    // Registered, but only 1 of 2 nodes Ready: no event yet.
    let r = call_with(&svc, report("agent-register", &token, 1)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["nodes_requested"], 2);
    assert!(control_events(&api, &ctx).await.is_empty());
    let c = ctx.store.find_cluster(&id).await.unwrap().unwrap();
    assert!(c.agent_registered_at.is_some() && c.agent_last_seen.is_some());

    let r = call_with(&svc, report("agent-register", &token, 2)).await;
    assert_eq!(
        r.status,
        StatusCode::CONFLICT,
        "the token registers once: {}",
        r.text
    );

    let r = call_with(&svc, report("agent-heartbeat", &token, 2)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let events = control_events(&api, &ctx).await;
    assert_eq!(
        events,
        vec![ControlEvent::AgentReady {
            operation_id: op,
            cluster_id: id.clone(),
            nodes_ready: 2
        }]
    );
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

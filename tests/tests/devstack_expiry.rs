//! Cluster expiry and lifecycle notifications end to end through devstack (issue 22): a cluster created to
//! expire a minute later is built, told about (`cluster.expiring`), deleted by the scheduler on time (the
//! sweep, and so expiry, runs every 2 s here), and every step reaches the tenant's webhook signed the
//! Standard Webhooks way (verified here); the audit log names the scheduler as the one who deleted it.
//! Everything is asked and observed through the public API, as a tenant would.

mod devstack_support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use devstack_support::fixtures;
use devstack_support::receiver::{Delivery, Receiver};
use serde_json::{Value, json};
use strato_devstack::client::Client;
use strato_devstack::{Devstack, DevstackConfig};
use strato_domain::ts;

const TENANT: &str = "expiring";
// Standard Webhooks form: `whsec_` + base64 of the key (24 bytes here).
const SECRET: &str = "whsec_c3RyYXRvLWV4cGlyeS1lMmUta2V5LTAwMDE=";
const LIFETIME: time::Duration = time::Duration::seconds(75);

async fn start() -> Devstack {
    let fixtures = fixtures();
    devstack_support::start(DevstackConfig {
        extra_templates: vec![(fixtures.join("vpc-sg"), fixtures)],
        sweep_rate: Duration::from_secs(2),
        sweep_grace: Duration::from_secs(3),
        ..devstack_support::config("ex").await
    })
    .await
}

fn say(what: &str) {
    eprintln!("[devstack_expiry] {what}");
}

/// The deliveries of event `kind` about operation `op`.
fn about_op<'a>(all: &'a [Delivery], kind: &str, op: &str) -> Vec<&'a Delivery> {
    all.iter()
        .filter(|d| d.envelope.kind == kind && d.envelope.data["operation_id"] == op)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expiring_cluster_is_deleted_on_time_and_its_events_arrive_signed() {
    let t0 = Instant::now();
    let stack = start().await;
    let api = Client::new(&stack.endpoints.http_api).with_token(stack.token(TENANT));
    let receiver = Receiver::start().await;

    // The tenant subscribes to every event (no `events` list) through the API.
    let r = api
        .request(
            reqwest::Method::PUT,
            "/v1/webhook",
            Some(&json!({"url": receiver.url, "secret": SECRET})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text);

    // A cluster that is to live 75 s.
    let expires_at = ts::now() + LIFETIME;
    let (cluster, create, answer) = api
        .create_cluster(&json!({
            "name": "short-lived",
            "template": {"name": "fixture-vpc-sg", "version": "0.1.0"},
            "provider": "aws", "region": "us-east-1",
            "variables": {"tags": {"team": "platform"}},
            "expires_at": ts::format(expires_at),
        }))
        .await
        .unwrap();
    let shown = answer.body["cluster"]["expires_at"]
        .as_str()
        .expect("expires_at shown");
    assert_eq!(
        ts::parse(shown).unwrap().unix_timestamp(),
        expires_at.unix_timestamp()
    );
    say(&format!("created {cluster}, expiring at {shown}"));
    let done = api
        .wait_operation(&create, Duration::from_secs(240))
        .await
        .unwrap();
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(
        ts::now() < expires_at,
        "the create took longer than the cluster's life: raise LIFETIME"
    );

    // The scheduler deletes it once due, and not before.
    let gone = api
        .wait_cluster_state(&cluster, &["DELETED"], Duration::from_secs(300))
        .await
        .unwrap();
    say(&format!("DELETED after {:?}", t0.elapsed()));
    let delete = &gone["last_operation"];
    assert_eq!(delete["kind"], "delete", "{gone}");
    assert_eq!(delete["status"], "succeeded", "{gone}");
    let delete_id = delete["id"].as_str().unwrap().to_owned();
    let op = api.get(&format!("/v1/operations/{delete_id}")).await.unwrap();
    assert_eq!(op.body["requested_by"], "strato:scheduler", "{}", op.text);
    let queued_at = ts::parse(op.body["created_at"].as_str().unwrap()).unwrap();
    assert!(
        queued_at >= expires_at,
        "deleted early: {queued_at} < {expires_at}"
    );
    assert!(
        queued_at - expires_at < time::Duration::seconds(30),
        "deleted late: queued {queued_at}, due {expires_at}"
    );

    // Every step reached the webhook, signed (checked by `deliveries`), each event under its own id.
    let want = |d: &[Delivery]| !about_op(d, "operation.succeeded", &delete_id).is_empty();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !want(&receiver.deliveries(SECRET)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let all = receiver.deliveries(SECRET);
    let kinds: Vec<&str> = all.iter().map(|d| d.envelope.kind.as_str()).collect();
    say(&format!("{} deliveries: {kinds:?}", all.len()));
    for (kind, op) in [
        ("operation.started", &create),
        ("operation.succeeded", &create),
        ("operation.started", &delete_id),
        ("operation.succeeded", &delete_id),
    ] {
        assert!(
            !about_op(&all, kind, op).is_empty(),
            "no {kind} for {op}: {kinds:?}"
        );
    }
    let by_scheduler = about_op(&all, "operation.succeeded", &delete_id)[0];
    assert_eq!(by_scheduler.envelope.data["requested_by"], "strato:scheduler");
    let expiring: Vec<&Delivery> = all
        .iter()
        .filter(|d| d.envelope.kind == "cluster.expiring")
        .collect();
    assert!(!expiring.is_empty(), "no cluster.expiring: {kinds:?}");
    assert_eq!(expiring[0].envelope.data["cluster_id"], cluster.as_str());
    let states: BTreeSet<&str> = all
        .iter()
        .filter(|d| {
            d.envelope.kind == "cluster.state_changed" && d.envelope.data["cluster_id"] == cluster.as_str()
        })
        .filter_map(|d| d.envelope.data["state"].as_str())
        .collect();
    assert!(
        states.contains("ACTIVE") && states.contains("DELETED"),
        "{states:?}"
    );
    // A redelivery keeps its id; distinct events never share one.
    let mut by_id: std::collections::BTreeMap<&str, &Value> = Default::default();
    for d in &all {
        let body = by_id.entry(d.id.as_str()).or_insert(&d.envelope.data);
        assert_eq!(*body, &d.envelope.data, "two events under {}", d.id);
    }

    // The audit log says who did what: the tenant created it, the scheduler deleted it.
    let audit = api.get(&format!("/v1/audit?cluster={cluster}")).await.unwrap();
    assert_eq!(audit.status, 200, "{}", audit.text);
    let entries = audit.body["entries"].as_array().cloned().unwrap_or_default();
    let has = |actor: &str, action: &str| {
        entries
            .iter()
            .any(|e| e["actor"].as_str().is_some_and(|p| p.starts_with(actor)) && e["action"] == action)
    };
    assert!(has("dev-", "cluster.create"), "{}", audit.text);
    assert!(has("strato:scheduler", "cluster.expire"), "{}", audit.text);
    assert!(has("strato:dispatcher", "operation.dispatch"), "{}", audit.text);
    say(&format!("done in {:?}", t0.elapsed()));
}

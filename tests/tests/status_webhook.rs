//! Tenant drift webhooks against moto and a local HTTP receiver that checks every call the way a tenant
//! would: the HMAC signature over timestamp and body, the timestamp's freshness, the headers and the body.
//! Retries, failures (recorded, never blocking the result) and the cases that call nothing.

#[path = "flow_support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsEvent;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use strato_domain::model::{Cluster, ClusterState, DriftPolicy, OperationKind, OperationStatus};
use strato_domain::webhook::{self, DriftEvent, Webhook};
use strato_status::Ctx;
use strato_status::webhook::WebhookPolicy;
use support::{World, failures, load_event, patch_bodies};

const SECRET: &str = "whsec-test-5f1c2d3e9a7b";

/// One call as the receiver saw it.
#[derive(Debug, Clone)]
struct Call {
    headers: HeaderMap,
    body: Bytes,
    at: time::OffsetDateTime,
}

/// A local webhook receiver answering with `answers` in turn (the last one repeats).
struct Receiver {
    url: String,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Receiver {
    async fn start(answers: Vec<StatusCode>) -> Self {
        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let seen = calls.clone();
        let app = axum::Router::new().route(
            "/hooks/strato",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let seen = seen.clone();
                let answers = answers.clone();
                async move {
                    let mut calls = seen.lock().unwrap();
                    let n = calls.len();
                    calls.push(Call {
                        headers,
                        body,
                        at: time::OffsetDateTime::now_utc(),
                    });
                    answers[n.min(answers.len() - 1)]
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            url: format!("http://{addr}/hooks/strato?channel=ops"),
            calls,
        }
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

struct Bed {
    w: World,
    status: Ctx,
}

impl Bed {
    async fn new() -> Self {
        let w = World::new().await;
        let mut status = Ctx::new(
            strato_status::Config {
                names: w.env.names.clone(),
            },
            &w.env.aws,
        )
        .await
        .unwrap();
        // Quick retries keep the test short; the logic is the production one.
        status.webhook = WebhookPolicy {
            attempt_timeout: Duration::from_secs(2),
            attempts: 3,
            min_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
        };
        Self { w, status }
    }

    async fn set_webhook(&self, url: &str) {
        let hook = Webhook::new(url, SECRET).unwrap();
        self.w
            .store
            .set_tenant_webhook(&"acme".parse().unwrap(), Some(&hook))
            .await
            .unwrap();
    }

    async fn deliver(&self, event: SqsEvent) {
        let resp = strato_status::handle(&self.status, event).await.unwrap();
        assert!(failures(&resp).is_empty(), "{resp:?}");
    }

    /// An ACTIVE cluster (its create reported success) with `policy`.
    async fn active(&self, name: &str, policy: DriftPolicy) -> Cluster {
        let (cluster, create) = self.w.new_cluster("acme", name).await;
        self.w.dispatch(&[&create]).await;
        self.deliver(self.runner(&create.operation_id, "succeeded", &|_| {}).await)
            .await;
        let mut c = self.w.cluster(&cluster).await;
        assert_eq!(c.state(), ClusterState::Active);
        c.drift_policy = policy;
        self.w.store.save_cluster(&mut c).await.unwrap();
        self.w.take_jobs().await;
        c
    }

    async fn runner(
        &self,
        op: &strato_domain::ids::OperationId,
        name: &str,
        f: &(dyn Fn(&mut Value) + Sync),
    ) -> SqsEvent {
        let token = self.w.op(op).await.fencing_token.unwrap();
        let op = op.to_string();
        patch_bodies(load_event(&format!("status/runner-{name}.json")), move |v| {
            v["operation_id"] = json!(op);
            v["fencing_token"] = json!(token);
            f(v);
        })
    }

    /// Runs one drift check on `c` that reports `name` (`succeeded-drift`, or `succeeded` = clean); returns
    /// the check's id and how long the status function took.
    async fn check(&self, c: &Cluster, name: &str) -> (strato_domain::ids::OperationId, Duration) {
        let op = self.w.new_op(c, OperationKind::DriftCheck).await;
        self.w.dispatch(&[&op]).await;
        let event = self
            .runner(&op.operation_id, name, &|v| {
                if v["drift"].is_null() {
                    v["drift"] = json!([]);
                }
            })
            .await;
        let t = Instant::now();
        self.deliver(event).await;
        (op.operation_id, t.elapsed())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_under_notify_calls_the_tenants_webhook_signed() {
    let b = Bed::new().await;
    let rx = Receiver::start(vec![StatusCode::NO_CONTENT]).await;
    b.set_webhook(&rx.url).await;
    let c = b.active("prod", DriftPolicy::Notify).await;

    let (check, _) = b.check(&c, "succeeded-drift").await;
    let calls = rx.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    let h = |k: &str| {
        call.headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    // What a tenant's receiver does: verify the signature over the raw body, refuse stale timestamps.
    let sig = h(webhook::SIGNATURE_HEADER);
    let t = webhook::verify(
        SECRET.as_bytes(),
        sig,
        &call.body,
        call.at,
        webhook::DEFAULT_TOLERANCE_SECS,
    )
    .unwrap_or_else(|e| panic!("signature {sig}: {e}"));
    assert!((call.at.unix_timestamp() - t).abs() <= 5);
    assert!(webhook::verify(b"not-the-secret-at-all", sig, &call.body, call.at, 300).is_err());
    assert!(
        webhook::verify(
            SECRET.as_bytes(),
            sig,
            &call.body,
            call.at + time::Duration::minutes(10),
            300
        )
        .is_err(),
        "a replay later is refused"
    );
    assert_eq!(h(webhook::EVENT_HEADER), webhook::DRIFT_DETECTED);
    assert_eq!(h(webhook::DELIVERY_HEADER), check.as_str());
    assert_eq!(h("content-type"), "application/json");

    let event: DriftEvent = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(event.kind, webhook::DRIFT_DETECTED);
    assert_eq!(event.cluster_id, c.cluster_id);
    assert_eq!(event.cluster_name, c.spec.name.to_string());
    assert_eq!(event.operation_id, check);
    assert_eq!(event.policy, DriftPolicy::Notify);
    assert_eq!(event.changed_resources.len(), 1);
    assert_eq!(event.changed_resources[0].address, "aws_security_group.nodes");
    assert_eq!(event.changed_resources[0].actions, vec!["update".to_owned()]);
    let cluster = b.w.cluster(&c).await;
    assert_eq!(Some(event.checked_at), cluster.drift.checked_at);
    assert!(cluster.drift.drifted);

    let op = b.w.op(&check).await;
    assert_eq!(op.status, OperationStatus::Succeeded);
    assert!(
        op.notes.iter().any(
            |n| n.contains("webhook drift.detected delivered to http://127.0.0.1")
                && n.contains("HTTP 204, 1 attempt")
        ),
        "{:?}",
        op.notes
    );
    assert!(
        op.notes
            .iter()
            .all(|n| !n.contains("channel=ops") && !n.contains(SECRET)),
        "{:?}",
        op.notes
    );

    // A duplicate of the runner's result calls nobody again (the end was already applied).
    b.deliver(b.runner(&check, "succeeded-drift", &|_| {}).await)
        .await;
    assert_eq!(rx.calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_receiver_is_retried_then_recorded_and_blocks_nothing() {
    let b = Bed::new().await;
    // Fails once, then accepts: delivered on the second attempt, each attempt signed afresh.
    let flaky = Receiver::start(vec![StatusCode::SERVICE_UNAVAILABLE, StatusCode::OK]).await;
    b.set_webhook(&flaky.url).await;
    let c = b.active("flaky", DriftPolicy::Notify).await;
    let (check, _) = b.check(&c, "succeeded-drift").await;
    let calls = flaky.calls();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let sig = call.headers[webhook::SIGNATURE_HEADER].to_str().unwrap();
        webhook::verify(SECRET.as_bytes(), sig, &call.body, call.at, 300).unwrap();
    }
    let notes = b.w.op(&check).await.notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("delivered") && n.contains("2 attempts")),
        "{notes:?}"
    );

    // Always failing: three attempts, then the failure is on the record; the check itself succeeded and
    // the cluster's lock was handed on before the webhook was tried.
    let down = Receiver::start(vec![StatusCode::INTERNAL_SERVER_ERROR]).await;
    b.set_webhook(&down.url).await;
    let (check, took) = b.check(&c, "succeeded-drift").await;
    assert_eq!(down.calls().len(), 3);
    assert!(
        took < b.status.webhook.budget() + Duration::from_secs(20),
        "{took:?}"
    );
    let op = b.w.op(&check).await;
    assert_eq!(op.status, OperationStatus::Succeeded);
    assert!(
        op.notes
            .iter()
            .any(|n| n.contains("NOT delivered") && n.contains("after 3 attempts") && n.contains("HTTP 500")),
        "{:?}",
        op.notes
    );
    assert_eq!(b.w.store.cluster_lock(&c.cluster_id).await.unwrap(), None);

    // A client error is final: not retried.
    let refusing = Receiver::start(vec![StatusCode::BAD_REQUEST]).await;
    b.set_webhook(&refusing.url).await;
    b.check(&c, "succeeded-drift").await;
    assert_eq!(refusing.calls().len(), 1);

    // Nobody listening: connection refused on every attempt, recorded, bounded.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    b.set_webhook(&format!("http://{closed}/hooks")).await;
    let (check, took) = b.check(&c, "succeeded-drift").await;
    assert!(
        took < b.status.webhook.budget() + Duration::from_secs(20),
        "{took:?}"
    );
    let notes = b.w.op(&check).await.notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("NOT delivered") && n.contains("3 attempts")),
        "{notes:?}"
    );
    assert!(b.w.cluster(&c).await.drift.drifted);
}

#[tokio::test(flavor = "multi_thread")]
async fn clean_checks_reconcile_and_tenants_without_a_webhook_call_nothing() {
    let b = Bed::new().await;
    let rx = Receiver::start(vec![StatusCode::OK]).await;

    // No webhook configured: drift is recorded, nothing is called, nothing noted.
    let c = b.active("quiet", DriftPolicy::Notify).await;
    let (check, _) = b.check(&c, "succeeded-drift").await;
    assert!(b.w.cluster(&c).await.drift.drifted);
    assert!(b.w.op(&check).await.notes.is_empty());

    b.set_webhook(&rx.url).await;
    // A clean check is no news.
    let (check, _) = b.check(&c, "succeeded").await;
    assert!(!b.w.cluster(&c).await.drift.drifted);
    assert!(b.w.op(&check).await.notes.is_empty());
    // `reconcile` repairs instead of notifying.
    let r = b.active("healing", DriftPolicy::Reconcile).await;
    b.check(&r, "succeeded-drift").await;
    let ops = b.w.store.list_operations(&r.cluster_id).await.unwrap();
    assert!(ops.iter().any(|o| o.kind == OperationKind::Update));
    assert!(rx.calls().is_empty(), "{:?}", rx.calls());

    // Removing the webhook stops the calls.
    b.w.store
        .set_tenant_webhook(&"acme".parse().unwrap(), None)
        .await
        .unwrap();
    assert_eq!(
        b.w.store.tenant_webhook(&"acme".parse().unwrap()).await.unwrap(),
        None
    );
}

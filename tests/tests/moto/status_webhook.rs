//! Tenant drift webhooks against moto and a local HTTP receiver that checks every call the way a tenant
//! would: the HMAC signature over timestamp and body, the timestamp's freshness, the headers and the body.
//! The status function queues the notification on the `webhooks` queue; the webhooks function posts it
//! (each redelivery of the message is one attempt, emulated here). Retries, failures (recorded, never
//! blocking the result), a hanging receiver that no longer holds up the status batch (issue 15 defect 7)
//! and the cases that call nothing.

use crate::flow_support as support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_lambda_events::sqs::SqsEvent;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use strato_domain::model::{Cluster, ClusterState, DriftPolicy, OperationKind, OperationStatus};
use strato_domain::webhook::{self, DriftEvent, Webhook};
use strato_status::Ctx;
use strato_webhooks::DeliveryPolicy;
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
        Self::slow(answers, Duration::ZERO).await
    }

    /// Like [`Receiver::start`], each answer after `delay` (a receiver that hangs).
    async fn slow(answers: Vec<StatusCode>, delay: Duration) -> Self {
        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let seen = calls.clone();
        let app = axum::Router::new().route(
            "/hooks/strato",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let seen = seen.clone();
                let answers = answers.clone();
                async move {
                    let answer = {
                        let mut calls = seen.lock().unwrap();
                        let n = calls.len();
                        calls.push(Call {
                            headers,
                            body,
                            at: time::OffsetDateTime::now_utc(),
                        });
                        answers[n.min(answers.len() - 1)]
                    };
                    tokio::time::sleep(delay).await;
                    answer
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
    webhooks: strato_webhooks::Ctx,
}

impl Bed {
    async fn new() -> Self {
        let w = World::new().await;
        let status = w.status_ctx().await;
        let mut webhooks = strato_webhooks::Ctx::new(
            strato_webhooks::Config {
                names: w.env.names.clone(),
                // The receivers here listen on http://127.0.0.1, as devstack's do.
                egress: strato_domain::webhook::Egress::DEVSTACK,
                operation_retention_days: strato_aws::store::DEFAULT_OPERATION_RETENTION_DAYS,
            },
            &w.env.aws,
        )
        .await
        .unwrap();
        // A short attempt timeout and three attempts keep the test short; the logic is the production one.
        webhooks.policy = DeliveryPolicy {
            attempt_timeout: Duration::from_secs(2),
            max_attempts: 3,
        };
        Self { w, status, webhooks }
    }

    /// What the status function queued on the `webhooks` queue (taken off it).
    async fn queued(&self) -> SqsEvent {
        self.w.take(&self.w.queues.webhooks).await
    }

    /// Runs the webhooks function on `event` as SQS would: records it hands back are delivered again
    /// (receive count + 1) until none is, or the queue would have moved them to the DLQ. The records left
    /// for the DLQ.
    async fn post(&self, mut event: SqsEvent) -> Vec<String> {
        for _ in 0..self.webhooks.policy.max_attempts {
            let resp = strato_webhooks::handle(&self.webhooks, event.clone())
                .await
                .unwrap();
            let again = failures(&resp);
            event
                .records
                .retain(|r| again.contains(r.message_id.as_ref().unwrap()));
            for r in &mut event.records {
                let n: u32 = r.attributes["ApproximateReceiveCount"].parse().unwrap();
                r.attributes
                    .insert("ApproximateReceiveCount".into(), (n + 1).to_string());
            }
            if event.records.is_empty() {
                break;
            }
        }
        event
            .records
            .iter()
            .map(|r| r.message_id.clone().unwrap())
            .collect()
    }

    /// Posts everything queued; nothing may be left for the DLQ.
    async fn post_queued(&self) {
        let left = self.post(self.queued().await).await;
        assert!(left.is_empty(), "left for the DLQ: {left:?}");
    }

    async fn set_webhook(&self, url: &str) {
        // Drift only: these tests are about the drift notification (the lifecycle events of the same
        // check are filtered out by the subscription, which this also exercises).
        let hook = Webhook::new(url, SECRET)
            .unwrap()
            .with_events(Some(vec![webhook::EventType::DriftDetected]));
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
            support::prove(v);
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
    assert!(rx.calls().is_empty(), "queued, not called by the status function");
    let queued = b.queued().await;
    assert_eq!(queued.records.len(), 1);
    assert!(b.post(queued.clone()).await.is_empty());
    let calls = rx.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    let h = |k: &str| {
        call.headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    // What a tenant's receiver does (Standard Webhooks): verify the signature over id, timestamp and the
    // raw body, refuse stale timestamps.
    let (id, ts, sig) = (
        h(webhook::ID_HEADER),
        h(webhook::TIMESTAMP_HEADER),
        h(webhook::SIGNATURE_HEADER),
    );
    let key = webhook::signing_key(SECRET).unwrap();
    let t = webhook::verify(
        &key,
        id,
        ts,
        sig,
        &call.body,
        call.at,
        webhook::DEFAULT_TOLERANCE_SECS,
    )
    .unwrap_or_else(|e| panic!("signature {sig}: {e}"));
    assert!((call.at.unix_timestamp() - t).abs() <= 5);
    assert!(webhook::verify(b"not-the-secret-at-all", id, ts, sig, &call.body, call.at, 300).is_err());
    assert!(
        webhook::verify(
            &key,
            id,
            ts,
            sig,
            &call.body,
            call.at + time::Duration::minutes(10),
            300
        )
        .is_err(),
        "a replay later is refused"
    );
    assert_eq!(
        id,
        webhook::event_id(webhook::EventType::DriftDetected, check.as_str())
    );
    assert_eq!(h("content-type"), "application/json");

    let envelope: webhook::Envelope = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(envelope.kind, webhook::DRIFT_DETECTED);
    let event: DriftEvent = serde_json::from_value(envelope.data).unwrap();
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
                && n.contains("(attempt 1 of 3)")
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

    // A duplicate of the queued message (at least once) finds the delivery's note final: no second call,
    // no second note.
    let notes = op.notes.clone();
    assert!(b.post(queued).await.is_empty());
    assert_eq!(rx.calls().len(), 1);
    assert_eq!(b.w.op(&check).await.notes, notes);

    // A duplicate of the runner's result queues nothing again (the end was already applied).
    b.deliver(b.runner(&check, "succeeded-drift", &|_| {}).await)
        .await;
    assert!(b.queued().await.records.is_empty());
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
    b.post_queued().await;
    let calls = flaky.calls();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let h = |k: &str| call.headers[k].to_str().unwrap();
        let key = webhook::signing_key(SECRET).unwrap();
        let id = h(webhook::ID_HEADER);
        let (ts, sig) = (h(webhook::TIMESTAMP_HEADER), h(webhook::SIGNATURE_HEADER));
        webhook::verify(&key, id, ts, sig, &call.body, call.at, 300).unwrap();
        assert_eq!(
            id,
            webhook::event_id(webhook::EventType::DriftDetected, check.as_str()),
            "the same event id"
        );
    }
    let notes = b.w.op(&check).await.notes;
    assert_eq!(notes.len(), 1, "one note per delivery, updated: {notes:?}");
    assert!(
        notes[0].contains("delivered") && notes[0].contains("(attempt 2 of 3)"),
        "{notes:?}"
    );

    // Always failing: three attempts, then the failure is on the record; the check itself succeeded and
    // the cluster's lock was handed on before anything was tried.
    let down = Receiver::start(vec![StatusCode::INTERNAL_SERVER_ERROR]).await;
    b.set_webhook(&down.url).await;
    let (check, took) = b.check(&c, "succeeded-drift").await;
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(b.w.store.cluster_lock(&c.cluster_id).await.unwrap(), None);
    b.post_queued().await;
    assert_eq!(down.calls().len(), 3);
    let op = b.w.op(&check).await;
    assert_eq!(op.status, OperationStatus::Succeeded);
    assert_eq!(op.notes.len(), 1, "{:?}", op.notes);
    assert!(
        op.notes[0].contains("NOT delivered")
            && op.notes[0].contains("(attempt 3 of 3; no more attempts)")
            && !said(&op.notes[0]).contains("500"),
        "{:?}",
        op.notes
    );

    // A client error is final: not retried.
    let refusing = Receiver::start(vec![StatusCode::BAD_REQUEST]).await;
    b.set_webhook(&refusing.url).await;
    b.check(&c, "succeeded-drift").await;
    b.post_queued().await;
    assert_eq!(refusing.calls().len(), 1);

    // A redirect is not followed (the signed body stays with the receiver the tenant named).
    let moved = Receiver::start(vec![StatusCode::TEMPORARY_REDIRECT]).await;
    b.set_webhook(&moved.url).await;
    let (check, _) = b.check(&c, "succeeded-drift").await;
    b.post_queued().await;
    assert_eq!(moved.calls().len(), 1);
    let notes = b.w.op(&check).await.notes;
    // Generic (issue 16 finding 2): not followed, and the note says only that it was not delivered.
    assert!(
        notes[0].contains("NOT delivered") && !said(&notes[0]).contains("307"),
        "{notes:?}"
    );

    // Nobody listening: connection refused on every attempt, recorded.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    b.set_webhook(&format!("http://{closed}/hooks")).await;
    let (check, took) = b.check(&c, "succeeded-drift").await;
    assert!(took < Duration::from_secs(10), "{took:?}");
    b.post_queued().await;
    let notes = b.w.op(&check).await.notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("NOT delivered") && n.contains("attempt 3 of 3")),
        "{notes:?}"
    );
    assert!(b.w.cluster(&c).await.drift.drifted);
}

/// Issue 15 defect 7: the status function called the tenant's webhook inside its SQS batch (up to ~13 s per
/// webhook), so one tenant's slow receiver delayed every tenant's state changes. Now the batch only queues
/// the notification: it returns at once with the result and hand-off saved, and the hanging receiver costs
/// the webhooks function one short attempt per delivery.
#[tokio::test(flavor = "multi_thread")]
async fn a_slow_receiver_no_longer_holds_up_the_status_batch() {
    let b = Bed::new().await;
    let hanging = Receiver::slow(vec![StatusCode::OK], Duration::from_secs(60)).await;
    b.set_webhook(&hanging.url).await;
    let c = b.active("slow", DriftPolicy::Notify).await;

    let (check, took) = b.check(&c, "succeeded-drift").await;
    // Waiting for the hanging receiver would take at least one delivery attempt (the webhooks function's
    // attempt timeout, 5 s) — a margin against a loaded machine, where the batch's own moto calls took 2.2 s
    // once.
    assert!(
        took < strato_webhooks::deliver::DeliveryPolicy::default().attempt_timeout,
        "the status batch waited for the receiver: {took:?}"
    );
    assert!(hanging.calls().is_empty(), "not called from the status batch");
    assert_eq!(b.w.op(&check).await.status, OperationStatus::Succeeded);
    assert!(b.w.cluster(&c).await.drift.drifted);
    assert_eq!(b.w.store.cluster_lock(&c.cluster_id).await.unwrap(), None);
    let queued = b.queued().await;
    assert_eq!(queued.records.len(), 1, "the delivery is queued");
    let msg: strato_domain::messages::WebhookMessage =
        serde_json::from_str(queued.records[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(
        msg.delivery_id,
        webhook::event_id(webhook::EventType::DriftDetected, check.as_str())
    );
    assert_eq!(msg.event, webhook::DRIFT_DETECTED);

    // The webhooks function gives the receiver one attempt of 2 s, then hands the record back.
    let t = Instant::now();
    let resp = strato_webhooks::handle(&b.webhooks, queued).await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(failures(&resp).len(), 1, "retried later");
    let notes = b.w.op(&check).await.notes;
    assert!(
        notes[0].contains("not delivered: the receiver did not answer with 2xx (attempt 1 of 3); will retry"),
        "{notes:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn clean_checks_reconcile_and_tenants_without_a_webhook_call_nothing() {
    let b = Bed::new().await;
    let rx = Receiver::start(vec![StatusCode::OK]).await;

    // No webhook configured: drift is recorded, nothing is called, nothing noted.
    let c = b.active("quiet", DriftPolicy::Notify).await;
    let (check, _) = b.check(&c, "succeeded-drift").await;
    b.post_queued().await;
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
    assert!(b.queued().await.records.is_empty(), "no notification queued");
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

/// A note without its timestamp: the digits of its fractional seconds may spell any status code.
fn said(note: &str) -> &str {
    note.split_once("Z: ").map_or(note, |(_, text)| text)
}

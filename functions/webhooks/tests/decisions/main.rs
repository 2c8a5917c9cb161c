//! The webhooks consumer's decisions on fakes (fast tier): retry or give up, the note per delivery id, what a
//! duplicate message does, and what becomes of a batch.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use serde_json::json;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::WebhookMessage;
use strato_domain::model::{Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Clock, PortError};
use strato_domain::webhook::{DRIFT_DETECTED, EventType, Webhook};
use strato_fakes::{FakeClock, FakeStore};
use strato_webhooks::{Attempt, Deliveries, Outcome, Receivers, backoff_secs};

/// One POST as the fake receiver saw it.
#[derive(Debug, Clone)]
struct Post {
    url: String,
    event: String,
    delivery_id: String,
}

/// Receivers in memory: each tenant's webhook, the answers to give in turn (then 200s), the posts made and
/// the back-offs asked for.
#[derive(Debug, Clone, Default)]
struct FakeReceivers {
    hooks: Arc<Mutex<HashMap<TenantId, Webhook>>>,
    answers: Arc<Mutex<VecDeque<Attempt>>>,
    posts: Arc<Mutex<Vec<Post>>>,
    delays: Arc<Mutex<Vec<(String, i32)>>>,
}

impl Receivers for FakeReceivers {
    async fn webhook_of(&self, tenant: &TenantId) -> Result<Option<Webhook>, PortError> {
        Ok(self.hooks.lock().unwrap().get(tenant).cloned())
    }

    async fn post(&self, hook: &Webhook, event: &str, delivery_id: &str, _body: &[u8]) -> Attempt {
        self.posts.lock().unwrap().push(Post {
            url: hook.url().to_owned(),
            event: event.to_owned(),
            delivery_id: delivery_id.to_owned(),
        });
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Attempt::Delivered { status: 200 })
    }

    async fn retry_after(&self, receipt_handle: &str, secs: i32) {
        self.delays
            .lock()
            .unwrap()
            .push((receipt_handle.to_owned(), secs));
    }
}

fn unavailable() -> Attempt {
    Attempt::Failed {
        status: Some(503),
        error: "the receiver answered HTTP 503".into(),
        retryable: true,
    }
}

struct World {
    store: FakeStore,
    receivers: FakeReceivers,
    clock: FakeClock,
    tenant: TenantId,
}

impl World {
    fn new() -> Self {
        let clock = FakeClock::default();
        let w = Self {
            store: FakeStore::new(clock.clone()),
            receivers: FakeReceivers::default(),
            clock,
            tenant: "acme".parse().unwrap(),
        };
        w.receivers.hooks.lock().unwrap().insert(
            w.tenant.clone(),
            Webhook::new("https://hooks.example.com/t/SECRETPATH", "0123456789abcdef0").unwrap(),
        );
        w
    }

    fn deliveries(&self) -> Deliveries<'_, FakeStore, FakeReceivers, FakeClock> {
        Deliveries {
            store: &self.store,
            receivers: &self.receivers,
            clock: &self.clock,
            max_attempts: 3,
        }
    }

    /// An ended drift check and the notification queued for it.
    fn notification(&self) -> WebhookMessage {
        let mut op = Operation::new(
            self.tenant.clone(),
            ClusterId::generate(),
            OperationKind::DriftCheck,
            self.clock.now(),
        );
        op.status = OperationStatus::Succeeded;
        self.store.put_operation(op.clone());
        WebhookMessage::event(
            self.tenant.clone(),
            Some(op.operation_id.clone()),
            EventType::DriftDetected,
            op.operation_id.as_str(),
            self.clock.now(),
            json!({"cluster_id": "cl-1"}),
        )
        .unwrap()
    }

    fn notes(&self, op: &Option<OperationId>) -> Vec<String> {
        self.store.operation(op.as_ref().unwrap()).unwrap().notes
    }

    fn posts(&self) -> Vec<Post> {
        self.receivers.posts.lock().unwrap().clone()
    }

    fn answer(&self, answers: Vec<Attempt>) {
        *self.receivers.answers.lock().unwrap() = answers.into();
    }
}

fn record(id: &str, body: String, receives: u32) -> SqsMessage {
    let mut r = SqsMessage::default();
    r.message_id = Some(id.to_owned());
    r.receipt_handle = Some(format!("rh-{id}"));
    r.body = Some(body);
    r.attributes
        .insert("ApproximateReceiveCount".into(), receives.to_string());
    r
}

#[tokio::test]
async fn a_delivery_is_posted_once_with_its_delivery_id_and_noted() {
    let w = World::new();
    let msg = w.notification();
    let d = w.deliveries();
    assert_eq!(d.deliver(&msg, 1).await.unwrap(), Outcome::Ack);
    let posts = w.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].delivery_id, msg.delivery_id);
    assert_eq!(posts[0].event, DRIFT_DETECTED);
    assert!(posts[0].url.contains("SECRETPATH"), "the real URL is called");
    let notes = w.notes(&msg.operation_id);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("webhook drift.detected delivered to https://hooks.example.com (attempt 1 of 3)"),
        "{notes:?}"
    );
    assert!(!notes[0].contains("SECRETPATH") && !notes[0].contains("0123456789abcdef0"));

    // A duplicate of the message (SQS is at least once) finds the delivery done: no second call.
    assert_eq!(d.deliver(&msg, 1).await.unwrap(), Outcome::Ack);
    assert_eq!(w.posts().len(), 1);
    assert_eq!(w.notes(&msg.operation_id), notes);
}

#[tokio::test]
async fn a_failing_receiver_is_retried_with_backoff_and_keeps_one_note_per_delivery() {
    let w = World::new();
    let msg = w.notification();
    let d = w.deliveries();
    w.answer(vec![unavailable(), unavailable()]);

    assert_eq!(
        d.deliver(&msg, 1).await.unwrap(),
        Outcome::RetryAfter(backoff_secs(1))
    );
    let notes = w.notes(&msg.operation_id);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("not delivered: the receiver did not answer with 2xx (attempt 1 of 3); will retry"),
        "{notes:?}"
    );

    assert_eq!(
        d.deliver(&msg, 2).await.unwrap(),
        Outcome::RetryAfter(backoff_secs(2))
    );
    let notes = w.notes(&msg.operation_id);
    assert_eq!(notes.len(), 1, "updated, not duplicated: {notes:?}");
    assert!(notes[0].contains("(attempt 2 of 3); will retry"), "{notes:?}");

    // The third attempt succeeds: the note says so, with the count.
    assert_eq!(d.deliver(&msg, 3).await.unwrap(), Outcome::Ack);
    let notes = w.notes(&msg.operation_id);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("delivered to https://hooks.example.com (attempt 3 of 3)"),
        "{notes:?}"
    );
    assert!(notes.iter().all(|n| n.contains(&msg.delivery_id)));
    assert_eq!(w.posts().len(), 3);
}

#[tokio::test]
async fn the_last_failed_attempt_gives_up_and_says_so() {
    let w = World::new();
    let msg = w.notification();
    let d = w.deliveries();
    w.answer(vec![unavailable(), unavailable(), unavailable()]);
    for attempt in 1..3 {
        assert!(matches!(
            d.deliver(&msg, attempt).await.unwrap(),
            Outcome::RetryAfter(_)
        ));
    }
    assert_eq!(
        d.deliver(&msg, 3).await.unwrap(),
        Outcome::Ack,
        "given up, not to the DLQ"
    );
    let notes = w.notes(&msg.operation_id);
    assert_eq!(notes.len(), 1, "{notes:?}");
    // The receiver's status is not shown (looked for between the note's time and its delivery tag: both may
    // contain "503" by chance).
    assert!(
        notes[0].contains(
            "NOT delivered to https://hooks.example.com: the receiver did not answer with 2xx (attempt 3 of 3; no more attempts)"
        ),
        "{notes:?}"
    );
    let said = &notes[0][notes[0].find("webhook").unwrap()..notes[0].find("(attempt").unwrap()];
    assert!(!said.contains("503") && !said.contains("HTTP"), "{notes:?}");
    // A straggling duplicate calls nobody after the final note.
    assert_eq!(d.deliver(&msg, 4).await.unwrap(), Outcome::Ack);
    assert_eq!(w.posts().len(), 3);
}

#[tokio::test]
async fn a_client_error_is_final_at_once() {
    let w = World::new();
    let msg = w.notification();
    w.answer(vec![Attempt::Failed {
        status: Some(400),
        error: "the receiver answered HTTP 400".into(),
        retryable: false,
    }]);
    assert_eq!(w.deliveries().deliver(&msg, 1).await.unwrap(), Outcome::Ack);
    let notes = w.notes(&msg.operation_id);
    assert!(
        notes[0].contains("NOT delivered") && notes[0].contains("(attempt 1 of 3; no more attempts)"),
        "{notes:?}"
    );
    assert_eq!(w.posts().len(), 1);
}

#[tokio::test]
async fn no_webhook_or_no_operation_sends_and_notes_nothing() {
    let w = World::new();
    let msg = w.notification();
    w.receivers.hooks.lock().unwrap().clear();
    assert_eq!(w.deliveries().deliver(&msg, 1).await.unwrap(), Outcome::Ack);
    assert!(w.notes(&msg.operation_id).is_empty());

    let mut gone = msg.clone();
    gone.operation_id = Some(OperationId::generate());
    assert_eq!(w.deliveries().deliver(&gone, 1).await.unwrap(), Outcome::Ack);
    assert!(w.posts().is_empty());
}

#[tokio::test]
async fn a_webhook_gets_only_the_events_it_subscribes_to() {
    let w = World::new();
    let msg = w.notification();
    let hook = w.receivers.hooks.lock().unwrap()[&w.tenant].clone();
    w.receivers.hooks.lock().unwrap().insert(
        w.tenant.clone(),
        hook.with_events(Some(vec![EventType::ClusterExpiring])),
    );
    assert_eq!(w.deliveries().deliver(&msg, 1).await.unwrap(), Outcome::Ack);
    assert!(w.posts().is_empty(), "drift.detected is not subscribed");
    assert!(w.notes(&msg.operation_id).is_empty());

    // An event no operation caused (cluster.expiring) is posted, with nothing to note it on.
    let expiring = WebhookMessage::event(
        w.tenant.clone(),
        None,
        EventType::ClusterExpiring,
        "cl-1/2026-11-23T00:00:00Z",
        w.clock.now(),
        json!({"cluster_id": "cl-1"}),
    )
    .unwrap();
    assert_eq!(w.deliveries().deliver(&expiring, 1).await.unwrap(), Outcome::Ack);
    let posts = w.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].event, "cluster.expiring");
    assert_eq!(posts[0].delivery_id, expiring.delivery_id);
}

#[tokio::test]
async fn a_batch_hands_back_retries_after_a_backoff_and_bad_bodies_for_the_dlq() {
    let w = World::new();
    let ok = w.notification();
    let flaky = w.notification();
    // Posts happen in batch order: `ok` is answered 200, `flaky` 503.
    w.answer(vec![Attempt::Delivered { status: 204 }, unavailable()]);
    let mut event = SqsEvent::default();
    event.records = vec![
        record("m1", serde_json::to_string(&ok).unwrap(), 1),
        record("m2", serde_json::to_string(&flaky).unwrap(), 2),
        record("m3", "{not json".into(), 1),
    ];
    let resp = w.deliveries().handle(event).await;
    let failed: Vec<_> = resp
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(failed, ["m2", "m3"]);
    assert_eq!(
        *w.receivers.delays.lock().unwrap(),
        [("rh-m2".to_owned(), backoff_secs(2))],
        "the retry backs off; the bad body waits for the visibility timeout, then the DLQ"
    );
    assert!(w.notes(&flaky.operation_id)[0].contains("(attempt 2 of 3); will retry"));
}

#[test]
fn deliveries_are_counted_by_outcome() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let rec = DebuggingRecorder::new();
    let snap = rec.snapshotter();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    metrics::with_local_recorder(&rec, || {
        rt.block_on(async {
            let w = World::new();
            let d = w.deliveries();
            // One delivery given up after three failed attempts, then one delivered at once.
            let msg = w.notification();
            w.answer(vec![unavailable(), unavailable(), unavailable()]);
            for attempt in 1..=3 {
                d.deliver(&msg, attempt).await.unwrap();
            }
            d.deliver(&w.notification(), 1).await.unwrap();
        })
    });
    let mut got: Vec<(String, u64)> = snap
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let key = key.key();
            let DebugValue::Counter(n) = value else {
                return None;
            };
            let labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            Some((format!("{}{{{}}}", key.name(), labels.join(",")), n))
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("WebhookDeliveries{outcome=delivered}".to_owned(), 1),
            ("WebhookDeliveries{outcome=failed}".to_owned(), 1),
            ("WebhookDeliveries{outcome=retrying}".to_owned(), 2),
        ]
    );
}

mod egress;

//! Cluster expiry on the in-memory fakes: the delete when due (never while an operation is open, once
//! across overlapping runs), the `cluster.expiring` event once per expiry time, filtered by subscription.

use strato_domain::expiry::{ExpiringEvent, ExpiryChange};
use strato_domain::ids::ClusterId;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::Clock;
use strato_domain::ts;
use strato_domain::webhook::{Envelope, EventType, Webhook, event_id};
use strato_scheduler::{DELETE_RETRY, Expirer, Report, SCHEDULER};
use time::{Duration, OffsetDateTime};

const NOTICE: Duration = Duration::hours(24);

/// Names this module's world.
struct Expiry;

type World = super::Hooked<Expiry>;

fn world() -> World {
    super::hooked(None)
}

impl World {
    fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    async fn run(&self) -> Report {
        let mut report = Report::default();
        let expirer = Expirer {
            store: &self.store,
            jobs: &self.jobs,
            webhooks: &self.webhooks,
            audit: &self.audit,
            notice: NOTICE,
            batch: 50,
        };
        expirer.run(self.now(), &mut report).await.unwrap();
        report
    }

    /// An ACTIVE cluster expiring `in_` from now.
    fn cluster(&self, name: &str, in_: Duration) -> ClusterId {
        let spec = strato_fakes::World::spec(name);
        let mut c = Cluster::new(self.tenant.clone(), ClusterId::generate(), spec, self.now())
            .in_state(ClusterState::Active);
        ExpiryChange::Set(self.now() + in_).apply(&mut c);
        self.store.put_cluster(c.clone());
        c.cluster_id
    }

    fn deletes(&self, id: &ClusterId) -> Vec<Operation> {
        self.store
            .operations_of(id)
            .into_iter()
            .filter(|o| o.kind == OperationKind::Delete)
            .collect()
    }
}

#[tokio::test]
async fn a_due_cluster_gets_one_delete_by_the_scheduler() {
    let w = world();
    let due = w.cluster("due", Duration::hours(1));
    let later = w.cluster("later", Duration::hours(48));
    w.clock.advance(Duration::hours(1));

    let r = w.run().await;
    assert_eq!(r.expiry_deletes_queued, 1, "{r:?}");
    let deletes = w.deletes(&due);
    assert_eq!(deletes.len(), 1);
    let d = &deletes[0];
    assert_eq!(d.requested_by.as_deref(), Some(SCHEDULER));
    assert!(d.spec.is_some(), "the delete carries the cluster's spec");
    assert!(d.notes[0].contains("expired at"), "{:?}", d.notes);
    assert_eq!(
        w.store.cluster(&due).unwrap().pending_operation.as_ref(),
        Some(&d.operation_id)
    );
    let sent = w.jobs.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].job.operation_id, d.operation_id);
    assert!(w.deletes(&later).is_empty());
    // On record, as the scheduler's.
    let entries = w.audit.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].principal, "strato:scheduler");
    assert_eq!(entries[0].action, "cluster.expire");
    assert_eq!(entries[0].cluster_id.as_ref(), Some(&due));
    assert_eq!(entries[0].operation_id.as_ref(), Some(&d.operation_id));

    // The next run finds the delete open: nothing more queued.
    let r = w.run().await;
    assert_eq!((r.expiry_deletes_queued, r.expiry_postponed_busy), (0, 1));
    assert_eq!(w.deletes(&due).len(), 1);
    assert_eq!(w.jobs.sent().len(), 1);
}

#[tokio::test]
async fn a_busy_cluster_is_deleted_once_its_operation_ends() {
    let w = world();
    let c = w.cluster("busy", Duration::minutes(10));
    let mut update = Operation::new(w.tenant.clone(), c.clone(), OperationKind::Update, w.now());
    update.status = OperationStatus::Running;
    w.store.put_operation(update.clone());
    w.clock.advance(Duration::minutes(20));

    let r = w.run().await;
    assert_eq!((r.expiry_deletes_queued, r.expiry_postponed_busy), (0, 1));
    assert!(w.deletes(&c).is_empty(), "never while another operation is open");

    update.status = OperationStatus::Succeeded;
    w.store.put_operation(update);
    assert_eq!(w.run().await.expiry_deletes_queued, 1, "looked at again next run");
    assert_eq!(w.deletes(&c).len(), 1);
}

#[tokio::test]
async fn overlapping_runs_queue_one_delete() {
    let w = world();
    let c = w.cluster("raced", Duration::minutes(1));
    w.clock.advance(Duration::minutes(2));
    // The other run wrote the cluster between this run's read and its write.
    w.store.inject_conflicts(1);
    let r = w.run().await;
    assert_eq!((r.expiry_deletes_queued, r.expiry_postponed_busy), (0, 1));
    assert!(w.deletes(&c).is_empty());
    assert!(w.jobs.sent().is_empty());
}

#[tokio::test]
async fn a_failed_expiry_delete_is_retried_after_a_while() {
    let w = world();
    let c = w.cluster("stubborn", Duration::minutes(1));
    w.clock.advance(Duration::minutes(2));
    assert_eq!(w.run().await.expiry_deletes_queued, 1);
    let mut d = w.deletes(&c).remove(0);
    d.status = OperationStatus::Failed;
    d.updated_at = w.now();
    w.store.put_operation(d);
    let mut cluster = w.store.cluster(&c).unwrap().in_state(ClusterState::Failed);
    cluster.pending_operation = None;
    w.store.put_cluster(cluster);

    assert_eq!(w.run().await.expiry_deletes_queued, 0, "not on every run");
    w.clock.advance(DELETE_RETRY);
    assert_eq!(w.run().await.expiry_deletes_queued, 1);
    assert_eq!(w.deletes(&c).len(), 2);
}

#[tokio::test]
async fn the_expiring_event_is_sent_once_per_expiry_time() {
    let w = world();
    let c = w.cluster("soon", Duration::hours(30));
    assert_eq!(w.run().await.expiry_notices_sent, 0, "outside the notice window");
    w.clock.advance(Duration::hours(7));

    assert_eq!(w.run().await.expiry_notices_sent, 1);
    let queued = w.webhooks.queued();
    assert_eq!(queued.len(), 1);
    let expires_at = w.store.cluster(&c).unwrap().expires_at.unwrap();
    assert_eq!(queued[0].event, "cluster.expiring");
    assert_eq!(queued[0].operation_id, None);
    assert_eq!(
        queued[0].delivery_id,
        event_id(
            EventType::ClusterExpiring,
            &format!("{c}/{}", ts::format(expires_at))
        )
    );
    let envelope: Envelope = serde_json::from_value(queued[0].payload.clone()).unwrap();
    let data: ExpiringEvent = serde_json::from_value(envelope.data).unwrap();
    assert_eq!((data.cluster_id, data.expires_at), (c.clone(), expires_at));

    assert_eq!(w.run().await.expiry_notices_sent, 0, "once");
    assert_eq!(w.webhooks.queued().len(), 1);

    // Extended by a PATCH: a new notice when the new time nears.
    let mut cluster = w.store.cluster(&c).unwrap();
    ExpiryChange::Set(expires_at + Duration::hours(48)).apply(&mut cluster);
    w.store.put_cluster(cluster);
    assert_eq!(w.run().await.expiry_notices_sent, 0);
    w.clock.advance(Duration::hours(48));
    assert_eq!(w.run().await.expiry_notices_sent, 1);
    assert_eq!(w.webhooks.queued().len(), 2);
    assert_ne!(w.webhooks.queued()[1].delivery_id, queued[0].delivery_id);
}

#[tokio::test]
async fn a_webhook_not_subscribed_gets_no_expiring_event() {
    let w = world();
    w.webhooks.set(
        &w.tenant,
        Webhook::new("https://hooks.example.com/strato", "0123456789abcdef0")
            .unwrap()
            .with_events(Some(vec![EventType::OperationFailed])),
    );
    let c = w.cluster("quiet", Duration::hours(2));
    let r = w.run().await;
    assert_eq!(r.expiry_notices_sent, 0);
    assert!(w.webhooks.queued().is_empty());
    // Still recorded as handled: the run does not look at it again for this expiry time.
    assert!(w.store.cluster(&c).unwrap().expiry_notified_for.is_some());
}

#[tokio::test]
async fn a_cluster_being_deleted_leaves_the_index() {
    let w = world();
    let c = w.cluster("going", Duration::minutes(1));
    let cluster = w.store.cluster(&c).unwrap().in_state(ClusterState::Deleting);
    w.store.put_cluster(cluster);
    w.clock.advance(Duration::minutes(2));
    let r = w.run().await;
    assert_eq!((r.expiry_deletes_queued, r.expiry_postponed_busy), (0, 0));
    assert_eq!(w.store.cluster(&c).unwrap().expiry_bucket, None);
}

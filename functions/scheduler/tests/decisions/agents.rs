//! Silent cluster agents on the in-memory fakes: degraded once after the stale time (never before, never
//! for clusters that expect no reports), `cluster.health_changed` to subscribers, and a report that
//! arrived meanwhile wins.

use strato_agent_wire::Report as AgentReport;
use strato_domain::health::{self, HealthStatus};
use strato_domain::ids::ClusterId;
use strato_domain::model::{Cluster, ClusterState};
use strato_domain::ports::{Clock, Clusters};
use strato_domain::webhook::{Envelope, EventType, Webhook};
use strato_scheduler::{Report, SilentAgents};
use time::{Duration, OffsetDateTime};

const STALE: Duration = Duration::seconds(600);

/// Names this module's world.
struct Agents;

type World = super::Hooked<Agents>;

fn world() -> World {
    super::hooked(Some(vec![EventType::ClusterHealthChanged]))
}

impl World {
    fn now(&self) -> OffsetDateTime {
        self.clock.now()
    }

    async fn run(&self) -> Report {
        let mut report = Report::default();
        let run = SilentAgents {
            store: &self.store,
            webhooks: &self.webhooks,
            stale_after: STALE,
            batch: 50,
        };
        run.run(self.now(), &mut report).await.unwrap();
        report
    }

    /// A cluster in `state` whose registered agent reported a healthy cluster `ago`.
    async fn reported(&self, name: &str, state: ClusterState, ago: Duration) -> ClusterId {
        let spec = strato_fakes::World::spec(name);
        let seen = self.now() - ago;
        let mut c = Cluster::new(self.tenant.clone(), ClusterId::generate(), spec, seen).in_state(state);
        c.agent_registered_at = Some(seen);
        c.agent_credential_hash = Some("0".repeat(64));
        c.agent_last_seen = Some(seen);
        let report = AgentReport {
            nodes_ready: 2,
            ..AgentReport::default()
        };
        health::record(&mut c, health::assess(&report, 2, seen));
        self.store.put_cluster(c.clone());
        // Saved once through the port, as the api does, so the store sets the index key.
        self.store.store_cluster(&mut c).await.unwrap();
        c.cluster_id
    }

    fn health(&self, id: &ClusterId) -> strato_domain::health::ClusterHealth {
        self.store.cluster(id).unwrap().health.unwrap()
    }
}

#[tokio::test]
async fn a_silent_agent_degrades_its_cluster_once_with_one_event() {
    let w = world();
    let silent = w.reported("quiet", ClusterState::Active, STALE).await;
    let recent = w
        .reported("chatty", ClusterState::Active, STALE - Duration::seconds(1))
        .await;
    let updating = w
        .reported("changing", ClusterState::Updating, Duration::hours(2))
        .await;

    let r = w.run().await;
    assert_eq!((r.agents_marked_silent, r.health_events_sent), (2, 2));
    for id in [&silent, &updating] {
        let h = w.health(id);
        assert_eq!(h.status, HealthStatus::Degraded);
        assert!(h.silent);
        assert!(
            h.reasons[0].starts_with("the agent has not reported since "),
            "{:?}",
            h.reasons
        );
    }
    assert_eq!(
        w.health(&recent).status,
        HealthStatus::Healthy,
        "not silent long enough"
    );

    let queued = w.webhooks.queued();
    assert_eq!(queued.len(), 2);
    assert!(queued.iter().all(|m| m.event == "cluster.health_changed"));
    let envelope: Envelope = serde_json::from_value(queued[0].payload.clone()).unwrap();
    assert_eq!(envelope.data["from"], "healthy");
    assert_eq!(envelope.data["to"], "degraded");
    assert!(
        envelope.data["reasons"][0]
            .as_str()
            .unwrap()
            .contains("has not reported since")
    );

    // Idempotent: a second run finds nothing more to do and sends nothing.
    let again = w.run().await;
    assert_eq!((again.agents_marked_silent, again.health_events_sent), (0, 0));
    assert_eq!(w.webhooks.queued().len(), 2);

    // Later the quiet one is due too, once.
    w.clock.advance(Duration::seconds(1));
    assert_eq!(w.run().await.agents_marked_silent, 1);
    assert_eq!(w.health(&recent).status, HealthStatus::Degraded);
}

#[tokio::test]
async fn clusters_that_expect_no_reports_are_left_alone() {
    let w = world();
    let configuring = w
        .reported("new", ClusterState::Configuring, Duration::hours(1))
        .await;
    let failed = w
        .reported("broken", ClusterState::Failed, Duration::hours(1))
        .await;
    assert_eq!(w.run().await.agents_marked_silent, 0);
    for id in [&configuring, &failed] {
        assert_eq!(w.health(id).status, HealthStatus::Healthy);
    }
    assert!(w.webhooks.queued().is_empty());
}

#[tokio::test]
async fn a_report_that_arrives_first_wins() {
    let w = world();
    let id = w
        .reported("racing", ClusterState::Active, Duration::hours(1))
        .await;
    // The run reads the cluster, then a report is saved before the run writes: its version check fails.
    w.store.inject_conflicts(1);
    let r = w.run().await;
    assert_eq!(r.agents_marked_silent, 0);
    assert_eq!(w.health(&id).status, HealthStatus::Healthy);
    assert!(w.webhooks.queued().is_empty());
}

#[tokio::test]
async fn unsubscribed_tenants_get_no_event_but_the_mark() {
    let w = world();
    w.webhooks.set(
        &w.tenant,
        Webhook::new("https://hooks.example.com/strato", "0123456789abcdef0")
            .unwrap()
            .with_events(Some(vec![EventType::OperationFailed])),
    );
    let id = w
        .reported("quiet", ClusterState::Active, Duration::hours(1))
        .await;
    let r = w.run().await;
    assert_eq!((r.agents_marked_silent, r.health_events_sent), (1, 0));
    assert_eq!(w.health(&id).status, HealthStatus::Degraded);
    assert!(w.webhooks.queued().is_empty());
}

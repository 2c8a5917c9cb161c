//! The cluster agent's decisions on a cluster record: registration issues a credential once (only its
//! hash kept), a credential opens only its own cluster, a rotation's old credential works until the new
//! one is first used, reports are throttled, health is recorded, and an accepted delete revokes.

use strato_agent_wire::{Component, ComponentKind, MIN_HEARTBEAT_SECS, Report};
use strato_api::ApiError;
use strato_api::decide::agent;
use strato_domain::agent::token_hash;
use strato_domain::health::HealthStatus;
use strato_domain::ids::ClusterId;
use strato_domain::model::{Cluster, ClusterState};
use strato_domain::ports::Clock;
use time::Duration;

use super::{World, caller};

fn configuring(w: &World) -> Cluster {
    let spec = strato_fakes::World::spec("agented");
    let mut c = Cluster::new(w.tenant.clone(), ClusterId::generate(), spec, w.clock.now())
        .in_state(ClusterState::Configuring);
    c.configuring_deadline = Some(w.clock.now() + Duration::minutes(10));
    c
}

fn nodes(n: u32) -> Report {
    Report {
        nodes_ready: n,
        nodes_total: n,
        ..Report::default()
    }
}

#[test]
fn registration_issues_a_credential_once_and_keeps_only_its_hash() {
    let w = World::new();
    let now = w.clock.now();
    let mut c = configuring(&w);
    let credential = agent::register(&mut c, now).unwrap();
    assert!(
        credential.starts_with(&format!("{}.", c.cluster_id)),
        "{credential}"
    );
    assert_eq!(c.agent_credential_hash, Some(token_hash(&credential)));
    let stored = serde_json::to_string(&c).unwrap();
    assert!(
        !stored.contains(credential.split_once('.').unwrap().1),
        "never stored in the clear"
    );
    assert!(
        matches!(agent::register(&mut c, now), Err(ApiError::Conflict(_))),
        "once"
    );

    let mut late = configuring(&w);
    late.configuring_deadline = Some(now - Duration::seconds(1));
    assert!(matches!(agent::register(&mut late, now), Err(ApiError::Gone(_))));
    let mut active = configuring(&w).in_state(ClusterState::Active);
    assert!(matches!(
        agent::register(&mut active, now),
        Err(ApiError::Conflict(_))
    ));
}

#[test]
fn a_credential_opens_only_its_own_cluster() {
    let w = World::new();
    let now = w.clock.now();
    let (mut a, mut b) = (configuring(&w), configuring(&w));
    let ca = agent::register(&mut a, now).unwrap();
    agent::register(&mut b, now).unwrap();
    agent::authenticate(&mut a, &ca).unwrap();
    let unauthorized = |r: Result<(), ApiError>| matches!(r, Err(ApiError::Unauthorized(_)));
    // A's credential presented to B (as the handler would never do, but the decision must refuse it).
    assert!(unauthorized(agent::authenticate(&mut b, &ca)));
    // B's id with A's secret: B's hash does not match.
    let forged = format!("{}.{}", b.cluster_id, ca.split_once('.').unwrap().1);
    assert!(unauthorized(agent::authenticate(&mut b, &forged)));
    // The registration token's shape (no cluster id) and a deleted cluster.
    assert!(unauthorized(agent::authenticate(&mut a, &"f".repeat(64))));
    let mut gone = a.clone().in_state(ClusterState::Deleted);
    assert!(unauthorized(agent::authenticate(&mut gone, &ca)));
    // The same answer every time: nothing tells which check failed.
    let detail = |r: Result<(), ApiError>| r.unwrap_err().to_string();
    assert_eq!(
        detail(agent::authenticate(&mut b, &forged)),
        detail(agent::authenticate(&mut a, &"f".repeat(64)))
    );
}

#[test]
fn the_old_credential_works_until_the_new_one_is_first_used() {
    let w = World::new();
    let mut c = configuring(&w);
    let old = agent::register(&mut c, w.clock.now()).unwrap();
    let new = agent::rotate(&mut c);
    assert_ne!(old, new);
    agent::authenticate(&mut c, &old).unwrap();
    agent::authenticate(&mut c, &old).unwrap();
    agent::authenticate(&mut c, &new).unwrap();
    assert!(
        agent::authenticate(&mut c, &old).is_err(),
        "retired by the new one's first use"
    );
    agent::authenticate(&mut c, &new).unwrap();
    // Rotating twice before use: only the newest pending one and the current one work.
    let unused = agent::rotate(&mut c);
    let newest = agent::rotate(&mut c);
    assert!(agent::authenticate(&mut c, &unused).is_err());
    agent::authenticate(&mut c, &newest).unwrap();
    assert!(agent::authenticate(&mut c, &new).is_err());
}

#[test]
fn reports_closer_than_the_minimum_are_refused_with_the_wait() {
    let w = World::new();
    let now = w.clock.now();
    let mut c = configuring(&w);
    agent::register(&mut c, now).unwrap();
    agent::accept(&mut c, &nodes(1), 1, now);
    match agent::throttle(&c, now + Duration::seconds(3)) {
        Err(ApiError::TooSoon { retry_after_secs, .. }) => {
            assert_eq!(retry_after_secs, MIN_HEARTBEAT_SECS - 3)
        }
        other => panic!("expected 429: {other:?}"),
    }
    agent::throttle(&c, now + Duration::seconds(MIN_HEARTBEAT_SECS as i64)).unwrap();
}

#[test]
fn each_report_records_health_and_says_when_its_status_changes() {
    let w = World::new();
    let now = w.clock.now();
    let mut c = configuring(&w);
    agent::register(&mut c, now).unwrap();
    let first = agent::accept(&mut c, &nodes(1), 2, now).unwrap();
    assert_eq!(
        (first.from, first.to),
        (HealthStatus::Unknown, HealthStatus::Degraded)
    );
    assert_eq!(
        agent::accept(&mut c, &nodes(1), 2, now),
        None,
        "no change, no event"
    );
    let broken = Report {
        components: vec![Component {
            role: "dns".into(),
            name: "coredns".into(),
            kind: ComponentKind::Deployment,
            ready: 0,
            desired: 2,
        }],
        ..nodes(2)
    };
    assert_eq!(agent::accept(&mut c, &broken, 2, now), None, "still degraded");
    assert_eq!(c.health.as_ref().unwrap().unhealthy_components, vec!["coredns"]);
    let back = agent::accept(&mut c, &nodes(2), 2, now).unwrap();
    assert_eq!(
        (back.from, back.to),
        (HealthStatus::Degraded, HealthStatus::Healthy)
    );
    assert_eq!(c.agent_last_seen, Some(now));
}

#[tokio::test]
async fn an_accepted_delete_revokes_the_agents_credential() {
    let w = World::new();
    let s = w.active().await;
    let mut c = s.cluster.clone();
    c.agent_registered_at = Some(w.clock.now());
    let credential = agent::rotate(&mut c);
    agent::authenticate(&mut c, &credential).unwrap();
    w.store.put_cluster(c);
    w.api()
        .delete(&caller(), s.cluster.cluster_id.as_str())
        .await
        .unwrap();
    let mut stored = w.store.cluster(&s.cluster.cluster_id).unwrap();
    assert_eq!(stored.agent_credential_hash, None);
    assert!(matches!(
        agent::authenticate(&mut stored, &credential),
        Err(ApiError::Unauthorized(_))
    ));
}

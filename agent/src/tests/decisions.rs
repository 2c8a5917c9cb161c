//! The agent's decisions on in-memory ports: registration, reuse, refusal, back-off, throttling, rotation.

use std::time::{Duration, Instant};

use strato_agent_wire::MIN_HEARTBEAT_SECS;

use crate::agent::{Agent, Outcome, Policy};
use crate::backoff::{BACKOFF_CAP, heartbeat_wait, retry_wait};
use crate::fakes::{FakeCluster, FakePlane, FakeStore};
use crate::ports::{CallError, NodeState, Observation};

fn observation() -> Observation {
    Observation {
        nodes: vec![
            NodeState {
                name: "n1".into(),
                ready: true,
            },
            NodeState {
                name: "n2".into(),
                ready: false,
            },
        ],
        kubernetes_version: Some("v1.33.1".into()),
        ..Default::default()
    }
}

fn agent(plane: &FakePlane, store: &FakeStore, unit: f64) -> Agent<FakeCluster, FakePlane, FakeStore> {
    Agent::new(
        FakeCluster::with(observation()),
        plane.clone(),
        store.clone(),
        Policy::default(),
        Box::new(move || unit),
    )
}

fn endpoints(plane: &FakePlane) -> Vec<(&'static str, String)> {
    plane
        .calls()
        .into_iter()
        .map(|c| (c.endpoint, c.bearer))
        .collect()
}

#[tokio::test]
async fn a_first_start_registers_with_the_token_stores_the_credential_and_then_heartbeats_with_it() {
    let plane = FakePlane::new();
    let store = FakeStore::with_token("reg-token");
    let mut a = agent(&plane, &store, 0.5);
    let t = a.turn(Instant::now()).await;
    assert_eq!(t.outcome, Outcome::Registered { stored: true });
    assert_eq!(t.wait, heartbeat_wait(30, 0.5));
    assert_eq!(store.credential().as_deref(), Some("cl-1.secret1"));
    let report = plane.calls()[0].report.clone().unwrap();
    assert_eq!(
        (report.nodes_ready, report.nodes_total),
        (1, 2),
        "the registration carries a report"
    );

    let t = a.turn(Instant::now()).await;
    assert_eq!(
        t.outcome,
        Outcome::Reported {
            health: "healthy".into()
        }
    );
    assert_eq!(
        endpoints(&plane),
        [
            ("register", "reg-token".to_string()),
            ("heartbeat", "cl-1.secret1".to_string())
        ]
    );
}

#[tokio::test]
async fn a_later_start_reuses_the_stored_credential_without_registering() {
    let plane = FakePlane::new();
    let store = FakeStore::with_token("spent-token");
    *store.credential.lock().unwrap() = Some("cl-1.kept".into());
    let t = agent(&plane, &store, 0.0).turn(Instant::now()).await;
    assert_eq!(
        t.outcome,
        Outcome::Reported {
            health: "healthy".into()
        }
    );
    assert_eq!(endpoints(&plane), [("heartbeat", "cl-1.kept".to_string())]);
    assert_eq!(*store.saves.lock().unwrap(), 0, "nothing to write back");
}

#[tokio::test]
async fn a_refused_credential_is_retried_with_back_off_then_replaced_by_registering_with_the_token() {
    let plane = FakePlane::new();
    plane
        .then(Err(CallError::Refused))
        .then(Err(CallError::Refused))
        .then(Err(CallError::Refused));
    let store = FakeStore::with_token("reg-token");
    *store.credential.lock().unwrap() = Some("cl-1.revoked".into());
    let mut a = agent(&plane, &store, 1.0);
    let waits: Vec<(Outcome, Duration)> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            let t = a.turn(Instant::now()).await;
            v.push((t.outcome, t.wait));
        }
        v
    };
    // The heartbeat is refused; the stored (refused) credential is not reused; the token is tried, refused
    // twice (an old token), then accepted (configure installed a new one): no crash loop, growing waits.
    assert_eq!(
        waits,
        [
            (Outcome::Refused, retry_wait(1, 1.0)),
            (Outcome::Refused, retry_wait(2, 1.0)),
            (Outcome::Refused, retry_wait(3, 1.0)),
            (Outcome::Registered { stored: true }, heartbeat_wait(30, 1.0)),
        ]
    );
    assert_eq!(
        endpoints(&plane),
        [
            ("heartbeat", "cl-1.revoked".to_string()),
            ("register", "reg-token".to_string()),
            ("register", "reg-token".to_string()),
            ("register", "reg-token".to_string()),
        ]
    );
    assert_eq!(store.credential().as_deref(), Some("cl-1.secret3"));
}

#[tokio::test]
async fn the_heartbeat_interval_comes_from_the_control_plane_plus_jitter_and_never_below_its_minimum() {
    let mut plane = FakePlane::new();
    plane.heartbeat_secs = 45;
    let store = FakeStore::with_token("t");
    let mut a = agent(&plane, &store, 0.5);
    a.turn(Instant::now()).await;
    let t = a.turn(Instant::now()).await;
    assert_eq!(
        t.wait,
        Duration::from_millis(47_250),
        "45 s plus 5% (half the 10% jitter)"
    );

    let mut plane = FakePlane::new();
    plane.heartbeat_secs = 1;
    let t = agent(&plane, &FakeStore::with_token("t"), 0.0)
        .turn(Instant::now())
        .await;
    assert_eq!(t.wait, Duration::from_secs(MIN_HEARTBEAT_SECS));
}

#[tokio::test]
async fn an_unreachable_control_plane_is_retried_with_capped_exponential_back_off_and_missed_reports_counted()
{
    let plane = FakePlane::new();
    for _ in 0..10 {
        plane.then(Err(CallError::Unreachable("connection refused".into())));
    }
    let store = FakeStore::with_token("t");
    *store.credential.lock().unwrap() = Some("cl-1.c".into());
    let mut a = agent(&plane, &store, 1.0);
    let mut waits = Vec::new();
    for _ in 0..10 {
        let t = a.turn(Instant::now()).await;
        assert_eq!(t.outcome, Outcome::Unreachable);
        waits.push(t.wait.as_secs());
    }
    assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
    assert_eq!(BACKOFF_CAP.as_secs(), 300);
    assert_eq!(a.missed_reports(), 10);

    let t = a.turn(Instant::now()).await;
    assert!(matches!(t.outcome, Outcome::Reported { .. }));
    let calls = plane.calls();
    assert_eq!(calls.len(), 11, "one report a turn: nothing queued behind it");
    assert_eq!(
        calls[10].report.as_ref().unwrap().missed_reports,
        10,
        "the delivered report says how many were missed"
    );
    a.turn(Instant::now()).await;
    assert_eq!(
        plane.calls()[11].report.as_ref().unwrap().missed_reports,
        0,
        "reset once delivered"
    );
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let plane = FakePlane::new();
    plane.then(Err(CallError::TooMany {
        retry_after: Some(Duration::from_secs(37)),
    }));
    plane.then(Err(CallError::TooMany { retry_after: None }));
    let store = FakeStore::with_token("t");
    *store.credential.lock().unwrap() = Some("cl-1.c".into());
    let mut a = agent(&plane, &store, 1.0);
    let t = a.turn(Instant::now()).await;
    assert_eq!((t.outcome, t.wait), (Outcome::Throttled, Duration::from_secs(37)));
    let t = a.turn(Instant::now()).await;
    assert_eq!(
        t.wait,
        Duration::from_secs(60),
        "without Retry-After: the current interval"
    );
}

#[tokio::test]
async fn a_credential_that_could_not_be_stored_is_used_and_stored_on_a_later_turn() {
    let plane = FakePlane::new();
    let store = FakeStore::with_token("t");
    *store.broken.lock().unwrap() = true;
    let mut a = agent(&plane, &store, 0.0);
    let t = a.turn(Instant::now()).await;
    assert_eq!(t.outcome, Outcome::Registered { stored: false });
    assert_eq!(store.credential(), None);
    *store.broken.lock().unwrap() = false;
    let t = a.turn(Instant::now()).await;
    assert!(matches!(t.outcome, Outcome::Reported { .. }));
    assert_eq!(store.credential().as_deref(), Some("cl-1.secret1"));
    assert_eq!(endpoints(&plane).len(), 2, "registered once only");
}

#[tokio::test]
async fn the_credential_is_rotated_when_due_and_used_only_once_stored() {
    let plane = FakePlane::new();
    let store = FakeStore::with_token("t");
    let policy = Policy {
        rotate_every: Duration::from_secs(100),
        ..Policy::default()
    };
    let mut a = Agent::new(
        FakeCluster::with(observation()),
        plane.clone(),
        store.clone(),
        policy,
        Box::new(|| 0.0),
    );
    let t0 = Instant::now();
    a.turn(t0).await;
    a.turn(t0 + Duration::from_secs(50)).await;
    a.turn(t0 + Duration::from_secs(101)).await;
    assert_eq!(
        endpoints(&plane),
        [
            ("register", "t".to_string()),
            ("heartbeat", "cl-1.secret1".to_string()),
            ("rotate", "cl-1.secret1".to_string()),
            ("heartbeat", "cl-1.rotated1".to_string()),
        ]
    );
    assert_eq!(store.credential().as_deref(), Some("cl-1.rotated1"));

    // A rotated credential the Secret cannot take is not used: the old one keeps working.
    *store.broken.lock().unwrap() = true;
    a.turn(t0 + Duration::from_secs(202)).await;
    assert_eq!(plane.calls().last().unwrap().bearer, "cl-1.rotated1");
}

#[tokio::test]
async fn an_unreadable_cluster_or_an_empty_secret_backs_off_without_calling_the_control_plane() {
    let plane = FakePlane::new();
    let store = FakeStore::with_token("t");
    let cluster = FakeCluster::with(observation());
    *cluster.observation.lock().unwrap() = Err("connection refused".into());
    let mut a = Agent::new(cluster, plane.clone(), store, Policy::default(), Box::new(|| 1.0));
    let t = a.turn(Instant::now()).await;
    assert_eq!(
        (t.outcome, t.wait),
        (Outcome::ClusterUnreadable, retry_wait(1, 1.0))
    );

    let t = agent(&plane, &FakeStore::default(), 1.0)
        .turn(Instant::now())
        .await;
    assert_eq!(t.outcome, Outcome::NoCredential);
    assert!(plane.calls().is_empty());
}

#[test]
fn secrets_never_show_in_debug_output() {
    let stored = crate::ports::Stored {
        registration_token: Some("tok-123".to_string().into()),
        credential: Some("cl-1.s3cret".to_string().into()),
    };
    let text = format!("{stored:?}");
    assert!(!text.contains("tok-123") && !text.contains("s3cret"), "{text}");
}

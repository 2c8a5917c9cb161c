use strato_agent_wire::{Component, ComponentKind, Warning};

use super::*;
use crate::model::ClusterSpec;

fn now() -> OffsetDateTime {
    crate::ts::parse("2026-11-30T10:00:00Z").unwrap()
}

fn cluster(state: ClusterState) -> Cluster {
    let spec: ClusterSpec = serde_json::from_value(serde_json::json!({"name": "prod",
        "template": {"name": "t", "version": "1.0.0"}, "provider": "aws", "region": "us-east-1"}))
    .unwrap();
    let mut c = Cluster::new("t1".parse().unwrap(), ClusterId::generate(), spec, now()).in_state(state);
    c.agent_registered_at = Some(now());
    c.agent_last_seen = Some(now());
    c.agent_credential_hash = Some("h".into());
    c
}

fn component(name: &str, ready: u32, desired: u32) -> Component {
    Component {
        role: "dns".into(),
        name: name.into(),
        kind: ComponentKind::Deployment,
        ready,
        desired,
    }
}

fn warning(i: u32) -> Warning {
    Warning {
        reason: format!("r{i}"),
        object: "Pod/kube-system/x".into(),
        message: "m".into(),
        count: i,
        last_seen: "2026-11-30T09:59:00Z".into(),
    }
}

#[test]
fn healthy_needs_the_requested_nodes_and_every_component() {
    let ok = Report {
        nodes_ready: 3,
        nodes_total: 3,
        components: vec![component("coredns", 2, 2)],
        ..Report::default()
    };
    let h = assess(&ok, 3, now());
    assert_eq!(h.status, HealthStatus::Healthy);
    assert!(h.reasons.is_empty() && h.unhealthy_components.is_empty());

    let short = Report {
        nodes_ready: 2,
        ..ok.clone()
    };
    let h = assess(&short, 3, now());
    assert_eq!(h.status, HealthStatus::Degraded);
    assert_eq!(h.reasons, vec!["2 of 3 requested nodes are Ready"]);

    let broken = Report {
        components: vec![component("coredns", 1, 2), component("kube-proxy", 3, 3)],
        ..ok
    };
    let h = assess(&broken, 3, now());
    assert_eq!(h.status, HealthStatus::Degraded);
    assert_eq!(h.unhealthy_components, vec!["coredns"]);
    assert!(
        h.reasons[0].contains("coredns") && h.reasons[0].contains("1 of 2"),
        "{:?}",
        h.reasons
    );
}

#[test]
fn only_the_newest_warnings_are_kept() {
    let r = Report {
        nodes_ready: 1,
        warnings: (0..20).map(warning).collect(),
        ..Report::default()
    };
    let h = assess(&r, 1, now());
    assert_eq!(h.warnings.len(), WARNINGS_KEPT);
    assert_eq!(h.warnings[0].reason, "r0", "the report lists the newest first");
}

#[test]
fn recording_reports_a_change_of_status_only_and_keeps_since() {
    let mut c = cluster(ClusterState::Active);
    let good = Report {
        nodes_ready: 1,
        ..Report::default()
    };
    let first = record(&mut c, assess(&good, 1, now()));
    assert_eq!(
        first.map(|ch| (ch.from, ch.to)),
        Some((HealthStatus::Unknown, HealthStatus::Healthy))
    );
    let later = now() + Duration::minutes(1);
    assert_eq!(record(&mut c, assess(&good, 1, later)), None);
    let h = c.health.clone().unwrap();
    assert_eq!(
        (h.since, h.last_seen),
        (now(), later),
        "healthy since the first report"
    );
    let bad = record(&mut c, assess(&good, 2, later)).unwrap();
    assert_eq!(
        (bad.from, bad.to),
        (HealthStatus::Healthy, HealthStatus::Degraded)
    );
    assert_eq!(bad.reasons, vec!["1 of 2 requested nodes are Ready"]);
}

#[test]
fn a_silent_agent_degrades_its_cluster_once_and_a_report_brings_it_back() {
    let stale = Duration::seconds(600);
    let mut c = cluster(ClusterState::Active);
    record(
        &mut c,
        assess(
            &Report {
                nodes_ready: 1,
                ..Report::default()
            },
            1,
            now(),
        ),
    );
    assert_eq!(watch_bucket(&c).as_deref(), Some(WATCH_BUCKET));
    assert_eq!(
        mark_silent(&mut c, now() + Duration::seconds(599), stale),
        Silence::NotDue
    );

    let at = now() + Duration::seconds(600);
    let Silence::Marked { change: Some(ch) } = mark_silent(&mut c, at, stale) else {
        panic!("due after 600 s")
    };
    assert_eq!((ch.from, ch.to), (HealthStatus::Healthy, HealthStatus::Degraded));
    assert_eq!(
        ch.reasons,
        vec!["the agent has not reported since 2026-11-30T10:00:00.000000Z"]
    );
    let h = c.health.clone().unwrap();
    assert!(h.silent && h.since == at);
    assert_eq!(watch_bucket(&c), None, "out of the index once marked");
    assert_eq!(
        mark_silent(&mut c, at + stale, stale),
        Silence::NotDue,
        "idempotent"
    );

    c.agent_last_seen = Some(at + stale);
    let back = record(
        &mut c,
        assess(
            &Report {
                nodes_ready: 1,
                ..Report::default()
            },
            1,
            at + stale,
        ),
    )
    .unwrap();
    assert_eq!(
        (back.from, back.to),
        (HealthStatus::Degraded, HealthStatus::Healthy)
    );
    assert!(!c.health.as_ref().unwrap().silent);
    assert!(watch_bucket(&c).is_some());
}

#[test]
fn already_degraded_clusters_gain_the_reason_without_a_change() {
    let mut c = cluster(ClusterState::Updating);
    record(
        &mut c,
        assess(
            &Report {
                nodes_ready: 0,
                ..Report::default()
            },
            1,
            now(),
        ),
    );
    let Silence::Marked { change } = mark_silent(&mut c, now() + Duration::hours(1), Duration::seconds(600))
    else {
        panic!("due")
    };
    assert_eq!(change, None);
    let h = c.health.unwrap();
    assert_eq!(h.reasons.len(), 2);
    assert_eq!(h.since, now(), "degraded since the report");
}

#[test]
fn only_registered_agents_of_active_or_updating_clusters_are_watched() {
    let late = now() + Duration::hours(1);
    let stale = Duration::seconds(600);
    for state in [
        ClusterState::Configuring,
        ClusterState::Deleting,
        ClusterState::Failed,
    ] {
        let mut c = cluster(state);
        assert_eq!(watch_bucket(&c), None, "{state}");
        assert_eq!(mark_silent(&mut c, late, stale), Silence::NotDue, "{state}");
    }
    let mut c = cluster(ClusterState::Active);
    c.agent_registered_at = None;
    assert_eq!(watch_bucket(&c), None);
    assert_eq!(mark_silent(&mut c, late, stale), Silence::NotDue);
    let mut revoked = cluster(ClusterState::Active);
    revoked.agent_credential_hash = None;
    assert_eq!(watch_bucket(&revoked), None, "a delete revoked its credential");
    assert_eq!(mark_silent(&mut revoked, late, stale), Silence::NotDue);
}

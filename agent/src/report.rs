//! From what the agent saw to the report it sends: the core components by their known names, and the
//! contract's bounds (cut texts, the newest warnings, the whole body under MAX_REPORT_BYTES).

use strato_agent_wire::{
    Component, ComponentKind, MAX_COMPONENTS, MAX_REPORT_BYTES, MAX_TEXT, MAX_WARNINGS, Report, Warning,
};

use crate::ports::{Observation, Workload};

/// DNS: CoreDNS on most distributions, kube-dns on GKE.
const DNS: &[&str] = &["coredns", "kube-dns"];
const PROXY: &[&str] = &["kube-proxy"];
/// The CNI DaemonSets of the common network plugins and managed clusters.
pub const CNI: &[&str] = &[
    "aws-node",
    "cilium",
    "calico-node",
    "azure-cns",
    "kube-flannel-ds",
    "antrea-agent",
    "anetd",
    "weave-net",
    "canal",
    "kube-router",
    "azure-npm",
    "konnectivity-agent-cni",
    "ovnkube-node",
];

/// The name a missing CNI is reported under (no known DaemonSet was found).
pub const NO_CNI: &str = "cni";

/// The core components: each role's workloads found under its known names, and for a role with none
/// found, one component under its usual name with 0 ready of 0 desired (which is never healthy), so the
/// control plane sees the gap instead of a silence.
pub fn components(workloads: &[Workload]) -> Vec<Component> {
    let mut out = Vec::new();
    let roles: [(&str, ComponentKind, &[&str], &str); 3] = [
        ("dns", ComponentKind::Deployment, DNS, "coredns"),
        ("proxy", ComponentKind::DaemonSet, PROXY, "kube-proxy"),
        ("cni", ComponentKind::DaemonSet, CNI, NO_CNI),
    ];
    for (role, kind, names, missing) in roles {
        let found: Vec<&Workload> = workloads
            .iter()
            .filter(|w| w.kind == kind && names.contains(&w.name.as_str()))
            .collect();
        if found.is_empty() {
            out.push(Component {
                role: role.into(),
                name: missing.into(),
                kind,
                ready: 0,
                desired: 0,
            });
        }
        for w in found {
            out.push(Component {
                role: role.into(),
                name: cut(&w.name),
                kind,
                ready: w.ready,
                desired: w.desired,
            });
        }
    }
    out.truncate(MAX_COMPONENTS);
    out
}

/// At most MAX_TEXT characters (not bytes: never splits a character).
pub fn cut(text: &str) -> String {
    text.chars().take(MAX_TEXT).collect()
}

/// The report of one observation, within the contract's bounds.
pub fn build(observation: Observation, agent_version: &str, missed_reports: u32) -> Report {
    let mut warnings = observation.warnings;
    // Newest first; of equal times, the most repeated first.
    warnings.sort_by(|a, b| {
        b.last_seen_unix
            .cmp(&a.last_seen_unix)
            .then(b.count.cmp(&a.count))
    });
    let warnings: Vec<Warning> = warnings
        .into_iter()
        .take(MAX_WARNINGS)
        .map(|w| Warning {
            reason: cut(&w.reason),
            object: cut(&w.object),
            message: cut(&w.message),
            count: w.count,
            last_seen: cut(&w.last_seen),
        })
        .collect();
    let mut report = Report {
        nodes_ready: observation.nodes.iter().filter(|n| n.ready).count() as u32,
        nodes_total: observation.nodes.len() as u32,
        kubernetes_version: observation.kubernetes_version.as_deref().map(cut),
        components: components(&observation.workloads),
        warnings,
        agent_version: Some(cut(agent_version)),
        missed_reports,
    };
    // Each field is bounded, but their sum may still be too large: the oldest warnings go first, then the
    // last components.
    while size(&report) > MAX_REPORT_BYTES {
        if report.warnings.pop().is_none() && report.components.pop().is_none() {
            break;
        }
    }
    report
}

pub fn size(report: &Report) -> usize {
    serde_json::to_vec(report).map(|b| b.len()).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{NodeState, WarningEvent};

    fn w(kind: ComponentKind, name: &str, ready: u32, desired: u32) -> Workload {
        Workload {
            kind,
            name: name.into(),
            ready,
            desired,
        }
    }

    fn warning(i: i64, message: &str) -> WarningEvent {
        WarningEvent {
            reason: "BackOff".into(),
            object: format!("Pod/kube-system/p{i}"),
            message: message.into(),
            count: 1,
            last_seen: format!("2026-01-01T00:00:{:02}Z", i % 60),
            last_seen_unix: i,
        }
    }

    #[test]
    fn the_core_components_are_found_by_their_known_names_and_kinds() {
        let found = components(&[
            w(ComponentKind::Deployment, "coredns", 2, 2),
            w(ComponentKind::DaemonSet, "kube-proxy", 3, 3),
            w(ComponentKind::DaemonSet, "cilium", 2, 3),
            w(ComponentKind::Deployment, "metrics-server", 1, 1),
            // A Deployment named like a CNI DaemonSet is not the CNI.
            w(ComponentKind::Deployment, "aws-node", 1, 1),
        ]);
        let got: Vec<(&str, &str, u32, u32)> = found
            .iter()
            .map(|c| (c.role.as_str(), c.name.as_str(), c.ready, c.desired))
            .collect();
        assert_eq!(
            got,
            [
                ("dns", "coredns", 2, 2),
                ("proxy", "kube-proxy", 3, 3),
                ("cni", "cilium", 2, 3)
            ]
        );
    }

    #[test]
    fn a_missing_component_is_reported_with_nothing_desired_so_it_is_never_healthy() {
        let found = components(&[w(ComponentKind::Deployment, "kube-dns", 1, 2)]);
        let got: Vec<(&str, &str, u32, u32, bool)> = found
            .iter()
            .map(|c| (c.role.as_str(), c.name.as_str(), c.ready, c.desired, c.healthy()))
            .collect();
        assert_eq!(
            got,
            [
                ("dns", "kube-dns", 1, 2, false),
                ("proxy", "kube-proxy", 0, 0, false),
                ("cni", NO_CNI, 0, 0, false)
            ]
        );
    }

    #[test]
    fn a_report_counts_nodes_and_keeps_only_the_newest_warnings_with_texts_cut() {
        let obs = Observation {
            nodes: vec![
                NodeState {
                    name: "a".into(),
                    ready: true,
                },
                NodeState {
                    name: "b".into(),
                    ready: false,
                },
            ],
            kubernetes_version: Some("v1.33.1".into()),
            workloads: vec![],
            warnings: (0..30).map(|i| warning(i, &"é".repeat(300))).collect(),
        };
        let r = build(obs, "0.1.0", 2);
        assert_eq!((r.nodes_ready, r.nodes_total, r.missed_reports), (1, 2, 2));
        assert_eq!(r.warnings.len(), MAX_WARNINGS);
        assert_eq!(r.warnings[0].object, "Pod/kube-system/p29", "newest first");
        assert_eq!(r.warnings[MAX_WARNINGS - 1].object, "Pod/kube-system/p10");
        assert_eq!(r.warnings[0].message.chars().count(), MAX_TEXT);
        assert!(size(&r) <= MAX_REPORT_BYTES);
    }

    #[test]
    fn a_report_too_large_in_sum_drops_its_oldest_warnings_first() {
        // Every text at its bound in bytes (a 4-byte character each): twenty such warnings exceed 16 KiB.
        let long = "😀".repeat(MAX_TEXT);
        let obs = Observation {
            warnings: (0..MAX_WARNINGS as i64)
                .map(|i| WarningEvent {
                    reason: long.clone(),
                    object: long.clone(),
                    ..warning(i, &long)
                })
                .collect(),
            ..Observation::default()
        };
        let r = build(obs, "0.1.0", 0);
        assert!(size(&r) <= MAX_REPORT_BYTES, "{}", size(&r));
        assert!(r.warnings.len() < MAX_WARNINGS && !r.warnings.is_empty());
        assert_eq!(
            r.warnings[0].last_seen, "2026-01-01T00:00:19Z",
            "the newest stays"
        );
        assert_eq!(r.components.len(), 3, "components are kept while warnings can go");
    }
}

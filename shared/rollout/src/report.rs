//! The fleet summary of a rollout: what the clusters' plans on the new version found, added up — "40
//! clusters: 37 in place, 3 replace aws_eks_node_group.this, 0 destroy; +$120.00/month".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::machine::{MemberStatus, PlanFindings, Rollout};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FleetSummary {
    pub clusters: usize,
    /// Planned (or upgraded) with nothing replaced or destroyed.
    pub in_place: usize,
    /// Each replaced address, with the number of clusters whose plan replaces it.
    pub replace: BTreeMap<String, usize>,
    /// Each destroyed address, with the number of clusters whose plan destroys it.
    pub destroy: BTreeMap<String, usize>,
    /// Clusters whose plan breaks a stop rule (held in an apply; would be held, in a preview).
    pub held: usize,
    pub failed: usize,
    pub upgraded: usize,
    /// Not planned yet, or being planned or updated.
    pub waiting: usize,
    pub skipped: usize,
    /// The sum of the estimated monthly differences.
    pub monthly_difference: f64,
    /// Planned clusters without an estimate (left out of the sum, never counted as zero).
    pub not_estimated: usize,
}

impl FleetSummary {
    pub fn of(r: &Rollout) -> Self {
        let mut s = Self {
            clusters: r.members.len(),
            ..Self::default()
        };
        let add = |s: &mut Self, f: &PlanFindings| {
            if f.replace.is_empty() && f.destroy.is_empty() {
                s.in_place += 1;
            }
            for a in &f.replace {
                *s.replace.entry(a.clone()).or_default() += 1;
            }
            for a in &f.destroy {
                *s.destroy.entry(a.clone()).or_default() += 1;
            }
            match f.monthly_difference {
                Some(d) => s.monthly_difference += d,
                None => s.not_estimated += 1,
            }
        };
        for m in &r.members {
            match &m.status {
                MemberStatus::Planned { findings } => {
                    add(&mut s, findings);
                    if r.held_by_rules(findings).is_some() {
                        s.held += 1;
                    }
                }
                MemberStatus::Upgraded { findings } => {
                    add(&mut s, findings);
                    s.upgraded += 1;
                }
                MemberStatus::Upgrading { findings, .. } => {
                    add(&mut s, findings);
                    s.waiting += 1;
                }
                MemberStatus::Held { findings, .. } => {
                    add(&mut s, findings);
                    s.held += 1;
                }
                MemberStatus::Failed { .. } => s.failed += 1,
                MemberStatus::Skipped { .. } => s.skipped += 1,
                MemberStatus::Pending | MemberStatus::Planning { .. } => s.waiting += 1,
            }
        }
        s.monthly_difference = (s.monthly_difference * 100.0).round() / 100.0;
        s
    }

    /// One line for people.
    pub fn text(&self) -> String {
        let counted = |m: &BTreeMap<String, usize>, verb: &str| -> String {
            if m.is_empty() {
                return format!("0 {verb}");
            }
            m.iter()
                .map(|(a, n)| format!("{n} {verb} {a}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let d = self.monthly_difference;
        let money = if d.abs() < 0.005 {
            "$0.00/month".to_owned()
        } else {
            format!("{}${:.2}/month", if d > 0.0 { "+" } else { "-" }, d.abs())
        };
        let mut line = format!(
            "{} clusters: {} in place, {}, {}; {money}",
            self.clusters,
            self.in_place,
            counted(&self.replace, "replace"),
            counted(&self.destroy, "destroy"),
        );
        for (n, what) in [
            (self.held, "held by a stop rule"),
            (self.failed, "failed"),
            (self.waiting, "not planned yet"),
            (self.not_estimated, "without an estimate"),
        ] {
            if n > 0 {
                line.push_str(&format!("; {n} {what}"));
            }
        }
        line
    }
}

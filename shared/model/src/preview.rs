//! A preview: what an update would do, found by a speculative plan (a `plan` operation) of the proposed spec
//! against the cluster's current state, with nothing applied. The runner builds it from the plan's
//! `resource_changes`; the status function records it on the operation; the API, the CLI and the console
//! show it.

use serde::{Deserialize, Serialize};

use crate::cost::CostEstimate;
use crate::plan::ResourceChange;

/// What the update would do to one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeAction {
    Create,
    Update,
    Delete,
    /// Destroyed and created again (Terraform's `["delete","create"]` or `["create","delete"]`).
    Replace,
}

impl ChangeAction {
    /// The action Terraform's action list amounts to; `None` for no-ops and reads (nothing changes).
    pub fn of(actions: &[String]) -> Option<Self> {
        let has = |a: &str| actions.iter().any(|x| x == a);
        match (has("create"), has("delete"), has("update")) {
            (true, true, _) => Some(Self::Replace),
            (true, false, _) => Some(Self::Create),
            (false, true, _) => Some(Self::Delete),
            (false, false, true) => Some(Self::Update),
            (false, false, false) => None,
        }
    }

    /// How a listing marks it: `+` create, `~` update, `-` delete, `±` replace.
    pub fn marker(self) -> &'static str {
        match self {
            Self::Create => "+",
            Self::Update => "~",
            Self::Delete => "-",
            Self::Replace => "±",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Replace => "replace",
        }
    }
}

/// One resource the update would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewChange {
    /// The template stage whose plan holds it.
    #[serde(default)]
    pub stage: String,
    pub address: String,
    pub action: ChangeAction,
}

/// Counts of the changes: a replacement counts once, under `replace` (not as an add and a destroy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PreviewCounts {
    pub add: u32,
    pub change: u32,
    pub destroy: u32,
    pub replace: u32,
}

/// The monthly cost now and after the update, from the same plan: the current side prices each resource's
/// `before` (its state now), the proposed side its `after`, with the same price table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostDifference {
    pub currency: String,
    /// What the cluster's resources cost per month now (those priced on both sides).
    pub current_monthly: f64,
    /// What they would cost per month after the update.
    pub proposed_monthly: f64,
    /// `proposed_monthly - current_monthly`.
    pub difference_monthly: f64,
    /// Addresses without a price on one side or both (an unknown size, a type the table lacks): left out of
    /// all three figures, never counted as zero.
    #[serde(default)]
    pub not_estimated: Vec<String>,
    pub price_table_date: String,
}

impl CostDifference {
    /// The difference between two estimates of the same resources (by stage and address). A resource missing
    /// from one side costs nothing there (created or destroyed); one unpriced on either side is left out of
    /// both totals and listed, so an unknown never shows up as a saving or a cost.
    pub fn between(current: &CostEstimate, proposed: &CostEstimate) -> Self {
        use std::collections::BTreeMap;
        type Side = BTreeMap<(String, String), Option<f64>>;
        let side = |e: &CostEstimate| -> Side {
            e.resources
                .iter()
                .map(|r| ((r.stage.clone(), r.address.clone()), r.monthly))
                .collect()
        };
        let (before, after) = (side(current), side(proposed));
        let mut keys: Vec<&(String, String)> = before.keys().chain(after.keys()).collect();
        keys.sort();
        keys.dedup();
        let (mut cur, mut pro, mut unknown) = (0.0, 0.0, Vec::new());
        for k in keys {
            let b = before.get(k).copied().unwrap_or(Some(0.0));
            let a = after.get(k).copied().unwrap_or(Some(0.0));
            match (b, a) {
                (Some(b), Some(a)) => {
                    cur += b;
                    pro += a;
                }
                _ => unknown.push(k.1.clone()),
            }
        }
        let round = |x: f64| (x * 100.0).round() / 100.0;
        Self {
            currency: proposed.currency.clone(),
            current_monthly: round(cur),
            proposed_monthly: round(pro),
            // Of the exact figures: one more node costs its own price, whatever the rounding of the totals
            // (which may then differ from it by a cent).
            difference_monthly: round(pro - cur),
            not_estimated: unknown,
            price_table_date: proposed.price_table_date.clone(),
        }
    }

    /// `+$12.34/month`, `-$3.00/month` or `$0.00/month` (for USD; other currencies by code).
    pub fn difference_text(&self) -> String {
        let d = self.difference_monthly;
        let sign = if d > 0.004 {
            "+"
        } else if d < -0.004 {
            "-"
        } else {
            ""
        };
        let amount = d.abs();
        if self.currency == "USD" {
            format!("{sign}${amount:.2}/month")
        } else {
            format!("{sign}{amount:.2} {}/month", self.currency)
        }
    }
}

/// What the plan policies said of the proposed plan. A preview records a deny instead of failing on it: the
/// update would be refused at step `policy`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PolicyResults {
    /// The policy set's version (`sha256:…`).
    pub version: String,
    /// The rules that would refuse the update.
    #[serde(default)]
    pub denied: Vec<String>,
    /// Warnings: the plan's, then the request's (checked when the preview was asked for).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// What an update to the proposed spec would do, and what it would cost. Nothing of it was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    /// Every resource the update would add, change, replace or destroy, stage by stage, in plan order.
    pub changes: Vec<PreviewChange>,
    pub counts: PreviewCounts,
    pub cost: CostDifference,
    pub policy: PolicyResults,
}

impl Preview {
    /// The changes of one stage's plan (`resource_changes`, no-ops and reads left out), appended.
    pub fn add_changes(&mut self, stage: &str, changes: &[ResourceChange]) {
        for c in changes {
            let Some(action) = ChangeAction::of(&c.actions) else {
                continue;
            };
            match action {
                ChangeAction::Create => self.counts.add += 1,
                ChangeAction::Update => self.counts.change += 1,
                ChangeAction::Delete => self.counts.destroy += 1,
                ChangeAction::Replace => self.counts.replace += 1,
            }
            self.changes.push(PreviewChange {
                stage: stage.to_owned(),
                address: c.address.clone(),
                action,
            });
        }
    }

    /// `+2 ~1 -0 ±1`: the counts as a listing's header shows them.
    pub fn counts_text(&self) -> String {
        let c = &self.counts;
        format!("+{} ~{} -{} ±{}", c.add, c.change, c.destroy, c.replace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::ResourceCost;

    fn est(rs: &[(&str, Option<f64>)]) -> CostEstimate {
        let mut e = CostEstimate::empty();
        for (a, m) in rs {
            e.resources.push(ResourceCost {
                stage: "k8s".into(),
                address: (*a).into(),
                resource_type: String::new(),
                actions: Vec::new(),
                monthly: *m,
                note: String::new(),
            });
        }
        e
    }

    #[test]
    fn actions_map_to_one_marker_and_replacements_are_flagged() {
        let a = |xs: &[&str]| ChangeAction::of(&xs.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(a(&["create"]), Some(ChangeAction::Create));
        assert_eq!(a(&["update"]), Some(ChangeAction::Update));
        assert_eq!(a(&["delete"]), Some(ChangeAction::Delete));
        assert_eq!(a(&["delete", "create"]), Some(ChangeAction::Replace));
        assert_eq!(a(&["create", "delete"]), Some(ChangeAction::Replace));
        assert_eq!(a(&["no-op"]), None);
        assert_eq!(a(&["read"]), None);
        assert_eq!(ChangeAction::Replace.marker(), "±");
    }

    #[test]
    fn the_difference_leaves_out_what_either_side_cannot_price() {
        let now = est(&[("a", Some(10.0)), ("b", Some(5.0)), ("c", Some(7.0))]);
        // b grows, c is destroyed (absent), d is new, e unknown after.
        let then = est(&[
            ("a", Some(10.0)),
            ("b", Some(17.34)),
            ("d", Some(2.0)),
            ("e", None),
        ]);
        let d = CostDifference::between(&now, &then);
        assert_eq!(d.current_monthly, 22.0);
        assert_eq!(d.proposed_monthly, 29.34);
        assert!((d.difference_monthly - 7.34).abs() < 1e-9);
        assert_eq!(d.not_estimated, ["e"]);
        assert_eq!(d.difference_text(), "+$7.34/month");
        let back = CostDifference::between(&then, &now);
        assert_eq!(back.difference_text(), "-$7.34/month");
        assert_eq!(
            CostDifference::between(&now, &now).difference_text(),
            "$0.00/month"
        );
    }
}

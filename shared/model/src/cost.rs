//! Monthly cost estimates: the contract between the runner (which prices a saved plan before apply, with
//! `strato_terraform::cost`), the status function (which attaches it to the operation) and the API (which
//! shows it).

use serde::{Deserialize, Serialize};

/// One priced (or unpriceable) resource of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceCost {
    /// The template stage whose plan holds the resource (empty for a single-stage estimate).
    #[serde(default)]
    pub stage: String,
    /// Terraform address, e.g. `module.k8s.aws_eks_cluster.this`.
    pub address: String,
    /// Resource type, e.g. `aws_eks_cluster`.
    pub resource_type: String,
    /// Plan actions for this resource (`create`, `update`, `delete`, ...).
    pub actions: Vec<String>,
    /// Monthly cost in `currency` after the plan is applied; `None` = not estimated (see `note`).
    pub monthly: Option<f64>,
    /// How the figure was computed, or why it could not be.
    pub note: String,
}

/// A whole plan's estimate. Resources with no price are listed with `monthly: None`, never as zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostEstimate {
    pub currency: String,
    /// Sum of every estimated resource's monthly cost.
    pub total_monthly: f64,
    pub resources: Vec<ResourceCost>,
    /// Addresses of resources that could not be priced.
    pub not_estimated: Vec<String>,
    /// The price table's date and source, so a reader knows how current the figures are.
    pub price_table_date: String,
    pub price_table_source: String,
}

impl CostEstimate {
    /// The monthly total of the priced resources. Summed from +0.0: `Iterator::sum` of floats starts from
    /// -0.0, so an estimate with nothing priced would read "-0.00".
    pub fn priced_total(resources: &[ResourceCost]) -> f64 {
        resources
            .iter()
            .filter_map(|r| r.monthly)
            .fold(0.0, |total, m| total + m)
    }

    /// Replaces `stage`'s resources with `other`'s (set to that stage) and recomputes the totals. Applying the
    /// same stage's estimate twice (a redelivered event) gives the same result as applying it once.
    pub fn merge_stage(&mut self, stage: &str, other: &CostEstimate) {
        self.resources.retain(|r| r.stage != stage);
        self.resources
            .extend(other.resources.iter().cloned().map(|mut r| {
                r.stage = stage.to_string();
                r
            }));
        self.price_table_date.clone_from(&other.price_table_date);
        self.price_table_source.clone_from(&other.price_table_source);
        self.currency.clone_from(&other.currency);
        self.total_monthly = Self::priced_total(&self.resources);
        self.not_estimated = self
            .resources
            .iter()
            .filter(|r| r.monthly.is_none())
            .map(|r| r.address.clone())
            .collect();
    }

    pub fn empty() -> Self {
        Self {
            currency: "USD".into(),
            total_monthly: 0.0,
            resources: Vec::new(),
            not_estimated: Vec::new(),
            price_table_date: String::new(),
            price_table_source: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_priced_totals_a_positive_zero() {
        let total = CostEstimate::priced_total(&[]);
        assert!(total == 0.0 && total.is_sign_positive(), "{total}");
        assert_eq!(format!("{total:.2}"), "0.00");
    }

    fn est(addr: &str, monthly: Option<f64>) -> CostEstimate {
        let mut e = CostEstimate::empty();
        e.resources.push(ResourceCost {
            stage: String::new(),
            address: addr.into(),
            resource_type: "aws_instance".into(),
            actions: vec!["create".into()],
            monthly,
            note: String::new(),
        });
        e
    }

    #[test]
    fn merging_a_stage_twice_counts_it_once_and_unpriced_stay_listed() {
        let mut total = CostEstimate::empty();
        total.merge_stage("network", &est("aws_nat_gateway.a", Some(32.85)));
        total.merge_stage("k8s", &est("aws_eks_cluster.c", Some(73.0)));
        total.merge_stage("k8s", &est("aws_eks_cluster.c", Some(73.0)));
        total.merge_stage("addons", &est("helm_release.x", None));
        assert!(
            (total.total_monthly - 105.85).abs() < 1e-9,
            "{}",
            total.total_monthly
        );
        assert_eq!(total.resources.len(), 3);
        assert_eq!(total.not_estimated, vec!["helm_release.x".to_string()]);
    }
}

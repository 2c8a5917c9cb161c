//! How an operation shows what a preview found: the changes, their counts, the cost difference and the plan
//! policies' results (the `Preview` schema). Both the operation's view and the preview handler use it.

use serde::Serialize;
use strato_domain::preview::Preview;
use utoipa::ToSchema;

/// One resource the update would change.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = PreviewChange)]
pub(crate) struct PreviewChangeView {
    /// The template stage whose plan holds it.
    pub stage: String,
    /// e.g. `module.k8s.aws_eks_node_group.default`.
    pub address: String,
    /// `create`, `update`, `delete` or `replace` (destroyed and created again).
    #[schema(example = "replace")]
    pub action: &'static str,
    /// How listings mark it: `+` create, `~` update, `-` delete, `±` replace.
    #[schema(example = "±")]
    pub marker: &'static str,
}

/// Counts of the changes; a replacement counts once, as `replace`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = PreviewCounts)]
pub(crate) struct PreviewCountsView {
    pub add: u32,
    pub change: u32,
    pub destroy: u32,
    pub replace: u32,
}

/// The monthly cost now and after the update, priced from the one plan: each resource's state now
/// (`before`) and what the plan makes of it (`after`), with the same price table.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CostDifference)]
pub(crate) struct CostDifferenceView {
    pub currency: String,
    pub current_monthly: f64,
    pub proposed_monthly: f64,
    /// `proposed_monthly - current_monthly`.
    pub difference_monthly: f64,
    /// The difference as a person reads it, e.g. `+$12.34/month`.
    #[schema(example = "+$12.34/month")]
    pub difference: String,
    /// Resources without a price on one side or both: left out of all three figures, never counted as zero.
    pub not_estimated: Vec<String>,
    pub price_table_date: String,
}

/// What the plan policies said of the proposed plan; a denial means the update would be refused.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = PolicyResults)]
pub(crate) struct PolicyResultsView {
    /// The policy set's version (`sha256:…`).
    pub version: String,
    pub denied: Vec<String>,
    /// The plan's warnings, then the request's (marked `(request)`).
    pub warnings: Vec<String>,
}

/// What an update to the proposed spec would do and cost; a preview applies nothing.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Preview)]
pub(crate) struct PreviewView {
    /// Every resource the update would add, change, replace or destroy, stage by stage.
    pub changes: Vec<PreviewChangeView>,
    pub counts: PreviewCountsView,
    pub cost: CostDifferenceView,
    pub policy: PolicyResultsView,
    /// Always false: nothing of a preview is applied.
    pub applied: bool,
}

pub(crate) fn view(p: &Preview) -> PreviewView {
    PreviewView {
        changes: p
            .changes
            .iter()
            .map(|c| PreviewChangeView {
                stage: c.stage.clone(),
                address: c.address.clone(),
                action: c.action.as_str(),
                marker: c.action.marker(),
            })
            .collect(),
        counts: PreviewCountsView {
            add: p.counts.add,
            change: p.counts.change,
            destroy: p.counts.destroy,
            replace: p.counts.replace,
        },
        cost: CostDifferenceView {
            currency: p.cost.currency.clone(),
            current_monthly: p.cost.current_monthly,
            proposed_monthly: p.cost.proposed_monthly,
            difference_monthly: p.cost.difference_monthly,
            difference: p.cost.difference_text(),
            not_estimated: p.cost.not_estimated.clone(),
            price_table_date: p.cost.price_table_date.clone(),
        },
        policy: PolicyResultsView {
            version: p.policy.version.clone(),
            denied: p.policy.denied.clone(),
            warnings: p.policy.warnings.clone(),
        },
        applied: false,
    }
}

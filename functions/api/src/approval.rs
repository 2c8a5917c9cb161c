//! A cluster's approval mode in requests (`"approval": "auto" | "required" | null`, on create and PATCH,
//! no Terraform run for it alone) and how an operation's approval request is shown.

use serde::Serialize;
use strato_domain::approval::{Approval, ApprovalMode, Verdict};
use strato_domain::ts;
use strato_domain::validate::FieldError;
use utoipa::ToSchema;

use crate::requests::Field;
use crate::{error::ApiError, schema};

/// The mode a request asks for: `None` leaves it, `Some(None)` (null) falls back to the template's or
/// tenant's default.
pub(crate) fn parse(
    value: Field<ApprovalMode>,
    errors: &mut Vec<FieldError>,
) -> Option<Option<ApprovalMode>> {
    match value {
        Field::Missing => None,
        Field::Null => Some(None),
        Field::Ok(m) => Some(Some(m)),
        Field::Bad(v) => {
            errors.push(ApiError::field(
                "approval",
                format!("{v} is not an approval mode"),
                "auto, required, or null for the template's or tenant's default",
            ));
            None
        }
    }
}

/// One resource the plan touches, by address.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = PlannedChange)]
pub(crate) struct PlannedChangeView {
    /// e.g. `module.vpc.aws_subnet.private[0]`.
    pub address: String,
    /// Terraform's actions: `["create"]`, `["update"]`, `["delete"]`, `["delete","create"]` (replace)…
    pub actions: Vec<String>,
}

/// Counts of the plan's resource actions (a replace is one add and one destroy).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct PlanSummaryView {
    pub add: u32,
    pub change: u32,
    pub destroy: u32,
}

/// Who decided, when, and what.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ApprovalDecision)]
pub(crate) struct DecisionView {
    /// `approved`, `rejected`, `expired` (nobody answered in time) or `cancelled`.
    #[schema(value_type = String, example = "approved")]
    pub verdict: Verdict,
    /// The principal (token subject), or `strato:scheduler` for an expiry.
    pub by: String,
    #[schema(value_type = schema::Timestamp)]
    pub at: String,
    pub comment: Option<String>,
}

/// The plan an operation waits with (or waited with), and the decision on it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Approval)]
pub(crate) struct ApprovalView {
    /// The template stage the plan is for.
    pub stage: String,
    /// 1, or more when a changed state made Strato plan and ask again.
    pub round: u32,
    pub summary: PlanSummaryView,
    /// Every resource the plan adds, changes or destroys.
    pub changes: Vec<PlannedChangeView>,
    /// SHA-256 of the saved plan; the apply runs only a plan with this checksum.
    pub plan_sha256: String,
    #[schema(value_type = schema::Timestamp)]
    pub requested_at: String,
    /// Unanswered by then, the operation ends cancelled.
    #[schema(value_type = schema::Timestamp)]
    pub expires_at: String,
    pub decision: Option<DecisionView>,
}

pub(crate) fn approval(a: &Approval) -> ApprovalView {
    ApprovalView {
        stage: a.plan.stage.clone(),
        round: a.round,
        summary: PlanSummaryView {
            add: a.plan.summary.add,
            change: a.plan.summary.change,
            destroy: a.plan.summary.destroy,
        },
        changes: a
            .plan
            .changes
            .iter()
            .map(|c| PlannedChangeView {
                address: c.address.clone(),
                actions: c.actions.clone(),
            })
            .collect(),
        plan_sha256: a.plan.plan_sha256.clone(),
        requested_at: ts::format(a.requested_at),
        expires_at: ts::format(a.expires_at),
        decision: a.decision.as_ref().map(|d| DecisionView {
            verdict: d.verdict,
            by: d.by.clone(),
            at: ts::format(d.at),
            comment: d.comment.clone(),
        }),
    }
}

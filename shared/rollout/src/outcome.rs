//! How an ended operation becomes the rollout's input: a `plan` that succeeded brings its preview's
//! findings, an `update` that succeeded is an upgrade, any other end (failed, cancelled) a failure with its
//! reason. The status function feeds it to the rollout holding the cluster; the machine ignores it unless it
//! waits for exactly that operation.

use strato_domain::model::{Operation, OperationKind, OperationStatus};
use strato_domain::preview::{ChangeAction, Preview};

use crate::machine::{Input, PlanFindings};
use crate::store::MAX_ADDRESSES;

/// The findings of a cluster's plan, with at most [`MAX_ADDRESSES`] addresses of each kind kept (the
/// replaced ones decide the stop rules, so they come first in the plan's order).
pub fn findings(p: &Preview) -> PlanFindings {
    let addresses = |action: ChangeAction| -> Vec<String> {
        p.changes
            .iter()
            .filter(|c| c.action == action)
            .map(|c| c.address.clone())
            .take(MAX_ADDRESSES)
            .collect()
    };
    PlanFindings {
        add: p.counts.add,
        change: p.counts.change,
        replace: addresses(ChangeAction::Replace),
        destroy: addresses(ChangeAction::Delete),
        monthly_difference: Some(p.cost.difference_monthly),
        denied: p.policy.denied.clone(),
    }
}

/// The input an ended operation is for its rollout; `None` while it has not ended, or for a kind a rollout
/// never starts.
pub fn input_of(op: &Operation) -> Option<Input> {
    if !op.status.is_terminal() || !matches!(op.kind, OperationKind::Plan | OperationKind::Update) {
        return None;
    }
    let (cluster, operation) = (op.cluster_id.clone(), op.operation_id.clone());
    let failed = |reason: String| Input::Failed {
        cluster: cluster.clone(),
        operation: operation.clone(),
        reason,
    };
    Some(match (op.kind, op.status) {
        (OperationKind::Plan, OperationStatus::Succeeded) => match &op.preview {
            Some(p) => Input::Planned {
                cluster,
                operation,
                findings: findings(p),
            },
            None => failed("the plan ended without a preview".into()),
        },
        (OperationKind::Update, OperationStatus::Succeeded) => Input::Upgraded { cluster, operation },
        (_, OperationStatus::Cancelled) => failed("cancelled".into()),
        _ => failed(match &op.error {
            Some(e) => format!("{} ({})", e.what, e.fix),
            None => format!("{} failed", op.kind.as_str()),
        }),
    })
}

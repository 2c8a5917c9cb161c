//! The dispatcher's side of plan approvals (see [`strato_domain::approval`]): a decided operation's job
//! comes back here. Approved, the operation is queued again (still holding its cluster lock, so the claim
//! re-takes it with the same token) and a new runner applies the approved plan. Rejected, expired or
//! cancelled, it ends CANCELLED with nothing applied in this round: an update's cluster goes back to ACTIVE,
//! a create's is recorded FAILED (retry or delete it), and the lock and slot are handed on.

use strato_coordination::{ClusterFate, end_operation, step_to, update_cluster, update_operation_from};
use strato_domain::approval::Verdict;
use strato_domain::audit::{self, AuditEntry, AuditLog};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::model::{ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Clock, JobQueue, Storage, TaskLauncher};

use crate::DispatchError;
use crate::decide::Dispatcher;

/// What the tenant reads on an operation whose plan was not approved.
pub(crate) fn not_approved_error(op: &Operation, verdict: Verdict) -> UserError {
    let decision = op.approval.as_ref().and_then(|a| a.decision.as_ref());
    let by = decision.map_or("", |d| d.by.as_str());
    let what = match verdict {
        Verdict::Rejected => format!("the plan was rejected by {by}; nothing of it was applied"),
        Verdict::Expired => "nobody approved the plan before its approval request expired; nothing of it \
                             was applied"
            .to_owned(),
        _ => format!(
            "the operation was cancelled by {by} while it awaited approval; nothing of its plan was applied"
        ),
    };
    let what = match decision.and_then(|d| d.comment.as_deref()) {
        Some(c) => format!("{what} (comment: {c})"),
        None => what,
    };
    UserError::new(ErrorCategory::Cancelled, "approval", what).with_fix(
        "Change the request if needed and ask again; an approver needs the operations:approve scope.",
    )
}

impl<S, Q, L, C, A, I> Dispatcher<'_, S, Q, L, C, A, I>
where
    S: Storage,
    Q: JobQueue,
    L: TaskLauncher,
    C: Clock,
    A: AuditLog,
{
    /// `Some(op)` queued again to be claimed and started (approved); `None` when this delivery is done
    /// (no decision yet, or the operation ended).
    pub(crate) async fn act_on_decision(&self, op: Operation) -> Result<Option<Operation>, DispatchError> {
        let Some(verdict) = op.approval.as_ref().and_then(|a| a.verdict()) else {
            tracing::info!(operation_id = %op.operation_id, "awaiting approval; nothing to do yet");
            return Ok(None);
        };
        if verdict == Verdict::Approved {
            let queued = update_operation_from(self.store, op, |o| {
                if o.status != OperationStatus::AwaitingApproval {
                    return false;
                }
                // The new run is a new task: the planning task's arn stays on the approval request.
                o.status = OperationStatus::Queued;
                o.task_arn = None;
                o.wait_reason = None;
                true
            })
            .await?;
            return Ok(queued.filter(|o| o.status == OperationStatus::Queued));
        }
        let err = not_approved_error(&op, verdict);
        let cluster = match op.kind {
            OperationKind::Create => ClusterFate::Fail(&err),
            OperationKind::Update => {
                update_cluster(self.store, &op.tenant_id, &op.cluster_id, |c| {
                    Ok::<_, DispatchError>(
                        c.state() == ClusterState::Updating && step_to(c, ClusterState::Active),
                    )
                })
                .await?;
                ClusterFate::Untouched
            }
            _ => ClusterFate::Untouched,
        };
        end_operation(self.store, self.jobs, op.clone(), cluster, |o| {
            if o.status != OperationStatus::AwaitingApproval {
                return false;
            }
            o.status = OperationStatus::Cancelled;
            o.error = Some(err.clone());
            true
        })
        .await?;
        tracing::info!(operation_id = %op.operation_id, verdict = verdict.as_str(), "not approved; ended");
        let entry = AuditEntry::system(
            "dispatcher",
            op.tenant_id.clone(),
            self.clock.now(),
            "operation.end",
            audit::Outcome::Cancelled,
        )
        .on_cluster(Some(op.cluster_id.clone()))
        .on_operation(Some(op.operation_id.clone()))
        .with_detail(format!("ended cancelled: {}", err.what));
        audit::record(self.audit, entry).await;
        Ok(None)
    }
}

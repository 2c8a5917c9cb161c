//! The cancel decision.

use strato_coordination::{ClusterFate, Ended, end_operation, update_operation_from};
use strato_domain::model::{Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Clock, JobQueue, Templates};
use strato_domain::sealed::Keys;
use strato_domain::{ErrorCategory, UserError};

use super::{Api, ApiStore};
use crate::{caller::Caller, error::ApiError};

/// What a cancel did.
#[derive(Debug, Clone)]
pub enum Cancelled {
    /// The operation never reached a runner and is CANCELLED now (200).
    Now(Operation),
    /// The operation is dispatched or running: it is flagged, and its runner stops at the next safe point
    /// (202).
    Requested(Operation),
}

impl<S: ApiStore, T: Templates, Q: JobQueue, C: Clock, K: Keys> Api<'_, S, T, Q, C, K> {
    /// Queued (or parked) operations are ended on the spot through
    /// [`end_operation`](strato_coordination::end_operation), like any other end: a first create's
    /// PENDING cluster is recorded FAILED (so it can be retried or deleted and its name is not stuck), and
    /// whatever the operation holds (cluster lock, tenant slot) is handed to the next waiter. Dispatched and
    /// running ones are flagged, and their runner stops at the next safe point. If the dispatcher claims a
    /// queued operation meanwhile, the end declines and the cancel becomes such a request.
    /// The caller's operation as a timeline: another tenant's id answers the same 404 as a missing one.
    pub async fn timeline(&self, caller: &Caller, id: &str) -> Result<crate::timeline::Timeline, ApiError> {
        let op = self.load_operation(caller, id).await?;
        Ok(crate::timeline::derive(&op, self.clock.now()))
    }

    pub async fn cancel(&self, caller: &Caller, id: &str) -> Result<Cancelled, ApiError> {
        let op = self.load_operation(caller, id).await?;
        match op.status {
            OperationStatus::Queued => {
                let err = UserError::new(
                    ErrorCategory::Cancelled,
                    "queued",
                    "the operation was cancelled before it started",
                );
                let cluster = if op.kind == OperationKind::Create {
                    ClusterFate::FailIfPending(&err)
                } else {
                    ClusterFate::Untouched
                };
                let ended = end_operation(self.store, &self.jobs, op, cluster, |o| {
                    if o.status != OperationStatus::Queued {
                        return false;
                    }
                    o.status = OperationStatus::Cancelled;
                    o.wait_reason = None;
                    o.error = Some(err.clone());
                    true
                })
                .await?;
                match ended {
                    Ended::Now { op, .. } => Ok(Cancelled::Now(op)),
                    Ended::Not(op) => self.request_cancel(op).await,
                }
            }
            OperationStatus::Dispatched | OperationStatus::Running => self.request_cancel(op).await,
            // No runner to stop: the cancel is the decision, and the dispatcher ends it (202).
            OperationStatus::AwaitingApproval => {
                let op = self
                    .decide_approval(caller, id, strato_domain::approval::Verdict::Cancelled, None)
                    .await?;
                Ok(Cancelled::Requested(op))
            }
            OperationStatus::Succeeded | OperationStatus::Failed | OperationStatus::Cancelled => {
                Err(already_ended(&op))
            }
        }
    }

    /// Flags an operation a runner has (or is about to have) for cancellation.
    async fn request_cancel(&self, op: Operation) -> Result<Cancelled, ApiError> {
        let id = op.operation_id.clone();
        let op = update_operation_from(self.store, op, |o| {
            let flag = !o.status.is_terminal() && !o.cancel_requested;
            o.cancel_requested |= flag;
            flag
        })
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no operation '{id}'")))?;
        if op.status.is_terminal() {
            return Err(already_ended(&op));
        }
        Ok(Cancelled::Requested(op))
    }
}

fn already_ended(op: &Operation) -> ApiError {
    ApiError::Conflict(format!(
        "the operation is already {}; there is nothing to cancel",
        op.status.as_str()
    ))
}

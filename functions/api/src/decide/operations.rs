//! The cancel decision.

use strato_domain::model::{ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ports::{Clock, Intake, JobQueue, PortError, Storage, Templates};
use strato_domain::{ErrorCategory, UserError};

use super::Api;
use crate::{ApiError, Caller, views};

/// What a cancel did.
#[derive(Debug, Clone)]
pub enum Cancelled {
    /// The operation never reached a runner and is CANCELLED now (200).
    Now(Operation),
    /// The operation is dispatched or running: it is flagged, and its runner stops at the next safe point
    /// (202).
    Requested(Operation),
}

impl<S, T, Q, C> Api<'_, S, T, Q, C>
where
    S: Storage + Intake,
    T: Templates,
    Q: JobQueue,
    C: Clock,
{
    /// Queued (or parked) operations are cancelled on the spot; dispatched and running ones are flagged.
    /// Both writes are conditional on the operation read: if the dispatcher took a queued operation
    /// meanwhile, the cancel is a 409 to repeat (and the dispatcher, seeing a cancelled operation after its
    /// claim, hands its lock and slot on).
    pub async fn cancel(&self, caller: &Caller, id: &str) -> Result<Cancelled, ApiError> {
        let mut op = self.load_operation(caller, id).await?;
        match op.status {
            OperationStatus::Queued => {
                op.status = OperationStatus::Cancelled;
                op.wait_reason = None;
                op.error = Some(UserError::new(
                    ErrorCategory::Cancelled,
                    "queued",
                    "the operation was cancelled before it started",
                ));
                self.store.store_operation(&mut op, false).await?;
                if op.kind == OperationKind::Create {
                    self.fail_pending_cluster(caller, &op).await?;
                }
                if !op.kind.has_cluster() {
                    // A parked estimate may have left its (released) synthetic lock item behind; nothing
                    // will ever take that lock again.
                    self.store.forget_lock(&op.cluster_id, &op.operation_id).await?;
                }
                Ok(Cancelled::Now(op))
            }
            OperationStatus::Dispatched | OperationStatus::Running => {
                if !op.cancel_requested {
                    op.cancel_requested = true;
                    self.store.store_operation(&mut op, false).await?;
                }
                Ok(Cancelled::Requested(op))
            }
            OperationStatus::Succeeded | OperationStatus::Failed | OperationStatus::Cancelled => {
                Err(ApiError::Conflict(format!(
                    "the operation is already {}; there is nothing to cancel",
                    views::status_name(op.status)
                )))
            }
        }
    }

    /// A cancelled first create leaves a PENDING cluster that no runner will ever move; record it as FAILED
    /// (with the cancellation as its error) so it can be retried or deleted, and its name is not stuck.
    async fn fail_pending_cluster(&self, caller: &Caller, op: &Operation) -> Result<(), ApiError> {
        for _ in 0..3 {
            let Some(mut c) = self.store.load_cluster(&caller.tenant, &op.cluster_id).await? else {
                return Ok(());
            };
            if c.state() != ClusterState::Pending {
                return Ok(());
            }
            c.transition(ClusterState::Failed)
                .map_err(strato_aws::Error::from)?;
            c.last_error = op.error.clone();
            c.updated_at = self.clock.now();
            match self.store.store_cluster(&mut c).await {
                Ok(()) => return Ok(()),
                Err(PortError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::Store(strato_aws::Error::Conflict(format!(
            "cluster {} kept changing",
            op.cluster_id
        ))))
    }
}

//! The end of an operation: its cluster's end state, its own final status, then the hand-off (cluster lock
//! and tenant slot released, the next queued operation woken), drift follow-up and the last frames.

use strato_coordination::{ClusterFate, Ended, end_operation, release_and_wake};
use strato_domain::audit;
use strato_domain::ids::OperationId;
use strato_domain::model::{Cluster, ClusterState, DriftPolicy, Operation, OperationKind, OperationStatus};
use strato_domain::ports::Clock;

use strato_domain::ports::{ClusterLocks, NameReservations, PortError, SlotHolders};

use crate::cluster_end::apply_to_cluster;
pub(crate) use crate::ending::{Final, Outputs};
use crate::frames::{announce, end_stream};
use crate::ports::{Ports, Status};
use crate::{StatusError, drift};

/// Gives `op` the final status `fin` says (with its error, or the estimate and preview a success brought).
pub(crate) fn conclude(op: &mut Operation, fin: &Final) {
    match fin {
        Final::Succeeded {
            estimate, preview, ..
        } => {
            op.status = OperationStatus::Succeeded;
            if estimate.is_some() {
                op.estimate.clone_from(estimate);
            }
            if let Some(p) = preview {
                op.preview = Some(strato_domain::preview::Preview::clone(p));
            }
        }
        Final::Failed(err) => {
            op.status = OperationStatus::Failed;
            op.error = Some(err.clone());
        }
        Final::Cancelled => {
            op.status = OperationStatus::Cancelled;
        }
    }
    op.wait_reason = None;
}

/// Ends a running operation: cluster first (idempotent, so a crash before the operation is saved is repaired
/// by redelivery), then [`end_operation`] (the operation, and the hand-off of its lock and slot), then what
/// follows. Only the delivery that made the operation terminal hands off.
pub(crate) async fn finish<P: Ports>(
    ctx: &Status<'_, P>,
    op: Operation,
    fin: Final,
) -> Result<(), StatusError> {
    let cluster = Box::pin(apply_to_cluster(ctx, &op, &fin)).await?;
    if op.kind == OperationKind::Delete
        && matches!(fin, Final::Succeeded { .. })
        && let Some(c) = &cluster
        && c.state() == ClusterState::Deleted
    {
        ctx.store.release_name(c).await?;
    }
    let id = op.operation_id.clone();
    let end = |o: &mut Operation| {
        conclude(o, &fin);
        true
    };
    // Both boxed: the status handler's future nests every step of an end, and a debug build's poll frames
    // (the flow tests run on a 2 MiB test thread) overflow with them inline.
    match Box::pin(end_operation(
        ctx.store,
        ctx.jobs,
        op,
        ClusterFate::Untouched,
        end,
    ))
    .await
    {
        Ok(Ended::Now { op: done, .. }) => Box::pin(after_end(ctx, &done, cluster.as_ref())).await,
        // Someone else ended it concurrently; they hand off.
        Ok(Ended::Not(_)) => Ok(()),
        Err(PortError::Conflict(_)) => Err(StatusError::Contended(id)),
        Err(e) => Err(e.into()),
    }
}

/// After the end is saved and the lock and slot handed on: acts on a drift result, and tells subscribers
/// (a webhook notification last: it is only queued, and matters least).
async fn after_end<P: Ports>(
    ctx: &Status<'_, P>,
    done: &Operation,
    cluster: Option<&Cluster>,
) -> Result<(), StatusError> {
    // How the operation ended is its own audit entry: the request that queued it was only accepted.
    if let Some(entry) = audit::operation_ended("status", done, ctx.clock.now()) {
        audit::record(ctx.audit, entry).await;
    }
    let mut message = done.error.as_ref().map(|e| e.to_string());
    let mut notify = None;
    if let (OperationKind::DriftCheck, Some(c)) = (done.kind, cluster) {
        message = Some(drift::drift_message(c));
        match drift::policy_to_apply(done, c) {
            Some(DriftPolicy::Reconcile) => drift::reconcile(ctx, c).await?,
            Some(DriftPolicy::Notify) => notify = Some(c),
            None => {}
        }
    }
    announce(ctx, done, cluster, None, message).await;
    end_stream(ctx, done).await;
    if let Some(c) = notify {
        drift::notify_webhook(ctx, done, c).await?;
    }
    // Lifecycle events and the rollout's input last: their send failing does not fail the record (see
    // `lifecycle`, `rollout_feed`).
    crate::lifecycle::ended(ctx, done, cluster).await;
    crate::rollout_feed::ended(ctx, done).await;
    Ok(())
}

/// Whether an ended operation still holds its cluster lock (`lock` as read) or a tenant slot (`slots`):
/// then an earlier delivery died between saving the end and releasing.
pub(crate) fn holds_handoff(
    op: &Operation,
    lock: Option<&(OperationId, u64)>,
    slots: &[OperationId],
) -> bool {
    let holds_lock = match (lock, op.fencing_token) {
        (Some((owner, t)), Some(mine)) => owner == &op.operation_id && *t == mine,
        _ => false,
    };
    holds_lock || slots.contains(&op.operation_id)
}

/// A terminal event for an operation that is already terminal. Normally a duplicate with nothing left to do;
/// but if an earlier delivery died between saving the end and releasing, the lock or slot is still held by
/// this operation, and the hand-off is finished now. (Releases are conditional, so nothing is freed twice.)
pub(crate) async fn finish_interrupted_handoff<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
) -> Result<(), StatusError> {
    let lock = ctx.store.lock_owner(&op.cluster_id).await?;
    let slots = ctx.store.slot_holders(&op.tenant_id).await?;
    if holds_handoff(op, lock.as_ref(), &slots) {
        tracing::warn!(operation_id = %op.operation_id, "finishing a hand-off an earlier delivery left undone");
        release_and_wake(ctx.store, ctx.jobs, op).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::running;
    use strato_domain::cost::CostEstimate;
    use strato_domain::error::{ErrorCategory, UserError};

    #[test]
    fn conclude_records_the_end() {
        let (mut op, _) = running(OperationKind::Update, ClusterState::Updating);
        op.wait_reason = Some("cluster busy".into());
        let err = UserError::new(ErrorCategory::Internal, "apply", "boom");
        conclude(&mut op, &Final::Failed(err.clone()));
        assert_eq!(op.status, OperationStatus::Failed);
        assert_eq!(op.error, Some(err));
        assert_eq!(op.wait_reason, None);

        let (mut op, _) = running(OperationKind::Plan, ClusterState::Active);
        op.estimate = Some(CostEstimate::empty());
        let fin = Final::Succeeded {
            outputs: Outputs::new(),
            drift: None,
            estimate: None,
            preview: None,
            at: strato_domain::ts::now(),
        };
        conclude(&mut op, &fin);
        assert_eq!(op.status, OperationStatus::Succeeded);
        assert!(
            op.estimate.is_some(),
            "a success without an estimate keeps the one from plan-ready"
        );
    }

    #[test]
    fn a_duplicate_end_hands_off_only_what_is_still_held() {
        let (mut op, _) = running(OperationKind::Delete, ClusterState::Deleting);
        op.status = OperationStatus::Succeeded;
        let me = op.operation_id.clone();
        assert!(
            !holds_handoff(&op, None, &[]),
            "the usual duplicate: all was released"
        );
        assert!(holds_handoff(&op, Some(&(me.clone(), 1)), &[]));
        assert!(
            !holds_handoff(&op, Some(&(me.clone(), 2)), &[]),
            "a later holder's lock"
        );
        assert!(!holds_handoff(&op, Some(&(OperationId::generate(), 1)), &[]));
        assert!(holds_handoff(&op, None, std::slice::from_ref(&me)));
    }
}

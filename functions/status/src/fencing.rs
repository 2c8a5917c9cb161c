//! Fencing: an event may change an operation only if it comes from the runner that currently holds the
//! operation's fencing token (and, while the operation runs, the cluster lock). Anything else is stale: it
//! is counted on the operation and otherwise ignored.

use strato_coordination::update_operation;
use strato_domain::ids::OperationId;
use strato_domain::model::Operation;
use strato_domain::ports::ClusterLocks;

use crate::StatusError;
use crate::ports::{Ports, Status};

/// Whether an event from the holder of a token may still change an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fence {
    Current,
    Stale,
}

/// What the event itself claims: its token must be the one the operation recorded and (for ECS events) its
/// task the operation's task. An event that names no token or the operation no task is not refused here.
pub(crate) fn event_fence(op: &Operation, token: Option<u64>, task_arn: Option<&str>) -> Fence {
    if let Some(t) = token
        && op.fencing_token != Some(t)
    {
        return Fence::Stale;
    }
    if let (Some(arn), Some(mine)) = (task_arn, op.task_arn.as_deref())
        && arn != mine
    {
        return Fence::Stale;
    }
    Fence::Current
}

/// While the operation runs, the cluster lock (`lock`, as read; `None` when free) must still be held by the
/// operation with its token: a runner whose lock was taken over is a zombie.
pub(crate) fn lock_fence(op: &Operation, lock: Option<&(OperationId, u64)>) -> Fence {
    if !op.status.is_terminal()
        && let Some((owner, held)) = lock
        && (owner != &op.operation_id || Some(*held) != op.fencing_token)
    {
        return Fence::Stale;
    }
    Fence::Current
}

/// [`event_fence`], then [`lock_fence`]; the lock is read only when it can matter.
pub(crate) async fn fence<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    token: Option<u64>,
    task_arn: Option<&str>,
) -> Result<Fence, StatusError> {
    if event_fence(op, token, task_arn) == Fence::Stale {
        return Ok(Fence::Stale);
    }
    if op.status.is_terminal() {
        return Ok(Fence::Current);
    }
    let lock = ctx.store.lock_owner(&op.cluster_id).await?;
    Ok(lock_fence(op, lock.as_ref()))
}

pub(crate) async fn record_stale<P: Ports>(ctx: &Status<'_, P>, id: &OperationId) -> Result<(), StatusError> {
    let op = update_operation(ctx.store, id, |o| {
        o.stale_events += 1;
        true
    })
    .await?;
    if let Some(op) = op {
        tracing::warn!(operation_id = %op.operation_id, stale_events = op.stale_events, "stale event recorded, not applied");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::running;
    use strato_domain::model::{ClusterState, OperationKind, OperationStatus};

    #[test]
    fn a_stale_fencing_token_is_refused() {
        let (op, _) = running(OperationKind::Update, ClusterState::Updating);
        assert_eq!(event_fence(&op, Some(1), None), Fence::Current);
        assert_eq!(event_fence(&op, None, None), Fence::Current);
        assert_eq!(event_fence(&op, Some(0), None), Fence::Stale, "an older runner");
        assert_eq!(event_fence(&op, Some(2), None), Fence::Stale, "a newer runner");
    }

    #[test]
    fn another_task_is_refused() {
        let (op, _) = running(OperationKind::Update, ClusterState::Updating);
        let mine = op.task_arn.clone().unwrap();
        assert_eq!(event_fence(&op, Some(1), Some(&mine)), Fence::Current);
        assert_eq!(
            event_fence(
                &op,
                Some(1),
                Some("arn:aws:ecs:eu-west-1:123456789012:task/strato/old")
            ),
            Fence::Stale
        );
    }

    #[test]
    fn a_runner_whose_lock_was_taken_over_is_a_zombie() {
        let (mut op, _) = running(OperationKind::Update, ClusterState::Updating);
        let me = op.operation_id.clone();
        assert_eq!(lock_fence(&op, Some(&(me.clone(), 1))), Fence::Current);
        assert_eq!(
            lock_fence(&op, None),
            Fence::Current,
            "a free lock refuses nothing"
        );
        assert_eq!(
            lock_fence(&op, Some(&(me.clone(), 2))),
            Fence::Stale,
            "re-taken with a newer token"
        );
        assert_eq!(lock_fence(&op, Some(&(OperationId::generate(), 1))), Fence::Stale);
        op.status = OperationStatus::Succeeded;
        assert_eq!(
            lock_fence(&op, Some(&(OperationId::generate(), 1))),
            Fence::Current,
            "an ended operation no longer needs the lock"
        );
    }
}

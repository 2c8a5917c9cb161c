//! When a Terraform state lock of a cluster may be released by someone other than its holder: only once the
//! holder is proven gone. Terraform's lock info names a user and host, not an operation, so the candidates
//! are the cluster's operations that may have started an engine: each is gone when it is finished or its
//! task is known stopped. One rule, used by the sweeper (for locks left on idle clusters) and by the runner
//! (for locks found on its own states before its engine starts).

use strato_domain::ids::OperationId;
use strato_domain::model::{Operation, OperationStatus};

/// Whether a held state lock may be released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateLockVerdict {
    /// Nobody who could hold it is alive: release it (conditionally on the lock info read).
    HolderGone,
    /// These operations may still hold it (open, with a task not known stopped), or the cluster lock is
    /// held by another operation: leave it.
    MaybeHeld(Vec<OperationId>),
}

/// Decides for one cluster. `ops`: the cluster's operations; `asking`: the operation asking (the runner
/// holding the cluster lock; `None` for the sweeper), which is never its own obstacle; `cluster_lock_owner`:
/// who holds the cluster lock now; `task_stopped`: whether ECS says an operation's task has stopped (or is
/// gone); callers that cannot ask answer `false`, which only makes the rule more careful.
///
/// An operation still queued with no task never ran an engine; while the asker holds the cluster lock it
/// cannot start one either, so it is no candidate then. Without that (the sweeper) it may be dispatched at
/// any moment and counts.
pub fn state_lock_verdict(
    ops: &[Operation],
    asking: Option<&OperationId>,
    cluster_lock_owner: Option<&OperationId>,
    task_stopped: impl Fn(&Operation) -> bool,
) -> StateLockVerdict {
    let asker_holds_cluster = asking.is_some() && cluster_lock_owner == asking;
    let mut alive: Vec<OperationId> = ops
        .iter()
        .filter(|o| Some(&o.operation_id) != asking)
        .filter(|o| !o.status.is_terminal())
        .filter(|o| !(asker_holds_cluster && o.status == OperationStatus::Queued && o.task_arn.is_none()))
        .filter(|o| !task_stopped(o))
        .map(|o| o.operation_id.clone())
        .collect();
    if let Some(owner) = cluster_lock_owner
        && Some(owner) != asking
        && !alive.contains(owner)
    {
        alive.push(owner.clone());
    }
    if alive.is_empty() {
        StateLockVerdict::HolderGone
    } else {
        StateLockVerdict::MaybeHeld(alive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strato_domain::ids::ClusterId;
    use strato_domain::model::OperationKind;

    fn op(status: OperationStatus, task: bool) -> Operation {
        let mut o = Operation::new(
            "acme".parse().unwrap(),
            ClusterId::generate(),
            OperationKind::Update,
            strato_domain::ts::now(),
        );
        o.status = status;
        o.task_arn = task.then(|| format!("arn:task/{}", o.operation_id));
        o
    }

    #[test]
    fn a_live_runner_after_a_lease_expiry_keeps_its_state_lock() {
        // The runner asking holds the cluster lock; the earlier run is still RUNNING with a live task.
        let earlier = op(OperationStatus::Running, true);
        let me = op(OperationStatus::Running, true);
        let ops = [earlier.clone(), me.clone()];
        let v = state_lock_verdict(&ops, Some(&me.operation_id), Some(&me.operation_id), |_| false);
        assert_eq!(v, StateLockVerdict::MaybeHeld(vec![earlier.operation_id.clone()]));
        // Once ECS says its task stopped, the holder is proven gone.
        let v = state_lock_verdict(&ops, Some(&me.operation_id), Some(&me.operation_id), |o| {
            o.operation_id == earlier.operation_id
        });
        assert_eq!(v, StateLockVerdict::HolderGone);
    }

    #[test]
    fn finished_operations_and_never_started_ones_hold_nothing() {
        let failed = op(OperationStatus::Failed, true);
        let queued_behind = op(OperationStatus::Queued, false);
        let me = op(OperationStatus::Running, true);
        let ops = [failed, queued_behind, me.clone()];
        let v = state_lock_verdict(&ops, Some(&me.operation_id), Some(&me.operation_id), |_| false);
        assert_eq!(v, StateLockVerdict::HolderGone);
        // Without the cluster lock (the sweeper), the queued one may start any moment.
        let v = state_lock_verdict(&ops[..2], None, None, |_| false);
        assert_eq!(v, StateLockVerdict::MaybeHeld(vec![ops[1].operation_id.clone()]));
    }

    #[test]
    fn the_sweeper_leaves_locks_while_any_run_may_be_alive_or_the_cluster_lock_is_held() {
        let running = op(OperationStatus::Dispatched, true);
        assert_eq!(
            state_lock_verdict(std::slice::from_ref(&running), None, None, |_| false),
            StateLockVerdict::MaybeHeld(vec![running.operation_id.clone()])
        );
        let done = op(OperationStatus::Succeeded, true);
        assert_eq!(
            state_lock_verdict(std::slice::from_ref(&done), None, None, |_| false),
            StateLockVerdict::HolderGone
        );
        // A cluster lock still held (a lost hand-off) keeps the sweeper away too.
        assert_eq!(
            state_lock_verdict(
                std::slice::from_ref(&done),
                None,
                Some(&done.operation_id),
                |_| false
            ),
            StateLockVerdict::MaybeHeld(vec![done.operation_id.clone()])
        );
    }
}

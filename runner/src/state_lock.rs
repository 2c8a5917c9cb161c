//! Terraform state locks found on this cluster's states before the engine starts.
//!
//! A runner killed mid-command (SIGKILL, OOM, lost host) cannot unlock its states, and Terraform would make
//! every later run of the cluster fail on "Error acquiring the state lock". Holding the cluster lock is not
//! proof that such a lock is dead: a runner whose lease expired may still be running Terraform. So a lock is
//! released only when [`strato_terraform::state_lock::state_lock_verdict`] — the sweeper's rule — says its
//! holder is gone (every other run of the cluster finished); otherwise the runner waits, bounded, and then
//! fails naming the runs that may hold it.

use aws_sdk_dynamodb::Client;
use strato_aws::state_lock::{self, HeldLock};
use strato_domain::ids::OperationId;

/// The locks held among `lock_ids` (this cluster's states).
pub async fn held(
    ddb: &Client,
    table: &str,
    lock_ids: &[String],
) -> Result<Vec<HeldLock>, strato_aws::Error> {
    let mut out = Vec::new();
    for id in lock_ids {
        if let Some(lock) = state_lock::held(ddb, table, id).await? {
            out.push(lock);
        }
    }
    Ok(out)
}

/// Releases exactly `locks` as read (a lock taken again meanwhile stays); returns those it released.
pub async fn release(
    ddb: &Client,
    table: &str,
    locks: Vec<HeldLock>,
) -> Result<Vec<HeldLock>, strato_aws::Error> {
    let mut released = Vec::new();
    for lock in locks {
        if state_lock::release(ddb, table, &lock).await? {
            released.push(lock);
        }
    }
    Ok(released)
}

/// The note recorded in the operation's log for a released lock.
pub fn note(lock: &HeldLock) -> String {
    format!(
        "released Terraform state lock {} held by {}: a runner of this cluster stopped without unlocking \
         (every other run of this cluster has finished, so none can be using it)",
        lock.lock_id,
        lock.holder()
    )
}

/// What the run is told when a lock's holder may still be alive.
pub fn still_held(lock: &HeldLock, holders: &[OperationId], waited_secs: u64) -> (String, String) {
    let ids = holders
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    (
        format!(
            "Terraform state lock {} (held by {}) may belong to a run that is still alive: operation(s) {ids} \
             of this cluster have not finished; waited {waited_secs}s, nothing was run",
            lock.lock_id,
            lock.holder()
        ),
        format!(
            "Wait until operation(s) {ids} end (a run whose task stopped is ended by the control plane, and its \
             state lock is released afterwards), then retry this operation."
        ),
    )
}

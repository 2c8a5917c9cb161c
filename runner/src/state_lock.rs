//! Terraform state locks left by a dead runner.
//!
//! A runner killed mid-command (SIGKILL, OOM, lost host) cannot unlock its states, and Terraform would make
//! every later run of the cluster fail on "Error acquiring the state lock". The sweeper releases such locks
//! only once no operation of the cluster is open, which a retry queued right after the failure never lets
//! happen. The runner that holds the cluster lock (checked with its fencing token just before) is the only
//! one allowed to run the engine on this cluster's states, so a state lock found then cannot belong to a
//! live run: it removes the locks of its own states (and nothing else) before its engine starts.

use aws_sdk_dynamodb::Client;
use strato_aws::state_lock::{self, HeldLock};

/// Releases the leftover locks among `lock_ids` (this cluster's states); returns those it released.
pub async fn clear_leftovers(
    ddb: &Client,
    table: &str,
    lock_ids: &[String],
) -> Result<Vec<HeldLock>, strato_aws::Error> {
    let mut released = Vec::new();
    for id in lock_ids {
        if let Some(lock) = state_lock::held(ddb, table, id).await?
            && state_lock::release(ddb, table, &lock).await?
        {
            released.push(lock);
        }
    }
    Ok(released)
}

/// The note recorded in the operation's log for a released lock.
pub fn note(lock: &HeldLock) -> String {
    format!(
        "released Terraform state lock {} held by {}: a runner of this cluster stopped without unlocking \
         (this run holds the cluster lock, so no other run can be using it)",
        lock.lock_id,
        lock.holder()
    )
}

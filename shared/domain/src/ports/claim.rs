//! The dispatcher's claim as one all-or-nothing write: the cluster lock, a tenant slot, the operation marked
//! claimed, and the cluster moved into its working state. The dispatcher tries it first; when any condition
//! fails it falls back to its step-by-step claim (read, then decide), which handles every case.

use std::future::Future;

use time::{Duration, OffsetDateTime};

use super::PortError;
use crate::model::{ClusterState, Operation};

/// What the claim asks of the operation's cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterStep {
    /// No cluster stands behind the operation (an estimate): nothing is read or written.
    Untouched,
    /// The cluster must exist and not be in this state (a read-only run of a DELETED cluster is refused).
    Not(ClusterState),
    /// The cluster moves to `to` from a state the [state machine](crate::state_machine) allows (being there
    /// already fails the condition: the step-by-step claim decides that case); `clear_error` drops its last
    /// error (a create starting afresh).
    Move { to: ClusterState, clear_error: bool },
}

impl ClusterStep {
    /// The states a [`Move`](Self::Move) may start from.
    pub fn from_states(to: ClusterState) -> Vec<ClusterState> {
        crate::state_machine::TRANSITIONS
            .iter()
            .filter(|(_, t)| *t == to)
            .map(|(f, _)| *f)
            .collect()
    }
}

/// The lock's lease and the token the claim takes it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// Must be larger than the lock's stored token (the token only grows), else the claim fails on the lock.
    pub token: u64,
    pub lease: Duration,
    /// The lock is free, or its lease ended before this.
    pub now: OffsetDateTime,
    pub cluster: ClusterStep,
}

/// Which condition a claim lost; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimLost {
    /// The lock is held (lease not ended), or its stored token is not below the claim's.
    Lock,
    /// The tenant holds as many slots as its concurrency limit allows, the store cannot tell the limit
    /// within the write (a quota set before the store kept a copy of it with the slots), or another write
    /// touched the slots at the same moment.
    Slot,
    /// The operation changed since it was read.
    Operation,
    /// The cluster is missing or not in a state the step allows.
    Cluster,
}

/// The all-or-nothing claim (see the module doc).
pub trait Claims: Send + Sync {
    /// In one write: the lock of `op`'s cluster for `op` with `claim.token`, a slot of `op`'s tenant for
    /// `op` (below the tenant's concurrency limit, or already held), `op` saved as given if its stored
    /// `updated_at` is still `op.updated_at` (moved forward on success, as
    /// [`store_operation`](super::Operations::store_operation) does), and the cluster stepped as
    /// `claim.cluster` says. `Ok(Err(_))`: which condition failed; nothing was written and `op` is as given.
    fn claim(
        &self,
        op: &mut Operation,
        claim: &Claim,
    ) -> impl Future<Output = Result<Result<(), ClaimLost>, PortError>> + Send;
}

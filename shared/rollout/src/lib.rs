//! Fleet rollouts of a template version (pure decisions, no I/O): a rollout selects clusters on a template,
//! plans each on the new version (`preview`: nothing applied) or upgrades them in waves (`apply`) that stop
//! themselves — a failure, a replacement or destroy the rollout does not allow, a policy deny or a cost rise
//! above its bound pauses it, with the reason, until an operator resumes or aborts it.
//!
//! - [`spec`]: what a rollout is asked to do, checked; how the selected clusters split into waves.
//! - [`machine`]: the state machine, one input at a time (a cluster's outcome, the clock, an operator),
//!   returning the effects to carry out; duplicate and stale inputs change nothing.
//! - [`report`]: the fleet summary of the clusters' plans.
//! - [`feed`]: the `rollouts` queue's message, what the status function and the scheduler send to it, and
//!   its consumer.
//!
//! Each cluster's run is an ordinary operation of Strato (locks, queueing, retries, cleanup, approvals): the
//! rollout asks for them by id and learns their outcomes as events.

pub mod effects;
pub mod fake;
pub mod feed;
pub mod machine;
pub mod notices;
pub mod outcome;
pub mod report;
pub mod select;
pub mod spec;
pub mod store;

#[cfg(test)]
mod effects_tests;
#[cfg(test)]
mod feed_tests;
#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wiring_tests;

pub use machine::{Effect, Input, Member, MemberStatus, PauseReason, Phase, PlanFindings, Rollout};
pub use report::FleetSummary;
pub use select::{Selector, select};
pub use spec::{Mode, Plan, StopRules, WaveSize};
pub use store::{MAX_MEMBERS, Owner, Record, RolloutId, RolloutStore, apply};

use strato_domain::ids::ClusterId;

/// What a rollout refuses, each naming what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RolloutError {
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("the selector matches no cluster: nothing to roll out")]
    NothingSelected,
    #[error("cluster {0} is not part of this rollout")]
    NotAMember(ClusterId),
    #[error("the rollout has ended (completed or aborted): start a new one")]
    Finished,
    #[error("no rollout '{0}'")]
    NotFound(String),
    #[error("cluster {cluster} is already in rollout {rollout}: wait for it to end, or abort it")]
    Claimed {
        cluster: ClusterId,
        rollout: store::RolloutId,
    },
    #[error(
        "the selector matches {found} clusters; a rollout takes at most {max}: narrow the selector (e.g. by from_versions or tenants) and roll out the rest in another"
    )]
    TooMany { found: usize, max: usize },
    /// A conditional save lost to another writer (retried by [`store::apply`] before it is returned).
    #[error("the rollout kept changing while this change was being saved; try again")]
    Conflict,
    /// The store failed (the adapter's message).
    #[error("rollout store: {0}")]
    Store(String),
}

//! How a rollout learns what happened: the `rollouts` queue (SQS FIFO, grouped by rollout, drained by the
//! api function, which alone links the decisions that start a member's run) carries one
//! [`RolloutMessage`] per input.
//!
//! - The status function, when an operation ends, asks [`outcome_message`]: an ended plan or update of a
//!   cluster an active rollout holds is that rollout's input.
//! - The scheduler's sweep sends [`Input::Tick`] to every rollout whose wake time has come ([`tick_due`]),
//!   and sends again the outcome of every run a rollout waits for that has ended ([`resend_ended`]): an
//!   outcome the status function could not send is repaired by the next sweep.
//! - The consumer ([`consume`]) applies the input and carries out what it decided. A body it cannot read is
//!   dropped (it would fail the same way forever); a store that failed is retried by the queue. Duplicates
//!   and stale inputs change nothing (the machine ignores an outcome it does not wait for), so a message
//!   delivered twice starts one run.

use std::future::Future;

use serde::{Deserialize, Serialize};
use strato_domain::ids::OperationId;
use strato_domain::model::Operation;

use crate::RolloutError;
use crate::effects::{Runs, carry_out};
use crate::machine::{Input, MemberStatus};
use crate::outcome::input_of;
use crate::store::{Record, RolloutId, RolloutStore, apply};

/// One message of the `rollouts` queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutMessage {
    pub rollout_id: RolloutId,
    pub input: Input,
}

impl RolloutMessage {
    /// The FIFO message group: one rollout's inputs are applied in the order they were sent.
    pub fn group(&self) -> &str {
        self.rollout_id.as_str()
    }

    /// The FIFO deduplication id: the same input sent twice within SQS's five-minute window is delivered
    /// once. An outcome is named by its operation; a tick by its minute (`now`, unix seconds), so each
    /// sweep's tick is delivered but a retried sweep's is not.
    pub fn dedup_id(&self, now: i64) -> String {
        let input = match &self.input {
            Input::Planned { operation, .. } => format!("planned-{operation}"),
            Input::Upgraded { operation, .. } => format!("upgraded-{operation}"),
            Input::Failed { operation, .. } => format!("failed-{operation}"),
            Input::Tick => format!("tick-{}", now.div_euclid(60)),
            // The operator's inputs are applied by the api directly, never queued; named by the second.
            Input::Pause { .. } | Input::Resume { .. } | Input::Abort { .. } => format!("operator-{now}"),
        };
        format!("{}-{input}", self.rollout_id)
    }
}

/// Sending to the `rollouts` queue (SQS in `strato-aws`; a recording fake in the tests). `Err`: why not.
pub trait Queue: Send + Sync {
    fn send(&self, m: &RolloutMessage, now: i64) -> impl Future<Output = Result<(), String>> + Send;
}

/// The message an ended operation is for the rollout holding its cluster; `None` when it has not ended, is
/// of a kind a rollout never starts, or its cluster is in no active rollout. The rollout decides whether
/// it waits for exactly that operation (an operation a person queued on a member is ignored there).
pub async fn outcome_message<S: RolloutStore>(
    store: &S,
    op: &Operation,
) -> Result<Option<RolloutMessage>, RolloutError> {
    let Some(input) = input_of(op) else {
        return Ok(None);
    };
    let Some(rollout_id) = store.claimed_by(&op.cluster_id).await? else {
        return Ok(None);
    };
    Ok(Some(RolloutMessage { rollout_id, input }))
}

/// Sends [`Input::Tick`] to each active rollout due at `now`; returns how many were sent. A rollout whose
/// tick could not be sent is the next sweep's (it stays due).
pub async fn tick_due<S: RolloutStore, Q: Queue>(
    store: &S,
    queue: &Q,
    now: i64,
) -> Result<usize, RolloutError> {
    let mut sent = 0;
    for rollout_id in store.due(now).await? {
        let m = RolloutMessage {
            rollout_id,
            input: Input::Tick,
        };
        match queue.send(&m, now).await {
            Ok(()) => sent += 1,
            Err(e) => {
                return Err(RolloutError::Store(format!(
                    "sending a tick to {}: {e}",
                    m.rollout_id
                )));
            }
        }
    }
    Ok(sent)
}

/// Sends again the outcome of every run an active rollout still waits for that has ended (`operation`
/// reads an operation by id): the repair of an outcome the status function could not send. Returns how
/// many were sent. A run still going, or one not found, is left alone; a duplicate of an outcome that did
/// arrive changes nothing at the rollout (and the queue drops one sent within five minutes).
pub async fn resend_ended<S, Q, F, Fut>(
    store: &S,
    queue: &Q,
    operation: F,
    now: i64,
) -> Result<usize, RolloutError>
where
    S: RolloutStore,
    Q: Queue,
    F: Fn(OperationId) -> Fut,
    Fut: Future<Output = Result<Option<Operation>, String>>,
{
    let mut sent = 0;
    for r in store.list().await?.into_iter().filter(Record::active) {
        for m in &r.rollout.members {
            let (MemberStatus::Planning { operation: id } | MemberStatus::Upgrading { operation: id, .. }) =
                &m.status
            else {
                continue;
            };
            let Some(op) = operation(id.clone()).await.map_err(RolloutError::Store)? else {
                continue;
            };
            let Some(input) = input_of(&op) else {
                continue;
            };
            let m = RolloutMessage {
                rollout_id: r.id.clone(),
                input,
            };
            queue.send(&m, now).await.map_err(|e| {
                RolloutError::Store(format!("re-sending an outcome to {}: {e}", m.rollout_id))
            })?;
            sent += 1;
        }
    }
    Ok(sent)
}

/// What became of one queued message.
#[derive(Debug, Clone, PartialEq)]
pub enum Consumed {
    /// Applied and carried out; the rollout as last saved (or as read, when the input changed nothing).
    Applied(Box<Record>),
    /// Dropped for good (acknowledged): an unreadable body, a rollout that does not exist, an input it
    /// refuses (a cluster not in it, a rollout that has ended). Why, for the log.
    Dropped(String),
    /// Not now: the store failed or kept changing; the queue delivers it again.
    Retry(String),
}

/// Applies the queued message `body` to its rollout at `now` and carries out the effects with `runs`.
pub async fn consume<S: RolloutStore, R: Runs>(store: &S, runs: &R, body: &str, now: i64) -> Consumed {
    let m: RolloutMessage = match serde_json::from_str(body) {
        Ok(m) => m,
        Err(e) => return Consumed::Dropped(format!("not a rollout message: {e}")),
    };
    let applied = match apply(store, &m.rollout_id, m.input, now).await {
        Ok(Some(applied)) => applied,
        Ok(None) => return Consumed::Dropped(format!("no rollout '{}'", m.rollout_id)),
        Err(e) => return disposition(e),
    };
    let (r, effects) = applied;
    match carry_out(store, runs, r, effects, now).await {
        Ok(r) => Consumed::Applied(Box::new(r)),
        Err(e) => disposition(e),
    }
}

fn disposition(e: RolloutError) -> Consumed {
    match e {
        RolloutError::Conflict | RolloutError::Store(_) => Consumed::Retry(e.to_string()),
        _ => Consumed::Dropped(e.to_string()),
    }
}

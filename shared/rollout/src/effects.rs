//! Carrying out a rollout's effects after they were saved: start each run the machine asked for, tell
//! people when it paused, completed or was aborted. Whoever fed the input carries them out — the api (start,
//! resume), the status function (an operation ended), the scheduler (a soak ended) — so no function waits on
//! another. A run that cannot start (the cluster is FAILED, being deleted, its variables refused by the new
//! version) is that member's failure, fed back to the rollout like any other.

use std::future::Future;

use strato_domain::ids::OperationId;

use crate::RolloutError;
use crate::machine::{Effect, Input, Member, PauseReason};
use crate::store::{Record, RolloutStore, apply};

/// What a rollout tells the world (webhooks `rollout.paused`, `rollout.completed`; the audit log).
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    Paused(PauseReason),
    Completed,
    Aborted,
}

/// Starting the runs and telling people: the adapters are the api's decisions (a plan-only operation as
/// `POST /v1/clusters/{id}/plan` queues it; an ordinary update) and the webhook queue.
pub trait Runs: Send + Sync {
    /// Queues the plan-only operation `operation` of `member` on the rollout's version; nothing when it
    /// exists already. `Err`: why it cannot start (for people).
    fn plan(
        &self,
        r: &Record,
        member: &Member,
        operation: &OperationId,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Queues the update `operation` of `member` to the rollout's version (the same).
    fn update(
        &self,
        r: &Record,
        member: &Member,
        operation: &OperationId,
    ) -> impl Future<Output = Result<(), String>> + Send;

    fn notify(&self, r: &Record, notice: Notice) -> impl Future<Output = ()> + Send;
}

/// The most rounds of refused starts fed back in one call (each round can only settle members, so a
/// rollout needs at most one per member; the bound keeps a misbehaving adapter from looping).
const ROUNDS: usize = 8;

/// Carries out `effects` of the rollout `r` (as saved). A refused start is fed back as the member's
/// failure (and what that decides is carried out too). Returns the rollout as last saved.
pub async fn carry_out<S: RolloutStore, R: Runs>(
    store: &S,
    runs: &R,
    mut r: Record,
    mut effects: Vec<Effect>,
    now: i64,
) -> Result<Record, RolloutError> {
    for _ in 0..ROUNDS {
        let mut refused = Vec::new();
        for e in effects {
            match e {
                Effect::Plan { cluster, operation } => {
                    let Some(m) = r.rollout.members.iter().find(|m| m.cluster == cluster) else {
                        continue;
                    };
                    if let Err(reason) = runs.plan(&r, m, &operation).await {
                        refused.push(Input::Failed {
                            cluster,
                            operation,
                            reason,
                        });
                    }
                }
                Effect::Update { cluster, operation } => {
                    let Some(m) = r.rollout.members.iter().find(|m| m.cluster == cluster) else {
                        continue;
                    };
                    if let Err(reason) = runs.update(&r, m, &operation).await {
                        refused.push(Input::Failed {
                            cluster,
                            operation,
                            reason,
                        });
                    }
                }
                // The stored wake time is what the scheduler looks for.
                Effect::WakeAt(_) => {}
                Effect::Paused(reason) => runs.notify(&r, Notice::Paused(reason)).await,
                Effect::Completed => runs.notify(&r, Notice::Completed).await,
                Effect::Aborted => runs.notify(&r, Notice::Aborted).await,
            }
        }
        if refused.is_empty() {
            return Ok(r);
        }
        effects = Vec::new();
        for input in refused {
            if let Some((saved, more)) = apply(store, &r.id, input, now).await? {
                r = saved;
                effects.extend(more);
            }
        }
    }
    Ok(r)
}

//! The rules of approving: whether a decision may be recorded on an operation (it awaits one, the request has
//! not expired, the approver is not the requester where separation is required, and the plan decided is the
//! one pending now), and what an operation's approval says about its next run. The records are in
//! [`crate::approval`].

use time::OffsetDateTime;

use crate::approval::{Approval, Decision, SavedPlan, Verdict};
use crate::model::{Operation, OperationStatus};

impl Operation {
    /// The plan an approver approved, which this operation's next run applies.
    pub fn approved_plan(&self) -> Option<&SavedPlan> {
        let a = self.approval.as_ref()?;
        (a.verdict() == Some(Verdict::Approved)).then_some(&a.plan)
    }

    /// Waiting for an approver: no decision recorded yet.
    pub fn awaits_decision(&self) -> bool {
        self.status == OperationStatus::AwaitingApproval
            && self.approval.as_ref().is_some_and(|a| a.decision.is_none())
    }
}

/// Why a decision was refused (each a 409 or 403 to the API's caller).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the operation is {0:?}, not awaiting approval")]
    NotAwaiting(OperationStatus),
    #[error("the operation was already {}", .0.as_str())]
    AlreadyDecided(Verdict),
    #[error("the approval request expired at {0}")]
    Expired(String),
    #[error("you requested this operation; another principal must approve it")]
    OwnRequest,
    /// Nobody is recorded as the requester (an operation asked for by a token without a subject), so
    /// separation of duties cannot be shown: it is not approved, only rejected (and asked for again).
    #[error("no requester is recorded for this operation, so another principal's approval cannot be shown")]
    UnknownRequester,
    /// The decision names a plan other than the one pending now (another round or stage came meanwhile).
    #[error(
        "the plan pending now is round {} of stage {} with plan sha256 {}, not the one this decision names",
        .0.round, .0.stage, .0.plan_sha256
    )]
    OtherPlan(Box<Pending>),
}

/// The plan an approver saw (`POST …/approve` names it); each part left out is not checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub plan_sha256: Option<String>,
    pub round: Option<u32>,
    pub stage: Option<String>,
}

/// What is pending now, for a refused [`Seen`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub plan_sha256: String,
    pub round: u32,
    pub stage: String,
}

impl Seen {
    /// Whether `a` is the request the approver saw; every part given must match.
    fn check(&self, a: &Approval) -> Result<(), Refusal> {
        let same = self
            .plan_sha256
            .as_deref()
            .is_none_or(|s| s == a.plan.plan_sha256)
            && self.round.is_none_or(|r| r == a.round)
            && self.stage.as_deref().is_none_or(|s| s == a.plan.stage);
        if same {
            Ok(())
        } else {
            Err(Refusal::OtherPlan(Box::new(Pending {
                plan_sha256: a.plan.plan_sha256.clone(),
                round: a.round,
                stage: a.plan.stage.clone(),
            })))
        }
    }
}

/// Records `verdict` by `by` on `op` if it may be: the operation awaits a decision, the request has not
/// expired, and (with `separate`) the approver is not the requester. Rejecting one's own request is allowed:
/// it only withdraws it.
pub fn decide(
    op: &mut Operation,
    verdict: Verdict,
    by: &str,
    comment: Option<String>,
    separate: bool,
    now: OffsetDateTime,
) -> Result<(), Refusal> {
    decide_seen(op, verdict, by, comment, separate, now, &Seen::default())
}

/// [`decide`], for the plan the approver `seen`: a decision recorded on another round or stage than the one
/// shown would approve what nobody reviewed, so it is refused, naming what is pending now.
pub fn decide_seen(
    op: &mut Operation,
    verdict: Verdict,
    by: &str,
    comment: Option<String>,
    separate: bool,
    now: OffsetDateTime,
    seen: &Seen,
) -> Result<(), Refusal> {
    let Some(approval) = op.approval.as_mut() else {
        return Err(Refusal::NotAwaiting(op.status));
    };
    if let Some(d) = &approval.decision {
        return Err(Refusal::AlreadyDecided(d.verdict));
    }
    if op.status != OperationStatus::AwaitingApproval {
        return Err(Refusal::NotAwaiting(op.status));
    }
    seen.check(approval)?;
    if verdict == Verdict::Approved {
        if now >= approval.expires_at {
            return Err(Refusal::Expired(crate::ts::format(approval.expires_at)));
        }
        if separate {
            match op.requested_by.as_deref() {
                None => return Err(Refusal::UnknownRequester),
                Some(requester) if requester == by => return Err(Refusal::OwnRequest),
                Some(_) => {}
            }
        }
    }
    approval.decision = Some(Decision {
        verdict,
        by: by.to_owned(),
        at: now,
        comment,
    });
    Ok(())
}

#[cfg(test)]
mod tests;

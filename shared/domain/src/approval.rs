//! Plan approvals. A create or update whose approval mode is `required` stops after its plan (and estimate,
//! budget and policy checks): the runner saves the plan sealed in the artifacts bucket, reports it
//! ([`SavedPlan`]) and its task ends; the operation waits in `awaiting_approval`, still holding its cluster
//! lock (so nothing else moves the state the plan was made against) but not a tenant slot (no runner runs).
//! An approver's decision ([`decide`]) is recorded on the operation and its job queued again: approved, a new
//! runner applies exactly the saved plan (its checksum verified) or, if the state changed since, plans again
//! and asks again; rejected, expired or cancelled, the dispatcher ends it cancelled and hands the lock on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::messages::PlanSummary;
use crate::model::{Operation, OperationStatus, ResourceChange};

/// Whether a cluster's creates and updates wait for an approver after their plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Applied as soon as planned (and allowed by budget and policies).
    #[default]
    Auto,
    /// Stops after the plan until someone with `operations:approve` approves or rejects it.
    Required,
}

impl ApprovalMode {
    /// The mode that applies: the cluster's own, else its template's, else the tenant's default, else auto.
    pub fn resolve(cluster: Option<Self>, template: Option<Self>, tenant: Option<Self>) -> Self {
        cluster.or(template).or(tenant).unwrap_or_default()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Auto => "auto",
            ApprovalMode::Required => "required",
        }
    }
}

/// How long an approval request waits before it expires (the operation then ends cancelled), unless
/// `STRATO_APPROVAL_TTL_HOURS` says otherwise.
pub const DEFAULT_APPROVAL_TTL: Duration = Duration::hours(72);

/// The state a plan was made against: Terraform refuses a saved plan once either moved, and so does Strato,
/// before it tries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateStamp {
    pub lineage: String,
    pub serial: u64,
}

/// A plan the runner saved for approval: what it does, where it is kept and how to know it is the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedPlan {
    /// The template stage the plan is for (`main` for a single-stage template).
    pub stage: String,
    pub summary: PlanSummary,
    /// Each resource the plan adds, changes or destroys, by address, with its actions.
    pub changes: Vec<ResourceChange>,
    /// The sealed plan's key in the artifacts bucket.
    pub plan_key: String,
    /// SHA-256 (hex) of the plan file as the engine wrote it; the apply refuses any other.
    pub plan_sha256: String,
    /// The state the plan was made against; `None` when the stage had no state yet (a first create).
    pub state: Option<StateStamp>,
}

/// What an approver (or Strato) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approved,
    Rejected,
    /// Nobody answered before `expires_at` (decided by the scheduler).
    Expired,
    /// The operation was cancelled while it waited.
    Cancelled,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approved => "approved",
            Verdict::Rejected => "rejected",
            Verdict::Expired => "expired",
            Verdict::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// The principal (JWT subject), or `strato:scheduler` for an expiry.
    pub by: String,
    #[serde(with = "crate::ts")]
    pub at: OffsetDateTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// An operation's approval request, from its plan to the decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub plan: SavedPlan,
    /// 1 for the first plan; one more each time a changed state made the runner plan and ask again.
    pub round: u32,
    #[serde(with = "crate::ts")]
    pub requested_at: OffsetDateTime,
    #[serde(with = "crate::ts")]
    pub expires_at: OffsetDateTime,
    #[serde(default)]
    pub decision: Option<Decision>,
    /// The runner task that made the plan: its stop is expected, not a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_arn: Option<String>,
}

impl Approval {
    /// A fresh request for `plan`, following `previous` (a re-plan) if there was one.
    pub fn request(plan: SavedPlan, previous: Option<&Approval>, now: OffsetDateTime, ttl: Duration) -> Self {
        Self {
            plan,
            round: previous.map_or(1, |p| p.round + 1),
            requested_at: now,
            expires_at: now + ttl,
            decision: None,
            task_arn: None,
        }
    }

    pub fn verdict(&self) -> Option<Verdict> {
        self.decision.as_ref().map(|d| d.verdict)
    }
}

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
    let Some(approval) = op.approval.as_mut() else {
        return Err(Refusal::NotAwaiting(op.status));
    };
    if let Some(d) = &approval.decision {
        return Err(Refusal::AlreadyDecided(d.verdict));
    }
    if op.status != OperationStatus::AwaitingApproval {
        return Err(Refusal::NotAwaiting(op.status));
    }
    if verdict == Verdict::Approved {
        if now >= approval.expires_at {
            return Err(Refusal::Expired(crate::ts::format(approval.expires_at)));
        }
        if separate && op.requested_by.as_deref() == Some(by) {
            return Err(Refusal::OwnRequest);
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

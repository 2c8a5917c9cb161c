//! Plan approvals. A create or update whose approval mode is `required` stops after its plan (and estimate,
//! budget and policy checks): the runner saves the plan sealed in the artifacts bucket, reports it
//! ([`SavedPlan`]) and its task ends; the operation waits in `awaiting_approval`, still holding its cluster
//! lock (so nothing else moves the state the plan was made against) but not a tenant slot (no runner runs).
//! An approver's decision (`approval_rules::decide`) is recorded on the operation and its job queued again: approved, a new
//! runner applies exactly the saved plan (its checksum verified) or, if the state changed since, plans again
//! and asks again; rejected, expired or cancelled, the dispatcher ends it cancelled and hands the lock on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::plan::{PlanSummary, ResourceChange};

/// Whether a cluster's creates and updates wait for an approver after their plan. Ordered by strictness
/// (`Auto < Required`): where several settings apply, the strictest wins.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Applied as soon as planned (and allowed by budget and policies).
    #[default]
    Auto,
    /// Stops after the plan until someone with `operations:approve` approves or rejects it.
    Required,
}

impl ApprovalMode {
    /// The mode that applies: the strictest of the cluster's own, its template's and the tenant's default
    /// (auto when none says). A cluster setting can add a requirement, never take one away: the template's
    /// author and the tenant's administrator decide the floor, not whoever may write the cluster.
    pub fn resolve(cluster: Option<Self>, template: Option<Self>, tenant: Option<Self>) -> Self {
        [cluster, template, tenant]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or_default()
    }

    /// What changing a cluster's own setting from `old` to `new` (`None`: back to the default) does, given
    /// its template's and its tenant's modes.
    pub fn judge_change(
        old: Option<Self>,
        new: Option<Self>,
        template: Option<Self>,
        tenant: Option<Self>,
    ) -> SettingChange {
        let before = Self::resolve(old, template, tenant);
        if new == old || new.unwrap_or_default() >= before {
            return SettingChange::Allowed;
        }
        let floor = Self::resolve(None, template, tenant);
        match new {
            Some(asked) if asked < floor => SettingChange::BelowFloor { floor },
            _ => SettingChange::Lowers {
                from: old,
                to: new,
                applies: Self::resolve(new, template, tenant),
            },
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Auto => "auto",
            ApprovalMode::Required => "required",
        }
    }
}

/// A change of a cluster's own approval setting, judged against its template's and tenant's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingChange {
    /// Keeps or tightens what applies: whoever may write the cluster may ask for it.
    Allowed,
    /// Asks for less than applies now (the cluster's own `required` taken back): only an administrator may,
    /// and the change is audited. `applies` is the mode that applies afterwards.
    Lowers {
        from: Option<ApprovalMode>,
        to: Option<ApprovalMode>,
        applies: ApprovalMode,
    },
    /// `auto` on a cluster whose template or tenant requires approval: no cluster setting lowers that.
    BelowFloor { floor: ApprovalMode },
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

// The rules over these records (who may decide, when, on which plan) are in `approval_rules`, above the
// model that holds the records.

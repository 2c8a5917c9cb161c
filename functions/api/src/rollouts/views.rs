//! How a rollout reads over the API: its phase and pause reason, the fleet summary, its members paged.

use serde::{Deserialize, Serialize};
use strato_rollout::Mode;
use strato_rollout::machine::{MemberStatus, Phase, PlanFindings};
use strato_rollout::report::FleetSummary;
use strato_rollout::store::{Owner, Record};
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;

/// `?limit=&next=` of a rollout's members.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
pub(crate) struct MembersQuery {
    pub limit: Option<String>,
    pub next: Option<String>,
}

const DEFAULT_MEMBERS: usize = 50;
const MAX_PAGE: usize = 200;

impl MembersQuery {
    /// (offset, limit), or a 400 naming the parameter.
    fn page(&self) -> Result<(usize, usize), ApiError> {
        let bad = |name: &str, what: &str| ApiError::BadRequest {
            detail: format!("{name} must be {what}"),
            errors: Vec::new(),
        };
        let limit = match &self.limit {
            None => DEFAULT_MEMBERS,
            Some(l) => l
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_PAGE).contains(n))
                .ok_or_else(|| bad("limit", "a whole number from 1 to 200"))?,
        };
        let offset = match &self.next {
            None => 0,
            Some(n) => n
                .parse::<usize>()
                .map_err(|_| bad("next", "the next value of the previous page"))?,
        };
        Ok((offset, limit))
    }
}

/// One selected cluster and how far it got.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = RolloutMember)]
pub(crate) struct RolloutMemberView {
    pub cluster_id: String,
    pub tenant_id: String,
    /// The version it was on when selected.
    pub from_version: String,
    /// The wave it is upgraded in (0 first).
    pub wave: usize,
    /// `pending`, `planning`, `planned`, `upgrading`, `upgraded`, `failed`, `held` or `skipped`.
    pub status: String,
    /// The operation the rollout waits for on it (its plan or update).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// Why it failed, was held or skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub create: u32,
    pub update: u32,
    /// Addresses its plan replaces (at most 10 kept).
    pub replace: Vec<String>,
    /// Addresses its plan destroys (at most 10 kept).
    pub destroy: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monthly_delta: Option<f64>,
    /// Policy rules that would refuse its update.
    pub denied: Vec<String>,
}

/// The fleet summary: what the members' plans found, added up.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = RolloutSummary)]
pub(crate) struct SummaryView {
    /// One line, e.g. `40 clusters: 37 in place, 3 replace aws_eks_node_group.this, 0 destroy; +$120.00/month`.
    pub text: String,
    pub clusters: usize,
    pub in_place: usize,
    pub upgraded: usize,
    pub held: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Not planned yet, or being planned or updated.
    pub waiting: usize,
    pub monthly_delta: f64,
}

/// A rollout.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Rollout)]
pub(crate) struct RolloutView {
    pub id: String,
    pub template: String,
    pub to_version: String,
    /// `preview` or `apply`.
    pub mode: String,
    /// The tenant whose fleet it is; absent for the platform operator's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    pub created_by: String,
    /// `running`, `soaking`, `paused`, `completed` or `aborted`.
    pub phase: String,
    /// The wave being worked on (running, soaking, paused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wave: Option<usize>,
    /// Why it paused (paused only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<String>,
    /// When the next wave starts (soaking only; RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soak_until: Option<String>,
    pub summary: SummaryView,
    /// One page of the members (in wave order).
    pub members: Vec<RolloutMemberView>,
    /// `?next=` for the following page of members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// The rollouts the caller may see, newest first (members left out: `GET /v1/rollouts/{id}`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = RolloutList)]
pub(crate) struct RolloutListView {
    pub rollouts: Vec<RolloutView>,
}

fn member(m: &strato_rollout::machine::Member) -> RolloutMemberView {
    let (status, operation, reason, findings): (&str, _, _, Option<&PlanFindings>) = match &m.status {
        MemberStatus::Pending => ("pending", None, None, None),
        MemberStatus::Planning { operation } => ("planning", Some(operation), None, None),
        MemberStatus::Planned { findings } => ("planned", None, None, Some(findings)),
        MemberStatus::Upgrading { operation, findings } => {
            ("upgrading", Some(operation), None, Some(findings))
        }
        MemberStatus::Upgraded { findings } => ("upgraded", None, None, Some(findings)),
        MemberStatus::Failed { reason } => ("failed", None, Some(reason), None),
        MemberStatus::Held { reason, findings } => ("held", None, Some(reason), Some(findings)),
        MemberStatus::Skipped { reason } => ("skipped", None, Some(reason), None),
    };
    let f = findings.cloned().unwrap_or_default();
    RolloutMemberView {
        cluster_id: m.cluster.to_string(),
        tenant_id: m.tenant.to_string(),
        from_version: m.from_version.clone(),
        wave: m.wave,
        status: status.to_owned(),
        operation_id: operation.map(ToString::to_string),
        reason: reason.cloned(),
        create: f.add,
        update: f.change,
        replace: f.replace,
        destroy: f.destroy,
        monthly_delta: findings.and_then(|f| f.monthly_difference),
        denied: f.denied,
    }
}

impl RolloutView {
    fn head(r: &Record) -> Self {
        let s = FleetSummary::of(&r.rollout);
        let (phase, wave, pause_reason, soak_until) = match &r.rollout.phase {
            Phase::Running { wave } => ("running", Some(*wave), None, None),
            Phase::Soaking { wave, until } => (
                "soaking",
                Some(*wave),
                None,
                time::OffsetDateTime::from_unix_timestamp(*until)
                    .ok()
                    .map(strato_domain::ts::format),
            ),
            Phase::Paused { wave, reason } => ("paused", Some(*wave), Some(reason.text()), None),
            Phase::Completed => ("completed", None, None, None),
            Phase::Aborted { by } => ("aborted", None, Some(format!("aborted by {by}")), None),
        };
        Self {
            id: r.id.to_string(),
            template: r.template.clone(),
            to_version: r.to_version.clone(),
            mode: match r.rollout.plan.mode {
                Mode::Preview => "preview",
                Mode::Apply => "apply",
            }
            .to_owned(),
            tenant_id: match &r.owner {
                Owner::Tenant { tenant } => Some(tenant.to_string()),
                Owner::Platform => None,
            },
            created_by: r.created_by.clone(),
            phase: phase.to_owned(),
            wave,
            pause_reason,
            soak_until,
            summary: SummaryView {
                text: s.text(),
                clusters: s.clusters,
                in_place: s.in_place,
                upgraded: s.upgraded,
                held: s.held,
                failed: s.failed,
                skipped: s.skipped,
                waiting: s.waiting,
                monthly_delta: s.monthly_difference,
            },
            members: Vec::new(),
            next: None,
        }
    }

    pub(crate) fn of(r: &Record, q: &MembersQuery) -> Result<Self, ApiError> {
        let (offset, limit) = q.page()?;
        let mut v = Self::head(r);
        v.members = r
            .rollout
            .members
            .iter()
            .skip(offset)
            .take(limit)
            .map(member)
            .collect();
        let end = offset.saturating_add(limit);
        v.next = (end < r.rollout.members.len()).then(|| end.to_string());
        Ok(v)
    }
}

impl RolloutListView {
    pub(crate) fn of<'a>(records: impl Iterator<Item = &'a Record>) -> Self {
        Self {
            rollouts: records.map(RolloutView::head).collect(),
        }
    }
}

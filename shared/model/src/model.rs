//! Domain records: what a cluster is, what an operation on it is.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::UserError;
use crate::ids::{ClusterId, ClusterName, OperationId, TenantId};
pub use crate::state_machine::ClusterState;
use crate::state_machine::TransitionError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CloudProvider {
    Aws,
    Gcp,
    Azure,
    Digitalocean,
    Linode,
}

impl CloudProvider {
    pub const ALL: [CloudProvider; 5] = [
        CloudProvider::Aws,
        CloudProvider::Gcp,
        CloudProvider::Azure,
        CloudProvider::Digitalocean,
        CloudProvider::Linode,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CloudProvider::Aws => "aws",
            CloudProvider::Gcp => "gcp",
            CloudProvider::Azure => "azure",
            CloudProvider::Digitalocean => "digitalocean",
            CloudProvider::Linode => "linode",
        }
    }
}

impl fmt::Display for CloudProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CloudProvider {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        CloudProvider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown provider '{s}'; allowed: aws, gcp, azure, digitalocean, linode"))
    }
}

/// A template pinned by name and exact version; clusters keep the version they were created with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateRef {
    pub name: String,
    pub version: String,
}

/// What a tenant asks for. Variables are raw JSON until validated against the template
/// (see `strato_domain::validate::validate`), which yields a `strato_domain::validate::ValidatedSpec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterSpec {
    pub name: ClusterName,
    pub template: TemplateRef,
    pub provider: CloudProvider,
    pub region: String,
    #[serde(default)]
    pub variables: BTreeMap<String, serde_json::Value>,
    /// Run in the customer's own account (and keep state there) instead of the platform's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

mod state_listing;
mod targets;
pub use state_listing::*;
pub use targets::*;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DriftInfo {
    pub drifted: bool,
    #[serde(with = "crate::ts::option", default)]
    pub checked_at: Option<OffsetDateTime>,
    /// `address: action` per changed resource, as the plan reported it.
    #[serde(default)]
    pub changed_resources: Vec<ResourceChange>,
    pub operation_id: Option<OperationId>,
}

/// What a detected drift leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftPolicy {
    /// Record it on the cluster and tell subscribers; a person decides.
    #[default]
    Notify,
    /// Queue an update that applies the desired state again.
    Reconcile,
}

/// Default time between drift checks of an ACTIVE cluster.
pub const DEFAULT_DRIFT_INTERVAL_SECS: u64 = 6 * 3600;

/// The step a create with an agent opens when its apply ends: it waits for the agent's Ready nodes.
pub const CONFIGURE_STEP: &str = "configure";

pub use crate::plan::ResourceChange;

/// A Terraform state object put back to an earlier S3 version (the way out of a corrupted state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateRestore {
    /// The state object's key (one per template stage).
    pub key: String,
    /// The version that was copied back.
    pub from_version: String,
    /// The new current version holding the copy (the replaced version is kept too).
    pub new_version: String,
    pub restored_by: String,
    #[serde(with = "crate::ts")]
    pub at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub tenant_id: TenantId,
    pub cluster_id: ClusterId,
    pub spec: ClusterSpec,
    /// Private: it changes only through [`Cluster::transition`], which checks the state machine. Serde
    /// still reads and writes it as `state`, so stored items and API views are unchanged.
    state: ClusterState,
    /// Optimistic-concurrency version: every write is conditioned on the version it read.
    pub version: u64,
    /// Non-sensitive outputs only; sensitive ones live encrypted elsewhere.
    #[serde(default)]
    pub outputs: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub drift: DriftInfo,
    #[serde(default)]
    pub drift_policy: DriftPolicy,
    /// Seconds between drift checks; `None` = [`DEFAULT_DRIFT_INTERVAL_SECS`].
    #[serde(default)]
    pub drift_interval_secs: Option<u64>,
    #[serde(default)]
    pub state_restores: Vec<StateRestore>,
    /// The newest list of its state versions in the customer's own storage (a run lists them at its end);
    /// `None` for state in Strato's bucket, or before a run listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_state: Option<CustomerStateListing>,
    pub last_error: Option<UserError>,
    /// Sort key of the `by_state` index: when the next drift check is due (ACTIVE clusters only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_drift_check_at: Option<String>,
    /// sha256 of the agent's registration token (key of the `by_agent_token` index); the token itself is
    /// never stored in the clear.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_token_hash: Option<String>,
    #[serde(with = "crate::ts::option", default)]
    pub agent_registered_at: Option<OffsetDateTime>,
    /// When the agent's last accepted report (registration or heartbeat) arrived. Sort key of the sparse
    /// `by_agent_seen` index, so never written as null.
    #[serde(with = "crate::ts::option", default, skip_serializing_if = "Option::is_none")]
    pub agent_last_seen: Option<OffsetDateTime>,
    /// sha256 of the agent's credential (`<cluster id>.<secret>`, issued at registration); cleared when a
    /// delete is accepted, which revokes it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_credential_hash: Option<String>,
    /// sha256 of a rotated credential not used yet: both work until this one is first used, which retires
    /// the other.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_next_credential_hash: Option<String>,
    /// The health the agent's reports show (`strato_domain::health`); `None`: unknown (no report yet).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub health: Option<crate::health::ClusterHealth>,
    /// Partition key of the sparse `by_agent_seen` index (`strato_domain::health::watch_bucket`); the store
    /// sets it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_watch: Option<String>,
    #[serde(with = "crate::ts::option", default)]
    pub configuring_deadline: Option<OffsetDateTime>,
    /// The newest operation the API queued on this cluster, written in the same transaction as that
    /// operation (`strato_domain::ports::Intake::add_operation_on`). Read consistently
    /// with the cluster, it is what a later request builds on (an update's pending spec, a repeated drift
    /// check) without trusting the eventually consistent index of a cluster's operations.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pending_operation: Option<OperationId>,
    /// When the scheduler deletes the cluster on its own (`strato_domain::expiry`); `None`: never.
    #[serde(with = "crate::ts::option", default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<OffsetDateTime>,
    /// The expiry time the `cluster.expiring` notice was sent for: once per expiry time (extending it
    /// makes a new notice due).
    #[serde(with = "crate::ts::option", default, skip_serializing_if = "Option::is_none")]
    pub expiry_notified_for: Option<OffsetDateTime>,
    /// Partition key of the sparse `by_expiry` index (`strato_domain::expiry::index_bucket`); the store sets it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expiry_bucket: Option<String>,
    /// Whether its creates and updates wait for an approver; `None`: its template's or tenant's default.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub approval: Option<crate::approval::ApprovalMode>,
    #[serde(with = "crate::ts")]
    pub created_at: OffsetDateTime,
    #[serde(with = "crate::ts")]
    pub updated_at: OffsetDateTime,
}

/// How many state restores a cluster item remembers (the newest): a DynamoDB item holds at most 400 KB,
/// and every restore is also in the audit log.
pub const STATE_RESTORES_KEPT: usize = 20;

impl Cluster {
    /// Remembers a state restore, forgetting the oldest beyond [`STATE_RESTORES_KEPT`].
    pub fn record_restore(&mut self, r: StateRestore) {
        self.state_restores.push(r);
        let excess = self.state_restores.len().saturating_sub(STATE_RESTORES_KEPT);
        self.state_restores.drain(..excess);
    }

    /// A new PENDING cluster, as a create records it.
    pub fn new(tenant_id: TenantId, cluster_id: ClusterId, spec: ClusterSpec, now: OffsetDateTime) -> Self {
        Self {
            tenant_id,
            cluster_id,
            spec,
            state: ClusterState::Pending,
            version: 0,
            outputs: BTreeMap::new(),
            drift: DriftInfo::default(),
            drift_policy: DriftPolicy::default(),
            drift_interval_secs: None,
            state_restores: Vec::new(),
            customer_state: None,
            last_error: None,
            next_drift_check_at: None,
            agent_token_hash: None,
            agent_registered_at: None,
            agent_last_seen: None,
            agent_credential_hash: None,
            agent_next_credential_hash: None,
            health: None,
            agent_watch: None,
            configuring_deadline: None,
            pending_operation: None,
            expires_at: None,
            expiry_notified_for: None,
            expiry_bucket: None,
            approval: None,
            created_at: now,
            updated_at: now,
        }
    }

    pub fn state(&self) -> ClusterState {
        self.state
    }

    /// Moves the cluster to `to` if the [state machine](crate::state_machine) allows it; otherwise the
    /// cluster is left as it was. Staying in the same state is not a transition (an error too).
    pub fn transition(&mut self, to: ClusterState) -> Result<(), TransitionError> {
        crate::state_machine::check(self.state, to)?;
        self.state = to;
        Ok(())
    }

    /// Test-only: the cluster as a store might hold it in `state`, without walking the lifecycle there.
    #[cfg(any(test, feature = "fakes"))]
    pub fn in_state(mut self, state: ClusterState) -> Self {
        self.state = state;
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OperationKind {
    Create,
    Update,
    Delete,
    Plan,
    DriftCheck,
    /// Copies an earlier version of a stage's state back in the customer's own storage
    /// ([`Operation::restore`] says which); no engine command runs.
    RestoreState,
    /// A plan-only cost estimate of a spec (`POST /v1/estimates`): no cluster exists. Its `cluster_id` is a
    /// synthetic id that is never written as a cluster; it only names the operation's lock and job group.
    Estimate,
}

impl OperationKind {
    /// Whether the operation changes infrastructure (and so needs the cluster's write path).
    pub fn mutates(self) -> bool {
        matches!(
            self,
            OperationKind::Create | OperationKind::Update | OperationKind::Delete
        )
    }

    /// Whether a cluster record stands behind the operation's `cluster_id` (false for estimates, whose id is
    /// synthetic: nothing reads, moves or fails a cluster for them).
    pub fn has_cluster(self) -> bool {
        self != OperationKind::Estimate
    }

    /// The wire name (`create`, `drift-check`, …), for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationKind::Create => "create",
            OperationKind::Update => "update",
            OperationKind::Delete => "delete",
            OperationKind::Plan => "plan",
            OperationKind::DriftCheck => "drift-check",
            OperationKind::RestoreState => "restore-state",
            OperationKind::Estimate => "estimate",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OperationStatus {
    Queued,
    Dispatched,
    Running,
    /// Planned; waits for an approver (see [`crate::approval`]). No runner runs.
    AwaitingApproval,
    Succeeded,
    Failed,
    Cancelled,
}

impl OperationStatus {
    /// The wire name (`queued`, `awaiting_approval`…), for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationStatus::Queued => "queued",
            OperationStatus::Dispatched => "dispatched",
            OperationStatus::Running => "running",
            OperationStatus::AwaitingApproval => "awaiting_approval",
            OperationStatus::Succeeded => "succeeded",
            OperationStatus::Failed => "failed",
            OperationStatus::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            OperationStatus::Succeeded | OperationStatus::Failed | OperationStatus::Cancelled
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// e.g. `init`, `plan`, `apply`, or `network/apply` for a staged template.
    pub name: String,
    #[serde(with = "crate::ts")]
    pub started_at: OffsetDateTime,
    #[serde(with = "crate::ts::option", default)]
    pub finished_at: Option<OffsetDateTime>,
    pub ok: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    pub operation_id: OperationId,
    pub tenant_id: TenantId,
    pub cluster_id: ClusterId,
    pub kind: OperationKind,
    pub status: OperationStatus,
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Incremented each time the operation is (re)started by the runner.
    pub attempt: u32,
    pub error: Option<UserError>,
    /// The spec this operation applies (create, update, retry); the cluster's current spec otherwise.
    pub spec: Option<ClusterSpec>,
    /// The cluster lock's fencing token while this operation holds it.
    pub fencing_token: Option<u64>,
    pub task_arn: Option<String>,
    #[serde(with = "crate::ts::option", default)]
    pub heartbeat_at: Option<OffsetDateTime>,
    /// When the dispatcher launched this attempt's runner task (set with `task_arn`); for the timeline.
    #[serde(with = "crate::ts::option", default)]
    pub dispatched_at: Option<OffsetDateTime>,
    /// When the runner's first event of this attempt says it started (the move to RUNNING); for the timeline.
    #[serde(with = "crate::ts::option", default)]
    pub started_at: Option<OffsetDateTime>,
    /// When the operation became terminal, set by the store on that write (`updated_at` moves on later
    /// writes, e.g. webhook delivery notes); for the timeline.
    #[serde(with = "crate::ts::option", default)]
    pub ended_at: Option<OffsetDateTime>,
    /// Why a queued operation is parked (cluster busy, tenant at its concurrency limit).
    pub wait_reason: Option<String>,
    #[serde(default)]
    pub cancel_requested: bool,
    /// Runner events that arrived with a fencing token that no longer held the lock: recorded, not applied.
    #[serde(default)]
    pub stale_events: u32,
    /// Who asked for it (the JWT subject, or `strato:scheduler`).
    pub requested_by: Option<String>,
    /// What the control plane did to this operation on its own (e.g. the sweeper releasing a Terraform
    /// state lock a dead runner left), for the record.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The version (a hash) of the policy set its request was checked against (policy as code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<String>,
    /// Cost estimate of the saved plan(s), attached before apply.
    #[serde(default)]
    pub estimate: Option<crate::cost::CostEstimate>,
    /// A preview's (`plan` operation's) result: the changes, policy results and cost difference of the
    /// proposed spec; absent until it succeeded, and on every other kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<crate::preview::Preview>,
    /// Whether its plan waits for an approver before it is applied (the mode resolved when it was asked for).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval_required: bool,
    /// The approval request of its plan, and the decision once taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<crate::approval::Approval>,
    /// The trace all its jobs, runs and events join (its creator's); absent on older operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<crate::telemetry::Traceparent>,
    /// The current run's OIDC identity tokens, one per stage, sealed (minted by the dispatcher when the
    /// target federates; see `strato_domain::identity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_identity: Option<crate::run_identity::RunTokens>,
    /// A `restore-state` operation's chosen version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreRequest>,
    #[serde(with = "crate::ts")]
    pub created_at: OffsetDateTime,
    #[serde(with = "crate::ts")]
    pub updated_at: OffsetDateTime,
}

impl Operation {
    /// A queued operation in a trace of its own, until its creator joins it to the request's.
    pub fn new(tenant_id: TenantId, cluster_id: ClusterId, kind: OperationKind, now: OffsetDateTime) -> Self {
        Self {
            operation_id: OperationId::generate(),
            tenant_id,
            cluster_id,
            kind,
            status: OperationStatus::Queued,
            steps: Vec::new(),
            attempt: 0,
            error: None,
            spec: None,
            fencing_token: None,
            task_arn: None,
            heartbeat_at: None,
            dispatched_at: None,
            started_at: None,
            ended_at: None,
            wait_reason: None,
            cancel_requested: false,
            stale_events: 0,
            requested_by: None,
            notes: Vec::new(),
            policy_version: None,
            estimate: None,
            preview: None,
            approval_required: false,
            approval: None,
            traceparent: Some(crate::telemetry::Traceparent::new_root()),
            run_identity: None,
            restore: None,
            created_at: now,
            updated_at: now,
        }
    }

    pub fn current_step(&self) -> Option<&Step> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.finished_at.is_none())
            .or(self.steps.last())
    }

    /// A create whose apply ended and that waits for the cluster agent (its [`CONFIGURE_STEP`] is open): its
    /// runner is done, so only the agent or the configure deadline ends it.
    pub fn awaiting_agent(&self) -> bool {
        let open = |s: &Step| s.name == CONFIGURE_STEP && s.finished_at.is_none();
        self.kind == OperationKind::Create && !self.status.is_terminal() && self.steps.iter().any(open)
    }
}

#[cfg(test)]
mod tests;

impl Operation {
    /// Records the operation's ids on `span` (the fields of [`crate::telemetry::fields`]).
    pub fn record_on(&self, span: &tracing::Span) {
        use crate::telemetry::fields;
        span.record(fields::TENANT_ID, self.tenant_id.as_str());
        span.record(fields::CLUSTER_ID, self.cluster_id.as_str());
        span.record(fields::OPERATION_ID, self.operation_id.as_str());
        span.record(fields::OPERATION_KIND, self.kind.as_str());
        span.record(fields::ATTEMPT, self.attempt);
        if let Some(arn) = &self.task_arn {
            span.record(fields::TASK_ARN, arn.as_str());
        }
    }
}

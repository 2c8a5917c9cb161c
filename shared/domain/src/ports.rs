//! Ports: the small interfaces the decision logic (dispatcher, scheduler, hand-off) takes its dependencies through. The
//! AWS adapters (`strato-aws`) implement them on DynamoDB, SQS and ECS; the in-memory fakes (`fakes`
//! feature) implement the same conditional-write semantics, so every decision is unit-tested without AWS.
//!
//! Every future is `Send`: the Lambda runtime drives handlers on a multi-threaded executor.

use std::future::Future;

mod claim;
mod status;

pub use claim::{Claim, ClaimLost, Claims, ClusterStep};
pub use status::{EventsQueue, FrameSink, LeaseRenewal, NameReservations, RunArchive, SlotHolders, Webhooks};

use time::{Duration, OffsetDateTime};

use crate::ecs_event::TaskStateChangeEvent;
use crate::ids::{ClusterId, OperationId, TenantId};
use crate::messages::JobMessage;
use crate::model::{Cluster, Operation, OperationStatus};
use crate::template::Template;

pub use crate::error::BoxError;

/// What a port call can fail with: the crate's one error enum, under the name the port signatures read best with
/// (`Conflict`, `NotFound`, `Unavailable` and `Other` are the variants adapters report).
pub type PortError = crate::Error;

/// Operation records, saved by optimistic concurrency on `updated_at`.
pub trait Operations: Send + Sync {
    /// The operation, read consistently; `None` when it does not exist.
    fn load_operation(
        &self,
        id: &OperationId,
    ) -> impl Future<Output = Result<Option<Operation>, PortError>> + Send;

    /// Saves `op` if its `updated_at` is still the stored one, moving `updated_at` forward; otherwise
    /// [`PortError::Conflict`] and `op` is left as it was. `was_terminal`: whether the operation read was
    /// already terminal (the adapter keeps the tenant's open-operation count in step when it becomes so).
    fn store_operation(
        &self,
        op: &mut Operation,
        was_terminal: bool,
    ) -> impl Future<Output = Result<(), PortError>> + Send;

    /// [`store_operation`](Self::store_operation), and in the same all-or-nothing write appends `entry` to
    /// the audit log: the entry exists exactly when the change it records does, at no extra call.
    fn store_operation_recorded(
        &self,
        op: &mut Operation,
        was_terminal: bool,
        entry: &crate::audit::AuditEntry,
    ) -> impl Future<Output = Result<(), PortError>> + Send;

    /// The cluster's open (non-terminal) operations, oldest first. What a decision about a cluster needs;
    /// the cost is what is open, never the cluster's whole history. Like the index behind it, it may lag a
    /// write by a moment (and list an operation that has just ended): callers check `status` again.
    fn open_cluster_operations(
        &self,
        cluster: &ClusterId,
    ) -> impl Future<Output = Result<Vec<Operation>, PortError>> + Send;

    /// At most `limit` of the cluster's newest operations, newest first (bounded history: a retry's attempt
    /// count, the last try of a scheduled delete).
    fn recent_cluster_operations(
        &self,
        cluster: &ClusterId,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Operation>, PortError>> + Send;

    /// Queued operations parked with a `wait_reason`, oldest first.
    fn parked_operations(&self) -> impl Future<Output = Result<Vec<Operation>, PortError>> + Send;

    /// The open operations in one [`OpenStatus`] bucket, oldest first.
    fn open_operations(
        &self,
        bucket: OpenStatus,
    ) -> impl Future<Output = Result<Vec<Operation>, PortError>> + Send;

    /// Records a new operation on an existing cluster, unless the tenant already has as many open
    /// operations as its quota allows (`Ok(Err(_))`, nothing written).
    fn record_operation(
        &self,
        op: &Operation,
    ) -> impl Future<Output = Result<Result<(), QuotaExceeded>, PortError>> + Send;
}

/// Where an open operation stands, as the store indexes it: the sweeper reads one bucket at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenStatus {
    /// Queued and not parked: its job is (or should be) on the queue.
    Queued,
    /// Queued but parked with a `wait_reason`, waiting to be woken.
    Waiting,
    Dispatched,
    Running,
    /// Planned, waiting for an approver's decision (or its expiry).
    AwaitingApproval,
}

impl OpenStatus {
    /// The bucket `op` is in; `None` once it is terminal.
    pub fn of(op: &Operation) -> Option<Self> {
        match op.status {
            OperationStatus::Queued if op.wait_reason.is_some() => Some(Self::Waiting),
            OperationStatus::Queued => Some(Self::Queued),
            OperationStatus::Dispatched => Some(Self::Dispatched),
            OperationStatus::Running => Some(Self::Running),
            OperationStatus::AwaitingApproval => Some(Self::AwaitingApproval),
            _ => None,
        }
    }

    /// The store's index key for the bucket.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Waiting => "waiting",
            Self::Dispatched => "dispatched",
            Self::Running => "running",
            Self::AwaitingApproval => "awaiting_approval",
        }
    }
}

/// The tenant's open-operation quota refused a new operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaExceeded {
    /// The quota: open operations the tenant may have at once.
    pub max: u32,
}

/// Cluster records, saved by optimistic concurrency on `version`.
pub trait Clusters: Send + Sync {
    fn load_cluster(
        &self,
        tenant: &TenantId,
        id: &ClusterId,
    ) -> impl Future<Output = Result<Option<Cluster>, PortError>> + Send;

    /// Saves `cluster` if its `version` is still the stored one, bumping it; otherwise
    /// [`PortError::Conflict`] and `cluster.version` is left as it was.
    fn store_cluster(&self, cluster: &mut Cluster) -> impl Future<Output = Result<(), PortError>> + Send;

    /// ACTIVE clusters whose next drift check is at or before `now`, at most `limit` of them. A cluster
    /// with no next check set is never due.
    fn clusters_due_for_drift(
        &self,
        now: OffsetDateTime,
        limit: i32,
    ) -> impl Future<Output = Result<Vec<Cluster>, PortError>> + Send;

    /// Clusters with an expiry at or before `before`, soonest first, at most `limit` (the sparse
    /// `by_expiry` index: clusters without an expiry or being deleted are not in it).
    fn clusters_expiring_before(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> impl Future<Output = Result<Vec<Cluster>, PortError>> + Send;

    /// Clusters whose agent is expected to report and last did at or before `before`, longest silent
    /// first, at most `limit` (the sparse `by_agent_seen` index: clusters already marked silent are not
    /// in it; see [`crate::health::watch_bucket`]).
    fn clusters_silent_since(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> impl Future<Output = Result<Vec<Cluster>, PortError>> + Send;
}

/// Why new work could not be recorded: a rule the tenant can act on, not a fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateRejected {
    /// The tenant already has a cluster of that name.
    NameTaken,
    ClusterQuota {
        max: u32,
    },
    OperationQuota {
        max: u32,
    },
}

/// What the API records: new clusters and operations, bounded by the tenant's quotas.
pub trait Intake: Send + Sync {
    /// Records the cluster, its first operation, the reservation of its name and the tenant's counters, all
    /// or nothing. `Ok(Err(_))` says which rule refused it (and nothing was written). `audit`, the entry
    /// of the request that asks for it, is written in the same all-or-nothing write: the log never shows a
    /// create that did not happen, nor misses one that did.
    fn create_cluster(
        &self,
        cluster: &Cluster,
        op: &Operation,
        audit: Option<&crate::audit::AuditEntry>,
    ) -> impl Future<Output = Result<Result<(), CreateRejected>, PortError>> + Send;

    /// Records a new operation on an existing cluster, bounded by the tenant's open-operation quota.
    fn add_operation(
        &self,
        op: &Operation,
    ) -> impl Future<Output = Result<Result<(), CreateRejected>, PortError>> + Send;

    /// Like [`add_operation`](Self::add_operation), and in the same all-or-nothing write marks `op` as the
    /// cluster's [`pending_operation`](Cluster::pending_operation), conditioned on `cluster.version` as read
    /// (bumping it). A cluster changed meanwhile is [`PortError::Conflict`] and nothing is written: two
    /// concurrent requests cannot both queue on the same cluster state. On success `cluster` is as stored.
    fn add_operation_on(
        &self,
        cluster: &mut Cluster,
        op: &Operation,
    ) -> impl Future<Output = Result<Result<(), CreateRejected>, PortError>> + Send;
}

/// Who set a tenant's stored policy: the tenant (its admins change them) or the platform operator (for this
/// tenant; the tenant reads them and cannot change them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyOwner {
    Tenant,
    Operator,
}

/// The policies stored for one tenant, by owner, each name → Rego source (the platform's own ship with the
/// catalog and are not stored).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredPolicies {
    pub tenant: std::collections::BTreeMap<String, String>,
    pub operator: std::collections::BTreeMap<String, String>,
}

/// What an operator set on a tenant item that requests are held to, read in one item read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TenantRules {
    /// The tenant's own maximum lifetime of a cluster, in hours (`max_ttl_hours`); `None`: the platform
    /// default, if any ([`crate::expiry`]).
    pub max_ttl_hours: Option<u64>,
    /// The tenant's default approval mode (`approval`) for clusters and templates that set none
    /// ([`crate::approval`]).
    pub approval: Option<crate::approval::ApprovalMode>,
}

/// Per-tenant rules: lifetime limit and approval default.
pub trait TenantSettings: Send + Sync {
    fn tenant_rules(&self, tenant: &TenantId) -> impl Future<Output = Result<TenantRules, PortError>> + Send;
}

/// The published templates (immutable once published).
pub trait Templates: Send + Sync {
    /// The template version; `None` when it is not published.
    fn template(
        &self,
        name: &str,
        version: &str,
    ) -> impl Future<Output = Result<Option<Template>, PortError>> + Send;

    /// Every published version, by name then version.
    fn templates(&self) -> impl Future<Output = Result<Vec<Template>, PortError>> + Send;

    /// A published version's standing (active when it was never set). May be up to
    /// [`TEMPLATE_STATUS_MAX_AGE`] old where another process set it.
    fn status(
        &self,
        name: &str,
        version: &str,
    ) -> impl Future<Output = Result<crate::template_status::TemplateStatus, PortError>> + Send;

    /// Every version of `name` with its standing, read now (what a refusal names as the usable one).
    fn statuses(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Vec<(String, crate::template_status::TemplateStatus)>, PortError>> + Send;
}

/// How old a template version's standing may be where another process set it: a deprecation or yank
/// applies at once in the process that wrote it and within this long everywhere else.
pub const TEMPLATE_STATUS_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30);

/// Outcome of trying to take a cluster lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOutcome {
    Acquired { fencing_token: u64 },
    Held { owner: OperationId },
}

/// One lock per cluster: a lease, and a fencing token that grows on every acquisition.
pub trait ClusterLocks: Send + Sync {
    /// Takes the lock for `op` when it is free or its lease ended before `now`. Taking it again as its
    /// holder returns the same token (a redelivered job).
    fn acquire_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        lease: Duration,
        now: OffsetDateTime,
    ) -> impl Future<Output = Result<LockOutcome, PortError>> + Send;

    /// Frees the lock only while `op` holds it with `fencing_token`; `false` when it did not. The token
    /// is kept, so the next holder's is larger.
    fn release_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
    ) -> impl Future<Output = Result<bool, PortError>> + Send;

    /// Forgets the lock of an id that will never be locked again (an estimate's synthetic cluster id),
    /// unless another operation holds it (`false`).
    fn forget_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
    ) -> impl Future<Output = Result<bool, PortError>> + Send;

    /// The lock's holder and its token; `None` while the lock is free.
    fn lock_owner(
        &self,
        cluster: &ClusterId,
    ) -> impl Future<Output = Result<Option<(OperationId, u64)>, PortError>> + Send;
}

/// A tenant's concurrent-operation slots: a set of operation ids no larger than the tenant's limit.
pub trait TenantSlots: Send + Sync {
    /// How many operations the tenant may run at once.
    fn concurrency_limit(&self, tenant: &TenantId) -> impl Future<Output = Result<u32, PortError>> + Send;

    /// Takes a slot for `op`; taking it twice is harmless. `false` when the tenant is at `limit`.
    fn acquire_slot(
        &self,
        tenant: &TenantId,
        op: &OperationId,
        limit: u32,
    ) -> impl Future<Output = Result<bool, PortError>> + Send;

    fn release_slot(
        &self,
        tenant: &TenantId,
        op: &OperationId,
    ) -> impl Future<Output = Result<(), PortError>> + Send;

    /// Every tenant's slot holders (tenants holding none may be left out): what the sweeper reconciles
    /// against the operations, so a slot whose release was lost is not held forever.
    fn all_slot_holders(
        &self,
    ) -> impl Future<Output = Result<Vec<(TenantId, Vec<OperationId>)>, PortError>> + Send;
}

/// Everything the control plane keeps about operations, clusters, locks and slots.
pub trait Storage: Operations + Clusters + ClusterLocks + TenantSlots + Claims {}

impl<T: Operations + Clusters + ClusterLocks + TenantSlots + Claims> Storage for T {}

/// The job queue (`jobs.fifo`): one FIFO group per cluster, so a cluster's jobs are never handed out
/// concurrently or reordered.
pub trait JobQueue: Send + Sync {
    /// Sends `job` in its cluster's group. The deduplication id is the operation id plus `wake`: a repeated
    /// send with the same `wake` is dropped, a deliberate re-enqueue (new `wake`) is not.
    fn enqueue(&self, job: &JobMessage, wake: &str) -> impl Future<Output = Result<(), PortError>> + Send;

    /// Makes a received job visible again after `secs` (backoff). Best effort: if this fails the job comes
    /// back after the queue's visibility timeout anyway.
    fn retry_after(&self, receipt_handle: &str, secs: i32) -> impl Future<Output = ()> + Send;
}

/// Why the runner was not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchFailure {
    /// Throttling, capacity, or a network/server fault: worth retrying with backoff.
    Transient(String),
    /// Anything else (bad task definition, missing cluster, permissions): retrying will not help.
    Fatal(String),
}

/// Starts runners (one container task per operation).
pub trait TaskLauncher: Send + Sync {
    /// A task already started for `op` and still meant to run (a redelivered job whose first delivery died
    /// after starting it). May miss a task started moments ago (the listing is eventually consistent).
    fn find_started(
        &self,
        op: &OperationId,
    ) -> impl Future<Output = Result<Option<String>, PortError>> + Send;

    /// Starts the runner for `op` with its fencing token, returning the task's id. Idempotent per
    /// `(op, fencing_token)`: starting again under the same token returns the same task rather than a second.
    /// `trace` is the runner's parent in the operation's trace (the dispatcher's span).
    fn launch(
        &self,
        op: &crate::model::Operation,
        fencing_token: u64,
        trace: Option<&crate::telemetry::Traceparent>,
    ) -> impl Future<Output = Result<String, LaunchFailure>> + Send;
}

/// What ECS says of a runner's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// Not stopped (provisioning, pending, running or stopping): the runner may still report.
    Alive,
    Stopped {
        stopped_reason: Option<String>,
        /// The runner container's exit code, when it has one.
        exit_code: Option<i32>,
    },
    /// ECS no longer knows the task (stopped tasks are forgotten after about an hour).
    Missing,
}

/// Looks at runners' tasks.
pub trait TaskStatus: Send + Sync {
    fn task_state(&self, task: &str) -> impl Future<Output = Result<TaskState, PortError>> + Send;
}

/// Where ECS task state changes go (the status function's events queue): the sweeper sends what
/// EventBridge would have, for a runner whose stop event never came.
pub trait TaskEventSink: Send + Sync {
    fn send_task_event(
        &self,
        event: &TaskStateChangeEvent,
    ) -> impl Future<Output = Result<(), PortError>> + Send;

    /// Sends a control event (a configure deadline whose timer was lost) for the status function, at once.
    fn send_control_event(
        &self,
        event: &crate::messages::ControlEvent,
    ) -> impl Future<Output = Result<(), PortError>> + Send;
}

/// A Terraform state lock held on one of Strato's cluster states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateLock {
    /// `<bucket>/<key>` of the locked state.
    pub lock_id: String,
    /// The cluster whose state it is.
    pub cluster: ClusterId,
    /// Terraform's lock info (JSON naming the holder); empty when the item has none. A lock taken again
    /// has another, which is how a release touches only the lock that was read.
    pub info: String,
}

impl StateLock {
    /// "who (operation, created)" from the lock info, for notes.
    pub fn holder(&self) -> String {
        state_lock_holder(&self.info)
    }
}

/// "who (operation, created)" from Terraform's lock info JSON.
pub fn state_lock_holder(info: &str) -> String {
    serde_json::from_str::<serde_json::Value>(info)
        .ok()
        .map(|v| format!("{} ({}, {})", v["Who"], v["Operation"], v["Created"]))
        .unwrap_or_else(|| "unknown holder".into())
}

/// Terraform's state locks (its S3 backend's lock table).
pub trait StateLocks: Send + Sync {
    /// Every state lock held on a cluster's state (digest items and foreign states are not locks).
    fn held_state_locks(&self) -> impl Future<Output = Result<Vec<StateLock>, PortError>> + Send;

    /// Deletes exactly `lock` as read; `false` when it was already gone or taken again meanwhile.
    fn release_state_lock(&self, lock: &StateLock) -> impl Future<Output = Result<bool, PortError>> + Send;
}

/// One stored version of a cluster's Terraform state object: the same record whichever storage lists it
/// (Strato's bucket live, the customer's storage through a run's report).
pub use crate::model::ListedStateVersion as StateVersion;

/// What putting an earlier state version back produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredState {
    /// The new current version, holding a copy of the restored one (the replaced version is kept too).
    pub new_version: String,
}

/// The clusters' Terraform state objects, every version kept (the versioned state bucket), and the digest
/// Terraform checks a state against.
pub trait StateArchive: Send + Sync {
    /// Every version of every `.tfstate` object of `cluster`, as listed.
    fn state_versions(
        &self,
        tenant: &TenantId,
        cluster: &ClusterId,
    ) -> impl Future<Output = Result<Vec<StateVersion>, PortError>> + Send;

    /// Copies `version` of its key back on top, and records the restored bytes' digest where Terraform
    /// checks it (the state it must accept now).
    fn restore_state_version(
        &self,
        version: &StateVersion,
    ) -> impl Future<Output = Result<RestoredState, PortError>> + Send;
}

/// The time decisions are taken at (lock leases).
pub trait Clock: Send + Sync {
    fn now(&self) -> OffsetDateTime;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        crate::ts::now()
    }
}

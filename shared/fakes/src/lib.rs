//! In-memory implementations of the [ports](strato_domain::ports) for fast tests (feature `fakes`). They keep the
//! semantics of the real adapters' conditional writes — version and `updated_at` checks, lock leases
//! judged against the time given, fencing tokens that only grow, bounded slot sets, FIFO deduplication,
//! RunTask's client token — and let a test look at what was sent and launched, and script failures.

mod audit;
mod claim;
mod clusters;
mod intake;
mod scheduler;
mod state;
mod status;
mod world;

pub use audit::FakeAuditLog;
pub use intake::FakeTemplates;
pub use scheduler::{FakeStateLocks, FakeTaskEvents};
pub use state::FakeStateArchive;
pub use status::{FakeRunArchive, FakeStatusQueues, FakeWebhooks};
pub use strato_domain::sealed::FakeKeys;
pub use world::World;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use time::{Duration, OffsetDateTime};

use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{Cluster, Operation, OperationStatus};
use strato_domain::ports::{
    Clock, ClusterLocks, LaunchFailure, LockOutcome, OpenStatus, Operations, PortError, QuotaExceeded,
    TaskLauncher, TaskState, TenantSlots,
};

mod approval;
mod jobs;
mod launcher;

pub use approval::saved_plan;
pub use jobs::{FakeJobQueue, SentJob};
pub use launcher::{FakeLauncher, LaunchedTask};

/// A panic in one test thread must not hide the state from the assertions that follow.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A clock that moves only when told. Clones share the time.
#[derive(Debug, Clone)]
pub struct FakeClock(Arc<Mutex<OffsetDateTime>>);

impl FakeClock {
    pub fn at(t: OffsetDateTime) -> Self {
        Self(Arc::new(Mutex::new(t)))
    }

    pub fn advance(&self, by: Duration) {
        *lock(&self.0) += by;
    }

    pub fn set(&self, t: OffsetDateTime) {
        *lock(&self.0) = t;
    }
}

impl Default for FakeClock {
    /// 2026-01-01T00:00:00Z: a fixed start keeps tests reproducible.
    fn default() -> Self {
        Self::at(time::macros::datetime!(2026-01-01 00:00 UTC))
    }
}

impl Clock for FakeClock {
    fn now(&self) -> OffsetDateTime {
        *lock(&self.0)
    }
}

/// A cluster lock item. Released locks keep their item (and token), as in the locks table.
#[derive(Debug, Clone, Default)]
struct LockItem {
    owner: Option<OperationId>,
    lease_expires_at: Option<OffsetDateTime>,
    fencing_token: u64,
}

#[derive(Debug, Default)]
struct StoreState {
    clusters: HashMap<(TenantId, ClusterId), Cluster>,
    operations: BTreeMap<OperationId, Operation>,
    locks: HashMap<ClusterId, LockItem>,
    slots: HashMap<TenantId, BTreeSet<OperationId>>,
    limits: HashMap<TenantId, u32>,
    /// `(max clusters, max open operations)` of tenants given their own.
    quotas: HashMap<TenantId, (u32, u32)>,
    /// Tenants' own maximum cluster lifetimes (hours).
    max_ttl: HashMap<TenantId, u64>,
    approval: HashMap<TenantId, strato_domain::approval::ApprovalMode>,
    /// Saves still to lose as if another writer got there first.
    injected_conflicts: usize,
    /// The operations as the cluster index last showed them, while the index lags ([`FakeStore::lag_index`]).
    lagging_index: Option<BTreeMap<OperationId, Operation>>,
    /// Operation records handed out by the cluster-scoped listings so far ([`FakeStore::operations_listed`]).
    listed: usize,
    /// `load_operation` calls so far ([`FakeStore::operations_loaded`]).
    loaded: usize,
}

/// Operations, clusters, cluster locks and tenant slots in memory. Clones share the data.
#[derive(Debug, Clone)]
pub struct FakeStore {
    state: Arc<Mutex<StoreState>>,
    clock: FakeClock,
    /// Where the entries written with a change go (the audit table, as the adapter's transactions write
    /// it): [`World`] links it to its [`FakeAuditLog`].
    audit: FakeAuditLog,
}

/// The platform's default concurrency quota, as the tenants table gives it to a tenant without one.
pub const DEFAULT_CONCURRENCY_LIMIT: u32 = 5;
/// The platform's default cluster quota.
pub const DEFAULT_MAX_CLUSTERS: u32 = 20;
/// The platform's default quota of queued and running operations.
pub const DEFAULT_MAX_OPEN_OPERATIONS: u32 = 50;

impl FakeStore {
    /// Takes `op`'s cluster lock for `lease` and a slot of its tenant (of at most five) at the store's
    /// clock time, as the dispatcher does before it starts a run: the lock's fencing token. Panics where
    /// the cluster is locked or the tenant has no slot left.
    pub async fn hold(&self, op: &Operation, lease: Duration) -> u64 {
        let now = self.clock.now();
        let taken = self
            .acquire_lock(&op.cluster_id, &op.operation_id, lease, now)
            .await;
        let LockOutcome::Acquired { fencing_token } = taken.expect("the fake store answers") else {
            panic!("cluster {} is locked", op.cluster_id)
        };
        let slot = self.acquire_slot(&op.tenant_id, &op.operation_id, 5).await;
        assert!(
            slot.expect("the fake store answers"),
            "{} has no slot left",
            op.tenant_id
        );
        fencing_token
    }

    /// `clock` stamps `updated_at` on saves, as the real store stamps the wall time.
    pub fn new(clock: FakeClock) -> Self {
        Self {
            state: Arc::default(),
            clock,
            audit: FakeAuditLog::default(),
        }
    }

    /// The same store, writing the audit entries of its changes to `log` (one log, as one table).
    pub fn with_audit_log(mut self, log: FakeAuditLog) -> Self {
        self.audit = log;
        self
    }

    /// Stores `c` as is (a record the API wrote).
    pub fn put_cluster(&self, c: Cluster) {
        lock(&self.state)
            .clusters
            .insert((c.tenant_id.clone(), c.cluster_id.clone()), c);
    }

    /// Stores `op` as is (a record the API wrote).
    pub fn put_operation(&self, op: Operation) {
        lock(&self.state).operations.insert(op.operation_id.clone(), op);
    }

    pub fn operation(&self, id: &OperationId) -> Option<Operation> {
        lock(&self.state).operations.get(id).cloned()
    }

    pub fn cluster(&self, id: &ClusterId) -> Option<Cluster> {
        lock(&self.state)
            .clusters
            .values()
            .find(|c| &c.cluster_id == id)
            .cloned()
    }

    /// Current holder of the cluster's lock and its token.
    pub fn lock_holder(&self, cluster: &ClusterId) -> Option<(OperationId, u64)> {
        let s = lock(&self.state);
        let item = s.locks.get(cluster)?;
        item.owner.clone().map(|o| (o, item.fencing_token))
    }

    /// Whether the cluster's lock item exists at all (released locks keep it; forgotten ones do not).
    pub fn has_lock_item(&self, cluster: &ClusterId) -> bool {
        lock(&self.state).locks.contains_key(cluster)
    }

    /// Operations holding the tenant's slots.
    pub fn slots(&self, tenant: &TenantId) -> Vec<OperationId> {
        lock(&self.state)
            .slots
            .get(tenant)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn set_concurrency_limit(&self, tenant: &TenantId, limit: u32) {
        lock(&self.state).limits.insert(tenant.clone(), limit);
    }

    /// How many clusters, and how many queued or running operations, the tenant may have.
    pub fn set_quotas(&self, tenant: &TenantId, max_clusters: u32, max_open_operations: u32) {
        lock(&self.state)
            .quotas
            .insert(tenant.clone(), (max_clusters, max_open_operations));
    }

    /// The tenant's maximum cluster lifetime (`max_ttl_hours`).
    pub fn set_max_ttl_hours(&self, tenant: &TenantId, hours: u64) {
        lock(&self.state).max_ttl.insert(tenant.clone(), hours);
    }

    /// The tenant's default approval mode (`approval`).
    pub fn set_approval_default(&self, tenant: &TenantId, mode: strato_domain::approval::ApprovalMode) {
        lock(&self.state).approval.insert(tenant.clone(), mode);
    }

    /// Every cluster stored, of every tenant.
    pub fn clusters(&self) -> Vec<Cluster> {
        lock(&self.state).clusters.values().cloned().collect()
    }

    /// Every operation stored, oldest id first.
    pub fn operations(&self) -> Vec<Operation> {
        lock(&self.state).operations.values().cloned().collect()
    }

    /// How many open operations the tenant may have ([`Operations::record_operation`] refuses more); its
    /// cluster quota stays as it was.
    pub fn set_open_operations_limit(&self, tenant: &TenantId, limit: u32) {
        let mut s = lock(&self.state);
        let clusters = s.quotas.get(tenant).map_or(DEFAULT_MAX_CLUSTERS, |q| q.0);
        s.quotas.insert(tenant.clone(), (clusters, limit));
    }

    /// Every operation of the cluster, oldest first.
    pub fn operations_of(&self, cluster: &ClusterId) -> Vec<Operation> {
        let mut ops: Vec<Operation> = lock(&self.state)
            .operations
            .values()
            .filter(|o| &o.cluster_id == cluster)
            .cloned()
            .collect();
        ops.sort_by_key(|o| o.created_at);
        ops
    }

    /// How many operation records the cluster-scoped listings have handed out: what reading a cluster's
    /// history costs (a decision should pay for what is open, not for every drift check ever run).
    pub fn operations_listed(&self) -> usize {
        lock(&self.state).listed
    }

    /// How many single operations have been read by id (a GetItem each in the real store).
    pub fn operations_loaded(&self) -> usize {
        lock(&self.state).loaded
    }

    /// The cluster's operations as the (possibly lagging) index lists them, oldest first.
    fn indexed_operations_of(&self, cluster: &ClusterId) -> Vec<Operation> {
        let s = lock(&self.state);
        let Some(index) = &s.lagging_index else {
            drop(s);
            return self.operations_of(cluster);
        };
        let mut ops: Vec<Operation> = index
            .values()
            .filter(|o| &o.cluster_id == cluster)
            .cloned()
            .collect();
        ops.sort_by_key(|o| o.created_at);
        ops
    }

    /// The next `n` saves (of operations or clusters) lose their condition, as if another writer had
    /// saved first; the records are not changed.
    pub fn inject_conflicts(&self, n: usize) {
        lock(&self.state).injected_conflicts = n;
    }

    /// From now until [`catch_up_index`](Self::catch_up_index), a cluster's operations are listed as they
    /// are now, as DynamoDB's eventually consistent index may still list them after later writes; direct
    /// reads stay consistent.
    pub fn lag_index(&self) {
        let mut s = lock(&self.state);
        s.lagging_index = Some(s.operations.clone());
    }

    /// The index shows every write again.
    pub fn catch_up_index(&self) {
        lock(&self.state).lagging_index = None;
    }

    fn take_injected_conflict(s: &mut StoreState) -> bool {
        if s.injected_conflicts > 0 {
            s.injected_conflicts -= 1;
            return true;
        }
        false
    }

    /// The store's version check of a conditional cluster write: a conflict unless the stored cluster is
    /// at `cluster`'s version (or when a conflict was injected).
    fn check_cluster_version(s: &mut StoreState, cluster: &Cluster) -> Result<(), PortError> {
        let key = (cluster.tenant_id.clone(), cluster.cluster_id.clone());
        let stored = s.clusters.get(&key).map(|c| c.version);
        if stored != Some(cluster.version) || Self::take_injected_conflict(s) {
            return Err(PortError::Conflict(format!(
                "cluster {} changed since version {}",
                cluster.cluster_id, cluster.version
            )));
        }
        Ok(())
    }
}

impl FakeStore {
    /// The conditional save behind [`Operations::store_operation`], with `audit` written in the same step.
    fn save_operation(
        &self,
        op: &mut Operation,
        was_terminal: bool,
        audit: Option<&strato_domain::audit::AuditEntry>,
    ) -> Result<(), PortError> {
        let mut s = lock(&self.state);
        let stored_at = s.operations.get(&op.operation_id).map(|o| o.updated_at);
        if stored_at != Some(op.updated_at) || Self::take_injected_conflict(&mut s) {
            return Err(PortError::Conflict(format!(
                "operation {} changed concurrently",
                op.operation_id
            )));
        }
        // All or nothing, like the transaction: an entry the log refuses leaves the operation as it was.
        if let Some(entry) = audit {
            self.audit.insert(entry)?;
        }
        // `updated_at` is the version: it must move even when the clock has not.
        op.updated_at = self.clock.now().max(op.updated_at + Duration::microseconds(1));
        // As the DynamoDB store: the write that makes it terminal records when it ended.
        if op.status.is_terminal() && !was_terminal {
            op.ended_at = Some(op.updated_at);
        }
        s.operations.insert(op.operation_id.clone(), op.clone());
        Ok(())
    }
}

impl Operations for FakeStore {
    async fn load_operation(&self, id: &OperationId) -> Result<Option<Operation>, PortError> {
        lock(&self.state).loaded += 1;
        Ok(self.operation(id))
    }

    async fn store_operation(&self, op: &mut Operation, was_terminal: bool) -> Result<(), PortError> {
        self.save_operation(op, was_terminal, None)
    }

    async fn store_operation_recorded(
        &self,
        op: &mut Operation,
        was_terminal: bool,
        entry: &strato_domain::audit::AuditEntry,
    ) -> Result<(), PortError> {
        self.save_operation(op, was_terminal, Some(entry))
    }

    async fn open_cluster_operations(&self, cluster: &ClusterId) -> Result<Vec<Operation>, PortError> {
        let open: Vec<Operation> = self
            .indexed_operations_of(cluster)
            .into_iter()
            .filter(|o| !o.status.is_terminal())
            .collect();
        lock(&self.state).listed += open.len();
        Ok(open)
    }

    async fn recent_cluster_operations(
        &self,
        cluster: &ClusterId,
        limit: u32,
    ) -> Result<Vec<Operation>, PortError> {
        let mut ops = self.indexed_operations_of(cluster);
        ops.reverse();
        ops.truncate(limit as usize);
        lock(&self.state).listed += ops.len();
        Ok(ops)
    }

    async fn parked_operations(&self) -> Result<Vec<Operation>, PortError> {
        let s = lock(&self.state);
        let mut ops: Vec<Operation> = s
            .operations
            .values()
            .filter(|o| o.status == OperationStatus::Queued && o.wait_reason.is_some())
            .cloned()
            .collect();
        ops.sort_by_key(|o| o.created_at);
        Ok(ops)
    }

    async fn open_operations(&self, bucket: OpenStatus) -> Result<Vec<Operation>, PortError> {
        let s = lock(&self.state);
        let mut ops: Vec<Operation> = s
            .operations
            .values()
            .filter(|o| OpenStatus::of(o) == Some(bucket))
            .cloned()
            .collect();
        ops.sort_by_key(|o| o.created_at);
        Ok(ops)
    }

    async fn record_operation(&self, op: &Operation) -> Result<Result<(), QuotaExceeded>, PortError> {
        let mut s = lock(&self.state);
        if s.operations.contains_key(&op.operation_id) {
            return Err(PortError::Conflict(format!(
                "operation {} already exists",
                op.operation_id
            )));
        }
        let max = s
            .quotas
            .get(&op.tenant_id)
            .map_or(DEFAULT_MAX_OPEN_OPERATIONS, |q| q.1);
        let open = s
            .operations
            .values()
            .filter(|o| o.tenant_id == op.tenant_id && !o.status.is_terminal())
            .count() as u32;
        if open >= max {
            return Ok(Err(QuotaExceeded { max }));
        }
        s.operations.insert(op.operation_id.clone(), op.clone());
        Ok(Ok(()))
    }
}

impl strato_domain::ports::TenantSettings for FakeStore {
    async fn tenant_rules(&self, tenant: &TenantId) -> Result<strato_domain::ports::TenantRules, PortError> {
        let s = lock(&self.state);
        Ok(strato_domain::ports::TenantRules {
            max_ttl_hours: s.max_ttl.get(tenant).copied(),
            approval: s.approval.get(tenant).copied(),
        })
    }
}

impl ClusterLocks for FakeStore {
    async fn acquire_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        lease: Duration,
        now: OffsetDateTime,
    ) -> Result<LockOutcome, PortError> {
        let mut s = lock(&self.state);
        let item = s.locks.entry(cluster.clone()).or_default();
        let free = item.owner.is_none() || item.lease_expires_at.is_some_and(|exp| exp < now);
        if free {
            item.owner = Some(op.clone());
            item.lease_expires_at = Some(now + lease);
            item.fencing_token += 1;
            return Ok(LockOutcome::Acquired {
                fencing_token: item.fencing_token,
            });
        }
        match &item.owner {
            Some(owner) if owner == op => Ok(LockOutcome::Acquired {
                fencing_token: item.fencing_token,
            }),
            Some(owner) => Ok(LockOutcome::Held { owner: owner.clone() }),
            None => unreachable!("a lock without owner is free"),
        }
    }

    async fn release_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
    ) -> Result<bool, PortError> {
        let mut s = lock(&self.state);
        match s.locks.get_mut(cluster) {
            Some(item) if item.owner.as_ref() == Some(op) && item.fencing_token == fencing_token => {
                item.owner = None;
                item.lease_expires_at = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn forget_lock(&self, cluster: &ClusterId, op: &OperationId) -> Result<bool, PortError> {
        let mut s = lock(&self.state);
        let held_by_other = s
            .locks
            .get(cluster)
            .and_then(|i| i.owner.as_ref())
            .is_some_and(|o| o != op);
        if held_by_other {
            return Ok(false);
        }
        s.locks.remove(cluster);
        Ok(true)
    }

    async fn lock_owner(&self, cluster: &ClusterId) -> Result<Option<(OperationId, u64)>, PortError> {
        Ok(self.lock_holder(cluster))
    }
}

impl TenantSlots for FakeStore {
    async fn concurrency_limit(&self, tenant: &TenantId) -> Result<u32, PortError> {
        Ok(lock(&self.state)
            .limits
            .get(tenant)
            .copied()
            .unwrap_or(DEFAULT_CONCURRENCY_LIMIT))
    }

    async fn acquire_slot(&self, tenant: &TenantId, op: &OperationId, limit: u32) -> Result<bool, PortError> {
        let mut s = lock(&self.state);
        let running = s.slots.entry(tenant.clone()).or_default();
        if running.contains(op) || (running.len() as u32) < limit {
            running.insert(op.clone());
            return Ok(true);
        }
        Ok(false)
    }

    async fn release_slot(&self, tenant: &TenantId, op: &OperationId) -> Result<(), PortError> {
        if let Some(running) = lock(&self.state).slots.get_mut(tenant) {
            running.remove(op);
        }
        Ok(())
    }

    async fn all_slot_holders(&self) -> Result<Vec<(TenantId, Vec<OperationId>)>, PortError> {
        Ok(lock(&self.state)
            .slots
            .iter()
            .map(|(tenant, ops)| (tenant.clone(), ops.iter().cloned().collect()))
            .collect())
    }
}

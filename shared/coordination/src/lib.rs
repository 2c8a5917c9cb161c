//! Handing a cluster from one operation to the next, through the [ports](strato_domain::ports). The dispatcher (an
//! operation that cannot start), the status function (an operation that ended) and the API (a queued
//! operation cancelled) all end operations with [`end_operation`], which releases what the operation holds
//! and wakes whoever waits; and every optimistic read-modify-write retries through [`optimistic`]. The rules
//! live here once.

use std::future::Future;

use strato_domain::audit::AuditEntry;
use strato_domain::error::UserError;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::JobMessage;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationStatus};
use strato_domain::ports::{
    ClusterLocks, Clusters, JobQueue, Operations, PortError, QuotaExceeded, Storage, TenantSlots,
};

/// Long enough for the slowest apply (EKS create plus node groups); a runner that dies without a report is
/// caught by its ECS STOPPED event long before this, so the lease only matters if that event is lost. Each
/// runner heartbeat renews it, so a long but live operation never loses its lock to the sweeper.
pub const LOCK_LEASE: time::Duration = time::Duration::hours(2);

/// `wait_reason` of an operation parked because its tenant runs as many operations as its quota allows.
pub const TENANT_LIMIT_REASON: &str = "tenant at concurrency limit";

/// `wait_reason` of an operation parked behind the cluster lock's holder.
pub fn cluster_busy_reason(owner: &OperationId) -> String {
    format!("cluster busy: {owner}")
}

/// Optimistic writes lose only to another writer of the same item; a few re-reads settle any real contention.
pub const ATTEMPTS: usize = 6;

/// What one try of an optimistic read-modify-write came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt<T> {
    Done(T),
    /// The conditional write lost to another writer: read again and retry.
    Conflict,
}

impl<T> Attempt<T> {
    /// `Done(value)` when `saved` succeeded, `Conflict` when it lost a conditional write, its error otherwise.
    pub fn of_save<E: Into<PortError>>(saved: Result<(), E>, value: T) -> Result<Attempt<T>, PortError> {
        match saved.map_err(Into::into) {
            Ok(()) => Ok(Attempt::Done(value)),
            Err(PortError::Conflict(_)) => Ok(Attempt::Conflict),
            Err(e) => Err(e),
        }
    }
}

/// Runs `attempt` (one read-modify-conditional-write) until it is done, at most `attempts` times; each try
/// must read afresh. After the last conflict, `give_up()` is the error.
///
/// `attempt` is a closure returning a future (`|| async move { .. }`), not an async closure: the Lambda
/// handlers (axum's middleware above all) need their futures `Send` for every lifetime, which the compiler
/// cannot yet prove through an async closure's borrowing future. So a try owns what it changes; state that
/// must survive a conflict (a caller's `FnMut` edit) stays in a plain loop ([`update_cluster`]).
pub async fn optimistic<T, E, F, Fut>(
    attempts: usize,
    give_up: impl FnOnce() -> E,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Attempt<T>, E>>,
{
    for _ in 0..attempts {
        // Boxed: a try is often a whole handler's decision, and a debug build's poll frames copy such a future
        // at every layer; on the heap it costs one allocation per try instead of the caller's stack.
        if let Attempt::Done(value) = Box::pin(attempt()).await? {
            return Ok(value);
        }
    }
    Err(give_up())
}

/// Reads the cluster, lets `change` edit it (returning `false` when there is nothing to change) and saves it
/// against the version read, re-reading on a conflict. Returns the cluster as stored.
pub async fn update_cluster<E: From<PortError>>(
    clusters: &impl Clusters,
    tenant: &TenantId,
    id: &ClusterId,
    mut change: impl FnMut(&mut Cluster) -> Result<bool, E>,
) -> Result<Cluster, E> {
    for _ in 0..ATTEMPTS {
        let mut cluster = clusters
            .load_cluster(tenant, id)
            .await?
            .ok_or_else(|| PortError::NotFound(format!("cluster {id}, which an operation refers to")))?;
        if !change(&mut cluster)? {
            return Ok(cluster);
        }
        let saved = clusters.store_cluster(&mut cluster).await;
        if let Attempt::Done(cluster) = Attempt::of_save(saved, cluster)? {
            return Ok(cluster);
        }
    }
    Err(PortError::Conflict(format!(
        "cluster {id} kept changing; gave up after {ATTEMPTS} attempts"
    ))
    .into())
}

/// Like [`update_cluster`] for an operation. `change` sees the freshly read operation each time; `None` when
/// the operation does not exist.
pub async fn update_operation(
    ops: &impl Operations,
    id: &OperationId,
    change: impl FnMut(&mut Operation) -> bool,
) -> Result<Option<Operation>, PortError> {
    Ok(change_operation(ops, id, None, change, None)
        .await?
        .map(|(op, _)| op))
}

/// Like [`update_operation`], but first tries `known` (a copy the caller just read or wrote) instead of
/// reading it again: a stale copy loses the conditional write and the operation is read afresh.
pub async fn update_operation_from(
    ops: &impl Operations,
    known: Operation,
    change: impl FnMut(&mut Operation) -> bool,
) -> Result<Option<Operation>, PortError> {
    let id = known.operation_id.clone();
    Ok(change_operation(ops, &id, Some(known), change, None)
        .await?
        .map(|(op, _)| op))
}

/// Like [`update_operation_from`], appending `entry` to the audit log in the same write as the change (one
/// call, and the entry exists exactly when the change does). The flag says whether the entry was written:
/// `false` when `change` found nothing to change, so nothing was saved (the caller records it on its own if
/// it must).
pub async fn update_operation_recorded(
    ops: &impl Operations,
    known: Operation,
    change: impl FnMut(&mut Operation) -> bool,
    entry: &AuditEntry,
) -> Result<Option<(Operation, bool)>, PortError> {
    let id = known.operation_id.clone();
    change_operation(ops, &id, Some(known), change, Some(entry)).await
}

async fn change_operation(
    ops: &impl Operations,
    id: &OperationId,
    mut known: Option<Operation>,
    mut change: impl FnMut(&mut Operation) -> bool,
    entry: Option<&AuditEntry>,
) -> Result<Option<(Operation, bool)>, PortError> {
    for _ in 0..ATTEMPTS {
        let mut op = match known.take() {
            Some(op) => op,
            None => match ops.load_operation(id).await? {
                Some(op) => op,
                None => return Ok(None),
            },
        };
        let was_terminal = op.status.is_terminal();
        if !change(&mut op) {
            return Ok(Some((op, false)));
        }
        // Boxed, as in [`optimistic`]: the store's write is a large future, and two of them here would make
        // every caller's (and a debug build's poll frames) larger still.
        let saved = match entry {
            Some(entry) => Box::pin(ops.store_operation_recorded(&mut op, was_terminal, entry)).await,
            None => Box::pin(ops.store_operation(&mut op, was_terminal)).await,
        };
        if let Attempt::Done(op) = Attempt::of_save(saved, op)? {
            return Ok(Some((op, entry.is_some())));
        }
    }
    Err(PortError::Conflict(format!(
        "operation {id} kept changing; gave up after {ATTEMPTS} attempts"
    )))
}

/// FAILED with `err`; whether anything changed. A cluster the state machine does not let fail (DELETED) is
/// logged and left as it is: the operation's own end is still recorded.
pub fn fail_cluster(c: &mut Cluster, err: &UserError) -> bool {
    let moved = step_to(c, ClusterState::Failed);
    if c.state() == ClusterState::Failed && c.last_error.as_ref() != Some(err) {
        c.last_error = Some(err.clone());
        return true;
    }
    moved
}

/// Moves `c` to `to` if the state machine allows it; `false` when it is already there. A refused transition
/// is logged and leaves the cluster as it is.
pub fn step_to(c: &mut Cluster, to: ClusterState) -> bool {
    if c.state() == to {
        return false;
    }
    match c.transition(to) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(cluster_id = %c.cluster_id, error = %e, "cluster left as it is");
            false
        }
    }
}

/// What [`end_operation`] does to the operation's cluster before ending the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterFate<'a> {
    /// Nothing: no cluster stands behind the operation, or the caller already moved it.
    Untouched,
    /// FAILED with this error (see [`fail_cluster`]).
    Fail(&'a UserError),
    /// FAILED with this error only while still PENDING: a first create that never ran.
    FailIfPending(&'a UserError),
}

/// What [`end_operation`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// This call ended the operation (as saved here) and handed off what it held.
    Now { op: Operation, handoff: Handoff },
    /// The operation was already terminal, or `end` declined: nothing was released (whoever ended it hands
    /// off). The operation as last read.
    Not(Operation),
}

/// Ends an operation: first its cluster as `cluster` says (idempotent, so a crash before the operation is
/// saved is repaired by redelivery), then the operation through `end` — called on a fresh copy each try, it
/// makes the operation terminal and returns `true`, or declines with `false`; a terminal operation is never
/// given to it — and, only when this call made it terminal, [`release_and_wake`]. `known` is the operation
/// as the caller last read it (re-read on a conflict).
pub async fn end_operation<S, Q>(
    store: &S,
    jobs: &Q,
    known: Operation,
    cluster: ClusterFate<'_>,
    mut end: impl FnMut(&mut Operation) -> bool,
) -> Result<Ended, PortError>
where
    S: Storage,
    Q: JobQueue,
{
    let (tenant, id) = (known.tenant_id.clone(), known.cluster_id.clone());
    match cluster {
        ClusterFate::Untouched => {}
        ClusterFate::Fail(err) => {
            update_cluster(store, &tenant, &id, |c| Ok::<_, PortError>(fail_cluster(c, err))).await?;
        }
        ClusterFate::FailIfPending(err) => {
            update_cluster(store, &tenant, &id, |c| {
                Ok::<_, PortError>(c.state() == ClusterState::Pending && fail_cluster(c, err))
            })
            .await?;
        }
    }
    let op_id = known.operation_id.clone();
    let mut ended = false;
    let op = update_operation_from(store, known, |o| {
        ended = !o.status.is_terminal() && end(o);
        debug_assert!(!ended || o.status.is_terminal(), "`end` must end the operation");
        ended
    })
    .await?
    .ok_or_else(|| PortError::NotFound(format!("operation {op_id}, which was being ended")))?;
    if !ended {
        return Ok(Ended::Not(op));
    }
    tracing::info!(operation_id = %op.operation_id, status = ?op.status, "operation ended");
    // An operation without a spec of its own (a drift check, a delete) is labelled with its cluster's
    // provider and template; a failed read only loses the labels (`none`), never the end.
    let cluster_spec = match &op.spec {
        None if op.kind.has_cluster() => store
            .load_cluster(&tenant, &id)
            .await
            .ok()
            .flatten()
            .map(|c| c.spec),
        _ => None,
    };
    strato_domain::vitals::operation_ended(&op, cluster_spec.as_ref(), strato_domain::ts::now());
    let handing_off = std::time::Instant::now();
    let handoff = release_and_wake(store, jobs, &op).await?;
    strato_domain::vitals::lock_handoff(handing_off.elapsed());
    Ok(Ended::Now { op, handoff })
}

/// What [`release_and_wake`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handoff {
    /// The cluster lock was still held by the operation with its token, and is now free.
    pub released_lock: bool,
    /// Operations re-enqueued on the job queue.
    pub woken: Vec<OperationId>,
}

/// Frees what `op` holds — its cluster lock (only while it still holds it with its own fencing token, so a
/// late or duplicated call never frees a successor's lock) and its tenant slot — then re-enqueues the
/// operation waiting longest on the same cluster and the one of the same tenant waiting longest for a slot.
/// The wake-up's deduplication suffix names `op`, so a repeated hand-off from the same operation is dropped by
/// FIFO deduplication instead of queueing the successor twice.
pub async fn release_and_wake<S, Q>(store: &S, jobs: &Q, op: &Operation) -> Result<Handoff, PortError>
where
    S: Operations + ClusterLocks + TenantSlots,
    Q: JobQueue,
{
    let mut out = Handoff::default();
    // An operation ended before its claim was recorded (cancelled while queued, a dispatcher that died after
    // taking the lock) has no token of its own, but may still be the lock's owner: the owner's id is proof
    // enough, since no other operation ever holds a lock under that id.
    let token = match op.fencing_token {
        Some(token) => Some(token),
        None => store
            .lock_owner(&op.cluster_id)
            .await?
            .filter(|(owner, _)| *owner == op.operation_id)
            .map(|(_, token)| token),
    };
    if let Some(token) = token {
        out.released_lock = store
            .release_lock(&op.cluster_id, &op.operation_id, token)
            .await?;
    }
    store.release_slot(&op.tenant_id, &op.operation_id).await?;

    // An estimate's synthetic cluster id is its own: nobody else ever waits on it, and its lock item is
    // deleted rather than left behind.
    let next_on_cluster = if op.kind.has_cluster() {
        store
            .open_cluster_operations(&op.cluster_id)
            .await?
            .into_iter()
            .filter(|o| o.status == OperationStatus::Queued && o.operation_id != op.operation_id)
            .min_by_key(|o| o.created_at)
    } else {
        store.forget_lock(&op.cluster_id, &op.operation_id).await?;
        None
    };
    let next_for_tenant = next_tenant_waiter(store, op, true).await?;

    let wake = format!("after-{}", op.operation_id);
    for next in [next_on_cluster, next_for_tenant].into_iter().flatten() {
        if out.woken.contains(&next.operation_id) {
            continue;
        }
        let job = JobMessage::from(&next);
        jobs.enqueue(&job, &wake).await?;
        tracing::info!(woken_operation_id = %next.operation_id, operation_id = %op.operation_id, "re-enqueued a waiting operation");
        out.woken.push(next.operation_id);
    }
    Ok(out)
}

/// An operation whose runner stopped without it ending (it awaits approval) gives its tenant slot back and
/// wakes the tenant's next waiter; it keeps its cluster lock. `wake` makes the wake-up's deduplication id.
pub async fn release_slot_and_wake<S, Q>(
    store: &S,
    jobs: &Q,
    op: &Operation,
    wake: &str,
) -> Result<Option<OperationId>, PortError>
where
    S: Operations + ClusterLocks + TenantSlots,
    Q: JobQueue,
{
    store.release_slot(&op.tenant_id, &op.operation_id).await?;
    let Some(next) = next_tenant_waiter(store, op, false).await? else {
        return Ok(None);
    };
    jobs.enqueue(&JobMessage::from(&next), wake).await?;
    tracing::info!(woken_operation_id = %next.operation_id, operation_id = %op.operation_id, "re-enqueued a waiting operation");
    Ok(Some(next.operation_id))
}

/// The operation of `op`'s tenant waiting longest for a slot whose cluster is free (`op`'s own counts as
/// free when `own_cluster_freed`). One whose cluster is
/// busy is passed over: woken, it would only park on the lock and leave the freed slot idle while the
/// tenant's other waiters sleep on (its cluster's own hand-off wakes it later, as it wakes every queued
/// operation of the cluster).
async fn next_tenant_waiter<S>(
    store: &S,
    op: &Operation,
    own_cluster_freed: bool,
) -> Result<Option<Operation>, PortError>
where
    S: Operations + ClusterLocks,
{
    let mut waiting: Vec<Operation> = store
        .parked_operations()
        .await?
        .into_iter()
        .filter(|o| {
            o.tenant_id == op.tenant_id
                && o.operation_id != op.operation_id
                && o.wait_reason.as_deref() == Some(TENANT_LIMIT_REASON)
        })
        .collect();
    waiting.sort_by_key(|o| o.created_at);
    for candidate in waiting {
        // The releasing operation's own cluster is free by now (or about to be, for a caller that frees it
        // after this read); any other cluster is asked.
        let free = (own_cluster_freed && candidate.cluster_id == op.cluster_id)
            || match store.lock_owner(&candidate.cluster_id).await? {
                None => true,
                Some((owner, _)) => owner == candidate.operation_id,
            };
        if free {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

/// Records an operation the control plane starts on its own (scheduled drift checks, drift reconcile),
/// bounded by the tenant's open-operation quota, and queues its job. `Ok(Err(_))`: the quota refused it and
/// nothing was written or sent.
pub async fn submit<O, Q>(ops: &O, jobs: &Q, op: &Operation) -> Result<Result<(), QuotaExceeded>, PortError>
where
    O: Operations,
    Q: JobQueue,
{
    if let Err(rejected) = ops.record_operation(op).await? {
        return Ok(Err(rejected));
    }
    // The first enqueue of a new operation; the sweeper re-sends it if this one is lost.
    jobs.enqueue(&JobMessage::from(op), "0").await?;
    Ok(Ok(()))
}

/// Frees a cluster lock taken by something other than an operation (the API's state restore) — only while
/// `holder` still holds it with `token` — and then, as [`release_and_wake`] does when an operation ends,
/// re-enqueues the operation waiting longest on the cluster (parked there while the lock was held).
pub async fn release_lock_and_wake<S, Q>(
    store: &S,
    jobs: &Q,
    cluster: &ClusterId,
    holder: &OperationId,
    token: u64,
) -> Result<Handoff, PortError>
where
    S: Operations + ClusterLocks,
    Q: JobQueue,
{
    let mut out = Handoff {
        released_lock: store.release_lock(cluster, holder, token).await?,
        woken: Vec::new(),
    };
    if !out.released_lock {
        // Someone else holds the lock now (our lease lapsed): its holder hands it on.
        return Ok(out);
    }
    let next = store
        .open_cluster_operations(cluster)
        .await?
        .into_iter()
        .filter(|o| o.status == OperationStatus::Queued)
        .min_by_key(|o| o.created_at);
    if let Some(next) = next {
        jobs.enqueue(&JobMessage::from(&next), &format!("after-{holder}"))
            .await?;
        tracing::info!(woken_operation_id = %next.operation_id, operation_id = %holder, "re-enqueued a waiting operation");
        out.woken.push(next.operation_id);
    }
    Ok(out)
}

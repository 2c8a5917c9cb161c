//! Handing a cluster from one operation to the next, through the [ports](crate::ports). The dispatcher (an
//! operation that cannot start) and the status function (an operation that ended) both release what an
//! operation holds and wake whoever waits, and both change clusters and operations by optimistic
//! read-modify-write; the rules live here once.

use crate::ids::{ClusterId, OperationId, TenantId};
use crate::messages::JobMessage;
use crate::model::{Cluster, Operation, OperationStatus};
use crate::ports::{ClusterLocks, Clusters, JobQueue, Operations, PortError, TenantSlots};

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
const ATTEMPTS: usize = 6;

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
        match clusters.store_cluster(&mut cluster).await {
            Ok(()) => return Ok(cluster),
            Err(PortError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
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
    change_operation(ops, id, None, change).await
}

/// Like [`update_operation`], but first tries `known` (a copy the caller just read or wrote) instead of
/// reading it again: a stale copy loses the conditional write and the operation is read afresh.
pub async fn update_operation_from(
    ops: &impl Operations,
    known: Operation,
    change: impl FnMut(&mut Operation) -> bool,
) -> Result<Option<Operation>, PortError> {
    let id = known.operation_id.clone();
    change_operation(ops, &id, Some(known), change).await
}

async fn change_operation(
    ops: &impl Operations,
    id: &OperationId,
    mut known: Option<Operation>,
    mut change: impl FnMut(&mut Operation) -> bool,
) -> Result<Option<Operation>, PortError> {
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
            return Ok(Some(op));
        }
        match ops.store_operation(&mut op, was_terminal).await {
            Ok(()) => return Ok(Some(op)),
            Err(PortError::Conflict(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(PortError::Conflict(format!(
        "operation {id} kept changing; gave up after {ATTEMPTS} attempts"
    )))
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
    if let Some(token) = op.fencing_token {
        out.released_lock = store
            .release_lock(&op.cluster_id, &op.operation_id, token)
            .await?;
    }
    store.release_slot(&op.tenant_id, &op.operation_id).await?;

    // An estimate's synthetic cluster id is its own: nobody else ever waits on it, and its lock item is
    // deleted rather than left behind.
    let next_on_cluster = if op.kind.has_cluster() {
        store
            .cluster_operations(&op.cluster_id)
            .await?
            .into_iter()
            .filter(|o| o.status == OperationStatus::Queued && o.operation_id != op.operation_id)
            .min_by_key(|o| o.created_at)
    } else {
        store.forget_lock(&op.cluster_id, &op.operation_id).await?;
        None
    };
    let next_for_tenant = store
        .parked_operations()
        .await?
        .into_iter()
        .filter(|o| {
            o.tenant_id == op.tenant_id
                && o.operation_id != op.operation_id
                && o.wait_reason.as_deref() == Some(TENANT_LIMIT_REASON)
        })
        .min_by_key(|o| o.created_at);

    let wake = format!("after-{}", op.operation_id);
    for next in [next_on_cluster, next_for_tenant].into_iter().flatten() {
        if out.woken.contains(&next.operation_id) {
            continue;
        }
        let job = JobMessage::from(&next);
        jobs.enqueue(&job, &wake).await?;
        tracing::info!(woken = %next.operation_id, after = %op.operation_id, "re-enqueued a waiting operation");
        out.woken.push(next.operation_id);
    }
    Ok(out)
}

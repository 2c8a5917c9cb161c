//! Operation routes: list a cluster's operations, read one, cancel one.

use strato_domain::ids::OperationId;
use strato_domain::model::{ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::state_machine;
use strato_domain::ts;
use strato_domain::{ErrorCategory, UserError};

use crate::views::{self, TemplateCache};
use crate::views::{OperationList, OperationView};
use crate::{ApiError, Caller, Ctx, Reply, clusters};

/// The caller's operation, or 404 for a malformed id, a missing operation and another tenant's alike.
async fn load(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Operation, ApiError> {
    let not_found = || {
        ApiError::NotFound(format!(
            "no operation '{}'",
            id.chars().take(64).collect::<String>()
        ))
    };
    let id: OperationId = id.parse().map_err(|_| not_found())?;
    match ctx.store.get_operation(&id).await? {
        Some(op) if op.tenant_id == caller.tenant => Ok(op),
        _ => Err(not_found()),
    }
}

async fn view(ctx: &Ctx, op: &Operation) -> Result<OperationView, ApiError> {
    let sensitive = match &op.spec {
        Some(spec) => TemplateCache::new(&ctx.store).sensitive(spec).await?,
        None => None,
    };
    Ok(views::operation(op, sensitive.as_ref()))
}

pub(crate) async fn list_for_cluster(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
) -> Result<Reply<OperationList>, ApiError> {
    let c = clusters::load(ctx, caller, id).await?;
    let ops = ctx.store.list_operations(&c.cluster_id).await?;
    let mut cache = TemplateCache::new(&ctx.store);
    let mut out = Vec::with_capacity(ops.len());
    // Oldest first, as the store returns them (operation ids are time-ordered).
    for op in ops.iter().filter(|o| o.tenant_id == caller.tenant) {
        let sensitive = match &op.spec {
            Some(spec) => cache.sensitive(spec).await?,
            None => None,
        };
        out.push(views::operation(op, sensitive.as_ref()));
    }
    Ok(Reply::ok(OperationList { operations: out }))
}

pub(crate) async fn get(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<OperationView>, ApiError> {
    let op = load(ctx, caller, id).await?;
    Ok(Reply::ok(view(ctx, &op).await?))
}

/// Queued (or parked) operations never reached a runner and are cancelled on the spot (200). Dispatched
/// and running ones are flagged; the runner stops at the next safe point and reports (202).
pub(crate) async fn cancel(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<OperationView>, ApiError> {
    let mut op = load(ctx, caller, id).await?;
    match op.status {
        OperationStatus::Queued => {
            op.status = OperationStatus::Cancelled;
            op.wait_reason = None;
            op.error = Some(UserError::new(
                ErrorCategory::Cancelled,
                "queued",
                "the operation was cancelled before it started",
            ));
            // Conditional on the version read: if the dispatcher took it meanwhile, this is a 409 to retry.
            ctx.store.save_operation(&mut op, false).await?;
            if op.kind == OperationKind::Create {
                fail_pending_cluster(ctx, caller, &op).await?;
            }
            if !op.kind.has_cluster() {
                // A parked estimate may have left its (released) synthetic lock item behind; nothing will
                // ever take that lock again.
                ctx.store
                    .forget_cluster_lock(&op.cluster_id, &op.operation_id)
                    .await?;
            }
            Ok(Reply::ok(view(ctx, &op).await?))
        }
        OperationStatus::Dispatched | OperationStatus::Running => {
            if !op.cancel_requested {
                op.cancel_requested = true;
                ctx.store.save_operation(&mut op, false).await?;
            }
            let location = format!("/v1/operations/{}", op.operation_id);
            Ok(Reply::accepted(view(ctx, &op).await?, location))
        }
        OperationStatus::Succeeded | OperationStatus::Failed | OperationStatus::Cancelled => {
            Err(ApiError::Conflict(format!(
                "the operation is already {}; there is nothing to cancel",
                views::status_name(op.status)
            )))
        }
    }
}

/// A cancelled first create leaves a PENDING cluster that no runner will ever move; record it as FAILED
/// (with the cancellation as its error) so it can be retried or deleted, and its name is not stuck.
async fn fail_pending_cluster(ctx: &Ctx, caller: &Caller, op: &Operation) -> Result<(), ApiError> {
    for _ in 0..3 {
        let Some(mut c) = ctx.store.get_cluster(&caller.tenant, &op.cluster_id).await? else {
            return Ok(());
        };
        if c.state != ClusterState::Pending {
            return Ok(());
        }
        state_machine::transition(c.state, ClusterState::Failed).map_err(strato_aws::Error::from)?;
        c.state = ClusterState::Failed;
        c.last_error = op.error.clone();
        c.updated_at = ts::now();
        match ctx.store.save_cluster(&mut c).await {
            Ok(()) => return Ok(()),
            Err(strato_aws::Error::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::Store(strato_aws::Error::Conflict(format!(
        "cluster {} kept changing",
        op.cluster_id
    ))))
}

//! Operation routes: list a cluster's operations, read one, cancel one.

use strato_aws::coordination::{ClusterFate, Ended, end_operation};
use strato_domain::ids::OperationId;
use strato_domain::model::{Operation, OperationKind, OperationStatus};
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
            let err = UserError::new(
                ErrorCategory::Cancelled,
                "queued",
                "the operation was cancelled before it started",
            );
            // A cancelled first create leaves a PENDING cluster that no runner will ever move: it is recorded
            // FAILED (with the cancellation as its error) so it can be retried or deleted.
            let cluster = if op.kind == OperationKind::Create {
                ClusterFate::FailIfPending(&err)
            } else {
                ClusterFate::Untouched
            };
            // Only while still queued: if the dispatcher took it meanwhile, this is a 409 to retry.
            let end = |o: &mut Operation| {
                if o.status != OperationStatus::Queued {
                    return false;
                }
                o.status = OperationStatus::Cancelled;
                o.wait_reason = None;
                o.error = Some(err.clone());
                true
            };
            let (store, sqs, jobs) = (&ctx.store, &ctx.sqs, &ctx.queues.jobs);
            match end_operation(store, sqs, jobs, op, cluster, end).await? {
                Ended::Now { op, .. } => Ok(Reply::ok(view(ctx, &op).await?)),
                Ended::Not(op) => Err(ApiError::Store(strato_aws::Error::Conflict(format!(
                    "operation {} started while it was being cancelled",
                    op.operation_id
                )))),
            }
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

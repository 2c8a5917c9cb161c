//! Operation routes: list a cluster's operations, read one (or its timeline), cancel, approve or reject one.

use strato_domain::model::Operation;

use crate::decide::Cancelled;
use crate::timeline::Timeline;

use crate::views::{self, TemplateCache};
use crate::views::{OperationList, OperationView};
use crate::{ApiError, Caller, Ctx, Reply, clusters};

/// The caller's operation, or 404 for a malformed id, a missing operation and another tenant's alike.
async fn load(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Operation, ApiError> {
    ctx.api().load_operation(caller, id).await
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

pub(crate) async fn timeline(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<Timeline>, ApiError> {
    Ok(Reply::ok(ctx.api().timeline(caller, id).await?))
}

/// An approver's decision on an operation awaiting approval: recorded, and the dispatcher acts on it (202).
pub(crate) async fn decide(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    verdict: strato_domain::approval::Verdict,
    body: &[u8],
) -> Result<Reply<OperationView>, ApiError> {
    let body = crate::requests::DecisionBody::from_bytes(body)?;
    let seen = body.seen();
    let op = ctx
        .api()
        .decide_seen(caller, id, verdict, body.comment, seen)
        .await?;
    let location = format!("/v1/operations/{}", op.operation_id);
    Ok(Reply::accepted(view(ctx, &op).await?, location))
}

/// Queued (or parked) operations never reached a runner and are cancelled on the spot (200). Dispatched
/// and running ones are flagged; the runner stops at the next safe point and reports (202).
pub(crate) async fn cancel(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<OperationView>, ApiError> {
    match ctx.api().cancel(caller, id).await? {
        Cancelled::Now(op) => Ok(Reply::ok(view(ctx, &op).await?)),
        Cancelled::Requested(op) => {
            let location = format!("/v1/operations/{}", op.operation_id);
            Ok(Reply::accepted(view(ctx, &op).await?, location))
        }
    }
}

//! Operation routes: list a cluster's operations, read one (or its timeline), cancel, approve or reject one.

use strato_domain::model::Operation;

use crate::decide::Cancelled;
use crate::timeline::Timeline;

use crate::views::{self, TemplateCache};
use crate::views::{OperationList, OperationView};
use crate::{caller::Caller, clusters, context::Ctx, edge::Reply, error::ApiError};

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

/// Page sizes of a cluster's operations: a cluster's history grows with every drift check.
pub(crate) const DEFAULT_OPERATIONS_PAGE: u32 = 50;
pub(crate) const MAX_OPERATIONS_PAGE: u32 = 200;

/// A page of the cluster's operations, newest first; `next` resumes after its last one.
pub(crate) async fn list_for_cluster(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    q: &crate::requests::PageQuery,
) -> Result<Reply<OperationList>, ApiError> {
    let mut errors = Vec::new();
    let limit = crate::requests::page_limit(
        q.limit.as_deref(),
        DEFAULT_OPERATIONS_PAGE,
        MAX_OPERATIONS_PAGE,
        &mut errors,
    );
    let after = crate::requests::page_after(q.next.as_deref(), |n| page_token::parse(n).ok(), &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::BadRequest {
            detail: "the query string has invalid parameters; see errors".into(),
            errors,
        });
    }
    let c = clusters::load(ctx, caller, id).await?;
    let page = ctx
        .store
        .operations_page(&c.cluster_id, limit, after.as_ref())
        .await?;
    let mut cache = TemplateCache::new(&ctx.store);
    let mut out = Vec::with_capacity(page.operations.len());
    for op in page.operations.iter().filter(|o| o.tenant_id == caller.tenant) {
        let sensitive = match &op.spec {
            Some(spec) => cache.sensitive(spec).await?,
            None => None,
        };
        out.push(views::operation(op, sensitive.as_ref()));
    }
    Ok(Reply::ok(OperationList {
        operations: out,
        next: page.next.as_ref().map(page_token::format),
    }))
}

/// The `next` token of a page of operations: where the index query resumes (the last listed operation's
/// `created_at` and id), hex-encoded so it is one opaque, URL-safe word.
mod page_token {
    use strato_aws::store::PageKey;
    use strato_domain::ids::OperationId;

    pub(super) fn format(k: &PageKey) -> String {
        hex::encode(format!("{} {}", k.created_at, k.operation_id))
    }

    pub(super) fn parse(token: &str) -> Result<PageKey, ()> {
        let text = String::from_utf8(hex::decode(token).map_err(|_| ())?).map_err(|_| ())?;
        let (created_at, id) = text.split_once(' ').ok_or(())?;
        strato_domain::ts::parse(created_at).ok_or(())?;
        id.parse::<OperationId>().map_err(|_| ())?;
        Ok(PageKey {
            created_at: created_at.to_owned(),
            operation_id: id.to_owned(),
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_token_round_trips_and_anything_else_is_refused() {
            let k = PageKey {
                created_at: "2026-11-29T05:00:00.123456Z".into(),
                operation_id: OperationId::generate().to_string(),
            };
            assert_eq!(parse(&format(&k)), Ok(k));
            for bad in [
                "zz",
                "00",
                &hex::encode("no-space"),
                &hex::encode("yesterday op-1"),
            ] {
                assert_eq!(parse(bad), Err(()), "{bad}");
            }
        }
    }
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
        Cancelled::Now(op) => {
            // The operation ended here, not in a runner's report: its end is recorded here too, as the
            // dispatcher and status record the ends they make (the call's own entry says who asked).
            if let Some(entry) = strato_domain::audit::operation_ended("api", &op, strato_domain::ts::now()) {
                strato_domain::audit::record(&ctx.audit, entry).await;
            }
            Ok(Reply::ok(view(ctx, &op).await?))
        }
        Cancelled::Requested(op) => {
            let location = format!("/v1/operations/{}", op.operation_id);
            Ok(Reply::accepted(view(ctx, &op).await?, location))
        }
    }
}

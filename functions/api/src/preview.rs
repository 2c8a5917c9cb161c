//! `POST /v1/clusters/{id}/plan`: a preview of an update (the decision is `decide::preview`). How an
//! operation shows what the preview found is `preview_view`, which the operation's view uses too.

use crate::clusters::accepted;
use crate::requests::UpdateBody;
use crate::views::Accepted;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

/// Queues the preview of the update `body` describes (202 with the `plan` operation).
pub(crate) async fn plan(
    ctx: &Ctx,
    caller: &Caller,
    read: Option<&crate::policies::TenantRead>,
    id: &str,
    body: UpdateBody,
) -> Result<Reply<Accepted>, ApiError> {
    let governing = crate::policies::load(ctx, caller, read).await?;
    Ok(accepted(
        ctx.api_with(&governing.set, governing.rules, None)
            .plan(caller, id, body)
            .await?,
    ))
}

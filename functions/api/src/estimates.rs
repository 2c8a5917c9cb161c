//! `POST /v1/estimates`: what a spec would cost per month, before any cluster exists. The body is a create's
//! (the name may be left out) and is validated exactly as a create is; the answer is a 202 with an `estimate`
//! operation. Its runner plans every stage with local state only (nothing applied, nothing written to the
//! state bucket) and prices the plan; `GET /v1/operations/{id}` shows the estimate once it succeeded.
//!
//! No cluster is written: the operation carries a fresh, synthetic cluster id that only names its lock and
//! its job's message group (see `OperationKind::has_cluster`).

use crate::requests::SpecBody;
use crate::views::EstimateAccepted;
use crate::views::{self, sensitive_of};
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

pub(crate) async fn create(
    ctx: &Ctx,
    caller: &Caller,
    body: SpecBody,
) -> Result<Reply<EstimateAccepted>, ApiError> {
    let (op, template) = ctx.api().estimate(caller, body).await?;
    let sensitive = sensitive_of(&template);
    Ok(Reply::accepted(
        EstimateAccepted {
            operation: views::operation(&op, Some(&sensitive)),
        },
        format!("/v1/operations/{}", op.operation_id),
    ))
}

//! `POST /v1/estimates`: what a spec would cost per month, before any cluster exists. The body is a create's
//! (the name may be left out) and is validated exactly as a create is; the answer is a 202 with an `estimate`
//! operation. Its runner plans every stage with local state only (nothing applied, nothing written to the
//! state bucket) and prices the plan; `GET /v1/operations/{id}` shows the estimate once it succeeded.
//!
//! No cluster is written: the operation carries a fresh, synthetic cluster id that only names its lock and
//! its job's message group (see `OperationKind::has_cluster`).

use strato_domain::ids::ClusterId;
use strato_domain::model::{Operation, OperationKind};
use strato_domain::ts;

use crate::clusters::{enqueue, quota_error};
use crate::requests::SpecBody;
use crate::spec::{SpecName, read_spec};
use crate::views::EstimateAccepted;
use crate::views::{self, sensitive_of};
use crate::{ApiError, Caller, Ctx, Reply};

/// The name an estimate's plan uses when the request gives none (cloud resource names in the plan derive
/// from it; nothing is created under it).
pub(crate) const DEFAULT_NAME: &str = "estimate";

pub(crate) async fn create(
    ctx: &Ctx,
    caller: &Caller,
    body: SpecBody,
) -> Result<Reply<EstimateAccepted>, ApiError> {
    let (validated, stored, _) = read_spec(ctx, body, SpecName::Optional(DEFAULT_NAME)).await?;
    let mut op = Operation::new(
        caller.tenant.clone(),
        ClusterId::generate(),
        OperationKind::Estimate,
        ts::now(),
    );
    op.spec = Some(validated.spec().clone());
    op.requested_by = caller.subject.clone();
    // Estimates count against the tenant's open operations like any other run.
    let quotas = ctx.store.quotas(&caller.tenant).await?;
    if let Err(rejected) = ctx.store.add_operation(&op, &quotas).await? {
        return Err(quota_error(caller, rejected));
    }
    enqueue(ctx, &op).await;
    let sensitive = sensitive_of(&stored.template);
    Ok(Reply::accepted(
        EstimateAccepted {
            operation: views::operation(&op, Some(&sensitive)),
        },
        format!("/v1/operations/{}", op.operation_id),
    ))
}

//! A runner's `awaiting_approval` report (see [`strato_domain::approval`]): the operation waits for an
//! approver. It keeps its cluster lock, with the lease stretched past the request's expiry (nobody
//! heartbeats for it now), and gives its tenant slot back (no runner runs); the tenant's webhook hears
//! `operation.awaiting_approval`, subscribers get a status frame, and the request is audited.

use strato_coordination::release_slot_and_wake;
use strato_domain::approval::{Approval, Decision, SavedPlan, Verdict};
use strato_domain::audit::{self, AuditEntry};
use strato_domain::messages::JobMessage;
use strato_domain::model::{Operation, OperationStatus};
use strato_domain::ports::{Clock, JobQueue, LeaseRenewal, Operations, PortError};
use strato_domain::webhook::{EventType, OperationEvent};
use time::Duration;

use crate::StatusError;
use crate::frames::announce;
use crate::ports::{Ports, Status};

/// Beyond the request's expiry, the lock's lease lasts this much longer: the scheduler's sweep that expires
/// the request (every few minutes) must find the operation still holding it.
const LEASE_MARGIN: Duration = Duration::hours(1);

/// Whether `plan` is already the one `op` waits with (a redelivered report changes nothing).
pub(crate) fn already_waiting(op: &Operation, plan: &SavedPlan) -> bool {
    op.status == OperationStatus::AwaitingApproval && op.approval.as_ref().is_some_and(|a| &a.plan == plan)
}

/// Records the request on `op` (one optimistic attempt: `Ok(false)` when it changed meanwhile), then
/// stretches the lock, frees the slot and tells the tenant.
pub(crate) async fn await_approval<P: Ports>(
    ctx: &Status<'_, P>,
    mut op: Operation,
    plan: &SavedPlan,
) -> Result<bool, StatusError> {
    if already_waiting(&op, plan) {
        return Ok(true);
    }
    let now = ctx.clock.now();
    let mut request = Approval::request(plan.clone(), op.approval.as_ref(), now, ctx.approval_ttl);
    request.task_arn = op.task_arn.clone();
    // A cancel asked for while the plan ran found no safe point to stop at before the report: it is the
    // decision.
    if op.cancel_requested {
        request.decision = Some(Decision {
            verdict: Verdict::Cancelled,
            by: "strato:status".into(),
            at: now,
            comment: Some("a cancel was requested while the plan ran".into()),
        });
    }
    op.status = OperationStatus::AwaitingApproval;
    op.approval = Some(request);
    op.wait_reason = None;
    match ctx.store.store_operation(&mut op, false).await {
        Ok(()) => {}
        Err(PortError::Conflict(_)) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    let expires_at = op.approval.as_ref().map_or(now, |a| a.expires_at);
    if let Some(token) = op.fencing_token
        && !ctx
            .store
            .renew_lock(
                &op.cluster_id,
                &op.operation_id,
                token,
                expires_at - now + LEASE_MARGIN,
                now,
            )
            .await?
    {
        tracing::warn!(operation_id = %op.operation_id, "awaiting approval without its cluster lock; the apply will plan again");
    }
    let wake = format!("await-{}-{}", op.operation_id, op.attempt);
    release_slot_and_wake(ctx.store, ctx.jobs, &op, &wake).await?;
    if let Some(a) = op.approval.as_ref().filter(|a| a.decision.is_some()) {
        // Decided already (the cancel above): the dispatcher ends it.
        let job = JobMessage::from(&op);
        ctx.jobs.enqueue(&job, &format!("decision-{}", a.round)).await?;
        return Ok(true);
    }
    tracing::info!(operation_id = %op.operation_id, stage = %plan.stage, "awaiting approval");
    let s = &plan.summary;
    let message = format!(
        "waiting for approval of the plan for stage {}: {} to add, {} to change, {} to destroy (until {})",
        plan.stage,
        s.add,
        s.change,
        s.destroy,
        strato_domain::ts::format(expires_at)
    );
    announce(ctx, &op, None, None, Some(message)).await;
    let round = op.approval.as_ref().map_or(1, |a| a.round);
    let subject = format!("{}/approval/{round}", op.operation_id);
    crate::lifecycle::emit(
        ctx,
        &op,
        EventType::OperationAwaitingApproval,
        &subject,
        &OperationEvent::of(&op),
    )
    .await;
    let entry = AuditEntry::system(
        "status",
        op.tenant_id.clone(),
        now,
        "operation.awaiting_approval",
        audit::Outcome::Succeeded,
    )
    .on_cluster(Some(op.cluster_id.clone()))
    .on_operation(Some(op.operation_id.clone()))
    .with_detail(format!(
        "plan {} of stage {} awaits approval until {}",
        plan.plan_sha256,
        plan.stage,
        strato_domain::ts::format(expires_at)
    ));
    audit::record(ctx.audit, entry).await;
    Ok(true)
}

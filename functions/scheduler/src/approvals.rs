//! Plan approvals in the sweep (see [`strato_domain::approval`]): an approval request nobody answered by its
//! `expires_at` is decided `expired` here (the dispatcher then ends the operation cancelled and hands its
//! lock on), and a decided operation whose job was lost (the API's send failed) gets it again. Found through
//! the open-operations index's `awaiting_approval` bucket.

use strato_coordination::update_operation_from;
use strato_domain::approval::Verdict;
use strato_domain::approval_rules;
use strato_domain::audit::AuditLog;
use strato_domain::messages::JobMessage;
use strato_domain::ports::{
    ClusterLocks, Clusters, Intake, JobQueue, OpenStatus, Operations, PortError, StateLocks, TaskEventSink,
    TaskStatus, TenantSlots,
};
use strato_domain::vitals;
use time::OffsetDateTime;

use crate::decide::{Report, SCHEDULER, Scheduler, sweep_wake};

impl<S, Q, T, E, L, A> Scheduler<'_, S, Q, T, E, L, A>
where
    S: Operations + Clusters + ClusterLocks + TenantSlots + Intake,
    Q: JobQueue,
    T: TaskStatus,
    E: TaskEventSink,
    L: StateLocks,
    A: AuditLog,
{
    pub(crate) async fn settle_approvals(
        &self,
        now: OffsetDateTime,
        report: &mut Report,
    ) -> Result<(), PortError> {
        let waiting = self.store.open_operations(OpenStatus::AwaitingApproval).await?;
        vitals::active_operations("awaiting_approval", waiting.len());
        for op in waiting {
            let Some(request) = op.approval.as_ref() else {
                continue;
            };
            let decided = request.decision.is_some();
            if !decided && request.expires_at <= now {
                let id = op.operation_id.clone();
                let Some(op) = update_operation_from(self.store, op, |o| {
                    approval_rules::decide(o, Verdict::Expired, SCHEDULER, None, false, now).is_ok()
                })
                .await?
                else {
                    continue;
                };
                if op.approval.as_ref().and_then(|a| a.verdict()) != Some(Verdict::Expired) {
                    // Decided by someone else meanwhile: their job is on its way.
                    continue;
                }
                let round = op.approval.as_ref().map_or(0, |a| a.round);
                self.jobs
                    .enqueue(&JobMessage::from(&op), &format!("decision-{round}"))
                    .await?;
                tracing::info!(operation_id = %id, "approval request expired");
                self.record(
                    &op,
                    "approval.expire",
                    "nobody answered the approval request in time".into(),
                    now,
                )
                .await;
                report.approvals_expired += 1;
            } else if decided && op.updated_at + self.queued_grace <= now {
                // Still awaiting though decided a while ago: the decision's job was lost.
                self.jobs
                    .enqueue(&JobMessage::from(&op), &sweep_wake(&op))
                    .await?;
                report.decisions_resent += 1;
            }
        }
        Ok(())
    }
}

//! Approval decisions (see [`strato_domain::approval`]): an approver approves or rejects an operation that
//! waits with its plan, or its requester cancels it. The decision is recorded on the operation (a write
//! conditioned on its version, so two approvers cannot both decide) and its job queued again; the
//! dispatcher then starts the apply of the approved plan, or ends the operation cancelled and hands its
//! cluster lock on. Nothing else is written here.

use strato_domain::approval::{self, Refusal, Verdict};
use strato_domain::coordination::update_operation_from;
use strato_domain::messages::JobMessage;
use strato_domain::model::Operation;
use strato_domain::ports::TenantSettings;
use strato_domain::ports::{Clock, Intake, JobQueue, Storage, Templates};

use super::Api;
use crate::{ApiError, Caller};

/// The longest comment an approver may leave, in characters.
pub const MAX_COMMENT_CHARS: usize = 1_000;

impl<S, T, Q, C, K> Api<'_, S, T, Q, C, K>
where
    S: Storage + Intake + TenantSettings,
    T: Templates,
    Q: JobQueue,
    C: Clock,
    K: strato_domain::sealed::Keys,
{
    /// Records `verdict` by the caller on the caller's operation `id`, then queues its job.
    pub async fn decide_approval(
        &self,
        caller: &Caller,
        id: &str,
        verdict: Verdict,
        comment: Option<String>,
    ) -> Result<Operation, ApiError> {
        if let Some(c) = &comment
            && c.chars().count() > MAX_COMMENT_CHARS
        {
            return Err(ApiError::invalid(vec![ApiError::field(
                "comment",
                format!("is longer than {MAX_COMMENT_CHARS} characters"),
                format!("at most {MAX_COMMENT_CHARS} characters"),
            )]));
        }
        let op = self.load_operation(caller, id).await?;
        let by = caller.principal().to_owned();
        let now = self.clock.now();
        let mut refused = None;
        let saved = update_operation_from(self.store, op, |o| {
            refused = approval::decide(o, verdict, &by, comment.clone(), self.approval_separation, now).err();
            refused.is_none()
        })
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no operation '{id}'")))?;
        if let Some(r) = refused {
            return Err(refusal(r));
        }
        self.requeue_decided(&saved).await;
        Ok(saved)
    }

    /// Queues the job of a decided operation (the dispatcher acts on the decision). If this send fails, the
    /// scheduler's sweep sends it again.
    pub(crate) async fn requeue_decided(&self, op: &Operation) {
        let round = op.approval.as_ref().map_or(0, |a| a.round);
        let wake = format!("decision-{round}");
        if let Err(e) = self.jobs.enqueue(&JobMessage::from(op), &wake).await {
            tracing::warn!(operation_id = %op.operation_id, error = %e, "decision job not sent; the sweeper sends it");
        }
    }
}

/// 403 for approving one's own request, 409 for everything else (the operation's state forbids it now).
fn refusal(r: Refusal) -> ApiError {
    match r {
        Refusal::OwnRequest => ApiError::SelfApproval(format!(
            "{r}: separation of duties is on (STRATO_APPROVAL_SEPARATION); ask another principal with the \
             operations:approve scope"
        )),
        Refusal::NotAwaiting(_) | Refusal::AlreadyDecided(_) | Refusal::Expired(_) => {
            ApiError::Conflict(r.to_string())
        }
    }
}

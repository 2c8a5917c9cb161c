//! Approval decisions (see [`strato_domain::approval`]): an approver approves or rejects an operation that
//! waits with its plan, or its requester cancels it. The decision is recorded on the operation (a write
//! conditioned on its version, so two approvers cannot both decide) and its job queued again; the
//! dispatcher then starts the apply of the approved plan, or ends the operation cancelled and hands its
//! cluster lock on. Nothing else is written here.

use strato_coordination::update_operation_from;
use strato_domain::approval::{ApprovalMode, SettingChange, Verdict};
use strato_domain::approval_rules::{self, Refusal, Seen};
use strato_domain::messages::JobMessage;
use strato_domain::model::Operation;
use strato_domain::ports::{Clock, JobQueue, Templates};
use strato_domain::sealed::Keys;

use super::{Api, ApiStore};
use crate::scopes::Scope;
use crate::{caller::Caller, error::ApiError};

/// The longest comment an approver may leave, in characters.
pub const MAX_COMMENT_CHARS: usize = 1_000;

impl<S: ApiStore, T: Templates, Q: JobQueue, C: Clock, K: Keys> Api<'_, S, T, Q, C, K> {
    /// Records `verdict` by the caller on the caller's operation `id`, then queues its job.
    pub async fn decide_approval(
        &self,
        caller: &Caller,
        id: &str,
        verdict: Verdict,
        comment: Option<String>,
    ) -> Result<Operation, ApiError> {
        self.decide_seen(caller, id, verdict, comment, Seen::default())
            .await
    }

    /// [`decide_approval`](Self::decide_approval) on the plan the approver `seen`: refused (409, naming
    /// what is pending now) when another round or stage waits than the one shown.
    pub async fn decide_seen(
        &self,
        caller: &Caller,
        id: &str,
        verdict: Verdict,
        comment: Option<String>,
        seen: Seen,
    ) -> Result<Operation, ApiError> {
        let by = caller.requester()?.to_owned();
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
        let now = self.clock.now();
        let mut refused = None;
        let separate = self.approval_separation;
        let saved = update_operation_from(self.store, op, |o| {
            refused =
                approval_rules::decide_seen(o, verdict, &by, comment.clone(), separate, now, &seen).err();
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

/// 403 for approving one's own request (or one whose requester is unknown), 409 for everything else (the
/// operation's state forbids it now, or another plan is pending than the one named).
fn refusal(r: Refusal) -> ApiError {
    match r {
        Refusal::OwnRequest => ApiError::SelfApproval(format!(
            "{r}: separation of duties is on (STRATO_APPROVAL_SEPARATION); ask another principal with the \
             operations:approve scope"
        )),
        Refusal::UnknownRequester => ApiError::SelfApproval(format!(
            "{r}: separation of duties is on (STRATO_APPROVAL_SEPARATION); reject it and request it again \
             with a token that names its principal"
        )),
        Refusal::OtherPlan(pending) => ApiError::OtherPlan(pending),
        Refusal::NotAwaiting(_) | Refusal::AlreadyDecided(_) | Refusal::Expired(_) => {
            ApiError::Conflict(r.to_string())
        }
    }
}

/// An administrator's lowering of a cluster's approval setting, for the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalLowered {
    pub from: Option<ApprovalMode>,
    pub to: Option<ApprovalMode>,
    /// The mode that applies afterwards (the template's or tenant's may still require approval).
    pub applies: ApprovalMode,
}

impl ApprovalLowered {
    /// The audit entry's detail.
    pub fn detail(&self) -> String {
        format!(
            "approval setting lowered by an admin: {} -> {} (applies now: {})",
            setting_name(self.from),
            setting_name(self.to),
            self.applies.as_str()
        )
    }
}

fn setting_name(m: Option<ApprovalMode>) -> &'static str {
    m.map_or("default", ApprovalMode::as_str)
}

/// Whether `caller` may change the cluster's own approval setting from `old` to `new`, given its template's
/// and tenant's modes: tightening (or keeping) is anyone's who may write the cluster; lowering is an
/// administrator's alone (403 naming `approval` otherwise) and is returned to be audited; `auto` under a
/// template's or tenant's requirement is nobody's (422: no cluster setting lowers those).
pub(crate) fn judge_setting(
    caller: &Caller,
    old: Option<ApprovalMode>,
    new: Option<ApprovalMode>,
    template: Option<ApprovalMode>,
    tenant: Option<ApprovalMode>,
) -> Result<Option<ApprovalLowered>, ApiError> {
    let change = ApprovalMode::judge_change(old, new, template, tenant);
    if change == SettingChange::Allowed {
        return Ok(None);
    }
    if !caller.has(Scope::Admin) {
        return Err(ApiError::ForbiddenField {
            field: "approval",
            need: Scope::Admin,
            problem: format!(
                "'{}' lowers this cluster's approval requirement ({} applies now)",
                setting_name(new),
                ApprovalMode::resolve(old, template, tenant).as_str()
            ),
        });
    }
    match change {
        SettingChange::BelowFloor { floor } => {
            let whose = if template == Some(floor) {
                "the cluster's template"
            } else {
                "your tenant's default"
            };
            Err(ApiError::invalid(vec![ApiError::field(
                "approval",
                format!("cannot be auto: {whose} requires approval, and a cluster setting cannot lower that"),
                "required, or null (the template's or tenant's mode applies)",
            )]))
        }
        SettingChange::Lowers { from, to, applies } => Ok(Some(ApprovalLowered { from, to, applies })),
        SettingChange::Allowed => Ok(None),
    }
}

//! ECS "Task State Change": the only thing it tells that runner events cannot is that a runner task stopped
//! without its final report (killed, out of memory, crashed). Then the operation fails. A runner that
//! reached its end — it exited 0, or it marked its log archive complete, which it does just before sending
//! the report — did report, so its stop waits for the report first: over several visibility timeouts of the
//! events queue ([`ReportWait`]), since the report's own batch may fail and come back only after one.
//! Should the report still arrive after the stop gave up on it, it is recorded on the operation
//! ([`record_late_report`]) rather than dropped. A create waiting for its cluster agent got its report
//! already: its runner's stop changes nothing ([`StopDecision::AwaitingAgent`]).

use strato_coordination::{ATTEMPTS, Attempt, optimistic, update_operation};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{Operation, OperationStatus};
use strato_domain::ports::{Clock, Operations, PortError, RunArchive};
use strato_domain::ts;

use crate::StatusError;
use crate::fencing::{Fence, fence, record_stale};
use crate::handoff::{Final, finish, finish_interrupted_handoff};
use crate::incoming::TaskStateChange;
use crate::ports::{Outcome, Ports, ReportWait, Status};

/// The delivery of a STOPPED event that concludes a runner's final report was lost: the events queue's last
/// before its dead-letter queue.
pub const FINAL_REPORT_GRACE_RECEIVES: u32 = ReportWait::EVENTS.last_receive;

/// Delay between those deliveries.
pub const FINAL_REPORT_RETRY_SECS: i32 = ReportWait::EVENTS.retry_secs;

/// What the error of an operation failed for a lost final report says (and how a late report finds it).
pub const LOST_REPORT: &str = "final report never arrived";

/// What the error of an operation whose runner stopped before its end says.
const NO_REPORT: &str = "runner stopped without a final report";

/// What a STOPPED task does to its operation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StopDecision {
    /// Another task, or an older token: counted, not applied.
    Stale,
    /// The operation already ended (its report arrived); finish a hand-off an earlier delivery left undone.
    AlreadyEnded,
    /// The runner's report arrived and the create now waits for its cluster agent: the runner was done, so
    /// its stop (whatever its exit code) changes nothing; the agent or the configure deadline ends the create.
    AwaitingAgent,
    /// The task that planned for an approval request ended, as it should: changes nothing.
    PlannedForApproval,
    /// The runner reached its end, so its final report is in flight: look again after this many seconds.
    AwaitReport(i32),
    /// The runner stopped without a final report: the operation fails with this error.
    Fail(UserError),
}

/// Given the operation as read, whether the task passed the fence, the stopped task, how often SQS has
/// delivered this event, how long to wait for a report, and whether the runner marked its log archive
/// complete: what happens.
pub(crate) fn decide_stop(
    op: &Operation,
    fence: Fence,
    task: &TaskStateChange,
    receives: u32,
    wait: ReportWait,
    archive_complete: bool,
) -> StopDecision {
    if fence == Fence::Stale {
        return StopDecision::Stale;
    }
    if op.status.is_terminal() {
        return StopDecision::AlreadyEnded;
    }
    if op.awaiting_agent() {
        return StopDecision::AwaitingAgent;
    }
    if op
        .approval
        .as_ref()
        .is_some_and(|a| a.task_arn.as_deref() == Some(task.task_arn.as_str()))
    {
        return StopDecision::PlannedForApproval;
    }
    let runner = task.runner();
    let exit_code = runner.and_then(|c| c.exit_code);
    let container_reason = runner.and_then(|c| c.reason.as_deref());
    let step = op.current_step().map_or("runner".to_owned(), |s| s.name.clone());
    let reached_end = exit_code == Some(0) || archive_complete;
    if reached_end && receives < wait.last_receive {
        return StopDecision::AwaitReport(wait.retry_secs);
    }
    let mut what = if exit_code == Some(0) {
        format!("runner exited 0 but its {LOST_REPORT}")
    } else if archive_complete {
        format!(
            "runner archived its complete log but its {LOST_REPORT}: exit code {}",
            exit_code.map_or("none".to_owned(), |c| c.to_string())
        )
    } else {
        format!(
            "{NO_REPORT}: exit code {}",
            exit_code.map_or("none".to_owned(), |c| c.to_string())
        )
    };
    if exit_code != Some(0) {
        for reason in [container_reason, task.stopped_reason.as_deref()]
            .into_iter()
            .flatten()
        {
            what.push_str(", ");
            what.push_str(reason);
        }
    }
    StopDecision::Fail(UserError::new(ErrorCategory::Internal, step, what).with_fix(
        "The runner task ended unexpectedly (for example out of memory, or stopped by ECS); retry the \
         operation, and report the operation id if it happens again.",
    ))
}

/// Whether `op` was failed by a STOPPED event that concluded its final report was lost or never sent.
pub(crate) fn failed_for_lost_report(op: &Operation) -> bool {
    op.status == OperationStatus::Failed
        && op.error.as_ref().is_some_and(|e| {
            e.category == ErrorCategory::Internal
                && (e.what.contains(LOST_REPORT) || e.what.starts_with(NO_REPORT))
        })
}

/// The note a final report that arrived after its operation was failed for a lost report leaves on it.
pub(crate) fn late_report_note(ev: &RunnerEvent, at: time::OffsetDateTime) -> Option<String> {
    let at = ts::format(at);
    Some(match ev {
        RunnerEvent::Succeeded { outputs, .. } => {
            let names: Vec<&str> = outputs.keys().map(String::as_str).collect();
            format!(
                "{at}: the runner's final report arrived late: it SUCCEEDED (outputs: {}). The operation had \
                 already been failed for a lost report, and the cluster was handed on; the changes are applied. \
                 Retry the operation to bring the cluster's record in line (it converges without changes).",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )
        }
        RunnerEvent::Failed { error, .. } => format!(
            "{at}: the runner's final report arrived late: it FAILED at step {}: {}",
            error.step, error.what
        ),
        RunnerEvent::Cancelled { .. } => {
            format!("{at}: the runner's final report arrived late: it was CANCELLED")
        }
        _ => return None,
    })
}

/// A final report for an operation that is already terminal: when the operation was failed for a lost
/// report, the report was not lost but late; it cannot undo the hand-off that followed (a successor may
/// own the cluster by now), so it is recorded on the operation, once, for the tenant to see.
pub(crate) async fn record_late_report<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    ev: &RunnerEvent,
) -> Result<(), StatusError> {
    if !failed_for_lost_report(op) {
        return Ok(());
    }
    let Some(note) = late_report_note(ev, ctx.clock.now()) else {
        return Ok(());
    };
    let marker = "final report arrived late";
    update_operation(ctx.store, &op.operation_id, |o| {
        if o.notes.iter().any(|n| n.contains(marker)) {
            return false;
        }
        o.notes.push(note.clone());
        true
    })
    .await?;
    tracing::warn!(operation_id = %op.operation_id, "a final report arrived after the operation was failed for a lost report; recorded");
    Ok(())
}

pub(crate) async fn apply_task_change<P: Ports>(
    ctx: &Status<'_, P>,
    task: &TaskStateChange,
    receives: u32,
) -> Result<Outcome, StatusError> {
    let Some(id) = task.operation_id() else {
        tracing::info!(task_arn = %task.task_arn, "ECS task not started by Strato; ignored");
        return Ok(Outcome::Ack);
    };
    if task.last_status != "STOPPED" {
        // Runner events report progress; only the stop says something they cannot.
        return Ok(Outcome::Ack);
    }
    let id = &id;
    optimistic(ATTEMPTS, || StatusError::Contended(id.clone()), || async move {
        let Some(op) = ctx.store.load_operation(id).await? else {
            tracing::warn!(operation_id = %id, task_arn = %task.task_arn, "ECS event for an unknown operation; ignored");
            return Ok(Attempt::Done(Outcome::Ack));
        };
        strato_telemetry::record_operation(&op);
        let fenced = fence(ctx, &op, task.fencing_token(), Some(&task.task_arn)).await?;
        // The archive can change the decision only for a stop that would otherwise fail the operation.
        let archived = if fenced == Fence::Current && !op.status.is_terminal() && !op.awaiting_agent() {
            ctx.archive.archive_complete(id).await.unwrap_or_else(|e| {
                tracing::warn!(operation_id = %id, error = %e, "log archive unreadable; taken as incomplete");
                false
            })
        } else {
            false
        };
        Ok(Attempt::Done(match decide_stop(&op, fenced, task, receives, ctx.report_wait, archived) {
            StopDecision::Stale => {
                record_stale(ctx, id).await?;
                Outcome::Ack
            }
            StopDecision::AlreadyEnded => {
                finish_interrupted_handoff(ctx, &op).await?;
                Outcome::Ack
            }
            StopDecision::AwaitingAgent => {
                tracing::info!(operation_id = %id, task_arn = %task.task_arn, "runner stopped after its report; the create waits for its agent");
                Outcome::Ack
            }
            StopDecision::PlannedForApproval => {
                tracing::info!(operation_id = %id, task_arn = %task.task_arn, "the planning runner stopped; the operation awaits approval");
                Outcome::Ack
            }
            StopDecision::AwaitReport(secs) => Outcome::RetryAfter(secs),
            StopDecision::Fail(err) => match finish(ctx, op, Final::Failed(err)).await {
                Err(StatusError::Domain(PortError::Conflict(_))) => return Ok(Attempt::Conflict),
                other => other.map(|()| Outcome::Ack)?,
            },
        }))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fencing::event_fence;
    use crate::incoming::{Incoming, parse_body};
    use crate::test_support::{running, sample_body};
    use strato_domain::model::{ClusterState, OperationKind, OperationStatus, Step};
    use strato_domain::ts;

    /// A sample STOPPED event, made to name `op` and its task.
    fn stopped(sample: &str, op: &Operation) -> TaskStateChange {
        let mut v: serde_json::Value = serde_json::from_str(&sample_body(sample)).unwrap();
        let detail = &mut v["detail"];
        detail["taskArn"] = op.task_arn.clone().unwrap().into();
        detail["startedBy"] = op.operation_id.as_str().into();
        detail["overrides"]["containerOverrides"][0]["environment"][0]["value"] =
            op.operation_id.as_str().into();
        let Incoming::Task(t) = parse_body("m", &v.to_string()).unwrap() else {
            panic!("not a task change")
        };
        assert_eq!(t.operation_id().as_ref(), Some(&op.operation_id));
        *t
    }

    fn decide_fenced(op: &Operation, task: &TaskStateChange, receives: u32) -> StopDecision {
        let fenced = event_fence(op, task.fencing_token(), Some(&task.task_arn));
        decide_stop(op, fenced, task, receives, ReportWait::EVENTS, false)
    }

    #[test]
    fn a_task_killed_without_a_final_report_fails_the_operation() {
        let (mut op, _) = running(OperationKind::Create, ClusterState::Provisioning);
        op.steps.push(Step {
            name: "apply".into(),
            started_at: ts::now(),
            finished_at: None,
            ok: None,
        });
        let task = stopped("ecs-task-stopped-oom.json", &op);
        let StopDecision::Fail(err) = decide_fenced(&op, &task, 1) else {
            panic!("{:?}", decide_fenced(&op, &task, 1))
        };
        assert_eq!(err.step, "apply");
        assert_eq!(err.category, ErrorCategory::Internal);
        assert_eq!(
            err.what,
            "runner stopped without a final report: exit code 137, OutOfMemoryError: Container killed due to \
             memory usage, Essential container in task exited"
        );
    }

    #[test]
    fn an_exit_0_waits_for_the_report_then_gives_up() {
        let (op, _) = running(OperationKind::Update, ClusterState::Updating);
        let task = stopped("ecs-task-stopped-exit0.json", &op);
        for receives in 1..FINAL_REPORT_GRACE_RECEIVES {
            assert_eq!(
                decide_fenced(&op, &task, receives),
                StopDecision::AwaitReport(FINAL_REPORT_RETRY_SECS)
            );
        }
        let StopDecision::Fail(err) = decide_fenced(&op, &task, FINAL_REPORT_GRACE_RECEIVES) else {
            panic!()
        };
        assert_eq!(err.what, "runner exited 0 but its final report never arrived");
        assert_eq!(err.step, "runner", "no step had started");
    }

    #[test]
    fn a_stop_after_the_report_or_of_another_task_changes_nothing() {
        let (mut op, _) = running(OperationKind::Update, ClusterState::Updating);
        let task = stopped("ecs-task-stopped-oom.json", &op);
        op.status = OperationStatus::Succeeded;
        assert_eq!(decide_fenced(&op, &task, 1), StopDecision::AlreadyEnded);
        op.status = OperationStatus::Running;
        op.task_arn = Some("arn:aws:ecs:eu-west-1:123456789012:task/strato/retried".into());
        assert_eq!(
            decide_fenced(&op, &task, 1),
            StopDecision::Stale,
            "the task of an earlier attempt"
        );
        op.task_arn = task.task_arn.clone().into();
        op.fencing_token = Some(2);
        assert_eq!(
            decide_fenced(&op, &task, 1),
            StopDecision::Stale,
            "an older token"
        );
    }
}

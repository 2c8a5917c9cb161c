//! ECS "Task State Change": the only thing it tells that runner events cannot is that a runner task stopped
//! without its final report (killed, out of memory, crashed). Then the operation fails. A task that exited 0
//! sent its report (the runner's contract), so its stop waits a few deliveries for the report first.

use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::model::Operation;

use crate::batch::Outcome;
use crate::fencing::{Fence, fence, record_stale};
use crate::handoff::{Final, finish, finish_interrupted_handoff};
use crate::incoming::TaskStateChange;
use crate::{Ctx, StatusError};
use strato_aws::coordination::{ATTEMPTS, Attempt, optimistic};

/// Deliveries of an exit-0 STOPPED event to wait for the runner's final report before giving up on it.
pub const FINAL_REPORT_GRACE_RECEIVES: u32 = 3;

/// Delay between those deliveries.
pub const FINAL_REPORT_RETRY_SECS: i32 = 20;

/// What a STOPPED task does to its operation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StopDecision {
    /// Another task, or an older token: counted, not applied.
    Stale,
    /// The operation already ended (its report arrived); finish a hand-off an earlier delivery left undone.
    AlreadyEnded,
    /// Exit 0: the final report is in flight; look again after [`FINAL_REPORT_RETRY_SECS`].
    AwaitReport,
    /// The runner stopped without a final report: the operation fails with this error.
    Fail(UserError),
}

/// Given the operation as read, whether the task passed the fence, the stopped task and how often SQS has
/// delivered this event: what happens.
pub(crate) fn decide_stop(
    op: &Operation,
    fence: Fence,
    task: &TaskStateChange,
    receives: u32,
) -> StopDecision {
    if fence == Fence::Stale {
        return StopDecision::Stale;
    }
    if op.status.is_terminal() {
        return StopDecision::AlreadyEnded;
    }
    let runner = task.runner();
    let exit_code = runner.and_then(|c| c.exit_code);
    let container_reason = runner.and_then(|c| c.reason.as_deref());
    let step = op.current_step().map_or("runner".to_owned(), |s| s.name.clone());
    let what = if exit_code == Some(0) {
        // Exit 0 means a final report was sent; give it time to arrive before concluding it was lost.
        if receives < FINAL_REPORT_GRACE_RECEIVES {
            return StopDecision::AwaitReport;
        }
        "runner exited 0 but its final report never arrived".to_owned()
    } else {
        let mut what = format!(
            "runner stopped without a final report: exit code {}",
            exit_code.map_or("none".to_owned(), |c| c.to_string())
        );
        for reason in [container_reason, task.stopped_reason.as_deref()]
            .into_iter()
            .flatten()
        {
            what.push_str(", ");
            what.push_str(reason);
        }
        what
    };
    StopDecision::Fail(UserError::new(ErrorCategory::Internal, step, what).with_fix(
        "The runner task ended unexpectedly (for example out of memory, or stopped by ECS); retry the \
         operation, and report the operation id if it happens again.",
    ))
}

pub(crate) async fn apply_task_change(
    ctx: &Ctx,
    task: &TaskStateChange,
    receives: u32,
) -> Result<Outcome, StatusError> {
    let Some(id) = task.operation_id() else {
        tracing::info!(task = %task.task_arn, "ECS task not started by Strato; ignored");
        return Ok(Outcome::Ack);
    };
    if task.last_status != "STOPPED" {
        // Runner events report progress; only the stop says something they cannot.
        return Ok(Outcome::Ack);
    }
    let id = &id;
    optimistic(ATTEMPTS, || StatusError::Contended(id.clone()), || async move {
        let Some(op) = ctx.store.get_operation(id).await? else {
            tracing::warn!(operation = %id, task = %task.task_arn, "ECS event for an unknown operation; ignored");
            return Ok(Attempt::Done(Outcome::Ack));
        };
        let fenced = fence(ctx, &op, task.fencing_token(), Some(&task.task_arn)).await?;
        Ok(Attempt::Done(match decide_stop(&op, fenced, task, receives) {
            StopDecision::Stale => {
                record_stale(ctx, id).await?;
                Outcome::Ack
            }
            StopDecision::AlreadyEnded => {
                finish_interrupted_handoff(ctx, &op).await?;
                Outcome::Ack
            }
            StopDecision::AwaitReport => Outcome::RetryAfter(FINAL_REPORT_RETRY_SECS),
            StopDecision::Fail(err) => match finish(ctx, op, Final::Failed(err)).await {
                Err(StatusError::Shared(strato_aws::Error::Conflict(_))) => return Ok(Attempt::Conflict),
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
        decide_stop(op, fenced, task, receives)
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
            assert_eq!(decide_fenced(&op, &task, receives), StopDecision::AwaitReport);
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

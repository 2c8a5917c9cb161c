//! Runner events: steps, heartbeats, plan-ready, and the final report (succeeded, failed or cancelled).
//! They arrive duplicated and out of order, so [`decide`] sorts each one, given the operation as read and
//! the fencing verdict, into: stale, a duplicate final report, late progress, an end, or progress; progress
//! is upserted order-tolerantly ([`apply_progress`]).

use strato_coordination::{ATTEMPTS, Attempt, LOCK_LEASE, optimistic};
use strato_domain::cost::CostEstimate;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{Operation, OperationKind, OperationStatus, Step};
use strato_domain::ports::{Clock, LeaseRenewal, Operations, PortError};

use crate::agent::{Readiness, await_agent, readiness, verify_outputs};
use crate::fencing::{Fence, fence, record_stale};
use crate::frames::announce;
use crate::handoff::{Final, finish, finish_interrupted_handoff};
use crate::ports::{Ports, Status};
use crate::task_change::record_late_report;
use crate::{StatusError, drift};

/// What a runner event does to its operation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunnerDecision {
    /// From a runner that no longer holds the operation: counted, not applied.
    Stale,
    /// A final report for an operation that already ended: a duplicate, though it may finish a hand-off an
    /// earlier delivery left undone.
    DuplicateFinal,
    /// Progress after the end (a late heartbeat, a step that overtook nothing): changes nothing.
    LateProgress,
    /// The operation ends.
    End(Final),
    /// A step, heartbeat or plan-ready for a running operation.
    Progress,
    /// The runner saved a plan that needs an approver, and ended.
    Await(Box<strato_domain::approval::SavedPlan>),
}

/// How a final report ends an operation; `None` for progress.
fn final_of(ev: &RunnerEvent) -> Option<Final> {
    match ev {
        RunnerEvent::Succeeded {
            outputs,
            drift,
            estimate,
            preview,
            at,
            ..
        } => Some(Final::Succeeded {
            outputs: outputs.clone(),
            drift: drift.clone(),
            estimate: estimate.clone(),
            preview: preview.clone(),
            at: *at,
        }),
        RunnerEvent::Failed { error, .. } => Some(Final::Failed(error.clone())),
        RunnerEvent::Cancelled { .. } => Some(Final::Cancelled),
        _ => None,
    }
}

/// Given the operation as read and whether the event passed the fence: what the event does.
pub(crate) fn decide(op: &Operation, fence: Fence, ev: &RunnerEvent) -> RunnerDecision {
    if fence == Fence::Stale {
        return RunnerDecision::Stale;
    }
    let fin = final_of(ev);
    if let RunnerEvent::AwaitingApproval { plan, .. } = ev {
        return if op.status.is_terminal() {
            RunnerDecision::DuplicateFinal
        } else {
            RunnerDecision::Await(Box::new(plan.clone()))
        };
    }
    if op.status.is_terminal() {
        return match fin {
            Some(_) => RunnerDecision::DuplicateFinal,
            None => RunnerDecision::LateProgress,
        };
    }
    match fin {
        Some(fin) => RunnerDecision::End(fin),
        None => RunnerDecision::Progress,
    }
}

/// Applies one runner event (one optimistic attempt per read of the operation).
pub async fn apply_runner_event<P: Ports>(ctx: &Status<'_, P>, ev: &RunnerEvent) -> Result<(), StatusError> {
    let id = ev.operation_id();
    optimistic(
        ATTEMPTS,
        || StatusError::Contended(id.clone()),
        || async move {
            let mut op = ctx
                .store
                .load_operation(id)
                .await?
                .ok_or_else(|| StatusError::UnknownOperation(id.clone()))?;
            strato_telemetry::record_operation(&op);
            let fenced = fence(ctx, &op, Some(ev.fencing_token()), None).await?;
            match decide(&op, fenced, ev) {
                RunnerDecision::Stale => record_stale(ctx, id).await?,
                RunnerDecision::DuplicateFinal => {
                    // The first delivery may have ended the operation and failed before this.
                    crate::state_listing::record(ctx, &op, ev).await?;
                    record_late_report(ctx, &op, ev).await?;
                    finish_interrupted_handoff(ctx, &op).await?;
                    // Only the final report's own redelivery re-queues a drift notification its first
                    // delivery failed to queue: the task's STOPPED event, arriving while that delivery is
                    // still between its send and its note, would otherwise queue a second copy.
                    drift::requeue_unsent(ctx, &op).await?
                }
                RunnerDecision::LateProgress => {}
                RunnerDecision::End(fin) => {
                    // Before the end: an ended operation's listing is on its cluster.
                    crate::state_listing::record(ctx, &op, ev).await?;
                    end(ctx, op, fin).await?
                }
                RunnerDecision::Await(plan) => {
                    if !crate::approval::await_approval(ctx, op, &plan).await? {
                        return Ok(Attempt::Conflict);
                    }
                }
                RunnerDecision::Progress => {
                    if !save_progress(ctx, &mut op, ev).await? {
                        return Ok(Attempt::Conflict);
                    }
                }
            }
            Ok(Attempt::Done(()))
        },
    )
    .await
}

/// Ends the operation as its runner reported. A successful create first proves the cluster usable: with an
/// agent it waits for it (the operation stays open), otherwise the required outputs must be there.
async fn end<P: Ports>(ctx: &Status<'_, P>, op: Operation, fin: Final) -> Result<(), StatusError> {
    let fin = match (op.kind, &fin) {
        (OperationKind::Create, Final::Succeeded { outputs, .. }) => match readiness(ctx, &op).await? {
            Readiness::Agent(deadline_secs) => return await_agent(ctx, &op, outputs, deadline_secs).await,
            Readiness::Outputs(required) => verify_outputs(&required, fin),
        },
        _ => fin,
    };
    finish(ctx, op, fin).await
}

/// One attempt at recording progress (a heartbeat also renews the cluster lock). `Ok(false)` when the
/// operation changed concurrently and must be read again.
async fn save_progress<P: Ports>(
    ctx: &Status<'_, P>,
    op: &mut Operation,
    ev: &RunnerEvent,
) -> Result<bool, StatusError> {
    // A late heartbeat of the run that planned must not shorten the lease an approval request stretched.
    if let RunnerEvent::Heartbeat { fencing_token, .. } = ev
        && op.status != OperationStatus::AwaitingApproval
        && !ctx
            .store
            .renew_lock(
                &op.cluster_id,
                &op.operation_id,
                *fencing_token,
                LOCK_LEASE,
                ctx.clock.now(),
            )
            .await?
    {
        tracing::warn!(operation_id = %op.operation_id, "heartbeat from a runner whose lock is gone");
    }
    let was_running = op.status == OperationStatus::Running;
    if !apply_progress(op, ev) {
        return Ok(true);
    }
    match ctx.store.store_operation(op, false).await {
        Ok(()) => {
            // Only the write that moved it to running: a later event finds it running already.
            if !was_running && op.status == OperationStatus::Running {
                crate::lifecycle::started(ctx, op).await;
            }
            if let RunnerEvent::StepStarted { step, .. } = ev {
                announce(ctx, op, None, Some(step.clone()), None).await;
            }
            Ok(true)
        }
        Err(PortError::Conflict(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Steps and heartbeats. Returns whether anything changed. Order-tolerant: steps are upserted by name (a
/// finish that overtook its start still leaves one finished step) and kept in start order.
pub(crate) fn apply_progress(op: &mut Operation, ev: &RunnerEvent) -> bool {
    let before = (
        op.steps.clone(),
        op.heartbeat_at,
        op.status,
        op.estimate.clone(),
        op.started_at,
        op.notes.len(),
    );
    match ev {
        RunnerEvent::StepStarted { step, at, .. } => match op.steps.iter_mut().find(|s| &s.name == step) {
            // Started earlier than the finish-only placeholder says.
            Some(s) => s.started_at = s.started_at.min(*at),
            None => op.steps.push(Step {
                name: step.clone(),
                started_at: *at,
                finished_at: None,
                ok: None,
            }),
        },
        RunnerEvent::StepFinished { step, ok, at, .. } => match op.steps.iter_mut().find(|s| &s.name == step)
        {
            Some(s) => {
                s.finished_at = Some(*at);
                s.ok = Some(*ok);
            }
            None => op.steps.push(Step {
                name: step.clone(),
                started_at: *at,
                finished_at: Some(*at),
                ok: Some(*ok),
            }),
        },
        RunnerEvent::Heartbeat { at, .. } => {
            op.heartbeat_at = Some(op.heartbeat_at.map_or(*at, |h| h.max(*at)));
        }
        RunnerEvent::PlanReady {
            stage,
            estimate: Some(estimate),
            ..
        } => op
            .estimate
            .get_or_insert_with(CostEstimate::empty)
            .merge_stage(stage, estimate),
        RunnerEvent::PolicyChecked {
            stage,
            version,
            warnings,
            ..
        } => {
            let mut add = vec![format!("plan of stage {stage} checked against policy {version}")];
            add.extend(
                warnings
                    .iter()
                    .map(|w| format!("plan policy warning ({stage}): {w}")),
            );
            for note in add {
                if !op.notes.contains(&note) {
                    op.notes.push(note);
                }
            }
        }
        _ => {}
    }
    op.steps.sort_by_key(|s| s.started_at);
    if matches!(op.status, OperationStatus::Queued | OperationStatus::Dispatched) {
        op.status = OperationStatus::Running;
    }
    // The runner's first event of this attempt is when it started (its own clock, as the steps are); a step
    // start that arrives late but began earlier moves it back.
    let at = event_at(ev);
    match (op.started_at, ev) {
        (None, _) => op.started_at = Some(at),
        (Some(s), RunnerEvent::StepStarted { .. }) if at < s => op.started_at = Some(at),
        _ => {}
    }
    before
        != (
            op.steps.clone(),
            op.heartbeat_at,
            op.status,
            op.estimate.clone(),
            op.started_at,
            op.notes.len(),
        )
}

/// When the runner says `ev` happened.
fn event_at(ev: &RunnerEvent) -> time::OffsetDateTime {
    match ev {
        RunnerEvent::StepStarted { at, .. }
        | RunnerEvent::StepFinished { at, .. }
        | RunnerEvent::Heartbeat { at, .. }
        | RunnerEvent::PlanReady { at, .. }
        | RunnerEvent::AwaitingApproval { at, .. }
        | RunnerEvent::PolicyChecked { at, .. }
        | RunnerEvent::Succeeded { at, .. }
        | RunnerEvent::Failed { at, .. }
        | RunnerEvent::Cancelled { at, .. } => *at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fencing::event_fence;
    use crate::handoff::conclude;
    use crate::test_support::{at, running};
    use strato_domain::ids::{ClusterId, TenantId};
    use strato_domain::model::ClusterState;
    use strato_domain::ts;

    fn heartbeat(op: &Operation, token: u64, when: &str) -> RunnerEvent {
        RunnerEvent::Heartbeat {
            operation_id: op.operation_id.clone(),
            fencing_token: token,
            at: at(when),
        }
    }

    fn succeeded(op: &Operation, token: u64) -> RunnerEvent {
        RunnerEvent::Succeeded {
            operation_id: op.operation_id.clone(),
            fencing_token: token,
            outputs: Default::default(),
            drift: None,
            estimate: None,
            preview: None,
            state: None,
            at: at("2026-11-22T04:45:00Z"),
        }
    }

    /// [`decide`] after the event-side fence, as `apply_runner_event` does (the lock side is I/O).
    fn decide_fenced(op: &Operation, ev: &RunnerEvent) -> RunnerDecision {
        decide(op, event_fence(op, Some(ev.fencing_token()), None), ev)
    }

    #[test]
    fn an_event_with_a_stale_fencing_token_is_not_applied() {
        let (op, _) = running(OperationKind::Update, ClusterState::Updating);
        assert_eq!(
            decide_fenced(&op, &heartbeat(&op, 0, "2026-11-22T04:31:00Z")),
            RunnerDecision::Stale
        );
        assert_eq!(
            decide_fenced(&op, &succeeded(&op, 0)),
            RunnerDecision::Stale,
            "a zombie's success does not end the operation"
        );
        assert_eq!(
            decide(&op, Fence::Stale, &succeeded(&op, 1)),
            RunnerDecision::Stale
        );
        assert_eq!(
            decide_fenced(&op, &heartbeat(&op, 1, "2026-11-22T04:31:00Z")),
            RunnerDecision::Progress
        );
    }

    #[test]
    fn a_duplicate_final_event_only_finishes_the_hand_off() {
        let (mut op, _) = running(OperationKind::Update, ClusterState::Updating);
        let RunnerDecision::End(fin) = decide_fenced(&op, &succeeded(&op, 1)) else {
            panic!("the first success ends the operation")
        };
        conclude(&mut op, &fin);
        assert_eq!(
            decide_fenced(&op, &succeeded(&op, 1)),
            RunnerDecision::DuplicateFinal
        );
        let cancelled = RunnerEvent::Cancelled {
            operation_id: op.operation_id.clone(),
            fencing_token: 1,
            at: at("2026-11-22T04:46:00Z"),
        };
        assert_eq!(
            decide_fenced(&op, &cancelled),
            RunnerDecision::DuplicateFinal,
            "a conflicting late report does not change the end"
        );
    }

    #[test]
    fn a_heartbeat_after_the_success_changes_nothing() {
        let (mut op, _) = running(OperationKind::Update, ClusterState::Updating);
        let RunnerDecision::End(fin) = decide_fenced(&op, &succeeded(&op, 1)) else {
            panic!()
        };
        conclude(&mut op, &fin);
        let late = heartbeat(&op, 1, "2026-11-22T04:44:00Z");
        assert_eq!(decide_fenced(&op, &late), RunnerDecision::LateProgress);
        let step = RunnerEvent::StepFinished {
            operation_id: op.operation_id.clone(),
            fencing_token: 1,
            step: "apply".into(),
            ok: true,
            at: at("2026-11-22T04:44:30Z"),
        };
        assert_eq!(decide_fenced(&op, &step), RunnerDecision::LateProgress);
    }

    #[test]
    fn plan_policy_warnings_become_notes_once_with_the_policy_version() {
        let (mut op, _) = running(OperationKind::Update, ClusterState::Updating);
        let ev = RunnerEvent::PolicyChecked {
            operation_id: op.operation_id.clone(),
            fencing_token: 1,
            stage: "cluster".into(),
            version: "sha256:0123456789abcdef".into(),
            warnings: vec!["platform/tags: tag 'owner' is missing".into()],
            at: at("2026-11-22T04:33:00Z"),
        };
        assert!(apply_progress(&mut op, &ev));
        assert_eq!(
            op.notes,
            [
                "plan of stage cluster checked against policy sha256:0123456789abcdef",
                "plan policy warning (cluster): platform/tags: tag 'owner' is missing"
            ]
        );
        assert!(!apply_progress(&mut op, &ev), "a duplicate adds nothing");
        assert_eq!(op.notes.len(), 2);
    }

    #[test]
    fn an_older_heartbeat_does_not_move_the_last_one_back() {
        let (mut op, _) = running(OperationKind::Update, ClusterState::Updating);
        let (newer, older) = (
            heartbeat(&op, 1, "2026-11-22T04:35:00Z"),
            heartbeat(&op, 1, "2026-11-22T04:34:00Z"),
        );
        assert!(apply_progress(&mut op, &newer));
        assert!(!apply_progress(&mut op, &older));
        assert_eq!(op.heartbeat_at, Some(at("2026-11-22T04:35:00Z")));
    }

    #[test]
    fn progress_is_order_tolerant_and_idempotent() {
        let mut op = Operation::new(
            "acme".parse::<TenantId>().unwrap(),
            ClusterId::generate(),
            OperationKind::Create,
            ts::now(),
        );
        op.status = OperationStatus::Dispatched;
        let id = op.operation_id.clone();
        let finished = RunnerEvent::StepFinished {
            operation_id: id.clone(),
            fencing_token: 1,
            step: "apply".into(),
            ok: false,
            at: at("2026-11-22T04:40:00Z"),
        };
        let started = RunnerEvent::StepStarted {
            operation_id: id.clone(),
            fencing_token: 1,
            step: "apply".into(),
            at: at("2026-11-22T04:31:00Z"),
        };
        assert!(apply_progress(&mut op, &finished));
        assert_eq!(op.status, OperationStatus::Running);
        assert!(apply_progress(&mut op, &started));
        assert!(!apply_progress(&mut op, &started), "a duplicate changes nothing");
        assert!(!apply_progress(&mut op, &finished));
        assert_eq!(op.steps.len(), 1);
        let s = &op.steps[0];
        assert_eq!(s.started_at, at("2026-11-22T04:31:00Z"));
        assert_eq!(s.finished_at, Some(at("2026-11-22T04:40:00Z")));
        assert_eq!(s.ok, Some(false));
        assert_eq!(
            op.started_at,
            Some(at("2026-11-22T04:31:00Z")),
            "the runner started no later than its first step"
        );
    }
}

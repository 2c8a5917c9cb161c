//! The run's one final event: `succeeded`, `failed` (with the user-facing error) or `cancelled`.

use strato_domain::cost::CostEstimate;
use strato_domain::messages::RunnerEvent;

use super::failure::Failure;
use super::stages::ExecOutcome;
use super::{PreparedRun, RunContext};
use crate::outcome::StopReason;
use crate::ports::Ports;

impl<P: Ports> PreparedRun<'_, P> {
    /// Turns the stages' result into the final event (cleaning up a failed create first).
    /// A run whose state is in the customer's storage lists its versions there last (after a failed
    /// create's cleanup too), for the event.
    pub(super) async fn final_event(&mut self, result: Result<ExecOutcome, Failure>) -> RunnerEvent {
        let ev = match result {
            Ok(done) => self.ctx.succeeded_event(done, &self.estimate),
            Err(failure) => {
                let failure = self.clean_up_failed_create(failure).await;
                self.ctx.failed_event(failure)
            }
        };
        if !matches!(ev, RunnerEvent::Succeeded { .. } | RunnerEvent::Failed { .. }) {
            return ev;
        }
        let report = self.customer_state_report().await;
        super::customer_state::with_report(ev, report)
    }
}

impl<P: Ports> RunContext<P> {
    /// The `succeeded` event: outputs, drift, and the estimate when any stage was priced.
    fn succeeded_event(&self, done: ExecOutcome, estimate: &CostEstimate) -> RunnerEvent {
        if let Some(plan) = done.awaiting {
            self.note("done", "waiting for approval; this run ends here");
            return RunnerEvent::AwaitingApproval {
                operation_id: self.op.operation_id.clone(),
                fencing_token: self.cfg.fencing_token,
                plan: *plan,
                at: strato_domain::ts::now(),
            };
        }
        self.note("done", "operation succeeded");
        RunnerEvent::Succeeded {
            operation_id: self.op.operation_id.clone(),
            fencing_token: self.cfg.fencing_token,
            outputs: done.outputs.into_iter().collect(),
            drift: done.drift,
            preview: done.preview,
            estimate: (!estimate.resources.is_empty()).then(|| estimate.clone()),
            state: None,
            at: strato_domain::ts::now(),
        }
    }

    /// The `cancelled` event for a cancel, else `failed` with the failure in user terms.
    pub(super) fn failed_event(&self, failure: Failure) -> RunnerEvent {
        self.note(&failure.step, &format!("failed: {}", failure.what));
        let (operation_id, fencing_token, at) = (
            self.op.operation_id.clone(),
            self.cfg.fencing_token,
            strato_domain::ts::now(),
        );
        if failure.stopped == Some(StopReason::Cancelled) {
            return RunnerEvent::Cancelled {
                operation_id,
                fencing_token,
                at,
            };
        }
        RunnerEvent::Failed {
            operation_id,
            fencing_token,
            error: failure.user_error(),
            state: None,
            at,
        }
    }
}

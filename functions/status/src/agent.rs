//! The cluster agent handshake. A create whose template installs the agent does not end with the apply: the
//! cluster waits in CONFIGURING until the agent reports Ready nodes (`agent_ready`) or a timer set at the
//! apply's end fires (`configure_deadline`). A create without an agent ends with the apply, provided the
//! template's required outputs are there. SQS delays a message by at most 15 minutes, so a later deadline is
//! reached by a chain of timers, each sent again for the time left ([`MAX_TIMER_DELAY_SECS`] at most).

use strato_coordination::{LOCK_LEASE, step_to, update_operation};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::messages::ControlEvent;
use strato_domain::model::{
    CONFIGURE_STEP, Cluster, ClusterState, Operation, OperationKind, OperationStatus, Step,
};
use strato_domain::ports::{Clock, Clusters, EventsQueue, LeaseRenewal, Operations, Templates};
use time::OffsetDateTime;

use crate::StatusError;
use crate::cluster_end::{change, to_configuring};
use crate::handoff::{Final, Outputs, finish, finish_interrupted_handoff};
use crate::ports::{Outcome, Ports, Status};

/// The longest delay SQS allows a message (15 minutes): no timer asks for more.
pub const MAX_TIMER_DELAY_SECS: i32 = 900;

fn timer_delay(secs: i64) -> i32 {
    secs.clamp(0, i64::from(MAX_TIMER_DELAY_SECS)) as i32
}

/// How a finished create proves the cluster is usable.
pub(crate) enum Readiness {
    /// The template installs the cluster agent: wait for it (deadline in seconds).
    Agent(u64),
    /// No agent: these outputs must be present and non-empty.
    Outputs(Vec<String>),
}

pub(crate) async fn readiness<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
) -> Result<Readiness, StatusError> {
    let Some(spec) = &op.spec else {
        return Ok(Readiness::Outputs(Vec::new()));
    };
    let stored = ctx
        .templates
        .template(&spec.template.name, &spec.template.version)
        .await?;
    let Some(t) = stored else {
        // The API validated the create against this template; a catalog that lost it is an operator problem,
        // not a reason to keep the tenant's cluster in limbo.
        tracing::warn!(template = %spec.template.name, version = %spec.template.version,
            "template of a finished create is not in the catalog; no outputs to verify");
        return Ok(Readiness::Outputs(Vec::new()));
    };
    Ok(match t.manifest.agent {
        Some(a) => Readiness::Agent(a.deadline_secs),
        None => Readiness::Outputs(t.manifest.required_outputs),
    })
}

/// The outputs a template promised but the apply did not produce (absent, null or an empty string/list).
fn missing_outputs(required: &[String], outputs: &Outputs) -> Vec<String> {
    required
        .iter()
        .filter(|k| match outputs.get(k.as_str()) {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::String(s)) => s.trim().is_empty(),
            Some(serde_json::Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        })
        .cloned()
        .collect()
}

/// A create's end once the template's required outputs are checked: a success that lacks some fails.
pub(crate) fn verify_outputs(required: &[String], fin: Final) -> Final {
    if let Final::Succeeded { outputs, .. } = &fin {
        let missing = missing_outputs(required, outputs);
        if !missing.is_empty() {
            return Final::Failed(missing_outputs_error(&missing));
        }
    }
    fin
}

fn missing_outputs_error(missing: &[String]) -> UserError {
    UserError::new(
        ErrorCategory::InvalidConfiguration,
        "verify outputs",
        format!(
            "the apply finished but the template's required outputs are missing: {}",
            missing.join(", ")
        ),
    )
    .with_fix(
        "The template's Terraform did not produce these outputs, so the cluster cannot be reached. Check that \
         its modules declare them in outputs.tf and that the resources behind them were created, then retry \
         (POST /v1/clusters/{id}/retry) or delete the cluster.",
    )
}

/// Apply finished for a template with an agent: the cluster is CONFIGURING and the create stays open (lock
/// held) until the agent reports enough Ready nodes or the deadline passes.
pub(crate) async fn await_agent<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    outputs: &Outputs,
    deadline_secs: u64,
) -> Result<(), StatusError> {
    let now = ctx.clock.now();
    let deadline = now + time::Duration::seconds(deadline_secs as i64);
    let c = change(ctx.store, &op.tenant_id, &op.cluster_id, |c| {
        if !to_configuring(c, outputs) {
            return false;
        }
        c.configuring_deadline = Some(deadline);
        true
    })
    .await?;
    update_operation(ctx.store, &op.operation_id, |o| {
        if o.status.is_terminal() || o.steps.iter().any(|s| s.name == CONFIGURE_STEP) {
            return false;
        }
        o.status = OperationStatus::Running;
        o.steps.push(Step {
            name: CONFIGURE_STEP.into(),
            started_at: now,
            finished_at: None,
            ok: None,
        });
        true
    })
    .await?;
    let event = ControlEvent::ConfigureDeadline {
        operation_id: op.operation_id.clone(),
        cluster_id: op.cluster_id.clone(),
        deadline: c.configuring_deadline.unwrap_or(deadline),
    };
    // A deadline beyond SQS's longest delay is reached by chaining (see `apply_control`).
    ctx.queues
        .send_control(&event, timer_delay(deadline_secs as i64))
        .await?;
    Ok(())
}

fn close_configure_step(o: &mut Operation, ok: bool, now: OffsetDateTime) -> bool {
    match o
        .steps
        .iter_mut()
        .find(|s| s.name == CONFIGURE_STEP && s.finished_at.is_none())
    {
        Some(step) => {
            step.finished_at = Some(now);
            step.ok = Some(ok);
            true
        }
        None => false,
    }
}

/// What a control event does to the create it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ControlDecision {
    /// A duplicate, a late timer, or an event for something else: nothing to do.
    Ignore,
    /// The create already ended (a late timer or agent, or a redelivery after the end was saved): only its
    /// hand-off may be left to finish.
    AlreadyEnded,
    /// The deadline timer fired early (SQS delays at most 15 minutes): the next timer of the chain goes out
    /// with this delay.
    Wait(i32),
    /// The agent is ready: the cluster becomes ACTIVE and the create succeeds.
    Ready,
    /// The deadline passed without a ready agent: the create fails.
    TimedOut,
}

/// Given the operation and cluster an event names, the event and the time: what happens. Only a create
/// still waiting in CONFIGURING is affected.
pub(crate) fn decide_control(
    op: &Operation,
    c: &Cluster,
    ev: &ControlEvent,
    now: OffsetDateTime,
) -> ControlDecision {
    let (ControlEvent::AgentReady { cluster_id, .. } | ControlEvent::ConfigureDeadline { cluster_id, .. }) =
        ev;
    if op.status.is_terminal() {
        return ControlDecision::AlreadyEnded;
    }
    if op.kind != OperationKind::Create
        || &op.cluster_id != cluster_id
        || c.state() != ClusterState::Configuring
    {
        return ControlDecision::Ignore;
    }
    match ev {
        ControlEvent::AgentReady { .. } => ControlDecision::Ready,
        ControlEvent::ConfigureDeadline { deadline, .. } => {
            let left = (*deadline - now).whole_seconds();
            if left > 0 {
                ControlDecision::Wait(timer_delay(left))
            } else {
                ControlDecision::TimedOut
            }
        }
    }
}

fn agent_timeout_error() -> UserError {
    UserError::new(
        ErrorCategory::Timeout,
        CONFIGURE_STEP,
        "the cluster agent did not register with enough Ready nodes before the deadline",
    )
    .with_fix(
        "Check that the nodes can reach the control-plane URL and that the agent runs \
                 (kubectl -n strato-system logs deploy/strato-agent), then retry the cluster.",
    )
}

/// The deadline timer fired before the deadline: the next timer of the chain goes out (this one is acked).
/// Handing this one back instead (a visibility change) would count a receive each time and send it to the
/// dead-letter queue after a few; a new message starts its count afresh. The create holds its cluster lock
/// throughout, and no runner heartbeats for it any more, so each link renews the lock's lease.
async fn chain_timer<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    ev: &ControlEvent,
    secs: i32,
) -> Result<(), StatusError> {
    if let Some(token) = op.fencing_token
        && !ctx
            .store
            .renew_lock(
                &op.cluster_id,
                &op.operation_id,
                token,
                LOCK_LEASE,
                ctx.clock.now(),
            )
            .await?
    {
        tracing::warn!(operation_id = %op.operation_id, "a configuring create no longer holds its cluster lock");
    }
    ctx.queues.send_control(ev, secs).await?;
    Ok(())
}

/// Applies an agent handshake event to the create it names.
pub(crate) async fn apply_control<P: Ports>(
    ctx: &Status<'_, P>,
    ev: &ControlEvent,
) -> Result<Outcome, StatusError> {
    let (ControlEvent::AgentReady {
        operation_id: op_id,
        cluster_id,
        ..
    }
    | ControlEvent::ConfigureDeadline {
        operation_id: op_id,
        cluster_id,
        ..
    }) = ev;
    let Some(op) = ctx.store.load_operation(op_id).await? else {
        return Err(StatusError::UnknownOperation(op_id.clone()));
    };
    strato_telemetry::record_operation(&op);
    if op.status.is_terminal() {
        // Whatever the cluster says: an ended operation must not keep its lock or slot.
        finish_interrupted_handoff(ctx, &op).await?;
        return Ok(Outcome::Ack);
    }
    let Some(c) = ctx.store.load_cluster(&op.tenant_id, cluster_id).await? else {
        return Ok(Outcome::Ack);
    };
    let now = ctx.clock.now();
    let fin = match decide_control(&op, &c, ev, now) {
        ControlDecision::Ignore => return Ok(Outcome::Ack),
        ControlDecision::AlreadyEnded => {
            finish_interrupted_handoff(ctx, &op).await?;
            return Ok(Outcome::Ack);
        }
        ControlDecision::Wait(secs) => {
            chain_timer(ctx, &op, ev, secs).await?;
            return Ok(Outcome::Ack);
        }
        ControlDecision::Ready => {
            change(ctx.store, &op.tenant_id, &op.cluster_id, |c| {
                let moved = step_to(c, ClusterState::Active);
                c.configuring_deadline = None;
                c.last_error = None;
                moved
            })
            .await?;
            Final::Succeeded {
                outputs: c.outputs.clone(),
                drift: None,
                estimate: None,
                preview: None,
                at: now,
            }
        }
        ControlDecision::TimedOut => Final::Failed(agent_timeout_error()),
    };
    let ok = matches!(fin, Final::Succeeded { .. });
    let op = update_operation(ctx.store, &op.operation_id, |o| {
        !o.status.is_terminal() && close_configure_step(o, ok, now)
    })
    .await?
    .unwrap_or(op);
    finish(ctx, op, fin).await?;
    Ok(Outcome::Ack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::running;
    use strato_domain::ts;

    #[test]
    fn missing_or_empty_outputs_fail_a_create() {
        let required = ["endpoint".to_owned(), "ca".to_owned(), "subnets".to_owned()];
        let fin = |outputs: serde_json::Value| Final::Succeeded {
            outputs: serde_json::from_value(outputs).unwrap(),
            drift: None,
            estimate: None,
            preview: None,
            at: ts::now(),
        };
        let all = fin(serde_json::json!({"endpoint": "https://k8s", "ca": "LS0t", "subnets": ["a"]}));
        assert_eq!(verify_outputs(&required, all.clone()), all);
        let Final::Failed(err) = verify_outputs(
            &required,
            fin(serde_json::json!({"endpoint": "https://k8s", "ca": " ", "subnets": []})),
        ) else {
            panic!("not failed")
        };
        assert!(err.what.ends_with("missing: ca, subnets"), "{}", err.what);
        assert_eq!(verify_outputs(&required, Final::Cancelled), Final::Cancelled);
    }

    #[test]
    fn only_a_create_waiting_in_configuring_reacts_to_the_agent() {
        let (mut op, mut c) = running(OperationKind::Create, ClusterState::Configuring);
        let now = ts::now();
        let ready = ControlEvent::AgentReady {
            operation_id: op.operation_id.clone(),
            cluster_id: c.cluster_id.clone(),
            nodes_ready: 3,
        };
        let timer = |secs: i64| ControlEvent::ConfigureDeadline {
            operation_id: op.operation_id.clone(),
            cluster_id: c.cluster_id.clone(),
            deadline: now + time::Duration::seconds(secs),
        };
        assert_eq!(decide_control(&op, &c, &ready, now), ControlDecision::Ready);
        assert_eq!(
            decide_control(&op, &c, &timer(60), now),
            ControlDecision::Wait(60)
        );
        assert_eq!(
            decide_control(&op, &c, &timer(3600), now),
            ControlDecision::Wait(900)
        );
        assert_eq!(decide_control(&op, &c, &timer(0), now), ControlDecision::TimedOut);
        c = c.in_state(ClusterState::Active);
        assert_eq!(
            decide_control(&op, &c, &ready, now),
            ControlDecision::Ignore,
            "a duplicate"
        );
        c = c.in_state(ClusterState::Configuring);
        op.status = OperationStatus::Failed;
        assert_eq!(
            decide_control(&op, &c, &ready, now),
            ControlDecision::AlreadyEnded,
            "after the deadline: only the hand-off may be left"
        );
    }
}

//! The platform's vital signs: every metric's name, unit and labels, emitted through the `metrics` facade
//! where the facts are known. Whatever recorder the process installed receives them (EMF in AWS, see
//! `strato_telemetry::emf`; devstack's store; a test's debugging recorder); with none installed they cost nothing.
//! `docs/metrics.md` lists them for the dashboard: keep it true when a name, unit or label changes.

use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use serde::Serialize;
use time::OffsetDateTime;

use crate::error::ErrorCategory;
use crate::model::{ClusterSpec, Operation, OperationKind, OperationStatus};

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Strato";

pub const OPERATION_DURATION: &str = "OperationDuration";
pub const OPERATIONS_ENDED: &str = "OperationsEnded";
/// OperationsEnded again, by `outcome` alone: what the failure-rate alarm's metric math reads (an alarm cannot
/// sum over the other dimensions).
pub const OPERATION_OUTCOMES: &str = "OperationOutcomes";
pub const OPERATION_FAILURES: &str = "OperationFailures";
pub const LOCK_HANDOFF_LATENCY: &str = "LockHandoffLatency";
pub const QUEUE_WAIT_DISPATCH: &str = "QueueWaitDispatch";
pub const OPERATIONS_PARKED: &str = "OperationsParked";
pub const QUEUE_WAIT_START: &str = "QueueWaitStart";
pub const QUEUE_WAIT_FIRST_LOG: &str = "QueueWaitFirstLog";
pub const STEP_DURATION: &str = "StepDuration";
pub const STEP_RETRIES: &str = "StepRetries";
pub const CLEANUPS: &str = "Cleanups";
pub const LOG_LINES_SHIPPED: &str = "LogLinesShipped";
pub const LOG_LINES_SKIPPED: &str = "LogLinesSkipped";
pub const LOG_FANOUT_LATENCY: &str = "LogFanoutLatency";
pub const WEBHOOK_DELIVERIES: &str = "WebhookDeliveries";
pub const DRIFT_FOUND: &str = "DriftFound";
/// A cluster's health status changed (dimensions `from`, `to`).
pub const CLUSTER_HEALTH_CHANGES: &str = "ClusterHealthChanges";
/// Audit entries that could not be written (the action itself went on; see `audit::record`).
pub const AUDIT_WRITE_FAILURES: &str = "AuditWriteFailures";
pub const OPERATIONS_ACTIVE: &str = "OperationsActive";
/// Seconds since the oldest open (queued, parked, dispatched or running) operation was requested; 0 when
/// none is open. The stuck-operation alarm reads it.
pub const OLDEST_OPEN_OPERATION_AGE: &str = "OldestOpenOperationAge";
pub const RUNNER_WALL_TIME: &str = "RunnerWallTime";
pub const RUNNER_OVERHEAD_WALL: &str = "RunnerOverheadWall";
pub const RUNNER_OVERHEAD_CPU: &str = "RunnerOverheadCpu";
pub const ENGINE_CPU: &str = "EngineCpu";
/// A rollout's clusters in each member status (dimensions `rollout`, `status`), set each time the api saves
/// an input the `rollouts` queue brought.
pub const ROLLOUT_MEMBERS: &str = "RolloutMembers";
/// A rollout's input that could not be sent to the `rollouts` queue (an ended run's outcome, a tick).
pub const ROLLOUT_INPUTS_LOST: &str = "RolloutInputsLost";

/// Histograms, in milliseconds.
const TIMINGS: [&str; 11] = [
    OPERATION_DURATION,
    LOCK_HANDOFF_LATENCY,
    QUEUE_WAIT_DISPATCH,
    QUEUE_WAIT_START,
    QUEUE_WAIT_FIRST_LOG,
    STEP_DURATION,
    LOG_FANOUT_LATENCY,
    RUNNER_WALL_TIME,
    RUNNER_OVERHEAD_WALL,
    RUNNER_OVERHEAD_CPU,
    ENGINE_CPU,
];
const COUNTS: [&str; 13] = [
    OPERATIONS_ENDED,
    OPERATION_OUTCOMES,
    OPERATION_FAILURES,
    OPERATIONS_PARKED,
    STEP_RETRIES,
    CLEANUPS,
    LOG_LINES_SHIPPED,
    LOG_LINES_SKIPPED,
    WEBHOOK_DELIVERIES,
    DRIFT_FOUND,
    AUDIT_WRITE_FAILURES,
    CLUSTER_HEALTH_CHANGES,
    ROLLOUT_INPUTS_LOST,
];

/// Every metric name the code emits (what infra/'s dashboard may chart, and must).
pub fn all() -> impl Iterator<Item = &'static str> {
    TIMINGS
        .into_iter()
        .chain(COUNTS)
        .chain([OPERATIONS_ACTIVE, OLDEST_OPEN_OPERATION_AGE, ROLLOUT_MEMBERS])
}

/// Gives every metric its unit (EMF's `Unit`); call once after installing a recorder.
pub fn describe() {
    for name in TIMINGS {
        describe_histogram!(name, Unit::Milliseconds, "");
    }
    for name in COUNTS {
        describe_counter!(name, Unit::Count, "");
    }
    describe_gauge!(OPERATIONS_ACTIVE, Unit::Count, "");
    describe_gauge!(OLDEST_OPEN_OPERATION_AGE, Unit::Seconds, "");
    describe_gauge!(ROLLOUT_MEMBERS, Unit::Count, "");
}

/// A value's serde name (`drift-check`, `transient`, `aws`): labels read like the API.
pub fn label<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "unknown".to_owned(),
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Milliseconds from `from` to `to`, never negative (clocks of different hosts may disagree slightly).
pub fn millis_between(from: OffsetDateTime, to: OffsetDateTime) -> f64 {
    ((to - from).as_seconds_f64() * 1000.0).max(0.0)
}

/// An operation has just become terminal (wherever it ended: api, dispatcher, status): its duration from
/// creation, its outcome, and for a failure its category. The template and provider are the spec's the
/// operation applied, else its cluster's (`cluster_spec`: a drift check or a delete has no spec of its
/// own), `none` without either.
pub fn operation_ended(op: &Operation, cluster_spec: Option<&ClusterSpec>, now: OffsetDateTime) {
    let kind = label(&op.kind);
    let outcome = label(&op.status);
    let (template, provider) = match op.spec.as_ref().or(cluster_spec) {
        Some(s) => (s.template.name.clone(), label(&s.provider)),
        None => ("none".to_owned(), "none".to_owned()),
    };
    let labels = [
        ("kind", kind.clone()),
        ("template", template),
        ("provider", provider),
        ("outcome", outcome),
    ];
    histogram!(OPERATION_DURATION, &labels).record(millis_between(op.created_at, now));
    counter!(OPERATIONS_ENDED, &labels).increment(1);
    counter!(OPERATION_OUTCOMES, "outcome" => label(&op.status)).increment(1);
    if op.status == OperationStatus::Failed {
        let category = op.error.as_ref().map_or(ErrorCategory::Unknown, |e| e.category);
        counter!(OPERATION_FAILURES, "kind" => kind, "category" => label(&category)).increment(1);
    }
}

/// From an operation becoming terminal until its lock and slot were released and its successors enqueued.
pub fn lock_handoff(took: Duration) {
    histogram!(LOCK_HANDOFF_LATENCY).record(millis(took));
}

/// The dispatcher started the operation's runner: how long the operation waited since it was created.
pub fn dispatched(op: &Operation, now: OffsetDateTime) {
    histogram!(QUEUE_WAIT_DISPATCH, "kind" => label(&op.kind)).record(millis_between(op.created_at, now));
}

/// Why an operation was parked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParkReason {
    ClusterBusy,
    TenantLimit,
}

pub fn parked(reason: ParkReason) {
    let reason = match reason {
        ParkReason::ClusterBusy => "cluster_busy",
        ParkReason::TenantLimit => "tenant_limit",
    };
    counter!(OPERATIONS_PARKED, "reason" => reason).increment(1);
}

/// The runner process started for `op`: the time since the dispatcher recorded the dispatch (the
/// operation's last update before the runner reads it).
pub fn runner_started(kind: OperationKind, dispatched_at: OffsetDateTime, now: OffsetDateTime) {
    histogram!(QUEUE_WAIT_START, "kind" => label(&kind)).record(millis_between(dispatched_at, now));
}

/// The runner shipped its first log line, `since_start` after it started.
pub fn first_log_line(kind: OperationKind, since_start: Duration) {
    histogram!(QUEUE_WAIT_FIRST_LOG, "kind" => label(&kind)).record(millis(since_start));
}

/// A step's bare name (`plan` of `network/plan`): stages are per template, so they stay out of labels.
pub fn bare_step(step: &str) -> &str {
    step.rsplit('/').next().unwrap_or(step)
}

/// One reported step ended.
pub fn step_finished(kind: OperationKind, step: &str, ok: bool, took: Duration) {
    let outcome = if ok { "ok" } else { "failed" };
    histogram!(
        STEP_DURATION,
        "kind" => label(&kind),
        "step" => bare_step(step).to_owned(),
        "outcome" => outcome,
    )
    .record(millis(took));
}

/// A transient failure of `step` is being retried.
pub fn step_retried(kind: OperationKind, step: &str) {
    counter!(STEP_RETRIES, "kind" => label(&kind), "step" => bare_step(step).to_owned()).increment(1);
}

/// A failed create was cleaned up; `complete` when nothing was left behind.
pub fn cleanup(complete: bool) {
    let outcome = if complete { "complete" } else { "partial" };
    counter!(CLEANUPS, "outcome" => outcome).increment(1);
}

/// Lines sent on the live log path, and lines it skipped because the shipper was behind.
pub fn log_lines(shipped: u64, skipped: u64) {
    counter!(LOG_LINES_SHIPPED).increment(shipped);
    counter!(LOG_LINES_SKIPPED).increment(skipped);
}

/// A log frame the runner sent at `sent` was posted to its subscribers by `done`.
pub fn log_fanout(sent: OffsetDateTime, done: OffsetDateTime) {
    histogram!(LOG_FANOUT_LATENCY).record(millis_between(sent, done));
}

/// A webhook delivery attempt ended: `delivered`, `retrying` or `failed`.
pub fn webhook_delivery(outcome: &'static str) {
    counter!(WEBHOOK_DELIVERIES, "outcome" => outcome).increment(1);
}

/// The clusters of rollout `rollout` in each member status (`pending`, `planning`, `upgraded`, ...); every
/// status is given, zero included, so a status the rollout has left drops to 0 on the chart.
pub fn rollout_members(rollout: &str, counts: &[(&'static str, usize)]) {
    for (status, n) in counts {
        gauge!(ROLLOUT_MEMBERS, "rollout" => rollout.to_owned(), "status" => *status).set(*n as f64);
    }
}

/// An input of a rollout could not be queued (the next sweep repairs a tick; see `docs/operations.md`).
pub fn rollout_input_lost() {
    counter!(ROLLOUT_INPUTS_LOST).increment(1);
}

/// A drift check found drift on a cluster of `template`.
pub fn drift_found(template: &str) {
    counter!(DRIFT_FOUND, "template" => template.to_owned()).increment(1);
}

/// A cluster's health status changed (`unknown`, `healthy`, `degraded`), wherever it was decided (api,
/// scheduler).
pub fn health_changed(from: &str, to: &str) {
    counter!(CLUSTER_HEALTH_CHANGES, "from" => from.to_owned(), "to" => to.to_owned()).increment(1);
}

/// Open operations in one bucket of the store's index (`queued`, `waiting` = parked, `dispatched`,
/// `running`), as the sweep read them.
pub fn active_operations(bucket: &'static str, n: usize) {
    gauge!(OPERATIONS_ACTIVE, "status" => bucket).set(n as f64);
}

/// The sweep's view of the oldest open operation (`None`: nothing open).
pub fn oldest_open_operation(oldest: Option<OffsetDateTime>, now: OffsetDateTime) {
    let age = oldest.map_or(0.0, |t| (millis_between(t, now) / 1000.0).floor());
    gauge!(OLDEST_OPEN_OPERATION_AGE).set(age);
}

/// What a run cost outside the engine: wall time beside the engine commands' and the runner's own CPU,
/// beside the engine children's CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunnerCost {
    pub wall: Duration,
    pub engine_wall: Duration,
    pub own_cpu: Duration,
    pub engine_cpu: Duration,
}

pub fn runner_cost(kind: OperationKind, cost: RunnerCost) {
    let kind = label(&kind);
    histogram!(RUNNER_WALL_TIME, "kind" => kind.clone()).record(millis(cost.wall));
    histogram!(RUNNER_OVERHEAD_WALL, "kind" => kind.clone())
        .record(millis(cost.wall.saturating_sub(cost.engine_wall)));
    histogram!(RUNNER_OVERHEAD_CPU, "kind" => kind.clone()).record(millis(cost.own_cpu));
    histogram!(ENGINE_CPU, "kind" => kind).record(millis(cost.engine_cpu));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_serde_names() {
        assert_eq!(label(&OperationKind::DriftCheck), "drift-check");
        assert_eq!(
            label(&ErrorCategory::InvalidConfiguration),
            "invalid_configuration"
        );
        assert_eq!(label(&OperationStatus::Succeeded), "succeeded");
        assert_eq!(bare_step("network/plan"), "plan");
        assert_eq!(bare_step("prepare"), "prepare");
    }

    #[test]
    fn a_clock_behind_never_gives_a_negative_wait() {
        let t = crate::ts::now();
        assert_eq!(millis_between(t, t - time::Duration::seconds(1)), 0.0);
        assert_eq!(millis_between(t, t + time::Duration::milliseconds(1500)), 1500.0);
    }
}

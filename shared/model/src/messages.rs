//! Message bodies on Strato's queues. These are the contracts between functions.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::approval::SavedPlan;
use crate::cost::CostEstimate;
use crate::error::UserError;
use crate::ids::{ClusterId, OperationId, TenantId};
use crate::model::{ClusterState, Operation, OperationKind, OperationStatus, ResourceChange};
use crate::telemetry::Traceparent;

/// `jobs.fifo`: start this operation. MessageGroupId = cluster id; deduplication id = operation id plus a
/// wake-up counter, so a deliberate re-enqueue is not swallowed by FIFO deduplication.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobMessage {
    pub operation_id: OperationId,
    pub cluster_id: ClusterId,
    pub tenant_id: TenantId,
    pub kind: OperationKind,
    /// The operation's trace context ([`Operation::traceparent`]); absent in messages written before traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<Traceparent>,
    /// The operation as its writer recorded it (see [`JobMessage::carrying`]); absent in every other job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Box<Operation>>,
}

/// A carried operation larger than this (as JSON) is left out: the dispatcher reads it instead, and the
/// message stays far below SQS's 256 KiB.
pub const MAX_CARRIED_OPERATION_BYTES: usize = 64 * 1024;

impl From<&Operation> for JobMessage {
    fn from(op: &Operation) -> Self {
        Self {
            operation_id: op.operation_id.clone(),
            cluster_id: op.cluster_id.clone(),
            tenant_id: op.tenant_id.clone(),
            kind: op.kind,
            traceparent: op.traceparent,
            operation: None,
        }
    }
}

impl JobMessage {
    /// The job for an operation just written as `op`, carrying it: a first delivery can claim it in one
    /// write without reading it first. The claim is conditioned on the operation's `updated_at`, so a copy
    /// that is no longer current only loses the claim and the dispatcher reads and decides as for any job.
    /// Sealed values stay sealed in the copy (it is the stored item's content). Too large: not carried.
    pub fn carrying(op: &Operation) -> Self {
        let carried = serde_json::to_vec(op)
            .is_ok_and(|json| json.len() <= MAX_CARRIED_OPERATION_BYTES)
            .then(|| Box::new(op.clone()));
        Self {
            operation: carried,
            ..Self::from(op)
        }
    }
}

/// `events` queue, from the runner. Every event carries the fencing token the runner was started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunnerEvent {
    StepStarted {
        operation_id: OperationId,
        fencing_token: u64,
        step: String,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    StepFinished {
        operation_id: OperationId,
        fencing_token: u64,
        step: String,
        ok: bool,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    Heartbeat {
        operation_id: OperationId,
        fencing_token: u64,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    /// A stage's plan is saved and priced, before anything is applied.
    PlanReady {
        operation_id: OperationId,
        fencing_token: u64,
        stage: String,
        summary: PlanSummary,
        estimate: Option<CostEstimate>,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    /// A stage's plan passed its plan policies (a deny fails the run instead): the policy set's version and
    /// the warnings, which become notes on the operation.
    PolicyChecked {
        operation_id: OperationId,
        fencing_token: u64,
        stage: String,
        version: String,
        #[serde(default)]
        warnings: Vec<String>,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    /// The run planned a change that needs an approver: the plan is saved, the runner ends here (a final
    /// report, though the operation stays open).
    AwaitingApproval {
        operation_id: OperationId,
        fencing_token: u64,
        plan: SavedPlan,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    Succeeded {
        operation_id: OperationId,
        fencing_token: u64,
        /// Non-sensitive outputs only; sensitive ones are stored encrypted by the runner.
        #[serde(default)]
        outputs: BTreeMap<String, serde_json::Value>,
        /// Drift checks: what changed out of band.
        #[serde(default)]
        drift: Option<Vec<ResourceChange>>,
        /// The whole run's estimate again (every stage's `PlanReady` merged), so an operation ends with it
        /// even when a `PlanReady` arrives after this event on the unordered queue (estimates end right after
        /// their plan).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimate: Option<CostEstimate>,
        /// A preview (`plan` operation): what the update would do and cost.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<Box<crate::preview::Preview>>,
        /// The state versions in the customer's own storage, listed at the run's end (and a restore's
        /// result); absent for state in Strato's bucket.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Box<crate::model::CustomerStateReport>>,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    Failed {
        operation_id: OperationId,
        fencing_token: u64,
        error: UserError,
        /// As on `Succeeded`: a failed run lists the versions too (that is when a restore is wanted).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Box<crate::model::CustomerStateReport>>,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
    Cancelled {
        operation_id: OperationId,
        fencing_token: u64,
        #[serde(with = "crate::ts")]
        at: OffsetDateTime,
    },
}

impl RunnerEvent {
    /// The wire name of the event's type (`step_started`, `succeeded`…), for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            RunnerEvent::StepStarted { .. } => "step_started",
            RunnerEvent::StepFinished { .. } => "step_finished",
            RunnerEvent::Heartbeat { .. } => "heartbeat",
            RunnerEvent::PlanReady { .. } => "plan_ready",
            RunnerEvent::AwaitingApproval { .. } => "awaiting_approval",
            RunnerEvent::PolicyChecked { .. } => "policy_checked",
            RunnerEvent::Succeeded { .. } => "succeeded",
            RunnerEvent::Failed { .. } => "failed",
            RunnerEvent::Cancelled { .. } => "cancelled",
        }
    }

    pub fn operation_id(&self) -> &OperationId {
        match self {
            RunnerEvent::StepStarted { operation_id, .. }
            | RunnerEvent::StepFinished { operation_id, .. }
            | RunnerEvent::Heartbeat { operation_id, .. }
            | RunnerEvent::PlanReady { operation_id, .. }
            | RunnerEvent::AwaitingApproval { operation_id, .. }
            | RunnerEvent::PolicyChecked { operation_id, .. }
            | RunnerEvent::Succeeded { operation_id, .. }
            | RunnerEvent::Failed { operation_id, .. }
            | RunnerEvent::Cancelled { operation_id, .. } => operation_id,
        }
    }

    pub fn fencing_token(&self) -> u64 {
        match self {
            RunnerEvent::StepStarted { fencing_token, .. }
            | RunnerEvent::StepFinished { fencing_token, .. }
            | RunnerEvent::Heartbeat { fencing_token, .. }
            | RunnerEvent::PlanReady { fencing_token, .. }
            | RunnerEvent::AwaitingApproval { fencing_token, .. }
            | RunnerEvent::PolicyChecked { fencing_token, .. }
            | RunnerEvent::Succeeded { fencing_token, .. }
            | RunnerEvent::Failed { fencing_token, .. }
            | RunnerEvent::Cancelled { fencing_token, .. } => *fencing_token,
        }
    }
}

pub use crate::plan::PlanSummary;

/// Which output stream of the engine a log line came from (`strato` for the runner's own notices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    Stdout,
    Stderr,
    Strato,
}

/// One user-visible log line. `seq` starts at 1 per operation and has no gaps in the archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogLine {
    pub seq: u64,
    /// RFC 3339.
    #[serde(with = "crate::ts")]
    #[schemars(with = "String")]
    pub ts: OffsetDateTime,
    pub stream: LogStream,
    /// e.g. `init`, `plan`, `network/apply`.
    pub step: String,
    pub text: String,
}

/// `logs` queue bodies, and (the same JSON) the frames WebSocket subscribers receive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LogFrame {
    /// Consecutive lines `first_seq..first_seq + lines.len()`.
    Log {
        #[schemars(with = "String")]
        operation_id: OperationId,
        first_seq: u64,
        lines: Vec<LogLine>,
        /// Set when the live stream skipped lines (the queue was slow); they are in the archive, and a
        /// client re-subscribes with `from_seq` to fetch them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skipped: Option<SkippedLines>,
    },
    /// The operation or its cluster changed state (also drift results).
    Status {
        #[schemars(with = "String")]
        operation_id: OperationId,
        #[schemars(with = "String")]
        cluster_id: ClusterId,
        cluster_state: ClusterState,
        operation_status: OperationStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        #[serde(with = "crate::ts")]
        #[schemars(with = "String")]
        at: OffsetDateTime,
    },
    /// The operation is over; no further log lines will come. `last_seq` is the final line's number (0 if
    /// the operation logged nothing), so a client can tell whether it has everything.
    End {
        #[schemars(with = "String")]
        operation_id: OperationId,
        final_status: OperationStatus,
        last_seq: u64,
    },
}

impl LogFrame {
    pub fn operation_id(&self) -> &OperationId {
        match self {
            LogFrame::Log { operation_id, .. }
            | LogFrame::Status { operation_id, .. }
            | LogFrame::End { operation_id, .. } => operation_id,
        }
    }

    /// The `logs` FIFO queue's deduplication id: the same frame sent twice within SQS's 5-minute window is
    /// delivered once, while distinct frames never collide (a `log` frame by its seq range, a `status` frame
    /// by its states and instant, `end` once per operation). The message group is the operation, so one
    /// operation's frames reach the fan-out in the order they were sent, whatever its concurrency.
    pub fn dedup_id(&self) -> String {
        match self {
            LogFrame::Log {
                operation_id,
                first_seq,
                lines,
                ..
            } => format!("{operation_id}-log-{first_seq}-{}", lines.len()),
            LogFrame::Status {
                operation_id,
                cluster_state,
                operation_status,
                at,
                ..
            } => format!(
                "{operation_id}-status-{cluster_state:?}-{operation_status:?}-{}",
                at.unix_timestamp_nanos()
            ),
            LogFrame::End { operation_id, .. } => format!("{operation_id}-end"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkippedLines {
    pub from_seq: u64,
    pub to_seq: u64,
}

/// `events` queue, from the control plane itself (the agent API, the status function's own timers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ControlEvent {
    /// The cluster agent registered and reported enough Ready nodes: the create may finish.
    AgentReady {
        operation_id: OperationId,
        cluster_id: ClusterId,
        nodes_ready: u32,
    },
    /// Sent with a delay when a cluster enters CONFIGURING; if the agent has not registered by
    /// `deadline`, the operation fails.
    ConfigureDeadline {
        operation_id: OperationId,
        cluster_id: ClusterId,
        #[serde(with = "crate::ts")]
        deadline: OffsetDateTime,
    },
}

/// Environment variable names of the runner's container overrides.
pub const ENV_OPERATION_ID: &str = "STRATO_OPERATION_ID";
pub const ENV_FENCING_TOKEN: &str = "STRATO_FENCING_TOKEN";

impl JobMessage {
    /// Records the job's ids on `span` (the fields of [`crate::telemetry::fields`]).
    pub fn record_on(&self, span: &tracing::Span) {
        use crate::telemetry::fields;
        span.record(fields::TENANT_ID, self.tenant_id.as_str());
        span.record(fields::CLUSTER_ID, self.cluster_id.as_str());
        span.record(fields::OPERATION_ID, self.operation_id.as_str());
        span.record(fields::OPERATION_KIND, self.kind.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_events_have_a_tagged_wire_form() {
        let e = RunnerEvent::Heartbeat {
            operation_id: OperationId::generate(),
            fencing_token: 7,
            at: crate::ts::parse("2026-11-22T04:30:00Z").unwrap(),
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "heartbeat");
        assert_eq!(v["at"], "2026-11-22T04:30:00.000000Z");
        assert_eq!(serde_json::from_value::<RunnerEvent>(v).unwrap(), e);
        assert_eq!(e.fencing_token(), 7);
    }

    #[test]
    fn log_frames_deduplicate_by_content_not_by_operation() {
        let op = OperationId::generate();
        let line = |seq| LogLine {
            seq,
            ts: crate::ts::parse("2026-11-22T04:30:00Z").unwrap(),
            stream: LogStream::Stdout,
            step: "plan".into(),
            text: "x".into(),
        };
        let log = |first_seq, n: u64| LogFrame::Log {
            operation_id: op.clone(),
            first_seq,
            lines: (first_seq..first_seq + n).map(line).collect(),
            skipped: None,
        };
        let status = |at: &str| LogFrame::Status {
            operation_id: op.clone(),
            cluster_id: ClusterId::generate(),
            cluster_state: ClusterState::Provisioning,
            operation_status: OperationStatus::Running,
            step: None,
            message: None,
            at: crate::ts::parse(at).unwrap(),
        };
        // A resent frame is the same message; neighbours, a longer frame from the same seq, and a later
        // status are not.
        assert_eq!(log(1, 3).dedup_id(), log(1, 3).dedup_id());
        let ids = [
            log(1, 3).dedup_id(),
            log(4, 3).dedup_id(),
            log(1, 4).dedup_id(),
            status("2026-11-22T04:30:00Z").dedup_id(),
            status("2026-11-22T04:30:01Z").dedup_id(),
            LogFrame::End {
                operation_id: op.clone(),
                final_status: OperationStatus::Succeeded,
                last_seq: 6,
            }
            .dedup_id(),
        ];
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
        // SQS: at most 128 characters.
        assert!(ids.iter().all(|i| i.len() <= 128 && i.is_ascii()), "{ids:?}");
    }
}

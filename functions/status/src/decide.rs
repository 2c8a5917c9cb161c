//! The status function's decisions, written against the domain's [ports](strato_domain::ports): [`Status`]
//! holds them, [`Ports`] names their types once. The Lambda handler ([`crate::handle`]) runs them on the AWS
//! adapters; `tests/decisions.rs` on the in-memory fakes.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use strato_aws::batch::{for_each_record, receive_count};
use strato_aws::resources::{QUEUES, QueueDef};
use strato_domain::ports::{
    Clock, EventsQueue, FrameSink, JobQueue, LeaseRenewal, NameReservations, RunArchive, SlotHolders,
    Storage, Templates, TenantSettings, Webhooks,
};

use strato_domain::messages::ControlEvent;
use strato_domain::run_proof::RunProofKey;
use strato_domain::telemetry::{self, fields};

use crate::incoming::{Incoming, parse_body};
use crate::{StatusError, agent, runner_events, task_change};

/// What becomes of a record that was handled without error (`RetryAfter`: not yet, hand it back).
pub use strato_aws::batch::Outcome;

/// The types of the status function's ports, named once so every decision reads `Status<'_, P>`.
pub trait Ports {
    /// Operations, clusters, cluster locks (and their leases), tenant slots, name reservations.
    type Store: Storage + LeaseRenewal + SlotHolders + NameReservations + TenantSettings;
    /// The template catalog (what a finished create must prove).
    type Templates: Templates;
    /// `jobs.fifo`: wake-ups, and updates a drift check queues.
    type Jobs: JobQueue;
    /// The `events` queue (timers, back-offs) and the `logs` queue (frames).
    type Queues: EventsQueue + FrameSink;
    /// The run's log archive.
    type Archive: RunArchive;
    type Webhooks: Webhooks;
    type Clock: Clock;
    /// The audit log: a drift reconcile is recorded as `strato:status`.
    type Audit: strato_domain::audit::AuditLog;
}

/// How long an exit-0 STOPPED event waits for the runner's final report before concluding it was lost.
///
/// The report travels on the same standard queue; if the batch holding it fails, SQS hands it out again
/// only after the queue's visibility timeout. So the wait spans several visibility timeouts, spread over the
/// deliveries the queue allows before its dead-letter queue takes the STOPPED event: the last of them
/// decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportWait {
    /// Seconds between deliveries of the STOPPED event.
    pub retry_secs: i32,
    /// The delivery that concludes the report was lost (the queue's last before its DLQ).
    pub last_receive: u32,
}

/// Visibility timeouts of the events queue a stop waits for its report: a report whose batch fails twice
/// still arrives in time.
pub const REPORT_WAIT_VISIBILITY_TIMEOUTS: u32 = 3;

impl ReportWait {
    /// The wait for a queue with this visibility timeout and delivery count.
    pub const fn for_queue(visibility_timeout_secs: u32, max_receive_count: u32) -> Self {
        let retries = if max_receive_count > 1 {
            max_receive_count - 1
        } else {
            1
        };
        let total = visibility_timeout_secs * REPORT_WAIT_VISIBILITY_TIMEOUTS;
        Self {
            retry_secs: total.div_ceil(retries) as i32,
            last_receive: if max_receive_count > 0 {
                max_receive_count
            } else {
                1
            },
        }
    }

    /// The wait on the `events` queue as the resource definitions declare it.
    pub const EVENTS: Self = {
        let q = events_queue();
        Self::for_queue(q.visibility_timeout_secs, q.max_receive_count)
    };

    /// How long the STOPPED event waits in all, from its first delivery to its last.
    pub fn total_secs(&self) -> i64 {
        i64::from(self.retry_secs) * i64::from(self.last_receive.saturating_sub(1))
    }
}

/// The `events` queue's definition, looked up at compile time (so the wait is a constant derived from it).
const fn events_queue() -> QueueDef {
    let mut i = 0;
    while i < QUEUES.len() {
        if same_bytes(QUEUES[i].logical.as_bytes(), b"events") {
            return QUEUES[i];
        }
        i += 1;
    }
    panic!("the resource definitions declare no events queue")
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `records` split by the operation they concern, each group in the batch's order (groups in the order of
/// their first record). A record naming no operation (or unreadable here) is a group of its own.
fn by_operation(records: Vec<SqsMessage>) -> Vec<Vec<SqsMessage>> {
    let mut groups: Vec<Vec<SqsMessage>> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for record in records {
        let key = record
            .body
            .as_deref()
            .and_then(|body| match parse_body("", body).ok()? {
                Incoming::Runner(ev, _) => Some(ev.operation_id().to_string()),
                Incoming::Task(task) => task.operation_id().map(|id| id.to_string()),
                Incoming::Control(
                    ControlEvent::AgentReady { operation_id, .. }
                    | ControlEvent::ConfigureDeadline { operation_id, .. },
                ) => Some(operation_id.to_string()),
                Incoming::Other(_) => None,
            });
        match key.and_then(|k| index.get(&k).copied().map(Ok).or(Some(Err(k)))) {
            Some(Ok(i)) => groups[i].push(record),
            Some(Err(k)) => {
                index.insert(k, groups.len());
                groups.push(vec![record]);
            }
            None => groups.push(vec![record]),
        }
    }
    groups
}

/// The status function's dependencies, as ports.
pub struct Status<'a, P: Ports> {
    pub store: &'a P::Store,
    pub templates: &'a P::Templates,
    pub jobs: &'a P::Jobs,
    pub queues: &'a P::Queues,
    pub archive: &'a P::Archive,
    pub webhooks: &'a P::Webhooks,
    pub clock: &'a P::Clock,
    pub audit: &'a P::Audit,
    pub report_wait: ReportWait,
    /// How long an approval request waits before it expires (`STRATO_APPROVAL_TTL_HOURS`, default 72).
    pub approval_ttl: time::Duration,
    /// Checks that a runner event comes from its own run ([`strato_domain::run_proof`]).
    pub run_proofs: &'a RunProofKey,
}

impl<P: Ports> Status<'_, P> {
    /// Processes a batch; records that failed (or must wait) are reported in `batch_item_failures`. The
    /// events queue is a standard one, so no record is held back for another's failure.
    ///
    /// Each operation's records are handled in order, different operations' at the same time: a runner's
    /// final report frees its tenant's slot, and behind up to nine other runners' heartbeats and steps it
    /// left that slot idle for as long as they took (the queue never promised an order between
    /// operations, and concurrent invocations already interleave them).
    pub async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        let groups = by_operation(event.records);
        let answers = futures_util::future::join_all(groups.iter().map(|records| {
            for_each_record(
                records,
                |record| self.process(record),
                |handle, secs| self.queues.retry_after(handle, secs),
            )
        }))
        .await;
        let mut out = SqsBatchResponse::default();
        out.batch_item_failures = answers.into_iter().flat_map(|a| a.batch_item_failures).collect();
        out
    }

    async fn process(&self, record: &SqsMessage) -> Result<Outcome, StatusError> {
        let message_id = record.message_id.clone().unwrap_or_default();
        let body = record.body.as_deref().ok_or_else(|| StatusError::EmptyBody {
            message_id: message_id.clone(),
        })?;
        // A runner event too large for SQS arrives as a reference to the stored event.
        let stored = self.archive.unspill(body).await?;
        let incoming = parse_body(&message_id, stored.as_deref().unwrap_or(body))?;
        // What the record names, on its span at once; the handlers add the rest once they read the operation.
        let span = tracing::Span::current();
        match &incoming {
            Incoming::Runner(ev, _) => {
                telemetry::record(&span, fields::OPERATION_ID, ev.operation_id().as_str());
            }
            Incoming::Task(task) => {
                if let Some(id) = task.operation_id() {
                    telemetry::record(&span, fields::OPERATION_ID, id.as_str());
                }
                telemetry::record(&span, fields::TASK_ARN, &task.task_arn);
            }
            Incoming::Control(_) | Incoming::Other(_) => {}
        }
        match incoming {
            Incoming::Runner(ev, proof) => {
                if !self.run_proofs.verify_event(&ev, proof.as_deref()) {
                    // Not from the run it names (forged, or from code inside another run): nothing changes.
                    // Acknowledged, since no redelivery can make it valid.
                    tracing::warn!(
                        operation_id = %ev.operation_id(),
                        fencing_token = ev.fencing_token(),
                        proof = if proof.is_some() { "wrong" } else { "missing" },
                        "refusing a runner event without its run's proof"
                    );
                    return Ok(Outcome::Ack);
                }
                runner_events::apply_runner_event(self, &ev).await?;
                Ok(Outcome::Ack)
            }
            Incoming::Task(task) => task_change::apply_task_change(self, &task, receive_count(record)).await,
            Incoming::Control(ev) => agent::apply_control(self, &ev).await,
            Incoming::Other(kind) => {
                tracing::warn!(%kind, "ignoring an event this function does not handle");
                Ok(Outcome::Ack)
            }
        }
    }
}

//! The top of the status function's decisions: a batch of the events queue, grouped by operation, each record
//! parsed and handed to the handler of its kind (runner events, ECS task changes, control events). The ports
//! they run on are in [`crate::ports`]; the Lambda handler ([`crate::handle`]) runs them on the AWS
//! adapters, `tests/decisions.rs` on the in-memory fakes.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use strato_aws::batch::{for_each_record, receive_count};
use strato_domain::ports::{EventsQueue, RunArchive};

use strato_domain::messages::ControlEvent;
use strato_domain::telemetry::{self, fields};

use crate::incoming::{Incoming, parse_body};
use crate::ports::{Outcome, Ports, Status};
use crate::{StatusError, agent, runner_events, task_change};

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

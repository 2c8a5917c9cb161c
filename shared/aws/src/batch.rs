//! One SQS batch, handled the same way by every queue consumer: each record comes to an [`Outcome`]; records
//! to retry are reported in `batchItemFailures` (a partial batch response, so SQS deletes only the others),
//! after a visibility back-off when one is asked for; and on a FIFO queue a record that failed also hands
//! back the later records of its message group unprocessed, so a group is never reordered (other groups go
//! on). On a standard queue records carry no group, and nothing is skipped.

use std::fmt::Display;
use std::future::Future;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsMessage};
use tracing::Instrument;

/// What becomes of one record handled without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done with: SQS deletes it.
    Ack,
    /// Hand it back, visible again after this many seconds (0: after the queue's visibility timeout).
    RetryAfter(i32),
}

/// How often the queue has delivered `record` (1 on the first delivery).
pub fn receive_count(record: &SqsMessage) -> u32 {
    record
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|c| c.parse().ok())
        .unwrap_or(1)
}

fn group(record: &SqsMessage) -> Option<&String> {
    record.attributes.get("MessageGroupId")
}

/// The partial batch response as it is built: the records handed back, and the FIFO groups that failed.
#[derive(Debug, Default)]
pub struct BatchFailures {
    response: SqsBatchResponse,
    failed_groups: Vec<String>,
}

impl BatchFailures {
    /// Whether `record` must go back unprocessed because an earlier record of its FIFO group failed; it is
    /// then reported already.
    pub fn skip(&mut self, record: &SqsMessage) -> bool {
        let skip = group(record).is_some_and(|g| self.failed_groups.contains(g));
        if skip {
            self.response
                .add_failure(record.message_id.clone().unwrap_or_default());
        }
        skip
    }

    /// Hands `record` back for redelivery, and with it the rest of its FIFO group.
    pub fn fail(&mut self, record: &SqsMessage) {
        self.response
            .add_failure(record.message_id.clone().unwrap_or_default());
        if let Some(g) = group(record)
            && !self.failed_groups.contains(g)
        {
            self.failed_groups.push(g.clone());
        }
    }

    pub fn into_response(self) -> SqsBatchResponse {
        self.response
    }
}

/// Handles `records` one at a time, in order, with `handle`. A record that errs (logged) or asks to be
/// retried is handed back; for `RetryAfter(secs)` with `secs > 0`, `delay(receipt handle, secs)` makes it
/// visible again that much later (best effort: otherwise it returns after the visibility timeout).
pub async fn for_each_record<'a, E, H, HF, D, DF>(
    records: &'a [SqsMessage],
    mut handle: H,
    mut delay: D,
) -> SqsBatchResponse
where
    E: Display,
    H: FnMut(&'a SqsMessage) -> HF,
    HF: Future<Output = Result<Outcome, E>>,
    D: FnMut(&'a str, i32) -> DF,
    DF: Future<Output = ()>,
{
    let mut failures = BatchFailures::default();
    for record in records {
        if failures.skip(record) {
            continue;
        }
        // Each record in its own span, a child of the trace it came with (the consumer records the ids it
        // reads on it), with that span's context as the task's current trace (strato_telemetry).
        let (span, me, inherited) = strato_telemetry::record_span("sqs_record", record);
        // Boxed: a record's handling is the consumer's whole decision; on the heap it spares the Lambda
        // runtime's (and a debug test thread's) stack, for one allocation per record.
        let handled = strato_telemetry::with_trace(me, inherited, Box::pin(handle(record)));
        let secs = match handled.instrument(span.clone()).await {
            Ok(Outcome::Ack) => continue,
            Ok(Outcome::RetryAfter(secs)) => secs,
            Err(e) => {
                let id = record.message_id.as_deref().unwrap_or_default();
                span.in_scope(
                    || tracing::error!(message_id = %id, error = %e, "record failed; SQS will redeliver it"),
                );
                0
            }
        };
        if secs > 0
            && let Some(handle) = record.receipt_handle.as_deref()
        {
            delay(handle, secs).await;
        }
        failures.fail(record);
    }
    failures.into_response()
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    fn record(id: &str, group: Option<&str>) -> SqsMessage {
        let mut r = SqsMessage::default();
        r.message_id = Some(id.to_owned());
        r.receipt_handle = Some(format!("rh-{id}"));
        r.body = Some(id.to_owned());
        if let Some(g) = group {
            r.attributes.insert("MessageGroupId".into(), g.into());
        }
        r
    }

    fn failed(response: &SqsBatchResponse) -> Vec<String> {
        response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.clone())
            .collect()
    }

    /// Runs a batch where each record's body names what its handler returns (`fail-*` errs, `wait-*` asks for
    /// a 30 s back-off, anything else is acknowledged); what was handled, and the delays asked for.
    async fn run(records: &[SqsMessage]) -> (Vec<String>, Vec<String>, Vec<(String, i32)>) {
        let handled = RefCell::new(Vec::new());
        let delays = RefCell::new(Vec::new());
        let response = for_each_record(
            records,
            |r| {
                let body = r.body.clone().unwrap_or_default();
                handled.borrow_mut().push(body.clone());
                async move {
                    if body.starts_with("fail") {
                        Err(format!("{body} broke"))
                    } else if body.starts_with("wait") {
                        Ok(Outcome::RetryAfter(30))
                    } else {
                        Ok(Outcome::Ack)
                    }
                }
            },
            |handle, secs| {
                delays.borrow_mut().push((handle.to_owned(), secs));
                async {}
            },
        )
        .await;
        (failed(&response), handled.into_inner(), delays.into_inner())
    }

    #[tokio::test]
    async fn a_failure_hands_back_the_rest_of_its_fifo_group_only() {
        let records = [
            record("a1", Some("a")),
            record("fail-a2", Some("a")),
            record("b1", Some("b")),
            record("a3", Some("a")),
            record("b2", Some("b")),
        ];
        let (failed, handled, delays) = run(&records).await;
        assert_eq!(failed, ["fail-a2", "a3"], "a3 is handed back unprocessed");
        assert_eq!(
            handled,
            ["a1", "fail-a2", "b1", "b2"],
            "in batch order; b goes on"
        );
        assert!(delays.is_empty(), "an error waits for the visibility timeout");
    }

    #[tokio::test]
    async fn a_retry_backs_off_and_blocks_its_group() {
        let records = [
            record("wait-a1", Some("a")),
            record("a2", Some("a")),
            record("b1", Some("b")),
        ];
        let (failed, handled, delays) = run(&records).await;
        assert_eq!(failed, ["wait-a1", "a2"]);
        assert_eq!(handled, ["wait-a1", "b1"]);
        assert_eq!(delays, [("rh-wait-a1".to_owned(), 30)]);
    }

    #[tokio::test]
    async fn a_standard_queue_reports_each_failure_and_skips_nothing() {
        let records = [
            record("fail-1", None),
            record("2", None),
            record("wait-3", None),
            record("fail-4", None),
        ];
        let (failed, handled, delays) = run(&records).await;
        assert_eq!(failed, ["fail-1", "wait-3", "fail-4"]);
        assert_eq!(handled, ["fail-1", "2", "wait-3", "fail-4"]);
        assert_eq!(delays, [("rh-wait-3".to_owned(), 30)]);
    }

    #[test]
    fn failing_records_by_hand_keeps_order_and_groups() {
        let mut f = BatchFailures::default();
        let (x1, x2, y1) = (
            record("x1", Some("x")),
            record("x2", Some("x")),
            record("y1", None),
        );
        assert!(!f.skip(&x1));
        f.fail(&x1);
        f.fail(&y1);
        assert!(f.skip(&x2));
        assert_eq!(failed(&f.into_response()), ["x1", "y1", "x2"]);
        assert_eq!(receive_count(&x1), 1);
    }
}

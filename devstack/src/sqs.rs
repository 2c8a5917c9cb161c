//! SQS event source mappings: long-poll a queue, invoke its handler with up to 10 records (the record
//! shape Lambda sends, including `ApproximateReceiveCount` and, on FIFO queues, `MessageGroupId`), delete
//! what succeeded and leave `batchItemFailures` (or the whole batch, on a function error) for redelivery
//! after the visibility timeout — so `maxReceiveCount` and the DLQs behave as on AWS.

use std::collections::HashSet;
use std::time::Duration;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName, QueueAttributeName,
};
use serde_json::{Value, json};
use tokio::sync::watch;

use strato_aws::resources;

use crate::chaos::Faults;
use crate::error::DevstackError;
use crate::registry::SqsMapping;

/// Long-poll wait per ReceiveMessage; short enough for a prompt shutdown.
const WAIT_SECS: i32 = 5;

/// A queue and what is needed to describe its records.
#[derive(Debug, Clone)]
pub struct QueueRef {
    pub logical: String,
    pub url: String,
    pub arn: String,
    pub region: String,
}

impl QueueRef {
    pub async fn resolve(
        sqs: &aws_sdk_sqs::Client,
        logical: &str,
        name: &str,
        region: &str,
    ) -> Result<Self, DevstackError> {
        let url = sqs
            .get_queue_url()
            .queue_name(name)
            .send()
            .await
            .map_err(|e| DevstackError::aws("GetQueueUrl", e))?
            .queue_url
            .unwrap_or_default();
        let attrs = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .map_err(|e| DevstackError::aws("GetQueueAttributes", e))?;
        let arn = attrs
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::QueueArn))
            .cloned()
            .unwrap_or_else(|| format!("arn:aws:sqs:{region}:123456789012:{name}"));
        Ok(Self {
            logical: logical.to_owned(),
            url,
            arn,
            region: region.to_owned(),
        })
    }
}

/// The Lambda SQS record for one received message.
pub fn record(queue: &QueueRef, m: &Message) -> Value {
    let attributes: serde_json::Map<String, Value> = m
        .attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| (k.as_str().to_owned(), Value::String(v.clone())))
                .collect()
        })
        .unwrap_or_default();
    let message_attributes: serde_json::Map<String, Value> = m
        .message_attributes()
        .map(|a| {
            a.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        json!({
                            "stringValue": v.string_value(),
                            "stringListValues": v.string_list_values(),
                            "binaryListValues": [],
                            "dataType": v.data_type(),
                        }),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "messageId": m.message_id(),
        "receiptHandle": m.receipt_handle(),
        "body": m.body().unwrap_or_default(),
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": m.md5_of_body(),
        "md5OfMessageAttributes": m.md5_of_message_attributes(),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue.arn,
        "awsRegion": queue.region,
    })
}

/// Runs `mapping.concurrency` pollers on `queue` until `shutdown` turns true.
pub fn spawn_mapping(
    sqs: aws_sdk_sqs::Client,
    queue: QueueRef,
    mapping: SqsMapping,
    shutdown: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..mapping.concurrency)
        .map(|i| {
            let (sqs, queue, mapping, shutdown) =
                (sqs.clone(), queue.clone(), mapping.clone(), shutdown.clone());
            tokio::spawn(async move { poll(sqs, queue, mapping, shutdown, i).await })
        })
        .collect()
}

async fn poll(
    sqs: aws_sdk_sqs::Client,
    queue: QueueRef,
    mapping: SqsMapping,
    mut shutdown: watch::Receiver<bool>,
    poller: usize,
) {
    tracing::debug!(queue = %queue.logical, poller, "SQS mapping: polling");
    while !*shutdown.borrow() {
        let receive = sqs
            .receive_message()
            .queue_url(&queue.url)
            .max_number_of_messages(mapping.batch_size.clamp(1, 10))
            .wait_time_seconds(WAIT_SECS)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .send();
        let out = tokio::select! {
            r = receive => r,
            _ = shutdown.changed() => break,
        };
        let messages = match out {
            Ok(o) => o.messages.unwrap_or_default(),
            Err(e) => {
                if *shutdown.borrow() {
                    break;
                }
                tracing::warn!(queue = %queue.logical, error = %DevstackError::aws("ReceiveMessage", e), "SQS mapping: receive failed");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {},
                    _ = shutdown.changed() => break,
                }
                continue;
            }
        };
        if messages.is_empty() {
            continue;
        }
        // Not cancelled by shutdown: a batch in flight finishes, as Lambda lets an invocation finish.
        invoke_batch(&sqs, &queue, &mapping, &messages).await;
    }
}

/// One invocation of the mapping's function. As on Lambda, the function is stopped at its timeout (below the
/// visibility timeout, so a batch is never processed twice at once) and a panic is a function error: either
/// way nothing is deleted.
async fn invoke(logical: &str, mapping: &SqsMapping, event: SqsEvent) -> Result<SqsBatchResponse, String> {
    let handler = mapping.handler.clone();
    let limit = Duration::from_secs(resources::queue(logical).consumer_timeout_secs().into());
    let span = crate::capture::component_span(crate::capture::consumer_of(logical));
    let mut invocation = tokio::spawn(tracing::Instrument::instrument(
        async move { handler(event).await },
        span,
    ));
    match tokio::time::timeout(limit, &mut invocation).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(format!("the function panicked: {e}")),
        Err(_) => {
            invocation.abort();
            Err(format!("the function timed out after {} s", limit.as_secs()))
        }
    }
}

/// Invokes the handler with one batch (with the faults its mapping's chaos draws) and settles it; returns the message ids left for redelivery.
pub async fn invoke_batch(
    sqs: &aws_sdk_sqs::Client,
    queue: &QueueRef,
    mapping: &SqsMapping,
    messages: &[Message],
) -> Vec<String> {
    let records: Vec<Value> = messages.iter().map(|m| record(queue, m)).collect();
    let ops: Vec<String> = messages
        .iter()
        .filter_map(|m| m.body().and_then(crate::operation_id_in))
        .collect();
    let ids: Vec<String> = messages
        .iter()
        .filter_map(|m| m.message_id().map(str::to_owned))
        .collect();
    let event: SqsEvent = match serde_json::from_value(json!({ "Records": records })) {
        Ok(e) => e,
        Err(e) => {
            tracing::error!(queue = %queue.logical, error = %e, "SQS mapping: could not build the event");
            return ids;
        }
    };
    let faults = mapping
        .chaos
        .as_ref()
        .map(|c| c.draw(&queue.logical))
        .unwrap_or_default();
    if faults != Faults::default() {
        tracing::info!(queue = %queue.logical, operation_ids = ?ops, ?faults, "SQS mapping: injecting faults");
        tokio::time::sleep(faults.delay).await;
    }
    tracing::info!(queue = %queue.logical, records = ids.len(), operation_ids = ?ops, "SQS mapping: invoke");
    let mut result = if faults.error_before {
        Err("injected function error (before the handler ran)".to_owned())
    } else {
        invoke(&queue.logical, mapping, event.clone()).await
    };
    if faults.duplicate {
        // At-least-once: the same records again; a record either delivery failed comes back.
        let again = invoke(&queue.logical, mapping, event).await;
        result = match (result, again) {
            (Ok(mut first), Ok(second)) => {
                first.batch_item_failures.extend(second.batch_item_failures);
                Ok(first)
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
    }
    if faults.error_after && result.is_ok() {
        result =
            Err("injected function error (after the handler ran: its work is done, its answer lost)".into());
    }
    let failed: HashSet<String> = match result {
        Ok(SqsBatchResponse {
            batch_item_failures, ..
        }) => {
            let failed: HashSet<String> = batch_item_failures
                .into_iter()
                .map(|f| f.item_identifier)
                .collect();
            // Lambda treats an unknown or empty identifier as a failure of the whole batch.
            if failed.iter().any(|f| !ids.contains(f)) {
                tracing::error!(queue = %queue.logical, "SQS mapping: batchItemFailures names an unknown message; the whole batch is retried");
                ids.iter().cloned().collect()
            } else {
                failed
            }
        }
        Err(e) => {
            tracing::error!(queue = %queue.logical, operation_ids = ?ops, error = %e, "SQS mapping: function error; the batch comes back after the visibility timeout");
            ids.iter().cloned().collect()
        }
    };
    delete_succeeded(sqs, queue, messages, &failed).await;
    if !failed.is_empty() {
        tracing::info!(queue = %queue.logical, failed = failed.len(), "SQS mapping: records left for redelivery");
    }
    ids.into_iter().filter(|id| failed.contains(id)).collect()
}

/// Deletes the messages whose records succeeded; a failed delete only means a redelivery, as on Lambda.
async fn delete_succeeded(
    sqs: &aws_sdk_sqs::Client,
    queue: &QueueRef,
    messages: &[Message],
    failed: &HashSet<String>,
) {
    let entries: Vec<DeleteMessageBatchRequestEntry> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.message_id().is_some_and(|id| !failed.contains(id)))
        .filter_map(|(i, m)| {
            DeleteMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .build()
                .ok()
        })
        .collect();
    if !entries.is_empty() {
        match sqs
            .delete_message_batch()
            .queue_url(&queue.url)
            .set_entries(Some(entries))
            .send()
            .await
        {
            Ok(out) if !out.failed().is_empty() => {
                tracing::warn!(queue = %queue.logical, failed = out.failed().len(), "SQS mapping: some deletes failed; those messages will be redelivered");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(queue = %queue.logical, error = %DevstackError::aws("DeleteMessageBatch", e), "SQS mapping: delete failed; the batch will be redelivered");
            }
        }
    }
}

//! The run's queues and its artifacts bucket on AWS: [`SqsReporter`] sends events to `events` (spilling a
//! final event too large for a message to the artifacts bucket), [`LogSinks`] sends live log frames to
//! `logs` and reads and writes artifacts in S3.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use strato_domain::messages::{LogFrame, RunnerEvent};
use strato_domain::run_proof;
use strato_domain::telemetry::Traceparent;

use crate::RunnerError;
use crate::ports::{Artifacts, LiveLog, Reporter};

/// The `traceparent` message attribute of the run's messages.
fn trace_attributes(
    tp: Option<&Traceparent>,
) -> Option<std::collections::HashMap<String, aws_sdk_sqs::types::MessageAttributeValue>> {
    tp.map(|tp| {
        [(
            strato_domain::telemetry::TRACEPARENT_ATTRIBUTE.to_owned(),
            strato_telemetry::trace_attribute(tp),
        )]
        .into()
    })
}

/// Sends runner events for one operation to the `events` queue.
#[derive(Clone)]
pub struct SqsReporter {
    pub sqs: aws_sdk_sqs::Client,
    pub events_url: String,
    /// Where a final event too large for SQS is stored.
    pub s3: aws_sdk_s3::Client,
    pub artifacts_bucket: String,
    /// The run's proof (`STRATO_RUN_PROOF`), on every event so status knows this run sent it.
    pub proof: SecretString,
    /// The run's trace context, as the `traceparent` attribute of every event.
    pub traceparent: Option<Traceparent>,
}

impl SqsReporter {
    async fn send_body(&self, body: String) -> Result<(), strato_aws::Error> {
        // A few quick attempts: the SDK retries throttling itself, this covers short outages.
        let mut attempt = 0u32;
        loop {
            let sent = self
                .sqs
                .send_message()
                .queue_url(&self.events_url)
                .message_body(body.clone())
                .set_message_attributes(trace_attributes(self.traceparent.as_ref()))
                .send()
                .await;
            match sent {
                Ok(_) => return Ok(()),
                Err(e) if attempt == 3 => return Err(strato_aws::Error::aws("SendMessage", e)),
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(250 * 2u64.pow(attempt))).await;
            attempt += 1;
        }
    }
}

impl Reporter for SqsReporter {
    async fn send(&self, ev: &RunnerEvent) -> Result<(), RunnerError> {
        let body = run_proof::proven_body(ev, self.proof.expose_secret()).map_err(|source| {
            strato_aws::Error::Render {
                what: "runner event",
                source,
            }
        })?;
        Ok(self.send_body(body.to_string()).await?)
    }

    /// Without outputs, drift, estimate or preview when stored.
    async fn send_final(&self, ev: &RunnerEvent) -> Result<(), RunnerError> {
        let small = || match ev.clone() {
            RunnerEvent::Succeeded {
                operation_id,
                fencing_token,
                at,
                ..
            } => RunnerEvent::Succeeded {
                operation_id,
                fencing_token,
                outputs: Default::default(),
                drift: None,
                estimate: None,
                preview: None,
                state: None,
                at,
            },
            other => other,
        };
        let bucket = &self.artifacts_bucket;
        let body = strato_aws::spill::spill_if_large(&self.s3, bucket, ev, self.proof.expose_secret(), small)
            .await
            .map_err(|e| {
                RunnerError::FinalEvent(format!(
                    "{e}; the final event is too large for SQS and could not be stored in {bucket}"
                ))
            })?;
        self.send_body(body)
            .await
            .map_err(|e| RunnerError::FinalEvent(e.to_string()))
    }
}

/// Where a run's logs go on AWS: live frames to the `logs` queue, the archive (and debug logs, sealed
/// plans) to the artifacts bucket.
#[derive(Clone)]
pub struct LogSinks {
    pub sqs: aws_sdk_sqs::Client,
    pub logs_url: String,
    pub s3: aws_sdk_s3::Client,
    pub artifacts_bucket: String,
    /// The run's trace context, as the `traceparent` attribute of every live log batch.
    pub traceparent: Option<Traceparent>,
}

impl LiveLog for LogSinks {
    async fn send_frame(&self, frame: &LogFrame, body: String) -> Result<(), RunnerError> {
        self.sqs
            .send_message()
            .queue_url(&self.logs_url)
            .message_group_id(frame.operation_id().as_str())
            .message_deduplication_id(frame.dedup_id())
            .message_body(body)
            .set_message_attributes(trace_attributes(self.traceparent.as_ref()))
            .send()
            .await
            .map_err(|e| strato_aws::Error::aws("SendMessage", e))?;
        Ok(())
    }
}

impl Artifacts for LogSinks {
    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), RunnerError> {
        self.s3
            .put_object()
            .bucket(&self.artifacts_bucket)
            .key(key)
            .body(body.into())
            .send()
            .await
            .map_err(|e| strato_aws::Error::aws("PutObject", e))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, RunnerError> {
        let got = self
            .s3
            .get_object()
            .bucket(&self.artifacts_bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| strato_aws::Error::aws("GetObject", e))?;
        let body = got
            .body
            .collect()
            .await
            .map_err(|e| strato_aws::Error::aws("GetObject", e))?;
        Ok(body.into_bytes().to_vec())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, RunnerError> {
        let mut keys = Vec::new();
        let mut pages = self
            .s3
            .list_objects_v2()
            .bucket(&self.artifacts_bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| strato_aws::Error::aws("ListObjectsV2", e))?;
            keys.extend(page.contents().iter().filter_map(|o| o.key().map(str::to_owned)));
        }
        Ok(keys)
    }
}

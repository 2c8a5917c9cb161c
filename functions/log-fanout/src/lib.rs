//! `strato-log-fanout`: consumes the `logs` queue (runner log batches, the status function's `status` and
//! `end` frames) and posts each frame to the WebSocket connections subscribed to its operation.
//!
//! - Subscribers: one Query on `op#{operation}` per operation per SQS batch (never a Scan).
//! - Adaptive batching: the `log` frames of one operation in an SQS batch are merged into as few
//!   `log_batch` frames of at most 32 KB as hold their lines (`strato_stream::live_batch::encode_live`): one
//!   post per subscriber per frame, so posts grow with frames, not lines.
//! - Posts run concurrently across subscribers (bounded by `concurrency`); one subscriber's frames go in
//!   order. Each post, throttling retries (backoff) included, has its own timeout, so a slow subscriber
//!   holds up nobody else.
//! - `GoneException` removes the connection and its subscriptions.
//! - Order: the `logs` queue is FIFO grouped by operation, so one operation's batches are fanned out one at
//!   a time, in order, however many invocations run (frames carry `seq`; clients keep lines by it).
//! - Idempotence: a record fails (and is redelivered) only when its subscribers could not be read. A post
//!   that still fails after retries is not retried through SQS: redelivering would re-post the batch to
//!   every subscriber of the operation; the one client that missed it sees a gap in `seq` and re-subscribes
//!   with `from_seq` (the archive has every line). Redelivered batches are re-posted; clients keep lines by
//!   `seq`, so duplicates are harmless.

mod aws_calls;
pub use aws_calls::AWS_CALLS;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use strato_model::telemetry::{self, Traceparent, fields};
use tracing::Instrument;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use futures_util::StreamExt;
use futures_util::stream;
use strato_aws::aws::AwsClients;
use strato_aws::batch::BatchFailures;
use strato_aws::env::{Env, EnvError};
use strato_aws::resources::Names;
use strato_connections::{Connections, PostError, Subscription, post_frame};
use strato_model::ids::OperationId;
use strato_model::messages::LogFrame;
use strato_stream::live_batch::encode_live;
use strato_stream::logs::MAX_FRAME_BYTES;
use time::OffsetDateTime;

#[derive(Debug, thiserror::Error)]
pub enum FanoutError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error("record {message_id} is not a log frame: {reason}")]
    BadBody { message_id: String, reason: String },
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_model::Error),
}

#[derive(Debug, Clone)]
pub struct Config {
    /// `STRATO_RESOURCE_PREFIX` (required).
    pub names: Names,
    /// `STRATO_WS_MANAGEMENT_ENDPOINT` (required), as for the ws function.
    pub management_endpoint: String,
    /// Bound on one post, throttling retries included (`STRATO_FANOUT_POST_TIMEOUT_MS`, default 2000).
    pub post_timeout: Duration,
    /// Subscribers posted to at once (`STRATO_FANOUT_CONCURRENCY`, default 64).
    pub concurrency: usize,
}

impl Config {
    pub fn from_env() -> Result<Self, FanoutError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, FanoutError> {
        let env = Env::new(get);
        Ok(Self {
            names: env.names()?,
            management_endpoint: env.required("STRATO_WS_MANAGEMENT_ENDPOINT")?,
            post_timeout: Duration::from_millis(env.positive("STRATO_FANOUT_POST_TIMEOUT_MS", 2000)?),
            concurrency: env.positive("STRATO_FANOUT_CONCURRENCY", 64)? as usize,
        })
    }
}

#[derive(Debug, Clone)]
pub struct Ctx {
    pub config: Config,
    pub connections: Connections,
    pub mgmt: aws_sdk_apigatewaymanagement::Client,
}

impl Ctx {
    pub fn new(config: Config, aws: &AwsClients) -> Self {
        Self {
            connections: Connections {
                ddb: aws.dynamodb.clone(),
                table: config.names.table("connections"),
            },
            mgmt: strato_connections::management_client(&aws.config, &config.management_endpoint),
            config,
        }
    }
}

/// What one batch did (for logs, tests and the benchmark).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub frames: usize,
    pub subscribers: usize,
    pub posts: usize,
    pub gone: usize,
    /// Subscribers whose delivery stopped on a timeout or an error other than Gone.
    pub failed_deliveries: usize,
}

/// Processes a batch; only records whose subscribers could not be read, or that are not log frames, are
/// reported as failures.
pub async fn handle(ctx: &Ctx, event: SqsEvent) -> SqsBatchResponse {
    handle_with_report(ctx, event).await.0
}

/// A log batch's span: in the run's trace, without a `span end` line (most batches have no subscriber).
fn batch_span(record: &SqsMessage) -> tracing::Span {
    let parent = strato_telemetry::record_trace(record);
    telemetry::quiet_span(&Traceparent::child_or_root(parent.as_ref()), parent.as_ref())
}

enum Delivery {
    Done(usize),
    Gone(usize),
    Failed(usize),
}

pub async fn handle_with_report(ctx: &Ctx, event: SqsEvent) -> (SqsBatchResponse, Report) {
    // The logs queue is FIFO grouped by operation, and an operation's records succeed or fail together
    // (one subscriber read): a failure hands back its operation's records and nothing of another's.
    let mut failures = BatchFailures::default();
    let mut report = Report::default();
    // Records grouped by operation, in batch order: one subscriber Query per operation.
    // Each group has its span: a child of its first record's trace, with the operation (and the tenant,
    // once a subscriber names it).
    let mut groups: Vec<(OperationId, Vec<&SqsMessage>, Vec<LogFrame>, tracing::Span)> = Vec::new();
    let mut index: HashMap<OperationId, usize> = HashMap::new();
    for record in &event.records {
        let frame = match serde_json::from_str::<LogFrame>(record.body.as_deref().unwrap_or_default()) {
            Ok(f) => f,
            Err(e) => {
                let e = FanoutError::BadBody {
                    message_id: record.message_id.clone().unwrap_or_default(),
                    reason: e.to_string(),
                };
                let span = batch_span(record);
                span.in_scope(|| tracing::error!(error = %e, "dropping to the DLQ after retries"));
                failures.fail(record);
                continue;
            }
        };
        let op = frame.operation_id().clone();
        let i = *index.entry(op.clone()).or_insert_with(|| {
            let span = batch_span(record);
            telemetry::record(&span, fields::OPERATION_ID, op.as_str());
            groups.push((op, Vec::new(), Vec::new(), span));
            groups.len() - 1
        });
        groups[i].1.push(record);
        groups[i].2.push(frame);
    }
    let now = OffsetDateTime::now_utc();
    let lookups = groups
        .iter()
        .map(|(op, _, _, span)| ctx.connections.subscribers(op, now).instrument(span.clone()));
    let subscribers = futures_util::future::join_all(lookups).await;
    // Every subscriber of every operation, each with the frames to post in order.
    let mut work: Vec<(Subscription, Arc<Vec<String>>, tracing::Span)> = Vec::new();
    let mut encoded: Vec<Arc<Vec<String>>> = Vec::with_capacity(groups.len());
    let mut usable = Vec::new();
    // When each record with a subscriber was sent by the runner: fan-out latency is measured to the end.
    let mut fanned_out: Vec<OffsetDateTime> = Vec::new();
    for ((op, records, frames, span), subs) in groups.iter_mut().zip(subscribers) {
        let _in_group = span.enter();
        let subs = match subs {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(operation_id = %op, error = %e, "reading subscribers failed; SQS will redeliver");
                for record in records.iter() {
                    failures.fail(record);
                }
                encoded.push(Arc::default());
                continue;
            }
        };
        order_frames(frames);
        // The batch's consecutive `log` frames merge into as few `log_batch` frames as fit: one post per
        // subscriber carries every line of several runner flushes when they queued up together.
        let out = match encode_live(op, frames, MAX_FRAME_BYTES) {
            Ok(out) => out,
            Err(e) => {
                tracing::error!(operation_id = %op, error = %e, "frames could not be encoded");
                Vec::new()
            }
        };
        report.frames += out.len();
        encoded.push(Arc::new(out));
        if let Some(sub) = subs.first() {
            telemetry::record(span, fields::TENANT_ID, sub.tenant_id.as_str());
            fanned_out.extend(records.iter().filter_map(|r| sent_at(r)));
        }
        usable.push((encoded.len() - 1, subs, span.clone()));
    }
    for (i, subs, span) in usable {
        for s in subs {
            work.push((s, encoded[i].clone(), span.clone()));
        }
    }
    report.subscribers = work.len();
    // Futures built by a plain iterator (not StreamExt::map): keeps the handler future `Send` for spawn.
    let deliveries = work
        .into_iter()
        .map(|(sub, frames, span)| deliver(ctx, sub, frames).instrument(span));
    let results: Vec<Delivery> = stream::iter(deliveries)
        .buffer_unordered(ctx.config.concurrency)
        .collect()
        .await;
    for r in results {
        match r {
            Delivery::Done(n) => report.posts += n,
            Delivery::Gone(n) => {
                report.posts += n;
                report.gone += 1;
            }
            Delivery::Failed(n) => {
                report.posts += n;
                report.failed_deliveries += 1;
            }
        }
    }
    let done = OffsetDateTime::now_utc();
    for sent in fanned_out {
        strato_model::vitals::log_fanout(sent, done);
    }
    (failures.into_response(), report)
}

/// Puts one operation's frames of a batch in delivery order: `end` last (a redelivered batch must not put
/// it before the lines it closes), and the `log` frames by seq in the slots `log` frames hold, so
/// consecutive ones merge and each subscriber gets them in order. The FIFO queue already hands one
/// operation's frames over in send order, and to one invocation at a time; this keeps a redelivery (or a
/// sender's flush racing the status function's frames) in order too.
fn order_frames(frames: &mut Vec<LogFrame>) {
    frames.sort_by_key(|f| matches!(f, LogFrame::End { .. }));
    let seq = |f: &LogFrame| match f {
        LogFrame::Log { first_seq, .. } => *first_seq,
        _ => 0,
    };
    let slots: Vec<usize> = (0..frames.len())
        .filter(|i| matches!(frames[*i], LogFrame::Log { .. }))
        .collect();
    let mut by_seq = slots.clone();
    by_seq.sort_by_key(|i| seq(&frames[*i]));
    let mut order: Vec<usize> = (0..frames.len()).collect();
    for (slot, from) in slots.into_iter().zip(by_seq) {
        order[slot] = from;
    }
    let mut taken: Vec<Option<LogFrame>> = std::mem::take(frames).into_iter().map(Some).collect();
    *frames = order.into_iter().filter_map(|i| taken[i].take()).collect();
}

/// The record's `SentTimestamp` attribute (milliseconds since the epoch), when SQS gave it.
fn sent_at(record: &SqsMessage) -> Option<OffsetDateTime> {
    let ms: i128 = record.attributes.get("SentTimestamp")?.parse().ok()?;
    OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000).ok()
}

/// Posts `frames` to one subscriber in order; stops at the first failure (the client repairs the gap).
async fn deliver(ctx: &Ctx, sub: Subscription, frames: Arc<Vec<String>>) -> Delivery {
    let mut posts = 0;
    for f in frames.iter() {
        posts += 1;
        match post_frame(&ctx.mgmt, &sub.connection_id, f, ctx.config.post_timeout).await {
            Ok(()) => {}
            Err(PostError::Gone(_)) => {
                // Both the connection (with its mirrors) and this row: the row may exist without a mirror.
                let removed = ctx.connections.remove_connection(&sub.connection_id).await;
                let row = ctx
                    .connections
                    .remove_subscription_row(&sub.operation_id, &sub.connection_id)
                    .await;
                if let Err(e) = removed.and(row) {
                    tracing::warn!(connection_id = %sub.connection_id, error = %e, "removing a gone connection failed");
                }
                return Delivery::Gone(posts);
            }
            Err(e) => {
                tracing::warn!(operation_id = %sub.operation_id, error = %e, "subscriber skipped for this batch");
                return Delivery::Failed(posts);
            }
        }
    }
    Delivery::Done(posts)
}

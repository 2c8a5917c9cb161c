//! Log I/O against AWS: frames onto the `logs` queue, and the S3 log archive read back (replay, last seq).

use strato_domain::ids::OperationId;
use strato_domain::messages::{LogFrame, LogLine};
use strato_stream::logs::render;
use strato_terraform::artifacts::{log_complete_key, log_prefix, parse_log_chunk_key};

use crate::error::Error;

/// Sends one frame to the `logs` queue (the status function's `status`/`end` frames, the runner's batches):
/// a FIFO queue grouped by operation (see [`LogFrame::dedup_id`]).
pub async fn publish_frame(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    frame: &LogFrame,
) -> Result<(), Error> {
    sqs.send_message()
        .queue_url(queue_url)
        .message_group_id(frame.operation_id().as_str())
        .message_deduplication_id(frame.dedup_id())
        .message_body(render("log frame", frame)?)
        .set_message_attributes(strato_telemetry::current_trace_attributes())
        .send()
        .await
        .map_err(|e| Error::aws("SendMessage", e))?;
    Ok(())
}

/// An archived chunk: `logs/{op}/{first}-{last}.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveChunk {
    pub key: String,
    pub first_seq: u64,
    pub last_seq: u64,
}

/// The chunks holding lines ≥ `from_seq`, in sequence order, and the final seq if the runner marked the
/// archive complete.
pub async fn list_archive(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    op: &OperationId,
    from_seq: u64,
) -> Result<(Vec<ArchiveChunk>, Option<u64>), Error> {
    let mut chunks = Vec::new();
    let mut complete = false;
    let complete_key = log_complete_key(op);
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(log_prefix(op))
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| Error::aws("ListObjectsV2", e))?;
        for o in page.contents() {
            let key = o.key().unwrap_or_default();
            if key == complete_key {
                complete = true;
            } else if let Some((first_seq, last_seq)) = parse_log_chunk_key(key)
                && last_seq >= from_seq
            {
                chunks.push(ArchiveChunk {
                    key: key.to_owned(),
                    first_seq,
                    last_seq,
                });
            }
        }
    }
    chunks.sort_by_key(|c| (c.first_seq, c.last_seq));
    let last = if complete {
        let body = get_object(s3, bucket, &complete_key).await?;
        let text = String::from_utf8_lossy(&body);
        Some(text.trim().parse::<u64>().map_err(|e| Error::Corrupt {
            what: complete_key.clone(),
            reason: format!("body is not a sequence number: {e}"),
        })?)
    } else {
        None
    };
    Ok((chunks, last))
}

async fn get_object(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Result<Vec<u8>, Error> {
    let out = s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| Error::aws("GetObject", e))?;
    let body = out.body.collect().await.map_err(|e| Error::aws("GetObject", e))?;
    Ok(body.into_bytes().to_vec())
}

/// The lines of one chunk with seq ≥ `from_seq`.
pub async fn read_chunk(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    chunk: &ArchiveChunk,
    from_seq: u64,
) -> Result<Vec<LogLine>, Error> {
    let body = get_object(s3, bucket, &chunk.key).await?;
    let text = String::from_utf8_lossy(&body);
    let mut lines = Vec::new();
    for (n, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let line: LogLine = serde_json::from_str(l).map_err(|e| Error::Corrupt {
            what: format!("{} line {}", chunk.key, n + 1),
            reason: e.to_string(),
        })?;
        if line.seq >= from_seq {
            lines.push(line);
        }
    }
    Ok(lines)
}

/// Everything archived from `from_seq` on, in order without duplicate seqs, and the final seq if the
/// archive is complete.
pub async fn read_archive(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    op: &OperationId,
    from_seq: u64,
) -> Result<(Vec<LogLine>, Option<u64>), Error> {
    let (chunks, last) = list_archive(s3, bucket, op, from_seq).await?;
    let mut lines: Vec<LogLine> = Vec::new();
    for c in &chunks {
        for l in read_chunk(s3, bucket, c, from_seq).await? {
            if lines.last().is_none_or(|p| l.seq > p.seq) {
                lines.push(l);
            }
        }
    }
    Ok((lines, last))
}

/// The number of the last archived log line (0 if none): the `complete` marker when the runner finished,
/// else the highest chunk end (a runner that died still archived what it flushed).
pub async fn last_archived_seq(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    op: &OperationId,
) -> Result<u64, Error> {
    if let Ok(out) = s3
        .get_object()
        .bucket(bucket)
        .key(log_complete_key(op))
        .send()
        .await
        && let Ok(body) = out.body.collect().await
        && let Ok(n) = String::from_utf8_lossy(&body.into_bytes()).trim().parse()
    {
        return Ok(n);
    }
    let mut last = 0;
    let mut pages = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(log_prefix(op))
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| Error::aws("ListObjectsV2", e))?;
        for o in page.contents() {
            if let Some((_, end)) = o.key().and_then(parse_log_chunk_key) {
                last = last.max(end);
            }
        }
    }
    Ok(last)
}

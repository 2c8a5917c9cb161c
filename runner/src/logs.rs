//! The user log pipeline. Readers of the engine's stdout/stderr call [`LogHub::emit`], which never waits:
//! it numbers the line, hands it to the archive writer (unbounded: the archive must hold every line) and
//! offers it to the live shipper through a bounded channel (full → the line is skipped on the live path only,
//! and the next frame says which lines were skipped). Engine debug lines go to a per-step debug buffer that
//! is uploaded to S3, never to the user stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use regex::Regex;
use strato_domain::ids::OperationId;
use strato_domain::messages::{LogFrame, LogLine, LogStream, SkippedLines};
use strato_stream::live_batch;
use strato_terraform::artifacts;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::RunnerError;
pub use crate::aws::LogSinks;
use crate::sinks::{Artifacts, LiveLog};

/// Largest live frame (packed bytes of its lines, `live_batch::packed_len`: one `log_batch` frame when fanned
/// out) and the wait before a frame is sent when the stream is slow (`live_batch::frame_due`).
pub const FRAME_BYTES: usize = live_batch::FRAME_BUDGET;
pub const FRAME_WAIT: Duration = live_batch::FRAME_WAIT;
/// Live channel capacity: beyond this many unsent lines the live stream skips.
pub const LIVE_CAPACITY: usize = 4096;
/// Archive chunk limits.
const CHUNK_LINES: usize = 2000;
const CHUNK_WAIT: Duration = Duration::from_secs(2);
/// First retry delay of an archive upload (then doubling, about 10 s in all); the unit tests' fakes fail
/// on purpose and need not wait that long.
const PUT_FIRST_RETRY: Duration = if cfg!(test) {
    Duration::from_millis(1)
} else {
    Duration::from_millis(200)
};

/// Replaces sensitive values in user-visible text: log lines, and every message a policy returns.
pub use strato_domain::secret::Redactor;

/// Recognizes the engine's debug-log lines: `[TRACE]`, `[DEBUG]`, `[INFO]`, `[WARN]`, `[ERR]`/`[ERROR]`,
/// optionally after an RFC 3339 timestamp.
pub fn is_debug_line(line: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(\d{4}-\d{2}-\d{2}T[0-9:.]+(Z|[+-]\d{2}:?\d{2})\s+)?\[(TRACE|DEBUG|INFO|WARN|ERR|ERROR)\]",
        )
        .expect("valid regex")
    })
    .is_match(line)
}

/// Stateful split of stderr: a debug line may continue on following unprefixed lines (graph dumps, HTTP
/// dumps); the engine's own user messages (`Error:`, `Warning:`, box-drawn diagnostics) end such a block.
#[derive(Debug, Default)]
pub struct StderrSplitter {
    in_debug: bool,
}

impl StderrSplitter {
    /// `true` when the line belongs to the debug log.
    pub fn is_debug(&mut self, line: &str) -> bool {
        if is_debug_line(line) {
            self.in_debug = true;
            return true;
        }
        let t = line.trim_start();
        if t.starts_with("Error:")
            || t.starts_with("Warning:")
            || t.starts_with(['╷', '│', '╵'])
            || t.starts_with("Interrupt received")
            || t.starts_with("Stopping operation")
        {
            self.in_debug = false;
        }
        self.in_debug
    }
}

struct Inner {
    next_seq: u64,
}

/// Shared by every reader of one operation.
#[derive(Clone)]
pub struct LogHub {
    op: OperationId,
    inner: Arc<Mutex<Inner>>,
    live: mpsc::Sender<LogLine>,
    archive: mpsc::UnboundedSender<LogLine>,
    pub redactor: Redactor,
    live_skipped: Arc<AtomicU64>,
    /// When the live path first shipped a line (for the time-to-first-log metric).
    first_shipped: Arc<OnceLock<Instant>>,
    /// Every line is a sign of progress (what the heartbeat vouches for).
    pub liveness: crate::liveness::Liveness,
}

/// Background tasks of a hub; [`LogTasks::finish`] drains them and writes the completion marker.
pub struct LogTasks {
    live: JoinHandle<()>,
    archive: JoinHandle<Result<u64, String>>,
}

impl LogHub {
    /// A hub shipping to `sinks`: the live queue and the archive in the artifacts bucket (on AWS,
    /// [`LogSinks`]).
    pub fn start<S: LiveLog + Artifacts>(op: OperationId, sinks: S, redactor: Redactor) -> (Self, LogTasks) {
        Self::start_with_capacity(op, sinks, redactor, LIVE_CAPACITY)
    }

    pub fn start_with_capacity<S: LiveLog + Artifacts>(
        op: OperationId,
        sinks: S,
        redactor: Redactor,
        capacity: usize,
    ) -> (Self, LogTasks) {
        let (live_tx, live_rx) = mpsc::channel(capacity);
        let (arch_tx, arch_rx) = mpsc::unbounded_channel();
        let first_shipped: Arc<OnceLock<Instant>> = Arc::default();
        let live = crate::spawn(ship_live(
            op.clone(),
            sinks.clone(),
            live_rx,
            first_shipped.clone(),
        ));
        let archive = crate::spawn(write_archive(op.clone(), sinks, arch_rx));
        (
            Self {
                op,
                inner: Arc::new(Mutex::new(Inner { next_seq: 1 })),
                live: live_tx,
                archive: arch_tx,
                redactor,
                live_skipped: Arc::default(),
                first_shipped,
                liveness: crate::liveness::Liveness::default(),
            },
            LogTasks { live, archive },
        )
    }

    pub fn operation_id(&self) -> &OperationId {
        &self.op
    }

    /// Records one user line. Never blocks on I/O.
    pub fn emit(&self, stream: LogStream, step: &str, text: &str) {
        self.liveness.touch();
        let text = self
            .redactor
            .redact(strato_terraform::render::strip_write_prefix(text));
        // Numbering and both sends happen under one lock (neither send waits), so both paths see seq order.
        let Ok(mut inner) = self.inner.lock() else { return };
        let line = LogLine {
            seq: inner.next_seq,
            ts: strato_domain::ts::now(),
            stream,
            step: step.to_owned(),
            text,
        };
        inner.next_seq += 1;
        let _ = self.archive.send(line.clone());
        if self.live.try_send(line).is_err() {
            self.live_skipped.fetch_add(1, Ordering::Relaxed);
            strato_domain::vitals::log_lines(0, 1);
        }
    }

    /// Numbers this run's lines after `last`, the last line an earlier run of the operation archived (the
    /// run that applies an approved plan continues the log of the run that planned). Call before any line.
    pub fn continue_after(&self, last: u64) {
        if let Ok(mut i) = self.inner.lock() {
            i.next_seq = i.next_seq.max(last + 1);
        }
    }

    /// Lines emitted so far (the last sequence number).
    pub fn last_seq(&self) -> u64 {
        self.inner.lock().map(|i| i.next_seq - 1).unwrap_or(0)
    }

    /// Lines the live path skipped because the shipper was behind.
    pub fn live_skipped(&self) -> u64 {
        self.live_skipped.load(Ordering::Relaxed)
    }

    /// When the live path first shipped a line; it is set once, by the shipper, so keep this handle to read
    /// it after the hub is gone.
    pub fn first_shipped(&self) -> Arc<OnceLock<Instant>> {
        self.first_shipped.clone()
    }
}

impl LogTasks {
    /// Waits for both paths to drain (the hub and all its clones must be dropped first), then writes the
    /// completion marker. Returns the last sequence number archived.
    pub async fn finish(self, sinks: &impl Artifacts, op: &OperationId) -> Result<u64, String> {
        self.finish_marked(sinks, op, true).await
    }

    /// [`Self::finish`], writing the completion marker only when `complete`: a run that ends with its
    /// operation still open (awaiting approval) leaves the log open for the run that continues it.
    pub async fn finish_marked(
        self,
        sinks: &impl Artifacts,
        op: &OperationId,
        complete: bool,
    ) -> Result<u64, String> {
        let _ = self.live.await;
        let last = self.archive.await.map_err(|e| e.to_string())??;
        if !complete {
            return Ok(last);
        }
        put(
            sinks,
            &artifacts::log_complete_key(op),
            last.to_string().into_bytes(),
        )
        .await?;
        Ok(last)
    }
}

/// The last sequence number the operation's log archive holds (0: none), from its chunks' names.
pub async fn archived_last_seq(sinks: &impl Artifacts, op: &OperationId) -> Result<u64, RunnerError> {
    let keys = sinks.list(&artifacts::log_prefix(op)).await?;
    Ok(keys
        .iter()
        .filter_map(|k| artifacts::parse_log_chunk_key(k))
        .map(|(_, last)| last)
        .max()
        .unwrap_or(0))
}

/// One object, retried with backoff (about 10 s in all: the SDK retries throttling itself, this covers
/// short outages and errors it does not retry).
async fn put(sinks: &impl Artifacts, key: &str, body: Vec<u8>) -> Result<(), String> {
    let attempt = || async { sinks.put(key, body.clone()).await.map_err(|e| e.to_string()) };
    attempt
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(PUT_FIRST_RETRY)
                .with_max_delay(PUT_FIRST_RETRY * 20)
                .with_max_times(5)
                .with_jitter(),
        )
        .notify(|e, d| tracing::warn!(error = %e, key, "upload failed; retrying in {d:?}"))
        .await
}

/// Uploads one step's debug log.
pub async fn upload_debug(
    sinks: &impl Artifacts,
    op: &OperationId,
    step: &str,
    body: Vec<u8>,
) -> Result<(), String> {
    put(sinks, &artifacts::debug_log_key(op, step), body).await
}

async fn ship_live(
    op: OperationId,
    sinks: impl LiveLog,
    mut rx: mpsc::Receiver<LogLine>,
    first_shipped: Arc<OnceLock<Instant>>,
) {
    // Highest seq handed to the queue (or known skipped); a gap before the next line is a skip.
    let mut shipped: u64 = 0;
    let mut pending: Option<LogLine> = None;
    let mut last_sent: Option<tokio::time::Instant> = None;
    loop {
        let first = match pending.take() {
            Some(l) => l,
            None => match rx.recv().await {
                Some(l) => l,
                None => return,
            },
        };
        let skipped = (first.seq > shipped + 1).then(|| SkippedLines {
            from_seq: shipped + 1,
            to_seq: first.seq - 1,
        });
        let first_seq = first.seq;
        let mut bytes = live_batch::packed_len(&first);
        let mut lines = vec![first];
        // Adaptive: a slow stream leaves within FRAME_WAIT, a fast one in full frames at most every
        // MIN_INTERVAL (strato_stream::live_batch), so each subscriber's posts stay few.
        let deadline = live_batch::frame_due(tokio::time::Instant::now(), last_sent);
        while bytes < FRAME_BYTES {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(l)) => {
                    let contiguous = lines.last().is_some_and(|p| p.seq + 1 == l.seq);
                    let len = live_batch::packed_len(&l);
                    if !contiguous || bytes + len > FRAME_BYTES {
                        pending = Some(l);
                        break;
                    }
                    bytes += len;
                    lines.push(l);
                }
                Ok(None) | Err(_) => break,
            }
        }
        last_sent = Some(tokio::time::Instant::now());
        shipped = lines.last().map(|l| l.seq).unwrap_or(shipped);
        let count = lines.len() as u64;
        let frame = LogFrame::Log {
            operation_id: op.clone(),
            first_seq,
            lines,
            skipped,
        };
        let Ok(body) = serde_json::to_string(&frame) else {
            continue;
        };
        // Live delivery is best effort: the archive is the record, so a failed send is only logged.
        if let Err(e) = sinks.send_frame(&frame, body).await {
            tracing::warn!(error = %e, "live log frame dropped");
            // Not delivered live: skipped like lines the shipper could not keep up with.
            strato_domain::vitals::log_lines(0, count);
        } else {
            first_shipped.get_or_init(Instant::now);
            strato_domain::vitals::log_lines(count, 0);
        }
    }
}

/// Lines the archive could not store (every retry of their chunk failed), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveGap {
    pub from_seq: u64,
    pub to_seq: u64,
    pub error: String,
}

/// Writes the archive chunk by chunk. A chunk that still fails after its retries does not stop the
/// archive: later chunks are written, and once the hub is closed one last line (its own chunk) names every
/// gap, so a replay shows where lines are missing and why. Returns the last sequence number archived.
async fn write_archive(
    op: OperationId,
    sinks: impl Artifacts,
    mut rx: mpsc::UnboundedReceiver<LogLine>,
) -> Result<u64, String> {
    let mut last_seq = 0;
    let mut gaps: Vec<ArchiveGap> = Vec::new();
    let mut chunk: Vec<LogLine> = Vec::new();
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let next = match deadline {
            Some(d) => tokio::time::timeout_at(d, rx.recv()).await.ok(),
            None => Some(rx.recv().await),
        };
        let closed = matches!(next, Some(None));
        let timed_out = next.is_none();
        if let Some(Some(line)) = next {
            if chunk.is_empty() {
                deadline = Some(tokio::time::Instant::now() + CHUNK_WAIT);
            }
            chunk.push(line);
            // Take whatever is already queued without waiting.
            while chunk.len() < CHUNK_LINES {
                match rx.try_recv() {
                    Ok(l) => chunk.push(l),
                    Err(_) => break,
                }
            }
        }
        let due = timed_out || closed || chunk.len() >= CHUNK_LINES;
        if due && !chunk.is_empty() {
            let (first, last) = (chunk[0].seq, chunk[chunk.len() - 1].seq);
            if let Err(error) = put_chunk(&sinks, &op, &chunk).await {
                tracing::error!(%error, from_seq = first, to_seq = last, "log chunk not archived; going on");
                gaps.push(ArchiveGap {
                    from_seq: first,
                    to_seq: last,
                    error,
                });
            }
            last_seq = last;
            chunk.clear();
            deadline = None;
        }
        if closed {
            if gaps.is_empty() {
                return Ok(last_seq);
            }
            let note = LogLine {
                seq: last_seq + 1,
                ts: strato_domain::ts::now(),
                stream: LogStream::Strato,
                step: "logs".into(),
                text: gap_note(&gaps),
            };
            put_chunk(&sinks, &op, std::slice::from_ref(&note)).await?;
            return Ok(note.seq);
        }
    }
}

/// The archive's last line when chunks are missing.
pub fn gap_note(gaps: &[ArchiveGap]) -> String {
    let ranges: Vec<String> = gaps
        .iter()
        .map(|g| format!("lines {}–{} ({})", g.from_seq, g.to_seq, g.error))
        .collect();
    format!(
        "log archive incomplete: {} could not be stored after retries; the rest of the log is complete",
        ranges.join("; ")
    )
}

async fn put_chunk(sinks: &impl Artifacts, op: &OperationId, chunk: &[LogLine]) -> Result<(), String> {
    let (first, last) = (chunk[0].seq, chunk[chunk.len() - 1].seq);
    let mut body = Vec::new();
    for l in chunk {
        if let Ok(s) = serde_json::to_vec(l) {
            body.extend_from_slice(&s);
            body.push(b'\n');
        }
    }
    put(sinks, &artifacts::log_chunk_key(op, first, last), body).await
}

#[cfg(test)]
mod tests;

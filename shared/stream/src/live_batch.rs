//! `log_batch` frames: how log-fanout packs the live stream for many subscribers.
//!
//! API Gateway throttles PostToConnection per account (10,000/s by default, shared with every other caller),
//! and each subscriber costs one post per frame. A `log` frame repeats `seq`, a 27-byte timestamp, `stream`
//! and `step` on every line (about 90 bytes of a typical 170-byte line), so a 32 KB frame holds only ~190
//! lines: 5.3 posts per second per subscriber at 1,000 lines/s. A `log_batch` frame carries the same lines
//! column-wise — `seq` implied from `first_seq`, the timestamp as microseconds after `t0`, `stream`/`step`
//! once per run of lines sharing them — about 100 bytes per line, ~330 lines per 32 KB frame.
//!
//! [`encode_live`] merges the consecutive `log` frames of one operation that arrive together (a queue
//! batch) into as few `log_batch` frames as fit [`crate::logs::MAX_FRAME_BYTES`]: under load (several
//! runner flushes per queue batch, or big flushes) one post carries many lines; at a low rate each flush is
//! one post, sent at once. A `skipped` marker starts a new frame, so it always sits before the first line
//! of its frame, as on `log`.

use time::{Duration, OffsetDateTime};

pub use crate::logs::LineRun;
use crate::logs::{ControlFrame, encode_parts, escaped_len, render};
use strato_model::error::Error;
use strato_model::ids::OperationId;
use strato_model::messages::{LogFrame, LogLine, SkippedLines};

/// Timestamps travel at microsecond precision (`strato_model::ts`); offsets are taken between truncated values so
/// a line decodes to exactly what a `log` frame would give.
fn micro(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(t.nanosecond() / 1000 * 1000).unwrap_or(t)
}

/// The lines of a `log_batch` frame (`None` for any other frame).
pub fn batch_lines(frame: &ControlFrame) -> Option<Vec<LogLine>> {
    let ControlFrame::LogBatch {
        first_seq, t0, runs, ..
    } = frame
    else {
        return None;
    };
    let mut seq = *first_seq;
    let mut out = Vec::with_capacity(runs.iter().map(|r| r.text.len()).sum());
    for r in runs {
        for (dt, text) in r.dt_us.iter().zip(&r.text) {
            out.push(LogLine {
                seq,
                ts: *t0 + Duration::microseconds(*dt),
                stream: r.stream,
                step: r.step.clone(),
                text: text.clone(),
            });
            seq += 1;
        }
    }
    Some(out)
}

/// The frame being filled.
struct Open {
    first_seq: u64,
    next_seq: u64,
    t0: OffsetDateTime,
    skipped: Option<SkippedLines>,
    runs: Vec<LineRun>,
    size: usize,
}

struct Packer<'a> {
    op: &'a OperationId,
    max: usize,
    out: Vec<String>,
    open: Option<Open>,
    /// A `skipped` marker whose lines all went out as `log_part`s: it goes on the next frame.
    carry: Option<SkippedLines>,
}

impl Packer<'_> {
    fn frame(
        &self,
        first_seq: u64,
        t0: OffsetDateTime,
        skipped: Option<SkippedLines>,
        runs: Vec<LineRun>,
    ) -> ControlFrame {
        ControlFrame::LogBatch {
            operation_id: self.op.clone(),
            first_seq,
            t0,
            skipped,
            runs,
        }
    }

    /// Bytes of a frame without runs, with the widest numbers, so real frames are never larger.
    fn header(&self, t0: OffsetDateTime, skipped: Option<SkippedLines>) -> Result<usize, Error> {
        let widest = skipped.map(|_| SkippedLines {
            from_seq: u64::MAX,
            to_seq: u64::MAX,
        });
        Ok(render("log batch", &self.frame(u64::MAX, t0, widest, Vec::new()))?.len())
    }

    fn flush(&mut self) -> Result<(), Error> {
        if let Some(o) = self.open.take() {
            let f = self.frame(o.first_seq, o.t0, o.skipped, o.runs);
            self.out.push(render("log batch", &f)?);
        }
        Ok(())
    }

    fn line(&mut self, line: &LogLine, skipped: Option<SkippedLines>) -> Result<(), Error> {
        let contiguous = self.open.as_ref().is_some_and(|o| o.next_seq == line.seq);
        if skipped.is_some() || !contiguous {
            self.flush()?;
        }
        let ts = micro(line.ts);
        let text_len = line.text.chars().map(escaped_len).sum::<usize>() + 3;
        let run_len = render(
            "log batch",
            &LineRun {
                stream: line.stream,
                step: line.step.clone(),
                dt_us: Vec::new(),
                text: Vec::new(),
            },
        )?
        .len()
            + 1;
        let skipped = skipped.or(self.carry.take());
        // Too big even alone in a frame: `log_part`s, as on the `log` path.
        if self.header(ts, skipped)? + run_len + 21 + text_len > self.max {
            self.flush()?;
            self.out.extend(encode_parts(self.op, line, self.max)?);
            self.carry = skipped;
            return Ok(());
        }
        if let Some(o) = &self.open {
            let dt = (ts - o.t0).whole_microseconds() as i64;
            let same_run = o
                .runs
                .last()
                .is_some_and(|r| r.stream == line.stream && r.step == line.step);
            let cost = dt.to_string().len() + 1 + text_len + if same_run { 0 } else { run_len };
            if o.size + cost > self.max {
                self.flush()?;
            }
        }
        if self.open.is_none() {
            self.open = Some(Open {
                first_seq: line.seq,
                next_seq: line.seq,
                t0: ts,
                skipped,
                runs: Vec::new(),
                size: self.header(ts, skipped)?,
            });
        }
        let Some(o) = self.open.as_mut() else {
            return Ok(());
        };
        let dt = (ts - o.t0).whole_microseconds() as i64;
        let mut cost = dt.to_string().len() + 1 + text_len;
        if !o
            .runs
            .last()
            .is_some_and(|r| r.stream == line.stream && r.step == line.step)
        {
            cost += run_len;
            o.runs.push(LineRun {
                stream: line.stream,
                step: line.step.clone(),
                dt_us: Vec::new(),
                text: Vec::new(),
            });
        }
        if let Some(r) = o.runs.last_mut() {
            r.dt_us.push(dt);
            r.text.push(line.text.clone());
        }
        o.size += cost;
        o.next_seq = line.seq + 1;
        Ok(())
    }
}

/// Serializes one operation's frames, in order, as WebSocket frames of at most `max_bytes`: consecutive
/// `log` frames merge into `log_batch` frames (a line too long for any frame becomes `log_part`s); `status`
/// and `end` pass through in place.
pub fn encode_live(op: &OperationId, frames: &[LogFrame], max_bytes: usize) -> Result<Vec<String>, Error> {
    let mut p = Packer {
        op,
        max: max_bytes,
        out: Vec::new(),
        open: None,
        carry: None,
    };
    for f in frames {
        let LogFrame::Log { lines, skipped, .. } = f else {
            p.flush()?;
            p.out.push(render("log frame", f)?);
            continue;
        };
        for (i, l) in lines.iter().enumerate() {
            p.line(l, if i == 0 { *skipped } else { None })?;
        }
        if lines.is_empty() && skipped.is_some() {
            p.carry = *skipped;
        }
    }
    p.flush()?;
    if let Some(s) = p.carry.take() {
        // Every line after the marker went out as parts: the marker still reaches the client.
        let f = p.frame(s.to_seq + 1, OffsetDateTime::UNIX_EPOCH, Some(s), Vec::new());
        p.out.push(render("log batch", &f)?);
    }
    Ok(p.out)
}

/// The runner's side of adaptive batching (its live shipper, and the benchmark's synthetic runner): when a
/// frame of lines goes to the queue. A frame leaves [`FRAME_WAIT`] after its first line, or as soon as its
/// lines fill a `log_batch` frame ([`FRAME_BUDGET`], by [`packed_len`]) — but never sooner than
/// [`MIN_INTERVAL`] after the previous one unless full. A slow stream therefore goes out one flush at a
/// time, within 100 ms; a fast one in full frames, at most ~4 a second: the posts each subscriber costs stay
/// bounded however fast the engine writes.
pub const FRAME_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
/// See [`FRAME_WAIT`].
pub const MIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);
/// Packed bytes of lines per queue frame: leaves room for a `log_batch` frame's header and run headers
/// within [`crate::logs::MAX_FRAME_BYTES`].
pub const FRAME_BUDGET: usize = crate::logs::MAX_FRAME_BYTES - 2048;

/// About what `line` adds to a `log_batch` frame (its text escaped, a timestamp offset, separators).
pub fn packed_len(line: &LogLine) -> usize {
    line.text.chars().map(escaped_len).sum::<usize>() + 12
}

/// When a frame whose first line came at `first_line` is due, the previous frame having left at
/// `last_sent` (if any); a full frame goes at once.
pub fn frame_due<T>(first_line: T, last_sent: Option<T>) -> T
where
    T: Copy + Ord + std::ops::Add<std::time::Duration, Output = T>,
{
    let due = first_line + FRAME_WAIT;
    last_sent.map_or(due, |l| due.max(l + MIN_INTERVAL))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::{MAX_FRAME_BYTES, Reassembler, ServerFrame};
    use strato_model::messages::LogStream;
    use strato_model::model::OperationStatus;

    fn line(seq: u64, text: String) -> LogLine {
        LogLine {
            seq,
            ts: strato_model::ts::now() + Duration::milliseconds(seq as i64),
            stream: LogStream::Stdout,
            step: "apply".into(),
            text,
        }
    }

    fn flush(op: &OperationId, from: u64, n: u64, skipped: Option<SkippedLines>) -> LogFrame {
        let lines: Vec<LogLine> = (from..from + n)
            .map(|s| {
                line(
                    s,
                    format!(
                        "module.eks.aws_eks_node_group.this[\"default\"]: Still creating... [{s}0s elapsed]"
                    ),
                )
            })
            .collect();
        LogFrame::Log {
            operation_id: op.clone(),
            first_seq: from,
            lines,
            skipped,
        }
    }

    /// Lines as a client gets them, with the frames' `skipped` markers.
    fn decode(frames: &[String]) -> (Vec<LogLine>, Vec<SkippedLines>) {
        let (mut lines, mut skips, mut parts) = (Vec::new(), Vec::new(), Reassembler::default());
        for f in frames {
            match serde_json::from_str::<ServerFrame>(f).unwrap() {
                ServerFrame::Control(c @ ControlFrame::LogBatch { .. }) => {
                    if let ControlFrame::LogBatch { skipped: Some(s), .. } = &c {
                        skips.push(*s);
                    }
                    lines.extend(batch_lines(&c).unwrap());
                }
                ServerFrame::Control(c) => lines.extend(parts.push(&c)),
                ServerFrame::Log(_) => {}
            }
        }
        (lines, skips)
    }

    fn all_lines(frames: &[LogFrame]) -> Vec<LogLine> {
        let mut v = Vec::new();
        for f in frames {
            if let LogFrame::Log { lines, .. } = f {
                v.extend(lines.iter().map(|l| LogLine {
                    ts: micro(l.ts),
                    ..l.clone()
                }));
            }
        }
        v
    }

    #[test]
    fn under_load_one_post_carries_many_flushes_and_fits_a_frame() {
        // Ten 100-line runner flushes in one queue batch: 1,000 lines. As `log` frames (one per flush)
        // that was 10 posts per subscriber; packed, about 3.
        let op = OperationId::generate();
        let flushes: Vec<LogFrame> = (0..10).map(|i| flush(&op, 1 + i * 100, 100, None)).collect();
        let frames = encode_live(&op, &flushes, MAX_FRAME_BYTES).unwrap();
        assert!(frames.len() <= 4, "{} frames", frames.len());
        assert!(frames.iter().all(|f| f.len() <= MAX_FRAME_BYTES));
        // Full frames: all but the last hold at least 300 lines (a `log` frame holds ~190 of these).
        assert!(frames[0].len() > MAX_FRAME_BYTES - 400, "{}", frames[0].len());
        let (lines, skips) = decode(&frames);
        assert_eq!(lines, all_lines(&flushes), "every line, in order, exactly");
        assert!(skips.is_empty());
    }

    #[test]
    fn at_a_low_rate_each_flush_is_one_frame_at_once() {
        let op = OperationId::generate();
        let one = [flush(&op, 7, 3, None)];
        let frames = encode_live(&op, &one, MAX_FRAME_BYTES).unwrap();
        assert_eq!(frames.len(), 1);
        assert_eq!(decode(&frames).0, all_lines(&one));
        // The runner side: a frame after a quiet spell leaves FRAME_WAIT after its first line; under load no
        // sooner than MIN_INTERVAL after the previous frame (unless full).
        let t = std::time::Instant::now();
        let quiet = t - std::time::Duration::from_secs(5);
        assert_eq!(frame_due(t, Some(quiet)), t + FRAME_WAIT);
        assert_eq!(frame_due(t, None), t + FRAME_WAIT);
        assert_eq!(frame_due(t, Some(t)), t + MIN_INTERVAL);
    }

    #[test]
    fn skip_markers_gaps_and_other_frames_keep_their_place() {
        let op = OperationId::generate();
        let skip = SkippedLines {
            from_seq: 11,
            to_seq: 19,
        };
        let end = LogFrame::End {
            operation_id: op.clone(),
            final_status: OperationStatus::Succeeded,
            last_seq: 40,
        };
        let mut huge = flush(&op, 31, 1, None);
        if let LogFrame::Log { lines, .. } = &mut huge {
            lines[0].text = "x\"".repeat(MAX_FRAME_BYTES);
        }
        let input = vec![
            flush(&op, 1, 10, None),
            flush(&op, 20, 5, Some(skip)),
            flush(&op, 25, 6, None),
            huge,
            flush(&op, 32, 9, None),
            end.clone(),
        ];
        let frames = encode_live(&op, &input, MAX_FRAME_BYTES).unwrap();
        assert!(frames.iter().all(|f| f.len() <= MAX_FRAME_BYTES));
        let (lines, skips) = decode(&frames);
        assert_eq!(lines, all_lines(&input));
        assert_eq!(skips, vec![skip]);
        // The marker opens the frame of the first line after the gap; `end` stays last.
        let second: ServerFrame = serde_json::from_str(&frames[1]).unwrap();
        assert!(
            matches!(
                second,
                ServerFrame::Control(ControlFrame::LogBatch {
                    first_seq: 20,
                    skipped: Some(_),
                    ..
                })
            ),
            "{second:?}"
        );
        assert_eq!(frames.last().unwrap(), &serde_json::to_string(&end).unwrap());
    }
}

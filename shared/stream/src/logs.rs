//! Live logs plumbing shared by the runner side (publish), the ws function (archive replay) and log-fanout
//! (frame encoding): how a [`LogFrame`] travels on the `logs` queue, how the archive is read back, and how
//! frames are cut to API Gateway's 32 KB WebSocket frame limit.
//!
//! Wire form seen by WebSocket clients: every frame is one JSON object with a `type`:
//! - the [`LogFrame`]s (`log`, `status`, `end`), exactly as on the queue but never larger than
//!   [`MAX_FRAME_BYTES`];
//! - [`ControlFrame`]s: `log_batch` (log-fanout's live lines, packed: `crate::live_batch`), `log_part` (one
//!   piece of a line too long for a frame),
//!   `subscribed` (the replay is done), `unsubscribed`, `pong`, `error`.
//!
//! Delivery is at-least-once: during the replay/live overlap, and when a queue batch is redelivered, a line
//! may arrive twice. Clients keep lines by `seq` (and `log_part`s by `(seq, part)`), which makes the final
//! log free of duplicates; [`Reassembler`] does this for parts.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use strato_model::error::Error;
use strato_model::ids::OperationId;
use strato_model::messages::{LogFrame, LogLine, LogStream, SkippedLines};

/// Consecutive lines of a `log_batch` frame sharing `stream` and `step`. `dt_us` and `text` have one entry
/// per line, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LineRun {
    pub stream: LogStream,
    pub step: String,
    /// Each line's timestamp, in microseconds after the frame's `t0` (negative if earlier).
    pub dt_us: Vec<i64>,
    pub text: Vec<String>,
}

/// API Gateway's WebSocket frame size limit. Every frame Strato posts fits in it.
pub const MAX_FRAME_BYTES: usize = 32 * 1024;

/// Frames Strato sends besides [`LogFrame`]s (the ws function, and log-fanout's `log_batch`); never on the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ControlFrame {
    /// Part `part` (0-based) of `parts` of line `seq`, whose text alone exceeds a frame. Concatenating the
    /// parts' `text` in `part` order gives the line's text.
    LogPart {
        #[schemars(with = "String")]
        operation_id: OperationId,
        seq: u64,
        #[serde(with = "strato_model::ts")]
        #[schemars(with = "String")]
        ts: OffsetDateTime,
        stream: LogStream,
        step: String,
        part: u32,
        parts: u32,
        text: String,
    },
    /// Lines `first_seq..first_seq + n` (n = every run's `text` entries), packed column-wise by log-fanout
    /// (`crate::live_batch`): line `seq` is `first_seq` plus its position, its `ts` is `t0` plus its `dt_us`,
    /// its `stream` and `step` are its run's. `skipped` as on `log`: lines skipped before this frame.
    LogBatch {
        #[schemars(with = "String")]
        operation_id: OperationId,
        first_seq: u64,
        #[serde(with = "strato_model::ts")]
        #[schemars(with = "String")]
        t0: OffsetDateTime,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skipped: Option<SkippedLines>,
        runs: Vec<LineRun>,
    },
    /// The subscription is recorded and the archive replayed up to `replayed_to` (`from_seq - 1` when the
    /// archive had nothing at or after `from_seq`). Live frames may have arrived before this one. One
    /// subscribe replays one page of the archive: `more` says the archive holds lines after `replayed_to`,
    /// which the next subscribe (`from_seq` = `replayed_to + 1`) replays.
    Subscribed {
        #[schemars(with = "String")]
        operation_id: OperationId,
        from_seq: u64,
        replayed_to: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        more: bool,
    },
    Unsubscribed {
        #[schemars(with = "String")]
        operation_id: OperationId,
    },
    Pong,
    /// A request was refused; nothing else happens for it.
    Error {
        message: String,
        fix: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        operation_id: Option<String>,
    },
}

/// Anything a WebSocket client can receive from Strato.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ServerFrame {
    Log(LogFrame),
    Control(ControlFrame),
}

/// What a WebSocket client sends (route selection on `action`). Anything else is answered with an `error`
/// frame naming these actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ClientFrame {
    /// Live frames of one of the caller's tenant's operations, after the archive replayed from `from_seq`
    /// (default 1).
    Subscribe {
        #[schemars(with = "String")]
        operation_id: OperationId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_seq: Option<u64>,
    },
    Unsubscribe {
        #[schemars(with = "String")]
        operation_id: OperationId,
    },
    Ping,
}

/// The JSON Schemas of the WebSocket frames: what a client receives, and what it sends.
pub fn frame_schemas() -> (serde_json::Value, serde_json::Value) {
    let server = serde_json::to_value(schemars::schema_for!(ServerFrame)).unwrap_or_default();
    let client = serde_json::to_value(schemars::schema_for!(ClientFrame)).unwrap_or_default();
    (server, client)
}

pub fn render<T: Serialize>(what: &'static str, v: &T) -> Result<String, Error> {
    serde_json::to_string(v).map_err(|source| Error::Render { what, source })
}

/// Length of `c` inside a JSON string as serde_json writes it.
pub(crate) fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Cuts `text` into pieces whose JSON-escaped length is at most `budget` (at char boundaries).
fn split_text(text: &str, budget: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut used) = (0, 0);
    for (i, c) in text.char_indices() {
        let l = escaped_len(c);
        if used + l > budget && i > start {
            out.push(&text[start..i]);
            start = i;
            used = 0;
        }
        used += l;
    }
    out.push(&text[start..]);
    out
}

/// Serializes `frame` as one or more WebSocket frames of at most `max_bytes` each (in order). A `log`
/// batch is split into several `log` frames; a line that cannot fit a frame on its own becomes `log_part`
/// frames. `skipped` stays on the first frame. Other frames are small and pass through.
pub fn encode_frames(frame: &LogFrame, max_bytes: usize) -> Result<Vec<String>, Error> {
    let LogFrame::Log {
        operation_id,
        lines,
        skipped,
        ..
    } = frame
    else {
        return Ok(vec![render("log frame", frame)?]);
    };
    let whole = render("log frame", frame)?;
    if whole.len() <= max_bytes {
        return Ok(vec![whole]);
    }
    // Header size with the widest possible first_seq, so any frame's real header is no larger.
    let header = render(
        "log frame",
        &LogFrame::Log {
            operation_id: operation_id.clone(),
            first_seq: u64::MAX,
            lines: Vec::new(),
            skipped: *skipped,
        },
    )?
    .len();
    let mut out = Vec::new();
    let mut pending: Vec<LogLine> = Vec::new();
    let mut size = header;
    let mut first = true;
    let mut flush =
        |pending: &mut Vec<LogLine>, size: &mut usize, out: &mut Vec<String>| -> Result<(), Error> {
            if let Some(l) = pending.first() {
                let f = LogFrame::Log {
                    operation_id: operation_id.clone(),
                    first_seq: l.seq,
                    lines: std::mem::take(pending),
                    skipped: if first { *skipped } else { None },
                };
                first = false;
                out.push(render("log frame", &f)?);
            }
            *size = header;
            Ok(())
        };
    for line in lines {
        let len = render("log line", line)?.len() + 1;
        if header + len > max_bytes {
            flush(&mut pending, &mut size, &mut out)?;
            out.extend(encode_parts(operation_id, line, max_bytes)?);
            continue;
        }
        if size + len > max_bytes {
            flush(&mut pending, &mut size, &mut out)?;
        }
        size += len;
        pending.push(line.clone());
    }
    flush(&mut pending, &mut size, &mut out)?;
    Ok(out)
}

pub(crate) fn encode_parts(op: &OperationId, line: &LogLine, max_bytes: usize) -> Result<Vec<String>, Error> {
    let part = |part: u32, parts: u32, text: &str| ControlFrame::LogPart {
        operation_id: op.clone(),
        seq: line.seq,
        ts: line.ts,
        stream: line.stream,
        step: line.step.clone(),
        part,
        parts,
        text: text.to_owned(),
    };
    let overhead = render("log part", &part(u32::MAX, u32::MAX, ""))?.len();
    let budget = max_bytes.saturating_sub(overhead).max(16);
    let pieces = split_text(&line.text, budget);
    let parts = pieces.len() as u32;
    pieces
        .iter()
        .enumerate()
        .map(|(i, t)| render("log part", &part(i as u32, parts, t)))
        .collect()
}

/// Puts `log_part` frames back together; duplicates of a part are ignored.
#[derive(Debug, Default)]
pub struct Reassembler {
    partial: HashMap<(OperationId, u64), BTreeMap<u32, String>>,
}

impl Reassembler {
    /// Returns the whole line once its last missing part arrives. Anything but a `LogPart` gives `None`.
    pub fn push(&mut self, frame: &ControlFrame) -> Option<LogLine> {
        let ControlFrame::LogPart {
            operation_id,
            seq,
            ts,
            stream,
            step,
            part,
            parts,
            text,
        } = frame
        else {
            return None;
        };
        let key = (operation_id.clone(), *seq);
        let got = self.partial.entry(key.clone()).or_default();
        got.entry(*part).or_insert_with(|| text.clone());
        if got.len() < *parts as usize {
            return None;
        }
        let got = self.partial.remove(&key)?;
        Some(LogLine {
            seq: *seq,
            ts: *ts,
            stream: *stream,
            step: step.clone(),
            text: got.into_values().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, text: &str) -> LogLine {
        LogLine {
            seq,
            ts: strato_model::ts::now(),
            stream: LogStream::Stdout,
            step: "apply".into(),
            text: text.into(),
        }
    }

    fn decode(frames: &[String]) -> Vec<LogLine> {
        let mut r = Reassembler::default();
        let mut out = Vec::new();
        for f in frames {
            match serde_json::from_str::<ServerFrame>(f).unwrap() {
                ServerFrame::Log(LogFrame::Log { first_seq, lines, .. }) => {
                    assert_eq!(first_seq, lines[0].seq);
                    out.extend(lines);
                }
                ServerFrame::Control(c) => out.extend(r.push(&c)),
                other => panic!("unexpected {other:?}"),
            }
        }
        out
    }

    #[test]
    fn big_batches_and_huge_lines_fit_frames_and_come_back_whole() {
        let op = OperationId::generate();
        // Quotes and control characters expand when escaped; the split must count that.
        let huge: String = "ab\"\u{1}é".repeat(200_000);
        let mut lines: Vec<LogLine> = (1..=500)
            .map(|i| line(i, &"x".repeat(i as usize % 300)))
            .collect();
        lines.insert(250, line(0, &huge));
        for (i, l) in lines.iter_mut().enumerate() {
            l.seq = i as u64 + 1;
        }
        let frame = LogFrame::Log {
            operation_id: op,
            first_seq: 1,
            lines: lines.clone(),
            skipped: Some(strato_model::messages::SkippedLines {
                from_seq: 1,
                to_seq: 2,
            }),
        };
        let frames = encode_frames(&frame, MAX_FRAME_BYTES).unwrap();
        assert!(frames.len() > 30, "{}", frames.len());
        assert!(frames.iter().all(|f| f.len() <= MAX_FRAME_BYTES));
        assert!(frames[0].contains("\"skipped\""));
        assert_eq!(frames.iter().filter(|f| f.contains("\"skipped\"")).count(), 1);
        assert_eq!(decode(&frames), lines);
    }

    #[test]
    fn small_frames_pass_through_and_parts_dedupe() {
        let op = OperationId::generate();
        let f = LogFrame::End {
            operation_id: op.clone(),
            final_status: strato_model::model::OperationStatus::Succeeded,
            last_seq: 3,
        };
        assert_eq!(encode_frames(&f, 100).unwrap().len(), 1);
        let frame = LogFrame::Log {
            operation_id: op,
            first_seq: 1,
            lines: vec![line(1, &"z".repeat(5000))],
            skipped: None,
        };
        let mut frames = encode_frames(&frame, 1024).unwrap();
        assert!(frames.len() >= 5);
        // A repeated part (redelivery) does not corrupt the line.
        frames.insert(1, frames[0].clone());
        assert_eq!(decode(&frames)[0].text.len(), 5000);
    }
}

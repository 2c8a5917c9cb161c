//! Live logs: ticket → WebSocket → `subscribe {operation_id, from_seq}`. Delivery is at-least-once and a
//! connection can drop at any time, so lines are kept by seq and handed on in order, each exactly once;
//! after a drop (or a gap at the end) the follower reconnects with back-off, with a fresh ticket, and
//! subscribes again from the first missing seq. The archive replay that opens every subscription is also
//! how a finished operation's log is read; it comes in pages (`subscribed` with `more`: subscribe again).
//!
//! A follower that attaches to a running operation gets the archive (the runner uploads a chunk every 2 s)
//! and then the live stream from the moment its subscription exists; the lines in between were fanned out
//! before and are not archived yet. That hole is not a loss: the follower asks the archive for them again
//! on the same connection ([`Options::gap_repair`] later, a few times) and says nothing. Only a gap that
//! opens after the first live line (the live stream skipped lines) or one the archive still lacks after
//! those tries is reported (`Reconnecting`, "lines from seq N are missing") and repaired by reconnecting.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use strato_domain::messages::{LogFrame, LogLine};
use strato_stream::logs::{ClientFrame, ControlFrame, Reassembler, ServerFrame};
use tokio_tungstenite::tungstenite::Message;

use crate::api::Api;
use crate::error::CliError;

/// What the follower reports, in order.
#[derive(Debug)]
pub enum Event<'a> {
    Line(&'a LogLine),
    Status {
        cluster_state: String,
        operation_status: String,
        /// The frame's message, else the step it entered (`step apply`).
        detail: Option<String>,
    },
    /// The connection dropped (or the log had a gap); reconnecting from `from_seq`.
    Reconnecting {
        from_seq: u64,
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// To the operation's end.
    Follow,
    /// What the archive holds now (the replay), then stop; a finished operation's whole log.
    Snapshot,
}

/// What the stream delivered.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The `end` frame's status (`succeeded`, `failed`, `cancelled`), if the operation ended, or
    /// `awaiting_approval` when it stopped to wait for an approver.
    pub final_status: Option<String>,
    pub last_seq: u64,
    /// Lines handed on (1..=delivered, no gaps).
    pub delivered: u64,
    pub reconnects: u32,
}

pub struct Options {
    pub from_seq: u64,
    pub mode: Mode,
    /// Give up after this long (None: never).
    pub timeout: Option<Duration>,
    /// Consecutive failed connection attempts before giving up.
    pub max_failures: u32,
    /// How long lines may wait for a gap before the follower asks the archive for it (live frames of one
    /// operation arrive in order, so a gap that lasts is a skip or lines not archived yet, not a reordering).
    pub gap_repair: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            from_seq: 1,
            mode: Mode::Follow,
            timeout: None,
            max_failures: 8,
            gap_repair: Duration::from_secs(2),
        }
    }
}

/// Follows `operation_id` on the WebSocket API at `ws_url`, tickets from `api`.
pub async fn follow(
    api: &Api,
    ws_url: &str,
    operation_id: &str,
    opts: Options,
    mut on_event: impl FnMut(Event<'_>),
) -> Result<Outcome, CliError> {
    let deadline = opts.timeout.map(|t| Instant::now() + t);
    let mut st = State {
        lines: BTreeMap::new(),
        next: opts.from_seq.max(1),
        out: Outcome::default(),
        parts: Reassembler::default(),
        gap_since: None,
        attached_at: None,
    };
    let mut failures = 0u32;
    let mut reason = String::new();
    loop {
        if failures > 0 {
            if failures >= opts.max_failures {
                return Err(CliError::Stream(format!(
                    "gave up after {failures} attempts: {reason}"
                )));
            }
            let delay = Duration::from_millis(200u64 << failures.min(5)).min(Duration::from_secs(5));
            tokio::time::sleep(delay).await;
            on_event(Event::Reconnecting {
                from_seq: st.next,
                reason: reason.clone(),
            });
            st.out.reconnects += 1;
        }
        let before = st.next;
        match session(api, ws_url, operation_id, &mut st, &opts, deadline, &mut on_event).await {
            Ok(Session::Ended) if st.complete() => return Ok(st.out),
            Ok(Session::Ended) => {
                reason = format!("the log had a gap: {} of {} lines", st.next - 1, st.out.last_seq);
            }
            Ok(Session::SnapshotDone) => return Ok(st.out),
            Ok(Session::Dropped(why)) => reason = why,
            Err(e @ (CliError::Stream(_) | CliError::Api(_))) => return Err(e),
            Err(e) => reason = e.to_string(),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(CliError::Stream(format!(
                "operation {operation_id} did not end in time ({reason})"
            )));
        }
        // Progress resets the failure count: a long follow survives any number of spaced-out drops.
        failures = if st.next > before { 1 } else { failures + 1 };
    }
}

struct State {
    lines: BTreeMap<u64, LogLine>,
    /// The next seq to hand on.
    next: u64,
    out: Outcome,
    parts: Reassembler,
    /// Since when lines after a gap have waited for it (the live stream skipped lines the queue could not
    /// take; the archive has them).
    gap_since: Option<Instant>,
    /// The first seq this connection's live stream delivered (`log_batch`): lines before it that neither
    /// the replay nor the live stream brought were written before the subscription existed.
    attached_at: Option<u64>,
}

impl State {
    fn complete(&self) -> bool {
        self.out.final_status.is_some() && self.next > self.out.last_seq
    }

    /// The first missing line was written before this connection's live stream began: not archived when
    /// the replay read the archive, not lost.
    fn missing_before_attach(&self) -> bool {
        self.attached_at.is_some_and(|a| self.next < a)
    }

    fn take(&mut self, lines: Vec<LogLine>, on_event: &mut impl FnMut(Event<'_>)) {
        for l in lines {
            if l.seq >= self.next {
                self.lines.entry(l.seq).or_insert(l);
            }
        }
        while let Some(l) = self.lines.remove(&self.next) {
            on_event(Event::Line(&l));
            self.next += 1;
            self.out.delivered += 1;
        }
        self.gap_since = match (self.lines.is_empty(), self.gap_since) {
            (true, _) => None,
            (false, None) => Some(Instant::now()),
            (false, since) => since,
        };
    }
}

/// How many times one connection asks the archive again for lines written before it attached, before the
/// gap counts as one (then reported and repaired by reconnecting).
const CATCH_UPS: u32 = 5;

enum Session {
    Ended,
    SnapshotDone,
    Dropped(String),
}

/// One connection: subscribe from the first missing seq and read until the end, a drop or the deadline.
async fn session(
    api: &Api,
    ws_url: &str,
    operation_id: &str,
    st: &mut State,
    opts: &Options,
    deadline: Option<Instant>,
    on_event: &mut impl FnMut(Event<'_>),
) -> Result<Session, CliError> {
    let ticket = api.ws_ticket().await?;
    let sep = if ws_url.contains('?') { '&' } else { '?' };
    let url = format!("{ws_url}{sep}token={ticket}");
    let mut socket = match tokio_tungstenite::connect_async(url.as_str()).await {
        Ok((s, _)) => s,
        Err(e) => return Ok(Session::Dropped(format!("connecting to {ws_url}: {e}"))),
    };
    st.attached_at = None;
    let mut catch_ups = 0u32;
    if let Err(e) = socket.send(subscribe(operation_id, st.next)).await {
        return Ok(Session::Dropped(format!("subscribing: {e}")));
    }
    // API Gateway closes a WebSocket idle for 10 minutes; a ping every 5 keeps a quiet follow open.
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_ping = Instant::now();
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Session::Dropped("no end before the deadline".into()));
        }
        if st.gap_since.is_some_and(|t| t.elapsed() >= opts.gap_repair) {
            st.gap_since = None;
            if st.missing_before_attach() && catch_ups < CATCH_UPS {
                // Written before this subscription, archived since (or soon): ask again, nothing lost.
                catch_ups += 1;
                if let Err(e) = socket.send(subscribe(operation_id, st.next)).await {
                    return Ok(Session::Dropped(format!("subscribing: {e}")));
                }
                continue;
            }
            let _ = socket.close(None).await;
            return Ok(Session::Dropped(format!(
                "lines from seq {} are missing",
                st.next
            )));
        }
        let msg = tokio::select! {
            m = socket.next() => m,
            _ = tick.tick() => {
                if last_ping.elapsed() >= Duration::from_secs(300) {
                    last_ping = Instant::now();
                    let ping = serde_json::to_string(&ClientFrame::Ping).unwrap_or_default();
                    let _ = socket.send(Message::Text(ping.into())).await;
                }
                continue;
            }
        };
        let msg = match msg {
            None => return Ok(Session::Dropped("the server closed the connection".into())),
            Some(Err(e)) => return Ok(Session::Dropped(format!("connection lost: {e}"))),
            Some(Ok(m)) => m,
        };
        let Message::Text(text) = msg else { continue };
        let Ok(frame) = serde_json::from_str::<ServerFrame>(&text) else {
            continue;
        };
        match frame {
            ServerFrame::Log(LogFrame::Log { lines, .. }) => st.take(lines, on_event),
            ServerFrame::Log(LogFrame::Status {
                cluster_state,
                operation_status,
                step,
                message,
                ..
            }) => {
                let status = wire_name(&operation_status);
                let waits = status == "awaiting_approval";
                on_event(Event::Status {
                    cluster_state: cluster_state.as_str().to_owned(),
                    operation_status: status.clone(),
                    detail: message.or(step.map(|s| format!("step {s}"))),
                });
                // The run ended without the operation: nothing more comes until someone decides.
                if waits {
                    st.out.final_status = Some(status);
                    let _ = socket.close(None).await;
                    return Ok(Session::Ended);
                }
            }
            ServerFrame::Log(LogFrame::End {
                final_status,
                last_seq,
                ..
            }) => {
                st.out.final_status = Some(wire_name(&final_status));
                st.out.last_seq = last_seq;
                if !st.complete() && st.missing_before_attach() && catch_ups < CATCH_UPS {
                    // The end came live before the archive replay of the lines written before this
                    // subscription: the archive has them all now (it is complete at the end).
                    catch_ups += 1;
                    if let Err(e) = socket.send(subscribe(operation_id, st.next)).await {
                        return Ok(Session::Dropped(format!("subscribing: {e}")));
                    }
                    continue;
                }
                let _ = socket.close(None).await;
                return Ok(Session::Ended);
            }
            ServerFrame::Control(c @ ControlFrame::LogBatch { first_seq, .. }) => {
                st.attached_at.get_or_insert(first_seq);
                let lines = strato_stream::live_batch::batch_lines(&c).unwrap_or_default();
                st.take(lines, on_event);
            }
            ServerFrame::Control(c @ ControlFrame::LogPart { .. }) => {
                if let Some(line) = st.parts.push(&c) {
                    st.take(vec![line], on_event);
                }
            }
            ServerFrame::Control(ControlFrame::Subscribed {
                replayed_to, more, ..
            }) => {
                if more {
                    // One subscribe replays one page of the archive: ask for the next one.
                    if let Err(e) = socket.send(subscribe(operation_id, st.next)).await {
                        return Ok(Session::Dropped(format!("subscribing: {e}")));
                    }
                } else if opts.mode == Mode::Snapshot && st.next > replayed_to {
                    let _ = socket.close(None).await;
                    return Ok(Session::SnapshotDone);
                }
            }
            ServerFrame::Control(ControlFrame::Error { message, fix, .. }) => {
                return Err(CliError::Stream(format!(
                    "subscription refused: {message} ({fix})"
                )));
            }
            ServerFrame::Control(_) => {}
        }
    }
}

/// `subscribe {operation_id, from_seq}`: on a connection already subscribed, it replays the archive again
/// from `from_seq` (the ws function records the subscription once).
fn subscribe(operation_id: &str, from_seq: u64) -> Message {
    let sub = serde_json::json!({"action": "subscribe", "operation_id": operation_id, "from_seq": from_seq});
    Message::Text(sub.to_string().into())
}

/// A serde enum's wire name (`succeeded`, `ACTIVE`).
fn wire_name<T: serde::Serialize + std::fmt::Debug>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{v:?}"))
}

#[cfg(test)]
mod tests;

//! `GET /v1/operations/{id}/timeline`: an operation's life as ordered moments, derived only from what the
//! operation record already holds (created, dispatched, runner started, steps, notes, ended). Nothing is
//! recorded for the timeline alone; a moment that was never recorded is left out rather than guessed.

use serde::{Deserialize, Serialize};
use strato_domain::ErrorCategory;
use strato_domain::model::{Operation, OperationKind, OperationStatus};
use strato_domain::ts;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::schema;

/// What happened at one moment of an operation's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineEvent {
    /// The request was accepted and the operation queued.
    Queued,
    /// It waits: the cluster is busy or the tenant is at its concurrency limit (`detail` says which).
    Parked,
    /// The dispatcher launched a runner for `attempt`.
    Dispatched,
    /// The runner's first report of `attempt`.
    RunnerStarted,
    StepStarted,
    /// `ok` says how the step ended.
    StepFinished,
    /// The runner's latest heartbeat (shown while the operation is open).
    Heartbeat,
    /// The cancel was asked for; the runner stops at its next safe point.
    CancelRequested,
    /// Something the control plane recorded on the operation (webhook deliveries, a released state lock).
    Note,
    Succeeded,
    Failed,
    Cancelled,
}

/// One moment of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TimelineEntry {
    #[schema(value_type = schema::Timestamp)]
    pub at: String,
    pub event: TimelineEvent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Whether a finished step succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// A failure's class (on `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub category: Option<ErrorCategory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// An operation's timeline, oldest moment first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Timeline {
    pub operation_id: String,
    /// Absent (null) for an estimate, which has no cluster.
    pub cluster_id: Option<String>,
    #[schema(value_type = schema::OperationKind)]
    pub kind: OperationKind,
    #[schema(value_type = schema::OperationStatus)]
    pub status: OperationStatus,
    /// Runner launches so far.
    pub attempt: u32,
    pub entries: Vec<TimelineEntry>,
    /// From queued to the end; while the operation is open, to the moment of the answer.
    pub duration_ms: u64,
    /// Whether the operation has ended (`duration_ms` is final).
    pub ended: bool,
}

fn entry(at: OffsetDateTime, event: TimelineEvent) -> (OffsetDateTime, TimelineEntry) {
    let e = TimelineEntry {
        at: ts::format(at),
        event,
        step: None,
        attempt: None,
        ok: None,
        category: None,
        detail: None,
    };
    (at, e)
}

/// A note's leading timestamp (`2026-11-22T04:30:00.000000Z: …`, as every writer puts it) and the rest.
fn dated_note(note: &str) -> Option<(OffsetDateTime, &str)> {
    let (at, rest) = note.split_once(": ")?;
    Some((ts::parse(at)?, rest))
}

/// The timeline of `op` as of `now`. Moments sort by time; moments at the same instant keep the order of the
/// operation's life (queued, dispatched, started, steps, end).
pub fn derive(op: &Operation, now: OffsetDateTime) -> Timeline {
    use TimelineEvent as E;
    let mut out = vec![entry(op.created_at, E::Queued)];
    out[0].1.detail = op.requested_by.as_ref().map(|by| format!("requested by {by}"));
    if let (OperationStatus::Queued, Some(reason)) = (op.status, &op.wait_reason) {
        // Parking is the last write of a parked operation, so its `updated_at` is when it was parked.
        let (at, mut e) = entry(op.updated_at, E::Parked);
        e.detail = Some(reason.clone());
        out.push((at, e));
    }
    if let Some(at) = op.dispatched_at {
        let (at, mut e) = entry(at, E::Dispatched);
        e.attempt = Some(op.attempt);
        out.push((at, e));
    }
    if let Some(at) = op.started_at {
        let (at, mut e) = entry(at, E::RunnerStarted);
        e.attempt = Some(op.attempt);
        out.push((at, e));
    }
    for s in &op.steps {
        let (at, mut e) = entry(s.started_at, E::StepStarted);
        e.step = Some(s.name.clone());
        out.push((at, e));
        if let Some(done) = s.finished_at {
            let (at, mut e) = entry(done, E::StepFinished);
            e.step = Some(s.name.clone());
            e.ok = s.ok;
            out.push((at, e));
        }
    }
    let open = !op.status.is_terminal();
    if let (true, Some(at)) = (open, op.heartbeat_at) {
        out.push(entry(at, E::Heartbeat));
    }
    if open && op.cancel_requested {
        // The flag carries no time; it is at least as old as the last write.
        out.push(entry(op.updated_at, E::CancelRequested));
    }
    for note in &op.notes {
        // An undated note is shown at the last write, the latest it can have been made.
        let (at, text) = dated_note(note).unwrap_or((op.updated_at, note.as_str()));
        let (at, mut e) = entry(at, E::Note);
        e.detail = Some(text.to_owned());
        out.push((at, e));
    }
    let end = (!open).then(|| end_of(op));
    if let Some(at) = end {
        let event = match op.status {
            OperationStatus::Succeeded => E::Succeeded,
            OperationStatus::Cancelled => E::Cancelled,
            _ => E::Failed,
        };
        let (at, mut e) = entry(at, event);
        if let Some(err) = &op.error {
            e.step = Some(err.step.clone());
            e.category = Some(err.category);
            e.detail = Some(err.what.clone());
        }
        out.push((at, e));
    }
    // Stable: equal instants keep the order above.
    out.sort_by_key(|(at, _)| *at);
    let until = end.unwrap_or(now);
    let duration_ms = (until - op.created_at).whole_milliseconds().max(0);
    Timeline {
        operation_id: op.operation_id.to_string(),
        cluster_id: op.kind.has_cluster().then(|| op.cluster_id.to_string()),
        kind: op.kind,
        status: op.status,
        attempt: op.attempt,
        entries: out.into_iter().map(|(_, e)| e).collect(),
        duration_ms: u64::try_from(duration_ms).unwrap_or(u64::MAX),
        ended: !open,
    }
}

/// When a terminal operation ended: recorded since the store writes `ended_at`; for older records, the
/// latest moment the record holds (its last write can be a later note, so that is the last resort).
pub(crate) fn end_of(op: &Operation) -> OffsetDateTime {
    op.ended_at
        .or_else(|| {
            let steps = op.steps.iter().filter_map(|s| s.finished_at);
            steps.chain(op.heartbeat_at).chain(op.started_at).max()
        })
        .unwrap_or(op.updated_at)
}

/// The timeline as a few lines for a terminal (the demo): one per moment, offsets from queued.
pub fn format_lines(t: &Timeline) -> Vec<String> {
    let start = t.entries.first().and_then(|e| ts::parse(&e.at));
    let mut lines = vec![format!(
        "{} {} ({}): {} in {:.1}s{}",
        wire(&t.kind),
        t.operation_id,
        t.cluster_id.as_deref().unwrap_or("no cluster"),
        wire(&t.status),
        t.duration_ms as f64 / 1000.0,
        if t.ended { "" } else { " so far" }
    )];
    for e in &t.entries {
        let offset = match (start, ts::parse(&e.at)) {
            (Some(s), Some(at)) => (at - s).as_seconds_f64(),
            _ => 0.0,
        };
        let mut line = format!("  +{offset:>7.1}s  {}", wire(&e.event));
        if let Some(step) = &e.step {
            line.push_str(&format!(" {step}"));
        }
        if let Some(a) = e.attempt {
            line.push_str(&format!(" (attempt {a})"));
        }
        match e.ok {
            Some(true) => line.push_str(" ok"),
            Some(false) => line.push_str(" FAILED"),
            None => {}
        }
        if let Some(c) = e.category {
            line.push_str(&format!(" [{}]", wire(&c)));
        }
        if let Some(d) = &e.detail {
            line.push_str(&format!(": {}", crate::requests::truncate(d, 120)));
        }
        lines.push(line);
    }
    lines
}

/// The wire name of a serde enum value.
fn wire<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

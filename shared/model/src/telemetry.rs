//! Observability's shared vocabulary: the log field names every component uses, the W3C trace context
//! ([`Traceparent`]) that follows one operation from the API request to the runner's last event, and the one
//! span constructor ([`span`]) that sets those fields, so each log line inside it carries them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tracing::Span;

/// Field names, defined once: the JSON log lines, the Logs Insights queries and the tests use these.
pub mod fields {
    pub const TENANT_ID: &str = "tenant_id";
    pub const CLUSTER_ID: &str = "cluster_id";
    pub const OPERATION_ID: &str = "operation_id";
    pub const OPERATION_KIND: &str = "operation_kind";
    pub const STEP: &str = "step";
    pub const ATTEMPT: &str = "attempt";
    pub const REQUEST_ID: &str = "request_id";
    pub const TASK_ARN: &str = "task_arn";
    pub const TRACE_ID: &str = "trace_id";
    pub const SPAN_ID: &str = "span_id";
    pub const PARENT_SPAN_ID: &str = "parent_span_id";
    /// What a span stands for: `api_request`, `job`, `runner_event`, `log_batch`, `webhook`, `tick`, `ws`,
    /// `run`.
    pub const UNIT: &str = "unit";
    /// Which function (or `runner`) emitted a line; set by whoever collects the lines (devstack), since in
    /// AWS the log group says it.
    pub const COMPONENT: &str = "component";
}

/// The SQS message attribute (and HTTP header) carrying a [`Traceparent`] between components: on the
/// runner's `events` and `logs` messages and on `webhooks` messages (job messages carry it in their body).
pub const TRACEPARENT_ATTRIBUTE: &str = "traceparent";
/// The runner's environment variable (RunTask container override) with its parent's trace context.
pub const ENV_TRACEPARENT: &str = "STRATO_TRACEPARENT";
/// The runner's tenant and cluster (RunTask container overrides), for its log fields from its first line;
/// what the run does is decided by the operation record alone.
pub const ENV_TENANT_ID: &str = "STRATO_TENANT_ID";
pub const ENV_CLUSTER_ID: &str = "STRATO_CLUSTER_ID";

/// A W3C trace context (`00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`), version 00 only.
/// Each component makes a [`Traceparent::child`] of the one it received, so the ids form a tree.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Traceparent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

/// Why a `traceparent` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, ids not all zero): {0}")]
pub struct BadTraceparent(String);

impl Traceparent {
    /// A new trace (a request that came without one). Its first four bytes are the epoch seconds, as
    /// X-Ray's trace ids (`1-<8 hex time>-<24 hex>`) require, so one id serves both W3C and X-Ray.
    pub fn new_root() -> Self {
        let mut trace_id = *uuid::Uuid::new_v4().as_bytes();
        let secs = u32::try_from(crate::ts::now().unix_timestamp()).unwrap_or(u32::MAX);
        trace_id[..4].copy_from_slice(&secs.to_be_bytes());
        Self {
            trace_id,
            span_id: new_span_id(),
            flags: 1,
        }
    }

    /// The trace id as X-Ray writes it: `1-<first 8 hex>-<last 24 hex>`.
    pub fn xray_trace_id(&self) -> String {
        let hex = self.trace_id();
        format!("1-{}-{}", &hex[..8], &hex[8..])
    }

    /// The context of a new span under this one: same trace, new span id.
    pub fn child(&self) -> Self {
        Self {
            span_id: new_span_id(),
            ..*self
        }
    }

    /// A child of `parent`, or a new root when there is none (old messages, requests without a header).
    pub fn child_or_root(parent: Option<&Traceparent>) -> Self {
        parent.map_or_else(Self::new_root, Self::child)
    }

    pub fn trace_id(&self) -> String {
        hex::encode(self.trace_id)
    }

    pub fn span_id(&self) -> String {
        hex::encode(self.span_id)
    }
}

fn new_span_id() -> [u8; 8] {
    let mut id = [0u8; 8];
    id.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[8..]);
    // All zero is invalid; a random id is that with chance 2^-64, but a parser must never meet it.
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

impl fmt::Display for Traceparent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-{:02x}", self.trace_id(), self.span_id(), self.flags)
    }
}

impl fmt::Debug for Traceparent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Traceparent({self})")
    }
}

impl FromStr for Traceparent {
    type Err = BadTraceparent;

    fn from_str(s: &str) -> Result<Self, BadTraceparent> {
        let bad = || BadTraceparent(s.chars().take(80).collect());
        let parts: Vec<&str> = s.trim().split('-').collect();
        // Version 00 has exactly four parts; lowercase hex only, as the spec says.
        let [version, trace, span, flags] = parts[..] else {
            return Err(bad());
        };
        let hex_of = |p: &str, len: usize| {
            (p.len() == len
                && p.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| hex::decode(p).ok())
            .flatten()
        };
        if version != "00" {
            return Err(bad());
        }
        let (Some(trace), Some(span), Some(flags)) = (hex_of(trace, 32), hex_of(span, 16), hex_of(flags, 2))
        else {
            return Err(bad());
        };
        if trace.iter().all(|b| *b == 0) || span.iter().all(|b| *b == 0) {
            return Err(bad());
        }
        let mut out = Self {
            trace_id: [0; 16],
            span_id: [0; 8],
            flags: flags[0],
        };
        out.trace_id.copy_from_slice(&trace);
        out.span_id.copy_from_slice(&span);
        Ok(out)
    }
}

impl Serialize for Traceparent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Traceparent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The span of one unit of work (`unit`: see [`fields::UNIT`]) in the trace `me` (a child of what the
/// work came with): it carries `trace_id`, `span_id`, `parent_span_id` and leaves the vocabulary's other
/// fields to be recorded once known (`Operation::record_on`, `JobMessage::record_on`, [`record`]).
pub fn span(unit: &'static str, me: &Traceparent, parent: Option<&Traceparent>) -> Span {
    let parent_span_id = parent.map(Traceparent::span_id);
    tracing::info_span!(
        "strato",
        unit,
        trace_id = %me.trace_id(),
        span_id = %me.span_id(),
        parent_span_id = parent_span_id.as_deref(),
        tenant_id = tracing::field::Empty,
        cluster_id = tracing::field::Empty,
        operation_id = tracing::field::Empty,
        operation_kind = tracing::field::Empty,
        step = tracing::field::Empty,
        attempt = tracing::field::Empty,
        request_id = tracing::field::Empty,
        task_arn = tracing::field::Empty,
    )
}

/// Like [`span`] but without a unit, so it ends without a `span end` line: for hot paths where most spans
/// do nothing worth a line (the log fan-out's per-operation batches).
pub fn quiet_span(me: &Traceparent, parent: Option<&Traceparent>) -> Span {
    let parent_span_id = parent.map(Traceparent::span_id);
    tracing::info_span!(
        "strato",
        trace_id = %me.trace_id(),
        span_id = %me.span_id(),
        parent_span_id = parent_span_id.as_deref(),
        tenant_id = tracing::field::Empty,
        operation_id = tracing::field::Empty,
    )
}

/// Records one of the vocabulary's fields on `span` (a field [`span`] does not declare is ignored).
pub fn record(span: &Span, field: &str, value: &str) {
    span.record(field, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::JobMessage;

    const SAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_round_trips_and_children_keep_the_trace() {
        let tp: Traceparent = SAMPLE.parse().unwrap();
        assert_eq!(tp.to_string(), SAMPLE);
        assert_eq!(tp.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.span_id(), "00f067aa0ba902b7");
        let child = tp.child();
        assert_eq!(child.trace_id(), tp.trace_id());
        assert_ne!(child.span_id(), tp.span_id());
        assert_eq!(child.to_string().parse::<Traceparent>().unwrap(), child);
        let root = Traceparent::new_root();
        assert_ne!(root.trace_id(), tp.trace_id());
        let secs = i64::from_str_radix(&root.trace_id()[..8], 16).unwrap();
        let now = crate::ts::now().unix_timestamp();
        assert!(
            (now - secs).abs() <= 1,
            "a root's trace id starts with the epoch seconds: {root}"
        );
        assert_eq!(tp.xray_trace_id(), "1-4bf92f35-77b34da6a3ce929d0e0e4736");
        assert_eq!(root.to_string().parse::<Traceparent>().unwrap(), root);
        let json = serde_json::to_string(&tp).unwrap();
        assert_eq!(json, format!("\"{SAMPLE}\""));
        assert_eq!(serde_json::from_str::<Traceparent>(&json).unwrap(), tp);
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        for bad in [
            "",
            "00",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473z-00f067aa0ba902b7-01",
        ] {
            assert!(bad.parse::<Traceparent>().is_err(), "{bad:?} was accepted");
        }
        assert!(serde_json::from_str::<Traceparent>("\"00-zz\"").is_err());
    }

    #[test]
    fn an_old_job_message_without_a_traceparent_still_parses() {
        let old = r#"{"operation_id":"op-0123456789abcdef0123456789abcdef","cluster_id":"cl-0123456789abcdef0123456789abcdef","tenant_id":"acme","kind":"create"}"#;
        let job: JobMessage = serde_json::from_str(old).unwrap();
        assert_eq!(job.traceparent, None);
        let again = serde_json::to_value(&job).unwrap();
        assert!(again.get("traceparent").is_none(), "no trace, no field: {again}");
        let mut traced = job.clone();
        traced.traceparent = Some(SAMPLE.parse().unwrap());
        let back: JobMessage = serde_json::from_str(&serde_json::to_string(&traced).unwrap()).unwrap();
        assert_eq!(back, traced);
    }
}

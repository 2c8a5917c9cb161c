//! Logs and trace context on AWS: the `traceparent` message attribute on SQS messages, the per-record span a
//! consumer opens as a child of it, and the subscriber every function and the runner log through: one JSON
//! object per line with the fields of every enclosing span flattened in (so a Logs Insights query on
//! `operation_id` finds every line of an operation), plus one `span end` line per Strato span
//! ([`strato_model::telemetry::span`]) so the trace tree can be rebuilt from the logs alone.

//!
//! Also here, so that one crate owns what a process emits: [`xray`] (each Strato span as an X-Ray segment
//! when a daemon is configured) and [`emf`] (metrics as CloudWatch embedded metric format lines).

pub mod emf;
mod json_fields;
pub mod xray;

use std::io::Write;
use std::time::Instant;

use aws_lambda_events::sqs::SqsMessage;
use aws_sdk_sqs::types::MessageAttributeValue;
use serde_json::{Map, Value};
use strato_model::telemetry::{self, TRACEPARENT_ATTRIBUTE, Traceparent, fields};

use crate::json_fields::JsonVisitor;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The `traceparent` SQS message attribute for `tp`.
pub fn trace_attribute(tp: &Traceparent) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(tp.to_string())
        .build()
        // Only fails without a data type, which is set above.
        .expect("a String message attribute")
}

/// The trace context a record came with: its `traceparent` attribute, else a top-level `traceparent` field
/// of its JSON body (job messages); a malformed one counts as none.
pub fn record_trace(record: &SqsMessage) -> Option<Traceparent> {
    #[derive(serde::Deserialize)]
    struct Body {
        traceparent: Option<String>,
    }
    let attribute = record
        .message_attributes
        .get(TRACEPARENT_ATTRIBUTE)
        .and_then(|a| a.string_value.clone());
    attribute
        .or_else(|| {
            let body = record.body.as_deref()?;
            serde_json::from_str::<Body>(body).ok()?.traceparent
        })
        .and_then(|v| v.parse().ok())
}

/// The trace context of the record in hand, and whether it is the trace the record came with (else a new
/// root, until [`record_operation`] joins it to its operation's).
#[derive(Clone, Copy)]
struct Current {
    tp: Traceparent,
    inherited: bool,
}

tokio::task_local! {
    static CURRENT: std::cell::Cell<Current>;
}

/// Runs `f` with `tp` as the current trace context ([`current_trace`]); `inherited`: `tp` continues the
/// trace the work came with.
pub async fn with_trace<F: std::future::Future>(tp: Traceparent, inherited: bool, f: F) -> F::Output {
    CURRENT
        .scope(std::cell::Cell::new(Current { tp, inherited }), f)
        .await
}

/// Records `op`'s ids on the current span; a record that came without trace context (an ECS event from
/// EventBridge, a message from before traces) joins the operation's trace here, so every span of an
/// operation is in its one trace.
pub fn record_operation(op: &strato_model::model::Operation) {
    let span = tracing::Span::current();
    op.record_on(&span);
    let Some(op_trace) = op.traceparent else { return };
    let _ = CURRENT.try_with(|c| {
        let cur = c.get();
        if cur.inherited || cur.tp.trace_id() == op_trace.trace_id() {
            return;
        }
        let me = op_trace.child();
        span.record(fields::TRACE_ID, me.trace_id().as_str());
        span.record(fields::SPAN_ID, me.span_id().as_str());
        span.record(fields::PARENT_SPAN_ID, op_trace.span_id().as_str());
        c.set(Current {
            tp: me,
            inherited: true,
        });
    });
}

/// The `traceparent` attribute of the work in progress, for a message it sends (none outside traced work).
pub fn current_trace_attributes() -> Option<std::collections::HashMap<String, MessageAttributeValue>> {
    current_trace().map(|tp| [(TRACEPARENT_ATTRIBUTE.to_owned(), trace_attribute(&tp))].into())
}

/// The trace context of the work in progress (the SQS record being handled), for what it sends on: the
/// runner it starts, the webhook it queues.
pub fn current_trace() -> Option<Traceparent> {
    CURRENT.try_with(|c| c.get().tp).ok()
}

/// The span of one SQS record (`unit`), a child of the trace the record came with (or a new trace), and
/// this span's own context, for what it sends on.
pub fn record_span(unit: &'static str, record: &SqsMessage) -> (tracing::Span, Traceparent, bool) {
    let parent = record_trace(record);
    let me = Traceparent::child_or_root(parent.as_ref());
    (telemetry::span(unit, &me, parent.as_ref()), me, parent.is_some())
}

/// The fields recorded on one span so far, kept in the span's extensions.
struct SpanFields {
    fields: Map<String, Value>,
    opened: Instant,
}

/// A [`Layer`] that hands each event, with its span chain's fields flattened in (inner spans win, the event's
/// own fields last), to `sink` as one JSON object, and each Strato span's end as a `span end` object.
pub struct FlatJsonLayer<F> {
    sink: F,
}

impl<F> FlatJsonLayer<F>
where
    F: Fn(Map<String, Value>) + Send + Sync + 'static,
{
    pub fn new(sink: F) -> Self {
        Self { sink }
    }
}

/// The fields of the span chain of `scope` (root first), flattened.
fn flattened<'a, S>(
    scope: impl Iterator<Item = tracing_subscriber::registry::SpanRef<'a, S>>,
) -> Map<String, Value>
where
    S: for<'l> LookupSpan<'l> + 'a,
{
    let mut out = Map::new();
    for span in scope {
        if let Some(f) = span.extensions().get::<SpanFields>() {
            out.extend(f.fields.clone());
        }
    }
    out
}

impl<S, F> Layer<S> for FlatJsonLayer<F>
where
    S: Subscriber + for<'l> LookupSpan<'l>,
    F: Fn(Map<String, Value>) + Send + Sync + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Map::new();
        attrs.record(&mut JsonVisitor(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields {
                fields,
                opened: Instant::now(),
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(f) = span.extensions_mut().get_mut::<SpanFields>()
        {
            values.record(&mut JsonVisitor(&mut f.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut line = base(meta.level().as_str(), meta.target());
        if let Some(scope) = ctx.event_scope(event) {
            line.extend(flattened(scope.from_root()));
        }
        event.record(&mut JsonVisitor(&mut line));
        (self.sink)(line);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let ms = {
            let ext = span.extensions();
            let Some(f) = ext.get::<SpanFields>() else { return };
            // Only Strato's spans (those with a unit) end with a line; library spans are too many.
            if !f.fields.contains_key(fields::UNIT) {
                return;
            }
            f.opened.elapsed().as_secs_f64() * 1000.0
        };
        let mut line = base("INFO", span.metadata().target());
        line.extend(flattened(span.scope().from_root()));
        line.insert("message".into(), Value::from("span end"));
        line.insert("span_name".into(), Value::from(span.name()));
        line.insert("duration_ms".into(), Value::from((ms * 1000.0).round() / 1000.0));
        (self.sink)(line);
    }
}

fn base(level: &str, target: &str) -> Map<String, Value> {
    let mut line = Map::new();
    line.insert(
        "timestamp".into(),
        Value::from(strato_model::ts::format(strato_model::ts::now())),
    );
    line.insert("level".into(), Value::from(level));
    line.insert("target".into(), Value::from(target));
    line
}

/// Writes one JSON object per line to stdout (Lambda) or stderr (the runner).
pub fn write_line(out: &mut dyn Write, line: &Map<String, Value>) {
    let mut text = serde_json::to_string(line).unwrap_or_default();
    text.push('\n');
    // Nothing to do about a closed stdout: the line is lost, as it would be with any logger.
    let _ = out.write_all(text.as_bytes());
}

/// The level filter Lambda's log controls ask for: `AWS_LAMBDA_LOG_LEVEL`, else `RUST_LOG`, else INFO.
fn env_filter() -> tracing_subscriber::EnvFilter {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".into());
    tracing_subscriber::EnvFilter::try_new(level.to_lowercase())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
}

/// A function's subscriber: flattened JSON lines on stdout when `AWS_LAMBDA_LOG_FORMAT` is `JSON` (infra/
/// sets it), else lambda_runtime's text format (span fields shown inline); with active tracing (Lambda sets
/// `AWS_XRAY_DAEMON_ADDRESS`) each Strato span also goes to X-Ray ([`crate::xray`]).
pub fn init_lambda_subscriber() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let service = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "strato".into());
    if json {
        let layer = FlatJsonLayer::new(|line| write_line(&mut std::io::stdout().lock(), &line));
        tracing_subscriber::registry()
            .with(layer.with_filter(env_filter()))
            .with(crate::xray::layer_from_env(service))
            .init();
    } else {
        let text = tracing_subscriber::fmt::layer()
            .with_target(false)
            .without_time()
            .with_filter(env_filter());
        tracing_subscriber::registry()
            .with(text)
            .with(crate::xray::layer_from_env(service))
            .init();
    }
}

/// The runner's name in traces.
pub const RUNNER_SERVICE: &str = "strato-runner";

/// The runner's subscriber: flattened JSON lines on stderr (the awslogs driver ships them), and its run's
/// segment to the X-Ray daemon when `AWS_XRAY_DAEMON_ADDRESS` names one (the task's sidecar).
pub fn init_runner_subscriber() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let layer = FlatJsonLayer::new(|line| write_line(&mut std::io::stderr().lock(), &line));
    tracing_subscriber::registry()
        .with(layer.with_filter(env_filter()))
        .with(crate::xray::layer_from_env(RUNNER_SERVICE))
        .init();
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn lines_carry_every_enclosing_spans_fields_and_spans_end_with_a_line() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let subscriber =
            tracing_subscriber::registry().with(FlatJsonLayer::new(move |l| sink.lock().unwrap().push(l)));
        let root = Traceparent::new_root();
        tracing::subscriber::with_default(subscriber, || {
            let span = telemetry::span("job", &root.child(), Some(&root));
            span.record(fields::TENANT_ID, "acme");
            let inner = tracing::info_span!("library", tenant_id = "shadowed-inner");
            span.in_scope(|| {
                tracing::info!(answer = 42, "outer");
                inner.in_scope(|| tracing::warn!("inner"));
            });
        });
        let lines = lines.lock().unwrap();
        let outer = &lines[0];
        assert_eq!(outer["message"], "outer");
        assert_eq!(outer["answer"], 42);
        assert_eq!(outer["tenant_id"], "acme");
        assert_eq!(outer["trace_id"], Value::from(root.trace_id()));
        assert_eq!(outer["parent_span_id"], Value::from(root.span_id()));
        assert!(outer.get("operation_id").is_none(), "empty fields are left out");
        assert_eq!(lines[1]["tenant_id"], "shadowed-inner", "the inner span wins");
        assert_eq!(lines[1]["level"], "WARN");
        let end = lines.last().unwrap();
        assert_eq!(end["message"], "span end");
        assert_eq!(end["unit"], "job");
        assert_eq!(lines.len(), 3, "the library span ends without a line");
    }
}

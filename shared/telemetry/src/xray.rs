//! Traces to AWS X-Ray: every Strato span ([`strato_model::telemetry::span`]: an API request, a queue
//! record, a runner's run) becomes one X-Ray segment when it closes, sent as a segment document over UDP to
//! the X-Ray daemon at `AWS_XRAY_DAEMON_ADDRESS` — Lambda's own with active tracing (infra/ turns it on), the
//! runner task's sidecar daemon on Fargate, devstack's collector locally. Translation and transport are
//! OpenTelemetry's X-Ray exporter (`opentelemetry-aws`); this layer only feeds it our spans with *our* ids
//! (the [`Traceparent`](strato_model::telemetry::Traceparent) that crosses SQS, RunTask and the runner's
//! events), so the X-Ray trace of an operation is the same tree as its logs' `trace_id`/`span_id`/
//! `parent_span_id`. The segment's annotations are the log vocabulary's ids, so X-Ray's console finds an
//! operation by `annotation.operation_id`.
//!
//! Sending never waits: the socket is non-blocking and a datagram that cannot go is dropped (traces are
//! best-effort; logs stay the record).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::pin::pin;
use std::task::{Context as TaskContext, Waker};
use std::time::SystemTime;

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_aws::xray_exporter::daemon_client::XrayDaemonClient;
use opentelemetry_aws::xray_exporter::{SegmentTranslator, XrayExporter};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter, SpanLinks};
use serde_json::{Map, Value};
use strato_model::telemetry::fields;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::json_fields::JsonVisitor;

/// The environment variable naming the daemon (`host:port`, or the SDKs' `udp:host:port tcp:host:port`).
pub const DAEMON_ADDRESS_ENV: &str = "AWS_XRAY_DAEMON_ADDRESS";

/// Fields that become searchable annotations; the rest of the vocabulary goes to metadata.
const ANNOTATED: [&str; 6] = [
    fields::TENANT_ID,
    fields::CLUSTER_ID,
    fields::OPERATION_ID,
    fields::OPERATION_KIND,
    fields::STEP,
    fields::UNIT,
];
const METADATA: [&str; 4] = [
    fields::ATTEMPT,
    fields::REQUEST_ID,
    fields::TASK_ARN,
    fields::TRACE_ID,
];

/// The field naming the function a span ran in when several share a process (devstack's invocation span).
const COMPONENT: &str = "component";

/// The daemon's address from `AWS_XRAY_DAEMON_ADDRESS` (`None` when unset or unreadable: no tracing).
pub fn daemon_address() -> Option<SocketAddr> {
    parse_daemon_address(&std::env::var(DAEMON_ADDRESS_ENV).ok()?)
}

/// `127.0.0.1:2000`, or the SDKs' two-address form `udp:127.0.0.1:2000 tcp:127.0.0.1:2000` (UDP is ours).
pub fn parse_daemon_address(value: &str) -> Option<SocketAddr> {
    let udp = value
        .split_whitespace()
        .find_map(|part| part.strip_prefix("udp:"))
        .unwrap_or(value.trim());
    udp.parse().ok()
}

/// What the layer needs to see, whatever the log level: Strato's spans, spans naming a component, and
/// ERROR events (faults). Everything else stays disabled for it, so it adds no cost to library spans.
pub fn filter() -> tracing_subscriber::filter::FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    tracing_subscriber::filter::filter_fn(|m| {
        if m.is_span() {
            m.fields().field(fields::UNIT).is_some() || m.fields().field(COMPONENT).is_some()
        } else {
            *m.level() == Level::ERROR
        }
    })
}

/// A [`Layer`] exporting each closed Strato span to the X-Ray daemon as a segment named `service` (or the
/// enclosing `component`, in devstack).
pub struct XrayLayer {
    exporter: XrayExporter<XrayDaemonClient>,
    service: String,
}

/// The `component` of a span that names one (devstack's invocation span), in its extensions.
struct Component(String);

/// What one open Strato span has recorded, in its extensions.
struct Open {
    start: SystemTime,
    fields: Map<String, Value>,
    /// The first ERROR event's message inside the span: the segment is marked as a fault.
    fault: Option<String>,
}

impl XrayLayer {
    /// A layer sending to `daemon`; `None` when no socket could be opened (tracing is then off, not fatal).
    pub fn new(daemon: SocketAddr, service: impl Into<String>) -> Option<Self> {
        let client = XrayDaemonClient::new(daemon).ok()?;
        let translator = SegmentTranslator::new()
            .with_indexed_attrs(ANNOTATED.map(String::from))
            .metadata_all_attrs();
        Some(Self {
            exporter: XrayExporter::new(client).with_translator(translator),
            service: service.into(),
        })
    }

    /// The layer for this process when `AWS_XRAY_DAEMON_ADDRESS` names a daemon.
    pub fn from_env(service: impl Into<String>) -> Option<Self> {
        Self::new(daemon_address()?, service)
    }
}

/// [`XrayLayer::from_env`] behind its [`filter`], ready for a subscriber.
pub fn layer_from_env<S>(service: impl Into<String>) -> Option<impl Layer<S>>
where
    S: Subscriber + for<'l> LookupSpan<'l>,
{
    Some(XrayLayer::from_env(service)?.with_filter(filter()))
}

impl XrayLayer {
    fn export(&self, span: SpanData) {
        // The daemon client sends synchronously on a non-blocking socket, so the future is ready at once;
        // polling it here keeps the export off any runtime (the runner's, a test's, none).
        let mut fut = pin!(self.exporter.export(vec![span]));
        let _ = fut.as_mut().poll(&mut TaskContext::from_waker(Waker::noop()));
    }
}

/// The segment for a closed span, or `None` when its ids are not a trace's (a span without them).
fn span_data(open: &Open, name: &str, service: &str, end: SystemTime) -> Option<SpanData> {
    let text = |k: &str| open.fields.get(k).and_then(Value::as_str);
    let trace_id = TraceId::from_hex(text(fields::TRACE_ID)?).ok()?;
    let span_id = SpanId::from_hex(text(fields::SPAN_ID)?).ok()?;
    let parent_span_id = text(fields::PARENT_SPAN_ID)
        .and_then(|p| SpanId::from_hex(p).ok())
        .unwrap_or(SpanId::INVALID);
    let mut attributes = vec![KeyValue::new("service.name", service.to_owned())];
    for key in ANNOTATED.iter().chain(METADATA.iter()) {
        match open.fields.get(*key) {
            Some(Value::String(s)) => attributes.push(KeyValue::new(*key, s.clone())),
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    attributes.push(KeyValue::new(*key, i));
                }
            }
            _ => {}
        }
    }
    Some(SpanData {
        span_context: SpanContext::new(trace_id, span_id, TraceFlags::SAMPLED, true, TraceState::NONE),
        parent_span_id,
        parent_span_is_remote: true,
        // Every Strato span is a unit of work a component received (a request, a record, a run): a segment.
        span_kind: SpanKind::Server,
        name: Cow::Owned(name.to_owned()),
        start_time: open.start,
        end_time: end,
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: match &open.fault {
            Some(m) => Status::error(m.clone()),
            None => Status::Unset,
        },
        instrumentation_scope: InstrumentationScope::builder("strato").build(),
    })
}

impl<S> Layer<S> for XrayLayer
where
    S: Subscriber + for<'l> LookupSpan<'l>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let declared = attrs.metadata().fields();
        if declared.field(COMPONENT).is_some() {
            let mut fields = Map::new();
            attrs.record(&mut JsonVisitor(&mut fields));
            if let (Some(span), Some(Value::String(c))) = (ctx.span(id), fields.remove(COMPONENT)) {
                span.extensions_mut().insert(Component(c));
            }
        }
        // Only Strato's spans (those with a unit) are segments; library spans would be noise.
        if declared.field(fields::UNIT).is_none() {
            return;
        }
        let mut fields = Map::new();
        attrs.record(&mut JsonVisitor(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Open {
                start: SystemTime::now(),
                fields,
                fault: None,
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(open) = span.extensions_mut().get_mut::<Open>()
        {
            values.record(&mut JsonVisitor(&mut open.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if *event.metadata().level() != Level::ERROR {
            return;
        }
        let Some(scope) = ctx.event_scope(event) else {
            return;
        };
        let mut message = Map::new();
        event.record(&mut JsonVisitor(&mut message));
        let text = message
            .remove("message")
            .and_then(|m| m.as_str().map(str::to_owned))
            .unwrap_or_else(|| "error".into());
        // The innermost Strato span is the unit that failed; the ones around it may still succeed.
        for span in scope {
            if let Some(open) = span.extensions_mut().get_mut::<Open>() {
                open.fault.get_or_insert(text);
                return;
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        let component = span.scope().skip(1).find_map(|s| {
            let ext = s.extensions();
            let f = ext.get::<Component>()?;
            Some(f.0.clone())
        });
        let name = open
            .fields
            .get(fields::UNIT)
            .and_then(Value::as_str)
            .unwrap_or(span.name())
            .to_owned();
        let service = component.unwrap_or_else(|| self.service.clone());
        if let Some(data) = span_data(&open, &name, &service, SystemTime::now()) {
            self.export(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::time::Duration;

    use super::*;
    use strato_model::telemetry::{self, Traceparent};
    use tracing_subscriber::layer::SubscriberExt;

    /// The segment documents the daemon at `socket` received, header checked and stripped.
    fn received(socket: &UdpSocket) -> Vec<Value> {
        let mut out = Vec::new();
        let mut buf = [0u8; 65_536];
        while let Ok(n) = socket.recv(&mut buf) {
            let text = std::str::from_utf8(&buf[..n]).unwrap();
            let (header, body) = text.split_once('\n').unwrap();
            assert_eq!(header, r#"{"format": "json", "version": 1}"#);
            out.push(serde_json::from_str(body).unwrap());
        }
        out
    }

    #[test]
    fn strato_spans_reach_the_daemon_as_segments_of_one_trace_with_our_ids() {
        let daemon = UdpSocket::bind("127.0.0.1:0").unwrap();
        daemon.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let layer = XrayLayer::new(daemon.local_addr().unwrap(), "strato-api").unwrap();
        let subscriber = tracing_subscriber::registry().with(layer.with_filter(filter()));
        let root = Traceparent::new_root();
        let api = root.child();
        let job = api.child();
        tracing::subscriber::with_default(subscriber, || {
            let outer = telemetry::span("api_request", &api, Some(&root));
            outer.record(fields::OPERATION_ID, "op-1");
            outer.record(fields::TENANT_ID, "acme");
            outer.in_scope(|| {
                // A library span in between is not a segment and does not break the chain.
                tracing::info_span!("library").in_scope(|| {
                    let component = tracing::info_span!("lambda", component = "dispatcher");
                    let inner = component.in_scope(|| telemetry::span("job", &job, Some(&api)));
                    inner.in_scope(|| tracing::error!("RunTask refused: capacity"));
                });
            });
        });
        let docs = received(&daemon);
        assert_eq!(docs.len(), 2, "one segment per Strato span: {docs:?}");
        let (job_doc, api_doc) = (&docs[0], &docs[1]);
        assert_eq!(api_doc["trace_id"], root.xray_trace_id());
        assert_eq!(api_doc["id"], api.span_id());
        assert_eq!(api_doc["parent_id"], root.span_id());
        assert_eq!(api_doc["name"], "strato-api");
        assert_eq!(api_doc["annotations"]["operation_id"], "op-1");
        assert_eq!(api_doc["annotations"]["tenant_id"], "acme");
        assert!(api_doc["end_time"].as_f64().unwrap() >= api_doc["start_time"].as_f64().unwrap());
        assert_eq!(job_doc["trace_id"], root.xray_trace_id());
        assert_eq!(job_doc["parent_id"], api.span_id());
        assert_eq!(
            job_doc["name"], "dispatcher",
            "the enclosing component names the segment"
        );
        assert_eq!(
            job_doc["fault"], true,
            "an ERROR inside marks the segment: {job_doc}"
        );
        assert_ne!(api_doc.get("fault"), Some(&Value::Bool(true)), "{api_doc}");
    }

    #[test]
    fn the_daemon_address_takes_both_forms_and_nothing_else() {
        let a: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        assert_eq!(parse_daemon_address("127.0.0.1:2000"), Some(a));
        assert_eq!(
            parse_daemon_address("tcp:127.0.0.1:2001 udp:127.0.0.1:2000"),
            Some(a)
        );
        assert_eq!(parse_daemon_address("not an address"), None);
    }
}

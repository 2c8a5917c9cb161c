//! Every log line of the stack, kept in memory as CloudWatch Logs would hold it: the in-process functions'
//! events (each with its span chain's fields flattened, as `strato_telemetry` writes them in AWS, plus
//! the `component` — the function — devstack's invocation span names) and the runners' JSON lines from their
//! stderr. `span end` lines are the spans; [`Capture::span_tree`] prints one operation's trace from them.
//!
//! Installed by [`install`] as the process's subscriber (tests; `strato-devstack up` keeps its own text
//! log); the Fargate emulation hands runner output to [`runner_line`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};
use strato_domain::telemetry::fields;
use strato_telemetry::FlatJsonLayer;

/// One captured line: a JSON object with at least `component`, `level`, `message`.
pub type Line = Map<String, Value>;

/// The captured lines of the stack.
#[derive(Clone, Default)]
pub struct Capture {
    lines: Arc<Mutex<Vec<Line>>>,
}

static GLOBAL: OnceLock<Capture> = OnceLock::new();

/// What devstack itself logs (the emulations: gateway, SQS mappings, Fargate): no function's line.
pub const DEVSTACK: &str = "devstack";
/// The runner's lines.
pub const RUNNER: &str = "runner";

/// The span devstack runs one invocation of function `component` in (the function's log group in AWS).
pub fn component_span(component: &'static str) -> tracing::Span {
    tracing::info_span!("lambda", component)
}

/// Which function a queue's event source mapping invokes.
pub fn consumer_of(queue: &str) -> &'static str {
    match queue {
        "jobs" => "dispatcher",
        "events" => "status",
        "logs" => "log-fanout",
        "webhooks" => "webhooks",
        "rollouts" => "api",
        _ => "unknown-consumer",
    }
}

/// Installs the capture (with a text log on stderr at `RUST_LOG`'s level, default `warn`) as the process's
/// subscriber; the second call returns the first's capture. `None` when another subscriber was set first.
pub fn install() -> Option<Capture> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    if let Some(c) = GLOBAL.get() {
        return Some(c.clone());
    }
    let capture = Capture::default();
    let sink = capture.clone();
    let layer = FlatJsonLayer::new(move |line| sink.push_event(line))
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    let text = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        );
    // Segments to devstack's X-Ray daemon, as each function sends them to Lambda's in AWS.
    let xray = crate::xray::collector()
        .and_then(|c| strato_telemetry::xray::XrayLayer::new(c.addr(), "devstack"))
        .map(|l| l.with_filter(strato_telemetry::xray::filter()));
    let subscriber = tracing_subscriber::registry().with(layer).with(text).with(xray);
    tracing::subscriber::set_global_default(subscriber).ok()?;
    Some(GLOBAL.get_or_init(|| capture).clone())
}

/// The installed capture, if any.
pub fn global() -> Option<&'static Capture> {
    GLOBAL.get()
}

/// One line of a runner's output (its JSON log line, or anything else it printed).
pub fn runner_line(line: &str, stream: &str) {
    let Some(c) = global() else { return };
    let mut obj = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(o)) => o,
        _ => {
            let mut o = Map::new();
            o.insert("message".into(), Value::from(line));
            o.insert("raw".into(), Value::from(true));
            o
        }
    };
    obj.insert(fields::COMPONENT.into(), Value::from(RUNNER));
    obj.insert("stream".into(), Value::from(stream));
    c.push(obj);
}

impl Capture {
    fn push_event(&self, mut line: Line) {
        // The Fargate emulation echoes runner output as devstack events; those lines are kept parsed
        // (`runner_line`), not twice.
        if line.get("target").and_then(Value::as_str) == Some(RUNNER) {
            return;
        }
        if !line.contains_key(fields::COMPONENT) {
            line.insert(fields::COMPONENT.into(), Value::from(DEVSTACK));
        }
        self.push(line);
    }

    fn push(&self, line: Line) {
        if let Ok(mut l) = self.lines.lock() {
            l.push(line);
        }
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<Line> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The spans so far (their `span end` lines).
    pub fn spans(&self) -> Vec<Line> {
        self.lines()
            .into_iter()
            .filter(|l| l.get("message").and_then(Value::as_str) == Some("span end"))
            .collect()
    }

    /// The trace ids of `operation_id`'s spans.
    pub fn trace_ids(&self, operation_id: &str) -> Vec<String> {
        let mut ids: Vec<String> = self
            .spans()
            .iter()
            .filter(|s| str_of(s, fields::OPERATION_ID) == Some(operation_id))
            .filter_map(|s| str_of(s, fields::TRACE_ID).map(str::to_owned))
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The span tree of every trace `operation_id` has spans in, one line per span, children indented
    /// under their parent: `component unit span_id (duration) ids`.
    pub fn span_tree(&self, operation_id: &str) -> String {
        let mut out = String::new();
        for trace in self.trace_ids(operation_id) {
            let spans: Vec<Line> = self
                .spans()
                .into_iter()
                .filter(|s| str_of(s, fields::TRACE_ID) == Some(trace.as_str()))
                .collect();
            let mut children: BTreeMap<Option<String>, Vec<&Line>> = BTreeMap::new();
            let known: Vec<&str> = spans.iter().filter_map(|s| str_of(s, fields::SPAN_ID)).collect();
            for s in &spans {
                // A parent outside the captured spans (the caller's own, or a lost one) makes a root.
                let parent = str_of(s, fields::PARENT_SPAN_ID)
                    .filter(|p| known.contains(p))
                    .map(str::to_owned);
                children.entry(parent).or_default().push(s);
            }
            out.push_str(&format!("trace {trace}\n"));
            print_children(&children, None, 1, &mut out);
        }
        out
    }
}

fn print_children(
    children: &BTreeMap<Option<String>, Vec<&Line>>,
    parent: Option<String>,
    depth: usize,
    out: &mut String,
) {
    let Some(spans) = children.get(&parent) else {
        return;
    };
    for s in spans {
        let get = |k| str_of(s, k).unwrap_or("-");
        out.push_str(&format!(
            "{:indent$}{} {} {} ({} ms) op={} step={}\n",
            "",
            get(fields::COMPONENT),
            get(fields::UNIT),
            get(fields::SPAN_ID),
            s.get("duration_ms").map(Value::to_string).unwrap_or_default(),
            get(fields::OPERATION_ID),
            get(fields::STEP),
            indent = depth * 2
        ));
        // Depth-bounded: a cycle in captured ids (impossible with fresh random ids) cannot loop forever.
        if depth < 32 {
            print_children(
                children,
                str_of(s, fields::SPAN_ID).map(str::to_owned),
                depth + 1,
                out,
            );
        }
    }
}

/// A string field of a line.
pub fn str_of<'a>(line: &'a Line, key: &str) -> Option<&'a str> {
    line.get(key).and_then(Value::as_str)
}

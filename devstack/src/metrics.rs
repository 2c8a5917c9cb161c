//! devstack's metrics: the functions run in this process, so one process-wide EMF recorder (the same
//! `metrics_cloudwatch_embedded` the Lambdas use) collects theirs; the runner, a subprocess, prints its EMF
//! lines on stdout and [`crate::fargate`] hands them here. Both land in one store of EMF documents, which
//! the HTTP gateway serves (`GET /metrics`: Prometheus text; `GET /metrics/emf`: the documents, one JSON per
//! line) and `strato-devstack up` summarizes on Ctrl-C. Metric names: `strato_domain::vitals`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use metrics_cloudwatch_embedded::{Builder, Collector};
use serde_json::Value;
use strato_domain::vitals;

/// Every EMF document seen in this process, in arrival order.
pub struct MetricsStore {
    collector: Option<&'static Collector>,
    docs: Mutex<Vec<Value>>,
}

static STORE: OnceLock<MetricsStore> = OnceLock::new();

/// How often the in-process recorder is drained into the store besides every read (EMF keeps at most 100
/// values of a histogram between flushes; a gauge is repeated in every flush, hence not every second).
const COLLECT_EVERY: Duration = Duration::from_secs(5);

/// The process's store; the first call installs the global EMF recorder and starts draining it.
pub fn store() -> &'static MetricsStore {
    STORE.get_or_init(|| {
        let collector = match Builder::new().cloudwatch_namespace(vitals::NAMESPACE).init() {
            Ok(c) => {
                vitals::describe();
                std::thread::Builder::new()
                    .name("devstack-metrics".into())
                    .spawn(|| {
                        loop {
                            std::thread::sleep(COLLECT_EVERY);
                            store().collect();
                        }
                    })
                    .map_err(|e| tracing::warn!(error = %e, "metrics are collected only when read"))
                    .ok();
                Some(c)
            }
            Err(e) => {
                tracing::warn!(error = %e, "another metrics recorder is installed; devstack sees the runner's only");
                None
            }
        };
        MetricsStore {
            collector,
            docs: Mutex::default(),
        }
    })
}

/// The headline figures of everything recorded so far (for the demo's closing lines).
pub fn headline() -> Headline {
    store().headline()
}

/// Whether `doc` is an EMF document: `_aws.CloudWatchMetrics` with a namespace, dimension sets and metrics,
/// every dimension and metric present as a field.
pub fn is_emf(doc: &Value) -> bool {
    let Some(directives) = doc.pointer("/_aws/CloudWatchMetrics").and_then(Value::as_array) else {
        return false;
    };
    doc.pointer("/_aws/Timestamp").is_some_and(Value::is_u64)
        && directives.iter().all(|d| {
            let names_present = |v: Option<&Value>| {
                v.and_then(Value::as_array)
                    .is_some_and(|a| a.iter().all(|n| n.as_str().is_some_and(|n| doc.get(n).is_some())))
            };
            d.get("Namespace").is_some_and(Value::is_string)
                && d.get("Dimensions")
                    .and_then(Value::as_array)
                    .is_some_and(|sets| sets.iter().all(|s| names_present(Some(s))))
                && d.get("Metrics").and_then(Value::as_array).is_some_and(|ms| {
                    ms.iter().all(|m| {
                        m.get("Name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| doc.get(n).is_some())
                    })
                })
        })
}

/// One metric with one set of dimension values, aggregated over every document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub unit: Option<String>,
    /// Every value recorded (a counter's increments, a histogram's samples, a gauge's settings), in order.
    pub values: Vec<f64>,
}

impl Series {
    pub fn sum(&self) -> f64 {
        self.values.iter().sum()
    }

    pub fn last(&self) -> Option<f64> {
        self.values.last().copied()
    }

    /// The `q` quantile (0..=1) by nearest rank.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let mut v = self.values.clone();
        v.sort_by(f64::total_cmp);
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
        v.get(rank - 1).copied()
    }

    fn is_timing(&self) -> bool {
        self.unit.as_deref() == Some("Milliseconds")
    }
}

/// Series by metric name, then by dimensions (`k=v` pairs, sorted).
pub type Aggregate = BTreeMap<String, BTreeMap<Vec<(String, String)>, Series>>;

impl MetricsStore {
    /// Takes one line of a process's stdout: kept when it is an EMF document. `false` otherwise.
    pub fn ingest_line(&self, line: &str) -> bool {
        let line = line.trim();
        if !line.starts_with('{') || !line.contains("\"_aws\"") {
            return false;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(doc) if is_emf(&doc) => {
                if let Ok(mut docs) = self.docs.lock() {
                    docs.push(doc);
                }
                true
            }
            _ => false,
        }
    }

    /// Drains the in-process recorder into the store, as a Lambda's flush would print it.
    pub fn collect(&self) {
        let Some(c) = self.collector else { return };
        let mut out = Vec::new();
        if let Err(e) = c.flush(&mut out) {
            tracing::warn!(error = %e, "metrics not collected");
            return;
        }
        for line in String::from_utf8_lossy(&out).lines() {
            self.ingest_line(line);
        }
    }

    /// Every EMF document so far (the in-process recorder drained first).
    pub fn documents(&self) -> Vec<Value> {
        self.collect();
        self.docs.lock().map(|d| d.clone()).unwrap_or_default()
    }

    /// The documents as EMF lines, one JSON per line (what CloudWatch Logs would hold).
    pub fn emf_lines(&self) -> String {
        self.documents().iter().map(|d| format!("{d}\n")).collect()
    }

    /// Every metric's series, summed over the documents.
    pub fn aggregate(&self) -> Aggregate {
        let mut out = Aggregate::new();
        for doc in self.documents() {
            let Some(directives) = doc.pointer("/_aws/CloudWatchMetrics").and_then(Value::as_array) else {
                continue;
            };
            for d in directives {
                let mut dims: Vec<(String, String)> = d
                    .pointer("/Dimensions/0")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|k| (k.to_owned(), doc[k].as_str().unwrap_or_default().to_owned()))
                    .collect();
                dims.sort();
                for m in d["Metrics"].as_array().into_iter().flatten() {
                    let Some(name) = m["Name"].as_str() else { continue };
                    let series = out
                        .entry(name.to_owned())
                        .or_default()
                        .entry(dims.clone())
                        .or_default();
                    series.unit = m["Unit"].as_str().map(str::to_owned);
                    match &doc[name] {
                        Value::Array(vs) => series.values.extend(vs.iter().filter_map(Value::as_f64)),
                        v => series.values.extend(v.as_f64()),
                    }
                }
            }
        }
        out
    }

    /// Prometheus text exposition: a timing is a summary (p50, p90, p99, sum, count), a count a counter
    /// (the gauge `OperationsActive` its last value).
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        for (name, series) in self.aggregate() {
            let metric = format!("strato_{}", snake(&name));
            let timing = series.values().any(Series::is_timing);
            let gauge = name == vitals::OPERATIONS_ACTIVE;
            let (family, kind) = match (timing, gauge) {
                (true, _) => (format!("{metric}_milliseconds"), "summary"),
                (false, true) => (metric, "gauge"),
                (false, false) => (format!("{metric}_total"), "counter"),
            };
            let _ = writeln!(out, "# TYPE {family} {kind}");
            for (dims, s) in &series {
                let labels = |extra: Option<(&str, String)>| {
                    let all: Vec<String> = dims
                        .iter()
                        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                        .chain(extra.map(|(k, v)| format!("{k}=\"{v}\"")))
                        .collect();
                    if all.is_empty() {
                        String::new()
                    } else {
                        format!("{{{}}}", all.join(","))
                    }
                };
                if timing {
                    for q in [0.5, 0.9, 0.99] {
                        let v = s.quantile(q).unwrap_or(0.0);
                        let _ = writeln!(out, "{family}{} {v}", labels(Some(("quantile", q.to_string()))));
                    }
                    let _ = writeln!(out, "{family}_sum{} {}", labels(None), s.sum());
                    let _ = writeln!(out, "{family}_count{} {}", labels(None), s.values.len());
                } else if gauge {
                    let _ = writeln!(out, "{family}{} {}", labels(None), s.last().unwrap_or(0.0));
                } else {
                    let _ = writeln!(out, "{family}{} {}", labels(None), s.sum());
                }
            }
        }
        out
    }

    /// A one-screen summary: one line per metric and dimension values (timings: count, p50, max; counts:
    /// the total), at most `max_lines` lines.
    pub fn summary(&self, max_lines: usize) -> String {
        let agg = self.aggregate();
        let mut lines = Vec::new();
        for (name, series) in &agg {
            for (dims, s) in series {
                let dims = dims
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                let figure = if s.is_timing() {
                    format!(
                        "n={} p50={:.0}ms max={:.0}ms",
                        s.values.len(),
                        s.quantile(0.5).unwrap_or(0.0),
                        s.values.iter().copied().fold(0.0, f64::max)
                    )
                } else if name == vitals::OPERATIONS_ACTIVE {
                    format!("{}", s.last().unwrap_or(0.0))
                } else {
                    format!("{}", s.sum())
                };
                lines.push(format!("  {name:<20} {figure:<32} {dims}"));
            }
        }
        let mut out = format!(
            "Metrics (namespace {}), {} series:\n",
            vitals::NAMESPACE,
            lines.len()
        );
        let shown = lines.len().min(max_lines);
        for l in &lines[..shown] {
            out.push_str(l);
            out.push('\n');
        }
        if lines.len() > shown {
            let _ = writeln!(out, "  … {} more at GET /metrics", lines.len() - shown);
        }
        out
    }

    pub fn headline(&self) -> Headline {
        let agg = self.aggregate();
        let all = |name: &str| -> Series {
            let mut s = Series::default();
            for series in agg.get(name).into_iter().flat_map(BTreeMap::values) {
                s.unit.clone_from(&series.unit);
                s.values.extend(&series.values);
            }
            s
        };
        let mut operations = BTreeMap::new();
        for (dims, s) in agg.get(vitals::OPERATIONS_ENDED).into_iter().flatten() {
            if let Some((_, outcome)) = dims.iter().find(|(k, _)| k == "outcome") {
                *operations.entry(outcome.clone()).or_insert(0) += s.sum() as u64;
            }
        }
        let duration = all(vitals::OPERATION_DURATION);
        let wait = all(vitals::QUEUE_WAIT_DISPATCH);
        let max = |s: &Series| s.values.iter().copied().reduce(f64::max);
        Headline {
            operations,
            operation_ms_p50: duration.quantile(0.5),
            operation_ms_max: max(&duration),
            queue_wait_ms_p50: wait.quantile(0.5),
            queue_wait_ms_max: max(&wait),
            log_lines_shipped: all(vitals::LOG_LINES_SHIPPED).sum() as u64,
        }
    }
}

/// A few figures from the emitted EMF, for the demo's last lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headline {
    /// Operations ended, by outcome (`succeeded`, `failed`, `cancelled`).
    pub operations: BTreeMap<String, u64>,
    pub operation_ms_p50: Option<f64>,
    pub operation_ms_max: Option<f64>,
    /// Queue wait, created → runner started.
    pub queue_wait_ms_p50: Option<f64>,
    pub queue_wait_ms_max: Option<f64>,
    pub log_lines_shipped: u64,
}

impl std::fmt::Display for Headline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.1}s", v / 1000.0));
        let ops = self
            .operations
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(
            f,
            "operations        {}",
            if ops.is_empty() { "none" } else { &ops }
        )?;
        writeln!(
            f,
            "duration          p50 {}  max {}",
            ms(self.operation_ms_p50),
            ms(self.operation_ms_max)
        )?;
        writeln!(
            f,
            "queue wait        p50 {}  max {}",
            ms(self.queue_wait_ms_p50),
            ms(self.queue_wait_ms_max)
        )?;
        write!(f, "log lines shipped {}", self.log_lines_shipped)
    }
}

/// `OperationDuration` → `operation_duration`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A Prometheus label value: backslash, quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_of(lines: &[&str]) -> MetricsStore {
        let s = MetricsStore {
            collector: None,
            docs: Mutex::default(),
        };
        for l in lines {
            s.ingest_line(l);
        }
        s
    }

    const ENDED: &str = r#"{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Strato","Dimensions":[["kind","outcome"]],"Metrics":[{"Name":"OperationDuration","Unit":"Milliseconds"},{"Name":"OperationsEnded","Unit":"Count"}]}]},"kind":"create","outcome":"succeeded","OperationDuration":[1000.0,3000.0],"OperationsEnded":2}"#;

    #[test]
    fn only_emf_documents_are_kept_and_they_aggregate_by_dimensions() {
        let s = store_of(&[
            ENDED,
            "{\"level\":\"INFO\",\"fields\":{}}",
            r#"{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Strato","Dimensions":[[]],"Metrics":[{"Name":"Missing"}]}]}}"#,
        ]);
        assert_eq!(
            s.documents().len(),
            1,
            "a log line and a metric without its field are not EMF"
        );
        let h = s.headline();
        assert_eq!(h.operations, BTreeMap::from([("succeeded".to_owned(), 2)]));
        assert_eq!(
            (h.operation_ms_p50, h.operation_ms_max),
            (Some(1000.0), Some(3000.0))
        );
        let prom = s.prometheus();
        assert!(
            prom.contains(r#"strato_operations_ended_total{kind="create",outcome="succeeded"} 2"#),
            "{prom}"
        );
        assert!(
            prom.contains(
                r#"strato_operation_duration_milliseconds_count{kind="create",outcome="succeeded"} 2"#
            ),
            "{prom}"
        );
        assert!(s.summary(20).contains("OperationsEnded"));
    }
}

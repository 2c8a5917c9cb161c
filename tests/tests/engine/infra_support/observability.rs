//! The observability module on the applied state: every alarm the operations guide lists exists with its
//! metric and threshold, the dashboard's body is JSON and charts only metrics the code emits (and all of
//! them), and the saved "everything about operation X" query reads every function's and the runner's logs.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{FUNCTIONS, PREFIX, State, StateRes, json_attr};

/// The EMF metrics (namespace `Strato`) the code emits: `strato_domain::vitals`, where they are defined.
fn emitted() -> BTreeSet<&'static str> {
    strato_domain::vitals::all().collect()
}

/// AWS's own metrics the dashboard may chart.
const AWS_METRICS: &[(&str, &str)] = &[
    ("AWS/SQS", "ApproximateAgeOfOldestMessage"),
    ("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
    ("AWS/Lambda", "Errors"),
    ("AWS/Lambda", "Throttles"),
    ("AWS/Events", "MatchedEvents"),
];

fn alarm<'a>(state: &'a State, suffix: &str) -> &'a StateRes {
    state.by(
        "aws_cloudwatch_metric_alarm",
        "alarm_name",
        &format!("{PREFIX}-{suffix}"),
    )
}

/// A single-metric alarm watches `namespace`/`metric` with `dimensions`, over `threshold`.
fn assert_watches(a: &StateRes, namespace: &str, metric: &str, dimensions: &[(&str, &str)], threshold: f64) {
    let name = a.s("alarm_name");
    assert_eq!(
        (a.s("namespace"), a.s("metric_name")),
        (namespace, metric),
        "{name}"
    );
    let dims: BTreeMap<&str, &str> = a.values["dimensions"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(dims, dimensions.iter().copied().collect(), "{name}: dimensions");
    assert_eq!(
        a.values["threshold"].as_f64(),
        Some(threshold),
        "{name}: threshold"
    );
    assert_eq!(a.s("comparison_operator"), "GreaterThanThreshold", "{name}");
}

/// An alarm's name suffix, namespace, metric, dimensions and threshold.
type Expected<'a> = (String, &'a str, &'a str, Vec<(&'a str, String)>, f64);

/// Every alarm of the operations guide (infra/README.md), at the example's default thresholds, each
/// notifying the same actions as the DLQ alarms.
pub fn check_alarms(state: &State) {
    let rule = state.by(
        "aws_cloudwatch_event_rule",
        "name",
        &format!("{PREFIX}-runner-failed-to-start"),
    );
    let pattern = json_attr(rule, "event_pattern");
    assert_eq!(
        pattern["detail"]["stopCode"],
        serde_json::json!(["TaskFailedToStart"])
    );
    let cluster = state.all("aws_ecs_cluster").next().expect("the runner cluster");
    assert_eq!(
        pattern["detail"]["clusterArn"][0],
        cluster.s("arn"),
        "the runner's cluster"
    );
    let events_log = state.by(
        "aws_cloudwatch_log_group",
        "name",
        &format!("/aws/events/{PREFIX}-runner-failed-to-start"),
    );
    let target = state
        .all("aws_cloudwatch_event_target")
        .find(|t| t.s("rule") == rule.s("name"))
        .expect("a target of the failed-start rule");
    assert_eq!(
        target.s("arn"),
        events_log.s("arn"),
        "failed starts are kept in their log group"
    );

    let jobs = state
        .all("aws_sqs_queue")
        .find(|q| q.s("name") == format!("{PREFIX}-jobs.fifo"))
        .expect("the jobs queue");
    let mut expected: Vec<Expected> = vec![
        (
            "operation-stuck".into(),
            "Strato",
            "OldestOpenOperationAge",
            vec![],
            7200.0,
        ),
        (
            "jobs-queue-age".into(),
            "AWS/SQS",
            "ApproximateAgeOfOldestMessage",
            vec![("QueueName", jobs.s("name").to_owned())],
            600.0,
        ),
        (
            "runner-failed-to-start".into(),
            "AWS/Events",
            "MatchedEvents",
            vec![("RuleName", rule.s("name").to_owned())],
            0.0,
        ),
    ];
    for f in FUNCTIONS {
        for (suffix, metric) in [("errors", "Errors"), ("throttles", "Throttles")] {
            let dims = vec![("FunctionName", format!("{PREFIX}-{f}"))];
            expected.push((format!("{f}-{suffix}"), "AWS/Lambda", metric, dims, 0.0));
        }
    }
    for (suffix, namespace, metric, dims, threshold) in &expected {
        let dims: Vec<(&str, &str)> = dims.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_watches(alarm(state, suffix), namespace, metric, &dims, *threshold);
        if *namespace == "Strato" {
            assert!(
                emitted().contains(metric),
                "{suffix} watches {metric}, which nothing emits"
            );
        }
    }

    // The failure rate: metric math over OperationOutcomes (OperationsEnded by outcome alone), the expression the alarm returns.
    let rate = alarm(state, "operations-failure-rate");
    assert_eq!(rate.values["threshold"].as_f64(), Some(25.0));
    let queries = rate.values["metric_query"]
        .as_array()
        .expect("metric_query blocks");
    let mut outcomes = BTreeSet::new();
    let mut returned = Vec::new();
    for q in queries {
        if q["return_data"] == true {
            returned.push(q["expression"].as_str().unwrap_or_default().to_owned());
        }
        if let Some(m) = q["metric"].as_array().and_then(|m| m.first()) {
            assert_eq!(
                (m["namespace"].as_str(), m["metric_name"].as_str()),
                (Some("Strato"), Some("OperationOutcomes"))
            );
            assert_eq!(m["stat"], "Sum");
            outcomes.insert(m["dimensions"]["outcome"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert_eq!(
        outcomes,
        ["cancelled", "failed", "succeeded"].map(String::from).into()
    );
    assert_eq!(returned.len(), 1, "one returned expression: {queries:?}");
    assert!(
        returned[0].contains("100 * FILL(ended_failed, 0) /") && returned[0].contains(">= 4"),
        "failed / ended, in percent, with enough ended: {}",
        returned[0]
    );

    // The DLQ alarms (data module) are still there, and every alarm notifies the same actions.
    let dlq = state
        .all("aws_cloudwatch_metric_alarm")
        .find(|a| a.s("alarm_name").ends_with("-dlq-not-empty"))
        .expect("the DLQ alarms");
    for a in state.all("aws_cloudwatch_metric_alarm") {
        assert_eq!(
            a.values["alarm_actions"],
            dlq.values["alarm_actions"],
            "{}",
            a.s("alarm_name")
        );
        assert_eq!(
            a.values["ok_actions"],
            dlq.values["alarm_actions"],
            "{}",
            a.s("alarm_name")
        );
    }
}

/// The metrics a dashboard body charts: (namespace, name), from plain metric arrays and from Metrics
/// Insights expressions (`SELECT FN(Name) FROM SCHEMA("Namespace", …)`).
pub fn charted(body: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for w in body["widgets"].as_array().expect("widgets") {
        for row in w["properties"]["metrics"].as_array().into_iter().flatten() {
            let row = row.as_array().expect("a metrics row is an array");
            match row.first() {
                Some(Value::String(ns)) => {
                    let name = row
                        .get(1)
                        .and_then(Value::as_str)
                        .expect("namespace, then a metric name");
                    out.insert((ns.clone(), name.to_owned()));
                }
                Some(Value::Object(o)) => {
                    let expr = o["expression"].as_str().unwrap_or_default();
                    if let Some(select) = expr.strip_prefix("SELECT ") {
                        let (call, rest) = select.split_once(" FROM SCHEMA(\"").expect("FROM SCHEMA(\"…\"");
                        let name = call
                            .split_once('(')
                            .and_then(|(_, n)| n.strip_suffix(')'))
                            .expect("FN(Name)");
                        let ns = rest
                            .split_once('"')
                            .map(|(ns, _)| ns)
                            .expect("a quoted namespace");
                        out.insert((ns.to_owned(), name.to_owned()));
                    }
                }
                _ => panic!("an empty metrics row in {}", w["properties"]["title"]),
            }
        }
    }
    out
}

/// The dashboard's body is JSON; it charts every metric the code emits and nothing else (of Strato's), plus
/// the AWS metrics the alarms watch.
pub fn check_dashboard(state: &State) {
    let d = state.by(
        "aws_cloudwatch_dashboard",
        "dashboard_name",
        &format!("{PREFIX}-strato"),
    );
    let body = json_attr(d, "dashboard_body");
    let charted = charted(&body);
    let strato: BTreeSet<&str> = charted
        .iter()
        .filter(|(ns, _)| ns == "Strato")
        .map(|(_, n)| n.as_str())
        .collect();
    let emitted = emitted();
    let unknown: Vec<&&str> = strato.iter().filter(|n| !emitted.contains(*n)).collect();
    assert!(
        unknown.is_empty(),
        "the dashboard charts metrics nothing emits: {unknown:?}"
    );
    let missing: Vec<&&str> = emitted.iter().filter(|n| !strato.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "emitted metrics the dashboard does not chart: {missing:?}"
    );
    for (ns, name) in charted.iter().filter(|(ns, _)| ns != "Strato") {
        assert!(
            AWS_METRICS.contains(&(ns.as_str(), name.as_str())),
            "unexpected AWS metric on the dashboard: {ns} {name}"
        );
    }
    for (ns, name) in AWS_METRICS {
        assert!(
            charted.contains(&(ns.to_string(), name.to_string())),
            "{ns} {name} is not charted"
        );
    }
    let text = body.to_string();
    for f in FUNCTIONS {
        assert!(
            text.contains(&format!("\"{PREFIX}-{f}\"")),
            "function {f} is not charted"
        );
    }
}

/// The saved query (from a plan: moto has no query definitions) reads the log groups of every function and
/// of the runner, and filters on `operation_id`.
pub fn check_operation_query(planned: &State, applied: &State) {
    let q = planned
        .all("aws_cloudwatch_query_definition")
        .next()
        .expect("the saved query in the plan");
    let groups: BTreeSet<&str> = q.values["log_group_names"]
        .as_array()
        .expect("log_group_names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut expected: BTreeSet<String> = FUNCTIONS
        .iter()
        .map(|f| format!("/aws/lambda/{PREFIX}-{f}"))
        .collect();
    expected.insert(format!("/ecs/{PREFIX}-runner"));
    assert_eq!(
        groups,
        expected.iter().map(String::as_str).collect(),
        "the query's log groups"
    );
    for g in &groups {
        applied.by("aws_cloudwatch_log_group", "name", g);
    }
    let text = q.s("query_string");
    assert!(text.contains("filter operation_id = \""), "{text}");
    for field in ["tenant_id", "cluster_id", "trace_id"] {
        assert!(text.contains(field), "the query shows {field}: {text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charted_reads_plain_metrics_and_metrics_insights_queries() {
        let body = serde_json::json!({"widgets": [
            {"properties": {"title": "a", "metrics": [
                ["Strato", "LockHandoffLatency", {"stat": "p90"}],
                ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", "q", {}],
            ]}},
            {"properties": {"title": "b", "metrics": [[{"id": "q1",
                "expression": "SELECT SUM(OperationsEnded) FROM SCHEMA(\"Strato\", kind, outcome) GROUP BY outcome"}]]}},
            {"properties": {"title": "c", "metrics": [[{"id": "e", "expression": "100 * a / b"}]]}},
        ]});
        let got: Vec<(String, String)> = charted(&body).into_iter().collect();
        let want = [
            ("AWS/SQS", "ApproximateAgeOfOldestMessage"),
            ("Strato", "LockHandoffLatency"),
            ("Strato", "OperationsEnded"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()));
        assert_eq!(got, want);
    }
}

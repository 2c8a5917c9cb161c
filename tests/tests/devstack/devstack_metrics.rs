//! Metrics end to end through devstack: one create → delete of the one-resource `fixture-tiny` template with
//! the real runner and engine (what is measured is Strato's, not the template's); devstack's store then holds valid CloudWatch EMF documents (namespace `Strato`, dimension
//! sets and metrics with name and unit, every one present as a field) for the operation's duration and
//! outcome (the in-process status function), the queue wait (the dispatcher, and the runner's own lines
//! from its stdout) and the log lines the runner shipped; and the HTTP gateway serves them.

use crate::devstack_support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strato_devstack::client::Client;

/// Every EMF directive of `doc` (structure checked independently of devstack's own `is_emf`), as
/// (metric name, unit, dimension names); panics on a malformed document.
fn directives(doc: &Value) -> Vec<(String, String, Vec<String>)> {
    let aws = doc["_aws"]
        .as_object()
        .unwrap_or_else(|| panic!("no _aws: {doc}"));
    assert!(aws["Timestamp"].is_u64(), "{doc}");
    let mut out = Vec::new();
    for d in aws["CloudWatchMetrics"].as_array().expect("CloudWatchMetrics") {
        assert_eq!(d["Namespace"], "Strato", "{doc}");
        let sets = d["Dimensions"].as_array().expect("Dimensions");
        assert_eq!(sets.len(), 1, "one dimension set per document: {doc}");
        let dims: Vec<String> = sets[0]
            .as_array()
            .expect("a dimension set")
            .iter()
            .map(|n| n.as_str().expect("a dimension name").to_owned())
            .collect();
        let mut dims = dims;
        dims.sort();
        for n in &dims {
            assert!(
                doc[n].is_string(),
                "dimension {n} has its value as a field: {doc}"
            );
        }
        for m in d["Metrics"].as_array().expect("Metrics") {
            let name = m["Name"].as_str().expect("Name").to_owned();
            let unit = m["Unit"].as_str().expect("Unit").to_owned();
            let v = &doc[&name];
            assert!(
                v.is_number() || v.as_array().is_some_and(|a| a.iter().all(Value::is_number)),
                "metric {name} has its value as a field: {doc}"
            );
            out.push((name, unit, dims.clone()));
        }
    }
    out
}

fn has(seen: &[(String, String, Vec<String>)], name: &str, unit: &str, dims: &[&str]) -> bool {
    seen.iter().any(|(n, u, d)| n == name && u == unit && d == dims)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_create_and_delete_leave_emf_metrics_in_the_store_and_on_the_endpoint() {
    let fixtures = devstack_support::fixtures();
    let stack = devstack_support::start(strato_devstack::DevstackConfig {
        extra_templates: vec![(fixtures.join("tiny"), fixtures)],
        ..devstack_support::config("mx").await
    })
    .await;
    let api = Client::new(&stack.endpoints.http_api).with_token(stack.token("acme"));
    let (cluster, op, _) = api
        .create_cluster(&json!({
            "name": "metered", "template": {"name": "fixture-tiny", "version": "0.1.0"},
            "provider": "aws", "region": "us-east-1"
        }))
        .await
        .unwrap();
    let done = api.wait_operation(&op, Duration::from_secs(300)).await.unwrap();
    assert_eq!(done["status"], "succeeded", "{done}");
    let r = api.delete(&format!("/v1/clusters/{cluster}")).await.unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let del = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let done = api.wait_operation(&del, Duration::from_secs(300)).await.unwrap();
    assert_eq!(done["status"], "succeeded", "{done}");

    // The runner prints its metrics as it exits, just after its final event: wait for them.
    let want: [(&str, &str, &[&str]); 7] = [
        (
            "OperationDuration",
            "Milliseconds",
            &["kind", "outcome", "provider", "template"],
        ),
        (
            "OperationsEnded",
            "Count",
            &["kind", "outcome", "provider", "template"],
        ),
        ("QueueWaitDispatch", "Milliseconds", &["kind"]),
        ("QueueWaitStart", "Milliseconds", &["kind"]),
        ("QueueWaitFirstLog", "Milliseconds", &["kind"]),
        ("StepDuration", "Milliseconds", &["kind", "outcome", "step"]),
        ("LogLinesShipped", "Count", &[]),
    ];
    let store = strato_devstack::metrics::store();
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = loop {
        let docs = store.documents();
        let seen: Vec<_> = docs.iter().flat_map(directives).collect();
        let missing: Vec<&str> = want
            .iter()
            .filter(|(n, u, d)| !has(&seen, n, u, d))
            .map(|(n, _, _)| *n)
            .collect();
        if missing.is_empty() {
            break seen;
        }
        assert!(Instant::now() < deadline, "missing {missing:?}; seen {seen:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(!seen.is_empty());
    let headline = strato_devstack::metrics::headline();
    assert!(
        headline.operations.get("succeeded").copied().unwrap_or(0) >= 2,
        "{headline:?}"
    );
    assert!(headline.operation_ms_max.unwrap_or(0.0) > 0.0, "{headline:?}");
    assert!(headline.log_lines_shipped > 0, "{headline:?}");
    // Both operations, by their labels.
    let ended = store.aggregate()["OperationsEnded"].clone();
    for kind in ["create", "delete"] {
        assert!(
            ended
                .keys()
                .any(|dims| dims.contains(&("kind".into(), kind.into()))
                    && dims.contains(&("outcome".into(), "succeeded".into()))
                    && dims.contains(&("template".into(), "fixture-tiny".into()))
                    && dims.contains(&("provider".into(), "aws".into()))),
            "{kind}: {ended:?}"
        );
    }

    // The gateway serves the same: EMF lines and Prometheus text, without a token.
    let http = reqwest::Client::new();
    let emf = http
        .get(format!("{}/metrics/emf", stack.endpoints.http_api))
        .send()
        .await
        .unwrap();
    assert_eq!(emf.status(), 200);
    let served: Vec<_> = emf
        .text()
        .await
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("one JSON document per line"))
        .flat_map(|d| directives(&d))
        .collect();
    for (n, u, d) in want {
        assert!(has(&served, n, u, d), "{n} not served");
    }
    let prom = http
        .get(format!("{}/metrics", stack.endpoints.http_api))
        .send()
        .await
        .unwrap();
    assert_eq!(prom.status(), 200);
    let prom = prom.text().await.unwrap();
    assert!(
        prom.contains("# TYPE strato_operation_duration_milliseconds summary"),
        "{prom}"
    );
    assert!(
        prom.lines()
            .any(|l| l.starts_with("strato_operations_ended_total{")
                && l.contains("kind=\"delete\"")
                && l.contains("outcome=\"succeeded\"")),
        "{prom}"
    );
    assert!(prom.contains("strato_log_lines_shipped_total "), "{prom}");
    stack.shutdown(Duration::from_secs(10)).await;
}

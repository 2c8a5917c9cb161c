//! Observability end to end (issue 18): a cluster's create → update → delete through devstack's endpoints,
//! with every log line of every component captured (`strato_devstack::capture`: the in-process functions'
//! events with their span fields, the runners' JSON lines). Asserts that each line about an operation
//! carries that operation's `operation_id` and `tenant_id`, that lines about no operation are only the kinds
//! named below, that one trace links each operation's spans from the API request through the dispatcher and
//! the runner to status handling the runner's last event, and that the sensitive variable's value appears
//! in no log line at all.

use crate::devstack_support;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use strato_devstack::capture::{self, Capture, Line, str_of};
use strato_devstack::client::Client;
use strato_domain::telemetry::{TRACEPARENT_ATTRIBUTE, Traceparent, fields};

const TENANT: &str = "acme";
/// The sensitive variable's value: must never be logged.
const SECRET: &str = "hunter2-0bs3rv4b1l1ty-s3cr3t";

fn get<'a>(l: &'a Line, k: &str) -> Option<&'a str> {
    str_of(l, k)
}

fn show(l: &Line) -> String {
    Value::Object(l.clone()).to_string()
}

/// Every line a component emitted must be about an operation (carrying its id and tenant), or be one of
/// the kinds that are about none, each named here with the reason.
fn assert_lines_carry_their_operation(lines: &[Line], ops: &BTreeSet<String>, cluster: &str) {
    let mut checked = 0;
    for l in lines {
        let component = get(l, fields::COMPONENT).unwrap_or_default();
        // devstack's own emulation (API Gateway, SQS mappings, ECS/Fargate, EventBridge): in AWS those are
        // the services' logs, not Strato's; its lines name operations for the reader, without the rest.
        if component == capture::DEVSTACK {
            continue;
        }
        if let Some(op) = get(l, fields::OPERATION_ID) {
            // Any operation's line names its tenant; ours are all acme's.
            assert!(
                get(l, fields::TENANT_ID).is_some(),
                "a line without its tenant: {}",
                show(l)
            );
            if ops.contains(op) {
                assert_eq!(get(l, fields::TENANT_ID), Some(TENANT), "{}", show(l));
                checked += 1;
            }
            continue;
        }
        let message = get(l, "message").unwrap_or_default();
        let about_none = match component {
            // The api's reads that name no operation: polling the cluster (its id is on the line), and
            // trading the token for a WebSocket ticket. Both are the tenant's.
            "api" => {
                get(l, fields::TENANT_ID) == Some(TENANT)
                    && (get(l, fields::CLUSTER_ID) == Some(cluster)
                        || get(l, "path") == Some("/v1/ws-tickets")
                        || (message == "span end" && get(l, "path").is_none()))
            }
            // A WebSocket connection's own requests ($connect, $disconnect): the ends of their spans.
            "ws" => message == "span end",
            // A tick's summary is about all operations at once.
            "scheduler" => message == "scheduler run",
            _ => false,
        };
        assert!(about_none, "a {component} line about no operation: {}", show(l));
    }
    assert!(checked > 0);
}

/// One trace links `op`'s spans: the API request that created it, the dispatcher's job, the runner's run
/// and status handling the runner's events (the last included), each the child of the one before.
fn assert_one_trace(capture: &Capture, op: &str, expected_trace: Option<&Traceparent>) {
    let spans: Vec<Line> = capture
        .spans()
        .into_iter()
        .filter(|s| get(s, fields::OPERATION_ID) == Some(op))
        .collect();
    let of = |component: &str| -> Vec<&Line> {
        spans
            .iter()
            .filter(|s| get(s, fields::COMPONENT) == Some(component))
            .collect()
    };
    // The request that created the operation (its kind recorded); the api's reads of it are their own
    // requests with their own traces, as are a WebSocket client's requests.
    let created: Vec<&Line> = of("api")
        .into_iter()
        .filter(|s| get(s, fields::OPERATION_KIND).is_some())
        .collect();
    assert_eq!(created.len(), 1, "{op}: {created:#?}");
    let api = created[0];
    let trace = get(api, fields::TRACE_ID).unwrap();
    if let Some(tp) = expected_trace {
        assert_eq!(trace, tp.trace_id(), "the caller's traceparent is continued");
        assert_eq!(get(api, fields::PARENT_SPAN_ID), Some(tp.span_id().as_str()));
    }
    for s in spans
        .iter()
        .filter(|s| !matches!(get(s, fields::COMPONENT), Some("api" | "ws")))
    {
        assert_eq!(
            get(s, fields::TRACE_ID),
            Some(trace),
            "{op}: a span in another trace: {}",
            show(s)
        );
    }
    let api_id = get(api, fields::SPAN_ID).unwrap();
    let dispatcher: Vec<&Line> = of("dispatcher")
        .into_iter()
        .filter(|s| get(s, fields::PARENT_SPAN_ID) == Some(api_id))
        .collect();
    assert!(
        !dispatcher.is_empty(),
        "{op}: no dispatcher span under the request\n{}",
        capture.span_tree(op)
    );
    let runs = of(capture::RUNNER);
    assert_eq!(runs.len(), 1, "{op}: {runs:#?}");
    let run = runs[0];
    assert!(
        dispatcher
            .iter()
            .any(|d| get(d, fields::SPAN_ID) == get(run, fields::PARENT_SPAN_ID)),
        "{op}: the run is not the child of a dispatcher span\n{}",
        capture.span_tree(op)
    );
    let run_id = get(run, fields::SPAN_ID).unwrap();
    let status_under_run = of("status")
        .into_iter()
        .filter(|s| get(s, fields::PARENT_SPAN_ID) == Some(run_id))
        .count();
    assert!(
        status_under_run > 0,
        "{op}: no status span under the run\n{}",
        capture.span_tree(op)
    );
    // The runner's last event, in the trace too.
    let lines = capture.lines();
    let last = lines
        .iter()
        .rfind(|l| get(l, fields::OPERATION_ID) == Some(op) && get(l, "message") == Some("final event sent"))
        .unwrap_or_else(|| panic!("{op}: the runner logged no final event"));
    assert_eq!(get(last, fields::TRACE_ID), Some(trace));
    assert_eq!(get(last, fields::COMPONENT), Some(capture::RUNNER));
    // Logged as fields, not as a Debug dump of the event.
    assert_eq!(get(last, "event"), Some("succeeded"), "{}", show(last));
}

/// `op`'s X-Ray segments: the operation's own are one trace (the caller's, in X-Ray's form) and one tree —
/// the API request's segment under the caller's span, every other under a segment of the set — with the
/// dispatcher's job, the runner's run and status's handling of its events in it; the others are requests
/// about the operation that have traces of their own (reads, WebSocket subscriptions).
fn assert_xray_trace(segments: &[Value], op: &str, caller: &Traceparent) {
    let show = || serde_json::to_string_pretty(segments).unwrap();
    let (ours, others): (Vec<&Value>, Vec<&Value>) = segments
        .iter()
        .partition(|s| s["trace_id"] == caller.xray_trace_id());
    for s in &others {
        let unit = s["annotations"]["unit"].as_str().unwrap_or_default();
        assert!(["api_request", "ws"].contains(&unit), "a stray segment {s}");
    }
    let ids: BTreeSet<&str> = ours.iter().filter_map(|s| s["id"].as_str()).collect();
    for s in &ours {
        let parent = s["parent_id"].as_str().unwrap_or_default();
        assert!(
            parent == caller.span_id() || ids.contains(parent),
            "segment {} hangs under {parent}, not in the trace: {}",
            s["id"],
            show()
        );
        assert!(s["end_time"].as_f64() >= s["start_time"].as_f64(), "{s}");
    }
    let named = |name: &str, unit: &str| {
        ours.iter().any(|s| {
            s["name"] == name && s["annotations"]["unit"] == unit && s["annotations"]["operation_id"] == op
        })
    };
    assert!(named("api", "api_request"), "{}", show());
    assert!(named("dispatcher", "sqs_record"), "{}", show());
    assert!(named(strato_telemetry::RUNNER_SERVICE, "run"), "{}", show());
    assert!(named("status", "sqs_record"), "{}", show());
    assert!(!show().contains(SECRET), "the sensitive value reached X-Ray");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_of_a_clusters_life_carries_its_operation_and_one_trace_links_request_to_runner() {
    let capture = capture::install().expect("this test installs the process's only subscriber");
    let fixtures = devstack_support::fixtures();
    let stack = devstack_support::start(strato_devstack::DevstackConfig {
        templates_root: None,
        extra_templates: vec![(fixtures.join("secret-policy"), fixtures)],
        // The sweeper runs, so its lines are among those checked.
        sweep_rate: Duration::from_secs(5),
        ..devstack_support::config("obs").await
    })
    .await;
    let token = stack.token(TENANT);
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());

    // The create comes with the caller's trace context, which the whole operation continues.
    let caller = Traceparent::new_root();
    let r = reqwest::Client::new()
        .post(format!("{}/v1/clusters", stack.endpoints.http_api))
        .bearer_auth(&token)
        .header(TRACEPARENT_ATTRIBUTE, caller.to_string())
        .json(&json!({
            "name": "observed",
            "template": {"name": "fixture-secret-policy", "version": "0.1.0"},
            "provider": "aws",
            "region": "us-east-1",
            "variables": {"db_password": SECRET}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.unwrap();
    let cluster = body["cluster"]["id"].as_str().unwrap().to_owned();
    let create = body["operation"]["id"].as_str().unwrap().to_owned();
    let mut terraform_lines = Vec::new();
    let w = devstack_support::follow(&stack, &token, &create).await;
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{:?}", w.states);
    terraform_lines.extend(w.lines.into_values().map(|l| l.text));
    api.wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();

    let r = api
        .patch(
            &format!("/v1/clusters/{cluster}"),
            &json!({"variables": {"note": "second"}}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let update = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let w = devstack_support::follow(&stack, &token, &update).await;
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{:?}", w.states);
    terraform_lines.extend(w.lines.into_values().map(|l| l.text));
    api.wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();

    let r = api.delete(&format!("/v1/clusters/{cluster}")).await.unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let delete = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let w = devstack_support::follow(&stack, &token, &delete).await;
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{:?}", w.states);
    terraform_lines.extend(w.lines.into_values().map(|l| l.text));
    api.wait_cluster_state(&cluster, &["DELETED"], Duration::from_secs(60))
        .await
        .unwrap();
    // The status function's handling of each runner's stop comes after the last log line.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The same tree is what devstack serves for one operation.
    let served = reqwest::get(format!("{}/traces/{create}", stack.endpoints.http_api))
        .await
        .expect("GET /traces/{id}");
    assert_eq!(served.status(), 200);
    let served = served.text().await.unwrap();
    let first = capture
        .span_tree(&create)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(
        served.starts_with(&first)
            && ["dispatcher", "runner", "status"]
                .iter()
                .all(|c| served.contains(c)),
        "{served}"
    );
    // The same trace reached the X-Ray daemon as segments (the exporter's path in AWS).
    let xray = reqwest::get(format!("{}/traces/{create}/xray", stack.endpoints.http_api))
        .await
        .expect("GET /traces/{id}/xray");
    assert_eq!(xray.status(), 200);
    let segments: Vec<Value> = xray.json().await.unwrap();
    assert_xray_trace(&segments, &create, &caller);
    stack.shutdown(Duration::from_secs(10)).await;

    let lines = capture.lines();
    let components: BTreeSet<&str> = lines.iter().filter_map(|l| get(l, fields::COMPONENT)).collect();
    for c in ["api", "dispatcher", "status", "scheduler", capture::RUNNER] {
        assert!(components.contains(c), "no line of {c}: {components:?}");
    }
    let ops: BTreeSet<String> = [&create, &update, &delete].map(|o| o.to_owned()).into();
    assert_lines_carry_their_operation(&lines, &ops, &cluster);
    assert_one_trace(&capture, &create, Some(&caller));
    assert_one_trace(&capture, &update, None);
    assert_one_trace(&capture, &delete, None);
    let create_trace = capture.trace_ids(&create);
    assert!(
        !capture
            .trace_ids(&update)
            .iter()
            .any(|t| create_trace.contains(t))
    );
    println!("{}", capture.span_tree(&create));

    // The sensitive value: in no line of any component, nor in the Terraform log the tenant receives.
    for l in &lines {
        assert!(
            !show(l).contains(SECRET),
            "the sensitive value was logged: {}",
            show(l)
        );
    }
    assert!(!terraform_lines.is_empty());
    for t in &terraform_lines {
        assert!(
            !t.contains(SECRET),
            "the sensitive value is in the Terraform log: {t}"
        );
    }
}

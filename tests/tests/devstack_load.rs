//! Load through devstack's HTTP API: N clusters (`STRATO_LOAD_CLUSTERS`, default 20; the figure is
//! 100, see README "Performance") from 5 tenants at once, each tenant allowed 3 concurrent operations, with a
//! one-resource template and the real runner and engine. All must reach ACTIVE, no tenant may ever have more
//! than 3 runners at a time (measured from the emulated Fargate's task records, not from Strato's own
//! bookkeeping), and nothing may be lost: one runner per operation, every operation succeeded, no slot or
//! lock left, no message in a dead-letter queue. Prints the time taken and the peak concurrent runners.

mod devstack_support;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use devstack_support::fixtures;
use serde_json::json;
use strato_aws::store::{Quotas, Store};
use strato_devstack::DevstackConfig;
use strato_devstack::client::Client;
use strato_devstack::fargate::TaskRecord;

const TENANTS: usize = 5;
const TENANT_LIMIT: u32 = 3;
const DEFAULT_CLUSTERS: usize = 20;

fn clusters_wanted() -> usize {
    match std::env::var("STRATO_LOAD_CLUSTERS") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("STRATO_LOAD_CLUSTERS={v:?} is not a number of clusters")),
        _ => DEFAULT_CLUSTERS,
    }
}

/// Most intervals open at once (an interval still open counts until now).
fn peak(intervals: &[(Instant, Option<Instant>)]) -> usize {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    let now = Instant::now();
    for (start, end) in intervals {
        edges.push((*start, 1));
        edges.push((end.unwrap_or(now), -1));
    }
    // At equal instants an end comes before a start: a runner that exits as the next starts is not overlap.
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut open, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        open += d;
        most = most.max(open);
    }
    most as usize
}

#[tokio::test(flavor = "multi_thread")]
async fn many_clusters_from_five_tenants_reach_active_within_their_concurrency_limits() {
    let n = clusters_wanted();
    assert!(n >= TENANTS, "STRATO_LOAD_CLUSTERS must be at least {TENANTS}");
    let fixtures = fixtures();
    let stack = devstack_support::start(DevstackConfig {
        templates_root: None,
        extra_templates: vec![(fixtures.join("tiny"), fixtures)],
        // Lambda polls a standard queue with five concurrent batches from the start and scales out; two
        // pollers (devstack's default) would make the events queue the bottleneck here.
        sqs_concurrency: 8,
        ..devstack_support::config("ld").await
    })
    .await;
    let store = Store::new(stack.env.aws.dynamodb.clone(), &stack.env.names);
    let per_tenant = n.div_ceil(TENANTS) as u32;
    let tenants: Vec<String> = (0..TENANTS).map(|i| format!("load-{i}")).collect();
    for t in &tenants {
        let q = Quotas {
            max_clusters: per_tenant,
            max_open_operations: per_tenant,
            max_concurrent_operations: TENANT_LIMIT,
        };
        store.set_quotas(&t.parse().unwrap(), &q).await.unwrap();
    }
    let clients: Vec<Client> = tenants
        .iter()
        .map(|t| Client::new(&stack.endpoints.http_api).with_token(stack.token(t)))
        .collect();

    // All at once: every create in flight together.
    let t0 = Instant::now();
    let creates = (0..n).map(|i| {
        let api = clients[i % TENANTS].clone();
        async move {
            let spec = json!({
                "name": format!("load-{i}"),
                "template": {"name": "fixture-tiny", "version": "0.1.0"},
                "provider": "aws",
                "region": "us-east-1",
                "variables": {}
            });
            let (cluster, op, _) = api.create_cluster(&spec).await.expect("create accepted");
            (i % TENANTS, cluster, op)
        }
    });
    let created: Vec<(usize, String, String)> = futures_util::future::join_all(creates).await;
    let accepted = t0.elapsed();

    // Wait until every cluster is ACTIVE (one list per tenant per round; a FAILED one ends the test).
    let timeout = Duration::from_secs(600 + 20 * n as u64);
    let mut active: BTreeMap<usize, usize> = BTreeMap::new();
    let mut next_report = Duration::from_secs(30);
    loop {
        active.clear();
        for (t, api) in clients.iter().enumerate() {
            let r = api.get("/v1/clusters?limit=100").await.unwrap();
            assert_eq!(r.status, 200, "{}", r.text);
            for c in r.body["clusters"].as_array().unwrap() {
                match c["state"].as_str() {
                    Some("ACTIVE") => *active.entry(t).or_default() += 1,
                    Some("FAILED") => panic!("a cluster failed under load: {c}"),
                    _ => {}
                }
            }
        }
        let done = active.values().sum::<usize>();
        if done == n {
            break;
        }
        if t0.elapsed() >= next_report {
            next_report += Duration::from_secs(30);
            println!(
                "load: {:>4.0} s: {done}/{n} ACTIVE, {} runners started, {} running",
                t0.elapsed().as_secs_f64(),
                stack
                    .fargate_stats
                    .started
                    .load(std::sync::atomic::Ordering::Relaxed),
                stack
                    .fargate_stats
                    .running
                    .load(std::sync::atomic::Ordering::Relaxed)
            );
        }
        assert!(
            t0.elapsed() < timeout,
            "after {} s only {active:?} of {n} clusters are ACTIVE",
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let all_active = t0.elapsed();

    // Nothing lost: every operation succeeded, with exactly one runner each, which exited 0.
    let tasks = stack.fargate_stats.tasks();
    let mut by_op: HashMap<&str, Vec<&TaskRecord>> = HashMap::new();
    for t in &tasks {
        by_op
            .entry(t.operation_id.as_deref().unwrap_or("-"))
            .or_default()
            .push(t);
    }
    for (t, _, op) in &created {
        let o = clients[*t].get(&format!("/v1/operations/{op}")).await.unwrap();
        assert_eq!(o.body["status"], "succeeded", "{}", o.text);
        let runs = by_op.get(op.as_str()).map_or(0, Vec::len);
        assert_eq!(runs, 1, "operation {op} had {runs} runners");
    }
    assert_eq!(tasks.len(), n, "one runner per operation and no other");
    // Each runner has sent its final report; wait for the processes to be gone before measuring.
    let deadline = Instant::now() + Duration::from_secs(60);
    while stack.fargate_stats.tasks().iter().any(|t| t.ended_at.is_none()) {
        assert!(
            Instant::now() < deadline,
            "runners still running after their operations ended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let tasks = stack.fargate_stats.tasks();
    assert!(
        tasks.iter().all(|t| t.exit_code == Some(0)),
        "{:?}",
        tasks.iter().map(|t| t.exit_code).collect::<Vec<_>>()
    );

    // Per-tenant limits, from when the runner processes actually ran.
    let tenant_of: HashMap<&str, usize> = created.iter().map(|(t, _, op)| (op.as_str(), *t)).collect();
    let interval = |t: &TaskRecord| (t.started_at, t.ended_at);
    let overall = peak(&tasks.iter().map(interval).collect::<Vec<_>>());
    let mut per: Vec<usize> = Vec::new();
    for t in 0..TENANTS {
        let mine: Vec<_> = tasks
            .iter()
            .filter(|r| tenant_of.get(r.operation_id.as_deref().unwrap_or("-")) == Some(&t))
            .map(interval)
            .collect();
        per.push(peak(&mine));
    }
    for (t, p) in per.iter().enumerate() {
        assert!(
            *p <= TENANT_LIMIT as usize,
            "tenant {} had {p} runners at once (limit {TENANT_LIMIT})",
            tenants[t]
        );
    }
    for t in &tenants {
        let slots = store.tenant_slots(&t.parse().unwrap()).await.unwrap();
        assert!(slots.is_empty(), "{t} still holds slots {slots:?}");
    }
    for logical in ["jobs", "events", "logs", "webhooks"] {
        let url = stack
            .env
            .aws
            .sqs
            .get_queue_url()
            .queue_name(stack.env.names.dlq(logical))
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let attrs = stack
            .env
            .aws
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .unwrap();
        let depth = attrs
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages))
            .cloned()
            .unwrap_or_default();
        assert_eq!(depth, "0", "{logical} dead-letter queue");
    }

    println!(
        "load: {n} clusters from {TENANTS} tenants (limit {TENANT_LIMIT} each): all accepted in {:.1} s, \
         all ACTIVE in {:.1} s; peak concurrent runners {overall} overall, per tenant {per:?}",
        accepted.as_secs_f64(),
        all_active.as_secs_f64()
    );
    stack.shutdown(Duration::from_secs(30)).await;
}

#[test]
fn peak_counts_overlap_and_not_hand_offs() {
    let t = Instant::now();
    let s = |ms: u64| t + Duration::from_millis(ms);
    assert_eq!(peak(&[(s(0), Some(s(10))), (s(10), Some(s(20)))]), 1);
    assert_eq!(
        peak(&[(s(0), Some(s(10))), (s(5), Some(s(20))), (s(6), Some(s(30)))]),
        3
    );
    assert_eq!(peak(&[]), 0);
}

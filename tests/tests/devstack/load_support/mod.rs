//! What the load test (`devstack_load.rs`) and the load benchmark (`examples/bench_load`) share: N clusters
//! from a one-resource template created at once through devstack's HTTP API by 5 tenants limited to 3
//! concurrent operations each, the wait for all of them, the checks that nothing was lost, and the figures
//! computed from the emulated Fargate's task records (busy slots over time, hand-offs).
#![allow(dead_code)] // the test and the bench use different subsets

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use serde_json::json;
use strato_aws::store::{Quotas, Store};
use strato_devstack::client::Client;
use strato_devstack::fargate::TaskRecord;
use strato_devstack::{Devstack, DevstackConfig, Plugin};

pub const TENANTS: usize = 5;
pub const TENANT_LIMIT: u32 = 3;

/// The load's stack: `base` (devstack's test defaults on the process's moto) with the tiny template, and
/// SQS pollers as Lambda starts them.
pub fn config(base: DevstackConfig) -> DevstackConfig {
    let fixtures = crate::devstack_support::fixtures();
    DevstackConfig {
        templates_root: None,
        extra_templates: vec![(fixtures.join("tiny"), fixtures)],
        // Lambda polls a standard queue with five concurrent batches from the start and scales out; two
        // pollers (devstack's default) would make the events queue the bottleneck here.
        sqs_concurrency: 8,
        ..base
    }
}

/// A running load: the stack, its store, the tenants and one API client per tenant.
pub struct Load {
    pub stack: Devstack,
    pub store: Store,
    pub tenants: Vec<String>,
    pub clients: Vec<Client>,
    pub n: usize,
}

/// One accepted create: the tenant's index, the cluster and its operation.
#[derive(Debug, Clone)]
pub struct Created {
    pub tenant: usize,
    pub cluster: String,
    pub op: String,
}

impl Load {
    /// Starts the stack (with `plugins`) and gives each tenant quotas for its share of `n` clusters and the
    /// concurrency limit.
    pub async fn start(config: DevstackConfig, plugins: Vec<Box<dyn Plugin>>, n: usize) -> Self {
        assert!(n >= TENANTS, "at least {TENANTS} clusters (one per tenant)");
        assert!(
            config.runner.exists(),
            "{} is missing: build the runner first (`cargo build -p strato-runner`)",
            config.runner.display()
        );
        let stack = Devstack::start(config, plugins).await.expect("devstack starts");
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
        let clients = tenants
            .iter()
            .map(|t| Client::new(&stack.endpoints.http_api).with_token(stack.token(t)))
            .collect();
        Self {
            stack,
            store,
            tenants,
            clients,
            n,
        }
    }

    /// Every create at once (cluster `i` to tenant `i % TENANTS`).
    pub async fn create_all(&self) -> Vec<Created> {
        let creates = (0..self.n).map(|i| {
            let api = self.clients[i % TENANTS].clone();
            async move {
                let spec = json!({
                    "name": format!("load-{i}"),
                    "template": {"name": "fixture-tiny", "version": "0.1.0"},
                    "provider": "aws",
                    "region": "us-east-1",
                    "variables": {}
                });
                let (cluster, op, _) = api.create_cluster(&spec).await.expect("create accepted");
                Created {
                    tenant: i % TENANTS,
                    cluster,
                    op,
                }
            }
        });
        futures_util::future::join_all(creates).await
    }

    /// Waits until every cluster is ACTIVE (one list per tenant per round; a FAILED one panics), printing
    /// progress every 30 s.
    pub async fn wait_all_active(&self, t0: Instant) {
        let n = self.n;
        let timeout = Duration::from_secs(600 + 20 * n as u64);
        let mut active: BTreeMap<usize, usize> = BTreeMap::new();
        let mut next_report = Duration::from_secs(30);
        loop {
            active.clear();
            for (t, api) in self.clients.iter().enumerate() {
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
                return;
            }
            if t0.elapsed() >= next_report {
                next_report += Duration::from_secs(30);
                let stats = &self.stack.fargate_stats;
                println!(
                    "load: {:>4.0} s: {done}/{n} ACTIVE, {} runners started, {} running",
                    t0.elapsed().as_secs_f64(),
                    stats.started.load(Relaxed),
                    stats.running.load(Relaxed)
                );
            }
            assert!(
                t0.elapsed() < timeout,
                "after {} s only {active:?} of {n} clusters are ACTIVE",
                timeout.as_secs()
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }

    /// Nothing lost: every operation succeeded with exactly one runner, which exited 0; no tenant above its
    /// limit (from the task records); no slot held; every dead-letter queue empty. Returns the task records
    /// once every runner process is gone.
    pub async fn check_nothing_lost(&self, created: &[Created]) -> Vec<TaskRecord> {
        let tasks = self.stack.fargate_stats.tasks();
        let mut by_op: HashMap<&str, usize> = HashMap::new();
        for t in &tasks {
            *by_op.entry(t.operation_id.as_deref().unwrap_or("-")).or_default() += 1;
        }
        for c in created {
            let o = self.clients[c.tenant]
                .get(&format!("/v1/operations/{}", c.op))
                .await
                .unwrap();
            assert_eq!(o.body["status"], "succeeded", "{}", o.text);
            let runs = by_op.get(c.op.as_str()).copied().unwrap_or(0);
            assert_eq!(runs, 1, "operation {} had {runs} runners", c.op);
        }
        assert_eq!(tasks.len(), self.n, "one runner per operation and no other");
        // Each runner has sent its final report; wait for the processes to be gone before measuring.
        let deadline = Instant::now() + Duration::from_secs(60);
        while self
            .stack
            .fargate_stats
            .tasks()
            .iter()
            .any(|t| t.ended_at.is_none())
        {
            assert!(
                Instant::now() < deadline,
                "runners still running after their operations ended"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let tasks = self.stack.fargate_stats.tasks();
        assert!(
            tasks.iter().all(|t| t.exit_code == Some(0)),
            "{:?}",
            tasks.iter().map(|t| t.exit_code).collect::<Vec<_>>()
        );
        for (t, p) in self.peaks(created, &tasks).1.iter().enumerate() {
            assert!(
                *p <= TENANT_LIMIT as usize,
                "tenant {} had {p} runners at once (limit {TENANT_LIMIT})",
                self.tenants[t]
            );
        }
        for t in &self.tenants {
            let slots = self.store.tenant_slots(&t.parse().unwrap()).await.unwrap();
            assert!(slots.is_empty(), "{t} still holds slots {slots:?}");
        }
        for logical in ["jobs", "events", "logs", "webhooks"] {
            assert_eq!(self.dlq_depth(logical).await, "0", "{logical} dead-letter queue");
        }
        tasks
    }

    /// Peak concurrent runners overall and per tenant, from the task records.
    pub fn peaks(&self, created: &[Created], tasks: &[TaskRecord]) -> (usize, Vec<usize>) {
        let tenant_of = tenant_of(created);
        let interval = |t: &TaskRecord| (t.started_at, t.ended_at);
        let overall = peak(&tasks.iter().map(interval).collect::<Vec<_>>());
        let per = (0..TENANTS)
            .map(|t| {
                let mine: Vec<_> = tasks
                    .iter()
                    .filter(|r| tenant_of.get(r.operation_id.as_deref().unwrap_or("-")) == Some(&t))
                    .map(interval)
                    .collect();
                peak(&mine)
            })
            .collect();
        (overall, per)
    }

    async fn dlq_depth(&self, logical: &str) -> String {
        let sqs = &self.stack.env.aws.sqs;
        let url = sqs
            .get_queue_url()
            .queue_name(self.stack.env.names.dlq(logical))
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let attrs = sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .unwrap();
        attrs
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages))
            .cloned()
            .unwrap_or_default()
    }
}

/// Operation id → tenant index.
pub fn tenant_of(created: &[Created]) -> HashMap<&str, usize> {
    created.iter().map(|c| (c.op.as_str(), c.tenant)).collect()
}

/// Most intervals open at once (an interval still open counts until now).
pub fn peak(intervals: &[(Instant, Option<Instant>)]) -> usize {
    let now = Instant::now();
    let closed: Vec<(Instant, Instant)> = intervals.iter().map(|(s, e)| (*s, e.unwrap_or(now))).collect();
    busy_steps(&closed).iter().map(|&(_, b)| b).max().unwrap_or(0)
}

/// The number of open intervals after each change, in time order: `(instant, open)`. At equal instants an
/// end comes before a start, so a runner that exits as the next starts is a hand-off, not overlap.
pub fn busy_steps(intervals: &[(Instant, Instant)]) -> Vec<(Instant, usize)> {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for (start, end) in intervals {
        edges.push((*start, 1));
        edges.push((*end, -1));
    }
    edges.sort_by_key(|&(t, d)| (t, d));
    let mut open = 0i32;
    edges
        .into_iter()
        .map(|(t, d)| {
            open += d;
            (t, open.max(0) as usize)
        })
        .collect()
}

/// Time-weighted mean of `steps` (as [`busy_steps`] gives them) over `[from, to)`.
pub fn mean_busy(steps: &[(Instant, usize)], from: Instant, to: Instant) -> f64 {
    if to <= from {
        return 0.0;
    }
    let mut level = 0usize;
    let mut area = 0.0;
    let mut at = from;
    for &(t, open) in steps {
        if t > at {
            let until = t.min(to);
            if until > at {
                area += level as f64 * (until - at).as_secs_f64();
                at = until;
            }
        }
        level = open;
        if t >= to {
            break;
        }
    }
    if to > at {
        area += level as f64 * (to - at).as_secs_f64();
    }
    area / (to - from).as_secs_f64()
}

/// Time-weighted mean of `steps` in each bucket of `width` from `from` to `to`.
pub fn curve(steps: &[(Instant, usize)], from: Instant, to: Instant, width: Duration) -> Vec<f64> {
    let mut out = Vec::new();
    let mut at = from;
    while at < to {
        let end = (at + width).min(to);
        out.push(mean_busy(steps, at, end));
        at = end;
    }
    out
}

/// Pairs each runner's end with the start it handed its slot to: per tenant, in time order, each `ends`
/// instant with the first not yet paired `starts` instant at or after it. Returns `(end index, start index)`
/// into the given slices. (A tenant's slot goes to its next queued operation; which of its ends freed which
/// slot does not matter to the latency, only that each start after the first `limit` follows one end.)
pub fn pair_handoffs(ends: &[(usize, Instant)], starts: &[(usize, Instant)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let tenants: std::collections::BTreeSet<usize> = ends.iter().map(|e| e.0).collect();
    for tenant in tenants {
        let mut e: Vec<usize> = (0..ends.len()).filter(|&i| ends[i].0 == tenant).collect();
        let mut s: Vec<usize> = (0..starts.len()).filter(|&i| starts[i].0 == tenant).collect();
        e.sort_by_key(|&i| ends[i].1);
        s.sort_by_key(|&i| starts[i].1);
        let mut next = 0;
        for i in e {
            while next < s.len() && starts[s[next]].1 < ends[i].1 {
                next += 1;
            }
            if next < s.len() {
                out.push((i, s[next]));
                next += 1;
            }
        }
    }
    out
}

/// p-th percentile (nearest rank) of sorted `v`.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: Instant, ms: u64) -> Instant {
        t + Duration::from_millis(ms)
    }

    #[test]
    fn peak_counts_overlap_and_not_hand_offs() {
        let t = Instant::now();
        let s = |ms| Some(at(t, ms));
        assert_eq!(peak(&[(at(t, 0), s(10)), (at(t, 10), s(20))]), 1);
        assert_eq!(
            peak(&[(at(t, 0), s(10)), (at(t, 5), s(20)), (at(t, 6), s(30))]),
            3
        );
        assert_eq!(peak(&[]), 0);
    }

    #[test]
    fn busy_is_time_weighted_and_bucketed() {
        let t = Instant::now();
        // 2 busy over [0, 1 s), 1 over [1 s, 2 s), 0 after.
        let steps = busy_steps(&[(at(t, 0), at(t, 2000)), (at(t, 0), at(t, 1000))]);
        assert!((mean_busy(&steps, t, at(t, 2000)) - 1.5).abs() < 1e-9);
        assert!((mean_busy(&steps, at(t, 500), at(t, 1500)) - 1.5).abs() < 1e-9);
        assert!((mean_busy(&steps, t, at(t, 4000)) - 0.75).abs() < 1e-9);
        let c = curve(&steps, t, at(t, 3000), Duration::from_secs(1));
        assert_eq!(c.len(), 3);
        assert!((c[0] - 2.0).abs() < 1e-9 && (c[1] - 1.0).abs() < 1e-9 && c[2].abs() < 1e-9);
    }

    #[test]
    fn each_end_is_paired_with_the_next_start_of_its_tenant() {
        let t = Instant::now();
        let ends = [(0, at(t, 100)), (1, at(t, 150)), (0, at(t, 300))];
        let starts = [(0, at(t, 0)), (0, at(t, 400)), (1, at(t, 160)), (0, at(t, 120))];
        let mut p = pair_handoffs(&ends, &starts);
        p.sort();
        assert_eq!(p, vec![(0, 3), (1, 2), (2, 1)]);
        assert_eq!(pair_handoffs(&[(0, at(t, 500))], &starts), vec![]);
    }
}

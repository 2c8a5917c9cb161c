//! What one operation pair costs Strato itself: a cluster of the cheapest catalog template created (→ ACTIVE)
//! and deleted on a devstack with call recording on. Prints, per operation, every AWS request each function
//! and the runner sent (`Service.Operation`, retries included, DynamoDB items), each function's invocations and
//! in-process durations, the runners' Fargate task-seconds and the bytes the operations left in S3; then the
//! scheduler's requests per tick (a fixed monthly cost, not per operation). The inputs of the cost figures in
//! infra/README.md.
//!
//!   cargo run --release -p strato-devstack --example calls_per_operation
//!
//! Durations are wall time in this process against moto on a shared machine: an upper bound on Lambda's
//! billed duration for the same code, not a measurement of it. Task-seconds are Terraform against moto;
//! a real EKS create or delete takes 10–15 minutes, which the cost figures use instead.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use strato_aws::store::Store;
use strato_calls::recorder::{CallRecorder, RequestCounts};
use strato_devstack::registry::{HttpHandler, ScheduleHandler, SqsHandler};
use strato_devstack::{Devstack, DevstackConfig, DevstackError, Plugin, Registry, StackEnv};
use strato_domain::ids::OperationId;

/// Invocations and durations per function, filled by the wrappers [`Meter`] puts around every handler.
#[derive(Clone, Default)]
struct Invocations(Arc<Mutex<BTreeMap<String, Vec<Duration>>>>);

impl Invocations {
    fn add(&self, function: &str, took: Duration) {
        if let Ok(mut m) = self.0.lock() {
            m.entry(function.to_owned()).or_default().push(took);
        }
    }

    fn snapshot(&self) -> BTreeMap<String, Vec<Duration>> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

/// Installed last, so it wraps the HTTP API, every SQS mapping and every schedule of the stack.
struct Meter(Invocations);

/// The function behind a queue's event source mapping (infra/functions.tf).
fn consumer_of(queue: &str) -> String {
    match queue {
        "jobs" => "dispatcher".into(),
        "events" => "status".into(),
        "logs" => "log-fanout".into(),
        other => other.to_owned(),
    }
}

impl Plugin for Meter {
    fn install<'a>(
        self: Box<Self>,
        _env: &'a StackEnv,
        registry: &'a mut Registry,
    ) -> BoxFuture<'a, Result<(), DevstackError>> {
        Box::pin(async move {
            let inv = self.0;
            if let Some(h) = registry.http.take() {
                let inv = inv.clone();
                let wrapped: HttpHandler = Arc::new(move |req| {
                    let (h, inv) = (h.clone(), inv.clone());
                    Box::pin(async move {
                        let t = Instant::now();
                        let r = h(req).await;
                        inv.add("api", t.elapsed());
                        r
                    })
                });
                registry.http = Some(wrapped);
            }
            for (queue, mapping) in registry.sqs.iter_mut() {
                let (h, inv, name) = (mapping.handler.clone(), inv.clone(), consumer_of(queue));
                let wrapped: SqsHandler = Arc::new(move |event| {
                    let (h, inv, name) = (h.clone(), inv.clone(), name.clone());
                    Box::pin(async move {
                        let t = Instant::now();
                        let r = h(event).await;
                        inv.add(&name, t.elapsed());
                        r
                    })
                });
                mapping.handler = wrapped;
            }
            for rule in registry.schedules.iter_mut() {
                let (h, inv, name) = (
                    rule.handler.clone(),
                    inv.clone(),
                    format!("scheduler ({})", rule.name),
                );
                let wrapped: ScheduleHandler = Arc::new(move |event| {
                    let (h, inv, name) = (h.clone(), inv.clone(), name.clone());
                    Box::pin(async move {
                        let t = Instant::now();
                        let r = h(event).await;
                        inv.add(&name, t.elapsed());
                        r
                    })
                });
                rule.handler = wrapped;
            }
            Ok(())
        })
    }
}

/// Every request so far: the in-process functions' and the runners' (a separate process each).
fn requests(stack: &Devstack) -> RequestCounts {
    let mut all = stack
        .env
        .recorder
        .as_ref()
        .map(CallRecorder::requests)
        .unwrap_or_default();
    for (k, c) in CallRecorder::read_request_log(&stack.env.runner_call_log()) {
        let e = all.entry(k).or_default();
        e.requests += c.requests;
        e.items += c.items;
    }
    all
}

fn diff(after: &RequestCounts, before: &RequestCounts) -> RequestCounts {
    after
        .iter()
        .filter_map(|(k, a)| {
            let b = before.get(k).copied().unwrap_or_default();
            let mut d = *a;
            d.requests -= b.requests;
            d.items -= b.items;
            (d.requests > 0).then(|| (k.clone(), d))
        })
        .collect()
}

/// Bytes of every object version in Strato's buckets.
async fn stored_bytes(stack: &Devstack) -> i64 {
    let mut total = 0;
    for b in strato_aws::resources::BUCKETS {
        let bucket = stack.env.names.bucket(b.logical);
        let (mut key, mut version) = (None::<String>, None::<String>);
        loop {
            let Ok(page) = stack
                .env
                .aws
                .s3
                .list_object_versions()
                .bucket(&bucket)
                .set_key_marker(key.clone())
                .set_version_id_marker(version.clone())
                .send()
                .await
            else {
                break;
            };
            total += page.versions().iter().filter_map(|v| v.size()).sum::<i64>();
            if page.is_truncated() != Some(true) {
                break;
            }
            key = page.next_key_marker().map(str::to_owned);
            version = page.next_version_id_marker().map(str::to_owned);
        }
    }
    total
}

/// Waits for `op` to finish, reading the table with the stack's own (unrecorded) client: polling through the
/// API would add the api function's calls to the figures.
async fn finish(stack: &Devstack, op: &str) -> anyhow::Result<String> {
    let store = Store::new(stack.env.aws.dynamodb.clone(), &stack.env.names);
    let id: OperationId = op
        .parse()
        .map_err(|e| anyhow::anyhow!("operation id {op}: {e:?}"))?;
    let deadline = Instant::now() + Duration::from_secs(1200);
    loop {
        if let Some(o) = store.get_operation(&id).await?
            && o.status.is_terminal()
        {
            return Ok(format!("{:?}", o.status).to_lowercase());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "operation {op} did not finish in 20 minutes"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// One phase's figures, printed.
struct Phase {
    name: &'static str,
    requests: RequestCounts,
    invocations: BTreeMap<String, Vec<Duration>>,
    task_seconds: f64,
}

impl Phase {
    fn print(&self) {
        println!("\n== {} ==", self.name);
        println!("  AWS requests (function  Service.Operation  requests  [items]):");
        let mut per_service: BTreeMap<String, u64> = BTreeMap::new();
        for ((function, request), c) in &self.requests {
            let items = if c.items != c.requests {
                format!("  [{} items]", c.items)
            } else {
                String::new()
            };
            println!("    {function:<12} {request:<44} {:>5}{items}", c.requests);
            let service = request.split('.').next().unwrap_or(request).to_owned();
            *per_service.entry(service).or_default() += c.requests;
        }
        println!("  per service: {per_service:?}");
        println!("  Lambda invocations (function  count  total ms  mean ms):");
        for (f, d) in &self.invocations {
            let total: Duration = d.iter().sum();
            println!(
                "    {f:<24} {:>4} {:>9.1} {:>8.1}",
                d.len(),
                total.as_secs_f64() * 1e3,
                total.as_secs_f64() * 1e3 / d.len().max(1) as f64
            );
        }
        println!("  Fargate task-seconds: {:.1}", self.task_seconds);
    }
}

fn since(
    before: &BTreeMap<String, Vec<Duration>>,
    after: BTreeMap<String, Vec<Duration>>,
) -> BTreeMap<String, Vec<Duration>> {
    after
        .into_iter()
        .map(|(f, d)| {
            let skip = before.get(&f).map_or(0, Vec::len);
            (f, d.into_iter().skip(skip).collect::<Vec<_>>())
        })
        .filter(|(f, d)| !d.is_empty() && !f.starts_with("scheduler"))
        .collect()
}

fn task_seconds(stack: &Devstack, skip: usize) -> f64 {
    stack
        .fargate_stats
        .tasks()
        .iter()
        .skip(skip)
        .map(|t| {
            t.ended_at
                .unwrap_or_else(Instant::now)
                .duration_since(t.started_at)
                .as_secs_f64()
        })
        .sum()
}

/// The runner next to this example's target directory (`target/<profile>/strato-runner`), built if missing.
fn runner() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(|examples| examples.parent())
        .ok_or_else(|| anyhow::anyhow!("unexpected example path {}", exe.display()))?;
    let runner = profile_dir.join("strato-runner");
    if !runner.is_file() {
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let target = profile_dir.parent().unwrap_or(profile_dir);
        let mut cmd = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "-q", "-p", "strato-runner", "--bin", "strato-runner"])
            .env("CARGO_TARGET_DIR", target)
            .current_dir(strato_devstack::stack::workspace_root());
        if release {
            cmd.arg("--release");
        }
        anyhow::ensure!(cmd.status()?.success(), "building strato-runner failed");
    }
    Ok(runner)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter("warn")
        .with_writer(std::io::stderr)
        .init();
    let invocations = Invocations::default();
    let config = DevstackConfig {
        record_aws_calls: true,
        runner: runner()?,
        // Frequent ticks, so the scheduler's per-tick requests are measured during the run (infra/ runs
        // the sweeper every 2 minutes and drift checks every 15).
        sweep_rate: Duration::from_secs(15),
        drift_rate: Duration::from_secs(30),
        ..DevstackConfig::default()
    };
    let stack = Devstack::start(config, vec![Box::new(Meter(invocations.clone()))]).await?;
    let result = run(&stack, &invocations).await;
    stack.shutdown(Duration::from_secs(10)).await;
    result
}

/// The measured run: create, delete, one status read, then the scheduler's share.
async fn run(stack: &Devstack, invocations: &Invocations) -> anyhow::Result<()> {
    // The cheapest published template: the catalog's basic EKS one (one stage, no NAT gateway by default).
    let template = "aws-eks-basic";
    let version = stack
        .published
        .iter()
        .find(|(n, _)| n == template)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| anyhow::anyhow!("{template} is not published"))?;
    let client =
        strato_devstack::client::Client::new(&stack.endpoints.http_api).with_token(stack.token("cost"));
    let spec = serde_json::json!({
        "name": "cost",
        "template": {"name": template, "version": version},
        "provider": "aws",
        "region": "us-east-1",
        "variables": {"node_count": 1, "min_nodes": 1, "node_instance_type": "t3.medium"},
    });
    let bytes0 = stored_bytes(stack).await;

    let mut phases = Vec::new();
    let mut cluster = String::new();
    for name in ["create (→ ACTIVE)", "delete (→ DELETED)"] {
        let (req0, inv0, tasks0) = (
            requests(stack),
            invocations.snapshot(),
            stack.fargate_stats.tasks().len(),
        );
        let op = if name.starts_with("create") {
            let (id, op, _) = client.create_cluster(&spec).await?;
            cluster = id;
            op
        } else {
            let r = client.delete(&format!("/v1/clusters/{cluster}")).await?;
            anyhow::ensure!(r.status == 202, "delete answered {}: {}", r.status, r.text);
            r.body["operation"]["id"].as_str().unwrap_or_default().to_owned()
        };
        let status = finish(stack, &op).await?;
        anyhow::ensure!(status == "succeeded", "{name}: operation {op} {status}");
        // Let the trailing events (task STOPPED, webhooks, logs) be consumed before the snapshot.
        tokio::time::sleep(Duration::from_secs(8)).await;
        phases.push(Phase {
            name,
            // The scheduler ticks on its own clock: its calls are the fixed cost printed last.
            requests: diff(&requests(stack), &req0)
                .into_iter()
                .filter(|((f, _), _)| f != "scheduler")
                .collect(),
            invocations: since(&inv0, invocations.snapshot()),
            task_seconds: task_seconds(stack, tasks0),
        });
    }
    for p in &phases {
        p.print();
    }
    println!(
        "\nS3 bytes left by the two operations (all versions): {}",
        stored_bytes(stack).await - bytes0
    );

    // One read as a user polls it: GET /v1/clusters/{id}, alone.
    let (req0, inv0) = (requests(stack), invocations.snapshot());
    client.get(&format!("/v1/clusters/{cluster}")).await?;
    Phase {
        name: "one GET /v1/clusters/{id}",
        requests: diff(&requests(stack), &req0)
            .into_iter()
            .filter(|((f, _), _)| f == "api")
            .collect(),
        invocations: since(&inv0, invocations.snapshot()),
        task_seconds: 0.0,
    }
    .print();

    // The scheduler: its requests per tick over the whole run.
    let all = requests(stack);
    let ticks: BTreeMap<String, usize> = invocations
        .snapshot()
        .into_iter()
        .filter(|(f, _)| f.starts_with("scheduler"))
        .map(|(f, d)| (f, d.len()))
        .collect();
    println!("\n== scheduler (fixed cost) ==\n  ticks: {ticks:?}");
    for ((function, request), c) in all.iter().filter(|((f, _), _)| f == "scheduler") {
        println!("    {function:<12} {request:<44} {:>5}", c.requests);
    }
    Ok(())
}

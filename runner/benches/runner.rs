//! Runner overhead and log throughput (prints figures; not a timed test).
//!
//! 1. Apply: the runner-driven create of the `runner-net` fixture (init → plan → show → apply → output, with
//!    events, logs and archive) against the same engine commands run bare on the same module, both against
//!    moto. Reports the wall-time ratio and the runner's own CPU time and peak RSS (getrusage: the runner runs
//!    in this process; the engine is a child and is excluded).
//! 2. Logs: a chatty child (`yes | head -n N`) through the runner's line reader + log hub (live queue + S3
//!    archive) against the same child writing to /dev/null: lines/s sustained and the slowdown of the child.
//!
//! Run: `cargo bench -p strato-runner --bench runner` (env `BENCH_APPLY_RUNS`, `BENCH_LOG_LINES`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use strato_aws::queues::QueueUrls;
use strato_aws::store::{LockOutcome, Quotas, Store};
use strato_domain::bundle;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{
    CloudProvider, Cluster, ClusterSpec, ClusterState, Operation, OperationKind, TemplateRef,
};
use strato_domain::render::{BackendConfig, EngineDialect, aws_provider_override_tf_json, state_key};
use strato_domain::ts;
use strato_runner::engine::Engine;
use strato_runner::logs::{LogHub, LogSinks, Redactor};
use strato_runner::{Clients, Config};
use strato_testbed::TestEnv;

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

#[derive(Clone, Copy, Default)]
struct Usage {
    cpu: Duration,
    maxrss_kb: i64,
}

fn usage(who: i32) -> Usage {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let tv =
        |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    Usage {
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
        maxrss_kb: ru.ru_maxrss,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

async fn runner_apply(env: &TestEnv, store: &Store, name: &str) -> (Duration, Duration) {
    let tenant: TenantId = "bench".parse().unwrap();
    let spec = ClusterSpec {
        name: name.parse().unwrap(),
        template: TemplateRef {
            name: "runner-net".into(),
            version: "0.1.0".into(),
        },
        provider: CloudProvider::Aws,
        region: env.region.clone(),
        variables: BTreeMap::new(),
        target: None,
    };
    let now = ts::now();
    let mut c = Cluster::new(tenant.clone(), ClusterId::generate(), spec.clone(), now);
    c.transition(ClusterState::Provisioning).unwrap();
    let mut op = Operation::new(tenant, c.cluster_id.clone(), OperationKind::Create, now);
    op.spec = Some(spec);
    store
        .create_cluster(&c, &op, &Quotas::default())
        .await
        .unwrap()
        .unwrap();
    let LockOutcome::Acquired { fencing_token } = store
        .acquire_cluster_lock(&c.cluster_id, &op.operation_id, time::Duration::hours(1), now)
        .await
        .unwrap()
    else {
        panic!("lock")
    };
    let vars: BTreeMap<&str, String> = [
        ("STRATO_OPERATION_ID", op.operation_id.to_string()),
        ("STRATO_FENCING_TOKEN", fencing_token.to_string()),
        // The bench never reaches status, so any proof does.
        ("STRATO_RUN_PROOF", "bench".to_owned()),
        ("STRATO_RESOURCE_PREFIX", env.names.prefix().to_owned()),
        (
            "STRATO_ENGINE_ROLE_ARN",
            "arn:aws:iam::123456789012:role/bench-engine".to_owned(),
        ),
        (
            "STRATO_STATE_ROLE_ARN",
            "arn:aws:iam::123456789012:role/bench-state".to_owned(),
        ),
        ("STRATO_TERRAFORM", env.tools.terraform.display().to_string()),
        ("STRATO_PROVIDER_ENDPOINT", env.endpoint.clone()),
    ]
    .into();
    let mut cfg = Config::from_lookup(|k| vars.get(k).cloned()).unwrap();
    cfg.extra_engine_env = engine_env(env);
    let clients = Clients::new(env.aws.clone(), &cfg).await.unwrap();
    let before = usage(libc::RUSAGE_SELF);
    let t = Instant::now();
    let summary = strato_runner::run_operation(cfg, clients).await.unwrap();
    let wall = t.elapsed();
    let cpu = usage(libc::RUSAGE_SELF).cpu - before.cpu;
    assert!(
        matches!(summary.final_event, RunnerEvent::Succeeded { .. }),
        "{:?}",
        summary.final_event
    );
    (wall, cpu)
}

fn engine_env(env: &TestEnv) -> Vec<(String, String)> {
    let mut v = env.tools.engine_env();
    v.push(("AWS_ACCESS_KEY_ID".into(), "testing".into()));
    v.push(("AWS_SECRET_ACCESS_KEY".into(), "testing".into()));
    v.push(("AWS_REGION".into(), env.region.clone()));
    v
}

/// The same engine commands on the same module, run bare (output captured, nothing else).
fn bare_apply(env: &TestEnv, name: &str) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(fixtures().join("modules/net")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(
        dir.path().join("strato_provider.tf.json"),
        aws_provider_override_tf_json(&env.endpoint).unwrap(),
    )
    .unwrap();
    let backend = BackendConfig {
        bucket: env.names.bucket("state"),
        key: state_key(&"bench".parse().unwrap(), &ClusterId::generate(), "main"),
        region: env.region.clone(),
        lock_table: env.names.table("tf-locks"),
        endpoint: Some(env.endpoint.clone()),
        credentials: None,
        kms_key_id: None,
    };
    std::fs::write(
        dir.path().join("strato_backend.tf.json"),
        backend.tf_json(EngineDialect::Legacy).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("terraform.tfvars.json"),
        json!({"cluster_name": name}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join(".plugin-cache")).unwrap();
    let t = Instant::now();
    for args in [
        &["init", "-input=false", "-no-color"][..],
        &[
            "plan",
            "-input=false",
            "-no-color",
            "-detailed-exitcode",
            "-out=p.tfplan",
        ],
        &["show", "-json", "-no-color", "p.tfplan"],
        &["apply", "-input=false", "-no-color", "-auto-approve"],
        &["output", "-json"],
    ] {
        let out = Command::new(&env.tools.terraform)
            .args(args)
            .current_dir(dir.path())
            .envs(engine_env(env))
            // A fresh per-run cache, like the runner's per-operation workspace.
            .env("TF_PLUGIN_CACHE_DIR", dir.path().join(".plugin-cache"))
            .env("CHECKPOINT_DISABLE", "1")
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0) | Some(2)),
            "bare {args:?} failed"
        );
    }
    t.elapsed()
}

async fn log_throughput(env: &TestEnv, lines: u64) {
    let script = format!(
        "yes 'aws_vpc.this: Still creating... [10s elapsed] ---------------------' | head -n {lines}"
    );
    // Bare: the producer alone.
    let t = Instant::now();
    let st = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let bare = t.elapsed();

    let queues = QueueUrls::resolve(&env.aws.sqs, &env.names).await.unwrap();
    let sinks = LogSinks {
        sqs: env.aws.sqs.clone(),
        logs_url: queues.logs.clone(),
        s3: env.aws.s3.clone(),
        artifacts_bucket: env.names.bucket("artifacts"),
        traceparent: None,
    };
    let op = OperationId::generate();
    let (hub, tasks) = LogHub::start(op.clone(), sinks.clone(), Redactor::default());
    let engine = Engine {
        bin: "sh".into(),
        env: Vec::new(),
        grace: Duration::from_secs(5),
    };
    let (_tx, mut rx) = tokio::sync::watch::channel(None);
    let before = usage(libc::RUSAGE_SELF);
    let t = Instant::now();
    let out = engine
        .run(
            Path::new("/tmp"),
            &["-c".into(), script.clone()],
            "apply",
            false,
            &hub,
            &mut rx,
        )
        .await
        .unwrap();
    let through = t.elapsed();
    assert_eq!(out.code, Some(0));
    let skipped = hub.live_skipped();
    assert_eq!(hub.last_seq(), lines);
    drop(hub);
    let t2 = Instant::now();
    let last = tasks.finish(&sinks, &op).await.unwrap();
    let drain = t2.elapsed();
    let cpu = usage(libc::RUSAGE_SELF).cpu - before.cpu;
    assert_eq!(last, lines, "archive holds every line");
    println!("log throughput ({lines} lines of ~70 bytes from `yes | head`):");
    println!(
        "  producer alone            {:>8.3} s  ({:>10.0} lines/s)",
        bare.as_secs_f64(),
        lines as f64 / bare.as_secs_f64()
    );
    println!(
        "  through the runner reader {:>8.3} s  ({:>10.0} lines/s)  slowdown x{:.2}",
        through.as_secs_f64(),
        lines as f64 / through.as_secs_f64(),
        through.as_secs_f64() / bare.as_secs_f64()
    );
    println!(
        "  live path skipped {skipped} lines (moto SQS is slow); archive complete ({last} lines) {:.3} s after the producer exited",
        drain.as_secs_f64()
    );
    println!(
        "  runner CPU for reading + shipping + archiving: {:.3} s",
        cpu.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("BENCH_APPLY_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let lines: u64 = std::env::var("BENCH_LOG_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500_000);
    let env = TestEnv::new().await;
    let b = bundle::pack(&fixtures().join("templates/net"), &fixtures().join("modules")).unwrap();
    strato_aws::bundles::publish(&env.aws, &env.names, &b)
        .await
        .unwrap();
    let store = Store::new(env.aws.dynamodb.clone(), &env.names);

    // Warm-up (provider unpacking, moto first-call costs), not counted.
    runner_apply(&env, &store, "warm-r").await;
    bare_apply(&env, "warm-b");

    let mut ratios = Vec::new();
    let (mut rw, mut bw, mut cpus) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let (wall, cpu) = runner_apply(&env, &store, &format!("bench-r{i}")).await;
        let bare = bare_apply(&env, &format!("bench-b{i}"));
        ratios.push(wall.as_secs_f64() / bare.as_secs_f64());
        rw.push(wall.as_secs_f64());
        bw.push(bare.as_secs_f64());
        cpus.push(cpu.as_secs_f64());
    }
    let rss = usage(libc::RUSAGE_SELF).maxrss_kb;
    println!("apply of runner-net (VPC + 2 subnets + SG + tag) against moto, {runs} runs, medians:");
    println!(
        "  runner-driven  {:.2} s (init, plan, show, apply, output + events, logs, archive, preflight)",
        median(rw)
    );
    println!("  bare engine    {:.2} s (same commands)", median(bw));
    println!(
        "  wall ratio     {:.2}  (per run: {:?})",
        median(ratios.clone()),
        ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>()
    );
    println!(
        "  runner CPU     {:.3} s per operation (engine excluded)",
        median(cpus)
    );
    println!(
        "  peak RSS of the bench process (runner + SDK clients): {} MiB",
        rss / 1024
    );
    log_throughput(&env, lines).await;
}

//! Load benchmark (issue 19, "Load"): N clusters (default 100) from 5 tenants × 3 slots through devstack's
//! HTTP API, a one-resource template, the real release runner and Terraform 0.15 (as `devstack_load`).
//! Prints, from the emulated Fargate's task records and the queues' records:
//! - the curve of busy slots over time (time-weighted mean per bucket);
//! - the time-weighted busy fraction while the queue is full: from the first moment all 15 slots are busy
//!   until the last operation's runner starts (after that no work waits and slots drain);
//! - slot hand-off latency: a runner's final report (its `SentTimestamp` on the events queue) → the start of
//!   the runner its freed slot went to (the woken job names the operation whose end woke it in its
//!   deduplication id), p50 / p95 / max, and where that time goes (status picks the report up → the wake-up
//!   is sent → the dispatcher picks it up → RunTask → the emulated task starts);
//! - total wall time.
//!
//! `cargo run --release -p strato-tests --example bench_load -- [--clusters 100] [--bucket 5]`
//!
//! An example, not a bench: `cargo bench` holds the target directory's lock while it runs. It builds the
//! release runner first (`cargo build --release -p strato-runner`) and runs that one, never a debug binary.

#[path = "../../tests/devstack/devstack_support/mod.rs"]
mod devstack_support;
#[path = "../../tests/devstack/load_support/mod.rs"]
mod load_support;
mod probe;
mod report;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use load_support::{Load, TENANT_LIMIT, TENANTS};

struct Args {
    clusters: usize,
    bucket: Duration,
}

fn args() -> Args {
    let mut a = Args {
        clusters: 100,
        bucket: Duration::from_secs(5),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--clusters" => a.clusters = value.parse().expect("--clusters N"),
            "--bucket" => a.bucket = Duration::from_secs_f64(value.parse().expect("--bucket SECONDS")),
            other => panic!("unknown argument {other} (--clusters N, --bucket SECONDS)"),
        }
    }
    a
}

/// Builds the release runner and returns its path (next to this example's directory, `…/release/`).
fn release_runner() -> PathBuf {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let ok = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .current_dir(&workspace)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "strato-runner",
            "--bin",
            "strato-runner",
        ])
        .status()
        .expect("cargo build")
        .success();
    assert!(ok, "building the release runner failed");
    let exe = std::env::current_exe().expect("own path");
    // …/release/examples/bench_load → …/release/strato-runner
    let release = exe.parent().and_then(|p| p.parent()).expect("target dir");
    let runner = release.join("strato-runner");
    assert!(
        release.file_name().is_some_and(|n| n == "release") && runner.exists(),
        "no release runner at {}",
        runner.display()
    );
    runner
}

fn main() {
    if cfg!(debug_assertions) {
        eprintln!(
            "bench_load: figures must come from a release build: \
             cargo run --release -p strato-tests --example bench_load"
        );
        std::process::exit(2);
    }
    let args = args();
    let runner = release_runner();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(run(args, runner));
}

async fn run(args: Args, runner: PathBuf) {
    let n = args.clusters;
    let probe = probe::Probe::default();
    let mut config = load_support::config(devstack_support::config("bl").await);
    config.runner = runner.clone();
    let load = Load::start(config, vec![Box::new(probe.plugin())], n).await;
    println!(
        "bench_load: {n} clusters, {TENANTS} tenants × {TENANT_LIMIT} slots, runner {} (release)",
        runner.display()
    );

    let t0 = Instant::now();
    let wall0 = time::OffsetDateTime::now_utc();
    let created = load.create_all().await;
    let accepted = t0.elapsed();
    load.wait_all_active(t0).await;
    let all_active = t0.elapsed();
    let tasks = load.check_nothing_lost(&created).await;

    let mut ops = Vec::new();
    for c in &created {
        let op = load
            .store
            .get_operation(&c.op.parse().unwrap())
            .await
            .unwrap()
            .expect("operation");
        ops.push(op);
    }
    let clock = report::Clock { t0, wall0 };
    report::print(
        &report::Inputs {
            created: &created,
            tasks: &tasks,
            ops: &ops,
            hops: &probe.hops(),
            clock,
            bucket: args.bucket,
            accepted,
            all_active,
        },
        &load,
    );
    load.stack.shutdown(Duration::from_secs(30)).await;
}

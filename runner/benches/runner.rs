//! Runner overhead and log throughput (prints figures; not a timed test).
//!
//! 1. Apply: the runner-driven create of the `runner-net` fixture against the bare engine running the
//!    commands the runner must run for the same result, both against moto, interleaved (ABBA order) so
//!    machine load hits both alike. The engine is the machine's modern one (Terraform >= 1.5 with the AWS
//!    provider >= 5 from its filesystem mirror) when present; otherwise the output says so loudly and the
//!    PyPI bed's Terraform 0.15 is used. Prints every run, the medians, the wall-time ratio, the runner's
//!    own CPU per operation (getrusage of this process, where the runner runs; the engine is a child) and
//!    with the engine's children included, and where the runner's extra wall time goes (step events).
//! 2. Logs: a chatty child (`yes | head -n N`) through the runner's line reader + log hub (live queue + S3
//!    archive) against the same child writing to /dev/null: lines/s sustained and the slowdown of the child.
//!
//! Run: `cargo bench -p strato-runner --bench runner` (env `BENCH_APPLY_RUNS` (5), `BENCH_LOG_LINES`
//! (500000; 0 skips part 2)). The apply part takes about `BENCH_APPLY_RUNS` × 2 × 10 s.

mod runner_bench;

use std::path::Path;

use strato_terraform::bundle;
use strato_testbed::{TestEngine, TestEnv};

use runner_bench::apply::{self, Engines};
use runner_bench::logs::log_throughput;

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The modern engine, or Terraform 0.15 with a banner nobody can miss.
fn pick_engine() -> TestEngine {
    match strato_testbed::modern_engine() {
        Ok(m) => TestEngine::modern(m),
        Err(why) => {
            let banner = "!".repeat(100);
            for line in [
                banner.as_str(),
                "!!! NO MODERN ENGINE: the runner-overhead goal is stated against Terraform >= 1.5 with AWS provider >= 5.",
                &format!("!!! reason: {why}"),
                "!!! FALLING BACK to the PyPI bed's Terraform 0.15.0-rc2 with AWS provider 3.39: figures are NOT the goal's.",
                banner.as_str(),
            ] {
                println!("{line}");
                eprintln!("{line}");
            }
            TestEngine::tf015()
        }
    }
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let runs: usize = env_num("BENCH_APPLY_RUNS", 5);
    let lines: u64 = env_num("BENCH_LOG_LINES", 500_000);
    let engine = pick_engine();
    println!("engine: {}", engine.describe());
    let env = TestEnv::new().await;
    let b = bundle::pack(&fixtures().join("templates/net"), &fixtures().join("modules")).unwrap();
    strato_aws::bundles::publish(&env.aws, &env.names, &b)
        .await
        .unwrap();
    let engines = Engines::new(&env, engine).await;
    apply::bench(&engines, runs.max(1), &fixtures()).await;
    if lines > 0 {
        log_throughput(&env, lines).await;
    }
}

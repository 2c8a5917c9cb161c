//! Cold start of each function: the time from starting its release binary to its first request for an
//! invocation on devstack's Lambda Runtime API (what Lambda reports as Init Duration), configured as infra/
//! configures it (secrets by ARN from moto's Secrets Manager), against a minimal lambda_runtime function
//! (`examples/hello_lambda.rs`) measured in the same run.
//!
//! `cargo run --release -p strato-tests --example cold_start -- 9` (rounds; default 5). Builds the release
//! binaries first (`cargo build --release`; an example, not a bench, because `cargo bench` holds the target
//! directory's lock while the bench runs), so the first run takes as long as a release build.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use strato_devstack::runtime_api::LambdaProcess;
use strato_testbed::TestEnv;

const FUNCTIONS: [&str; 7] = [
    "strato-api",
    "strato-dispatcher",
    "strato-status",
    "strato-ws",
    "strato-log-fanout",
    "strato-scheduler",
    "strato-webhooks",
];
const BASELINE: &str = "hello_lambda";

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo() -> Command {
    let mut c = Command::new(option_env!("CARGO").unwrap_or("cargo"));
    c.current_dir(workspace());
    c
}

/// Builds the release binaries; their directory.
fn build() -> PathBuf {
    let mut c = cargo();
    c.args(["build", "--release", "--quiet"]);
    for f in FUNCTIONS {
        c.args(["-p", f, "--bin", f]);
    }
    assert!(c.status().expect("cargo build").success(), "release build failed");
    let examples = cargo()
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "strato-tests",
            "--example",
            BASELINE,
        ])
        .status()
        .expect("cargo build --example");
    assert!(examples.success(), "building {BASELINE} failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    target.join("release")
}

/// Every function's settings at once (each reads what it needs), secrets by ARN as infra/ gives them.
async fn environment(env: &TestEnv) -> Vec<(String, String)> {
    let jwt = env
        .create_secret("jwt", "cold-start-bench-secret-0123456789abcdef")
        .await;
    let proof = env
        .create_secret("run-proof", "cold-start-run-proof-key-32-bytes")
        .await;
    let agent = env
        .create_secret("agent", "cold-start-agent-token-secret-0123")
        .await;
    [
        ("AWS_ENDPOINT_URL", env.endpoint.as_str()),
        ("AWS_REGION", env.region.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
        ("STRATO_RESOURCE_PREFIX", env.names.prefix()),
        ("STRATO_JWT_SECRET_ARN", jwt.as_str()),
        ("STRATO_RUN_PROOF_SECRET_ARN", proof.as_str()),
        ("STRATO_AGENT_TOKEN_SECRET_ARN", agent.as_str()),
        ("STRATO_RUNNER_CLUSTER", "runners"),
        ("STRATO_RUNNER_TASK_DEFINITION", "runner"),
        ("STRATO_RUNNER_SUBNETS", "subnet-1"),
        ("STRATO_RUNNER_SECURITY_GROUPS", "sg-1"),
        ("STRATO_WS_MANAGEMENT_ENDPOINT", "http://127.0.0.1:9"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

async fn init_once(bin: &Path, name: &str, env: &[(String, String)]) -> Duration {
    let f = LambdaProcess::spawn(bin, name, env).await.expect("spawn");
    let d = f
        .init_duration(Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("{name} did not start: {e}"));
    f.stop().await;
    d
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5);
    let dir = tokio::task::spawn_blocking(build).await.unwrap();
    let env = TestEnv::new().await;
    let settings = environment(&env).await;
    let mut names: Vec<&str> = vec![BASELINE];
    names.extend(FUNCTIONS);
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    // Interleaved rounds, so machine noise spreads over every binary alike.
    for _ in 0..rounds {
        for (i, name) in names.iter().enumerate() {
            let bin = if *name == BASELINE {
                dir.join("examples").join(BASELINE)
            } else {
                dir.join(name)
            };
            samples[i].push(init_once(&bin, name, &settings).await);
        }
    }
    let base = median(&mut samples[0].clone());
    println!("cold start, release build, median of {rounds} (process start → first /invocation/next):");
    println!(
        "{:<20} {:>10} {:>10} {:>10} {:>8}",
        "function", "median ms", "min ms", "max ms", "× hello"
    );
    for (name, s) in names.iter().zip(samples.iter_mut()) {
        let m = median(s);
        println!(
            "{:<20} {:>10.1} {:>10.1} {:>10.1} {:>8.2}",
            name,
            ms(m),
            ms(s[0]),
            ms(*s.last().unwrap()),
            ms(m) / ms(base)
        );
    }
}

//! What the devstack end-to-end tests share: a stack on the process's moto under a fresh resource prefix.
#![allow(dead_code)] // each test file uses a different subset

pub mod eks_token;
pub mod receiver;

use std::path::PathBuf;
use std::time::Duration;

use strato_devstack::client::{Watched, watch_operation};
use strato_devstack::{Devstack, DevstackConfig};

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The test templates (`tests/fixtures/<name>`), published next to the catalog by `extra_templates`.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// devstack's defaults on the process's moto, under a prefix no other test in the process uses (`tag`
/// names the test file in it, to tell their resources apart in moto).
pub async fn config(tag: &str) -> DevstackConfig {
    let moto = tokio::task::spawn_blocking(|| strato_testbed::shared_moto().endpoint.clone())
        .await
        .expect("moto starts");
    DevstackConfig {
        aws_endpoint: Some(moto),
        // The fixtures pin the PyPI bed's provider 3.39, and the modern engine costs ~4× the CPU: the
        // devstack tests run on Terraform 0.15 unless they ask for an engine (the runner's engine tier runs both).
        engine: Some(strato_testbed::TestEngine::tf015()),
        prefix: strato_testbed::unique_prefix(tag),
        ..DevstackConfig::default()
    }
}

/// Starts the stack; the runner binary it spawns must have been built.
pub async fn start(config: DevstackConfig) -> Devstack {
    assert!(
        config.runner.exists(),
        "{} is missing: `cargo test --workspace` builds it (or `cargo build -p strato-runner`)",
        config.runner.display()
    );
    Devstack::start(config, Vec::new())
        .await
        .expect("devstack starts")
}

/// Follows `op` over the stack's WebSocket API to its end; every log line 1..=last must have arrived, and
/// there must be some (each operation these tests follow runs the engine).
pub async fn follow(stack: &Devstack, token: &str, op: &str) -> Watched {
    let ws = stack.endpoints.websocket.clone().expect("WebSocket API");
    // The WebSocket API takes tickets only (issue 16 finding 6): the follower trades the token for one.
    let client = strato_devstack::client::Client::new(&stack.endpoints.http_api).with_token(token);
    let w = watch_operation(&client, &ws, op, Duration::from_secs(600), |_| {}, |_, _, _| {})
        .await
        .expect("followed to its end");
    assert!(w.complete(), "every line 1..={} arrived", w.last_seq);
    assert!(w.last_seq > 0);
    w
}

/// Each function's (and the runner's) list of the AWS calls its code makes, by the name the recorder tags.
pub fn aws_call_lists() -> [(&'static str, &'static [strato_calls::AwsCall]); 8] {
    [
        ("api", strato_api::AWS_CALLS),
        ("dispatcher", strato_dispatcher::AWS_CALLS),
        ("status", strato_status::AWS_CALLS),
        ("ws", strato_ws::AWS_CALLS),
        ("log-fanout", strato_log_fanout::AWS_CALLS),
        ("scheduler", strato_scheduler::AWS_CALLS),
        ("webhooks", strato_webhooks::AWS_CALLS),
        ("runner", strato_runner::AWS_CALLS),
    ]
}

/// The IAM check of the code: every AWS call the stack's functions and runners made (recorded, see
/// `DevstackConfig::record_aws_calls`) is on that function's `AWS_CALLS` list, which infra_apply.rs checks
/// against `infra/`. `expect` names the functions that must have made calls at all (the recording works).
pub fn assert_aws_calls_listed(stack: &Devstack, expect: &[&str]) {
    let observed = stack.aws_calls();
    if let Ok(dump) = std::env::var("STRATO_AWS_CALLS_DUMP") {
        let lines: Vec<String> = observed
            .iter()
            .map(|o| serde_json::to_string(o).unwrap())
            .collect();
        std::fs::write(dump, lines.join("\n")).unwrap();
    }
    let names = &stack.env.names;
    let lists = aws_call_lists();
    let mut problems = Vec::new();
    for o in &observed {
        if !lists.iter().any(|(f, _)| *f == o.function) {
            problems.push(format!("a call by an unknown function: {o:?}"));
        }
    }
    for (function, list) in lists {
        problems.extend(strato_calls::uncovered(names, function, list, &observed));
    }
    for f in expect {
        assert!(
            observed.iter().any(|o| o.function == *f),
            "no AWS call of {f} was recorded: {observed:#?}"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every operator route (`Access::Platform` in the route table) answers `tenant`'s own token 403, with a body
/// that would change the tenant were it accepted.
pub async fn assert_operator_routes_refuse(api: &strato_devstack::client::Client, tenant: &str) {
    use strato_api::route::Access;
    for r in strato_api::routes::ROUTES
        .iter()
        .filter(|r| r.access == Access::Platform)
    {
        let path = r.path.replace("{tenant}", tenant);
        let method: reqwest::Method = r.method.parse().unwrap();
        let body = (r.method != "GET").then(|| serde_json::json!({"id": tenant, "max_clusters": 60}));
        let resp = api.request(method, &path, body.as_ref()).await.unwrap();
        assert_eq!(resp.status, 403, "{r:?}: {}", resp.text);
    }
}

/// The `field` of each entry of the array `list` (an operation's step names, a plan's addresses).
pub fn each<'a>(list: &'a serde_json::Value, field: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .filter_map(|entry| entry[field].as_str())
        .collect()
}

/// The `strato` CLI built beside the tests (`cargo build -p strato-cli` builds it).
pub fn strato_bin() -> PathBuf {
    let p = strato_devstack::stack::sibling_binary("strato");
    assert!(
        p.exists(),
        "{} is missing: `cargo build -p strato-cli`",
        p.display()
    );
    p
}

/// The `strato` CLI built beside the tests, against `endpoint` with `token` and its configuration in
/// `config`: nothing inherited from the caller's STRATO_*, no colour.
pub fn strato_command(config: &std::path::Path, endpoint: &str, token: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(strato_bin());
    cmd.env("STRATO_CONFIG_DIR", config)
        .env("STRATO_ENDPOINT", endpoint)
        .env("STRATO_TOKEN", token)
        .env("NO_COLOR", "1")
        .env_remove("STRATO_PROFILE")
        .env_remove("STRATO_WS_ENDPOINT");
    cmd
}

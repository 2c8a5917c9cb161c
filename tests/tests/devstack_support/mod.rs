//! What the devstack end-to-end tests share: a stack on the process's moto under a fresh resource prefix.
#![allow(dead_code)] // each test file uses a different subset

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
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
    static N: AtomicU32 = AtomicU32::new(0);
    let moto = tokio::task::spawn_blocking(|| strato_testbed::shared_moto().endpoint.clone())
        .await
        .expect("moto starts");
    DevstackConfig {
        aws_endpoint: Some(moto),
        prefix: format!(
            "{tag}{:x}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ),
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
    // The WebSocket API takes tickets only (issue 16 finding 6): trade the API token for one.
    let ticket = strato_devstack::client::Client::new(&stack.endpoints.http_api)
        .with_token(token)
        .ws_ticket()
        .await
        .expect("a WebSocket ticket");
    let w = watch_operation(&ws, &ticket, op, Duration::from_secs(600), |_| {}, |_, _, _| {})
        .await
        .expect("followed to its end");
    assert!(w.complete(), "every line 1..={} arrived", w.last_seq);
    assert!(w.last_seq > 0);
    w
}

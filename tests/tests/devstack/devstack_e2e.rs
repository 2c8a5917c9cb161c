//! devstack end to end, through its HTTP endpoint only (as a user would): auth, a create whose emulated
//! Fargate task runs a stand-in runner that exits 3 without a final report, and tenant isolation.
//!
//! This proves the whole path: API Gateway emulation → api → jobs.fifo mapping → dispatcher → RunTask in
//! moto → Fargate emulation (child process with the task's overrides) → StopTask + ECS Task State Change
//! event → events mapping → status → operation FAILED with the exit code.

use crate::devstack_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use devstack_support::fixtures;
use serde_json::json;
use strato_api::timeline::TimelineEvent;
use strato_devstack::client::{Client, watch_operation};
use strato_devstack::{Devstack, DevstackConfig};

/// A stand-in for `strato-runner`: records its environment and working directory, then fails without
/// reporting, like a runner that crashed.
fn stand_in_runner(dir: &Path) -> PathBuf {
    let path = dir.join("runner.sh");
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         env > \"$RECORD_DIR/$STRATO_OPERATION_ID.env\"\n\
         pwd > \"$RECORD_DIR/$STRATO_OPERATION_ID.cwd\"\n\
         echo 'stand-in runner: failing on purpose' >&2\n\
         exit 3\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn start(record: &Path) -> Devstack {
    let fixtures = fixtures();
    let config = DevstackConfig {
        templates_root: None,
        extra_templates: vec![(fixtures.join("vpc-sg"), fixtures)],
        runner: stand_in_runner(record),
        runner_env: vec![("RECORD_DIR".into(), record.display().to_string())],
        runner_grace: Duration::from_secs(5),
        ..devstack_support::config("ds").await
    };
    Devstack::start(config, Vec::new())
        .await
        .expect("devstack starts")
}

fn create_body(name: &str) -> serde_json::Value {
    json!({
        "name": name,
        "template": {"name": "fixture-vpc-sg", "version": "0.1.0"},
        "provider": "aws",
        "region": "us-east-1",
        "variables": {}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devstack_create_runs_an_emulated_fargate_task_and_a_crashed_runner_fails_the_operation() {
    let record = tempfile::tempdir().unwrap();
    let stack = start(record.path()).await;
    assert_eq!(
        stack.published,
        vec![("fixture-vpc-sg".to_owned(), "0.1.0".to_owned())]
    );
    let anon = Client::new(&stack.endpoints.http_api);

    // Liveness needs no token; everything else does, and a bad token is refused by the authorizer.
    let h = anon.get("/healthz").await.unwrap();
    assert_eq!(
        (h.status, h.body["status"].as_str()),
        (200, Some("ok")),
        "{}",
        h.text
    );
    assert!(h.header("apigw-requestid").is_some());
    let r = anon.post("/v1/clusters", &create_body("web-1")).await.unwrap();
    assert_eq!(r.status, 401, "{}", r.text);
    // Issue 16 finding 7: a problem document, as the spec says.
    assert_eq!(r.body["type"], "urn:strato:problem:unauthorized", "{}", r.text);
    assert_eq!(
        r.header("content-type"),
        Some("application/problem+json"),
        "{}",
        r.text
    );
    let r = anon.with_token("not-a-jwt").get("/v1/clusters").await.unwrap();
    assert_eq!(r.status, 401, "{}", r.text);

    let alice = anon.with_token(stack.token("tenant-a"));
    let t = alice.get("/v1/templates").await.unwrap();
    assert_eq!(t.status, 200, "{}", t.text);
    assert!(t.text.contains("fixture-vpc-sg"), "{}", t.text);

    let (cluster, op, created) = alice.create_cluster(&create_body("web-1")).await.unwrap();
    assert!(
        created.header("location").is_some_and(|l| l.ends_with(&op)),
        "{:?}",
        created.headers
    );

    let done = alice.wait_operation(&op, Duration::from_secs(180)).await.unwrap();
    assert_eq!(done["status"], "failed", "{done}");
    let what = done["error"]["what"].as_str().unwrap_or_default();
    assert!(
        what.contains("exit code 3"),
        "the ECS stop event's exit code reaches the operation: {done}"
    );
    assert!(what.contains("Essential container in task exited"), "{done}");
    let c = alice
        .wait_cluster_state(&cluster, &["FAILED"], Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(c["state"], "FAILED");

    // The tenant's timeline of it, from what the real functions recorded: queued, dispatched (attempt 1),
    // then the end with its category; another tenant gets the 404 of a missing operation.
    let t = alice.operation_timeline(&op).await.unwrap();
    let events: Vec<TimelineEvent> = t.entries.iter().map(|e| e.event).collect();
    assert_eq!(
        events[..2],
        [TimelineEvent::Queued, TimelineEvent::Dispatched],
        "{t:?}"
    );
    assert_eq!(t.entries[1].attempt, Some(1), "{t:?}");
    let end = t
        .entries
        .iter()
        .find(|e| e.event == TimelineEvent::Failed)
        .expect("the end");
    assert!(end.category.is_some(), "{t:?}");
    assert!(t.ended && t.duration_ms > 0, "{t:?}");
    let bob = anon.with_token(stack.token("tenant-b"));
    let theirs = bob.get(&format!("/v1/operations/{op}/timeline")).await.unwrap();
    assert_eq!(theirs.status, 404, "{}", theirs.text);

    // The task ran as a child with the task's overrides and devstack's environment, in its own directory.
    let env = std::fs::read_to_string(record.path().join(format!("{op}.env"))).expect("the runner ran");
    let has = |k: &str| env.lines().any(|l| l.starts_with(&format!("{k}=")));
    assert!(env.contains(&format!("STRATO_OPERATION_ID={op}")), "{env}");
    for k in [
        "STRATO_FENCING_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_REGION",
        "STRATO_RESOURCE_PREFIX",
        "STRATO_PROVIDER_ENDPOINT",
        "STRATO_TERRAFORM",
        "TF_CLI_CONFIG_FILE",
    ] {
        assert!(has(k), "{k} missing from the runner's environment:\n{env}");
    }
    let cwd = std::fs::read_to_string(record.path().join(format!("{op}.cwd"))).unwrap();
    assert!(
        cwd.trim()
            .ends_with(&format!("/tasks/{}", cwd.trim().rsplit('/').next().unwrap()))
    );
    assert_ne!(Path::new(cwd.trim()), std::env::current_dir().unwrap());
    assert_eq!(stack.fargate_stats.stopped.load(Ordering::Relaxed), 1);

    // Over the WebSocket API with a ticket from the HTTP API (how a client in AWS connects): the owner
    // follows the operation to its end; another tenant's ticket is refused the same operation.
    let ws = stack.endpoints.websocket.clone().expect("WebSocket API");
    let timeout = Duration::from_secs(60);
    let w = watch_operation(&alice, &ws, &op, timeout, |_| {}, |_, _, _| {})
        .await
        .expect("the owner follows the operation");
    assert_eq!(w.final_status.as_deref(), Some("failed"));

    // Another tenant sees none of it.
    let bob = anon.with_token(stack.token("tenant-b"));
    let refused = watch_operation(&bob, &ws, &op, timeout, |_| {}, |_, _, _| {}).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("subscription refused")),
        "{:?}",
        refused.map(|w| w.final_status)
    );
    assert_eq!(
        bob.get(&format!("/v1/clusters/{cluster}")).await.unwrap().status,
        404
    );
    assert_eq!(
        bob.get(&format!("/v1/operations/{op}")).await.unwrap().status,
        404
    );
    assert_eq!(
        bob.delete(&format!("/v1/clusters/{cluster}"))
            .await
            .unwrap()
            .status,
        404
    );
    let list = bob.get("/v1/clusters").await.unwrap();
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(!list.text.contains(&cluster), "{}", list.text);
    // …and the same name is free for them.
    let (bob_cluster, _, _) = bob.create_cluster(&create_body("web-1")).await.unwrap();
    assert_ne!(bob_cluster, cluster);
    let mine = alice.get("/v1/clusters").await.unwrap();
    assert!(
        mine.text.contains(&cluster) && !mine.text.contains(&bob_cluster),
        "{}",
        mine.text
    );

    stack.shutdown(Duration::from_secs(30)).await;
}

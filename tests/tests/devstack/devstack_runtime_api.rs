//! Each function's real Lambda binary, run through devstack's Lambda Runtime API emulator with its
//! `events/` samples: the same `main.rs`, runtime client and serialization as on AWS Lambda.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use strato_devstack::runtime_api::{InvokeError, LambdaProcess, sample_events};
use strato_devstack::stack::sibling_binary;
use strato_testbed::TestEnv;

const TIMEOUT: Duration = Duration::from_secs(60);

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The function binaries. `cargo test --workspace` builds them (each package has integration tests); a
/// test run of this package alone builds them here.
fn binary(package: &str) -> PathBuf {
    let path = sibling_binary(package);
    if path.is_file() {
        return path;
    }
    let status = Command::new(option_env!("CARGO").unwrap_or("cargo"))
        .args(["build", "--quiet", "-p", package, "--bin", package])
        .current_dir(workspace())
        .status()
        .expect("running cargo build");
    assert!(status.success(), "cargo build -p {package} failed");
    let path = sibling_binary(package);
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

fn env_for(env: &TestEnv, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![
        ("AWS_ENDPOINT_URL".into(), env.endpoint.clone()),
        ("AWS_REGION".into(), env.region.clone()),
        ("AWS_ACCESS_KEY_ID".into(), "testing".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "testing".into()),
        ("STRATO_RESOURCE_PREFIX".into(), env.names.prefix().to_owned()),
    ];
    out.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    out
}

fn sample(dir: &str, name: &str) -> Value {
    sample_events(&workspace().join("events"), dir)
        .unwrap()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no events/{dir}/{name}.json"))
        .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devstack_runtime_api_runs_the_api_binary_with_its_samples() {
    let bin = tokio::task::spawn_blocking(|| binary("strato-api"))
        .await
        .unwrap();
    let env = TestEnv::new().await;
    // Configured as infra/ configures it, the WebSocket ticket secret included.
    let api_env = env_for(
        &env,
        &[("STRATO_JWT_SECRET", "runtime-api-test-secret-0123456789abcdef")],
    );
    let f = LambdaProcess::spawn(&bin, "strato-api", &api_env).await.unwrap();

    let r = f.invoke(sample("api", "healthz"), TIMEOUT).await.unwrap();
    assert_eq!(r["statusCode"], 200, "{r}");
    let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "ok");

    // A DynamoDB-backed route: the sample's tenant has no such cluster in this fresh environment.
    let r = f.invoke(sample("api", "get-cluster"), TIMEOUT).await.unwrap();
    assert_eq!(r["statusCode"], 404, "{r}");
    assert_eq!(r["headers"]["content-type"], "application/problem+json", "{r}");

    // A batch of the `rollouts` queue is drained, not routed: its answer is the partial batch response (a
    // record that is no rollout input is acknowledged and logged, so nothing is handed back).
    let batch = serde_json::json!({"Records": [{
        "messageId": "m-1", "receiptHandle": "rh-1", "body": "not a rollout input",
        "eventSource": "aws:sqs", "awsRegion": "us-east-1",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:strato-rollouts.fifo",
        "attributes": {"MessageGroupId": "ro-1", "ApproximateReceiveCount": "1"},
        "messageAttributes": {}, "md5OfBody": ""
    }]});
    let r = f.invoke(batch, TIMEOUT).await.unwrap();
    assert_eq!(r["batchItemFailures"], serde_json::json!([]), "{r}");
    assert!(r.get("statusCode").is_none(), "{r}");

    // Every api sample is answered (no crash, no runtime error), each with an HTTP status.
    for (name, event) in sample_events(&workspace().join("events"), "api").unwrap() {
        let r = f
            .invoke(event, TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let status = r["statusCode"].as_u64().unwrap_or_else(|| panic!("{name}: {r}"));
        assert!((200..500).contains(&status), "{name}: {r}");
    }
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devstack_runtime_api_runs_the_sqs_function_binaries_with_their_samples() {
    let (dispatcher, status, webhooks) = tokio::task::spawn_blocking(|| {
        (
            binary("strato-dispatcher"),
            binary("strato-status"),
            binary("strato-webhooks"),
        )
    })
    .await
    .unwrap();
    let env = TestEnv::new().await;
    // The run-proof key by reference, as infra/ gives it: the binaries read it from Secrets Manager at start.
    // It is the key the sample runner events' proofs were made with.
    let proof_key = env
        .create_secret("run-proof-secret", "sample-run-proof-key-of-32-bytes")
        .await;
    let runner_settings = [
        ("STRATO_RUNNER_CLUSTER", "runners"),
        ("STRATO_RUNNER_TASK_DEFINITION", "runner"),
        ("STRATO_RUNNER_SUBNETS", "subnet-1"),
        ("STRATO_RUNNER_SECURITY_GROUPS", "sg-1"),
        ("STRATO_RUN_PROOF_SECRET_ARN", proof_key.as_str()),
    ];
    let d = LambdaProcess::spawn(&dispatcher, "strato-dispatcher", &env_for(&env, &runner_settings))
        .await
        .unwrap();
    // The sample job names an operation this environment does not have: the dispatcher reports the record
    // as a batch item failure (SQS redelivers it, then the DLQ takes it).
    let event = sample("dispatcher", "job-create");
    let id = event["Records"][0]["messageId"].clone();
    let r = d.invoke(event, TIMEOUT).await.unwrap();
    assert_eq!(
        r["batchItemFailures"],
        serde_json::json!([{"itemIdentifier": id}]),
        "{r}"
    );
    d.stop().await;

    let proof_ref = [("STRATO_RUN_PROOF_SECRET_ARN", proof_key.as_str())];
    let s = LambdaProcess::spawn(&status, "strato-status", &env_for(&env, &proof_ref))
        .await
        .unwrap();
    // ECS events for unknown operations are acknowledged (not Strato's task, nothing to retry).
    for name in ["ecs-task-stopped-exit0", "ecs-task-stopped-oom"] {
        let r = s.invoke(sample("status", name), TIMEOUT).await.unwrap();
        assert_eq!(r["batchItemFailures"], serde_json::json!([]), "{name}: {r}");
    }
    // Every sample gets a well-formed partial batch response (runner events for an operation that is not
    // there yet may be retried: the status function tolerates reordering).
    for (name, event) in sample_events(&workspace().join("events"), "status").unwrap() {
        let ids: Vec<Value> = event["Records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["messageId"].clone())
            .collect();
        let r = s
            .invoke(event, TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let failures = r["batchItemFailures"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {r}"));
        assert!(
            failures.iter().all(|f| ids.contains(&f["itemIdentifier"])),
            "{name}: {r}"
        );
    }
    s.stop().await;

    // The webhooks function: a notification for an operation this environment does not have is dropped
    // (acknowledged, nothing to post or note); every sample gets a well-formed response.
    let w = LambdaProcess::spawn(&webhooks, "strato-webhooks", &env_for(&env, &[]))
        .await
        .unwrap();
    let r = w
        .invoke(sample("webhooks", "drift-detected"), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r["batchItemFailures"], serde_json::json!([]), "{r}");
    for (name, event) in sample_events(&workspace().join("events"), "webhooks").unwrap() {
        let r = w
            .invoke(event, TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(r["batchItemFailures"].is_array(), "{name}: {r}");
    }
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devstack_runtime_api_reports_a_function_that_cannot_start() {
    let bin = tokio::task::spawn_blocking(|| binary("strato-api"))
        .await
        .unwrap();
    // No STRATO_RESOURCE_PREFIX: the api's Config::from_env fails before it takes an invocation.
    let f = LambdaProcess::spawn(&bin, "strato-api", &[]).await.unwrap();
    match f.invoke(sample("api", "healthz"), TIMEOUT).await {
        Err(InvokeError::Exited(why)) => assert!(why.contains("STRATO_RESOURCE_PREFIX"), "{why}"),
        other => panic!("expected the start failure, got {other:?}"),
    }
    f.stop().await;
}

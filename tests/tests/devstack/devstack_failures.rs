//! Failures end to end, through devstack's HTTP and WebSocket endpoints (the SDK only looks into moto
//! afterwards, for what a user cannot see): a template that fails half-way ends FAILED with what/step/fix
//! and leaves nothing behind; a runner killed mid-apply ends FAILED with its exit code, and a retry of the
//! cluster still runs to ACTIVE (clearing the Terraform state lock the killed run left).

use crate::devstack_support;

use std::time::{Duration, Instant};

use devstack_support::fixtures;
use serde_json::json;
use strato_aws::store::Store;
use strato_devstack::client::Client;
use strato_devstack::{Devstack, DevstackConfig};
use strato_domain::ids::{ClusterId, TenantId};

async fn start() -> Devstack {
    let f = fixtures();
    let stack = devstack_support::start(DevstackConfig {
        templates_root: None,
        extra_templates: vec![
            (f.join("fail-midway"), f.clone()),
            (f.join("hold-apply"), f.clone()),
        ],
        runner_grace: Duration::from_secs(10),
        // The sweeper also releases a dead run's state lock, once nothing is open on the cluster: kept out
        // of the way, so what the killed-runner test sees is the retry's own doing.
        sweep_rate: Duration::from_secs(24 * 3600),
        ..devstack_support::config("fl").await
    })
    .await;
    assert_eq!(stack.published.len(), 2, "{:?}", stack.published);
    stack
}

fn store(stack: &Devstack) -> Store {
    Store::new(stack.env.aws.dynamodb.clone(), &stack.env.names)
}

/// Terraform state locks (not digests) held on this cluster's states.
async fn state_locks(stack: &Devstack, cluster: &str) -> Vec<String> {
    let out = stack
        .env
        .aws
        .dynamodb
        .scan()
        .table_name(stack.env.names.table("tf-locks"))
        .send()
        .await
        .unwrap();
    out.items()
        .iter()
        .filter_map(|i| i.get("LockID").and_then(|v| v.as_s().ok()).cloned())
        .filter(|id| id.contains(cluster) && !id.ends_with("-md5"))
        .collect()
}

/// Waits until the cluster lock and the tenant's slots are free: status releases them right after it
/// records the operation's end, which a client may see first.
async fn wait_released(stack: &Devstack, tenant: &str, cluster: &str) {
    let store = store(stack);
    let (tenant, cluster): (TenantId, ClusterId) = (tenant.parse().unwrap(), cluster.parse().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let lock = store.cluster_lock(&cluster).await.unwrap();
        let slots = store.tenant_slots(&tenant).await.unwrap();
        if lock.is_none() && slots.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still held after 60 s: cluster lock {lock:?}, tenant slots {slots:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn vpc_cidrs(stack: &Devstack) -> Vec<String> {
    strato_devstack::moto_ctl::ec2_values(
        &stack.env.http,
        &stack.env.endpoint,
        &stack.env.region,
        "DescribeVpcs",
        "cidrBlock",
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_template_ends_failed_with_what_step_fix_and_leaves_nothing_behind() {
    let stack = start().await;
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());
    let (cluster, op, _) = api
        .create_cluster(&json!({
            "name": "midway",
            "template": {"name": "fixture-fail-midway", "version": "0.1.0"},
            "provider": "aws",
            "region": "us-east-1",
            "variables": {}
        }))
        .await
        .unwrap();
    let w = devstack_support::follow(&stack, &token, &op).await;
    assert_eq!(w.final_status.as_deref(), Some("failed"), "{:?}", w.states);
    let log: Vec<&str> = w.lines.values().map(|l| l.text.as_str()).collect();
    if std::env::var_os("DEBUG_LOG").is_some() {
        for l in w.lines.values() {
            println!("{:>4} {:<10} {}", l.seq, l.step, l.text);
        }
    }
    assert!(
        log.iter().any(|l| l.contains("InvalidSubnet.Range")),
        "the provider's error is in the log"
    );

    let done = api.wait_operation(&op, Duration::from_secs(60)).await.unwrap();
    assert_eq!(done["status"], "failed", "{done}");
    let err = &done["error"];
    let (what, step, fix) = (
        err["what"].as_str().unwrap_or_default(),
        err["step"].as_str().unwrap_or_default(),
        err["fix"].as_str().unwrap_or_default(),
    );
    assert!(
        what.contains("InvalidSubnet.Range"),
        "what names the cause: {err}"
    );
    assert!(
        what.contains("cleaned up 1 resource(s): module.fail-midway.aws_vpc.this"),
        "what says the cleanup destroyed the VPC: {err}"
    );
    assert!(step.ends_with("apply"), "step names the apply: {err}");
    assert!(!fix.is_empty(), "a fix is given: {err}");
    let c = api
        .wait_cluster_state(&cluster, &["FAILED"], Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(c["state"], "FAILED");

    // No leftovers: the VPC is gone from the cloud, and no lock of any kind is held.
    assert!(
        !vpc_cidrs(&stack).await.contains(&"10.77.0.0/16".to_owned()),
        "the fixture's VPC was destroyed by the cleanup"
    );
    wait_released(&stack, "acme", &cluster).await;
    assert_eq!(state_locks(&stack, &cluster).await, Vec::<String>::new());
    stack.shutdown(Duration::from_secs(30)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_killed_mid_apply_fails_the_operation_and_a_retry_still_runs() {
    let stack = start().await;
    let hold = tempfile::tempdir().unwrap();
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());
    let (cluster, op, _) = api
        .create_cluster(&json!({
            "name": "killed",
            "template": {"name": "fixture-hold-apply", "version": "0.1.0"},
            "provider": "aws",
            "region": "us-east-1",
            "variables": {"hold_dir": hold.path().display().to_string()}
        }))
        .await
        .unwrap();

    // The apply has created the VPC and waits in its provisioner: kill the runner right there.
    let deadline = Instant::now() + Duration::from_secs(600);
    while !hold.path().join("reached").exists() {
        assert!(Instant::now() < deadline, "the apply never got half-way");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let running = api.get(&format!("/v1/operations/{op}")).await.unwrap();
    assert_eq!(running.body["status"], "running", "{}", running.text);
    stack.kill_runner(&op).expect("the runner is running");

    let done = api.wait_operation(&op, Duration::from_secs(300)).await.unwrap();
    assert_eq!(done["status"], "failed", "{done}");
    let what = done["error"]["what"].as_str().unwrap_or_default();
    assert!(
        what.contains("exit code 137"),
        "the exit code reaches the user: {done}"
    );
    assert!(
        !what.contains("OutOfMemory"),
        "a SIGKILL is not reported as out of memory: {done}"
    );
    assert!(
        done["error"]["step"]
            .as_str()
            .is_some_and(|s| s.ends_with("apply")),
        "{done}"
    );
    api.wait_cluster_state(&cluster, &["FAILED"], Duration::from_secs(60))
        .await
        .unwrap();
    wait_released(&stack, "acme", &cluster).await;
    let left = state_locks(&stack, &cluster).await;
    assert_eq!(
        left.len(),
        1,
        "the killed Terraform left its state lock behind: {left:?}"
    );

    // The next operation on the cluster runs: a retry, which finds and clears the dead run's state lock.
    std::fs::write(hold.path().join("release"), b"").unwrap();
    let r = api
        .post(&format!("/v1/clusters/{cluster}/retry"), &json!({}))
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let retry = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let w = devstack_support::follow(&stack, &token, &retry).await;
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{:?}", w.states);
    assert!(
        w.lines.values().any(|l| l
            .text
            .contains(&format!("released Terraform state lock {}", left[0]))),
        "the retry's log says it released the leftover lock"
    );
    let c = api
        .wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();
    assert!(c["outputs"]["vpc_id"].as_str().is_some(), "{c}");
    wait_released(&stack, "acme", &cluster).await;
    assert_eq!(state_locks(&stack, &cluster).await, Vec::<String>::new());
    stack.shutdown(Duration::from_secs(30)).await;
}

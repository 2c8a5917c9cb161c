//! Failure paths against the real engine and moto: a module failing mid-apply is cleaned up, injected
//! throttling is retried, a cancel mid-apply ends CANCELLED and cleaned up, bad credentials fail fast.

use crate::support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use strato_domain::ErrorCategory;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{OperationKind, Target, TargetAccount};
use support::proxy::FaultProxy;
use support::{Bed, final_events, steps_started, the_failure, wait_for_log, wait_for_step};

use strato_testbed::TestEngine;

strato_testbed::engine_matrix!(async a_module_failing_mid_apply_is_cleaned_up);
strato_testbed::engine_matrix!(async throttling_is_retried_with_a_fresh_plan_and_succeeds);
strato_testbed::engine_matrix!(async cancel_mid_apply_ends_cancelled_and_cleaned_up, tf015_only);
strato_testbed::engine_matrix!(async a_target_account_gets_assumed_credentials_and_its_own_state_bucket, tf015_only);
strato_testbed::engine_matrix!(async the_time_limit_interrupts_and_cleans_up_a_create, tf015_only);
strato_testbed::engine_matrix!(async a_drift_check_reports_out_of_band_changes_and_no_artifact_holds_a_sensitive_input);
strato_testbed::engine_matrix!(async a_plan_over_the_tenants_budget_stops_before_apply, tf015_only);
strato_testbed::engine_matrix!(async a_hanging_cleanup_keeps_heartbeats_and_ends_at_the_time_limit, tf015_only);

async fn a_module_failing_mid_apply_is_cleaned_up(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    // The subnet lies outside the VPC: the VPC and security group get created, then the subnet fails.
    let spec = bed.spec(
        "runner-net",
        "fail-mid",
        json!({"subnet_cidrs": ["10.99.1.0/24"]}),
    );
    let (cluster, job) = bed.create(spec).await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let error = the_failure(&events);
    assert_eq!(error.step, "apply", "{error:?}");
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert!(error.what.contains("InvalidSubnet"), "{}", error.what);
    assert!(
        error.what.contains("cleaned up") && error.what.contains("aws_vpc.this"),
        "{}",
        error.what
    );
    assert!(steps_started(&events).iter().any(|s| s == "cleanup"));
    assert!(
        bed.state_types(&cluster, "main").await.is_empty(),
        "everything destroyed"
    );
    assert!(bed.held_locks().await.is_empty());
}

async fn throttling_is_retried_with_a_fresh_plan_and_succeeds(engine: TestEngine) {
    // Provider 3.39's `max_retries` counts retries, 5.x's counts attempts ("the maximum number of times an
    // AWS API request is being executed"): 1 and 2 both mean one retry.
    let max_retries = if engine.is_modern() { "2" } else { "1" };
    let bed = Bed::with_engine(engine).await;
    // The provider retries once by itself: three throttled CreateVpc calls make the first apply fail with
    // RequestLimitExceeded; the runner plans again and the second apply succeeds.
    let proxy = FaultProxy::start(&bed.env.endpoint, "CreateVpc", 3).await;
    let spec = bed.spec("runner-net", "throttled", json!({}));
    let (cluster, job) = bed.create(spec).await;
    let cfg = bed.config(
        &job,
        &[
            ("STRATO_PROVIDER_ENDPOINT", proxy.endpoint.as_str()),
            ("STRATO_PROVIDER_MAX_RETRIES", max_retries),
        ],
    );
    bed.run(cfg).await.expect("final event sent");
    let events = bed.events().await;
    let finals = final_events(&events);
    assert!(
        matches!(finals[..], [RunnerEvent::Succeeded { .. }]),
        "{finals:#?}"
    );
    assert_eq!(proxy.injected.load(Ordering::SeqCst), 3, "every fault was served");
    let steps = steps_started(&events);
    let count = |s: &str| steps.iter().filter(|x| *x == s).count();
    assert_eq!(count("apply"), 2, "{steps:?}");
    assert_eq!(count("plan"), 2, "re-planned before the retried apply: {steps:?}");
    let failed_apply = events
        .iter()
        .any(|e| matches!(e, RunnerEvent::StepFinished { step, ok: false, .. } if step == "apply"));
    assert!(failed_apply);
    let (lines, _) = bed.archived_log(&job).await;
    assert!(lines.iter().any(|l| l.text.contains("RequestLimitExceeded")));
    assert!(lines.iter().any(|l| l.text.contains("transient failure")));
    assert_eq!(
        bed.state_types(&cluster, "main").await,
        ["aws_ec2_tag", "aws_security_group", "aws_subnet", "aws_vpc"]
    );
}

async fn cancel_mid_apply_ends_cancelled_and_cleaned_up(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    let spec = bed.spec("runner-net", "cancel-me", json!({"slow_seconds": 300}));
    let (cluster, job) = bed.create(spec).await;
    let cfg = bed.config(&job, &[]);
    let started = Instant::now();
    let run = {
        let clients = strato_runner::Clients::new(bed.env.aws.clone(), &cfg)
            .await
            .unwrap();
        tokio::spawn(strato_runner::run_operation(cfg, clients))
    };
    // Wait until the apply is under way (the network exists, the last resource's provisioner sleeps), then
    // ask to cancel.
    let mut events = Vec::new();
    wait_for_step(&bed, &mut events, "apply").await;
    wait_for_log(&bed, &job, "(local-exec): Executing").await;
    let mut op = bed
        .store
        .get_operation(&job.op.operation_id)
        .await
        .unwrap()
        .unwrap();
    op.cancel_requested = true;
    bed.store.save_operation(&mut op, false).await.unwrap();

    let summary = tokio::time::timeout(Duration::from_secs(240), run)
        .await
        .expect("the runner stops well before the apply would have finished")
        .unwrap()
        .expect("final event sent");
    assert!(started.elapsed() < Duration::from_secs(200));
    events.extend(bed.events().await);
    let finals = final_events(&events);
    assert!(
        matches!(finals[..], [RunnerEvent::Cancelled { .. }]),
        "{finals:#?}"
    );
    assert_eq!(&summary.final_event, finals[0]);
    if !steps_started(&events).iter().any(|s| s == "cleanup") {
        bed.dump_log(&job).await;
        panic!(
            "a cancelled create is cleaned up: {:#?}",
            bed.state(&cluster, "main").await
        );
    }
    assert!(bed.state_types(&cluster, "main").await.is_empty());
    assert!(bed.held_locks().await.is_empty());
    let (lines, _) = bed.archived_log(&job).await;
    assert!(
        lines
            .iter()
            .any(|l| l.text.contains("stopping the engine (Cancelled)"))
    );
}

/// Fails in the credential preflight, before any engine command: run with the bed's engine only.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_credentials_endpoint_fails_fast_with_the_credentials_category() {
    let bed = Bed::new().await;
    // A port nothing listens on: bind, note, drop.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    bed.issue_external_id().await;
    let mut spec = bed.spec("runner-net", "no-creds", json!({}));
    spec.target = Some(Target::Aws(TargetAccount {
        role_arn: "arn:aws:iam::210987654321:role/strato".into(),
        state_bucket: None,
        lock_table: None,
        region: None,
        ..Default::default()
    }));
    let (_cluster, job) = bed.create(spec).await;
    let sts = format!("http://127.0.0.1:{closed}");
    let cfg = bed.config(
        &job,
        &[
            ("STRATO_STS_ENDPOINT", sts.as_str()),
            ("STRATO_PREFLIGHT_TIMEOUT_SECS", "5"),
        ],
    );
    let started = Instant::now();
    bed.run(cfg).await.expect("final event sent");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let events = bed.events().await;
    let error = the_failure(&events);
    assert_eq!(error.category, ErrorCategory::Credentials, "{error:?}");
    assert_eq!(error.step, "prepare");
    assert!(
        error.what.contains("arn:aws:iam::210987654321:role/strato"),
        "{}",
        error.what
    );
    assert_eq!(steps_started(&events), ["prepare"], "no engine command ran");
}

async fn a_target_account_gets_assumed_credentials_and_its_own_state_bucket(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    let bucket = format!("{}-customer-state", bed.env.names.prefix());
    // The tenant's issued external id also goes into a tag, so the engine's plan output prints it: the log
    // must not. The tag is sealed at rest, as the api seals sensitive variables: the runner opens it.
    let issued = bed.issue_external_id().await;
    let external_id = issued.as_str();
    let mut spec = bed.spec("runner-net", "own-state", json!({"tags": {"ref": external_id}}));
    spec.target = Some(Target::Aws(TargetAccount {
        role_arn: "arn:aws:iam::210987654321:role/strato".into(),
        state_bucket: Some(bucket.clone()),
        lock_table: None,
        region: None,
        ..Default::default()
    }));
    let (cluster, job) = bed.create_sealed(spec, &["tags"]).await;
    let raw = bed
        .store
        .get_cluster(&bed.tenant, &cluster.cluster_id)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !serde_json::to_string(&raw).unwrap().contains(external_id),
        "sealed at rest"
    );
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let finals = final_events(&events);
    assert!(
        matches!(finals[..], [RunnerEvent::Succeeded { .. }]),
        "{finals:#?}"
    );
    // State lives in the customer's bucket (created versioned), not the platform's.
    let key = strato_terraform::render::state_key(&cluster.tenant_id, &cluster.cluster_id, "main");
    let obj = bed
        .env
        .aws
        .s3
        .get_object()
        .bucket(&bucket)
        .key(&key)
        .send()
        .await
        .unwrap();
    let state: serde_json::Value =
        serde_json::from_slice(&obj.body.collect().await.unwrap().into_bytes()).unwrap();
    let managed = state["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["mode"] == "managed")
        .count();
    assert_eq!(managed, 4, "vpc, subnets, security group, tag");
    assert!(
        state.to_string().contains(external_id),
        "the sealed variable was opened and rendered with its value"
    );
    assert!(bed.state(&cluster, "main").await.is_none());
    // Versioned: the object carries a real version id (moto's GetBucketVersioning XML is not SDK-readable).
    let versions = bed
        .env
        .aws
        .s3
        .list_object_versions()
        .bucket(&bucket)
        .prefix(&key)
        .send()
        .await
        .unwrap();
    assert!(
        versions
            .versions()
            .iter()
            .any(|v| v.version_id().is_some_and(|id| id != "null")),
        "{versions:?}"
    );
    // The assumed session's secrets and the external id never reach the log.
    let (lines, _) = bed.archived_log(&job).await;
    assert!(lines.iter().any(|l| l.text.contains("credentials checked")));
    assert!(
        lines.iter().any(|l| l.text.contains("(sensitive value)")),
        "the tag carrying it was printed, redacted"
    );
    assert!(
        !lines.iter().any(|l| l.text.contains(external_id)),
        "the external id is redacted from every log line"
    );
    // Clean up for the shared moto.
    bed.release(&cluster, &job).await;
    let job = bed.operation(&cluster, OperationKind::Delete, None).await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    assert!(matches!(
        final_events(&bed.events().await)[..],
        [RunnerEvent::Succeeded { .. }]
    ));
}

async fn the_time_limit_interrupts_and_cleans_up_a_create(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    let spec = bed.spec("runner-net", "too-slow", json!({"slow_seconds": 300}));
    let (cluster, job) = bed.create(spec).await;
    let started = Instant::now();
    // The stages stop at 40 s; the last 40 s of the limit are the cleanup's.
    let limits = [
        ("STRATO_TIME_LIMIT_SECS", "80"),
        ("STRATO_CLEANUP_RESERVE_SECS", "40"),
    ];
    bed.run(bed.config(&job, &limits))
        .await
        .expect("final event sent");
    assert!(
        started.elapsed() < Duration::from_secs(150),
        "{:?}",
        started.elapsed()
    );
    let events = bed.events().await;
    let error = the_failure(&events);
    assert_eq!(error.category, ErrorCategory::Timeout, "{error:?}");
    assert!(error.retryable);
    assert!(bed.state_types(&cluster, "main").await.is_empty());
    assert!(bed.held_locks().await.is_empty());
}

async fn a_drift_check_reports_out_of_band_changes_and_no_artifact_holds_a_sensitive_input(
    engine: TestEngine,
) {
    let bed = Bed::with_engine(engine).await;
    const SECRET: &str = "drift-s3cret-password-value";
    let spec = bed.spec("runner-net", "drifty", json!({"db_password": SECRET}));
    let (cluster, job) = bed.create_sealed(spec, &["db_password"]).await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let [RunnerEvent::Succeeded { outputs, .. }] = final_events(&events)[..] else {
        panic!("{events:#?}");
    };
    let vpc = outputs["vpc_id"].as_str().unwrap().to_owned();
    bed.release(&cluster, &job).await;

    // Someone renames the VPC outside Strato.
    let resp = support::ec2_call(
        &bed.env.endpoint,
        &format!(
            "Action=CreateTags&ResourceId.1={vpc}&Tag.1.Key=Name&Tag.1.Value=renamed&Version=2016-11-15"
        ),
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");

    let job = bed.operation(&cluster, OperationKind::DriftCheck, None).await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let [RunnerEvent::Succeeded { drift, .. }] = final_events(&events)[..] else {
        panic!("{events:#?}");
    };
    let drift = drift.clone().expect("a drift check reports drift");
    support::assert_engine_used_cleanly(&bed, &job).await;
    // An engine >= 0.15.4 checks drift with `plan -refresh-only` (the change is reported as drift, nothing
    // would be undone); the 0.15.0-rc2 bed with a plain plan.
    let (lines, _) = bed.archived_log(&job).await;
    let refresh_only = lines
        .iter()
        .any(|l| l.text.contains("This is a refresh-only plan"));
    assert_eq!(refresh_only, bed.engine.is_modern(), "refresh-only plan");
    assert!(
        drift
            .iter()
            .any(|c| c.address == "module.net.aws_vpc.this" && c.actions == ["update"]),
        "{drift:?}"
    );
    // No saved plan (every input and the prior state) is kept, and no artifact of either run — log chunks,
    // debug logs, markers — holds the sensitive input.
    let bucket = bed.env.names.bucket("artifacts");
    let listed = bed
        .env
        .aws
        .s3
        .list_objects_v2()
        .bucket(&bucket)
        .send()
        .await
        .unwrap();
    let keys: Vec<String> = listed
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect();
    assert!(keys.iter().any(|k| k.starts_with("logs/")), "{keys:?}");
    assert!(!keys.iter().any(|k| k.starts_with("plans/")), "{keys:?}");
    for key in &keys {
        let obj = bed
            .env
            .aws
            .s3
            .get_object()
            .bucket(&bucket)
            .key(key)
            .send()
            .await
            .unwrap();
        let body = obj.body.collect().await.unwrap().into_bytes();
        assert!(
            !String::from_utf8_lossy(&body).contains(SECRET),
            "{key} holds the sensitive input"
        );
    }
    assert!(
        !steps_started(&events).iter().any(|s| s == "apply"),
        "a drift check changes nothing"
    );
}

/// The tenant's monthly budget stops an apply whose plan costs more, before anything of that stage is
/// applied; the plan's estimate (EKS control plane, priced from the shipped table) is reported first.
async fn a_plan_over_the_tenants_budget_stops_before_apply(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    bed.store
        .set_monthly_budget(&bed.tenant, Some(50.0))
        .await
        .unwrap();
    let spec = bed.spec("runner-eks", "pricey", json!({}));
    let (cluster, job) = bed.create(spec).await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let estimates: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            RunnerEvent::PlanReady { stage, estimate, .. } => Some((stage.clone(), estimate.clone())),
            _ => None,
        })
        .collect();
    let cluster_stage = estimates
        .iter()
        .find(|(s, _)| s == "cluster")
        .and_then(|(_, e)| e.clone())
        .expect("the cluster stage was planned and priced");
    assert!(
        cluster_stage
            .resources
            .iter()
            .any(|r| r.resource_type == "aws_eks_cluster" && r.monthly == Some(73.0)),
        "{cluster_stage:?}"
    );
    let error = the_failure(&events);
    assert_eq!(error.category, ErrorCategory::Quota, "{error:?}");
    assert_eq!(error.step, "cluster/plan");
    assert!(error.what.contains("budget of 50.00 USD"), "{}", error.what);
    assert!(error.fix.contains("budget"), "{}", error.fix);
    assert!(
        bed.state_types(&cluster, "cluster").await.is_empty(),
        "the over-budget stage applied nothing"
    );
    assert!(bed.held_locks().await.is_empty());
}

/// Issue 15 defect 5: the cleanup of a failed create runs under the run's guards. Heartbeats go on while it
/// destroys (the sweeper must not take the run for dead), and the task's time limit interrupts a destroy
/// that hangs, gracefully (no state lock left), with a final event naming what is left. Before, the
/// heartbeat, cancel poll, time limit and SIGTERM listener were aborted before the cleanup began.
async fn a_hanging_cleanup_keeps_heartbeats_and_ends_at_the_time_limit(engine: TestEngine) {
    // The modern engine's provider 5 takes about three times the CPU of 3.39 per command: on a loaded
    // 2-core machine its create needs longer to reach the failing subnet.
    let scale = if engine.is_modern() { 2 } else { 1 };
    let bed = Bed::with_engine(engine).await;
    // The subnet fails; destroying the VPC's tag then sleeps 300 s in a destroy-time provisioner.
    let spec = bed.spec(
        "runner-net",
        "slow-cleanup",
        json!({"subnet_cidrs": ["10.99.1.0/24"], "slow_destroy_seconds": 300}),
    );
    let (_cluster, job) = bed.create(spec).await;
    // The subnet fails long before the stages' 35 s; the cleanup is stopped at 70 s (twice that, modern).
    let (limit, reserve) = ((70 * scale).to_string(), (35 * scale).to_string());
    let limits = [
        ("STRATO_TIME_LIMIT_SECS", limit.as_str()),
        ("STRATO_CLEANUP_RESERVE_SECS", reserve.as_str()),
    ];
    let cfg = bed.config(&job, &limits);
    let started = Instant::now();
    let run = {
        let clients = strato_runner::Clients::new(bed.env.aws.clone(), &cfg)
            .await
            .unwrap();
        tokio::spawn(strato_runner::run_operation(cfg, clients))
    };
    let summary = tokio::time::timeout(Duration::from_secs(200 * scale), run)
        .await
        .expect("the time limit ends a hanging cleanup")
        .unwrap()
        .expect("final event sent");
    assert!(
        started.elapsed() < Duration::from_secs(80 * scale + 70),
        "{:?}",
        started.elapsed()
    );
    let events = bed.events().await;
    let error = the_failure(&events);
    let finals = final_events(&events);
    assert_eq!(&summary.final_event, finals[0]);
    assert_eq!(error.category, ErrorCategory::CleanupFailed, "{error:?}");
    assert!(error.what.contains("time limit"), "{}", error.what);
    assert!(
        error.what.contains("aws_vpc.this"),
        "what is left is named: {}",
        error.what
    );
    let cleanup_started = events
        .iter()
        .find_map(|e| match e {
            RunnerEvent::StepStarted { step, at, .. } if step == "cleanup" => Some(*at),
            _ => None,
        })
        .expect("cleanup ran");
    let beats = events
        .iter()
        .filter(|e| matches!(e, RunnerEvent::Heartbeat { at, .. } if *at > cleanup_started))
        .count();
    assert!(beats >= 10, "heartbeats during the cleanup: {beats}");
    assert!(
        bed.held_locks().await.is_empty(),
        "the destroy was interrupted gracefully"
    );
    let (lines, _) = bed.archived_log(&job).await;
    assert!(
        lines
            .iter()
            .any(|l| l.text.contains("stopping the engine (TimedOut)")),
        "the destroy got SIGINT"
    );
}

/// Issue 15 defect 6: holding the cluster lock is no proof that a Terraform state lock of the cluster is
/// dead. An earlier run still RUNNING (its lease expired, its task alive) keeps its state lock: the new run
/// waits (bounded), then fails with `state_locked` naming that run, having run nothing. Once the earlier
/// run has ended, the next run releases the lock (noted in its log) and succeeds. Before, the runner
/// deleted any state lock of its cluster at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_state_lock_of_a_live_run_is_kept_until_that_run_has_ended() {
    use strato_aws::store::Quotas;
    use strato_domain::model::{Operation, OperationStatus};
    let bed = Bed::new().await;
    let spec = bed.spec("runner-net", "live-holder", json!({}));
    let (cluster, job) = bed.create(spec.clone()).await;
    let mut earlier = Operation::new(
        bed.tenant.clone(),
        cluster.cluster_id.clone(),
        OperationKind::Update,
        strato_domain::ts::now(),
    );
    earlier.status = OperationStatus::Running;
    earlier.task_arn = Some("arn:aws:ecs:us-east-1:123456789012:task/runner/0f1e2d".into());
    bed.store
        .add_operation(&earlier, &Quotas::default())
        .await
        .unwrap()
        .unwrap();
    let key = strato_terraform::render::state_key(&cluster.tenant_id, &cluster.cluster_id, "main");
    let lock_id = strato_aws::state_lock::lock_id(&bed.env.names.bucket("state"), &key);
    let info = r#"{"ID":"5f0c","Operation":"OperationTypeApply","Who":"runner@ip-10-0-1-7","Version":"0.15.0","Created":"2026-01-01T00:00:00Z","Path":""}"#;
    bed.env
        .aws
        .dynamodb
        .put_item()
        .table_name(bed.env.names.table("tf-locks"))
        .item(
            "LockID",
            aws_sdk_dynamodb::types::AttributeValue::S(lock_id.clone()),
        )
        .item("Info", aws_sdk_dynamodb::types::AttributeValue::S(info.into()))
        .send()
        .await
        .unwrap();

    bed.run(bed.config(&job, &[("STRATO_STATE_LOCK_WAIT_SECS", "2")]))
        .await
        .expect("final event sent");
    let events = bed.events().await;
    let [RunnerEvent::Failed { error, .. }] = final_events(&events)[..] else {
        panic!("{events:#?}");
    };
    assert_eq!(error.category, ErrorCategory::StateLocked, "{error:?}");
    assert_eq!(error.step, "prepare");
    assert!(
        error.what.contains(&earlier.operation_id.to_string()) && error.what.contains(&lock_id),
        "{}",
        error.what
    );
    assert!(
        error.fix.contains(&earlier.operation_id.to_string()),
        "{}",
        error.fix
    );
    assert_eq!(steps_started(&events), ["prepare"], "no engine command ran");
    assert_eq!(
        bed.held_locks().await,
        std::slice::from_ref(&lock_id),
        "the live run's lock is kept"
    );

    // The next run waits; meanwhile the earlier run ends (its task stopped, status failed it).
    bed.release(&cluster, &job).await;
    let job = bed.operation(&cluster, OperationKind::Create, Some(spec)).await;
    let ender = {
        let store = bed.store.clone();
        let id = earlier.operation_id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(4)).await;
            let mut op = store.get_operation(&id).await.unwrap().unwrap();
            op.status = OperationStatus::Failed;
            store.save_operation(&mut op, false).await.unwrap();
        })
    };
    let started = Instant::now();
    bed.run(bed.config(&job, &[("STRATO_STATE_LOCK_WAIT_SECS", "120")]))
        .await
        .expect("final event sent");
    ender.await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "it waited for the holder to end"
    );
    let events = bed.events().await;
    assert!(
        matches!(final_events(&events)[..], [RunnerEvent::Succeeded { .. }]),
        "{events:#?}"
    );
    let (lines, _) = bed.archived_log(&job).await;
    assert!(
        lines.iter().any(
            |l| l.text.contains("released Terraform state lock") && l.text.contains("runner@ip-10-0-1-7")
        ),
        "the release is noted"
    );
    assert!(bed.held_locks().await.is_empty());
}

//! The dispatcher against moto: lock and fencing token, RunTask and its idempotence, parking, tenant limits,
//! state-machine refusals, start failures, and partial batch failures.

use crate::flow_support as support;

use strato_aws::coordination::TENANT_LIMIT_REASON;
use strato_domain::error::ErrorCategory;
use strato_domain::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID};
use strato_domain::model::{ClusterState, OperationKind, OperationStatus};
use support::{World, failures, task_env};

#[tokio::test(flavor = "multi_thread")]
async fn a_job_takes_the_lock_and_starts_exactly_one_runner() {
    let w = World::new().await;
    let (cluster, op) = w.new_cluster("acme", "prod").await;

    let resp = w.dispatch(&[&op]).await;
    assert!(failures(&resp).is_empty());

    let op_now = w.op(&op.operation_id).await;
    assert_eq!(op_now.status, OperationStatus::Dispatched);
    assert_eq!(op_now.attempt, 1);
    assert_eq!(op_now.wait_reason, None);
    let token = op_now.fencing_token.expect("fencing token recorded");
    let arn = op_now.task_arn.clone().expect("task arn recorded");
    assert_eq!(
        w.store.cluster_lock(&cluster.cluster_id).await.unwrap(),
        Some((op.operation_id.clone(), token))
    );
    assert_eq!(
        w.store.tenant_slots(&cluster.tenant_id).await.unwrap(),
        vec![op.operation_id.to_string()]
    );
    assert_eq!(w.cluster(&cluster).await.state(), ClusterState::Provisioning);

    let task = w.task(&arn).await;
    assert_eq!(task.started_by(), Some(op.operation_id.as_str()));
    let env = task_env(&task);
    assert_eq!(env.get(ENV_OPERATION_ID), Some(&op.operation_id.to_string()));
    assert_eq!(env.get(ENV_FENCING_TOKEN), Some(&token.to_string()));

    // Duplicate deliveries, in one batch and later: still one task, nothing changed.
    let resp = w.dispatch(&[&op, &op]).await;
    assert!(failures(&resp).is_empty());
    assert_eq!(w.tasks_of(&op.operation_id).await, vec![arn.clone()]);
    assert_eq!(w.op(&op.operation_id).await, op_now);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redelivered_job_adopts_the_task_its_first_delivery_started() {
    let w = World::new().await;
    let (_, op) = w.new_cluster("acme", "prod").await;
    w.dispatch(&[&op]).await;
    let first = w.op(&op.operation_id).await;
    let arn = first.task_arn.clone().unwrap();

    // As if the first delivery died right after RunTask, before recording the task.
    let mut lost = first.clone();
    lost.task_arn = None;
    lost.status = OperationStatus::Queued;
    lost.attempt = 0;
    w.store.save_operation(&mut lost, false).await.unwrap();

    let resp = w.dispatch(&[&op]).await;
    assert!(failures(&resp).is_empty());
    let again = w.op(&op.operation_id).await;
    assert_eq!(again.task_arn.as_deref(), Some(arn.as_str()));
    assert_eq!(
        again.fencing_token, first.fencing_token,
        "same owner keeps its token"
    );
    assert_eq!(w.tasks_of(&op.operation_id).await, vec![arn]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_for_a_busy_cluster_is_parked_not_started() {
    let w = World::new().await;
    let (cluster, create) = w.new_cluster("acme", "prod").await;
    let delete = w.new_op(&cluster, OperationKind::Delete).await;

    let resp = w.dispatch(&[&create, &delete]).await;
    assert!(failures(&resp).is_empty(), "parking acknowledges the job");

    let parked = w.op(&delete.operation_id).await;
    assert_eq!(parked.status, OperationStatus::Queued);
    assert_eq!(
        parked.wait_reason.as_deref(),
        Some(format!("cluster busy: {}", create.operation_id).as_str())
    );
    assert_eq!(parked.fencing_token, None);
    assert!(w.tasks_of(&delete.operation_id).await.is_empty());
    assert_eq!(w.cluster(&cluster).await.state(), ClusterState::Provisioning);
    let waiting = w.store.open_operations("waiting").await.unwrap();
    assert!(waiting.iter().any(|o| o.operation_id == delete.operation_id));
}

#[tokio::test(flavor = "multi_thread")]
async fn tenant_at_its_limit_parks_the_job_and_frees_the_cluster_lock() {
    let w = World::new().await;
    w.set_concurrency_limit("acme", 1).await;
    let (_, a) = w.new_cluster("acme", "alpha").await;
    let (b_cluster, b) = w.new_cluster("acme", "bravo").await;

    w.dispatch(&[&a, &b]).await;
    assert_eq!(w.op(&a.operation_id).await.status, OperationStatus::Dispatched);
    let parked = w.op(&b.operation_id).await;
    assert_eq!(parked.status, OperationStatus::Queued);
    assert_eq!(parked.wait_reason.as_deref(), Some(TENANT_LIMIT_REASON));
    assert!(w.tasks_of(&b.operation_id).await.is_empty());
    assert_eq!(w.store.cluster_lock(&b_cluster.cluster_id).await.unwrap(), None);
    assert_eq!(w.cluster(&b_cluster).await.state(), ClusterState::Pending);
    assert_eq!(
        w.store.tenant_slots(&b_cluster.tenant_id).await.unwrap(),
        vec![a.operation_id.to_string()]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_update_of_a_failed_cluster_fails_with_a_user_error_and_releases() {
    let w = World::new().await;
    let (cluster, _create) = w.new_cluster("acme", "prod").await;
    // The create failed earlier (the status function recorded it).
    let mut c = w.cluster(&cluster).await;
    c = c.in_state(ClusterState::Failed);
    w.store.save_cluster(&mut c).await.unwrap();
    let update = w.new_op(&cluster, OperationKind::Update).await;

    let resp = w.dispatch(&[&update]).await;
    assert!(failures(&resp).is_empty());
    let failed = w.op(&update.operation_id).await;
    assert_eq!(failed.status, OperationStatus::Failed);
    let err = failed.error.expect("user error");
    assert_eq!(err.step, "dispatch");
    assert_eq!(err.category, ErrorCategory::InvalidConfiguration);
    assert!(
        err.what.contains("FAILED cluster cannot become UPDATING"),
        "{}",
        err.what
    );
    assert!(err.fix.contains("ACTIVE"), "{}", err.fix);
    assert!(w.tasks_of(&update.operation_id).await.is_empty());
    assert_eq!(w.cluster(&cluster).await.state(), ClusterState::Failed);
    assert_eq!(w.store.cluster_lock(&cluster.cluster_id).await.unwrap(), None);
    assert!(w.store.tenant_slots(&cluster.tenant_id).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_that_cannot_start_fails_the_operation_and_the_cluster() {
    let w = World::new().await;
    let (cluster, op) = w.new_cluster("acme", "prod").await;
    let mut ctx = w.dispatcher.clone();
    ctx.config.runner.task_definition = "no-such-family:9".into();

    let resp = strato_dispatcher::handle(&ctx, w.job_event(&[&op]))
        .await
        .unwrap();
    assert!(failures(&resp).is_empty(), "a permanent failure is not retried");
    let failed = w.op(&op.operation_id).await;
    assert_eq!(failed.status, OperationStatus::Failed);
    assert_eq!(failed.task_arn, None);
    let err = failed.error.unwrap();
    assert!(
        err.what.contains("the runner could not be started"),
        "{}",
        err.what
    );
    assert!(err.what.contains("ClientException"), "{}", err.what);
    let c = w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Failed);
    assert_eq!(c.last_error, Some(err));
    assert_eq!(w.store.cluster_lock(&cluster.cluster_id).await.unwrap(), None);
    assert!(w.store.tenant_slots(&cluster.tenant_id).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_bad_record_and_its_group_successors_are_reported() {
    let w = World::new().await;
    let (_, a) = w.new_cluster("acme", "alpha").await;
    let (_, b) = w.new_cluster("acme", "bravo").await;
    let (_, c) = w.new_cluster("acme", "charlie").await;
    let mut event = w.job_event(&[&a, &b, &c]);
    let mut bad = event.records[0].clone();
    bad.message_id = Some("bad-1".into());
    bad.body = Some("{\"operation_id\": 42}".into());
    bad.attributes
        .insert("MessageGroupId".into(), c.cluster_id.to_string());
    // Order: a, bad (group c), b, c — c must not overtake the failed record of its own group.
    event.records.insert(1, bad);

    let resp = strato_dispatcher::handle(&w.dispatcher, event.clone())
        .await
        .unwrap();
    let c_id = event.records[3].message_id.clone().unwrap();
    assert_eq!(failures(&resp), vec!["bad-1".to_owned(), c_id]);
    assert_eq!(w.op(&a.operation_id).await.status, OperationStatus::Dispatched);
    assert_eq!(w.op(&b.operation_id).await.status, OperationStatus::Dispatched);
    assert_eq!(w.op(&c.operation_id).await.status, OperationStatus::Queued);

    // A job for an operation that does not exist is a failure too (it ends in the DLQ).
    let mut ghost = w.job_event(&[&a]);
    ghost.records[0].body = Some(
        ghost.records[0]
            .body
            .clone()
            .unwrap()
            .replace(a.operation_id.as_str(), "op-00000000000000000000000000000000"),
    );
    let resp = strato_dispatcher::handle(&w.dispatcher, ghost.clone())
        .await
        .unwrap();
    assert_eq!(
        failures(&resp),
        vec![ghost.records[0].message_id.clone().unwrap()]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sample_event_parses_as_a_job() {
    let e = support::load_event("dispatcher/job-create.json");
    let job: strato_domain::messages::JobMessage =
        serde_json::from_str(e.records[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(job.kind, OperationKind::Create);
    assert_eq!(
        e.records[0].attributes.get("MessageGroupId"),
        Some(&job.cluster_id.to_string())
    );
}

/// A cancel flagged between the claim and RunTask (a redelivered job finds it) starts no runner: the
/// operation ends CANCELLED, a first create's cluster is FAILED with the reason, and the lock is free for the
/// next operation.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_flagged_before_the_runner_starts_starts_nothing() {
    let w = World::new().await;
    let (cluster, create) = w.new_cluster("acme", "prod").await;
    let mut flagged = w.op(&create.operation_id).await;
    flagged.cancel_requested = true;
    w.store.save_operation(&mut flagged, false).await.unwrap();

    let resp = w.dispatch(&[&create, &create]).await;
    assert!(failures(&resp).is_empty());
    assert!(
        w.tasks_of(&create.operation_id).await.is_empty(),
        "no runner started"
    );
    let op = w.op(&create.operation_id).await;
    assert_eq!(op.status, OperationStatus::Cancelled);
    assert_eq!(
        op.error.as_ref().map(|e| e.category),
        Some(ErrorCategory::Cancelled)
    );
    let c = w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Failed);
    assert!(c.last_error.unwrap().what.contains("before its runner started"));
    assert_eq!(w.store.cluster_lock(&cluster.cluster_id).await.unwrap(), None);
    assert!(w.store.tenant_slots(&cluster.tenant_id).await.unwrap().is_empty());

    // An update of an ACTIVE cluster cancelled the same way leaves the cluster ACTIVE.
    let (other, create2) = w.new_cluster("acme", "other").await;
    w.dispatch(&[&create2]).await;
    let mut c2 = w.cluster(&other).await;
    c2 = c2.in_state(ClusterState::Active);
    w.store.save_cluster(&mut c2).await.unwrap();
    let mut done = w.op(&create2.operation_id).await;
    done.status = OperationStatus::Succeeded;
    w.store.save_operation(&mut done, false).await.unwrap();
    w.store
        .release_cluster_lock(
            &other.cluster_id,
            &create2.operation_id,
            done.fencing_token.unwrap(),
        )
        .await
        .unwrap();
    let update = w.new_op(&other, OperationKind::Update).await;
    let mut u = w.op(&update.operation_id).await;
    u.cancel_requested = true;
    w.store.save_operation(&mut u, false).await.unwrap();
    w.dispatch(&[&update]).await;
    assert_eq!(
        w.op(&update.operation_id).await.status,
        OperationStatus::Cancelled
    );
    assert_eq!(w.cluster(&other).await.state(), ClusterState::Active);
    assert!(w.tasks_of(&update.operation_id).await.is_empty());
}

/// What a create costs before its runner starts, by AWS call, as the create-path benchmark counts them: the
/// api reads the tenant item once (policies and rules together), seals with the tenant's cached data key and
/// writes its audit entry inside the create's transaction; the dispatcher claims the operation the job carries
/// without reading it and writes its entry inside the write that records the task. Each entry is there all
/// the same, with its content.
#[tokio::test(flavor = "multi_thread")]
async fn a_warm_create_costs_three_calls_in_the_api_and_three_in_the_dispatcher_with_both_entries() {
    use std::collections::BTreeMap;

    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
    use lambda_http::request::LambdaRequest;
    use strato_aws::aws::CallCounter;
    use strato_domain::audit::{AuditLog, AuditQuery};
    use strato_domain::template::Template;

    let w = World::new().await;
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../functions/api/tests/fixtures/api-test/template-1.0.0.toml"
    );
    let t = Template::from_toml(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    w.store
        .put_template(&t.manifest, &"0".repeat(64), "templates/api-test/1.0.0.tar.gz")
        .await
        .unwrap();
    let counter = CallCounter::default();
    let counted = w.env.aws.counted(&counter);
    let ecs = aws_sdk_ecs::Client::from_conf(
        aws_sdk_ecs::config::Builder::from(&w.env.aws.config)
            .interceptor(counter.clone())
            .build(),
    );
    let prefix = w.env.names.prefix().to_owned();
    let config =
        strato_api::Config::from_lookup(|k| (k == "STRATO_RESOURCE_PREFIX").then(|| prefix.clone())).unwrap();
    let api = strato_api::service(strato_api::Ctx::new(&counted, config).await.unwrap());
    let dispatcher = strato_dispatcher::Ctx::new(w.config.clone(), &counted, ecs)
        .await
        .unwrap();
    let sample = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../functions/api/tests/fixtures/events/create-cluster.json"
    ))
    .unwrap();
    let request = |name: &str| {
        let mut event: ApiGatewayV2httpRequest = serde_json::from_str(&sample).unwrap();
        let mut body: serde_json::Value = serde_json::from_str(event.body.as_deref().unwrap()).unwrap();
        body["name"] = name.into();
        event.body = Some(body.to_string());
        lambda_http::Request::from(LambdaRequest::ApiGatewayV2(event))
    };
    // A warm api: the template is read once per process, not per create (its first create reads it).
    assert_eq!(api.handle(request("warm-up")).await.status().as_u16(), 202);
    let first = w.take_jobs().await;
    strato_dispatcher::handle(&dispatcher, first).await.unwrap();
    counter.reset();
    let resp = api.handle(request("counted")).await;
    assert_eq!(resp.status().as_u16(), 202, "{:?}", resp.body());
    let api_calls = counter.snapshot();

    let jobs = w.take_jobs().await;
    counter.reset();
    let out = strato_dispatcher::handle(&dispatcher, jobs).await.unwrap();
    assert!(out.batch_item_failures.is_empty());
    let dispatcher_calls = counter.snapshot();

    let calls = |v: &[(&str, u64)]| -> BTreeMap<String, u64> {
        v.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
    };
    assert_eq!(
        api_calls,
        calls(&[
            ("DynamoDB.GetItem", 1),
            ("DynamoDB.TransactWriteItems", 1),
            ("SQS.SendMessage", 1),
        ]),
        "one tenant read; the audit entry inside the create's transaction; the sensitive variable sealed \
         with the data key the warm-up's create got for this tenant"
    );
    assert_eq!(
        dispatcher_calls,
        calls(&[("DynamoDB.TransactWriteItems", 2), ("ECS.RunTask", 1)]),
        "the job's carried operation claimed without a read; the audit entry inside the write that records \
         the task"
    );

    let tenant = "acme".parse().unwrap();
    let page = dispatcher
        .audit
        .query(
            &tenant,
            &AuditQuery {
                limit: 2,
                ..AuditQuery::default()
            },
        )
        .await
        .unwrap();
    let actions: Vec<(&str, &str)> = page
        .entries
        .iter()
        .map(|e| (e.action.as_str(), e.principal.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("operation.dispatch", "strato:dispatcher"),
            ("cluster.create", "user-7f3a")
        ],
        "newest first"
    );
    let create = &page.entries[1];
    assert_eq!(create.status, Some(202));
    assert!(create.cluster_id.is_some() && create.operation_id.is_some());
    assert_eq!(create.operation_id, page.entries[0].operation_id);
}

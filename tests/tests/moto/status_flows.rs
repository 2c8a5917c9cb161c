//! Whole lifecycles against moto: the real dispatcher starts runners, and this function is fed the runner's
//! events and ECS task state changes (from the sample events, ids patched), including duplicates, reordering,
//! stale tokens and dead runners.

use crate::flow_support as support;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use serde_json::{Value, json};
use strato_aws::coordination::TENANT_LIMIT_REASON;
use strato_aws::store::LockOutcome;
use strato_domain::ids::OperationId;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::template::Template;
use strato_status::Ctx;
use support::{World, failures, load_event, patch_bodies};

struct Bed {
    w: World,
    status: Ctx,
}

/// A running operation as the runner knows it: its id, token and task.
#[derive(Clone)]
struct Run {
    op: OperationId,
    token: u64,
    task: String,
}

impl Bed {
    async fn new() -> Self {
        let w = World::new().await;
        let status = w.status_ctx().await;
        Self { w, status }
    }

    async fn handle(&self, event: SqsEvent) -> SqsBatchResponse {
        strato_status::handle(&self.status, event).await.unwrap()
    }

    /// Delivers an event and expects it to be acknowledged.
    async fn deliver(&self, event: SqsEvent) {
        let resp = self.handle(event).await;
        assert!(failures(&resp).is_empty(), "{resp:?}");
    }

    /// Dispatches `op` and returns what its runner would be started with.
    async fn start(&self, op: &Operation) -> Run {
        let resp = self.w.dispatch(&[op]).await;
        assert!(failures(&resp).is_empty());
        self.run_of(&op.operation_id).await
    }

    async fn run_of(&self, id: &OperationId) -> Run {
        let op = self.w.op(id).await;
        assert_eq!(op.status, OperationStatus::Dispatched, "{op:?}");
        Run {
            op: id.clone(),
            token: op.fencing_token.unwrap(),
            task: op.task_arn.unwrap(),
        }
    }

    /// A cluster taken through a successful create.
    async fn active_cluster(&self, name: &str) -> Cluster {
        let (cluster, create) = self.w.new_cluster("acme", name).await;
        let run = self.start(&create).await;
        self.deliver(runner(&run, "succeeded", |_| {})).await;
        let c = self.w.cluster(&cluster).await;
        assert_eq!(c.state(), ClusterState::Active);
        c
    }

    /// Delivers the wake-ups waiting on jobs.fifo to the dispatcher; returns the woken operations.
    async fn dispatch_woken(&self) -> Vec<OperationId> {
        let event = self.w.take_jobs().await;
        let woken = event
            .records
            .iter()
            .map(|r| {
                let v: Value = serde_json::from_str(r.body.as_deref().unwrap()).unwrap();
                v["operation_id"].as_str().unwrap().parse().unwrap()
            })
            .collect();
        if !event.records.is_empty() {
            let resp = strato_dispatcher::handle(&self.w.dispatcher, event)
                .await
                .unwrap();
            assert!(failures(&resp).is_empty());
        }
        woken
    }
}

/// A runner event from `events/status/runner-{name}.json`, addressed to `run`, then adjusted by `f`.
fn runner(run: &Run, name: &str, f: impl Fn(&mut Value)) -> SqsEvent {
    let (op, token) = (run.op.to_string(), run.token);
    patch_bodies(load_event(&format!("status/runner-{name}.json")), move |v| {
        v["operation_id"] = json!(op);
        v["fencing_token"] = json!(token);
        f(v);
        support::prove(v);
    })
}

fn step(run: &Run, name: &str, step: &str, at: &str) -> SqsEvent {
    runner(run, name, |v| {
        v["step"] = json!(step);
        v["at"] = json!(at);
    })
}

/// An ECS "Task State Change" (STOPPED) for `run`'s task from `events/status/ecs-task-stopped-{name}.json`.
fn ecs_stopped(run: &Run, name: &str) -> SqsEvent {
    let (op, token, task) = (run.op.to_string(), run.token.to_string(), run.task.clone());
    patch_bodies(
        load_event(&format!("status/ecs-task-stopped-{name}.json")),
        move |v| {
            let d = &mut v["detail"];
            d["taskArn"] = json!(task);
            d["startedBy"] = json!(op);
            d["containers"][0]["taskArn"] = json!(task);
            d["overrides"]["containerOverrides"][0]["environment"] = json!([{"name": "STRATO_OPERATION_ID", "value": op}, {"name": "STRATO_FENCING_TOKEN", "value": token}]);
        },
    )
}

fn with_receive_count(mut e: SqsEvent, n: u32) -> SqsEvent {
    for r in &mut e.records {
        r.attributes
            .insert("ApproximateReceiveCount".into(), n.to_string());
    }
    e
}

async fn assert_released(w: &World, c: &Cluster) {
    assert_eq!(
        w.store.cluster_lock(&c.cluster_id).await.unwrap(),
        None,
        "cluster lock released"
    );
    assert!(
        w.store.tenant_slots(&c.tenant_id).await.unwrap().is_empty(),
        "tenant slot released"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_runs_to_active_with_outputs() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "prod").await;
    let run = b.start(&create).await;
    let task = b.w.task(&run.task).await;
    let env = support::task_env(&task);
    assert_eq!(env["STRATO_OPERATION_ID"], create.operation_id.to_string());
    assert_eq!(env["STRATO_FENCING_TOKEN"], run.token.to_string());

    b.deliver(step(&run, "step-started", "init", "2026-11-22T04:30:10.000000Z"))
        .await;
    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.status, OperationStatus::Running);
    b.deliver(step(&run, "step-finished", "init", "2026-11-22T04:30:40.000000Z"))
        .await;
    b.deliver(step(&run, "step-started", "apply", "2026-11-22T04:31:00.000000Z"))
        .await;
    b.deliver(runner(&run, "heartbeat", |_| {})).await;
    b.deliver(step(
        &run,
        "step-finished",
        "apply",
        "2026-11-22T04:44:10.000000Z",
    ))
    .await;
    let before = b.w.cluster(&cluster).await;
    b.deliver(runner(&run, "succeeded", |_| {})).await;

    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.status, OperationStatus::Succeeded);
    assert_eq!(op.error, None);
    let steps: Vec<_> = op.steps.iter().map(|s| (s.name.as_str(), s.ok)).collect();
    assert_eq!(steps, [("init", Some(true)), ("apply", Some(true))]);
    assert!(op.heartbeat_at.is_some());
    let c = b.w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Active);
    assert_eq!(
        c.version,
        before.version + 2,
        "CONFIGURING was saved on the way to ACTIVE"
    );
    assert_eq!(c.configuring_deadline, None);
    assert_eq!(c.outputs["cluster_name"], json!("prod"));
    assert!(
        c.outputs["cluster_endpoint"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );
    assert!(
        c.next_drift_check_at.is_some(),
        "ACTIVE clusters are scheduled for drift checks"
    );
    assert_released(&b.w, &cluster).await;
}

/// A template without an agent names the outputs that prove the cluster usable; an apply that does not
/// produce them fails the create with what / step / fix instead of reporting a cluster nobody can reach.
#[tokio::test(flavor = "multi_thread")]
async fn create_without_the_templates_required_outputs_fails_with_a_fix() {
    let b = Bed::new().await;
    let t = Template::from_toml(
        r#"
name = "aws-eks-basic"
version = "1.2.0"
providers = ["aws"]
stages = [{ name = "main", modules = ["k8s"] }]
required_outputs = ["cluster_endpoint", "cluster_name"]
[variables.node_count]
type = "integer"
default = 2
"#,
    )
    .unwrap();
    b.w.store
        .put_template(&t.manifest, &"3".repeat(64), "k")
        .await
        .unwrap();

    let (bare, create) = b.w.new_cluster("acme", "bare").await;
    let run = b.start(&create).await;
    let no_endpoint = |v: &mut Value| v["outputs"] = json!({"cluster_name": "bare", "cluster_endpoint": " "});
    b.deliver(runner(&run, "succeeded", no_endpoint)).await;
    b.deliver(runner(&run, "succeeded", no_endpoint)).await; // duplicate: same result
    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.status, OperationStatus::Failed);
    let err = op.error.expect("error recorded");
    assert_eq!(err.step, "verify outputs");
    assert!(
        err.what.contains("cluster_endpoint") && !err.what.contains("cluster_name"),
        "{}",
        err.what
    );
    assert!(err.fix.contains("outputs.tf"), "{}", err.fix);
    let c = b.w.cluster(&bare).await;
    assert_eq!(c.state(), ClusterState::Failed);
    assert_eq!(
        c.last_error.as_ref().map(|e| e.step.as_str()),
        Some("verify outputs")
    );
    assert_released(&b.w, &bare).await;

    // With the outputs present the same template goes to ACTIVE.
    let (good, create) = b.w.new_cluster("acme", "good").await;
    let run = b.start(&create).await;
    b.deliver(runner(&run, "succeeded", |_| {})).await;
    assert_eq!(b.w.cluster(&good).await.state(), ClusterState::Active);
}

#[tokio::test(flavor = "multi_thread")]
async fn update_applies_the_new_spec_and_returns_to_active() {
    let b = Bed::new().await;
    let cluster = b.active_cluster("prod").await;
    let update = b.w.new_op(&cluster, OperationKind::Update).await;
    let run = b.start(&update).await;
    assert_eq!(b.w.cluster(&cluster).await.state(), ClusterState::Updating);

    b.deliver(runner(&run, "succeeded", |v| {
        v["outputs"]["node_count"] = json!(3);
    }))
    .await;
    assert_eq!(
        b.w.op(&update.operation_id).await.status,
        OperationStatus::Succeeded
    );
    let c = b.w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Active);
    assert_eq!(c.outputs["node_count"], json!(3));
    assert_eq!(c.spec.variables["node_count"], json!(3));
    assert_released(&b.w, &cluster).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_ends_deleted_and_frees_the_name() {
    let b = Bed::new().await;
    let cluster = b.active_cluster("prod").await;
    let delete = b.w.new_op(&cluster, OperationKind::Delete).await;
    let run = b.start(&delete).await;
    assert_eq!(b.w.cluster(&cluster).await.state(), ClusterState::Deleting);
    b.deliver(runner(&run, "succeeded", |v| v["outputs"] = json!({})))
        .await;
    // A duplicate must not release the name (or the quota) twice.
    b.deliver(runner(&run, "succeeded", |v| v["outputs"] = json!({})))
        .await;

    let c = b.w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Deleted);
    assert!(c.outputs.is_empty());
    assert_released(&b.w, &cluster).await;
    // The name can be taken again: the API's create transaction goes through.
    let (again, _) = b.w.new_cluster("acme", "prod").await;
    assert_ne!(again.cluster_id, cluster.cluster_id);
}

#[tokio::test(flavor = "multi_thread")]
async fn failure_records_the_error_and_a_retry_provisions_again() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "prod").await;
    let run = b.start(&create).await;
    b.deliver(step(&run, "step-started", "apply", "2026-11-22T04:31:00.000000Z"))
        .await;
    b.deliver(runner(&run, "failed", |_| {})).await;

    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.status, OperationStatus::Failed);
    let err = op.error.unwrap();
    assert!(err.what.starts_with("VpcLimitExceeded"));
    assert_eq!(err.step, "apply");
    let c = b.w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Failed);
    assert_eq!(c.last_error, Some(err));
    assert_released(&b.w, &cluster).await;

    // Retry: a new create on the FAILED cluster.
    let retry = b.w.new_op(&c, OperationKind::Create).await;
    let rerun = b.start(&retry).await;
    assert!(rerun.token > run.token, "a new acquisition gets a larger token");
    let c = b.w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Provisioning);
    assert_eq!(c.last_error, None);
    b.deliver(runner(&rerun, "succeeded", |_| {})).await;
    assert_eq!(b.w.cluster(&cluster).await.state(), ClusterState::Active);
}

#[tokio::test(flavor = "multi_thread")]
async fn of_two_concurrent_updates_one_runs_and_the_other_follows() {
    let b = Bed::new().await;
    let cluster = b.active_cluster("prod").await;
    let first = b.w.new_op(&cluster, OperationKind::Update).await;
    let second = b.w.new_op(&cluster, OperationKind::Update).await;

    let resp = b.w.dispatch(&[&first, &second]).await;
    assert!(failures(&resp).is_empty());
    let run = b.run_of(&first.operation_id).await;
    assert_eq!(b.w.tasks_of(&first.operation_id).await.len(), 1);
    assert!(b.w.tasks_of(&second.operation_id).await.is_empty());
    let parked = b.w.op(&second.operation_id).await;
    assert_eq!(
        parked.wait_reason,
        Some(format!("cluster busy: {}", first.operation_id))
    );
    assert!(
        b.w.take_jobs().await.records.is_empty(),
        "nothing polls while it waits"
    );

    b.deliver(runner(&run, "succeeded", |_| {})).await;
    assert_eq!(b.dispatch_woken().await, vec![second.operation_id.clone()]);
    let next = b.run_of(&second.operation_id).await;
    assert!(next.token > run.token);
    assert_eq!(b.w.op(&second.operation_id).await.wait_reason, None);
    assert_eq!(b.w.tasks_of(&second.operation_id).await.len(), 1);
    assert_eq!(b.w.cluster(&cluster).await.state(), ClusterState::Updating);
    assert_eq!(
        b.w.store.cluster_lock(&cluster.cluster_id).await.unwrap(),
        Some((second.operation_id.clone(), next.token))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn duplicated_and_reordered_events_leave_the_same_state() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "prod").await;
    b.w.dispatch(&[&create, &create]).await;
    b.w.dispatch(&[&create]).await;
    assert_eq!(
        b.w.tasks_of(&create.operation_id).await.len(),
        1,
        "job delivered thrice, one task"
    );
    let run = b.run_of(&create.operation_id).await;

    let events = [
        // plan's finish overtakes its start; init arrives after plan.
        step(&run, "step-finished", "plan", "2026-11-22T04:32:00.000000Z"),
        step(&run, "step-started", "plan", "2026-11-22T04:31:00.000000Z"),
        step(&run, "step-finished", "init", "2026-11-22T04:30:50.000000Z"),
        step(&run, "step-started", "init", "2026-11-22T04:30:10.000000Z"),
        runner(&run, "heartbeat", |v| {
            v["at"] = json!("2026-11-22T04:35:00.000000Z")
        }),
        runner(&run, "heartbeat", |v| {
            v["at"] = json!("2026-11-22T04:33:00.000000Z")
        }),
    ];
    for e in &events {
        b.deliver(e.clone()).await;
        b.deliver(e.clone()).await;
    }
    let op = b.w.op(&create.operation_id).await;
    let steps: Vec<_> = op
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.ok, s.finished_at.is_some()))
        .collect();
    assert_eq!(steps, [("init", Some(true), true), ("plan", Some(true), true)]);
    assert_eq!(
        op.heartbeat_at,
        strato_domain::ts::parse("2026-11-22T04:35:00.000000Z"),
        "heartbeat only moves forward"
    );

    b.deliver(runner(&run, "succeeded", |_| {})).await;
    let done_op = b.w.op(&create.operation_id).await;
    let done_cluster = b.w.cluster(&cluster).await;
    // Every kind again, after the end: nothing moves.
    for e in events.iter().cloned().chain([
        runner(&run, "succeeded", |_| {}),
        runner(&run, "failed", |_| {}),
        runner(&run, "cancelled", |_| {}),
        ecs_stopped(&run, "exit0"),
        ecs_stopped(&run, "oom"),
    ]) {
        b.deliver(e).await;
    }
    b.w.dispatch(&[&create]).await;
    assert_eq!(b.w.op(&create.operation_id).await, done_op);
    assert_eq!(b.w.cluster(&cluster).await, done_cluster);
    assert_eq!(done_op.stale_events, 0);
    assert_eq!(done_op.status, OperationStatus::Succeeded);
    assert_eq!(b.w.tasks_of(&create.operation_id).await.len(), 1);
    assert!(b.w.take_jobs().await.records.is_empty(), "no spurious wake-ups");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_that_dies_without_reporting_fails_and_hands_the_cluster_on() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "prod").await;
    let run = b.start(&create).await;
    b.deliver(step(&run, "step-started", "apply", "2026-11-22T04:31:00.000000Z"))
        .await;
    let delete = b.w.new_op(&cluster, OperationKind::Delete).await;
    b.w.dispatch(&[&delete]).await;
    assert!(b.w.op(&delete.operation_id).await.wait_reason.is_some());

    b.deliver(ecs_stopped(&run, "oom")).await;
    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.status, OperationStatus::Failed);
    let err = op.error.unwrap();
    assert_eq!(err.step, "apply");
    assert!(
        err.what
            .starts_with("runner stopped without a final report: exit code 137, OutOfMemoryError"),
        "{}",
        err.what
    );
    assert!(
        err.what.contains("Essential container in task exited"),
        "{}",
        err.what
    );
    let c = b.w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Failed);
    assert_eq!(c.last_error, Some(err));
    assert_eq!(b.w.store.cluster_lock(&cluster.cluster_id).await.unwrap(), None);

    // The parked delete was woken and now runs (FAILED -> DELETING is allowed).
    assert_eq!(b.dispatch_woken().await, vec![delete.operation_id.clone()]);
    b.run_of(&delete.operation_id).await;
    assert_eq!(b.w.cluster(&cluster).await.state(), ClusterState::Deleting);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clean_exit_waits_for_the_final_report() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "prod").await;
    let run = b.start(&create).await;

    // The task's stop overtook the runner's report: retried later, nothing changed.
    let stopped = ecs_stopped(&run, "exit0");
    let resp = b.handle(stopped.clone()).await;
    assert_eq!(
        failures(&resp),
        vec![stopped.records[0].message_id.clone().unwrap()]
    );
    assert_eq!(
        b.w.op(&create.operation_id).await.status,
        OperationStatus::Dispatched
    );
    b.deliver(runner(&run, "succeeded", |_| {})).await;
    b.deliver(stopped).await;
    assert_eq!(
        b.w.op(&create.operation_id).await.status,
        OperationStatus::Succeeded
    );
    assert_eq!(b.w.cluster(&cluster).await.state(), ClusterState::Active);

    // If the report never comes, the operation fails after the grace deliveries.
    let (other, create) = b.w.new_cluster("acme", "other").await;
    let run = b.start(&create).await;
    let late = with_receive_count(
        ecs_stopped(&run, "exit0"),
        strato_status::FINAL_REPORT_GRACE_RECEIVES,
    );
    b.deliver(late).await;
    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.status, OperationStatus::Failed);
    assert!(op.error.unwrap().what.contains("final report never arrived"));
    assert_eq!(b.w.cluster(&other).await.state(), ClusterState::Failed);
    assert_released(&b.w, &other).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_with_a_stale_fencing_token_changes_nothing() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "prod").await;
    let run = b.start(&create).await;
    let op_before = b.w.op(&create.operation_id).await;
    let cluster_before = b.w.cluster(&cluster).await;

    let zombie = Run {
        token: run.token + 7,
        ..run.clone()
    };
    b.deliver(runner(&zombie, "succeeded", |_| {})).await;
    b.deliver(ecs_stopped(&zombie, "oom")).await;
    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.stale_events, 2);
    assert_eq!(
        Operation {
            stale_events: 0,
            updated_at: op_before.updated_at,
            ..op
        },
        op_before
    );
    assert_eq!(b.w.cluster(&cluster).await, cluster_before);

    // Right token, but the lock was taken over (lease expired and another operation acquired it).
    let other = OperationId::generate();
    assert!(
        b.w.store
            .release_cluster_lock(&cluster.cluster_id, &run.op, run.token)
            .await
            .unwrap()
    );
    let taken =
        b.w.store
            .acquire_cluster_lock(
                &cluster.cluster_id,
                &other,
                time::Duration::hours(1),
                strato_domain::ts::now(),
            )
            .await
            .unwrap();
    assert!(matches!(taken, LockOutcome::Acquired { .. }));
    b.deliver(runner(&run, "failed", |_| {})).await;
    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.stale_events, 3);
    assert_eq!(op.status, OperationStatus::Dispatched);
    assert_eq!(b.w.cluster(&cluster).await, cluster_before);
    assert_eq!(
        b.w.store
            .cluster_lock(&cluster.cluster_id)
            .await
            .unwrap()
            .map(|(o, _)| o),
        Some(other),
        "the new holder's lock is untouched"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_at_its_limit_is_woken_when_a_slot_frees() {
    let b = Bed::new().await;
    b.w.set_concurrency_limit("acme", 1).await;
    let (_, a) = b.w.new_cluster("acme", "alpha").await;
    let (bravo, second) = b.w.new_cluster("acme", "bravo").await;
    let run = b.start(&a).await;
    b.w.dispatch(&[&second]).await;
    assert_eq!(
        b.w.op(&second.operation_id).await.wait_reason.as_deref(),
        Some(TENANT_LIMIT_REASON)
    );

    b.deliver(runner(&run, "succeeded", |_| {})).await;
    assert_eq!(b.dispatch_woken().await, vec![second.operation_id.clone()]);
    b.run_of(&second.operation_id).await;
    assert_eq!(b.w.cluster(&bravo).await.state(), ClusterState::Provisioning);
    assert_eq!(
        b.w.store.tenant_slots(&bravo.tenant_id).await.unwrap(),
        vec![second.operation_id.to_string()]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_checks_are_recorded_and_a_cancelled_update_returns_to_active() {
    let b = Bed::new().await;
    let cluster = b.active_cluster("prod").await;
    let check = b.w.new_op(&cluster, OperationKind::DriftCheck).await;
    let run = b.start(&check).await;
    assert_eq!(
        b.w.cluster(&cluster).await.state(),
        ClusterState::Active,
        "checks change no state"
    );
    b.deliver(runner(&run, "succeeded-drift", |_| {})).await;
    let c = b.w.cluster(&cluster).await;
    assert!(c.drift.drifted);
    assert_eq!(c.drift.changed_resources[0].address, "aws_security_group.nodes");
    assert_eq!(c.drift.operation_id.as_ref(), Some(&check.operation_id));

    let update = b.w.new_op(&cluster, OperationKind::Update).await;
    let run = b.start(&update).await;
    b.deliver(runner(&run, "cancelled", |_| {})).await;
    assert_eq!(
        b.w.op(&update.operation_id).await.status,
        OperationStatus::Cancelled
    );
    let c = b.w.cluster(&cluster).await;
    assert_eq!(c.state(), ClusterState::Active);
    assert_eq!(c.spec, cluster.spec, "a cancelled update keeps the old spec");
    assert_released(&b.w, &cluster).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_bad_record_of_a_batch_is_reported() {
    let b = Bed::new().await;
    let (_, create) = b.w.new_cluster("acme", "prod").await;
    let run = b.start(&create).await;
    let mut batch = step(&run, "step-started", "init", "2026-11-22T04:30:10.000000Z");
    let mut garbage = batch.records[0].clone();
    garbage.message_id = Some("garbage".into());
    garbage.body = Some("{\"type\": \"teleported\"}".into());
    let mut unknown = runner(&run, "heartbeat", |v| {
        v["operation_id"] = json!("op-00000000000000000000000000000000");
    })
    .records[0]
        .clone();
    unknown.message_id = Some("unknown-op".into());
    let mut good = runner(&run, "heartbeat", |_| {}).records[0].clone();
    good.message_id = Some("good-2".into());
    batch.records.extend([garbage, unknown, good]);

    let resp = b.handle(batch).await;
    assert_eq!(
        failures(&resp),
        vec!["garbage".to_owned(), "unknown-op".to_owned()]
    );
    let op = b.w.op(&create.operation_id).await;
    assert_eq!(op.steps.len(), 1);
    assert!(op.heartbeat_at.is_some());
}

/// The agent handshake: a template with `[agent]` stays CONFIGURING (create open, lock held) after apply —
/// and after its runner's task stopped (issue 15, defect 1) — becomes ACTIVE on `AgentReady`, and fails
/// with a fix when the deadline passes.
mod agent {
    use super::*;
    use aws_lambda_events::sqs::SqsMessage;
    use strato_domain::messages::ControlEvent;
    use strato_domain::template::Template;
    use strato_domain::ts;

    const AGENT_TEMPLATE: &str = r#"
name = "aws-eks-basic"
version = "1.2.0"
providers = ["aws"]
stages = [{ name = "cluster", modules = ["network", "k8s"] }]
[variables.agent_token]
type = "string"
managed = true
sensitive = true
[variables.control_plane_url]
type = "string"
managed = true
[variables.node_count]
type = "integer"
default = 2
[agent]
deadline_secs = 600
"#;

    fn control(ev: &ControlEvent) -> SqsEvent {
        let mut msg = SqsMessage::default();
        msg.message_id = Some(format!("m-{}", OperationId::generate()));
        msg.body = Some(serde_json::to_string(ev).unwrap());
        let mut event = SqsEvent::default();
        event.records = vec![msg];
        event
    }

    async fn configuring() -> (Bed, Cluster, Run) {
        let bed = Bed::new().await;
        let t = Template::from_toml(AGENT_TEMPLATE).unwrap();
        bed.w
            .store
            .put_template(&t.manifest, &"2".repeat(64), "k")
            .await
            .unwrap();
        let (cluster, create) = bed.w.new_cluster("acme", "agented").await;
        let run = bed.start(&create).await;
        bed.deliver(runner(&run, "succeeded", |_| {})).await;
        bed.deliver(runner(&run, "succeeded", |_| {})).await; // duplicate: same result
        // The runner exits 0 after its report; its stop, even on the last delivery the report wait allows,
        // is acked at once and leaves the create waiting for its agent.
        bed.deliver(ecs_stopped(&run, "exit0")).await;
        bed.deliver(with_receive_count(
            ecs_stopped(&run, "exit0"),
            strato_status::FINAL_REPORT_GRACE_RECEIVES,
        ))
        .await;
        let c = bed.w.cluster(&cluster).await;
        assert_eq!(c.state(), ClusterState::Configuring);
        assert!(c.configuring_deadline.is_some());
        let op = bed.w.op(&run.op).await;
        assert_eq!(
            op.status,
            OperationStatus::Running,
            "the create stays open until the agent is ready"
        );
        assert_eq!(op.steps.iter().filter(|s| s.name == "configure").count(), 1);
        assert!(
            bed.w
                .store
                .cluster_lock(&cluster.cluster_id)
                .await
                .unwrap()
                .is_some(),
            "lock still held"
        );
        (bed, cluster, run)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn agent_ready_makes_the_cluster_active_and_releases_the_lock() {
        let (bed, cluster, run) = configuring().await;
        let ev = ControlEvent::AgentReady {
            operation_id: run.op.clone(),
            cluster_id: cluster.cluster_id.clone(),
            nodes_ready: 2,
        };
        bed.deliver(control(&ev)).await;
        bed.deliver(control(&ev)).await;
        let c = bed.w.cluster(&cluster).await;
        assert_eq!(c.state(), ClusterState::Active);
        assert!(c.configuring_deadline.is_none());
        let op = bed.w.op(&run.op).await;
        assert_eq!(op.status, OperationStatus::Succeeded);
        assert_eq!(
            op.steps.iter().find(|s| s.name == "configure").unwrap().ok,
            Some(true)
        );
        assert_eq!(bed.w.store.cluster_lock(&cluster.cluster_id).await.unwrap(), None);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_missed_deadline_fails_the_cluster_with_a_fix() {
        let (bed, cluster, run) = configuring().await;
        // A timer that fires early is acked and chained: the next one goes out for the time left (handed
        // back instead, it would reach the dead-letter queue after a few rounds).
        let early = ControlEvent::ConfigureDeadline {
            operation_id: run.op.clone(),
            cluster_id: cluster.cluster_id.clone(),
            deadline: ts::now() + time::Duration::minutes(5),
        };
        bed.deliver(control(&early)).await;
        assert_eq!(bed.w.cluster(&cluster).await.state(), ClusterState::Configuring);

        let due = ControlEvent::ConfigureDeadline {
            operation_id: run.op.clone(),
            cluster_id: cluster.cluster_id.clone(),
            deadline: ts::now() - time::Duration::seconds(1),
        };
        bed.deliver(control(&due)).await;
        let c = bed.w.cluster(&cluster).await;
        assert_eq!(c.state(), ClusterState::Failed);
        let err = c.last_error.unwrap();
        assert_eq!(err.step, "configure");
        assert!(err.fix.contains("control-plane URL"), "{err:?}");
        assert_eq!(bed.w.op(&run.op).await.status, OperationStatus::Failed);
        assert_eq!(bed.w.store.cluster_lock(&cluster.cluster_id).await.unwrap(), None);
        // A late AgentReady changes nothing.
        let late = ControlEvent::AgentReady {
            operation_id: run.op.clone(),
            cluster_id: cluster.cluster_id.clone(),
            nodes_ready: 2,
        };
        bed.deliver(control(&late)).await;
        assert_eq!(bed.w.cluster(&cluster).await.state(), ClusterState::Failed);
    }
}

/// Subscribers learn of steps and of the end through the logs queue: a status frame per started step, a
/// final status frame with the cluster's state, and an end frame carrying the last archived line number.
#[tokio::test(flavor = "multi_thread")]
async fn steps_and_the_end_are_announced_to_subscribers() {
    use strato_domain::messages::LogFrame;
    use strato_terraform::artifacts;

    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "loud").await;
    let run = b.start(&create).await;
    // The runner archived lines 1..=40 in two chunks and died before writing its `complete` marker.
    let bucket = b.w.env.names.bucket("artifacts");
    for (first, last) in [(1, 25), (26, 40)] {
        b.w.env
            .aws
            .s3
            .put_object()
            .bucket(&bucket)
            .key(artifacts::log_chunk_key(&run.op, first, last))
            .body(Vec::from(&b"{}\n"[..]).into())
            .send()
            .await
            .unwrap();
    }
    b.deliver(step(&run, "step-started", "plan", "2026-11-22T04:30:10.000000Z"))
        .await;
    b.deliver(runner(&run, "succeeded", |_| {})).await;

    let mut frames = Vec::new();
    for _ in 0..5 {
        for m in b.w.receive(&b.w.queues.logs).await {
            frames.push(serde_json::from_str::<LogFrame>(m.body().unwrap()).unwrap());
        }
        if frames.iter().any(|f| matches!(f, LogFrame::End { .. })) {
            break;
        }
    }
    assert!(frames.iter().all(|f| f.operation_id() == &run.op));
    assert!(frames.iter().any(|f| matches!(f,
        LogFrame::Status { step: Some(s), operation_status: OperationStatus::Running, .. } if s == "plan")));
    assert!(frames.iter().any(|f| matches!(f,
        LogFrame::Status { cluster_state: ClusterState::Active, operation_status: OperationStatus::Succeeded, cluster_id, .. }
            if *cluster_id == cluster.cluster_id)));
    assert!(
        frames.iter().any(|f| matches!(
            f,
            LogFrame::End {
                final_status: OperationStatus::Succeeded,
                last_seq: 40,
                ..
            }
        )),
        "{frames:?}"
    );
}

/// A live runner's heartbeats keep its cluster lock's lease ahead, so a long operation is never mistaken
/// for an abandoned one; a heartbeat with a stale token renews nothing.
#[tokio::test(flavor = "multi_thread")]
async fn heartbeats_renew_the_lock_lease() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "long").await;
    let run = b.start(&create).await;
    let lease = || async {
        let item =
            b.w.env
                .aws
                .dynamodb
                .get_item()
                .table_name(b.w.env.names.table("locks"))
                .key(
                    "lock_id",
                    aws_sdk_dynamodb::types::AttributeValue::S(format!("cluster#{}", cluster.cluster_id)),
                )
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
                .expect("lock item");
        item["lease_expires_at"].as_s().unwrap().clone()
    };
    let before = lease().await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    b.deliver(runner(&run, "heartbeat", |_| {})).await;
    let after = lease().await;
    assert!(after > before, "lease renewed: {before} → {after}");
    b.deliver(runner(&run, "heartbeat", |v| {
        v["fencing_token"] = json!(run.token - 1)
    }))
    .await;
    assert_eq!(lease().await, after, "a stale token renews nothing");
}

/// Each stage's priced plan is attached to the operation before apply; a redelivered estimate counts once
/// and unpriced resources stay listed as not estimated.
#[tokio::test(flavor = "multi_thread")]
async fn plan_estimates_are_attached_per_stage() {
    let b = Bed::new().await;
    let (_, create) = b.w.new_cluster("acme", "priced").await;
    let run = b.start(&create).await;
    b.deliver(runner(&run, "plan-ready", |_| {})).await;
    b.deliver(runner(&run, "plan-ready", |_| {})).await; // duplicate
    b.deliver(runner(&run, "plan-ready", |v| {
        v["stage"] = json!("addons");
        v["estimate"]["resources"] = json!([{"address": "aws_lb.ingress", "resource_type": "aws_lb",
            "actions": ["create"], "monthly": 16.43, "note": "ALB 0.0225 USD/h x 730 h"}]);
    }))
    .await;
    let op = b.w.op(&create.operation_id).await;
    let est = op.estimate.expect("estimate attached");
    assert!(
        (est.total_monthly - (73.0 + 60.59 + 16.43)).abs() < 1e-9,
        "{}",
        est.total_monthly
    );
    assert_eq!(est.resources.len(), 5);
    assert_eq!(
        est.not_estimated,
        vec!["module.k8s.aws_cloudwatch_log_group.this".to_string()]
    );
    assert_eq!(est.price_table_date, "2026-11-01");
}

/// Drift policy: `notify` records and announces; `reconcile` also queues one update that applies the
/// cluster's own spec again (not a second one on a redelivered result).
#[tokio::test(flavor = "multi_thread")]
async fn reconcile_policy_queues_one_update_on_drift() {
    use strato_domain::model::DriftPolicy;

    let b = Bed::new().await;
    let cluster = b.active_cluster("healing").await;
    let mut c = b.w.cluster(&cluster).await;
    c.drift_policy = DriftPolicy::Reconcile;
    b.w.store.save_cluster(&mut c).await.unwrap();
    b.w.take_jobs().await;

    let check = b.w.new_op(&cluster, OperationKind::DriftCheck).await;
    let run = b.start(&check).await;
    b.deliver(runner(&run, "succeeded-drift", |_| {})).await;
    b.deliver(runner(&run, "succeeded-drift", |_| {})).await; // duplicate
    let ops = b.w.store.list_operations(&cluster.cluster_id).await.unwrap();
    let updates: Vec<_> = ops.iter().filter(|o| o.kind == OperationKind::Update).collect();
    assert_eq!(updates.len(), 1, "{ops:?}");
    assert_eq!(updates[0].spec.as_ref(), Some(&c.spec));
    assert_eq!(updates[0].requested_by.as_deref(), Some("strato:drift-reconcile"));
    let woken = b.dispatch_woken().await;
    assert!(
        woken.contains(&updates[0].operation_id),
        "the update is dispatched"
    );

    // A clean check under `reconcile` queues nothing.
    let other = b.active_cluster("clean").await;
    let mut o = b.w.cluster(&other).await;
    o.drift_policy = DriftPolicy::Reconcile;
    b.w.store.save_cluster(&mut o).await.unwrap();
    let check = b.w.new_op(&other, OperationKind::DriftCheck).await;
    let run = b.start(&check).await;
    b.deliver(runner(&run, "succeeded", |v| v["drift"] = json!([])))
        .await;
    let ops = b.w.store.list_operations(&other.cluster_id).await.unwrap();
    assert!(ops.iter().all(|o| o.kind != OperationKind::Update));
    assert!(!b.w.cluster(&other).await.drift.drifted);
}

/// An estimate has no cluster: the dispatcher locks its synthetic id and starts the runner; the final report
/// ends it with the estimate (here overtaking its `PlanReady`), no cluster is read or written, and the slot
/// and the lock item are gone afterwards. A late `PlanReady` changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn an_estimate_ends_with_its_estimate_and_leaves_no_lock_behind() {
    let b = Bed::new().await;
    let op = b.w.new_estimate("acme").await;
    let run = b.start(&op).await;
    assert!(b.w.lock_item_exists(&op.cluster_id).await);
    let plan_ready = load_event("status/runner-plan-ready.json");
    let body: Value = serde_json::from_str(plan_ready.records[0].body.as_deref().unwrap()).unwrap();
    let estimate = body["estimate"].clone();
    b.deliver(runner(&run, "succeeded", |v| {
        v["outputs"] = json!({});
        v["estimate"] = estimate.clone();
    }))
    .await;
    let done = b.w.op(&op.operation_id).await;
    assert_eq!(done.status, OperationStatus::Succeeded);
    let est = done.estimate.as_ref().expect("estimate attached at the end");
    assert!((est.total_monthly - 133.59).abs() < 1e-9, "{est:?}");
    assert!(
        b.w.store
            .get_cluster(&op.tenant_id, &op.cluster_id)
            .await
            .unwrap()
            .is_none(),
        "no cluster is ever written for an estimate"
    );
    assert!(!b.w.lock_item_exists(&op.cluster_id).await, "lock item deleted");
    assert!(
        b.w.store.tenant_slots(&op.tenant_id).await.unwrap().is_empty(),
        "slot released"
    );
    b.deliver(runner(&run, "plan-ready", |v| v["stage"] = json!("late")))
        .await;
    assert_eq!(b.w.op(&op.operation_id).await.estimate, done.estimate);
    // A duplicate final report finds nothing left to release.
    b.deliver(runner(&run, "succeeded", |v| v["outputs"] = json!({})))
        .await;
    assert_eq!(b.w.op(&op.operation_id).await.status, OperationStatus::Succeeded);
}

/// A runner of an estimate that dies without reporting fails the estimate, and still nothing is left held.
#[tokio::test(flavor = "multi_thread")]
async fn a_dead_estimate_runner_fails_the_estimate_and_frees_everything() {
    let b = Bed::new().await;
    let op = b.w.new_estimate("acme").await;
    let run = b.start(&op).await;
    b.deliver(ecs_stopped(&run, "oom")).await;
    let done = b.w.op(&op.operation_id).await;
    assert_eq!(done.status, OperationStatus::Failed);
    assert!(done.error.unwrap().what.contains("exit code 137"));
    assert!(!b.w.lock_item_exists(&op.cluster_id).await);
    assert!(b.w.store.tenant_slots(&op.tenant_id).await.unwrap().is_empty());
}

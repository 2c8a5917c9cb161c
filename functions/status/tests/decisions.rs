//! Every status decision, on the in-memory fakes: no AWS, no moto, no Terraform. Each test feeds the events
//! queue's records through [`Status::handle`], as SQS would (bodies, receive counts), and looks at what the
//! stores and queues hold afterwards.

use std::collections::BTreeMap;

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use strato_coordination::{LOCK_LEASE, TENANT_LIMIT_REASON, cluster_busy_reason};
use strato_domain::ecs_event::{TaskContainer, TaskStateChange, TaskStateChangeEvent};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::{ControlEvent, RunnerEvent};
use strato_domain::model::{
    Cluster, ClusterState, DriftPolicy, Operation, OperationKind, OperationStatus, ResourceChange,
};
use strato_domain::ports::{Clock, ClusterLocks, LockOutcome};
use strato_domain::run_proof::{PROOF_FIELD, RunProofKey, proven_body};
use strato_domain::webhook::{DRIFT_DETECTED, DriftEvent, Envelope, EventType, Webhook, event_id};
use strato_fakes::{
    FakeAuditLog, FakeClock, FakeJobQueue, FakeRunArchive, FakeStatusQueues, FakeStore, FakeTemplates,
    FakeWebhooks,
};
use strato_rollout::fake::{FakeQueue, FakeRollouts};
use strato_status::{
    FINAL_REPORT_GRACE_RECEIVES, LOST_REPORT, Ports, REPORT_WAIT_VISIBILITY_TIMEOUTS, ReportWait, Status,
};
use time::Duration;

// Plan approvals: a run that ends awaiting approval.
mod approvals;

// A preview's end: recorded on its operation, the cluster untouched.
mod preview;

// The state versions a run lists in the customer's storage, and a restore-state run's end.
mod restore;

/// The fakes, as the status function's ports.
struct FakePorts;

impl Ports for FakePorts {
    type Store = FakeStore;
    type Templates = FakeTemplates;
    type Jobs = FakeJobQueue;
    type Queues = FakeStatusQueues;
    type Archive = FakeRunArchive;
    type Webhooks = FakeWebhooks;
    type Clock = FakeClock;
    type Audit = FakeAuditLog;
    type Rollouts = FakeRollouts;
    type RolloutQueue = FakeQueue;
}

/// The shared world, and the status function's own queues, run archive, webhooks and run-proof key.
struct World {
    base: strato_fakes::World,
    queues: FakeStatusQueues,
    archive: FakeRunArchive,
    webhooks: FakeWebhooks,
    rollouts: FakeRollouts,
    rollout_queue: FakeQueue,
    proofs: RunProofKey,
    /// Records delivered so far (message ids stay unique).
    delivered: std::cell::Cell<usize>,
}

impl std::ops::Deref for World {
    type Target = strato_fakes::World;
    fn deref(&self) -> &strato_fakes::World {
        &self.base
    }
}

/// An operation as the dispatcher left it: running, holding its cluster lock and a tenant slot.
#[derive(Debug, Clone)]
struct Run {
    op: OperationId,
    token: u64,
    task: String,
}

fn world() -> World {
    World {
        base: strato_fakes::World::default(),
        queues: FakeStatusQueues::default(),
        archive: FakeRunArchive::default(),
        webhooks: FakeWebhooks::default(),
        rollouts: FakeRollouts::default(),
        rollout_queue: FakeQueue::default(),
        proofs: proofs(),
        delivered: std::cell::Cell::new(0),
    }
}

impl World {
    fn status(&self) -> Status<'_, FakePorts> {
        Status {
            store: &self.store,
            templates: &self.templates,
            jobs: &self.jobs,
            queues: &self.queues,
            archive: &self.archive,
            webhooks: &self.webhooks,
            clock: &self.clock,
            audit: &self.audit,
            rollouts: &self.rollouts,
            rollout_queue: &self.rollout_queue,
            report_wait: ReportWait::EVENTS,
            approval_ttl: strato_domain::approval::DEFAULT_APPROVAL_TTL,
            run_proofs: &self.proofs,
        }
    }

    /// A queued operation parked with `reason`, as the dispatcher leaves one that cannot start.
    fn parked(&self, cluster: &ClusterId, reason: String) -> Operation {
        let mut op = self.queued(cluster, OperationKind::Update);
        op.wait_reason = Some(reason);
        self.store.put_operation(op.clone());
        op
    }

    /// Starts `kind` on `cluster` as the dispatcher does: lock, slot, token, task.
    async fn start(&self, cluster: &ClusterId, kind: OperationKind) -> Run {
        let mut op = self.queued(cluster, kind);
        let fencing_token = self.store.hold(&op, LOCK_LEASE).await;
        let task = format!("arn:aws:ecs:us-east-1:000000000000:task/fake/{}", op.operation_id);
        op.status = OperationStatus::Running;
        op.fencing_token = Some(fencing_token);
        op.task_arn = Some(task.clone());
        self.store.put_operation(op.clone());
        Run {
            op: op.operation_id,
            token: fencing_token,
            task,
        }
    }

    /// A cluster named `prod` in `state`, with `kind` started on it.
    async fn running(&self, state: ClusterState, kind: OperationKind) -> (ClusterId, Run) {
        let c = self.cluster_in("prod", state);
        let run = self.start(&c, kind).await;
        (c, run)
    }

    /// An ACTIVE cluster named `prod` whose drift policy is `policy`.
    fn drifting(&self, policy: DriftPolicy) -> ClusterId {
        let c = self.cluster_in("prod", ClusterState::Active);
        let mut cluster = self.cluster(&c);
        cluster.drift_policy = policy;
        self.store.put_cluster(cluster);
        c
    }

    /// The tenant's webhook: every event, or only `events`.
    fn hook(&self, events: Option<Vec<EventType>>) {
        let hook = Webhook::new("https://hooks.example.com/strato", "0123456789abcdef0").unwrap();
        self.webhooks.set(&self.tenant, hook.with_events(events));
    }

    fn op(&self, id: &OperationId) -> Operation {
        self.store.operation(id).unwrap()
    }

    fn cluster(&self, id: &ClusterId) -> Cluster {
        self.store.cluster(id).unwrap()
    }

    /// Delivers `bodies` in one batch, each with its receive count; the response.
    async fn deliver(&self, bodies: &[(String, u32)]) -> SqsBatchResponse {
        self.status().handle(self.batch(bodies)).await
    }

    /// One batch of `bodies`, each with its receive count, as SQS hands it to the function.
    fn batch(&self, bodies: &[(String, u32)]) -> SqsEvent {
        let mut event = SqsEvent::default();
        for (body, receives) in bodies {
            let n = self.delivered.get() + 1;
            self.delivered.set(n);
            let mut r = SqsMessage::default();
            r.message_id = Some(format!("m-{n}"));
            r.receipt_handle = Some(format!("rh-{n}"));
            r.body = Some(body.clone());
            r.attributes
                .insert("ApproximateReceiveCount".into(), receives.to_string());
            event.records.push(r);
        }
        event
    }

    /// Delivers one record (first delivery unless `receives` says otherwise); whether it was acknowledged.
    async fn deliver_one(&self, body: String, receives: u32) -> bool {
        self.deliver(&[(body, receives)])
            .await
            .batch_item_failures
            .is_empty()
    }

    /// Whether `run`'s operation still holds its cluster lock or a tenant slot.
    fn holds_anything(&self, cluster: &ClusterId, run: &Run) -> bool {
        self.store.lock_holder(cluster) == Some((run.op.clone(), run.token))
            || self.store.slots(&self.tenant).contains(&run.op)
    }

    fn woken(&self) -> Vec<OperationId> {
        self.jobs.sent().into_iter().map(|s| s.job.operation_id).collect()
    }

    /// The last back-off the status function asked for.
    fn last_delay(&self) -> i32 {
        self.queues.visibility_changes().last().unwrap().1
    }
}

/// The key the dispatcher (here: the tests) made the runs' proofs with.
/// The `drift.detected` messages queued (the lifecycle events are beside them).
fn drift_events(w: &World) -> Vec<strato_domain::messages::WebhookMessage> {
    w.webhooks
        .queued()
        .into_iter()
        .filter(|m| m.event == DRIFT_DETECTED)
        .collect()
}

fn proofs() -> RunProofKey {
    RunProofKey::new(b"status-decision-tests-run-proof-key!".to_vec()).unwrap()
}

/// A runner event as its own run sends it: with its run's proof.
fn runner(ev: RunnerEvent) -> String {
    let proof = proofs().proof(ev.operation_id(), ev.fencing_token());
    proven_body(&ev, &proof).unwrap().to_string()
}

fn heartbeat(w: &World, run: &Run, token: u64) -> String {
    runner(RunnerEvent::Heartbeat {
        operation_id: run.op.clone(),
        fencing_token: token,
        at: w.clock.now(),
    })
}

fn step(w: &World, run: &Run, name: &str, finished: Option<bool>) -> String {
    runner(match finished {
        None => RunnerEvent::StepStarted {
            operation_id: run.op.clone(),
            fencing_token: run.token,
            step: name.into(),
            at: w.clock.now(),
        },
        Some(ok) => RunnerEvent::StepFinished {
            operation_id: run.op.clone(),
            fencing_token: run.token,
            step: name.into(),
            ok,
            at: w.clock.now(),
        },
    })
}

fn succeeded(w: &World, run: &Run, token: u64) -> String {
    runner(RunnerEvent::Succeeded {
        operation_id: run.op.clone(),
        fencing_token: token,
        outputs: BTreeMap::from([("endpoint".to_owned(), serde_json::json!("https://k8s.example"))]),
        drift: None,
        estimate: None,
        preview: None,
        state: None,
        at: w.clock.now(),
    })
}

fn drift_found(w: &World, run: &Run) -> String {
    runner(RunnerEvent::Succeeded {
        operation_id: run.op.clone(),
        fencing_token: run.token,
        outputs: BTreeMap::new(),
        drift: Some(vec![ResourceChange {
            address: "aws_security_group.nodes".into(),
            actions: vec!["update".into()],
        }]),
        estimate: None,
        preview: None,
        state: None,
        at: w.clock.now(),
    })
}

fn apply_error() -> UserError {
    UserError::new(
        ErrorCategory::Quota,
        "apply",
        "creating EKS Node Group: ResourceLimitExceeded",
    )
    .with_fix("Raise the account's EC2 quota, then retry.")
}

fn failed(w: &World, run: &Run) -> String {
    runner(RunnerEvent::Failed {
        operation_id: run.op.clone(),
        fencing_token: run.token,
        error: apply_error(),
        state: None,
        at: w.clock.now(),
    })
}

/// EventBridge's STOPPED event for `run`'s task, its runner container exiting with `exit_code`.
fn stopped(run: &Run, exit_code: Option<i32>) -> String {
    let detail = TaskStateChange {
        task_arn: run.task.clone(),
        last_status: "STOPPED".into(),
        desired_status: Some("STOPPED".into()),
        started_by: Some(run.op.to_string()),
        stopped_reason: Some("Essential container in task exited".into()),
        containers: vec![TaskContainer {
            name: "runner".into(),
            exit_code,
            ..Default::default()
        }],
        overrides: TaskStateChange::runner_overrides("runner", &run.op, Some(run.token)),
        ..Default::default()
    };
    let mut event = TaskStateChangeEvent::default();
    event.detail_type = Some(strato_domain::ecs_event::DETAIL_TYPE.into());
    event.source = Some(strato_domain::ecs_event::SOURCE.into());
    event.detail = Some(detail);
    serde_json::to_string(&event).unwrap()
}

fn control(ev: ControlEvent) -> String {
    serde_json::to_string(&ev).unwrap()
}

// --- fence ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_stale_fencing_token_is_refused_and_counted() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    let before = w.op(&run.op);

    assert!(w.deliver_one(succeeded(&w, &run, run.token + 1), 1).await);
    assert!(w.deliver_one(heartbeat(&w, &run, run.token - 1), 1).await);
    let zombie = Run {
        task: "arn:aws:ecs:us-east-1:000000000000:task/fake/an-earlier-attempt".into(),
        ..run.clone()
    };
    assert!(w.deliver_one(stopped(&zombie, Some(137)), 1).await);

    let op = w.op(&run.op);
    assert_eq!(op.stale_events, 3);
    assert_eq!(
        op.status,
        OperationStatus::Running,
        "no stale event ends the operation"
    );
    assert_eq!(op.steps, before.steps);
    assert_eq!(w.cluster(&c).state(), ClusterState::Updating);
    assert!(w.holds_anything(&c, &run), "nothing was released");
}

#[tokio::test]
async fn a_runner_whose_lock_was_taken_over_is_a_zombie() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    // The lease ran out and another operation took the lock: the runner's token is no longer the lock's.
    w.clock.advance(LOCK_LEASE + Duration::minutes(1));
    let other = OperationId::generate();
    let taken = w
        .store
        .acquire_lock(&c, &other, LOCK_LEASE, w.clock.now())
        .await
        .unwrap();
    assert!(matches!(taken, LockOutcome::Acquired { .. }));

    assert!(w.deliver_one(succeeded(&w, &run, run.token), 1).await);
    let op = w.op(&run.op);
    assert_eq!((op.status, op.stale_events), (OperationStatus::Running, 1));
    assert_eq!(
        w.store.lock_holder(&c).unwrap().0,
        other,
        "the new holder keeps its lock"
    );
}

#[tokio::test]
async fn a_heartbeat_renews_the_lease_only_for_the_holder() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    w.clock.advance(LOCK_LEASE - Duration::minutes(1));
    assert!(w.deliver_one(heartbeat(&w, &run, run.token), 1).await);
    // Past the first lease, within the renewed one: the lock is still the runner's.
    w.clock.advance(Duration::minutes(2));
    let other = OperationId::generate();
    assert_eq!(
        w.store
            .acquire_lock(&c, &other, LOCK_LEASE, w.clock.now())
            .await
            .unwrap(),
        LockOutcome::Held {
            owner: run.op.clone()
        }
    );
    assert_eq!(
        w.op(&run.op).heartbeat_at,
        Some(w.clock.now() - Duration::minutes(2))
    );
}

// --- duplicates and reordering ---------------------------------------------------------------------------

#[tokio::test]
async fn duplicated_and_reordered_runner_events_apply_once() {
    let w = world();
    let (c, run) = w.running(ClusterState::Provisioning, OperationKind::Create).await;
    let waiter = w.parked(&c, cluster_busy_reason(&run.op));

    // The finish overtakes the start; every event comes twice.
    let finished = step(&w, &run, "apply", Some(true));
    w.clock.advance(Duration::seconds(-30));
    let started = step(&w, &run, "apply", None);
    w.clock.advance(Duration::seconds(30));
    for body in [&finished, &started, &finished, &started] {
        assert!(w.deliver_one(body.clone(), 1).await);
    }
    let op = w.op(&run.op);
    assert_eq!(op.steps.len(), 1, "{:?}", op.steps);
    assert_eq!(op.steps[0].ok, Some(true));
    assert!(op.steps[0].started_at < op.steps[0].finished_at.unwrap());

    let success = succeeded(&w, &run, run.token);
    let resp = w
        .deliver(&[
            (success.clone(), 1),
            (success.clone(), 2),
            (heartbeat(&w, &run, run.token), 1),
        ])
        .await;
    assert!(resp.batch_item_failures.is_empty());
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Succeeded);
    assert_eq!(op.stale_events, 0);
    assert_eq!(
        op.started_at,
        Some(op.steps[0].started_at),
        "the runner started no later than its first step, whatever order the events came in"
    );
    let ended_at = op.ended_at.expect("the end is recorded");
    assert!(ended_at >= op.steps[0].finished_at.unwrap());
    assert_eq!(
        w.woken(),
        vec![waiter.operation_id.clone()],
        "the waiter is woken once"
    );
    // A late duplicate after the deduplication window still wakes nobody twice: nothing is held any more.
    w.clock.advance(Duration::minutes(10));
    assert!(w.deliver_one(success, 3).await);
    assert_eq!(w.woken().len(), 1);
    assert_eq!(
        w.op(&run.op).ended_at,
        Some(ended_at),
        "a duplicate end moves nothing"
    );
}

// --- finish -----------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_success_ends_active_with_outputs_and_hands_off() {
    let w = world();
    let c = w.cluster_in("prod", ClusterState::Provisioning);
    let other = w.cluster_in("other", ClusterState::Active);
    let run = w.start(&c, OperationKind::Create).await;
    let same_cluster = w.parked(&c, cluster_busy_reason(&run.op));
    let same_tenant = w.parked(&other, TENANT_LIMIT_REASON.to_owned());

    assert!(w.deliver_one(succeeded(&w, &run, run.token), 1).await);

    let cluster = w.cluster(&c);
    assert_eq!(cluster.state(), ClusterState::Active);
    assert_eq!(
        cluster.outputs["endpoint"],
        serde_json::json!("https://k8s.example")
    );
    assert_eq!(w.op(&run.op).status, OperationStatus::Succeeded);
    assert!(!w.holds_anything(&c, &run), "lock and slot released");
    assert_eq!(
        w.woken(),
        vec![same_cluster.operation_id, same_tenant.operation_id],
        "the next on the cluster, then the tenant's longest waiter"
    );
    assert!(
        w.queues.frames().len() >= 2,
        "subscribers get the status and the end frame"
    );
    let ends: Vec<_> = w
        .audit
        .entries()
        .into_iter()
        .filter(|e| e.action == "operation.end")
        .map(|e| e.outcome)
        .collect();
    assert_eq!(ends, [strato_domain::audit::Outcome::Succeeded]);
}

#[tokio::test]
async fn a_failure_ends_failed_with_what_step_and_fix() {
    let w = world();
    let (c, run) = w.running(ClusterState::Provisioning, OperationKind::Create).await;
    assert!(w.deliver_one(failed(&w, &run), 1).await);

    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Failed);
    let err = op.error.unwrap();
    assert_eq!(err, apply_error());
    assert_eq!(
        (err.step.as_str(), err.fix.is_empty()),
        ("apply", false),
        "what, step and fix reach the operation"
    );
    let cluster = w.cluster(&c);
    assert_eq!(cluster.state(), ClusterState::Failed);
    assert_eq!(cluster.last_error, Some(apply_error()));
    assert!(!w.holds_anything(&c, &run));
    // The end is on record as its own entry (the create request's was only `accepted`): its step and
    // category, not the error's text.
    let ends: Vec<_> = w
        .audit
        .entries()
        .into_iter()
        .filter(|e| e.action == "operation.end")
        .collect();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0].outcome, strato_domain::audit::Outcome::Failed);
    assert_eq!(ends[0].principal, "strato:status");
    assert_eq!(ends[0].operation_id.as_ref(), Some(&run.op));
    assert_eq!(ends[0].cluster_id.as_ref(), Some(&c));
    let detail = ends[0].detail.clone().unwrap();
    assert!(
        detail.contains("create") && detail.contains("apply") && detail.contains("quota"),
        "{detail}"
    );
    assert!(!detail.contains("ResourceLimitExceeded"), "{detail}");
}

#[tokio::test]
async fn drift_under_reconcile_submits_one_update_within_the_quota() {
    let w = world();
    let c = w.drifting(DriftPolicy::Reconcile);
    let run = w.start(&c, OperationKind::DriftCheck).await;
    assert!(w.deliver_one(drift_found(&w, &run), 1).await);

    let updates: Vec<Operation> = w
        .store
        .operations_of(&c)
        .into_iter()
        .filter(|o| o.kind == OperationKind::Update)
        .collect();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].requested_by.as_deref(), Some("strato:drift-reconcile"));
    assert_eq!(
        w.woken(),
        vec![updates[0].operation_id.clone()],
        "recorded, then queued"
    );
    let entries: Vec<_> = w
        .audit
        .entries()
        .into_iter()
        .filter(|e| e.action != "operation.end")
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        (entries[0].principal.as_str(), entries[0].action.as_str()),
        ("strato:status", "drift.reconcile")
    );
    assert_eq!(entries[0].operation_id.as_ref(), Some(&updates[0].operation_id));

    // A tenant at its open-operation quota gets no reconcile: nothing recorded, nothing queued.
    let w = world();
    let c = w.drifting(DriftPolicy::Reconcile);
    let run = w.start(&c, OperationKind::DriftCheck).await;
    // Another open operation fills the quota once the check has ended.
    let elsewhere = w.cluster_in("elsewhere", ClusterState::Active);
    w.queued(&elsewhere, OperationKind::Plan);
    w.store.set_open_operations_limit(&w.tenant, 1);
    assert!(w.deliver_one(drift_found(&w, &run), 1).await);
    assert!(
        w.store
            .operations_of(&c)
            .iter()
            .all(|o| o.kind != OperationKind::Update)
    );
    assert!(w.woken().is_empty());
    assert!(
        w.audit.entries().iter().all(|e| e.action == "operation.end"),
        "nothing queued, nothing on record but the check's end"
    );
}

#[tokio::test]
async fn drift_under_notify_queues_the_webhook_notification_with_a_stable_delivery_id() {
    let w = world();
    let c = w.drifting(DriftPolicy::Notify);
    w.hook(None);
    let run = w.start(&c, OperationKind::DriftCheck).await;
    assert!(w.deliver_one(drift_found(&w, &run), 1).await);

    // Queued for the webhooks function, not called here (issue 15 defect 7).
    let queued = drift_events(&w);
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].event, DRIFT_DETECTED);
    assert_eq!(queued[0].tenant_id, w.tenant);
    assert_eq!(queued[0].operation_id.as_ref(), Some(&run.op));
    let id = event_id(EventType::DriftDetected, run.op.as_str());
    assert_eq!(queued[0].delivery_id, id, "a stable delivery id");
    let envelope: Envelope = serde_json::from_value(queued[0].payload.clone()).unwrap();
    assert_eq!(envelope.kind, DRIFT_DETECTED);
    let event: DriftEvent = serde_json::from_value(envelope.data).unwrap();
    assert_eq!(event.changed_resources[0].address, "aws_security_group.nodes");
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Succeeded);
    assert_eq!(op.notes.len(), 1, "{:?}", op.notes);
    assert!(
        op.notes[0].contains("webhook drift.detected queued [delivery "),
        "{:?}",
        op.notes
    );
    assert!(w.woken().is_empty(), "notify queues no job");

    // A duplicate of the result queues nothing more: the end was applied once, and its note says queued.
    assert!(w.deliver_one(drift_found(&w, &run), 2).await);
    assert_eq!(drift_events(&w).len(), 1);
    assert_eq!(w.op(&run.op).notes.len(), 1);
}

#[tokio::test]
async fn a_drift_notification_that_could_not_be_queued_is_queued_by_the_redelivery() {
    let w = world();
    let c = w.drifting(DriftPolicy::Notify);
    w.hook(None);
    let run = w.start(&c, OperationKind::DriftCheck).await;
    w.webhooks.fail_sends(1);
    assert!(
        !w.deliver_one(drift_found(&w, &run), 1).await,
        "the record is handed back"
    );
    assert!(w.webhooks.queued().is_empty());
    assert_eq!(
        w.op(&run.op).status,
        OperationStatus::Succeeded,
        "the end is saved"
    );
    assert!(!w.holds_anything(&c, &run), "and handed off");

    assert!(w.deliver_one(drift_found(&w, &run), 2).await);
    let queued = drift_events(&w);
    assert_eq!(queued.len(), 1, "queued at least once");
    assert_eq!(
        queued[0].delivery_id,
        event_id(EventType::DriftDetected, run.op.as_str())
    );
}

/// Only the final report's redelivery re-queues a notification: the task's STOPPED event, which in devstack
/// arrived while the report's first delivery was between its send and its note, queued a second copy (the
/// receiver got the same delivery twice). Here the first delivery's send failed, so the note is missing as it
/// is in that window.
#[tokio::test]
async fn a_stop_event_never_queues_a_drift_notification_a_second_time() {
    let w = world();
    let c = w.drifting(DriftPolicy::Notify);
    w.hook(None);
    let run = w.start(&c, OperationKind::DriftCheck).await;
    w.webhooks.fail_sends(1);
    assert!(!w.deliver_one(drift_found(&w, &run), 1).await);

    assert!(w.deliver_one(stopped(&run, Some(0)), 1).await);
    assert!(
        drift_events(&w).is_empty(),
        "the stop is not the notification's owner"
    );
    assert!(w.deliver_one(drift_found(&w, &run), 2).await);
    assert_eq!(drift_events(&w).len(), 1);
}

#[tokio::test]
async fn a_run_queues_started_succeeded_and_state_changed_once_each() {
    let w = world();
    let c = w.cluster_in("prod", ClusterState::Provisioning);
    w.hook(None);
    let run = w.start(&c, OperationKind::Create).await;
    // As the dispatcher leaves it: the runner's first event makes it running.
    let mut op = w.op(&run.op);
    op.status = OperationStatus::Dispatched;
    w.store.put_operation(op);
    assert!(w.deliver_one(step(&w, &run, "plan", None), 1).await);
    assert!(w.deliver_one(heartbeat(&w, &run, run.token), 1).await);
    assert!(w.deliver_one(succeeded(&w, &run, run.token), 1).await);
    // Duplicates change nothing and queue nothing more.
    assert!(w.deliver_one(step(&w, &run, "plan", None), 2).await);
    assert!(w.deliver_one(succeeded(&w, &run, run.token), 2).await);

    let queued = w.webhooks.queued();
    let kinds: Vec<&str> = queued.iter().map(|m| m.event.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "operation.started",
            "operation.succeeded",
            "cluster.state_changed"
        ]
    );
    assert!(queued.iter().all(|m| m.operation_id.as_ref() == Some(&run.op)));
    assert_eq!(
        queued[0].delivery_id,
        event_id(EventType::OperationStarted, run.op.as_str())
    );
    let state: Envelope = serde_json::from_value(queued[2].payload.clone()).unwrap();
    assert_eq!(state.kind, "cluster.state_changed");
    assert_eq!(state.data["state"], "ACTIVE");
    assert_eq!(state.data["cluster_id"], c.as_str());
}

#[tokio::test]
async fn a_failed_run_queues_operation_failed_to_a_webhook_that_wants_only_that() {
    let w = world();
    let c = w.cluster_in("prod", ClusterState::Provisioning);
    w.hook(Some(vec![EventType::OperationFailed]));
    let run = w.start(&c, OperationKind::Create).await;
    assert!(w.deliver_one(step(&w, &run, "plan", None), 1).await);
    assert!(w.deliver_one(failed(&w, &run), 1).await);
    let queued = w.webhooks.queued();
    assert_eq!(queued.len(), 1, "{queued:?}");
    let body: Envelope = serde_json::from_value(queued[0].payload.clone()).unwrap();
    assert_eq!(body.kind, "operation.failed");
    assert_eq!(body.data["status"], "failed");
    assert!(body.data["error"].as_str().is_some_and(|e| !e.is_empty()));
}

#[tokio::test]
async fn a_tenant_without_a_webhook_gets_nothing_queued() {
    let w = world();
    let c = w.drifting(DriftPolicy::Notify);
    let run = w.start(&c, OperationKind::DriftCheck).await;
    assert!(w.deliver_one(drift_found(&w, &run), 1).await);
    assert!(w.deliver_one(drift_found(&w, &run), 2).await);
    assert!(w.webhooks.queued().is_empty());
    assert!(w.op(&run.op).notes.is_empty());
    assert!(w.cluster(&c).drift.drifted);
}

// --- task stopped without a report ------------------------------------------------------------------------

#[tokio::test]
async fn a_task_stopped_without_a_report_fails_the_operation_and_hands_off() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    let waiter = w.parked(&c, cluster_busy_reason(&run.op));
    assert!(w.deliver_one(step(&w, &run, "apply", None), 1).await);

    assert!(
        w.deliver_one(stopped(&run, Some(137)), 1).await,
        "decided at once"
    );
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Failed);
    let err = op.error.unwrap();
    assert_eq!(err.step, "apply");
    assert!(
        err.what
            .starts_with("runner stopped without a final report: exit code 137"),
        "{}",
        err.what
    );
    assert!(!err.fix.is_empty());
    assert_eq!(w.cluster(&c).state(), ClusterState::Failed);
    assert!(!w.holds_anything(&c, &run));
    assert_eq!(w.woken(), vec![waiter.operation_id]);
}

#[tokio::test]
async fn an_exit_0_waits_for_the_report_until_the_last_delivery() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    for receives in 1..FINAL_REPORT_GRACE_RECEIVES {
        assert!(!w.deliver_one(stopped(&run, Some(0)), receives).await);
        assert_eq!(w.last_delay(), ReportWait::EVENTS.retry_secs);
        assert_eq!(w.op(&run.op).status, OperationStatus::Running);
    }
    assert!(
        w.deliver_one(stopped(&run, Some(0)), FINAL_REPORT_GRACE_RECEIVES)
            .await
    );
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Failed);
    assert!(op.error.unwrap().what.contains(LOST_REPORT));
    assert!(!w.holds_anything(&c, &run));
}

// --- issue 15, defect 4: a successful apply can end FAILED ----------------------------------------------------

/// The STOPPED event (exit 0) arrives while the batch holding the runner's `Succeeded` failed `failures`
/// times; SQS hands the report out again a visibility timeout after each failure. Delivers the stop as SQS
/// would (after each back-off the status function asks for) until the report is due, then the report.
async fn stop_then_report_after_failed_batches(w: &World, run: &Run, failures: u32) {
    let visibility = strato_aws::resources::queue("events").visibility_timeout_secs;
    let report_due = w.clock.now() + Duration::seconds(i64::from(visibility * failures));
    let mut receives = 1;
    while w.clock.now() < report_due {
        let acked = w.deliver_one(stopped(run, Some(0)), receives).await;
        assert!(
            !acked,
            "delivery {receives} of the stop, {} s before the report: it must wait, not conclude",
            (report_due - w.clock.now()).whole_seconds()
        );
        assert_eq!(w.op(&run.op).status, OperationStatus::Running);
        w.clock.advance(Duration::seconds(i64::from(w.last_delay())));
        receives += 1;
    }
    assert!(w.deliver_one(succeeded(w, run, run.token), 1 + failures).await);
    // The stop's next delivery finds the operation ended.
    assert!(w.deliver_one(stopped(run, Some(0)), receives).await);
}

#[tokio::test]
async fn late_success_after_stop_is_not_lost() {
    let w = world();
    let (c, run) = w.running(ClusterState::Provisioning, OperationKind::Create).await;
    stop_then_report_after_failed_batches(&w, &run, 1).await;

    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Succeeded, "{:?}", op.error);
    assert_eq!(w.cluster(&c).state(), ClusterState::Active);
    assert!(!w.holds_anything(&c, &run));
}

#[tokio::test]
async fn late_success_survives_a_report_batch_failing_twice() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    stop_then_report_after_failed_batches(&w, &run, REPORT_WAIT_VISIBILITY_TIMEOUTS - 1).await;
    assert_eq!(w.op(&run.op).status, OperationStatus::Succeeded);
    assert_eq!(w.cluster(&c).state(), ClusterState::Active);
}

#[tokio::test]
async fn a_runner_killed_after_archiving_its_complete_log_waits_for_its_report() {
    // Killed during the workspace cleanup that follows the report (exit 137): its complete archive proves the
    // report was sent, so the stop waits for it like an exit 0.
    let w = world();
    let (_, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    w.archive.archived(&run.op, 420, true);
    assert!(!w.deliver_one(stopped(&run, Some(137)), 1).await);
    assert_eq!(w.op(&run.op).status, OperationStatus::Running);
    assert!(w.deliver_one(succeeded(&w, &run, run.token), 2).await);
    assert_eq!(w.op(&run.op).status, OperationStatus::Succeeded);

    // Without the report by the last delivery, it fails, saying what was known.
    let w = world();
    let (_, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    w.archive.archived(&run.op, 420, true);
    assert!(
        w.deliver_one(stopped(&run, Some(137)), FINAL_REPORT_GRACE_RECEIVES)
            .await
    );
    let err = w.op(&run.op).error.unwrap();
    assert!(
        err.what.contains("complete log") && err.what.contains(LOST_REPORT),
        "{}",
        err.what
    );
}

#[tokio::test]
async fn a_success_after_a_concluded_lost_report_is_recorded_not_dropped() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    assert!(
        w.deliver_one(stopped(&run, Some(0)), FINAL_REPORT_GRACE_RECEIVES)
            .await
    );
    assert_eq!(w.op(&run.op).status, OperationStatus::Failed);
    // A successor took the cluster meanwhile: the late report must not touch it.
    let next = w.start(&c, OperationKind::Update).await;

    assert!(w.deliver_one(succeeded(&w, &run, run.token), 4).await);
    assert!(w.deliver_one(succeeded(&w, &run, run.token), 5).await);
    let op = w.op(&run.op);
    assert_eq!(
        op.status,
        OperationStatus::Failed,
        "the hand-off that followed is not undone"
    );
    let late: Vec<&String> = op
        .notes
        .iter()
        .filter(|n| n.contains("final report arrived late"))
        .collect();
    assert_eq!(late.len(), 1, "recorded once: {:?}", op.notes);
    assert!(
        late[0].contains("SUCCEEDED") && late[0].contains("endpoint"),
        "{}",
        late[0]
    );
    assert_eq!(
        w.store.lock_holder(&c),
        Some((next.op.clone(), next.token)),
        "the successor keeps the cluster"
    );
}

// --- hand-off and wake-up; issue 15, defect 3: control events for a finished operation ----------------------

#[tokio::test]
async fn a_duplicate_end_finishes_an_interrupted_hand_off() {
    let w = world();
    let (c, run) = w.running(ClusterState::Updating, OperationKind::Update).await;
    let waiter = w.parked(&c, cluster_busy_reason(&run.op));
    // An earlier delivery saved the end, then died before releasing anything.
    let mut op = w.op(&run.op);
    op.status = OperationStatus::Succeeded;
    w.store.put_operation(op);
    assert!(w.holds_anything(&c, &run));

    assert!(w.deliver_one(succeeded(&w, &run, run.token), 2).await);
    assert!(!w.holds_anything(&c, &run));
    assert_eq!(w.woken(), vec![waiter.operation_id]);
}

#[tokio::test]
async fn a_control_event_for_a_finished_operation_completes_the_hand_off() {
    let w = world();
    let c = w.cluster_in("prod", ClusterState::Failed);
    let other = w.cluster_in("other", ClusterState::Active);
    let run = w.start(&c, OperationKind::Create).await;
    let same_cluster = w.parked(&c, cluster_busy_reason(&run.op));
    let same_tenant = w.parked(&other, TENANT_LIMIT_REASON.to_owned());
    // The create ended (its deadline passed) but the delivery that ended it died before the hand-off.
    let mut op = w.op(&run.op);
    op.status = OperationStatus::Failed;
    w.store.put_operation(op);

    let ready = ControlEvent::AgentReady {
        operation_id: run.op.clone(),
        cluster_id: c.clone(),
        nodes_ready: 3,
    };
    assert!(w.deliver_one(control(ready.clone()), 1).await);
    assert!(!w.holds_anything(&c, &run), "lock and tenant slot released");
    assert_eq!(
        w.woken(),
        vec![
            same_cluster.operation_id.clone(),
            same_tenant.operation_id.clone()
        ]
    );
    assert_eq!(
        w.op(&run.op).status,
        OperationStatus::Failed,
        "the end stays as it was"
    );

    // Again (a duplicate, or the deadline timer): idempotent.
    let deadline = ControlEvent::ConfigureDeadline {
        operation_id: run.op.clone(),
        cluster_id: c.clone(),
        deadline: w.clock.now(),
    };
    assert!(w.deliver_one(control(deadline), 1).await);
    assert!(w.deliver_one(control(ready), 2).await);
    assert_eq!(w.woken().len(), 2, "nobody woken twice");
}

#[tokio::test]
async fn the_report_wait_spans_several_visibility_timeouts_of_the_events_queue() {
    let q = strato_aws::resources::queue("events");
    let wait = ReportWait::EVENTS;
    assert_eq!(
        wait,
        ReportWait::for_queue(q.visibility_timeout_secs, q.max_receive_count)
    );
    assert_eq!(
        wait.last_receive, q.max_receive_count,
        "decided before the DLQ takes the stop"
    );
    assert!(
        wait.total_secs() >= i64::from(q.visibility_timeout_secs * REPORT_WAIT_VISIBILITY_TIMEOUTS),
        "{wait:?}"
    );
    const { assert!(REPORT_WAIT_VISIBILITY_TIMEOUTS >= 2) };
}

// --- issue 19 (load): a final report is not held up by other operations' records of its batch --------------

/// An archive whose look-up of a record naming `gated` (every record passes `unspill` first) stands for a
/// slow record: it finishes only once `wait_for` no longer holds a tenant slot.
struct Gate {
    store: FakeStore,
    tenant: TenantId,
    gated: OperationId,
    wait_for: OperationId,
}

impl strato_domain::ports::RunArchive for Gate {
    async fn last_archived_seq(&self, _: &OperationId) -> Result<u64, strato_domain::ports::PortError> {
        Ok(0)
    }
    async fn archive_complete(&self, _: &OperationId) -> Result<bool, strato_domain::ports::PortError> {
        Ok(false)
    }
    async fn unspill(&self, body: &str) -> Result<Option<String>, strato_domain::ports::PortError> {
        if body.contains(self.gated.as_str()) {
            while self.store.slots(&self.tenant).contains(&self.wait_for) {
                tokio::task::yield_now().await;
            }
        }
        Ok(None)
    }
}

struct GatedPorts;

impl Ports for GatedPorts {
    type Store = FakeStore;
    type Templates = FakeTemplates;
    type Jobs = FakeJobQueue;
    type Queues = FakeStatusQueues;
    type Archive = Gate;
    type Webhooks = FakeWebhooks;
    type Clock = FakeClock;
    type Audit = FakeAuditLog;
    type Rollouts = FakeRollouts;
    type RolloutQueue = FakeQueue;
}

#[tokio::test]
async fn a_final_report_hands_its_slot_on_while_another_operations_record_of_the_batch_is_still_handled() {
    let w = world();
    let (c1, c2, c3) = (
        w.cluster_in("busy", ClusterState::Updating),
        w.cluster_in("done", ClusterState::Updating),
        w.cluster_in("next", ClusterState::Active),
    );
    let slow = w.start(&c1, OperationKind::Update).await;
    let done = w.start(&c2, OperationKind::Update).await;
    let waiting = w.parked(&c3, TENANT_LIMIT_REASON.to_owned());
    let gate = Gate {
        store: w.store.clone(),
        tenant: w.tenant.clone(),
        gated: slow.op.clone(),
        wait_for: done.op.clone(),
    };
    let status: Status<'_, GatedPorts> = Status {
        store: &w.store,
        templates: &w.templates,
        jobs: &w.jobs,
        queues: &w.queues,
        archive: &gate,
        webhooks: &w.webhooks,
        clock: &w.clock,
        audit: &w.audit,
        rollouts: &w.rollouts,
        rollout_queue: &w.rollout_queue,
        report_wait: ReportWait::EVENTS,
        approval_ttl: strato_domain::approval::DEFAULT_APPROVAL_TTL,
        run_proofs: &w.proofs,
    };
    // The slow operation's heartbeat first, the other's final report behind it in the same batch.
    let event = w.batch(&[
        (heartbeat(&w, &slow, slow.token), 1),
        (succeeded(&w, &done, done.token), 1),
    ]);
    let answer = tokio::time::timeout(std::time::Duration::from_secs(5), status.handle(event))
        .await
        .expect("the final report waited for the record before it (the batch never ended)");
    assert!(answer.batch_item_failures.is_empty(), "{answer:?}");
    assert_eq!(w.op(&done.op).status, OperationStatus::Succeeded);
    assert!(!w.store.slots(&w.tenant).contains(&done.op));
    assert_eq!(
        w.woken(),
        vec![waiting.operation_id],
        "the freed slot went to the waiter"
    );
    assert_eq!(
        w.op(&slow.op).heartbeat_at,
        Some(w.clock.now()),
        "and the slow record was applied"
    );
}

// --- issue 15, defect 1: templates with an agent never reach ACTIVE -----------------------------------------

/// A template that installs the cluster agent, with this configure deadline.
fn agent_template(deadline_secs: u64) -> strato_domain::template::Template {
    strato_domain::template::Template::from_toml(&format!(
        r#"
name = "aws-eks-basic"
version = "1.2.0"
providers = ["aws"]
stages = [{{ name = "cluster", modules = ["k8s"] }}]
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
deadline_secs = {deadline_secs}
"#
    ))
    .unwrap()
}

/// A create of a template with an agent (`deadline_secs`) whose runner reported success: the cluster waits
/// in CONFIGURING, the create open with its lock and slot.
async fn configuring(w: &World, deadline_secs: u64) -> (ClusterId, Run) {
    w.templates.publish(agent_template(deadline_secs));
    let c = w.cluster_in("agented", ClusterState::Provisioning);
    let run = w.start(&c, OperationKind::Create).await;
    let mut op = w.op(&run.op);
    op.spec = Some(w.cluster(&c).spec.clone());
    w.store.put_operation(op);
    assert!(w.deliver_one(step(w, &run, "apply", None), 1).await);
    assert!(w.deliver_one(step(w, &run, "apply", Some(true)), 1).await);
    assert!(w.deliver_one(succeeded(w, &run, run.token), 1).await);
    assert_eq!(w.cluster(&c).state(), ClusterState::Configuring);
    let op = w.op(&run.op);
    assert_eq!(
        op.status,
        OperationStatus::Running,
        "the create waits for its agent"
    );
    assert!(op.awaiting_agent());
    (c, run)
}

/// Whether the create is still waiting in CONFIGURING with its lock and slot.
fn still_configuring(w: &World, c: &ClusterId, run: &Run) {
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Running, "{:?}", op.error);
    assert!(op.awaiting_agent());
    assert_eq!(w.cluster(c).state(), ClusterState::Configuring);
    assert_eq!(w.store.lock_holder(c), Some((run.op.clone(), run.token)));
    assert!(w.store.slots(&w.tenant).contains(&run.op));
}

fn agent_ready(run: &Run, c: &ClusterId) -> String {
    control(ControlEvent::AgentReady {
        operation_id: run.op.clone(),
        cluster_id: c.clone(),
        nodes_ready: 2,
    })
}

#[tokio::test]
async fn agent_handshake_stop_event_during_configure_keeps_configuring() {
    let w = world();
    let (c, run) = configuring(&w, 600).await;
    // The runner exited 0 after its report: every delivery of its stop, the last one included, is acked
    // at once and changes nothing.
    for receives in [1, FINAL_REPORT_GRACE_RECEIVES] {
        assert!(
            w.deliver_one(stopped(&run, Some(0)), receives).await,
            "delivery {receives}"
        );
        still_configuring(&w, &c, &run);
    }
    // Killed in its workspace cleanup after the report: the same.
    assert!(w.deliver_one(stopped(&run, Some(137)), 1).await);
    still_configuring(&w, &c, &run);
    assert!(
        w.queues.visibility_changes().is_empty(),
        "nothing waits for a report"
    );

    // Before the report, a stop still fails the create.
    let w = world();
    w.templates.publish(agent_template(600));
    let c = w.cluster_in("agented", ClusterState::Provisioning);
    let run = w.start(&c, OperationKind::Create).await;
    assert!(w.deliver_one(step(&w, &run, "apply", None), 1).await);
    assert!(w.deliver_one(stopped(&run, Some(137)), 1).await);
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Failed);
    assert_eq!(op.error.unwrap().step, "apply");
    assert!(!w.holds_anything(&c, &run));
}

#[tokio::test]
async fn agent_handshake_agent_ready_after_the_runner_stopped_ends_active_and_hands_off() {
    let w = world();
    let (c, run) = configuring(&w, 600).await;
    let waiter = w.parked(&c, cluster_busy_reason(&run.op));
    assert!(w.deliver_one(stopped(&run, Some(0)), 1).await);
    w.clock.advance(Duration::seconds(90));

    assert!(w.deliver_one(agent_ready(&run, &c), 1).await);
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Succeeded, "{:?}", op.error);
    let configure = op.steps.iter().find(|s| s.name == "configure").unwrap();
    assert_eq!(configure.ok, Some(true));
    let cluster = w.cluster(&c);
    assert_eq!(cluster.state(), ClusterState::Active);
    assert_eq!(cluster.configuring_deadline, None);
    assert!(!w.holds_anything(&c, &run));
    assert_eq!(w.woken(), vec![waiter.operation_id]);

    // The stop's last delivery and the deadline timer, arriving afterwards, change nothing.
    assert!(
        w.deliver_one(stopped(&run, Some(0)), FINAL_REPORT_GRACE_RECEIVES)
            .await
    );
    let (timer, _) = w.queues.controls()[0].clone();
    w.clock.advance(Duration::seconds(600));
    assert!(w.deliver_one(control(timer), 1).await);
    assert_eq!(w.op(&run.op).status, OperationStatus::Succeeded);
    assert_eq!(w.cluster(&c).state(), ClusterState::Active);
    assert_eq!(w.woken().len(), 1);
}

#[tokio::test]
async fn agent_handshake_deadline_fails_with_what_step_fix_and_hands_off() {
    let w = world();
    let (c, run) = configuring(&w, 120).await;
    let waiter = w.parked(&c, cluster_busy_reason(&run.op));
    assert!(w.deliver_one(stopped(&run, Some(0)), 1).await);
    let controls = w.queues.controls();
    assert_eq!(controls.len(), 1);
    let (timer, delay) = controls[0].clone();
    assert_eq!(delay, 120);
    w.clock.advance(Duration::seconds(i64::from(delay)));

    assert!(w.deliver_one(control(timer), 1).await);
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Failed);
    let err = op.error.unwrap();
    assert_eq!(err.step, "configure");
    assert_eq!(err.category, ErrorCategory::Timeout);
    assert!(err.what.contains("agent did not register"), "{}", err.what);
    assert!(err.fix.contains("retry"), "{}", err.fix);
    let cluster = w.cluster(&c);
    assert_eq!(cluster.state(), ClusterState::Failed);
    assert_eq!(cluster.last_error.unwrap().step, "configure");
    assert!(!w.holds_anything(&c, &run));
    assert_eq!(w.woken(), vec![waiter.operation_id]);

    // A late agent changes nothing.
    assert!(w.deliver_one(agent_ready(&run, &c), 1).await);
    assert_eq!(w.cluster(&c).state(), ClusterState::Failed);
}

#[tokio::test]
async fn agent_handshake_deadline_over_15_minutes_is_chained() {
    let w = world();
    let deadline = 3600 + 30;
    let (c, run) = configuring(&w, deadline).await;
    let started = w.clock.now();
    assert!(w.deliver_one(stopped(&run, Some(0)), 1).await);
    // Each timer is delivered once, when due, as a new message (its first receive): SQS never holds one
    // longer than 15 minutes, and none may reach the dead-letter queue by being handed back again and again.
    let mut delivered = 0;
    while w.op(&run.op).status == OperationStatus::Running {
        let controls = w.queues.controls();
        assert_eq!(controls.len(), delivered + 1, "one timer in flight at a time");
        let (timer, delay) = controls[delivered].clone();
        assert!(
            (1..=strato_status::MAX_TIMER_DELAY_SECS).contains(&delay),
            "timer {delivered} asks SQS for {delay} s"
        );
        still_configuring(&w, &c, &run);
        w.clock.advance(Duration::seconds(i64::from(delay)));
        assert!(
            w.deliver_one(control(timer), 1).await,
            "timer {delivered} is acked"
        );
        delivered += 1;
        assert!(delivered < 10, "the chain ends at the deadline");
    }
    assert_eq!(delivered, 5, "900 + 900 + 900 + 900 + 30 s");
    assert_eq!(w.clock.now() - started, Duration::seconds(deadline as i64));
    assert!(w.queues.visibility_changes().is_empty(), "no timer handed back");
    let op = w.op(&run.op);
    assert_eq!(op.status, OperationStatus::Failed);
    assert_eq!(op.error.unwrap().step, "configure");
    assert!(!w.holds_anything(&c, &run));
}

#[tokio::test]
async fn an_event_without_its_runs_proof_changes_nothing() {
    // Code inside another run (a module, a provider) can reach the events queue but not this run's proof.
    let w = world();
    let cluster = w.cluster_in("forged", ClusterState::Provisioning);
    let run = w.start(&cluster, OperationKind::Create).await;
    let genuine: serde_json::Value = serde_json::from_str(&succeeded(&w, &run, run.token)).unwrap();
    let mut missing = genuine.clone();
    missing.as_object_mut().unwrap().remove(PROOF_FIELD);
    let mut other_run = genuine.clone();
    other_run[PROOF_FIELD] = proofs().proof(&OperationId::generate(), run.token).into();
    let mut other_key = genuine.clone();
    other_key[PROOF_FIELD] = RunProofKey::new(vec![9; 32])
        .unwrap()
        .proof(&run.op, run.token)
        .into();
    for (what, forged) in [
        ("missing", missing),
        ("another run's", other_run),
        ("another key's", other_key),
    ] {
        assert!(
            w.deliver_one(forged.to_string(), 1).await,
            "{what} proof: acknowledged, not retried"
        );
        assert_eq!(
            w.op(&run.op).status,
            OperationStatus::Running,
            "{what} proof changed the operation"
        );
        assert_eq!(
            w.cluster(&cluster).state(),
            ClusterState::Provisioning,
            "{what} proof"
        );
        assert!(w.holds_anything(&cluster, &run), "{what} proof released the lock");
    }
    assert!(w.deliver_one(genuine.to_string(), 1).await);
    assert_eq!(
        w.op(&run.op).status,
        OperationStatus::Succeeded,
        "the run's own report applies"
    );
}

//! The scheduler against moto: drift selection through the index, no duplicates, busy clusters postponed;
//! the sweeper re-enqueues undispatched work, reports dead runners (and never live ones), and releases
//! Terraform state locks only when no operation could hold them.

use crate::flow_support as support;

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodb::types::AttributeValue;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};
use strato_domain::ts;
use strato_scheduler::{Config, Ctx, Report, Task, Tick};
use support::{World, failures};
use time::{Duration, OffsetDateTime};

struct Bed {
    w: World,
    status: strato_status::Ctx,
    scheduler: Ctx,
}

impl Bed {
    async fn new() -> Self {
        let _ = tracing_subscriber::fmt().with_test_writer().try_init();
        let w = World::new().await;
        let status = w.status_ctx().await;
        let prefix = w.env.names.prefix().to_owned();
        let cluster = w.config.runner.cluster.clone();
        let config = Config::from_lookup(|k| match k {
            "STRATO_RESOURCE_PREFIX" => Some(prefix.clone()),
            "STRATO_RUNNER_CLUSTER" => Some(cluster.clone()),
            _ => None,
        })
        .unwrap();
        let scheduler = Ctx::new(config, &w.env.aws, w.ecs.clone()).await.unwrap();
        Self { w, status, scheduler }
    }

    async fn run(&self, task: Task, now: OffsetDateTime) -> Report {
        strato_scheduler::handle(&self.scheduler, &Tick { task }, now)
            .await
            .unwrap()
    }

    /// An ACTIVE cluster with no operation open (its create finished).
    async fn active(&self, name: &str) -> Cluster {
        let (cluster, create) = self.w.new_cluster("acme", name).await;
        self.w.dispatch(&[&create]).await;
        let mut c = self.w.cluster(&cluster).await;
        c = c.in_state(ClusterState::Active);
        self.w.store.save_cluster(&mut c).await.unwrap();
        let mut op = self.w.op(&create.operation_id).await;
        op.status = OperationStatus::Succeeded;
        self.w.store.save_operation(&mut op, false).await.unwrap();
        self.w
            .store
            .release_cluster_lock(&cluster.cluster_id, &op.operation_id, op.fencing_token.unwrap())
            .await
            .unwrap();
        self.w
            .store
            .release_tenant_slot(&op.tenant_id, &op.operation_id)
            .await
            .unwrap();
        self.w.take_jobs().await;
        self.w.cluster(&cluster).await
    }

    /// Everything on the events queue, as Lambda would deliver it to the status function on its
    /// `receives`-th delivery.
    async fn deliver_events(&self, receives: u32) -> usize {
        let mut records = Vec::new();
        for _ in 0..3 {
            for m in self.w.receive(&self.w.queues.events).await {
                let mut r = SqsMessage::default();
                r.message_id = m.message_id().map(str::to_owned);
                r.body = m.body().map(str::to_owned);
                r.attributes
                    .insert("ApproximateReceiveCount".into(), receives.to_string());
                records.push(r);
            }
            if !records.is_empty() {
                break;
            }
        }
        let n = records.len();
        let mut event = SqsEvent::default();
        event.records = records;
        let resp = strato_status::handle(&self.status, event).await.unwrap();
        assert!(failures(&resp).is_empty(), "{resp:?}");
        n
    }

    /// A Terraform state lock (and its digest item) on `cluster`'s state, as a runner's engine takes it.
    async fn put_state_lock(&self, cluster: &Cluster) -> String {
        let table = self.w.env.names.table("tf-locks");
        let id = format!(
            "{}/tenants/{}/clusters/{}/cluster.tfstate",
            self.w.env.names.bucket("state"),
            cluster.tenant_id,
            cluster.cluster_id
        );
        let info = r#"{"ID":"8d1c","Operation":"OperationTypeApply","Who":"runner@task-1","Version":"0.15.0","Created":"2026-11-22T04:40:00Z","Path":"x"}"#;
        let ddb = &self.w.env.aws.dynamodb;
        ddb.put_item()
            .table_name(&table)
            .item("LockID", AttributeValue::S(id.clone()))
            .item("Info", AttributeValue::S(info.into()))
            .send()
            .await
            .unwrap();
        ddb.put_item()
            .table_name(&table)
            .item("LockID", AttributeValue::S(format!("{id}-md5")))
            .item("Digest", AttributeValue::S("abc".into()))
            .send()
            .await
            .unwrap();
        id
    }

    async fn state_lock_exists(&self, id: &str) -> bool {
        self.w
            .env
            .aws
            .dynamodb
            .get_item()
            .table_name(self.w.env.names.table("tf-locks"))
            .key("LockID", AttributeValue::S(id.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .is_some()
    }

    fn ops_of_kind(ops: &[Operation], kind: OperationKind) -> Vec<&Operation> {
        ops.iter().filter(|o| o.kind == kind).collect()
    }
}

fn later(minutes: i64) -> OffsetDateTime {
    ts::now() + Duration::minutes(minutes)
}

#[tokio::test(flavor = "multi_thread")]
async fn due_clusters_get_one_drift_check_and_busy_ones_wait() {
    let b = Bed::new().await;
    let idle = b.active("idle").await;
    let busy = b.active("busy").await;
    let fresh = b.active("fresh").await;
    // Not due yet: a new ACTIVE cluster's first check is one interval away.
    assert!(b.run(Task::Drift, ts::now()).await.drift_checks_queued == 0);

    let mut f = b.w.cluster(&fresh).await;
    f.next_drift_check_at = Some(ts::format(later(60 * 24)));
    b.w.store.save_cluster(&mut f).await.unwrap();
    b.w.new_op(&busy, OperationKind::Update).await; // queued: the cluster is busy
    b.w.take_jobs().await;

    let in_7h = later(7 * 60);
    let report = b.run(Task::Drift, in_7h).await;
    assert_eq!(report.drift_checks_queued, 1, "{report:?}");
    assert_eq!(report.drift_postponed_busy, 1, "{report:?}");
    let ops = b.w.store.list_operations(&idle.cluster_id).await.unwrap();
    let checks = Bed::ops_of_kind(&ops, OperationKind::DriftCheck);
    assert_eq!(checks.len(), 1);
    assert_eq!(
        checks[0].requested_by.as_deref(),
        Some(strato_scheduler::SCHEDULER)
    );
    let jobs = b.w.take_jobs().await;
    assert_eq!(jobs.records.len(), 1);
    assert!(jobs.records[0].body.as_deref().unwrap().contains("drift-check"));

    // The claim moved the next check: an overlapping run finds nothing due...
    let busy_next = b.w.cluster(&busy).await.next_drift_check_at.unwrap();
    assert!(ts::parse(&busy_next).unwrap() <= in_7h + strato_scheduler::BUSY_RETRY);
    assert_eq!(b.run(Task::Drift, in_7h).await, Report::default());
    // ...and when due again while the first check is still pending, no second one is queued.
    let report = b.run(Task::Drift, later(14 * 60)).await;
    assert_eq!(report.drift_already_pending, 1, "{report:?}");
    let ops = b.w.store.list_operations(&idle.cluster_id).await.unwrap();
    assert_eq!(Bed::ops_of_kind(&ops, OperationKind::DriftCheck).len(), 1);
    let ops = b.w.store.list_operations(&busy.cluster_id).await.unwrap();
    assert!(Bed::ops_of_kind(&ops, OperationKind::DriftCheck).is_empty());
    // The cluster that is not due was not touched.
    assert_eq!(
        b.w.cluster(&fresh).await.next_drift_check_at,
        f.next_drift_check_at
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operation_never_dispatched_is_requeued_after_the_grace_period() {
    let b = Bed::new().await;
    // The API's transaction happened, the enqueue did not (the job is dropped here).
    let (_, create) = b.w.new_cluster("acme", "lost").await;
    b.w.take_jobs().await;
    assert_eq!(
        b.run(Task::Sweep, ts::now()).await.requeued,
        0,
        "within grace: left alone"
    );
    let report = b.run(Task::Sweep, later(5)).await;
    assert_eq!(report.requeued, 1, "{report:?}");
    let jobs = b.w.take_jobs().await;
    assert_eq!(jobs.records.len(), 1);
    // The requeued job dispatches as usual.
    let resp = strato_dispatcher::handle(&b.w.dispatcher, jobs).await.unwrap();
    assert!(failures(&resp).is_empty());
    assert_eq!(
        b.w.op(&create.operation_id).await.status,
        OperationStatus::Dispatched
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_runner_is_failed_and_a_live_one_is_never_touched() {
    let b = Bed::new().await;
    let (dead_c, dead) = b.w.new_cluster("acme", "dead").await;
    let (live_c, live) = b.w.new_cluster("acme", "live").await;
    b.w.dispatch(&[&dead, &live]).await;
    b.w.take_jobs().await;
    let dead_op = b.w.op(&dead.operation_id).await;
    b.w.ecs
        .stop_task()
        .cluster(&b.w.config.runner.cluster)
        .task(dead_op.task_arn.clone().unwrap())
        .reason("Essential container in task exited")
        .send()
        .await
        .unwrap();

    // Both are silent for 10 minutes; only ECS tells them apart.
    let report = b.run(Task::Sweep, later(10)).await;
    assert_eq!(report.stale_runners_reported, 1, "{report:?}");
    // moto reports exit code 0 for a stopped task, so status first waits for a final report in flight; on
    // the last grace delivery it concludes the report was lost.
    let last = strato_status::FINAL_REPORT_GRACE_RECEIVES;
    assert_eq!(b.deliver_events(last).await, 1);

    let op = b.w.op(&dead.operation_id).await;
    assert_eq!(op.status, OperationStatus::Failed, "{op:?}");
    let what = &op.error.as_ref().unwrap().what;
    assert!(
        what.contains("Essential container") || what.contains("final report never arrived"),
        "{what}"
    );
    assert_eq!(b.w.cluster(&dead_c).await.state(), ClusterState::Failed);
    assert_eq!(b.w.store.cluster_lock(&dead_c.cluster_id).await.unwrap(), None);

    let live_op = b.w.op(&live.operation_id).await;
    assert_eq!(live_op.status, OperationStatus::Dispatched);
    assert_eq!(
        b.w.store.cluster_lock(&live_c.cluster_id).await.unwrap(),
        Some((live.operation_id.clone(), live_op.fencing_token.unwrap())),
        "a runner whose task runs keeps its lock, however quiet"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn terraform_state_locks_of_dead_runners_are_released_and_recorded() {
    let b = Bed::new().await;
    // A cluster whose operations are all over: its runner died holding the state lock.
    let idle = b.active("idle").await;
    let orphan = b.put_state_lock(&idle).await;
    // A cluster with a running operation: its lock may be live and stays.
    let (busy, create) = b.w.new_cluster("acme", "busy").await;
    b.w.dispatch(&[&create]).await;
    let held = b.put_state_lock(&busy).await;

    let report = b.run(Task::Sweep, ts::now()).await;
    assert_eq!(report.tf_locks_released, 1, "{report:?}");
    assert!(!b.state_lock_exists(&orphan).await, "orphaned lock released");
    assert!(
        b.state_lock_exists(&format!("{orphan}-md5")).await,
        "digest items are not locks"
    );
    assert!(
        b.state_lock_exists(&held).await,
        "never released under an open operation"
    );

    let ops = b.w.store.list_operations(&idle.cluster_id).await.unwrap();
    let last = ops.iter().max_by_key(|o| o.created_at).unwrap();
    assert!(
        last.notes
            .iter()
            .any(|n| n.contains(&orphan) && n.contains("runner@task-1")),
        "{:?}",
        last.notes
    );
    // Idempotent: a second sweep finds nothing to do.
    assert_eq!(b.run(Task::Sweep, ts::now()).await.tf_locks_released, 0);
}

/// A live runner — heartbeat fresh, task running — holds the cluster lock and the Terraform state lock;
/// no sweep takes either, now or after its heartbeat went quiet (the task still runs).
#[tokio::test(flavor = "multi_thread")]
async fn the_sweeper_never_takes_a_live_runners_locks() {
    let b = Bed::new().await;
    let (cluster, create) = b.w.new_cluster("acme", "alive").await;
    b.w.dispatch(&[&create]).await;
    b.w.take_jobs().await;
    let mut op = b.w.op(&create.operation_id).await;
    let task = b.w.task(op.task_arn.as_deref().unwrap()).await;
    assert_ne!(task.last_status(), Some("STOPPED"));
    op.status = OperationStatus::Running;
    op.heartbeat_at = Some(ts::now());
    b.w.store.save_operation(&mut op, false).await.unwrap();
    let lock = b.put_state_lock(&cluster).await;
    let token = op.fencing_token.unwrap();

    for now in [ts::now(), later(10), later(60)] {
        let report = b.run(Task::Sweep, now).await;
        assert_eq!(report.stale_runners_reported, 0, "{report:?}");
        assert_eq!(report.tf_locks_released, 0, "{report:?}");
        assert_eq!(report.woken + report.requeued, 0, "{report:?}");
        assert!(b.state_lock_exists(&lock).await, "state lock kept at {now}");
        assert_eq!(
            b.w.store.cluster_lock(&cluster.cluster_id).await.unwrap(),
            Some((create.operation_id.clone(), token)),
            "cluster lock kept at {now}"
        );
        let after = b.w.op(&create.operation_id).await;
        assert_eq!(after.status, OperationStatus::Running);
        assert!(after.notes.is_empty(), "{:?}", after.notes);
    }
    // Nothing was reported to the status function either.
    let out = b.w.receive(&b.w.queues.events).await;
    assert!(out.is_empty(), "{out:?}");
}

/// Connections past API Gateway's 2 h limit are removed with their subscriptions (found through the
/// `by_expiry` index); live ones stay.
#[tokio::test(flavor = "multi_thread")]
async fn connections_past_their_two_hours_are_removed() {
    use strato_connections::{CONNECTION_LIFETIME, Connection};

    let b = Bed::new().await;
    let conns = &b.scheduler.connections;
    let tenant: strato_domain::ids::TenantId = "acme".parse().unwrap();
    let op = &strato_domain::ids::OperationId::generate();
    let connect = |id: &str, at: OffsetDateTime| Connection {
        pk: strato_connections::conn_pk(id),
        sk: "conn".into(),
        connection_id: id.into(),
        tenant_id: tenant.clone(),
        subject: None,
        connected_at: at,
        expires_at: (at + CONNECTION_LIFETIME).unix_timestamp(),
    };
    let old = connect("old-conn=", ts::now() - Duration::hours(3));
    let live = connect("live-conn=", ts::now() - Duration::minutes(30));
    for c in [&old, &live] {
        conns.put_connection(c).await.unwrap();
        conns.subscribe(c, op).await.unwrap();
    }
    let subscribers = |at| async move {
        let mut ids: Vec<String> = conns
            .subscribers(op, at)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.connection_id)
            .collect();
        ids.sort();
        ids
    };
    // Readers already ignore the expired one; its items are still there.
    assert_eq!(subscribers(ts::now() - Duration::hours(2)).await.len(), 2);

    let report = b.run(Task::Sweep, ts::now()).await;
    assert_eq!(report.connections_removed, 1, "{report:?}");
    assert!(conns.get_connection("old-conn=").await.unwrap().is_none());
    assert!(conns.get_connection("live-conn=").await.unwrap().is_some());
    // Its subscription went too: even a reader that trusted expiry blindly sees only the live one.
    assert_eq!(
        subscribers(ts::now() - Duration::hours(2)).await,
        vec!["live-conn=".to_owned()]
    );
    assert_eq!(b.run(Task::Sweep, ts::now()).await.connections_removed, 0);
    // Two hours later the other one is past its limit as well.
    assert_eq!(b.run(Task::Sweep, later(100)).await.connections_removed, 1);
    assert!(conns.get_connection("live-conn=").await.unwrap().is_none());
}

#[test]
fn sample_ticks_parse() {
    for (file, task) in [("drift", Task::Drift), ("sweep", Task::Sweep)] {
        let path = format!("{}/../events/scheduler/{file}.json", env!("CARGO_MANIFEST_DIR"));
        let tick: Tick = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(tick.task, task);
    }
}

/// Expiry through the sparse `by_expiry` index on moto: a cluster past its expiry gets one delete (the
/// next sweep finds it open and queues none), one near it a signed-for `cluster.expiring` on the webhooks
/// queue when the tenant's webhook subscribes to it, and a cluster without expiry is not in the index.
#[tokio::test(flavor = "multi_thread")]
async fn expiry_deletes_due_clusters_once_and_announces_near_ones() {
    use strato_domain::expiry::ExpiryChange;
    use strato_domain::webhook::{EventType, Webhook};
    let b = Bed::new().await;
    let doomed = b.active("doomed").await;
    let soon = b.active("soon").await;
    let forever = b.active("forever").await;
    for (c, minutes) in [(&doomed, 30), (&soon, 60 * 5)] {
        let mut c = b.w.cluster(c).await;
        ExpiryChange::Set(ts::now() + Duration::minutes(minutes)).apply(&mut c);
        b.w.store.save_cluster(&mut c).await.unwrap();
    }
    let tenant = doomed.tenant_id.clone();
    let hook = Webhook::new("https://hooks.example.com/strato", "0123456789abcdef0")
        .unwrap()
        .with_events(Some(vec![EventType::ClusterExpiring]));
    b.w.store.set_tenant_webhook(&tenant, Some(&hook)).await.unwrap();
    assert_eq!(
        b.w.store.tenant_webhook(&tenant).await.unwrap(),
        Some(hook),
        "the subscription is stored"
    );

    let report = b.run(Task::Sweep, later(60)).await;
    assert_eq!(report.expiry_deletes_queued, 1, "{report:?}");
    assert_eq!(report.expiry_notices_sent, 1, "{report:?}");
    let ops = b.w.store.list_operations(&doomed.cluster_id).await.unwrap();
    let deletes = Bed::ops_of_kind(&ops, OperationKind::Delete);
    assert_eq!(deletes.len(), 1);
    assert_eq!(
        deletes[0].requested_by.as_deref(),
        Some(strato_scheduler::SCHEDULER)
    );
    let jobs = b.w.take_jobs().await;
    assert!(
        jobs.records.iter().any(|r| r
            .body
            .as_deref()
            .unwrap_or_default()
            .contains(deletes[0].operation_id.as_str())),
        "the delete's job is sent"
    );
    let sent = b.w.receive(&b.w.queues.webhooks).await;
    let bodies: Vec<&str> = sent.iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert!(bodies[0].contains("cluster.expiring") && bodies[0].contains(soon.cluster_id.as_str()));

    // The next sweep: the delete is open, the notice was sent for this expiry time.
    let report = b.run(Task::Sweep, later(61)).await;
    assert_eq!(
        (
            report.expiry_deletes_queued,
            report.expiry_notices_sent,
            report.expiry_postponed_busy
        ),
        (0, 0, 1),
        "{report:?}"
    );
    let ops = b.w.store.list_operations(&doomed.cluster_id).await.unwrap();
    assert_eq!(Bed::ops_of_kind(&ops, OperationKind::Delete).len(), 1);
    let ops = b.w.store.list_operations(&forever.cluster_id).await.unwrap();
    assert!(Bed::ops_of_kind(&ops, OperationKind::Delete).is_empty());
    assert_eq!(b.w.cluster(&forever).await.expiry_bucket, None);
}

/// Silent cluster agents through the sparse `by_agent_seen` index on moto: an ACTIVE cluster whose agent
/// last reported longer ago than `STRATO_AGENT_STALE_SECS` (600) is marked degraded once, with
/// `cluster.health_changed` on the webhooks queue; one that reported recently, and one whose template
/// installs no agent, are not touched.
#[tokio::test(flavor = "multi_thread")]
async fn a_silent_agent_degrades_its_cluster_once_through_the_index() {
    use strato_agent_wire::Report as AgentReport;
    use strato_domain::health::{self, HealthStatus};
    use strato_domain::webhook::{EventType, Webhook};
    let b = Bed::new().await;
    let quiet = b.active("quiet").await;
    let chatty = b.active("chatty").await;
    let agentless = b.active("agentless").await;
    for (c, seen) in [(&quiet, later(-60)), (&chatty, later(-1))] {
        let mut c = b.w.cluster(c).await;
        c.agent_registered_at = Some(seen);
        c.agent_credential_hash = Some("0".repeat(64));
        c.agent_last_seen = Some(seen);
        let report = AgentReport {
            nodes_ready: 1,
            ..AgentReport::default()
        };
        health::record(&mut c, health::assess(&report, 1, seen));
        b.w.store.save_cluster(&mut c).await.unwrap();
        assert!(c.agent_watch.is_some(), "in the index");
    }
    let hook = Webhook::new("https://hooks.example.com/strato", "0123456789abcdef0")
        .unwrap()
        .with_events(Some(vec![EventType::ClusterHealthChanged]));
    b.w.store
        .set_tenant_webhook(&quiet.tenant_id, Some(&hook))
        .await
        .unwrap();

    let report = b.run(Task::Sweep, ts::now()).await;
    assert_eq!(
        (report.agents_marked_silent, report.health_events_sent),
        (1, 1),
        "{report:?}"
    );
    let h = b.w.cluster(&quiet).await.health.unwrap();
    assert_eq!(h.status, HealthStatus::Degraded);
    assert!(
        h.reasons[0].starts_with("the agent has not reported since"),
        "{h:?}"
    );
    let chatty_health = b.w.cluster(&chatty).await.health.unwrap();
    assert_eq!(chatty_health.status, HealthStatus::Healthy);
    assert!(b.w.cluster(&agentless).await.health.is_none());
    let sent = b.w.receive(&b.w.queues.webhooks).await;
    let bodies: Vec<&str> = sent.iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert!(bodies[0].contains("cluster.health_changed") && bodies[0].contains(quiet.cluster_id.as_str()));

    // Idempotent: the marked cluster left the index.
    let report = b.run(Task::Sweep, ts::now()).await;
    assert_eq!(report.agents_marked_silent, 0, "{report:?}");
}

/// A rollout whose soak has ended gets its tick from the sweep on `rollouts.fifo` (grouped by the rollout,
/// in the shape the api's consumer reads); a second sweep within the minute sends no second tick (FIFO
/// deduplication on the tick's minute).
#[tokio::test(flavor = "multi_thread")]
async fn a_rollout_whose_soak_ended_gets_its_tick_on_the_rollouts_queue() {
    use strato_rollout::feed::RolloutMessage;
    use strato_rollout::store::{Owner, Record, RolloutId, RolloutStore};
    use strato_rollout::{Input, Phase, Rollout};
    let b = Bed::new().await;
    let c = b.active("fleet").await;
    let plan =
        serde_json::from_value(serde_json::json!({"mode": "apply", "waves": [{"percent": 100}]})).unwrap();
    let member = (c.tenant_id.clone(), c.cluster_id.clone(), "1.0.0".to_owned());
    let mut rollout = Rollout::new(plan, vec![member]).unwrap();
    rollout.phase = Phase::Soaking { wave: 0, until: 1 };
    let r = Record {
        id: RolloutId::generate(),
        owner: Owner::Platform,
        template: "t".into(),
        to_version: "2.0.0".into(),
        created_by: "ops".into(),
        created_at: 0,
        rollout,
        version: 0,
    };
    b.w.store.create(&r).await.unwrap();

    let now = ts::now();
    b.run(Task::Sweep, now).await;
    b.run(Task::Sweep, now).await;
    let got =
        b.w.env
            .aws
            .sqs
            .receive_message()
            .queue_url(&b.w.queues.rollouts)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
    let messages = got.messages();
    assert_eq!(messages.len(), 1, "one tick: {messages:?}");
    let m: RolloutMessage = serde_json::from_str(messages[0].body().unwrap()).unwrap();
    assert_eq!((m.rollout_id, m.input), (r.id.clone(), Input::Tick));
    let group = messages[0]
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId));
    assert_eq!(group.map(String::as_str), Some(r.id.as_str()));
}

//! The `rollouts` queue on fakes: an ended operation of a member becomes its rollout's message (one outside
//! any rollout does not), the consumer applies each message and carries out what it decided (a preview
//! completes, an apply goes from wave to wave through its soak and the scheduler's tick, a failure pauses
//! it and tells people), a message delivered twice starts one run, and an unreadable one is dropped.

use serde_json::json;
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::model::{Operation, OperationKind, OperationStatus};
use strato_domain::ts;

use crate::effects::Notice;
use crate::effects_tests::{FakeRuns, record, rt};
use crate::fake::{FakeQueue, FakeRollouts};
use crate::feed::{Consumed, RolloutMessage, consume, outcome_message, tick_due};
use crate::machine::{Input, MemberStatus, PauseReason, Phase, PlanFindings};
use crate::store::{Record, RolloutStore};

/// The operation the rollout waits for on `cluster`.
fn waited(r: &Record, cluster: &ClusterId) -> OperationId {
    let m = r.rollout.members.iter().find(|m| &m.cluster == cluster).unwrap();
    match &m.status {
        MemberStatus::Planning { operation } | MemberStatus::Upgrading { operation, .. } => operation.clone(),
        s => panic!("{cluster} waits for nothing: {s:?}"),
    }
}

fn body(r: &Record, input: Input) -> String {
    serde_json::to_string(&RolloutMessage {
        rollout_id: r.id.clone(),
        input,
    })
    .unwrap()
}

fn planned(r: &Record, cluster: &ClusterId) -> Input {
    Input::Planned {
        cluster: cluster.clone(),
        operation: waited(r, cluster),
        findings: PlanFindings {
            add: 1,
            change: 2,
            ..PlanFindings::default()
        },
    }
}

fn upgraded(r: &Record, cluster: &ClusterId) -> Input {
    Input::Upgraded {
        cluster: cluster.clone(),
        operation: waited(r, cluster),
    }
}

fn applied(c: Consumed) -> Record {
    match c {
        Consumed::Applied(r) => *r,
        other => panic!("not applied: {other:?}"),
    }
}

/// A started rollout over `n` fresh clusters, its first runs carried out.
async fn started(
    store: &FakeRollouts,
    runs: &FakeRuns,
    n: usize,
    plan: serde_json::Value,
) -> (Record, Vec<ClusterId>) {
    let clusters: Vec<ClusterId> = (0..n).map(|_| ClusterId::generate()).collect();
    let mut r = record(&clusters, plan);
    let effects = r.rollout.start();
    store.create(&r).await.unwrap();
    let r = crate::effects::carry_out(store, runs, r, effects, 0)
        .await
        .unwrap();
    (r, clusters)
}

#[test]
fn the_message_round_trips_as_json_with_a_stable_dedup_id() {
    let r = record(&[ClusterId::generate()], json!({"mode": "preview"}));
    let m = RolloutMessage {
        rollout_id: r.id.clone(),
        input: Input::Tick,
    };
    let text = serde_json::to_string(&m).unwrap();
    assert!(text.contains(r#""kind":"tick""#), "{text}");
    assert_eq!(serde_json::from_str::<RolloutMessage>(&text).unwrap(), m);
    assert_eq!(m.group(), r.id.as_str());
    assert_eq!(m.dedup_id(120), m.dedup_id(179), "one tick a minute");
    assert_ne!(m.dedup_id(120), m.dedup_id(180));
    assert!(m.dedup_id(0).len() <= 128, "SQS's limit");
}

#[test]
fn a_plan_outcome_advances_a_preview_which_completes_when_every_member_planned() {
    rt().block_on(async {
        let (store, runs) = (FakeRollouts::default(), FakeRuns::default());
        let (r, c) = started(&store, &runs, 2, json!({"mode": "preview"})).await;
        assert_eq!(runs.started.lock().unwrap().len(), 2);

        let r = applied(consume(&store, &runs, &body(&r, planned(&r, &c[0])), 10).await);
        assert!(matches!(
            r.rollout.members[0].status,
            MemberStatus::Planned { .. }
        ));
        assert_eq!(r.rollout.phase, Phase::Running { wave: 0 });

        let r = applied(consume(&store, &runs, &body(&r, planned(&r, &c[1])), 11).await);
        assert_eq!(r.rollout.phase, Phase::Completed);
        assert_eq!(*runs.notices.lock().unwrap(), [Notice::Completed]);
        let counts = r.rollout.status_counts();
        assert_eq!(counts.len(), MemberStatus::NAMES.len());
        assert!(
            counts.contains(&("planned", 2)) && counts.contains(&("planning", 0)),
            "{counts:?}"
        );
        // The names are the serialized ones.
        let m = serde_json::to_value(&r.rollout.members[0]).unwrap();
        assert_eq!(m["status"], "planned");
        let summary = crate::report::FleetSummary::of(&r.rollout);
        assert_eq!(
            (summary.in_place, summary.waiting),
            (2, 0),
            "the report counts both plans: {summary:?}"
        );
        // Completed: the clusters are free again.
        assert_eq!(store.claimed_by(&c[0]).await.unwrap(), None);
    });
}

#[test]
fn an_apply_goes_wave_to_wave_through_its_soak_and_the_schedulers_tick() {
    rt().block_on(async {
        let (store, runs, queue) = (FakeRollouts::default(), FakeRuns::default(), FakeQueue::default());
        let plan = json!({"mode": "apply", "waves": [{"clusters": 1}, {"percent": 100}], "soak_secs": 300});
        let (r, c) = started(&store, &runs, 2, plan).await;
        let r = applied(consume(&store, &runs, &body(&r, planned(&r, &c[0])), 10).await);
        let update = waited(&r, &c[0]);
        assert!(
            runs.started
                .lock()
                .unwrap()
                .contains(&("update", c[0].clone(), update))
        );

        let r = applied(consume(&store, &runs, &body(&r, upgraded(&r, &c[0])), 20).await);
        assert_eq!(r.rollout.phase, Phase::Soaking { wave: 0, until: 320 });
        assert!(matches!(r.rollout.members[1].status, MemberStatus::Pending));

        // Before the soak ends the sweep sends nothing; after it, one tick, which starts wave 2.
        assert_eq!(tick_due(&store, &queue, 319).await.unwrap(), 0);
        assert_eq!(tick_due(&store, &queue, 320).await.unwrap(), 1);
        let tick = serde_json::to_string(&queue.sent()[0]).unwrap();
        let r = applied(consume(&store, &runs, &tick, 320).await);
        assert_eq!(r.rollout.phase, Phase::Running { wave: 1 });
        let plan_2 = waited(&r, &c[1]);
        assert!(
            runs.started
                .lock()
                .unwrap()
                .contains(&("plan", c[1].clone(), plan_2))
        );
    });
}

#[test]
fn a_failure_pauses_an_apply_with_its_reason_and_tells_people() {
    rt().block_on(async {
        let (store, runs) = (FakeRollouts::default(), FakeRuns::default());
        let (r, c) = started(
            &store,
            &runs,
            2,
            json!({"mode": "apply", "waves": [{"percent": 100}], "max_parallel": 2}),
        )
        .await;
        let failed = Input::Failed {
            cluster: c[1].clone(),
            operation: waited(&r, &c[1]),
            reason: "the plan failed (check the provider's credentials)".into(),
        };
        let r = applied(consume(&store, &runs, &body(&r, failed), 10).await);
        let reason = PauseReason::Failure {
            cluster: c[1].clone(),
            reason: "the plan failed (check the provider's credentials)".into(),
        };
        assert_eq!(
            r.rollout.phase,
            Phase::Paused {
                wave: 0,
                reason: reason.clone()
            }
        );
        assert_eq!(*runs.notices.lock().unwrap(), [Notice::Paused(reason)]);
    });
}

#[test]
fn a_message_delivered_twice_starts_one_run_and_an_unreadable_one_is_dropped() {
    rt().block_on(async {
        let (store, runs) = (FakeRollouts::default(), FakeRuns::default());
        let (r, c) = started(&store, &runs, 1, json!({"mode": "apply", "waves": [{"percent": 100}]})).await;
        let once = body(&r, planned(&r, &c[0]));
        let first = applied(consume(&store, &runs, &once, 10).await);
        let again = applied(consume(&store, &runs, &once, 11).await);
        let updates = |runs: &FakeRuns| runs.started.lock().unwrap().iter().filter(|s| s.0 == "update").count();
        assert_eq!(updates(&runs), 1);
        assert_eq!(first.version, again.version, "the duplicate wrote nothing");

        for bad in ["", "{}", r#"{"rollout_id":"nope","input":{"kind":"tick"}}"#, "[1,2]"] {
            assert!(matches!(consume(&store, &runs, bad, 12).await, Consumed::Dropped(_)), "{bad}");
        }
        // A rollout that does not exist (deleted, or never was): dropped too.
        let other = record(&[ClusterId::generate()], json!({"mode": "preview"}));
        let gone = body(&other, Input::Tick);
        assert!(matches!(consume(&store, &runs, &gone, 12).await, Consumed::Dropped(m) if m.contains("no rollout")));
        assert_eq!(updates(&runs), 1);
    });
}

#[test]
fn a_store_that_keeps_losing_its_writes_is_retried_by_the_queue() {
    rt().block_on(async {
        let (store, runs) = (FakeRollouts::default(), FakeRuns::default());
        let (r, c) = started(&store, &runs, 1, json!({"mode": "preview"})).await;
        store.conflict_next(crate::store::ATTEMPTS);
        let once = body(&r, planned(&r, &c[0]));
        assert!(matches!(
            consume(&store, &runs, &once, 10).await,
            Consumed::Retry(_)
        ));
        // Delivered again, it holds.
        let r = applied(consume(&store, &runs, &once, 11).await);
        assert_eq!(r.rollout.phase, Phase::Completed);
    });
}

fn ended(
    cluster: &ClusterId,
    operation: &OperationId,
    kind: OperationKind,
    status: OperationStatus,
) -> Operation {
    let mut op = Operation::new("acme".parse().unwrap(), cluster.clone(), kind, ts::now());
    op.operation_id = operation.clone();
    op.status = status;
    op
}

#[test]
fn an_ended_operation_of_a_member_is_its_rollouts_message_and_others_are_not() {
    rt().block_on(async {
        let (store, runs) = (FakeRollouts::default(), FakeRuns::default());
        let (r, c) = started(
            &store,
            &runs,
            1,
            json!({"mode": "apply", "waves": [{"percent": 100}]}),
        )
        .await;
        let op = waited(&r, &c[0]);

        let update_failed = ended(&c[0], &op, OperationKind::Update, OperationStatus::Failed);
        let m = outcome_message(&store, &update_failed)
            .await
            .unwrap()
            .expect("a member's end");
        assert_eq!(m.rollout_id, r.id);
        assert!(matches!(&m.input, Input::Failed { operation, .. } if *operation == op));

        let running = ended(&c[0], &op, OperationKind::Plan, OperationStatus::Running);
        assert_eq!(
            outcome_message(&store, &running).await.unwrap(),
            None,
            "not ended"
        );
        let drift = ended(&c[0], &op, OperationKind::DriftCheck, OperationStatus::Succeeded);
        assert_eq!(
            outcome_message(&store, &drift).await.unwrap(),
            None,
            "a kind no rollout starts"
        );
        let elsewhere = ended(
            &ClusterId::generate(),
            &op,
            OperationKind::Update,
            OperationStatus::Succeeded,
        );
        assert_eq!(
            outcome_message(&store, &elsewhere).await.unwrap(),
            None,
            "a cluster in no rollout"
        );
    });
}

#[test]
fn a_tick_that_cannot_be_sent_is_an_error_and_stays_due() {
    rt().block_on(async {
        let (store, runs, queue) = (FakeRollouts::default(), FakeRuns::default(), FakeQueue::default());
        let plan = json!({"mode": "apply", "waves": [{"clusters": 1}, {"percent": 100}], "soak_secs": 60});
        let (r, c) = started(&store, &runs, 2, plan).await;
        let r = applied(consume(&store, &runs, &body(&r, planned(&r, &c[0])), 0).await);
        applied(consume(&store, &runs, &body(&r, upgraded(&r, &c[0])), 0).await);
        queue.fail(true);
        assert!(tick_due(&store, &queue, 60).await.is_err());
        queue.fail(false);
        assert_eq!(tick_due(&store, &queue, 61).await.unwrap(), 1);
    });
}

#[test]
fn a_notice_is_one_webhook_event_per_member_tenant_with_the_reason() {
    use strato_domain::ids::TenantId;
    let (a, b, c) = (
        ClusterId::generate(),
        ClusterId::generate(),
        ClusterId::generate(),
    );
    let mut r = record(&[a.clone(), b.clone(), c.clone()], json!({"mode": "preview"}));
    // A platform rollout over two tenants' clusters.
    let globex: TenantId = "globex".parse().unwrap();
    r.rollout.members[2].tenant = globex.clone();
    let reason = PauseReason::Failure {
        cluster: b.clone(),
        reason: "the plan failed".into(),
    };
    let sent = crate::notices::messages(&r, &Notice::Paused(reason), ts::now()).unwrap();
    let tenants: Vec<&str> = sent.iter().map(|m| m.tenant_id.as_str()).collect();
    assert_eq!(tenants, ["acme", "globex"]);
    assert!(sent.iter().all(|m| m.event == "rollout.paused"));
    let data = &sent[0].payload["data"];
    assert_eq!(data["rollout_id"], r.id.as_str());
    assert_eq!(data["phase"], "paused");
    assert!(
        data["reason"].as_str().unwrap().contains("the plan failed"),
        "{data}"
    );
    assert_ne!(sent[0].delivery_id, sent[1].delivery_id, "one event per tenant");
    // A notice of the same save sent again is the same event; one of a later save is another.
    let again = crate::notices::messages(
        &r,
        &Notice::Paused(PauseReason::Operator { by: "x".into() }),
        ts::now(),
    );
    assert_eq!(again.unwrap()[0].delivery_id, sent[0].delivery_id);
    r.version += 1;
    let later = crate::notices::messages(&r, &Notice::Completed, ts::now()).unwrap();
    assert_eq!(later[0].event, "rollout.completed");
    assert_ne!(later[0].delivery_id, sent[0].delivery_id);
}

#[test]
fn the_sweep_resends_the_outcome_of_an_ended_run_the_rollout_still_waits_for() {
    rt().block_on(async {
        let (store, runs, queue) = (FakeRollouts::default(), FakeRuns::default(), FakeQueue::default());
        let (r, c) = started(&store, &runs, 2, json!({"mode": "preview"})).await;
        let (ended_op, running_op) = (waited(&r, &c[0]), waited(&r, &c[1]));
        let ops = std::collections::BTreeMap::from([
            (
                ended_op.clone(),
                ended(&c[0], &ended_op, OperationKind::Plan, OperationStatus::Failed),
            ),
            (
                running_op.clone(),
                ended(&c[1], &running_op, OperationKind::Plan, OperationStatus::Running),
            ),
        ]);
        let read = |id: OperationId| {
            let op = ops.get(&id).cloned();
            async move { Ok::<_, String>(op) }
        };
        assert_eq!(
            crate::feed::resend_ended(&store, &queue, read, 5).await.unwrap(),
            1
        );
        let sent = queue.sent();
        assert!(matches!(&sent[0].input, Input::Failed { operation, .. } if *operation == ended_op));
        // Applied, the member is settled: the next sweep sends nothing for it.
        applied(consume(&store, &runs, &serde_json::to_string(&sent[0]).unwrap(), 6).await);
        assert_eq!(
            crate::feed::resend_ended(&store, &queue, read, 7).await.unwrap(),
            0
        );
    });
}

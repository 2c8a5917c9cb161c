//! `GET /v1/operations/{id}/timeline` against the in-memory fakes: the moments come from the operation record
//! in the order of the operation's life, the end carries its error category, and another tenant's id is the
//! same 404 as a missing one.

use strato_api::decide::Api;
use strato_api::timeline::{Timeline, TimelineEvent as E, format_lines};
use strato_api::{ApiError, Caller};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{Operation, OperationKind, OperationStatus, Step};
use strato_domain::ports::{Clock, Operations};
use strato_domain::{ErrorCategory, UserError, ts};
use strato_fakes::{FakeClock, FakeJobQueue, FakeKeys, FakeStore, FakeTemplates};
use time::{Duration, OffsetDateTime};

struct World {
    clock: FakeClock,
    store: FakeStore,
    templates: FakeTemplates,
    keys: FakeKeys,
}

impl World {
    fn new() -> Self {
        let clock = FakeClock::at(at("2026-11-22T04:30:00Z"));
        Self {
            store: FakeStore::new(clock.clone()),
            clock,
            templates: FakeTemplates::default(),
            keys: FakeKeys::default(),
        }
    }

    fn api(&self) -> Api<'_, FakeStore, FakeTemplates, FakeJobQueue, FakeClock, FakeKeys> {
        super::fake_api(
            &self.store,
            &self.templates,
            FakeJobQueue::new(self.clock.clone()),
            self.clock.clone(),
            &self.keys,
        )
    }

    /// A queued operation of tenant `acme` created now.
    fn queued(&self, kind: OperationKind) -> Operation {
        let mut op = Operation::new(acme().tenant, ClusterId::generate(), kind, self.clock.now());
        op.requested_by = Some("user-7f3a".into());
        self.store.put_operation(op.clone());
        op
    }

    async fn timeline(&self, who: &Caller, op: &Operation) -> Result<Timeline, ApiError> {
        self.api().timeline(who, op.operation_id.as_str()).await
    }
}

fn at(s: &str) -> OffsetDateTime {
    ts::parse(s).unwrap()
}

fn acme() -> Caller {
    Caller {
        tenant: "acme".parse().unwrap(),
        subject: Some("user-7f3a".into()),
        traceparent: None,
        scopes: vec![strato_api::scopes::Scope::ClustersRead],
    }
}

fn events(t: &Timeline) -> Vec<(E, Option<&str>)> {
    t.entries.iter().map(|e| (e.event, e.step.as_deref())).collect()
}

/// What the dispatcher, the status function and the store write over a failed update's life: launched at
/// +5 s, first runner event at +20 s, init ok, apply failed, ended by the store at +2 min.
async fn run_and_fail(w: &World, mut op: Operation) -> Operation {
    let t0 = op.created_at;
    op.dispatched_at = Some(t0 + Duration::seconds(5));
    op.attempt = 1;
    op.status = OperationStatus::Running;
    op.started_at = Some(t0 + Duration::seconds(20));
    op.heartbeat_at = Some(t0 + Duration::seconds(90));
    op.steps = vec![
        Step {
            name: "init".into(),
            started_at: t0 + Duration::seconds(20),
            finished_at: Some(t0 + Duration::seconds(40)),
            ok: Some(true),
        },
        Step {
            name: "apply".into(),
            started_at: t0 + Duration::seconds(40),
            finished_at: Some(t0 + Duration::seconds(110)),
            ok: Some(false),
        },
    ];
    op.notes.push(format!(
        "{}: webhook operation.failed queued [d-1]",
        ts::format(t0 + Duration::minutes(3))
    ));
    w.store.put_operation(op.clone());
    w.clock.set(t0 + Duration::minutes(2));
    op.status = OperationStatus::Failed;
    op.error = Some(UserError::new(
        ErrorCategory::Quota,
        "apply",
        "vCPU limit reached in eu-west-1",
    ));
    w.store.store_operation(&mut op, false).await.unwrap();
    // A later write (a webhook delivery note) moves `updated_at`, not the end.
    w.clock.set(t0 + Duration::minutes(10));
    op.notes.push("webhook delivered".into());
    w.store.store_operation(&mut op, true).await.unwrap();
    op
}

#[tokio::test]
async fn a_failed_operation_reads_as_its_life_in_order_with_its_category() {
    let w = World::new();
    let op = run_and_fail(&w, w.queued(OperationKind::Update)).await;
    let t = w.timeline(&acme(), &op).await.unwrap();

    assert_eq!(
        events(&t),
        [
            (E::Queued, None),
            (E::Dispatched, None),
            (E::RunnerStarted, None),
            (E::StepStarted, Some("init")),
            (E::StepFinished, Some("init")),
            (E::StepStarted, Some("apply")),
            (E::StepFinished, Some("apply")),
            (E::Failed, Some("apply")),
            (E::Note, None),
            (E::Note, None),
        ]
    );
    let e = &t.entries;
    assert_eq!(e[0].detail.as_deref(), Some("requested by user-7f3a"));
    assert_eq!((e[1].attempt, e[2].attempt), (Some(1), Some(1)));
    assert_eq!((e[4].ok, e[6].ok), (Some(true), Some(false)));
    assert_eq!(e[7].at, "2026-11-22T04:32:00.000000Z", "the end is when it ended");
    assert_eq!(e[7].category, Some(ErrorCategory::Quota));
    assert_eq!(e[7].detail.as_deref(), Some("vCPU limit reached in eu-west-1"));
    assert_eq!(
        e[8].detail.as_deref(),
        Some("webhook operation.failed queued [d-1]")
    );
    assert_eq!(
        e[8].at, "2026-11-22T04:33:00.000000Z",
        "a dated note is at its own time"
    );
    assert_eq!(
        e[9].at, "2026-11-22T04:40:00.000000Z",
        "an undated one at the last write"
    );
    assert!(e.windows(2).all(|p| p[0].at <= p[1].at), "ordered: {e:?}");
    assert!(t.ended);
    assert_eq!(t.duration_ms, 120_000, "queued to the end, not to the last write");
    assert_eq!(t.status, OperationStatus::Failed);
    assert!(
        !events(&t).contains(&(E::Heartbeat, None)),
        "no heartbeat once ended"
    );

    // The wire shape: snake_case events, absent options left out.
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["entries"][2]["event"], "runner_started");
    assert_eq!(json["entries"][7]["category"], "quota");
    assert!(json["entries"][0].get("ok").is_none(), "{json}");
}

#[tokio::test]
async fn an_open_operation_shows_where_it_waits_and_counts_to_now() {
    let w = World::new();
    let mut op = w.queued(OperationKind::Create);
    w.clock.advance(Duration::seconds(3));
    op.wait_reason = Some("cluster busy with op-1".into());
    w.store.store_operation(&mut op, false).await.unwrap();
    w.clock.advance(Duration::seconds(57));

    let t = w.timeline(&acme(), &op).await.unwrap();
    assert_eq!(events(&t), [(E::Queued, None), (E::Parked, None)]);
    assert_eq!(t.entries[1].detail.as_deref(), Some("cluster busy with op-1"));
    assert_eq!(t.entries[1].at, "2026-11-22T04:30:03.000000Z");
    assert!(!t.ended);
    assert_eq!(t.duration_ms, 60_000, "open: queued to now");

    // Dispatched, running, a cancel asked for: the last heartbeat and the request show; no end yet.
    op.wait_reason = None;
    op.status = OperationStatus::Running;
    op.attempt = 2;
    op.dispatched_at = Some(w.clock.now());
    op.started_at = Some(w.clock.now() + Duration::seconds(10));
    op.heartbeat_at = Some(w.clock.now() + Duration::seconds(40));
    op.cancel_requested = true;
    w.clock.advance(Duration::seconds(45));
    w.store.store_operation(&mut op, false).await.unwrap();
    let t = w.timeline(&acme(), &op).await.unwrap();
    assert_eq!(
        events(&t),
        [
            (E::Queued, None),
            (E::Dispatched, None),
            (E::RunnerStarted, None),
            (E::Heartbeat, None),
            (E::CancelRequested, None),
        ]
    );
    assert_eq!(t.entries[1].attempt, Some(2), "the latest attempt");
    assert!(!t.ended);
}

#[tokio::test]
async fn another_tenants_operation_is_the_same_404_as_a_missing_one() {
    let w = World::new();
    let op = w.queued(OperationKind::Create);
    let intruder = Caller {
        tenant: "globex".parse::<TenantId>().unwrap(),
        subject: None,
        ..acme()
    };
    let theirs = w.timeline(&intruder, &op).await.unwrap_err();
    let missing = w
        .api()
        .timeline(&acme(), "op-0193f1c2a7b57d1a8e3b5c7d9f0a1b2c")
        .await
        .unwrap_err();
    let malformed = w.api().timeline(&acme(), "not-an-id").await.unwrap_err();
    for e in [&theirs, &missing, &malformed] {
        assert!(matches!(e, ApiError::NotFound(_)), "{e:?}");
    }
    let shape = |e: &ApiError, id: &str| e.to_string().replace(id, "<id>");
    assert_eq!(
        shape(&theirs, op.operation_id.as_str()),
        shape(&missing, "op-0193f1c2a7b57d1a8e3b5c7d9f0a1b2c"),
        "nothing tells another tenant the operation exists"
    );
    assert!(w.timeline(&acme(), &op).await.is_ok());
}

#[tokio::test]
async fn the_demo_lines_show_each_moment_with_its_offset() {
    let w = World::new();
    let op = run_and_fail(&w, w.queued(OperationKind::Update)).await;
    let t = w.timeline(&acme(), &op).await.unwrap();
    let lines = format_lines(&t);
    assert_eq!(lines.len(), 1 + t.entries.len());
    assert!(
        lines[0].contains("update") && lines[0].contains("failed in 120.0s"),
        "{lines:?}"
    );
    assert!(lines[0].contains(op.operation_id.as_str()));
    assert!(
        lines[2].contains("+    5.0s  dispatched (attempt 1)"),
        "{lines:?}"
    );
    assert!(lines[7].contains("step_finished apply FAILED"), "{lines:?}");
    assert!(lines[8].contains("failed apply [quota]: vCPU limit"), "{lines:?}");
}

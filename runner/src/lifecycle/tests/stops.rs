//! Stops: a cancel (seen by the heartbeat's poll), the time limit and SIGTERM interrupt the engine, and
//! each ends the run with its own final event: `cancelled`, a retryable `timeout`, a retryable `transient`
//! failure. A stop also cuts a retry's backoff short.

use std::time::Duration;

use strato_domain::ErrorCategory;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::OperationKind;

use super::support::{Bed, THROTTLED, plans, vpc_plan};
use crate::RunnerError;
use crate::fakes::{Cmd, Reply};

/// An update whose apply runs until it is stopped; `on_start` runs when it starts.
async fn hanging_apply(on_start: impl Fn(&Bed) -> Box<dyn Fn() + Send + Sync>) -> Bed {
    let bed = Bed::new(OperationKind::Update, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    let hook = on_start(&bed);
    bed.engine
        .expect(Cmd::Apply, Reply::hang().on_start(move |_| hook()));
    bed
}

#[tokio::test]
async fn a_cancel_request_stops_the_engine_and_ends_cancelled() {
    let bed = hanging_apply(|bed| {
        let (store, op) = (bed.store.store.clone(), bed.op.operation_id.clone());
        Box::new(move || {
            let mut o = store.operation(&op).unwrap();
            o.cancel_requested = true;
            store.put_operation(o);
        })
    })
    .await;
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert!(matches!(event, RunnerEvent::Cancelled { .. }), "{event:#?}");
    assert_eq!(bed.finished("apply"), [false]);
    assert!(
        bed.logged("failed: the operation was cancelled"),
        "{:#?}",
        bed.log()
    );
}

#[tokio::test]
async fn sigterm_stops_the_engine_and_ends_with_a_retryable_failure() {
    let bed = hanging_apply(|bed| {
        let signals = bed.signals.clone();
        Box::new(move || signals.terminate())
    })
    .await;
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::Transient, "{error:?}");
    assert_eq!(error.step, "apply");
    assert!(error.retryable);
    assert!(error.what.contains("SIGTERM"), "{}", error.what);
}

#[tokio::test]
async fn the_time_limit_stops_the_engine_and_ends_with_a_timeout() {
    let mut bed = hanging_apply(|_| Box::new(|| ())).await;
    // Only a create keeps a cleanup reserve: an update has the whole limit.
    bed.cfg.time_limit = Duration::from_millis(200);
    bed.cfg.cleanup_reserve = Duration::from_secs(60);
    let started = std::time::Instant::now();
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(error.category, ErrorCategory::Timeout, "{error:?}");
    assert!(error.retryable);
    assert!(error.what.contains("time limit"), "{}", error.what);
}

#[tokio::test]
async fn sigterm_overrides_a_cancel_in_progress() {
    let bed = Bed::new(OperationKind::Create, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    let (store, op) = (bed.store.store.clone(), bed.op.operation_id.clone());
    let signals = bed.signals.clone();
    bed.engine
        .expect(
            Cmd::Apply,
            Reply::hang().on_start(move |_| {
                let mut o = store.operation(&op).unwrap();
                o.cancel_requested = true;
                store.put_operation(o);
            }),
        )
        // The cancelled create's cleanup begins; then the task is stopped.
        .expect(Cmd::StateList, Reply::ok().stdout("aws_vpc.this"))
        .expect(Cmd::Destroy, Reply::hang().on_start(move |_| signals.terminate()))
        .expect(Cmd::StateList, Reply::ok().stdout("aws_vpc.this"));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::CleanupFailed, "{error:?}");
    assert!(error.what.contains("SIGTERM"), "{}", error.what);
}

#[tokio::test]
async fn a_stop_cuts_a_retry_backoff_short() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    // A backoff far longer than the test may take.
    bed.cfg.retry_base = Duration::from_secs(600);
    plans(&bed.engine, "main", &vpc_plan());
    let signals = bed.signals.clone();
    bed.engine.expect(
        Cmd::Apply,
        Reply::fail(THROTTLED).on_start(move |_| signals.terminate()),
    );
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Plan), 1, "no retry after the stop");
    assert_eq!(error.step, "apply");
    assert!(error.what.contains("SIGTERM"), "{}", error.what);
}

#[tokio::test]
async fn a_wedged_run_is_dropped_at_its_hard_deadline() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    // An apply that ignores every stop: the time limit's interrupt changes nothing.
    bed.engine.expect(Cmd::Apply, Reply::wedged());
    bed.cfg.time_limit = Duration::from_millis(200);
    bed.cfg.grace = Duration::from_millis(50);
    bed.cfg.exit_margin = Duration::from_millis(100);
    let started = std::time::Instant::now();
    let err = bed.run().await.expect_err("no final event from a wedged run");
    assert!(
        matches!(err, RunnerError::HardDeadline(d) if d == Duration::from_millis(350)),
        "{err}"
    );
    assert!(started.elapsed() >= Duration::from_millis(350));
    assert!(bed.reporter.finals().is_empty(), "{:#?}", bed.reporter.finals());
    // The heartbeats ended with the run: nothing is sent for it any more.
    let sent = bed.reporter.all().len();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        bed.reporter.all().len(),
        sent,
        "the background tasks were stopped"
    );
}

#[tokio::test]
async fn heartbeats_stop_once_the_run_shows_no_progress() {
    // The apply prints nothing until the time limit stops it.
    let mut bed = hanging_apply(|_| Box::new(|| ())).await;
    bed.cfg.time_limit = Duration::from_millis(800);
    bed.cfg.stall_limit = Duration::from_millis(150);
    let error = bed.run_to_failure().await;
    assert_eq!(error.category, ErrorCategory::Timeout, "{error:?}");
    assert!(bed.logged("heartbeats stop"), "{:#?}", bed.log());
    let beats = bed
        .reporter
        .progress()
        .iter()
        .filter(|e| matches!(e, RunnerEvent::Heartbeat { .. }))
        .count();
    // Beats every 10 ms until 150 ms after the apply's start, not for the 800 ms the run took.
    assert!((1..45).contains(&beats), "{beats} heartbeats");
}

/// Records a cancel request on the operation, as the API does.
fn request_cancel(bed: &Bed) -> impl Fn(&std::path::Path) + Send + Sync + 'static {
    let (store, op) = (bed.store.store.clone(), bed.op.operation_id.clone());
    move |_| {
        let mut o = store.operation(&op).unwrap();
        o.cancel_requested = true;
        store.put_operation(o);
    }
}

#[tokio::test]
async fn a_cancel_requested_during_plan_ends_cancelled_right_after_the_plan() {
    let mut bed = Bed::new(OperationKind::Create, "net").await;
    // The plan ends long before a heartbeat polls: only the step boundary can see the cancel in time.
    bed.cfg.heartbeat = Duration::from_secs(600);
    bed.engine.expect(Cmd::Init, Reply::ok()).expect(
        Cmd::Plan,
        Reply::changes(b"saved plan").on_start(request_cancel(&bed)),
    );
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert!(matches!(event, RunnerEvent::Cancelled { .. }), "{event:#?}");
    assert_eq!(
        bed.steps(),
        ["prepare", "init", "plan"],
        "no show, no apply, no cleanup"
    );
    assert!(
        !bed.logged("cleaning up"),
        "a create that applied nothing has nothing to clean up: {:#?}",
        bed.log()
    );
}

#[tokio::test]
async fn a_create_cancelled_while_planning_is_not_cleaned_up() {
    // The heartbeat sees the cancel while the plan runs and interrupts it.
    let bed = Bed::new(OperationKind::Create, "net").await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::hang().on_start(request_cancel(&bed)));
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert!(matches!(event, RunnerEvent::Cancelled { .. }), "{event:#?}");
    assert_eq!(bed.finished("plan"), [false]);
    assert!(!bed.steps().iter().any(|s| s == "cleanup"), "{:?}", bed.steps());
}

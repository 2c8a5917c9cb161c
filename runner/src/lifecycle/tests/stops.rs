//! Stops: a cancel (seen by the heartbeat's poll), the time limit and SIGTERM interrupt the engine, and
//! each ends the run with its own final event: `cancelled`, a retryable `timeout`, a retryable `transient`
//! failure. A stop also cuts a retry's backoff short.

use std::time::Duration;

use strato_domain::ErrorCategory;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::OperationKind;

use super::support::{Bed, THROTTLED, plans, vpc_plan};
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

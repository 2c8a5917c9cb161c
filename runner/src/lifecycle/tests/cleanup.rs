//! The cleanup of a failed create and its guards: only a create, only stages it initialized (in reverse),
//! at most `CLEANUP_ATTEMPTS` destroys, not after SIGTERM, not past the time limit; a cancel does not stop
//! it.

use std::time::Duration;

use strato_domain::ErrorCategory;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::OperationKind;

use super::support::{BAD_SUBNET, Bed, THROTTLED, applies, cleans_up, network_outputs, plans, vpc_plan};
use crate::fakes::{Cmd, Reply};
use crate::lifecycle::CLEANUP_ATTEMPTS;

/// A create of `net` whose apply fails for good.
async fn failing_create() -> Bed {
    let bed = Bed::new(OperationKind::Create, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    bed.engine.expect(Cmd::Apply, Reply::fail(BAD_SUBNET));
    bed
}

#[tokio::test]
async fn a_failed_create_is_destroyed_and_the_error_names_what_was_cleaned_up() {
    let bed = failing_create().await;
    cleans_up(
        &bed.engine,
        "main",
        &[
            "aws_vpc.this",
            "data.aws_region.current",
            "aws_security_group.this",
        ],
    );
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert_eq!(error.step, "apply");
    assert!(
        error
            .what
            .ends_with("cleaned up 2 resource(s): aws_vpc.this, aws_security_group.this"),
        "data sources are no resources: {}",
        error.what
    );
    assert!(bed.steps().iter().any(|s| s == "cleanup"));
    // The cleanup's destroy runs as step `cleanup`, not `destroy`.
    let destroy = bed.engine.first(Cmd::Destroy);
    assert_eq!(destroy.step, "cleanup");
}

#[tokio::test]
async fn a_create_with_nothing_in_its_state_is_not_destroyed() {
    let bed = failing_create().await;
    bed.engine.expect(Cmd::StateList, Reply::ok());
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Destroy), 0);
    assert!(error.what.ends_with("nothing had been created"), "{}", error.what);
}

#[tokio::test]
async fn a_cleanup_that_keeps_failing_stops_after_its_attempts_and_names_what_is_left() {
    let bed = failing_create().await;
    bed.engine.expect(
        Cmd::StateList,
        Reply::ok().stdout("aws_vpc.this\naws_security_group.this"),
    );
    for _ in 0..CLEANUP_ATTEMPTS {
        bed.engine.expect(Cmd::Destroy, Reply::fail(THROTTLED));
    }
    bed.engine
        .expect(Cmd::StateList, Reply::ok().stdout("aws_vpc.this"));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Destroy), CLEANUP_ATTEMPTS);
    assert_eq!(error.category, ErrorCategory::CleanupFailed, "{error:?}");
    assert!(
        error
            .what
            .contains(&format!("after up to {CLEANUP_ATTEMPTS} attempts"))
            && error.what.contains("RequestLimitExceeded")
            && error.what.contains("1 resource(s) left: aws_vpc.this")
            && error
                .what
                .contains("cleaned up 1 resource(s): aws_security_group.this"),
        "{}",
        error.what
    );
    assert!(!error.what.contains("interrupted"), "{}", error.what);
}

#[tokio::test]
async fn a_failed_update_is_not_cleaned_up() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    bed.engine.expect(Cmd::Apply, Reply::fail(BAD_SUBNET));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration);
    assert!(!bed.steps().iter().any(|s| s == "cleanup"));
}

#[tokio::test]
async fn a_create_that_failed_before_any_init_is_not_cleaned_up() {
    let bed = Bed::new(OperationKind::Create, "net").await;
    bed.engine.expect(
        Cmd::Init,
        Reply::fail("Error: Failed to query available provider packages"),
    );
    bed.run_to_failure().await;
    bed.engine.assert_done();
    assert!(!bed.steps().iter().any(|s| s == "cleanup"), "{:?}", bed.steps());
}

#[tokio::test]
async fn cleanup_destroys_the_initialized_stages_in_reverse() {
    let bed = Bed::new(OperationKind::Create, "eks").await;
    let net = network_outputs(&["subnet-1"]);
    applies(&bed.engine, "network", &vpc_plan(), &net);
    plans(
        &bed.engine,
        "cluster",
        &super::support::plan(&[("aws_iam_role.eks", "aws_iam_role", "create")]),
    );
    bed.engine
        .expect_in("cluster", Cmd::Apply, Reply::fail(BAD_SUBNET));
    cleans_up(&bed.engine, "cluster", &["aws_iam_role.eks"]);
    cleans_up(&bed.engine, "network", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.step, "cluster/apply");
    let destroys: Vec<String> = bed
        .engine
        .calls()
        .into_iter()
        .filter(|c| c.cmd == Cmd::Destroy)
        .map(|c| c.stage)
        .collect();
    assert_eq!(destroys, ["cluster", "network"]);
    assert!(
        error
            .what
            .ends_with("cleaned up 2 resource(s): aws_iam_role.eks, aws_vpc.this"),
        "{}",
        error.what
    );
}

#[tokio::test]
async fn a_cancelled_create_is_cleaned_up_and_ends_cancelled() {
    let bed = Bed::new(OperationKind::Create, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    let (store, op) = (bed.store.store.clone(), bed.op.operation_id.clone());
    bed.engine.expect(
        Cmd::Apply,
        Reply::hang().on_start(move |_| {
            // As the API records a cancel request; the heartbeat's poll finds it.
            let mut o = store.operation(&op).unwrap();
            o.cancel_requested = true;
            store.put_operation(o);
        }),
    );
    cleans_up(&bed.engine, "main", &["aws_vpc.this"]);
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert!(matches!(event, RunnerEvent::Cancelled { .. }), "{event:#?}");
    assert!(
        bed.steps().iter().any(|s| s == "cleanup"),
        "a cancel does not stop the cleanup"
    );
}

#[tokio::test]
async fn a_create_stopped_by_sigterm_is_not_cleaned_up() {
    let bed = Bed::new(OperationKind::Create, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    let signals = bed.signals.clone();
    bed.engine
        .expect(Cmd::Apply, Reply::hang().on_start(move |_| signals.terminate()));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::Transient);
    assert!(error.retryable);
    assert!(error.what.contains("SIGTERM"), "{}", error.what);
    assert!(
        !bed.steps().iter().any(|s| s == "cleanup"),
        "no time is left for it"
    );
}

#[tokio::test]
async fn sigterm_during_cleanup_interrupts_the_destroy_and_names_what_is_left() {
    let bed = failing_create().await;
    let signals = bed.signals.clone();
    bed.engine
        .expect(Cmd::StateList, Reply::ok().stdout("aws_vpc.this"))
        .expect(Cmd::Destroy, Reply::hang().on_start(move |_| signals.terminate()))
        .expect(Cmd::StateList, Reply::ok().stdout("aws_vpc.this"));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(
        bed.engine.count(Cmd::Destroy),
        1,
        "no further attempt after SIGTERM"
    );
    assert_eq!(error.category, ErrorCategory::CleanupFailed, "{error:?}");
    assert!(
        error
            .what
            .contains("interrupted: the runner task was stopped, SIGTERM")
            && error.what.contains("left: aws_vpc.this"),
        "{}",
        error.what
    );
}

#[tokio::test]
async fn the_time_limit_interrupts_a_hanging_cleanup() {
    let mut bed = failing_create().await;
    // The stages get 150 ms, the cleanup the rest of the 300 ms.
    bed.cfg.time_limit = Duration::from_millis(300);
    bed.cfg.cleanup_reserve = Duration::from_millis(150);
    bed.engine
        .expect(Cmd::StateList, Reply::ok().stdout("aws_vpc.this"))
        .expect(Cmd::Destroy, Reply::hang())
        .expect(Cmd::StateList, Reply::ok().stdout("aws_vpc.this"));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::CleanupFailed, "{error:?}");
    assert!(
        error
            .what
            .contains("interrupted: the operation's time limit was reached"),
        "{}",
        error.what
    );
    let beats = bed
        .reporter
        .progress()
        .iter()
        .filter(|e| matches!(e, RunnerEvent::Heartbeat { .. }))
        .count();
    assert!(beats > 0, "heartbeats go on through the cleanup");
}

#[tokio::test]
async fn a_timed_out_create_is_cleaned_up_within_the_reserve() {
    let mut bed = Bed::new(OperationKind::Create, "net").await;
    bed.cfg.time_limit = Duration::from_millis(400);
    bed.cfg.cleanup_reserve = Duration::from_millis(200);
    plans(&bed.engine, "main", &vpc_plan());
    bed.engine.expect(Cmd::Apply, Reply::hang());
    cleans_up(&bed.engine, "main", &["aws_vpc.this"]);
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::Timeout, "{error:?}");
    assert!(error.retryable);
    assert!(
        error.what.ends_with("cleaned up 1 resource(s): aws_vpc.this"),
        "{}",
        error.what
    );
}

//! Classified retries: a transient plan, apply or destroy failure is tried again (an apply after a fresh
//! plan), at most `MAX_RETRIES` times; a permanent one is not.

use strato_domain::ErrorCategory;
use strato_domain::model::OperationKind;

use super::support::{BAD_SUBNET, Bed, THROTTLED, outputs, vpc_plan};
use crate::fakes::{Cmd, Reply};
use crate::lifecycle::MAX_RETRIES;

/// `n` plans with changes, each shown.
fn plans_shown(bed: &Bed, n: usize) {
    for _ in 0..n {
        bed.engine
            .expect(Cmd::Plan, Reply::changes(b"saved plan"))
            .expect(Cmd::Show, Reply::json(&vpc_plan()));
    }
}

#[tokio::test]
async fn a_transient_apply_failure_is_planned_again_and_applied() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.engine.expect(Cmd::Init, Reply::ok());
    plans_shown(&bed, 2);
    bed.engine
        .expect(Cmd::Apply, Reply::fail(THROTTLED))
        .expect(Cmd::Apply, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(Cmd::Refresh, Reply::ok());
    bed.run_to_success().await;
    bed.engine.assert_done();
    assert_eq!(
        bed.engine.commands()[..7],
        [
            "main:Init",
            "main:Plan",
            "main:Show",
            "main:Apply",
            "main:Plan",
            "main:Show",
            "main:Apply"
        ],
        "planned again before the retried apply"
    );
    assert_eq!(bed.finished("apply"), [false, true]);
    assert!(bed.logged("RequestLimitExceeded"));
    assert!(bed.logged("transient failure"), "{:#?}", bed.log());
}

#[tokio::test]
async fn a_transient_plan_failure_is_planned_again() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.engine.expect(Cmd::Init, Reply::ok()).expect(
        Cmd::Plan,
        Reply::fail("Error: error reading VPC: Throttling: Rate exceeded"),
    );
    plans_shown(&bed, 1);
    bed.engine
        .expect(Cmd::Apply, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(Cmd::Refresh, Reply::ok());
    bed.run_to_success().await;
    bed.engine.assert_done();
    assert_eq!(bed.finished("plan"), [false, true]);
    assert_eq!(bed.engine.count(Cmd::Apply), 1);
}

#[tokio::test]
async fn a_permanent_failure_is_not_retried() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.engine.expect(Cmd::Init, Reply::ok());
    plans_shown(&bed, 1);
    bed.engine.expect(Cmd::Apply, Reply::fail(BAD_SUBNET));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert_eq!(error.step, "apply");
    assert!(error.what.contains("InvalidSubnet.Range"), "{}", error.what);
    assert!(!error.retryable);
    assert!(!bed.logged("transient failure"));
}

#[tokio::test]
async fn a_value_the_template_s_rules_refuse_fails_the_plan_naming_the_variable() {
    let bed = Bed::new(OperationKind::Create, "net").await;
    // Terraform 1.11.4's own words (`plan -no-color`) for a module's validation rule.
    let refused = "Planning failed. Terraform encountered an error while generating this plan.\n\n\
        Error: Invalid value for variable\n\n  on main.tf.json line 13, in module.network:\n  \
        13:       \"node_count\": \"${var.node_count}\",\n    ├────────────────\n    │ var.node_count is 100\n\n\
        The node_count must be between 1 and 50.\n\n\
        This was checked by the validation rule at mod/variables.tf:3,3-13.\n";
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::fail(refused));
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert_eq!(error.step, "plan");
    assert_eq!(
        error.what,
        "the value of variable node_count is invalid: The node_count must be between 1 and 50."
    );
    assert!(
        error
            .fix
            .starts_with("Check the value of variable node_count against the template's rules"),
        "{}",
        error.fix
    );
    assert!(!error.retryable);
}

#[tokio::test]
async fn transient_failures_give_up_after_the_retry_limit() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.engine.expect(Cmd::Init, Reply::ok());
    plans_shown(&bed, MAX_RETRIES + 1);
    for _ in 0..=MAX_RETRIES {
        bed.engine.expect(Cmd::Apply, Reply::fail(THROTTLED));
    }
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), MAX_RETRIES + 1);
    assert_eq!(error.category, ErrorCategory::Transient);
    assert!(
        error
            .what
            .contains(&format!("still failing after {MAX_RETRIES} retries")),
        "{}",
        error.what
    );
}

#[tokio::test]
async fn a_transient_destroy_failure_is_retried() {
    let bed = Bed::new(OperationKind::Delete, "net").await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(Cmd::Destroy, Reply::fail(THROTTLED))
        .expect(Cmd::Destroy, Reply::ok());
    bed.run_to_success().await;
    bed.engine.assert_done();
    assert_eq!(bed.finished("destroy"), [false, true]);
}

#[tokio::test]
async fn a_permanent_destroy_failure_is_not_retried() {
    let bed = Bed::new(OperationKind::Delete, "net").await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(
            Cmd::Destroy,
            Reply::fail("Error: deleting VPC: DependencyViolation: has dependencies and cannot be deleted"),
        );
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.step, "destroy");
    assert_ne!(error.category, ErrorCategory::Transient);
    assert!(
        bed.secrets.deleted().is_empty(),
        "the secret outlives a failed delete"
    );
    assert!(bed.cloud.retired().is_empty(), "and so does the state");
}

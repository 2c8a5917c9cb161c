//! What stops a plan before anything is applied: the tenant's monthly budget and the plan policies (a
//! deny stops, warnings are noted and reported). A plan or drift check is held to neither.

use serde_json::json;
use strato_domain::ErrorCategory;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::OperationKind;

use super::support::{Bed, applies, outputs, plan, plans, vpc_plan};
use crate::fakes::{Cmd, Reply};

/// An EKS control plane: 73 USD a month in the shipped price table.
fn eks_plan() -> serde_json::Value {
    plan(&[("aws_eks_cluster.this", "aws_eks_cluster", "create")])
}

const NO_VPC: &str = r#"package strato.plan

deny contains msg if {
	some rc in input.plan.resource_changes
	rc.type == "aws_vpc"
	msg := sprintf("%s: VPCs need an exception", [rc.address])
}
"#;

const CHECK_TAGS: &str = r#"package strato.plan

warn contains msg if {
	some rc in input.plan.resource_changes
	rc.type == "aws_vpc"
	msg := sprintf("%s: check its tags", [rc.address])
}
"#;

#[tokio::test]
async fn a_plan_over_the_budget_stops_before_apply() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.store.set_monthly_budget(&bed.op.tenant_id, 50.0);
    plans(&bed.engine, "main", &eks_plan());
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), 0, "nothing applied");
    assert_eq!(error.category, ErrorCategory::Quota, "{error:?}");
    assert_eq!(error.step, "plan");
    assert!(
        error.what.contains("73.00 USD/month") && error.what.contains("budget of 50.00 USD"),
        "{}",
        error.what
    );
    assert!(error.fix.contains("budget"), "{}", error.fix);
    // The estimate was reported before the stop.
    let priced = bed.reporter.progress().into_iter().find_map(|e| match e {
        RunnerEvent::PlanReady { estimate, .. } => estimate,
        _ => None,
    });
    assert_eq!(priced.map(|e| e.total_monthly), Some(73.0));
}

#[tokio::test]
async fn a_plan_within_the_budget_is_applied() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.store.set_monthly_budget(&bed.op.tenant_id, 100.0);
    applies(&bed.engine, "main", &eks_plan(), &outputs(&[]));
    bed.run_to_success().await;
    bed.engine.assert_done();
    // Budget and policies decide before anything is applied: the plan JSON is read first.
    let order = bed.engine.commands();
    let pos = |c: &str| order.iter().position(|x| x == c).unwrap();
    assert!(pos("main:Show") < pos("main:Apply"), "{order:?}");
    let policy = bed.steps().iter().position(|s| s == "policy").unwrap();
    let apply = bed.steps().iter().position(|s| s == "apply").unwrap();
    assert!(policy < apply);
}

#[tokio::test]
async fn the_budget_counts_every_stage_planned_so_far() {
    let bed = Bed::new(OperationKind::Create, "eks").await;
    // 73 USD in the first stage is within 100; another 73 in the second is not.
    bed.store.set_monthly_budget(&bed.op.tenant_id, 100.0);
    let net = outputs(&[
        ("vpc_id", "vpc-1".into(), false),
        ("subnet_ids", json!(["subnet-1"]), false),
        ("security_group_id", "sg-1".into(), false),
    ]);
    applies(&bed.engine, "network", &eks_plan(), &net);
    plans(&bed.engine, "cluster", &eks_plan());
    bed.engine
        .expect_in("cluster", Cmd::StateList, Reply::ok())
        .expect_in("network", Cmd::StateList, Reply::ok());
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::Quota);
    assert_eq!(error.step, "cluster/plan");
    assert!(error.what.contains("146.00 USD/month"), "{}", error.what);
}

#[tokio::test]
async fn a_plan_denied_by_policy_stops_before_apply() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.store.put_policy(&bed.op.tenant_id, "no-vpc", NO_VPC);
    plans(&bed.engine, "main", &vpc_plan());
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), 0, "nothing applied");
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert_eq!(error.step, "policy");
    assert!(
        error
            .what
            .contains("tenant/no-vpc: aws_vpc.this: VPCs need an exception")
            && error.what.contains("nothing was applied"),
        "{}",
        error.what
    );
    assert!(error.fix.contains("/v1/policies"), "{}", error.fix);
    assert_eq!(bed.finished("policy"), [false]);
    assert!(
        !bed.reporter
            .progress()
            .iter()
            .any(|e| matches!(e, RunnerEvent::PolicyChecked { .. })),
        "a denied plan is not reported as checked"
    );
}

#[tokio::test]
async fn policy_warnings_are_noted_and_reported_and_the_plan_is_applied() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.store.put_policy(&bed.op.tenant_id, "check-tags", CHECK_TAGS);
    applies(&bed.engine, "main", &vpc_plan(), &outputs(&[]));
    bed.run_to_success().await;
    bed.engine.assert_done();
    assert_eq!(bed.finished("policy"), [true]);
    let warnings = bed.reporter.progress().into_iter().find_map(|e| match e {
        RunnerEvent::PolicyChecked { warnings, .. } => Some(warnings),
        _ => None,
    });
    let warnings = warnings.expect("a policy_checked event");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("aws_vpc.this: check its tags")),
        "{warnings:?}"
    );
    assert!(bed.logged("policy warning: "), "{:#?}", bed.log());
}

#[tokio::test]
async fn a_policy_that_does_not_compile_stops_before_apply() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.store.put_policy(
        &bed.op.tenant_id,
        "broken",
        "package strato.plan\n\ndeny contains msg if {",
    );
    plans(&bed.engine, "main", &vpc_plan());
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert_eq!(error.step, "policy");
    assert!(
        error.fix.contains("Correct or delete the policy"),
        "{}",
        error.fix
    );
}

#[tokio::test]
async fn a_plan_denied_by_a_policy_the_operator_set_for_the_tenant_stops_before_apply() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.store.put_operator_policy(&bed.op.tenant_id, "no-vpc", NO_VPC);
    plans(&bed.engine, "main", &vpc_plan());
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(bed.engine.count(Cmd::Apply), 0, "nothing applied");
    assert_eq!(error.step, "policy");
    assert!(
        error
            .what
            .contains("operator/no-vpc: aws_vpc.this: VPCs need an exception"),
        "{}",
        error.what
    );
    assert!(error.fix.contains("platform operator"), "{}", error.fix);
}

#[tokio::test]
async fn a_drift_check_is_held_to_neither_budget_nor_policy_and_reports_what_drifted() {
    let bed = Bed::new(OperationKind::DriftCheck, "net").await;
    bed.store.set_monthly_budget(&bed.op.tenant_id, 1.0);
    bed.store.put_policy(&bed.op.tenant_id, "no-vpc", NO_VPC);
    let drifted = json!({
        "resource_drift": [{"address": "aws_vpc.this", "change": {"actions": ["update"]}}],
        "resource_changes": plan(&[("aws_eks_cluster.this", "aws_eks_cluster", "create")])["resource_changes"],
    });
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::changes(b"drift plan"))
        .expect(Cmd::Show, Reply::json(&drifted))
        .expect(Cmd::Output, Reply::json(&outputs(&[])));
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    let RunnerEvent::Succeeded { drift, .. } = event else {
        panic!("{event:#?}");
    };
    let drift = drift.expect("a drift check reports drift");
    assert_eq!(drift.len(), 1);
    assert_eq!(drift[0].address, "aws_vpc.this");
    let plan = bed.engine.first(Cmd::Plan);
    assert!(plan.args.iter().any(|a| a == "-refresh-only"), "{:?}", plan.args);
    assert!(!bed.steps().iter().any(|s| s == "policy"));
}

#[tokio::test]
async fn an_engine_before_0_15_4_checks_drift_with_a_plain_plan() {
    let bed = Bed::with_engine(
        OperationKind::DriftCheck,
        "net",
        crate::fakes::FakeEngine::new("0.15.0"),
    )
    .await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::no_changes())
        .expect(Cmd::Show, Reply::json(&plan(&[])))
        .expect(Cmd::Output, Reply::json(&outputs(&[])));
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    assert!(
        matches!(&event, RunnerEvent::Succeeded { drift: Some(d), .. } if d.is_empty()),
        "{event:#?}"
    );
    let plan = bed.engine.first(Cmd::Plan);
    assert!(!plan.args.iter().any(|a| a == "-refresh-only"), "{:?}", plan.args);
    assert!(plan.args.iter().any(|a| a == "-detailed-exitcode"));
}

/// Prints everything it can reach of the plan: the root variables, and each resource's planned values.
const LEAKY: &str = r#"package strato.plan

deny contains msg if {
	msg := sprintf("password %v", [input.plan.variables.db_password.value])
}

deny contains msg if {
	some rc in input.plan.resource_changes
	msg := sprintf("%s after %v", [rc.address, rc.change.after])
}

warn contains msg if {
	some rc in input.plan.resource_changes
	msg := sprintf("%s values %v", [rc.address, input.plan.planned_values])
}
"#;

#[tokio::test]
async fn a_policy_that_prints_sensitive_values_sees_and_shows_them_only_redacted() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    let mut variables = std::collections::BTreeMap::new();
    variables.insert("db_password".to_owned(), json!("hunter2-password"));
    strato_domain::sealed::seal_variables(
        &bed.keys,
        &bed.op.tenant_id,
        &bed.op.cluster_id,
        |k| k == "db_password",
        &mut variables,
    )
    .await
    .unwrap();
    bed.edit_op(|op| op.spec.as_mut().unwrap().variables = variables);
    bed.store.put_policy(&bed.op.tenant_id, "leaky", LEAKY);
    // As the engine prints it: the variable's value and what derives from it, in the clear. `password` is
    // marked sensitive by the plan; a value the plan does not mark ("derived-secret-…", from a module's
    // own sensitive output) is still the run's to redact when it carries the input.
    let mut plan = vpc_plan();
    plan["variables"] =
        json!({"db_password": {"value": "hunter2-password"}, "vpc_cidr": {"value": "10.42.0.0/16"}});
    plan["configuration"] = json!({"root_module": {"variables": {
        "db_password": {"sensitive": true}, "vpc_cidr": {}
    }}});
    plan["resource_changes"][0]["change"]["after"] = json!({
        "password": "marked-secret-value", "cidr_block": "10.42.0.0/16",
        "description": "derived from hunter2-password"
    });
    plan["resource_changes"][0]["change"]["after_sensitive"] = json!({"password": true});
    plan["planned_values"] = json!({"root_module": {"resources": [{
        "address": "aws_vpc.this",
        "values": {"password": "marked-secret-value", "cidr_block": "10.42.0.0/16"},
        "sensitive_values": {"password": true}
    }]}});
    plans(&bed.engine, "main", &plan);
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.step, "policy");
    let mut shown = vec![error.what.clone()];
    shown.extend(bed.log());
    shown.extend(bed.reporter.all().iter().map(|e| format!("{e:?}")));
    let shown = shown.join("\n");
    for secret in ["hunter2-password", "marked-secret-value"] {
        assert!(!shown.contains(secret), "{secret} shown:\n{shown}");
    }
    // The policies did run on the plan, and saw the rest of it.
    assert!(
        error.what.contains("password (sensitive value)") && error.what.contains("10.42.0.0/16"),
        "{}",
        error.what
    );
    assert!(bed.logged("policy warning: tenant/leaky:"), "{:#?}", bed.log());
}

#[tokio::test]
async fn the_policy_summary_counts_the_request_policies_warnings_the_operation_has() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    // As the api records a request policy's warning on the operation (its notes).
    bed.edit_op(|o| {
        o.notes.push(
            "policy warning: platform/node-limits: node_count 25 is above 20 nodes: check it is needed"
                .into(),
        )
    });
    bed.store.put_policy(&bed.op.tenant_id, "check-tags", CHECK_TAGS);
    applies(&bed.engine, "main", &vpc_plan(), &outputs(&[]));
    bed.run_to_success().await;
    let on_the_plan = bed
        .reporter
        .progress()
        .into_iter()
        .find_map(|e| match e {
            RunnerEvent::PolicyChecked { warnings, .. } => Some(warnings.len()),
            _ => None,
        })
        .expect("a policy_checked event");
    let summary = bed
        .log()
        .into_iter()
        .find(|l| l.contains(" denied, "))
        .expect("a policy summary line");
    // The operation's notes will hold the request's warning and the plan's: the log counts both.
    assert!(
        summary.contains(&format!("0 denied, {} warning(s)", on_the_plan + 1)),
        "{summary}"
    );
    assert!(
        bed.logged("node_count 25 is above 20 nodes"),
        "the request's warning is said: {:#?}",
        bed.log()
    );
}

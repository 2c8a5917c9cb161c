//! What a run reports and in which order: stages in order (a delete's destroys in reverse), outputs in
//! the event and sensitive ones only in the secret, exactly one final event after every progress event,
//! none from a run that lost its cluster lock, and the log numbered on from an earlier run's.

use serde_json::json;
use strato_domain::ids::OperationId;
use strato_domain::messages::{LogStream, RunnerEvent};
use strato_domain::model::OperationKind;
use strato_domain::ports::ClusterLocks;

use super::support::{Bed, applies, cluster_stage_inputs, network_outputs, outputs, plan, plans, vpc_plan};
use crate::RunnerError;
use crate::fakes::{Cmd, FakeEngine, Reply};
use crate::workspace::PLAN_FILE;

#[tokio::test]
async fn a_create_applies_its_stages_in_order_and_keeps_sensitive_outputs_out_of_events() {
    let bed = Bed::new(OperationKind::Create, "eks").await;
    applies(
        &bed.engine,
        "network",
        &vpc_plan(),
        &network_outputs(&["subnet-1", "subnet-2"]),
    );
    let eks = plan(&[("aws_iam_role.eks", "aws_iam_role", "create")]);
    let cluster_outputs = outputs(&[
        (
            "cluster_arn",
            "arn:aws:eks:us-east-1:123456789012:cluster/demo".into(),
            false,
        ),
        (
            "kubeconfig",
            "apiVersion: v1 # kubeconfig-secret-value".into(),
            true,
        ),
    ]);
    applies(&bed.engine, "cluster", &eks, &cluster_outputs);
    let outputs = bed.run_to_success().await;
    bed.engine.assert_done();
    let stages: Vec<String> = bed.engine.calls().into_iter().map(|c| c.stage).collect();
    let first_cluster = stages.iter().position(|s| s == "cluster").unwrap();
    assert!(
        stages[..first_cluster].iter().all(|s| s == "network")
            && stages[first_cluster..].iter().all(|s| s == "cluster"),
        "one stage after the other: {stages:?}"
    );
    assert_eq!(outputs["vpc_id"], "vpc-1");
    assert_eq!(
        outputs["cluster_arn"],
        "arn:aws:eks:us-east-1:123456789012:cluster/demo"
    );
    assert!(!outputs.contains_key("kubeconfig"));
    let name = crate::secrets::secret_name(&bed.cfg.names, &bed.cluster.cluster_id);
    assert_eq!(
        bed.secrets.get(&name).expect("the cluster's secret")["kubeconfig"],
        "apiVersion: v1 # kubeconfig-secret-value"
    );
    let everything = serde_json::to_string(&bed.reporter.all()).unwrap();
    assert!(!everything.contains("kubeconfig-secret-value"));
    let plans: Vec<(String, u32)> = bed
        .reporter
        .progress()
        .into_iter()
        .filter_map(|e| match e {
            RunnerEvent::PlanReady { stage, summary, .. } => Some((stage, summary.add)),
            _ => None,
        })
        .collect();
    assert_eq!(plans, [("network".to_owned(), 2), ("cluster".to_owned(), 1)]);
    // Multi-stage step names, and the apply of the saved plan the policies checked.
    assert!(
        bed.steps().contains(&"cluster/apply".to_owned()),
        "{:?}",
        bed.steps()
    );
    let apply = bed.engine.first(Cmd::Apply);
    assert_eq!(apply.args.last().map(String::as_str), Some(PLAN_FILE));
    assert!(
        bed.log_lines().iter().any(|l| l.step == "network/apply"
            && l.stream == LogStream::Stdout
            && l.text == "Apply complete!")
    );
    let complete = strato_terraform::artifacts::log_complete_key(&bed.op.operation_id);
    assert!(bed.sinks.object(&complete).is_some(), "the log is complete");
}

#[tokio::test]
async fn a_later_stage_gets_the_earlier_stages_outputs_as_inputs() {
    let bed = Bed::new(OperationKind::Create, "eks").await;
    let inputs = cluster_stage_inputs(&bed, &["subnet-1", "subnet-2"], &plan(&[])).await;
    assert_eq!(inputs["subnet_ids"], json!(["subnet-1", "subnet-2"]), "{inputs}");
    assert_eq!(inputs["security_group_id"], "sg-1", "{inputs}");
    // Managed inputs too: the cloud name carries the end of the cluster id.
    let id = bed.cluster.cluster_id.as_str();
    assert_eq!(inputs["cluster_name"], format!("demo-{}", &id[id.len() - 8..]));
}

#[tokio::test]
async fn a_delete_destroys_the_stages_in_reverse_then_removes_the_secret_and_retires_the_state() {
    let bed = Bed::new(OperationKind::Delete, "eks").await;
    bed.engine
        .expect_in("network", Cmd::Init, Reply::ok())
        .expect_in(
            "network",
            Cmd::Output,
            Reply::json(&network_outputs(&["subnet-1", "subnet-2"])),
        )
        .expect_in("cluster", Cmd::Init, Reply::ok())
        .expect_in("cluster", Cmd::Output, Reply::json(&outputs(&[])))
        .expect_in("cluster", Cmd::Destroy, Reply::ok())
        .expect_in("network", Cmd::Destroy, Reply::ok());
    bed.run_to_success().await;
    bed.engine.assert_done();
    assert_eq!(
        bed.engine.commands(),
        [
            "network:Init",
            "network:Output",
            "cluster:Init",
            "cluster:Output",
            "cluster:Destroy",
            "network:Destroy"
        ]
    );
    let name = crate::secrets::secret_name(&bed.cfg.names, &bed.cluster.cluster_id);
    assert_eq!(bed.secrets.deleted(), [name]);
    let bucket = bed.cfg.names.bucket("state");
    assert_eq!(
        bed.cloud.retired(),
        [
            format!("{bucket}/{}", bed.state_key("network")),
            format!("{bucket}/{}", bed.state_key("cluster"))
        ]
    );
}

#[tokio::test]
async fn a_run_that_lost_the_cluster_lock_writes_nothing_and_sends_no_final_event() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    plans(&bed.engine, "main", &vpc_plan());
    let (store, cluster, op, token) = (
        bed.store.store.clone(),
        bed.op.cluster_id.clone(),
        bed.op.operation_id.clone(),
        bed.token,
    );
    bed.engine
        .expect(
            Cmd::Apply,
            Reply::ok().on_start(move |_| {
                // The lease ran out and another operation took the lock meanwhile.
                let (store, cluster, op) = (store.clone(), cluster.clone(), op.clone());
                ready(async move {
                    assert!(store.release_lock(&cluster, &op, token).await.unwrap());
                    let other = OperationId::generate();
                    let now = strato_domain::ts::now();
                    store
                        .acquire_lock(&cluster, &other, time::Duration::hours(1), now)
                        .await
                        .unwrap();
                });
            }),
        )
        .expect(
            Cmd::Output,
            Reply::json(&outputs(&[("password", "s3cret-output".into(), true)])),
        )
        .expect(Cmd::Refresh, Reply::ok());
    let err = bed.run().await.expect_err("no final event");
    bed.engine.assert_done();
    assert!(matches!(err, RunnerError::Fenced(t) if t == bed.token), "{err}");
    assert!(bed.reporter.finals().is_empty());
    let name = crate::secrets::secret_name(&bed.cfg.names, &bed.cluster.cluster_id);
    assert!(
        bed.secrets.get(&name).is_none(),
        "no secret written without the lock"
    );
}

/// The output of a future that is ready at once (the fake store's never wait), from a sync hook.
fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(f).poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the fake store waited"),
    }
}

#[tokio::test]
async fn a_final_event_that_cannot_be_sent_fails_the_run() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    applies(&bed.engine, "main", &vpc_plan(), &outputs(&[]));
    bed.reporter.fail_final();
    let err = bed.run().await.expect_err("no final event sent");
    assert!(matches!(err, RunnerError::FinalEvent(_)), "{err}");
}

#[tokio::test]
async fn an_estimate_plans_without_state_and_lists_a_stage_it_cannot_plan() {
    let bed = Bed::new(OperationKind::Estimate, "eks").await;
    plans(
        &bed.engine,
        "network",
        &plan(&[("aws_eks_cluster.x", "aws_eks_cluster", "create")]),
    );
    let event = bed.run_to_final().await;
    bed.engine.assert_done();
    let RunnerEvent::Succeeded {
        estimate: Some(estimate),
        outputs,
        ..
    } = event
    else {
        panic!("{event:#?}");
    };
    assert!(outputs.is_empty());
    assert_eq!(estimate.total_monthly, 73.0);
    assert!(
        estimate.not_estimated.contains(&"stage.cluster".to_owned()),
        "{estimate:#?}"
    );
    assert_eq!(bed.engine.count(Cmd::Apply), 0);
    assert!(bed.engine.calls().iter().all(|c| c.stage == "network"));
    // No backend: no state role session, no state bucket, no lock table.
    assert!(
        bed.cloud
            .sessions()
            .iter()
            .all(|s| s.role_arn != super::support::STATE_ROLE)
    );
    assert!(bed.logged("nothing is written to a state bucket"));
}

#[tokio::test]
async fn a_later_run_of_the_operation_numbers_its_log_on() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    bed.edit_op(|op| op.attempt = 2);
    let op = bed.op.operation_id.clone();
    bed.sinks.insert(
        &strato_terraform::artifacts::log_chunk_key(&op, 1, 41),
        b"{}".to_vec(),
    );
    applies(&bed.engine, "main", &vpc_plan(), &outputs(&[]));
    bed.run_to_success().await;
    let ours: Vec<u64> = bed.log_lines().iter().map(|l| l.seq).collect();
    assert_eq!(ours.first(), Some(&42), "{ours:?}");
}

#[tokio::test]
async fn debug_lines_go_to_a_redacted_artifact_per_run_of_a_step() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(
            Cmd::Plan,
            Reply::fail("Error: Throttling: Rate exceeded").debug("[DEBUG] token run-proof-of-the-test"),
        )
        .expect(Cmd::Plan, Reply::changes(b"p").debug("[DEBUG] second plan"))
        .expect(Cmd::Show, Reply::json(&vpc_plan()))
        .expect(Cmd::Apply, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(Cmd::Refresh, Reply::ok());
    bed.run_to_success().await;
    let op = &bed.op.operation_id;
    let first = bed
        .sinks
        .object(&strato_terraform::artifacts::debug_log_key(op, "plan"))
        .expect("the first plan's debug log");
    let second = bed
        .sinks
        .object(&strato_terraform::artifacts::debug_log_key(op, "plan.2"))
        .expect("the retry's, under its own key");
    let first = String::from_utf8(first).unwrap();
    assert!(!first.contains("run-proof-of-the-test"), "{first}");
    assert!(first.contains("(sensitive value)"), "{first}");
    assert!(String::from_utf8(second).unwrap().contains("second plan"));
    assert!(!bed.logged("[DEBUG]"), "never in the user log");
}

#[tokio::test]
async fn an_engine_that_cannot_apply_saved_plans_applies_with_the_same_inputs() {
    let bed = Bed::with_engine(OperationKind::Update, "net", FakeEngine::new("0.15.0-rc2")).await;
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(Cmd::Plan, Reply::changes(b"p"))
        .expect(Cmd::Show, Reply::json(&vpc_plan()))
        .expect(Cmd::Apply, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])));
    bed.run_to_success().await;
    // Nor has it `-refresh-only`: no refresh after the apply.
    bed.engine.assert_done();
    let apply = bed.engine.first(Cmd::Apply);
    assert!(!apply.args.iter().any(|a| a == PLAN_FILE), "{:?}", apply.args);
    assert!(bed.logged("cannot apply saved plans"));
}

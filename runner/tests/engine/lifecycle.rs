//! The runner against the real engine and moto: create (two stages: network, then IAM role + EKS), update
//! (a tag), delete (state empty), with events, outputs, secrets and the log archive checked.

use crate::support;

use serde_json::json;
use strato_domain::messages::{LogStream, RunnerEvent};
use strato_domain::model::OperationKind;
use support::{Bed, final_events, steps_started};

use strato_testbed::TestEngine;

strato_testbed::engine_matrix!(async create_update_delete_an_eks_cluster);
strato_testbed::engine_matrix!(async an_estimate_plans_with_local_state_only_and_lists_a_stage_it_cannot_plan);
// Spilling outputs is the runner's own doing; the engine only prints them (as `output -json` does in every
// other matrix test).
strato_testbed::engine_matrix!(async outputs_larger_than_an_sqs_message_spill_to_the_artifacts_bucket, tf015_only);

async fn create_update_delete_an_eks_cluster(engine: TestEngine) {
    let refreshes = engine.is_modern();
    let bed = Bed::with_engine(engine).await;
    let spec = bed.spec("runner-eks", "lc-eks", json!({"tags": {"team": "platform"}}));
    let (cluster, job) = bed.create(spec.clone()).await;

    // ---- create ----
    let mut cfg = bed.config(&job, &[]);
    // A release engine writes a debug log only when asked (the 0.15.0-rc2 bed always does).
    cfg.extra_engine_env.push(("TF_LOG".into(), "INFO".into()));
    let summary = bed.run(cfg).await.expect("final event sent");
    let events = bed.events().await;
    let finals = final_events(&events);
    assert_eq!(finals.len(), 1, "exactly one final event: {events:#?}");
    let RunnerEvent::Succeeded { outputs, .. } = finals[0] else {
        bed.dump_log(&job).await;
        panic!("create should succeed: {:#?}", finals[0]);
    };
    assert_eq!(&summary.final_event, finals[0]);
    assert!(
        outputs["vpc_id"].as_str().unwrap().starts_with("vpc-"),
        "{outputs:?}"
    );
    assert_eq!(outputs["subnet_ids"].as_array().unwrap().len(), 2);
    assert!(outputs["security_group_id"].as_str().unwrap().starts_with("sg-"));
    // Cloud names carry the end of the cluster id, so two tenants' "lc-eks" cannot collide.
    let suffix = &cluster.cluster_id.as_str()[cluster.cluster_id.as_str().len() - 8..];
    assert!(
        outputs["role_arn"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":role/lc-eks-{suffix}-eks")),
        "{outputs:?}"
    );
    assert!(
        outputs["cluster_arn"]
            .as_str()
            .unwrap()
            .contains("cluster/lc-eks")
    );
    assert!(
        !outputs.contains_key("kubeconfig"),
        "sensitive outputs never in events"
    );
    let steps = steps_started(&events);
    for s in [
        "prepare",
        "network/init",
        "network/plan",
        "network/show",
        "network/apply",
        "network/output",
        "cluster/init",
        "cluster/plan",
        "cluster/apply",
        "cluster/output",
    ] {
        assert!(steps.iter().any(|x| x == s), "step {s} missing from {steps:?}");
    }
    let plans: Vec<(String, u32)> = events
        .iter()
        .filter_map(|e| match e {
            RunnerEvent::PlanReady { stage, summary, .. } => Some((stage.clone(), summary.add)),
            _ => None,
        })
        .collect();
    assert_eq!(plans, [("network".to_owned(), 5), ("cluster".to_owned(), 2)]);
    support::assert_engine_used_cleanly(&bed, &job).await;
    assert!(events.iter().all(|e| e.fencing_token() == job.token));
    // Plan policies (the platform's always) gate the apply, so `show -json` ends before it starts (issue 19's
    // overlap of the two is kept only without budget and plan policies); `output -json` does not wait for
    // the post-apply refresh.
    let at = |started: bool, name: &str| {
        events
            .iter()
            .find_map(|e| match e {
                RunnerEvent::StepStarted { step, at, .. } if started && step == name => Some(*at),
                RunnerEvent::StepFinished { step, at, .. } if !started && step == name => Some(*at),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no event of step {name}: {events:#?}"))
    };
    assert!(
        at(false, "network/policy") <= at(true, "network/apply"),
        "the plan policies decide before anything is applied"
    );
    if refreshes {
        assert!(
            at(true, "network/output") < at(false, "network/refresh"),
            "output -json runs while the state is refreshed"
        );
    }

    // Sensitive output: in Secrets Manager only.
    let name = strato_runner::secrets::secret_name(&bed.env.names, &cluster.cluster_id);
    let secret = strato_runner::secrets::read_outputs(&bed.secrets, &name)
        .await
        .unwrap()
        .expect("secret");
    let kubeconfig = secret["kubeconfig"].as_str().unwrap().to_owned();
    assert!(kubeconfig.contains("lc-eks"), "{kubeconfig}");
    assert!(!serde_json::to_string(&events).unwrap().contains(&kubeconfig));

    // Every user line archived in order; no engine debug lines; no secret.
    let (lines, complete) = bed.archived_log(&job).await;
    assert_eq!(complete, Some(lines.len() as u64), "completion marker = last seq");
    assert_eq!(summary.last_log_seq, lines.len() as u64);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l.seq, i as u64 + 1, "no gaps");
        assert!(
            !l.text.contains("[DEBUG]") && !l.text.contains("[TRACE]"),
            "{}",
            l.text
        );
        assert!(!l.text.contains(&kubeconfig));
        assert!(!l.text.starts_with("o:"));
    }
    assert!(
        lines
            .iter()
            .any(|l| l.step == "network/apply" && l.text.contains("Apply complete!"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.step == "cluster/apply" && l.stream == LogStream::Stdout)
    );
    // The engine's debug log went to its own artifact, per step.
    let debug = bed
        .env
        .aws
        .s3
        .get_object()
        .bucket(bed.env.names.bucket("artifacts"))
        .key(strato_terraform::artifacts::debug_log_key(
            &job.op.operation_id,
            "network/apply",
        ))
        .send()
        .await
        .expect("debug log of network/apply");
    let debug = debug.body.collect().await.unwrap().into_bytes();
    let debug = String::from_utf8_lossy(&debug);
    assert!(debug.contains("[DEBUG]") || debug.contains("[TRACE]") || debug.contains("[INFO]"));
    // A release engine applies the saved plan whose `show -json` was reported (the engine logs its
    // arguments); the 0.15.0-rc2 bed cannot, so it plans again, and the runner says so.
    let args = debug
        .lines()
        .find(|l| l.contains("CLI args"))
        .unwrap_or_else(|| panic!("no CLI args in the debug log"));
    let (lines, _) = bed.archived_log(&job).await;
    let says_no_saved_plan = lines.iter().any(|l| l.text.contains("cannot apply saved plans"));
    assert_eq!(args.contains("strato.tfplan"), bed.engine.is_modern(), "{args}");
    assert_eq!(says_no_saved_plan, !bed.engine.is_modern());
    assert!(!debug.contains(&kubeconfig));
    // The live stream carried the same lines (nothing was slow here).
    let frames = bed.log_frames().await;
    let live: usize = frames
        .iter()
        .map(|f| {
            serde_json::from_str::<serde_json::Value>(f).unwrap()["lines"]
                .as_array()
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(live, lines.len());

    assert_eq!(
        bed.state_types(&cluster, "network").await,
        ["aws_ec2_tag", "aws_security_group", "aws_subnet", "aws_vpc"]
    );
    assert_eq!(
        bed.state_types(&cluster, "cluster").await,
        ["aws_eks_cluster", "aws_iam_role"]
    );
    assert!(bed.held_locks().await.is_empty());
    bed.release(&cluster, &job).await;

    // ---- update: a tag changes ----
    let new_spec = bed.spec(
        "runner-eks",
        "lc-eks",
        json!({"tags": {"team": "platform", "env": "prod"}}),
    );
    let job = bed
        .operation(&cluster, OperationKind::Update, Some(new_spec))
        .await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let finals = final_events(&events);
    let RunnerEvent::Succeeded { outputs, .. } = finals[0] else {
        panic!("update should succeed: {finals:#?}");
    };
    assert_eq!(outputs["vpc_tags"]["env"], "prod");
    let changes: Vec<(String, u32, u32)> = events
        .iter()
        .filter_map(|e| match e {
            RunnerEvent::PlanReady { stage, summary, .. } => {
                Some((stage.clone(), summary.add, summary.change))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        [("network".to_owned(), 0, 1), ("cluster".to_owned(), 0, 0)]
    );
    bed.release(&cluster, &job).await;

    // ---- delete ----
    let job = bed.operation(&cluster, OperationKind::Delete, None).await;
    bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let finals = final_events(&events);
    assert!(
        matches!(finals[..], [RunnerEvent::Succeeded { .. }]),
        "{finals:#?}"
    );
    let steps = steps_started(&events);
    let pos = |s: &str| {
        steps
            .iter()
            .position(|x| x == s)
            .unwrap_or_else(|| panic!("{s} in {steps:?}"))
    };
    assert!(
        pos("cluster/destroy") < pos("network/destroy"),
        "reverse order: {steps:?}"
    );
    // Retention: the state is no longer current after the delete; its versions remain for the bucket's
    // lifecycle rule to expire (state_retention_days).
    for stage in ["network", "cluster"] {
        assert!(
            bed.state(&cluster, stage).await.is_none(),
            "{stage}: no current state"
        );
        let key = strato_terraform::render::state_key(&cluster.tenant_id, &cluster.cluster_id, stage);
        let versions = bed
            .env
            .aws
            .s3
            .list_object_versions()
            .bucket(bed.env.names.bucket("state"))
            .prefix(&key)
            .send()
            .await
            .unwrap();
        assert!(!versions.versions().is_empty(), "{stage}: earlier versions kept");
        assert!(
            !versions.delete_markers().is_empty(),
            "{stage}: deleted, not overwritten"
        );
    }
    assert_eq!(
        strato_runner::secrets::read_outputs(&bed.secrets, &name)
            .await
            .unwrap(),
        None,
        "secret removed with the cluster"
    );
    assert!(bed.held_locks().await.is_empty());
}

async fn an_estimate_plans_with_local_state_only_and_lists_a_stage_it_cannot_plan(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    let job = bed.estimate(bed.spec("runner-eks", "est", json!({}))).await;
    let summary = bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let events = bed.events().await;
    let RunnerEvent::Succeeded {
        estimate: Some(estimate),
        outputs,
        ..
    } = &summary.final_event
    else {
        bed.dump_log(&job).await;
        panic!("the estimate should succeed: {:#?}", summary.final_event);
    };
    assert!(outputs.is_empty());
    // The network stage is planned and priced (VPC, subnets and security group cost nothing; the tag
    // resource has no price and is listed, not counted). The cluster stage takes the network's outputs,
    // which do not exist before an apply: listed as not estimated, with the inputs it lacks.
    assert_eq!(estimate.total_monthly, 0.0);
    assert!(
        estimate.not_estimated.contains(&"stage.cluster".to_owned()),
        "{estimate:#?}"
    );
    let skipped = estimate
        .resources
        .iter()
        .find(|r| r.address == "stage.cluster")
        .unwrap();
    assert_eq!((skipped.stage.as_str(), skipped.monthly), ("cluster", None));
    assert!(
        skipped.note.contains("security_group_id, subnet_ids"),
        "{}",
        skipped.note
    );
    assert!(
        estimate
            .resources
            .iter()
            .any(|r| r.stage == "network" && r.resource_type == "aws_vpc" && r.monthly == Some(0.0)),
        "{estimate:#?}"
    );
    let mut plan_ready: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunnerEvent::PlanReady { stage, .. } => Some(stage.as_str()),
            _ => None,
        })
        .collect();
    plan_ready.sort();
    assert_eq!(plan_ready, ["cluster", "network"], "one PlanReady per stage");
    let steps = steps_started(&events);
    assert!(steps.contains(&"network/plan".to_owned()), "{steps:?}");
    assert!(
        !steps
            .iter()
            .any(|s| s.ends_with("/apply") || s.starts_with("cluster/")),
        "nothing applied, the cluster stage never ran: {steps:?}"
    );
    // Local state only: nothing in the state bucket, no Terraform lock, and no cluster record.
    let listed = bed
        .env
        .aws
        .s3
        .list_objects_v2()
        .bucket(bed.env.names.bucket("state"))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.key_count(), Some(0), "{listed:?}");
    assert!(bed.held_locks().await.is_empty());
    assert!(
        bed.store
            .get_cluster(&bed.tenant, &job.op.cluster_id)
            .await
            .unwrap()
            .is_none()
    );
    let (lines, _) = bed.archived_log(&job).await;
    assert!(
        lines
            .iter()
            .any(|l| l.text.contains("nothing is written to a state bucket")),
        "the log says where the state went"
    );
}

/// Issue 15 defect 8: a `succeeded` event larger than an SQS message (here 300 KiB of outputs) is stored in
/// the artifacts bucket and the message names it; the status function's reader (`strato_aws::spill::unspill`)
/// gets the whole event back. Before, SendMessage refused the event and the runner exited 1.
async fn outputs_larger_than_an_sqs_message_spill_to_the_artifacts_bucket(engine: TestEngine) {
    let bed = Bed::with_engine(engine).await;
    let spec = bed.spec("runner-net", "big-outputs", json!({"big_output_kib": 300}));
    let (_cluster, job) = bed.create(spec).await;
    let summary = bed.run(bed.config(&job, &[])).await.expect("final event sent");
    let bodies = bed.raw_events().await;
    let reference = bodies
        .iter()
        .find(|b| b.contains(r#""type":"succeeded""#))
        .expect("a succeeded message");
    assert!(reference.len() < 256 * 1024, "{}", reference.len());
    assert!(
        reference.contains(strato_terraform::artifacts::SPILLED_EVENT_FIELD),
        "{reference}"
    );
    let s3 = &bed.env.aws.s3;
    let bucket = bed.env.names.bucket("artifacts");
    let full = strato_aws::spill::unspill(s3, &bucket, reference).await.unwrap();
    let event: RunnerEvent = serde_json::from_str(&full).unwrap();
    assert_eq!(event, summary.final_event);
    let RunnerEvent::Succeeded { outputs, .. } = event else {
        panic!("{full:.300}");
    };
    assert_eq!(outputs["filler"].as_str().unwrap().len(), 300 * 1024);
    assert!(outputs["vpc_id"].as_str().unwrap().starts_with("vpc-"));
    // Every other message passes through the reader unchanged.
    let step = bodies
        .iter()
        .find(|b| b.contains(r#""type":"step_started""#))
        .unwrap();
    assert!(matches!(
        strato_aws::spill::unspill(s3, &bucket, step).await.unwrap(),
        std::borrow::Cow::Borrowed(_)
    ));
}

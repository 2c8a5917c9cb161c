//! The whole life of an `aws-eks-basic` cluster through devstack's HTTP and WebSocket endpoints only, with
//! the real runner on Terraform 0.15: create → ACTIVE (cost estimate attached, the complete log received
//! over WebSocket) → drift check (clean: no false positive from the node-group quirk) → delete → DELETED;
//! then the demo itself. The runner's own engine tier runs the same create, update and delete on both
//! engines of the matrix, warnings checked; through devstack the engine would add nothing but CPU. Every AWS call made meanwhile (by each function and each
//! runner) must be on that function's `AWS_CALLS` list (the list infra_apply.rs holds `infra/`'s IAM to).

use crate::devstack_support;

use std::time::Duration;

use serde_json::json;
use strato_devstack::client::{Client, DemoOptions, demo};
use strato_testbed::TestEngine;

/// The runners ran `engine`: the version and AWS provider they reported.
fn assert_engine(engine: &TestEngine, lines: Vec<&str>) {
    let short = engine.version.split('-').next().unwrap_or_default();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("engine ") && l.ends_with(short)),
        "engine {short} not reported"
    );
    let provider = format!("AWS provider {}", engine.provider_version);
    assert!(
        lines.iter().any(|l| l.starts_with(&provider)),
        "{provider} not reported"
    );
}

strato_testbed::engine_matrix!(async a_cluster_lives_and_dies_through_the_public_endpoints, tf015_only);

async fn a_cluster_lives_and_dies_through_the_public_endpoints(engine: TestEngine) {
    // Every AWS call made is recorded and checked against the functions' AWS_CALLS lists at the end; the
    // schedules run often enough to be among them.
    let stack = devstack_support::start(strato_devstack::DevstackConfig {
        engine: Some(engine.clone()),
        record_aws_calls: true,
        drift_rate: Duration::from_secs(10),
        sweep_rate: Duration::from_secs(5),
        ..devstack_support::config("lc").await
    })
    .await;
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());
    let (cluster, op, _) = api
        .create_cluster(&json!({
            "name": "life",
            "template": {"name": "aws-eks-basic", "version": "1.1.0"},
            "provider": "aws",
            "region": "us-east-1",
            "variables": {"node_count": 1, "node_instance_type": "t3.medium"}
        }))
        .await
        .unwrap();
    let w = devstack_support::follow(&stack, &token, &op).await;
    let tail: Vec<&str> = w.lines.values().rev().take(40).map(|l| l.text.as_str()).collect();
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{tail:#?}");
    assert!(w.lines.values().any(|l| l.text.contains("Apply complete!")));
    assert_engine(&engine, w.lines.values().map(|l| l.text.as_str()).collect());
    assert!(w.states.iter().any(|(cs, _, _)| cs == "PROVISIONING"));
    let done = api.wait_operation(&op, Duration::from_secs(60)).await.unwrap();
    let estimate = &done["estimate"];
    // 1 × t3.medium + 20 GB gp3 + EKS control plane, from the shipped table.
    let expected = 73.0 + (0.0416 * 730.0 + 20.0 * 0.08);
    assert!(
        (estimate["total_monthly"].as_f64().unwrap() - expected).abs() < 0.01,
        "{estimate}"
    );
    let c = api
        .wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        c["outputs"]["cluster_endpoint"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );

    // Update: open the API to an admin network (one security-group rule added). An update that touches the
    // EKS node group would never finish against moto (docs/known-gaps.md › moto); this one changes nothing else.
    let r = api
        .patch(
            &format!("/v1/clusters/{cluster}"),
            &json!({"variables": {"admin_cidrs": ["203.0.113.0/24"]}}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let upd = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let w = devstack_support::follow(&stack, &token, &upd).await;
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{:?}", w.states);
    assert!(
        w.states.iter().any(|(cs, _, _)| cs == "UPDATING"),
        "{:?}",
        w.states
    );
    assert!(
        w.lines.values().any(|l| l
            .text
            .contains("Apply complete! Resources: 1 added, 0 changed, 0 destroyed")),
        "the update adds exactly the rule"
    );
    let c = api
        .wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(c["variables"]["admin_cidrs"], json!(["203.0.113.0/24"]), "{c}");

    let r = api
        .post(&format!("/v1/clusters/{cluster}/drift-check"), &json!({}))
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let check = r.body["operation"]["id"].as_str().unwrap().to_owned();
    devstack_support::follow(&stack, &token, &check).await;
    let c = api.get(&format!("/v1/clusters/{cluster}")).await.unwrap();
    assert_eq!(
        c.body["drift"]["drifted"], false,
        "a clean cluster shows no drift: {}",
        c.text
    );

    // A rollout preview of the fleet to 1.2.0: the cluster is planned on the new version (a plan-only run),
    // and the run's end reaches the rollout by itself (the status function → the rollouts queue → the api),
    // which completes with its report; nothing is applied.
    let r = api
        .post(
            "/v1/rollouts",
            &json!({"template": "aws-eks-basic", "to_version": "1.2.0", "mode": "preview",
                    "selector": {"clusters": ["life"]}}),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let rollout = r.body["id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let done = loop {
        let r = api.get(&format!("/v1/rollouts/{rollout}")).await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        if r.body["phase"] != "running" {
            break r;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the preview never ended: {}",
            r.text
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    assert_eq!(done.body["phase"], "completed", "{}", done.text);
    let member = &done.body["members"][0];
    assert_eq!(member["status"], "planned", "{}", done.text);
    assert_eq!(done.body["summary"]["clusters"], 1, "{}", done.text);
    assert!(
        done.body["summary"]["text"]
            .as_str()
            .unwrap()
            .starts_with("1 cluster"),
        "{}",
        done.text
    );
    let c = api
        .wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        c["template"]["version"], "1.1.0",
        "a preview applies nothing: {c}"
    );

    // The catalog (a Scan of the templates table) and an unknown template answer without a server error.
    let r = api.get("/v1/templates").await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    let r = api.get("/v1/templates/no-such-template").await.unwrap();
    assert_eq!(r.status, 404, "{}", r.text);

    let r = api.delete(&format!("/v1/clusters/{cluster}")).await.unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let del = r.body["operation"]["id"].as_str().unwrap().to_owned();
    let w = devstack_support::follow(&stack, &token, &del).await;
    assert!(w.lines.values().any(|l| l.text.contains("Destroy complete!")));
    api.wait_cluster_state(&cluster, &["DELETED"], Duration::from_secs(60))
        .await
        .unwrap();

    // Another tenant sees none of it.
    let other = Client::new(&stack.endpoints.http_api).with_token(stack.token("globex"));
    assert_eq!(
        other.get(&format!("/v1/operations/{op}")).await.unwrap().status,
        404
    );

    // And the README's demo, on the same stack, succeeds.
    // Quiet, so that a failure's message is not buried under the Terraform log in CI's summary.
    if let Err(e) = demo(
        &stack,
        DemoOptions {
            quiet: true,
            ..DemoOptions::default()
        },
    )
    .await
    {
        panic!("the demo failed: {e}");
    }
    devstack_support::assert_aws_calls_listed(
        &stack,
        &[
            "api",
            "dispatcher",
            "status",
            "ws",
            "log-fanout",
            "scheduler",
            "runner",
        ],
    );
    stack.shutdown(Duration::from_secs(10)).await;
}

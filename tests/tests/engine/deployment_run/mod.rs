//! A cluster's life on a deployment of `infra/` (applied into moto): devstack's emulations run on the
//! resources the apply created, read from its outputs (not `create_all`), each function with the
//! environment the deployment gave its Lambda and each runner with its task definition's.

use std::time::Duration;

use serde_json::{Value, json};
use strato_devstack::DevstackConfig;
use strato_devstack::client::Client;

#[path = "../../devstack/devstack_support/mod.rs"]
pub(crate) mod devstack_support;

/// create → ACTIVE → delete → DELETED of an `aws-eks-basic` cluster on the deployment `outputs`
/// (`terraform output -json`) in the moto at `aws_endpoint`.
pub async fn cluster_lives_on(outputs: &Value, aws_endpoint: &str) {
    // devstack's warnings (a template not published, a function failing) show in the test's output.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let deployment =
        strato_devstack::Deployment::from_outputs(outputs).expect("the outputs describe a deployment");
    let cluster_arn = deployment.runner.cluster.clone();
    let stack = devstack_support::start(DevstackConfig {
        aws_endpoint: Some(aws_endpoint.to_owned()),
        deployment: Some(deployment),
        ..DevstackConfig::default()
    })
    .await;
    assert_eq!(
        stack.env.runner_settings.cluster, cluster_arn,
        "the dispatcher starts runners on the deployment's cluster"
    );
    // The catalog goes into the deployment's templates table and bucket (what `strato-devstack publish`
    // does for a real deployment): publishing it again finds it there, or says why not.
    let again = strato_devstack::stack::publish_catalog(
        &stack.env.aws,
        &stack.env.names,
        Some(&devstack_support::workspace().join("templates")),
        &[],
    )
    .await;
    assert!(
        again.failed.is_empty(),
        "publishing into the deployment: {:?}",
        again.failed
    );
    assert!(
        again.published.iter().any(|(n, _)| n == "aws-eks-basic"),
        "{:?}",
        again.published
    );
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());
    // The api function, configured from the deployment, reads the catalog and the tenant's clusters.
    let t = std::time::Instant::now();
    let r = api.get("/v1/templates").await.expect("GET /v1/templates");
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("aws-eks-basic"), "{}", r.text);
    let r = api.get("/v1/clusters").await.expect("GET /v1/clusters");
    assert_eq!(r.status, 200, "{}", r.text);
    eprintln!("devstack on the deployment: two reads in {:.0?}", t.elapsed());
    let (cluster, op, _) = api
        .create_cluster(&json!({
            "name": "on-infra",
            "template": {"name": "aws-eks-basic", "version": "1.1.0"},
            "provider": "aws",
            "region": "us-east-1",
            "variables": {"node_count": 1, "node_instance_type": "t3.medium"}
        }))
        .await
        .expect("the api function accepts the cluster");
    let w = devstack_support::follow(&stack, &token, &op).await;
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{:?}", w.states);
    api.wait_cluster_state(&cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .expect("ACTIVE");
    let r = api.delete(&format!("/v1/clusters/{cluster}")).await.unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let del = r.body["operation"]["id"]
        .as_str()
        .expect("a delete operation")
        .to_owned();
    let w = devstack_support::follow(&stack, &token, &del).await;
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{:?}", w.states);
    api.wait_cluster_state(&cluster, &["DELETED"], Duration::from_secs(60))
        .await
        .expect("DELETED");
    // Both runs were tasks of the deployment's task definition on its cluster.
    let tasks = stack.fargate_stats.tasks();
    assert!(
        [&op, &del].iter().all(|o| tasks
            .iter()
            .any(|t| t.operation_id.as_deref() == Some(o.as_str()) && t.exit_code == Some(0))),
        "{tasks:?}"
    );
    stack.shutdown(Duration::from_secs(30)).await;
}

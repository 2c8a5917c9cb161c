//! `POST /v1/estimates` end to end through devstack's HTTP endpoint, with the real runner and the offline
//! engine: a plan-only estimate of `aws-eks-basic` with 2 × t3.medium comes back with the total computed by
//! hand from the shipped price table, no cluster is created, and nothing is left in the state bucket, the
//! Terraform lock table or Strato's lock table.

use crate::devstack_support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strato_devstack::Devstack;
use strato_devstack::client::Client;
use strato_terraform::cost::PriceTable;

/// Every item of a DynamoDB table (small test tables).
async fn items(
    stack: &Devstack,
    table: &str,
) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
    stack
        .env
        .aws
        .dynamodb
        .scan()
        .table_name(stack.env.names.table(table))
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_estimate_plans_prices_and_leaves_nothing_behind() {
    let stack = devstack_support::start(strato_devstack::DevstackConfig {
        record_aws_calls: true,
        ..devstack_support::config("es").await
    })
    .await;
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token);
    let started = Instant::now();
    let r = api
        .post(
            "/v1/estimates",
            &json!({
                "template": {"name": "aws-eks-basic", "version": "1.1.0"},
                "provider": "aws",
                "region": "us-east-1",
                "variables": {"node_count": 2, "node_instance_type": "t3.medium"}
            }),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text);
    let op = r.body["operation"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/operations/{op}").as_str())
    );
    assert_eq!(r.body["operation"]["kind"], "estimate");
    assert_eq!(r.body["operation"]["cluster_id"], Value::Null);

    let done = api.wait_operation(&op, Duration::from_secs(600)).await.unwrap();
    let took = started.elapsed();
    assert_eq!(done["status"], "succeeded", "{done}");
    let steps: Vec<&str> = devstack_support::each(&done["steps"], "name");
    assert!(steps.contains(&"plan"), "{steps:?}");
    assert!(
        !steps.iter().any(|s| s.contains("apply")),
        "nothing applied: {steps:?}"
    );

    // The figure by hand, from the shipped table's us-east-1 entries (730 h/month):
    //   EKS control plane         eks_cluster_hourly × 730                      = 0.10 × 730      = 73.00
    //   node group, per node      ec2_hourly["t3.medium"] × 730                 = 0.0416 × 730    = 30.368
    //                             + node_disk_size (default 20 GB) × ebs_gp3_gb_month = 20 × 0.08 =  1.60
    //   2 nodes                   2 × 31.968                                                      = 63.936
    //   VPC, subnets, routes, internet gateway, security groups, IAM: no charge; no NAT gateway (default off)
    //   total                                                                                     = 136.936
    let table = PriceTable::builtin();
    let p = &table.regions["us-east-1"];
    let h = table.hours_per_month;
    let expected =
        p.eks_cluster_hourly * h + 2.0 * (p.ec2_hourly["t3.medium"] * h + 20.0 * p.ebs_gp3_gb_month);
    assert!((expected - 136.936).abs() < 1e-6, "the table changed: {expected}");
    let estimate = &done["estimate"];
    let total = estimate["total_monthly"].as_f64().unwrap_or(-1.0);
    assert!(
        (total - expected).abs() < 0.01,
        "total {total} != {expected}: {estimate}"
    );
    assert_eq!(estimate["not_estimated"], json!([]), "{estimate}");
    assert_eq!(estimate["price_table_date"], table.date.as_str());
    let monthly = |ty: &str| {
        estimate["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource_type"] == ty)
            .and_then(|r| r["monthly"].as_f64())
            .unwrap_or_else(|| panic!("no {ty} in {estimate}"))
    };
    assert!((monthly("aws_eks_cluster") - 73.0).abs() < 1e-6);
    assert!((monthly("aws_eks_node_group") - 63.936).abs() < 1e-6);

    // No cluster was created, and the plan left nothing behind: no state object, no Terraform lock, no
    // Strato lock item for the estimate's synthetic id, no tenant slot.
    let clusters = api.get("/v1/clusters").await.unwrap();
    assert_eq!(clusters.body["clusters"], json!([]), "{}", clusters.text);
    assert!(items(&stack, "clusters").await.is_empty());
    let state = stack
        .env
        .aws
        .s3
        .list_object_versions()
        .bucket(stack.env.names.bucket("state"))
        .send()
        .await
        .unwrap();
    assert!(
        state.versions().is_empty() && state.delete_markers().is_empty(),
        "the state bucket is untouched: {state:?}"
    );
    assert!(items(&stack, "tf-locks").await.is_empty());
    // The status function hands off (releases and forgets the lock) right after it saves the end; poll briefly.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let locks = items(&stack, "locks").await;
        // No cluster exists in this stack, so any `cluster#` item is the estimate's; a tenant's slot item may
        // stay, but without the estimate in its set.
        let leftover: Vec<_> = locks
            .iter()
            .filter(|i| {
                let id = i
                    .get("lock_id")
                    .and_then(|v| v.as_s().ok())
                    .map_or("", |s| s.as_str());
                let running = i.get("running").and_then(|v| v.as_ss().ok());
                id.starts_with("cluster#") || running.is_some_and(|r| r.contains(&op))
            })
            .collect();
        if leftover.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left behind: {leftover:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Another tenant cannot read it.
    let other = Client::new(&stack.endpoints.http_api).with_token(stack.token("globex"));
    assert_eq!(
        other.get(&format!("/v1/operations/{op}")).await.unwrap().status,
        404
    );
    eprintln!("estimate of aws-eks-basic: {took:.1?} from request to succeeded");
    // An estimate's calls (its plan-only runner included) are on the functions' AWS_CALLS lists.
    devstack_support::assert_aws_calls_listed(&stack, &["api", "dispatcher", "status", "runner"]);
    stack.shutdown(Duration::from_secs(10)).await;
}

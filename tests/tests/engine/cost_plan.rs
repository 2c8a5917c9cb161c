//! Cost estimates from REAL plan JSON: the engine plans the catalog's network + k8s modules (the
//! aws-eks-basic stage) against moto, `show -json` prints the saved plan, and the estimate's total must equal
//! figures computed by hand from the price table's values.

use crate::catalog_common;

use catalog_common::StageRoot;
use serde_json::{Value, json};
use strato_terraform::cost::{CostEstimate, PriceTable, estimate};

const H: f64 = 730.0;
// us-east-1 list prices the hand computations use; checked against the shipped table below, so a table
// change shows up here instead of silently moving the expected totals.
const EKS_HOURLY: f64 = 0.10;
const T3_MEDIUM: f64 = 0.0416;
const M5_LARGE: f64 = 0.096;
const M5_XLARGE: f64 = 0.192;
const GP3_GB_MONTH: f64 = 0.08;
const NAT_HOURLY: f64 = 0.045;
const IPV4_HOURLY: f64 = 0.005;

#[test]
fn the_hand_computations_use_the_shipped_table() {
    let t = PriceTable::builtin();
    let us = &t.regions["us-east-1"];
    assert_eq!(t.hours_per_month, H);
    assert_eq!(us.eks_cluster_hourly, EKS_HOURLY);
    assert_eq!(us.ec2_hourly["t3.medium"], T3_MEDIUM);
    assert_eq!(us.ec2_hourly["m5.large"], M5_LARGE);
    assert_eq!(us.ec2_hourly["m5.xlarge"], M5_XLARGE);
    assert_eq!(us.ebs_gp3_gb_month, GP3_GB_MONTH);
    assert_eq!(us.nat_gateway_hourly, NAT_HOURLY);
    assert_eq!(us.public_ipv4_hourly, IPV4_HOURLY);
}

fn plan_estimate(vars: Value) -> (Value, CostEstimate) {
    let root = StageRoot::new(&["network", "k8s"], &vars);
    root.init();
    let plan = root.plan_json();
    let est = estimate(&plan, "us-east-1");
    (plan, est)
}

fn monthly(est: &CostEstimate, address: &str) -> f64 {
    est.resources
        .iter()
        .find(|r| r.address == address)
        .unwrap_or_else(|| panic!("{address} not in the estimate"))
        .monthly
        .unwrap_or_else(|| panic!("{address} not estimated"))
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() < 1e-6,
        "{what}: estimated {actual}, hand-computed {expected}"
    );
}

fn common_checks(plan: &Value, est: &CostEstimate) {
    // Every managed resource of the plan is in the estimate, and every one is priced (free ones at 0).
    let managed = plan["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["mode"] == "managed")
        .count();
    assert_eq!(est.resources.len(), managed);
    assert!(est.not_estimated.is_empty(), "{:?}", est.not_estimated);
    for r in &est.resources {
        assert_eq!(r.actions, ["create"], "{}", r.address);
        if r.monthly == Some(0.0) {
            assert_eq!(r.note, "no charge", "{}", r.address);
        }
    }
    for free in ["module.network.aws_vpc.this", "module.k8s.aws_iam_role.cluster"] {
        assert_eq!(monthly(est, free), 0.0);
    }
    assert_close(
        monthly(est, "module.k8s.aws_eks_cluster.this"),
        EKS_HOURLY * H,
        "control plane",
    );
    assert_eq!(est.currency, "USD");
    assert_eq!(est.price_table_date, PriceTable::builtin().date);
    assert!(est.price_table_source.contains("AWS"));
}

#[test]
fn one_t3_medium_node() {
    let (plan, est) = plan_estimate(json!({
        "cluster_name": "cost-small", "node_instance_type": "t3.medium", "node_count": 1, "min_nodes": 1,
        "max_nodes": 2, "node_disk_size": 20, "nat_gateway": false
    }));
    common_checks(&plan, &est);
    let nodes = 1.0 * (T3_MEDIUM * H + 20.0 * GP3_GB_MONTH);
    assert_close(
        monthly(&est, "module.k8s.aws_eks_node_group.default"),
        nodes,
        "node group",
    );
    // 73.00 + 30.368 + 1.60 = 104.968
    assert_close(est.total_monthly, EKS_HOURLY * H + nodes, "total");
    assert_close(est.total_monthly, 104.968, "total in dollars");
}

#[test]
fn three_m5_large_nodes() {
    let (plan, est) = plan_estimate(json!({
        "cluster_name": "cost-medium", "node_instance_type": "m5.large", "node_count": 3, "min_nodes": 2,
        "max_nodes": 6, "node_disk_size": 50, "nat_gateway": false, "az_count": 3
    }));
    common_checks(&plan, &est);
    let nodes = 3.0 * (M5_LARGE * H + 50.0 * GP3_GB_MONTH);
    assert_close(
        monthly(&est, "module.k8s.aws_eks_node_group.default"),
        nodes,
        "node group",
    );
    // 73.00 + 3 x (70.08 + 4.00) = 295.24
    assert_close(est.total_monthly, EKS_HOURLY * H + nodes, "total");
    assert_close(est.total_monthly, 295.24, "total in dollars");
}

#[test]
fn ten_m5_xlarge_nodes_with_a_nat_gateway() {
    let (plan, est) = plan_estimate(json!({
        "cluster_name": "cost-large", "node_instance_type": "m5.xlarge", "node_count": 10, "min_nodes": 3,
        "max_nodes": 20, "node_disk_size": 100, "nat_gateway": true, "az_count": 3
    }));
    common_checks(&plan, &est);
    let nodes = 10.0 * (M5_XLARGE * H + 100.0 * GP3_GB_MONTH);
    let nat = NAT_HOURLY * H;
    let eip = IPV4_HOURLY * H;
    assert_close(
        monthly(&est, "module.k8s.aws_eks_node_group.default"),
        nodes,
        "node group",
    );
    assert_close(
        monthly(&est, "module.network.aws_nat_gateway.this[0]"),
        nat,
        "NAT gateway",
    );
    assert_close(monthly(&est, "module.network.aws_eip.nat[0]"), eip, "NAT address");
    // 73.00 + 10 x (140.16 + 8.00) + 32.85 + 3.65 = 1591.10
    assert_close(est.total_monthly, EKS_HOURLY * H + nodes + nat + eip, "total");
    assert_close(est.total_monthly, 1591.10, "total in dollars");
}

#[test]
fn a_region_without_prices_estimates_nothing_as_zero() {
    let (_, est) = plan_estimate(json!({ "cluster_name": "cost-region", "node_count": 2 }));
    let elsewhere = {
        let root = StageRoot::new(&["network", "k8s"], &json!({ "cluster_name": "cost-region2" }));
        root.init();
        estimate(&root.plan_json(), "ap-south-1")
    };
    assert!(est.not_estimated.is_empty());
    for addr in [
        "module.k8s.aws_eks_cluster.this",
        "module.k8s.aws_eks_node_group.default",
    ] {
        assert!(elsewhere.not_estimated.iter().any(|a| a == addr), "{addr}");
    }
    assert_eq!(
        elsewhere.total_monthly, 0.0,
        "only free resources remain, at 0 each"
    );
}

//! Pricing a plan: a monthly [`CostEstimate`] computed from a saved plan (`terraform show -json`) with the
//! offline price table in `shared/terraform/prices/aws.toml`, whose date and source travel with every
//! estimate. The estimate's types are the domain's (`strato_domain::cost`); the runner prices each stage's
//! plan before apply, and a stage it cannot plan is listed as not estimated, never as zero.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;
pub use strato_domain::cost::{CostEstimate, ResourceCost};

pub mod clouds;

/// One region's list prices (USD).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionPrices {
    pub eks_cluster_hourly: f64,
    pub nat_gateway_hourly: f64,
    pub public_ipv4_hourly: f64,
    pub ebs_gp3_gb_month: f64,
    pub ebs_gp2_gb_month: f64,
    pub alb_hourly: f64,
    pub nlb_hourly: f64,
    pub clb_hourly: f64,
    /// On-demand Linux price per instance type.
    pub ec2_hourly: BTreeMap<String, f64>,
}

/// The offline price table (`shared/terraform/prices/aws.toml`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    pub date: String,
    pub source: String,
    pub currency: String,
    pub hours_per_month: f64,
    pub regions: BTreeMap<String, RegionPrices>,
}

impl PriceTable {
    /// The table shipped in the repository, parsed once per process.
    pub fn builtin() -> &'static PriceTable {
        static TABLE: OnceLock<PriceTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            // Part of the build and covered by tests; a broken file is a build defect.
            toml::from_str(include_str!("../prices/aws.toml")).expect("shipped price table is valid")
        })
    }
}

/// Resource types AWS does not bill for by themselves (their traffic or attachments may cost elsewhere).
const FREE_TYPES: &[&str] = &[
    "aws_vpc",
    "aws_subnet",
    "aws_internet_gateway",
    "aws_route",
    "aws_route_table",
    "aws_route_table_association",
    "aws_main_route_table_association",
    "aws_default_route_table",
    "aws_security_group",
    "aws_security_group_rule",
    "aws_default_security_group",
    "aws_network_acl",
    "aws_vpc_ipv4_cidr_block_association",
    "aws_iam_role",
    "aws_iam_role_policy",
    "aws_iam_role_policy_attachment",
    "aws_iam_policy",
    "aws_iam_instance_profile",
    "aws_iam_openid_connect_provider",
    "aws_launch_template",
];

/// Prices a single-stage plan (`terraform show -json <saved plan>`) for `region` with the built-in table.
/// Every managed resource of the plan appears once; `stage` is left empty (see [`CostEstimate::merge_stage`]).
pub fn estimate(plan_json: &Value, region: &str) -> CostEstimate {
    estimate_with(PriceTable::builtin(), plan_json, region)
}

/// [`estimate`] with an explicit table.
pub fn estimate_with(table: &PriceTable, plan_json: &Value, region: &str) -> CostEstimate {
    estimate_side(table, plan_json, region, Side::After)
}

/// What the plan's resources cost as they are now, before it is applied: each resource's `before` (its
/// state) priced with the same table and rules as [`estimate`] prices its `after`. A resource the plan
/// creates costs nothing now. With [`estimate`] of the same plan it gives a change's cost difference
/// without a second plan.
pub fn estimate_current(plan_json: &Value, region: &str) -> CostEstimate {
    estimate_side(PriceTable::builtin(), plan_json, region, Side::Before)
}

/// Which side of each resource change is priced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// `before`: the state now (every attribute known).
    Before,
    /// `after`: what the plan makes (some attributes only known after apply).
    After,
}

fn estimate_side(table: &PriceTable, plan_json: &Value, region: &str, side: Side) -> CostEstimate {
    let mut est = CostEstimate {
        currency: table.currency.clone(),
        total_monthly: 0.0,
        resources: Vec::new(),
        not_estimated: Vec::new(),
        price_table_date: table.date.clone(),
        price_table_source: table.source.clone(),
    };
    let changes = plan_json
        .get("resource_changes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let ctx = clouds::Context::of(changes, side);
    for rc in changes {
        // Data sources cost nothing and do not outlive the run.
        if rc.get("mode").and_then(Value::as_str) != Some("managed") {
            continue;
        }
        let address = rc.get("address").and_then(Value::as_str).unwrap_or_default();
        let resource_type = rc.get("type").and_then(Value::as_str).unwrap_or_default();
        let change = rc.get("change").unwrap_or(&Value::Null);
        let actions: Vec<String> = change
            .get("actions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let (monthly, note) = match side {
            Side::After => {
                let after = change.get("after").unwrap_or(&Value::Null);
                let unknown = change.get("after_unknown").unwrap_or(&Value::Null);
                if actions.iter().all(|a| a == "delete") && after.is_null() {
                    (Some(0.0), "deleted by this plan".to_owned())
                } else {
                    price(table, region, resource_type, after, unknown, &ctx)
                }
            }
            Side::Before => {
                let before = change.get("before").unwrap_or(&Value::Null);
                if before.is_null() {
                    (Some(0.0), "created by this plan".to_owned())
                } else {
                    price(table, region, resource_type, before, &Value::Null, &ctx)
                }
            }
        };
        est.resources.push(ResourceCost {
            stage: String::new(),
            address: address.to_owned(),
            resource_type: resource_type.to_owned(),
            actions,
            monthly,
            note,
        });
    }
    est.total_monthly = CostEstimate::priced_total(&est.resources);
    est.not_estimated = est
        .resources
        .iter()
        .filter(|r| r.monthly.is_none())
        .map(|r| r.address.clone())
        .collect();
    // A plan of another cloud's template is priced from that cloud's table: the estimate names it.
    if let Some(cloud) = est
        .resources
        .iter()
        .find_map(|r| clouds::cloud_of(&r.resource_type))
    {
        let (date, source, currency) = clouds::CloudTables::builtin().provenance(cloud);
        est.price_table_date = date.to_owned();
        est.price_table_source = source.to_owned();
        est.currency = currency.to_owned();
    }
    est
}

type Priced = (Option<f64>, String);

fn not_estimated(why: impl Into<String>) -> Priced {
    (None, why.into())
}

/// A known attribute of the planned object, or `None` when it is unset or only known after apply.
fn known<'a>(after: &'a Value, unknown: &Value, key: &str) -> Option<&'a Value> {
    if unknown.get(key).is_some_and(|u| *u == Value::Bool(true)) {
        return None;
    }
    after.get(key).filter(|v| !v.is_null())
}

/// One arm per priced resource type (the price table's rows); long because the table is.
fn price(
    table: &PriceTable,
    region: &str,
    ty: &str,
    after: &Value,
    unknown: &Value,
    ctx: &clouds::Context,
) -> Priced {
    if let Some(cloud) = clouds::cloud_of(ty) {
        return clouds::price(cloud, ty, region, after, unknown, ctx);
    }
    if FREE_TYPES.contains(&ty) {
        return (Some(0.0), "no charge".into());
    }
    let billed = matches!(
        ty,
        "aws_eks_cluster"
            | "aws_eks_node_group"
            | "aws_instance"
            | "aws_nat_gateway"
            | "aws_eip"
            | "aws_ebs_volume"
            | "aws_lb"
            | "aws_alb"
            | "aws_elb"
    );
    if !billed {
        return not_estimated(format!("no price for {ty} in the price table"));
    }
    let Some(p) = table.regions.get(region) else {
        return not_estimated(format!(
            "the price table ({}) has no prices for region {region}",
            table.date
        ));
    };
    let h = table.hours_per_month;
    match ty {
        "aws_eks_cluster" => (
            Some(p.eks_cluster_hourly * h),
            format!("EKS control plane ${}/h x {h} h", p.eks_cluster_hourly),
        ),
        "aws_nat_gateway" => (
            Some(p.nat_gateway_hourly * h),
            format!(
                "NAT gateway ${}/h x {h} h; data processing per GB not included",
                p.nat_gateway_hourly
            ),
        ),
        "aws_eip" => (
            Some(p.public_ipv4_hourly * h),
            format!("public IPv4 address ${}/h x {h} h", p.public_ipv4_hourly),
        ),
        "aws_lb" | "aws_alb" => {
            let kind = known(after, unknown, "load_balancer_type")
                .and_then(Value::as_str)
                .unwrap_or("application");
            match kind {
                "application" => (
                    Some(p.alb_hourly * h),
                    format!(
                        "application load balancer ${}/h x {h} h; LCU usage not included",
                        p.alb_hourly
                    ),
                ),
                "network" => (
                    Some(p.nlb_hourly * h),
                    format!(
                        "network load balancer ${}/h x {h} h; NLCU usage not included",
                        p.nlb_hourly
                    ),
                ),
                other => not_estimated(format!("no price for {other} load balancers")),
            }
        }
        "aws_elb" => (
            Some(p.clb_hourly * h),
            format!(
                "classic load balancer ${}/h x {h} h; data processed not included",
                p.clb_hourly
            ),
        ),
        "aws_ebs_volume" => {
            let Some(size) = known(after, unknown, "size").and_then(Value::as_f64) else {
                return not_estimated("volume size is only known after apply");
            };
            let kind = known(after, unknown, "type")
                .and_then(Value::as_str)
                .unwrap_or("gp2");
            let per_gb = match kind {
                "gp3" => p.ebs_gp3_gb_month,
                "gp2" => p.ebs_gp2_gb_month,
                other => return not_estimated(format!("no price for EBS volume type {other}")),
            };
            (
                Some(size * per_gb),
                format!("{size} GB {kind} x ${per_gb}/GB-month; extra IOPS/throughput not included"),
            )
        }
        "aws_instance" => {
            let Some(it) = known(after, unknown, "instance_type").and_then(Value::as_str) else {
                return not_estimated("instance type is only known after apply");
            };
            match p.ec2_hourly.get(it) {
                Some(rate) => (
                    Some(rate * h),
                    format!("{it} ${rate}/h x {h} h; root volume not included"),
                ),
                None => not_estimated(format!("no price for instance type {it} in {region}")),
            }
        }
        "aws_eks_node_group" => node_group(p, h, region, after, unknown),
        _ => not_estimated(format!("no price for {ty} in the price table")),
    }
}

/// desired_size x (instance price x hours + disk_size GB x gp3 price): the group's steady state.
fn node_group(p: &RegionPrices, h: f64, region: &str, after: &Value, unknown: &Value) -> Priced {
    if known(after, unknown, "capacity_type").and_then(Value::as_str) == Some("SPOT") {
        return not_estimated("SPOT capacity: spot prices change continuously and are not in the table");
    }
    if known(after, unknown, "launch_template").is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty())) {
        return not_estimated(
            "node group uses a launch template; its instance type and disk are not in the plan",
        );
    }
    let desired = known(after, unknown, "scaling_config")
        .and_then(|s| s.get(0))
        .and_then(|s| s.get("desired_size"))
        .and_then(Value::as_f64);
    let Some(desired) = desired else {
        return not_estimated("desired_size is only known after apply");
    };
    let instance_types: Vec<&str> = known(after, unknown, "instance_types")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // EKS launches t3.medium when no type is given.
    let it = match instance_types.as_slice() {
        [] => "t3.medium",
        [one] => one,
        _ => return not_estimated("several instance types: the mix EKS launches is not known in advance"),
    };
    let Some(rate) = p.ec2_hourly.get(it) else {
        return not_estimated(format!("no price for instance type {it} in {region}"));
    };
    // EKS's default launch template gives each node a 20 GB gp3 root volume unless disk_size says otherwise.
    let disk = known(after, unknown, "disk_size")
        .and_then(Value::as_f64)
        .unwrap_or(20.0);
    let monthly = desired * (rate * h + disk * p.ebs_gp3_gb_month);
    (
        Some(monthly),
        format!(
            "{desired} x ({it} ${rate}/h x {h} h + {disk} GB gp3 x ${}/GB-month)",
            p.ebs_gp3_gb_month
        ),
    )
}

/// The estimate of something that could not be planned at all: one "not estimated" entry saying why
/// (never a zero), with the built-in table's date and source like any other estimate.
pub fn not_planned(address: &str, why: &str) -> CostEstimate {
    let table = PriceTable::builtin();
    CostEstimate {
        currency: table.currency.clone(),
        total_monthly: 0.0,
        resources: vec![ResourceCost {
            stage: String::new(),
            address: address.to_owned(),
            resource_type: String::new(),
            actions: Vec::new(),
            monthly: None,
            note: why.to_owned(),
        }],
        not_estimated: vec![address.to_owned()],
        price_table_date: table.date.clone(),
        price_table_source: table.source.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(addr: &str, monthly: Option<f64>) -> CostEstimate {
        let mut e = CostEstimate::empty();
        e.resources.push(ResourceCost {
            stage: String::new(),
            address: addr.into(),
            resource_type: "aws_instance".into(),
            actions: vec!["create".into()],
            monthly,
            note: String::new(),
        });
        e
    }

    #[test]
    fn an_unplanned_stage_is_listed_as_not_estimated_never_zero() {
        let mut total = CostEstimate::empty();
        total.merge_stage("k8s", &est("aws_eks_cluster.c", Some(73.0)));
        let skipped = not_planned("stage.addons", "needs cluster_endpoint");
        assert_eq!(skipped.price_table_date, PriceTable::builtin().date);
        total.merge_stage("addons", &skipped);
        assert!((total.total_monthly - 73.0).abs() < 1e-9);
        assert_eq!(total.not_estimated, ["stage.addons"]);
        let r = total.resources.iter().find(|r| r.stage == "addons").unwrap();
        assert_eq!((r.monthly, r.note.as_str()), (None, "needs cluster_endpoint"));
    }

    #[test]
    fn the_table_prices_every_catalog_instance_type_in_every_region() {
        let t = PriceTable::builtin();
        assert!(!t.date.is_empty() && !t.source.is_empty());
        assert_eq!(t.hours_per_month, 730.0);
        assert!(t.regions.contains_key("us-east-1"));
        let aws = strato_domain::catalog::Catalogs::builtin().get(strato_domain::model::CloudProvider::Aws);
        for (region, prices) in &t.regions {
            assert!(aws.region(region).is_some(), "{region} is not a catalog region");
            for it in &aws.instance_types {
                assert!(
                    prices.ec2_hourly.get(&it.name).is_some_and(|p| *p > 0.0),
                    "{region} {}",
                    it.name
                );
            }
        }
    }

    fn plan(changes: Value) -> Value {
        serde_json::json!({ "format_version": "0.1", "resource_changes": changes })
    }

    #[test]
    fn unpriced_resources_are_listed_never_zero() {
        let p = plan(serde_json::json!([
            {"address": "aws_vpc.a", "mode": "managed", "type": "aws_vpc",
             "change": {"actions": ["create"], "after": {}, "after_unknown": {}}},
            {"address": "helm_release.x", "mode": "managed", "type": "helm_release",
             "change": {"actions": ["create"], "after": {}, "after_unknown": {}}},
            {"address": "aws_instance.i", "mode": "managed", "type": "aws_instance",
             "change": {"actions": ["create"], "after": {"instance_type": "t3.small"}, "after_unknown": {}}},
            {"address": "aws_instance.gone", "mode": "managed", "type": "aws_instance",
             "change": {"actions": ["delete"], "after": null, "after_unknown": {}}},
            {"address": "data.aws_region.r", "mode": "data", "type": "aws_region",
             "change": {"actions": ["read"], "after": {}, "after_unknown": {}}}
        ]));
        let e = estimate(&p, "us-east-1");
        assert_eq!(e.resources.len(), 4, "data sources are skipped");
        assert_eq!(e.resources[0].monthly, Some(0.0));
        assert_eq!(e.resources[0].note, "no charge");
        assert_eq!(e.resources[1].monthly, None);
        assert_eq!(e.not_estimated, ["helm_release.x"]);
        assert!(
            (e.total_monthly - 0.0208 * 730.0).abs() < 1e-9,
            "{}",
            e.total_monthly
        );
        assert_eq!(e.resources[3].monthly, Some(0.0));

        // A region without prices: nothing billable is silently zero.
        let e = estimate(&p, "ap-south-1");
        assert_eq!(e.not_estimated, ["helm_release.x", "aws_instance.i"]);
        assert!(e.resources[2].note.contains("ap-south-1"));
        assert_eq!(e.total_monthly, 0.0);
        assert_eq!(e.price_table_date, PriceTable::builtin().date);
    }

    #[test]
    fn the_current_side_prices_each_resource_before_the_plan() {
        let sc = |n: u32| serde_json::json!([{"desired_size": n, "min_size": 1, "max_size": 5}]);
        let p = plan(serde_json::json!([
            {"address": "aws_eks_node_group.n", "mode": "managed", "type": "aws_eks_node_group",
             "change": {"actions": ["update"],
                "before": {"scaling_config": sc(2), "instance_types": ["m5.large"], "disk_size": 20},
                "after": {"scaling_config": sc(3), "instance_types": ["m5.large"], "disk_size": 20},
                "after_unknown": {}}},
            {"address": "aws_instance.new", "mode": "managed", "type": "aws_instance",
             "change": {"actions": ["create"], "before": null,
                "after": {"instance_type": "t3.small"}, "after_unknown": {}}},
            {"address": "aws_instance.old", "mode": "managed", "type": "aws_instance",
             "change": {"actions": ["delete"], "before": {"instance_type": "t3.small"},
                "after": null, "after_unknown": {}}},
            {"address": "aws_eks_cluster.c", "mode": "managed", "type": "aws_eks_cluster",
             "change": {"actions": ["no-op"], "before": {}, "after": {}, "after_unknown": {}}}
        ]));
        let now = estimate_current(&p, "us-east-1");
        let then = estimate(&p, "us-east-1");
        let node = |n: f64| n * (0.096 * 730.0 + 20.0 * 0.08);
        let t3 = 0.0208 * 730.0;
        let eks = now.resources[3].monthly.unwrap();
        assert!(
            (now.total_monthly - (node(2.0) + t3 + eks)).abs() < 1e-9,
            "{now:?}"
        );
        assert!(
            (then.total_monthly - (node(3.0) + t3 + eks)).abs() < 1e-9,
            "{then:?}"
        );
        assert_eq!(now.resources[1].note, "created by this plan");
        assert_eq!(then.resources[2].note, "deleted by this plan");
    }

    #[test]
    fn node_groups_unknown_sizes_and_spot_are_not_estimated() {
        let ng = |after: Value, unknown: Value| {
            let p = plan(
                serde_json::json!([{"address": "aws_eks_node_group.n", "mode": "managed",
                "type": "aws_eks_node_group",
                "change": {"actions": ["create"], "after": after, "after_unknown": unknown}}]),
            );
            estimate(&p, "us-east-1").resources[0].monthly
        };
        let sc = serde_json::json!([{"desired_size": 2, "min_size": 1, "max_size": 3}]);
        let m = ng(
            serde_json::json!({"scaling_config": sc, "instance_types": ["m5.large"], "disk_size": 50}),
            serde_json::json!({}),
        )
        .unwrap();
        assert!((m - 2.0 * (0.096 * 730.0 + 50.0 * 0.08)).abs() < 1e-9, "{m}");
        assert_eq!(
            ng(
                serde_json::json!({"scaling_config": sc, "instance_types": ["m5.large"], "capacity_type": "SPOT"}),
                serde_json::json!({})
            ),
            None
        );
        assert_eq!(
            ng(
                serde_json::json!({"instance_types": ["m5.large"]}),
                serde_json::json!({"scaling_config": true})
            ),
            None
        );
        assert_eq!(
            ng(
                serde_json::json!({"scaling_config": sc, "instance_types": ["z9.huge"]}),
                serde_json::json!({})
            ),
            None
        );
    }
}

//! Prices of the other clouds' resources (GCP, Azure, DigitalOcean, Linode) from `prices/clouds.toml`: node
//! types of each cloud's catalog, control-plane fees (GKE's management fee, AKS tiers, DOKS and LKE high
//! availability), load balancers, disks and NAT. A resource is told apart by its type's prefix (`google_`,
//! `azurerm_`, `digitalocean_`, `linode_`); anything not priced here is not estimated, never zero.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use super::{Priced, Side, known, not_estimated};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gcp {
    pub date: String,
    pub source: String,
    pub currency: String,
    pub hours_per_month: f64,
    pub regions: Vec<String>,
    pub cluster_management_hourly: f64,
    pub free_tier_monthly_credit: f64,
    pub nat_vm_hourly: f64,
    pub nat_max_hourly: f64,
    pub nat_max_vms: f64,
    pub forwarding_rule_hourly: f64,
    pub external_ip_hourly: f64,
    pub free: Vec<String>,
    pub disk_gb_month: BTreeMap<String, f64>,
    pub machine_hourly: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Azure {
    pub date: String,
    pub source: String,
    pub currency: String,
    pub hours_per_month: f64,
    pub regions: Vec<String>,
    pub tier_hourly: BTreeMap<String, f64>,
    pub load_balancer_hourly: f64,
    pub public_ip_hourly: f64,
    pub nat_gateway_hourly: f64,
    pub free: Vec<String>,
    /// Tier name → (GiB, USD per month).
    pub premium_disk_tiers: BTreeMap<String, (f64, f64)>,
    pub vm_hourly: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigitalOcean {
    pub date: String,
    pub source: String,
    pub currency: String,
    pub ha_control_plane_monthly: f64,
    pub load_balancer_node_monthly: f64,
    pub volume_gb_month: f64,
    pub free: Vec<String>,
    pub droplet_monthly: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linode {
    pub date: String,
    pub source: String,
    pub currency: String,
    pub ha_control_plane_monthly: f64,
    pub nodebalancer_monthly: f64,
    pub volume_gb_month: f64,
    pub free: Vec<String>,
    pub plan_monthly: BTreeMap<String, f64>,
}

/// `prices/clouds.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudTables {
    pub gcp: Gcp,
    pub azure: Azure,
    pub digitalocean: DigitalOcean,
    pub linode: Linode,
}

impl CloudTables {
    pub fn builtin() -> &'static CloudTables {
        static TABLES: OnceLock<CloudTables> = OnceLock::new();
        // Part of the build and covered by tests; a broken file is a build defect.
        TABLES.get_or_init(|| {
            toml::from_str(include_str!("../../prices/clouds.toml")).expect("shipped price tables are valid")
        })
    }

    /// The table's (date, source, currency) for `cloud`: what an estimate of that cloud's plan names.
    pub fn provenance(&self, cloud: Cloud) -> (&str, &str, &str) {
        match cloud {
            Cloud::Gcp => (&self.gcp.date, &self.gcp.source, &self.gcp.currency),
            Cloud::Azure => (&self.azure.date, &self.azure.source, &self.azure.currency),
            Cloud::Digitalocean => (
                &self.digitalocean.date,
                &self.digitalocean.source,
                &self.digitalocean.currency,
            ),
            Cloud::Linode => (&self.linode.date, &self.linode.source, &self.linode.currency),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cloud {
    Gcp,
    Azure,
    Digitalocean,
    Linode,
}

/// The cloud a resource type belongs to, by its provider's prefix; `None` for AWS and anything else.
pub fn cloud_of(ty: &str) -> Option<Cloud> {
    [
        ("google_", Cloud::Gcp),
        ("azurerm_", Cloud::Azure),
        ("digitalocean_", Cloud::Digitalocean),
        ("linode_", Cloud::Linode),
    ]
    .into_iter()
    .find(|(p, _)| ty.starts_with(p))
    .map(|(_, c)| c)
}

/// What pricing one resource needs from the rest of the plan: Cloud NAT is billed per VM using it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    /// GCP VMs the plan runs (node pools and instances); `None` when a count is only known after apply.
    pub gcp_vms: Option<f64>,
}

impl Context {
    pub(super) fn of(changes: &[Value], side: Side) -> Context {
        let mut vms = Some(0.0);
        for rc in changes {
            if rc.get("mode").and_then(Value::as_str) != Some("managed") {
                continue;
            }
            let change = rc.get("change").unwrap_or(&Value::Null);
            let (obj, unknown) = match side {
                Side::After => (
                    change.get("after").unwrap_or(&Value::Null),
                    change.get("after_unknown").unwrap_or(&Value::Null),
                ),
                Side::Before => (change.get("before").unwrap_or(&Value::Null), &Value::Null),
            };
            if obj.is_null() {
                continue;
            }
            let n = match rc.get("type").and_then(Value::as_str) {
                Some("google_container_node_pool") => gke_pool_nodes(obj, unknown).ok(),
                Some("google_compute_instance") => Some(1.0),
                _ => continue,
            };
            vms = vms.zip(n).map(|(a, b)| a + b);
        }
        Context { gcp_vms: vms }
    }
}

/// Prices one resource of `cloud`.
pub fn price(cloud: Cloud, ty: &str, region: &str, obj: &Value, unknown: &Value, ctx: &Context) -> Priced {
    let t = CloudTables::builtin();
    match cloud {
        Cloud::Gcp => gcp(&t.gcp, ty, region, obj, unknown, ctx),
        Cloud::Azure => azure(&t.azure, ty, region, obj, unknown),
        Cloud::Digitalocean => digitalocean(&t.digitalocean, ty, obj, unknown),
        Cloud::Linode => linode(&t.linode, ty, obj, unknown),
    }
}

fn num(obj: &Value, unknown: &Value, key: &str) -> Option<f64> {
    known(obj, unknown, key).and_then(Value::as_f64)
}

fn text<'a>(obj: &'a Value, unknown: &Value, key: &str) -> Option<&'a str> {
    known(obj, unknown, key).and_then(Value::as_str)
}

/// The first element of a nested block (`node_config[0]`) and its unknown marks.
fn nested<'a>(obj: &'a Value, unknown: &'a Value, key: &str) -> (&'a Value, &'a Value) {
    (
        obj.get(key).and_then(|v| v.get(0)).unwrap_or(&Value::Null),
        unknown.get(key).and_then(|v| v.get(0)).unwrap_or(&Value::Null),
    )
}

fn gke_pool_nodes(obj: &Value, unknown: &Value) -> Result<f64, String> {
    let count = num(obj, unknown, "node_count")
        .or_else(|| num(obj, unknown, "initial_node_count"))
        .ok_or("node count is only known after apply")?;
    // A pool runs `count` nodes in each of its zones; without node_locations the zones are the cluster's.
    let zones = known(obj, unknown, "node_locations")
        .and_then(Value::as_array)
        .filter(|z| !z.is_empty())
        .map(|z| z.len() as f64)
        .ok_or("the pool's zones (node_locations) are the cluster's, not known from this resource")?;
    Ok(count * zones)
}

fn gcp(t: &Gcp, ty: &str, region: &str, obj: &Value, unknown: &Value, ctx: &Context) -> Priced {
    if t.free.iter().any(|f| f == ty) {
        return (Some(0.0), "no charge".into());
    }
    let h = t.hours_per_month;
    let in_table = t.regions.iter().any(|r| r == region);
    match ty {
        "google_container_cluster" => {
            let fee = t.cluster_management_hourly * h;
            let zonal = text(obj, unknown, "location").is_some_and(|l| l.matches('-').count() == 2);
            let credit = if zonal {
                format!(
                    "; a zonal cluster: GKE's free tier credit (${}/month per billing account) may cover it",
                    t.free_tier_monthly_credit
                )
            } else {
                "; a regional cluster: the free tier does not apply".to_owned()
            };
            (
                Some(fee),
                format!(
                    "GKE cluster management fee ${}/h x {h} h{credit}; the default node pool is removed (nodes are \
                     priced with their node pool)",
                    t.cluster_management_hourly
                ),
            )
        }
        "google_container_node_pool" => {
            if !in_table {
                return not_estimated(format!(
                    "the GCP price table ({}) has no prices for region {region}",
                    t.date
                ));
            }
            let nodes = match gke_pool_nodes(obj, unknown) {
                Ok(n) => n,
                Err(why) => return not_estimated(why),
            };
            let (cfg, cfg_unknown) = nested(obj, unknown, "node_config");
            if cfg.get("spot") == Some(&Value::Bool(true))
                || cfg.get("preemptible") == Some(&Value::Bool(true))
            {
                return not_estimated("Spot/preemptible nodes: their prices change and are not in the table");
            }
            let machine = text(cfg, cfg_unknown, "machine_type").unwrap_or("e2-medium");
            let Some(rate) = t.machine_hourly.get(machine) else {
                return not_estimated(format!("no price for machine type {machine}"));
            };
            let disk = num(cfg, cfg_unknown, "disk_size_gb").unwrap_or(100.0);
            let kind = text(cfg, cfg_unknown, "disk_type").unwrap_or("pd-balanced");
            let Some(per_gb) = t.disk_gb_month.get(kind) else {
                return not_estimated(format!("no price for disk type {kind}"));
            };
            (
                Some(nodes * (rate * h + disk * per_gb)),
                format!(
                    "{nodes} x ({machine} ${rate}/h x {h} h + {disk} GB {kind} x ${per_gb}/GB-month); the \
                     autoscaler may run more or fewer"
                ),
            )
        }
        "google_compute_router_nat" => match ctx.gcp_vms {
            Some(vms) if vms > t.nat_max_vms => (
                Some(t.nat_max_hourly * h),
                format!(
                    "Cloud NAT ${}/h x {h} h (more than {} VMs); data processed not included",
                    t.nat_max_hourly, t.nat_max_vms
                ),
            ),
            Some(vms) => (
                Some(vms.max(1.0) * t.nat_vm_hourly * h),
                format!(
                    "Cloud NAT {} VM(s) x ${}/h x {h} h; data processed not included",
                    vms.max(1.0),
                    t.nat_vm_hourly
                ),
            ),
            None => not_estimated(
                "Cloud NAT is billed per VM using it; the plan's VM count is only known after apply",
            ),
        },
        "google_compute_forwarding_rule" | "google_compute_global_forwarding_rule" => (
            Some(t.forwarding_rule_hourly * h),
            format!(
                "forwarding rule ${}/h x {h} h; data processed not included",
                t.forwarding_rule_hourly
            ),
        ),
        "google_compute_address" | "google_compute_global_address"
            if text(obj, unknown, "address_type").unwrap_or("EXTERNAL") == "EXTERNAL" =>
        {
            (
                Some(t.external_ip_hourly * h),
                format!("external IP address ${}/h x {h} h", t.external_ip_hourly),
            )
        }
        "google_compute_disk" => {
            if !in_table {
                return not_estimated(format!(
                    "the GCP price table ({}) has no prices for region {region}",
                    t.date
                ));
            }
            let Some(size) = num(obj, unknown, "size") else {
                return not_estimated("disk size is only known after apply");
            };
            let kind = text(obj, unknown, "type").unwrap_or("pd-standard");
            match t.disk_gb_month.get(kind) {
                Some(per_gb) => (
                    Some(size * per_gb),
                    format!("{size} GB {kind} x ${per_gb}/GB-month"),
                ),
                None => not_estimated(format!("no price for disk type {kind}")),
            }
        }
        _ => not_estimated(format!("no price for {ty} in the GCP price table")),
    }
}

/// Premium SSD managed disks bill the smallest tier that holds the size.
fn premium_disk(t: &Azure, gib: f64) -> Option<(String, f64)> {
    t.premium_disk_tiers
        .iter()
        .filter(|(_, (size, _))| *size >= gib)
        .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
        .map(|(name, (_, price))| (name.clone(), *price))
}

/// A node pool: count x (VM + its OS disk).
fn aks_nodes(t: &Azure, region: &str, pool: &Value, unknown: &Value) -> Result<(f64, String), String> {
    if !t.regions.iter().any(|r| r == region) {
        return Err(format!(
            "the Azure price table ({}) has no prices for region {region}",
            t.date
        ));
    }
    if text(pool, unknown, "priority") == Some("Spot") {
        return Err("Spot nodes: their prices change and are not in the table".into());
    }
    let count = num(pool, unknown, "node_count")
        .or_else(|| num(pool, unknown, "min_count"))
        .ok_or("node count is only known after apply")?;
    let size = text(pool, unknown, "vm_size").ok_or("VM size is only known after apply")?;
    let rate = t
        .vm_hourly
        .get(size)
        .ok_or(format!("no price for VM size {size}"))?;
    // AKS's OS disk: 128 GB managed Premium SSD unless set (ephemeral disks are part of the VM).
    let ephemeral = text(pool, unknown, "os_disk_type") == Some("Ephemeral");
    let gib = num(pool, unknown, "os_disk_size_gb").unwrap_or(128.0);
    let (disk_note, disk) = if ephemeral {
        ("ephemeral OS disk (in the VM's price)".to_owned(), 0.0)
    } else {
        let (tier, price) = premium_disk(t, gib).ok_or(format!("no Premium SSD tier holds {gib} GB"))?;
        (
            format!("{gib} GB OS disk as Premium SSD {tier} ${price}/month"),
            price,
        )
    };
    let h = t.hours_per_month;
    Ok((
        count * (rate * h + disk),
        format!("{count} x ({size} ${rate}/h x {h} h + {disk_note}); the autoscaler may run more or fewer"),
    ))
}

fn azure(t: &Azure, ty: &str, region: &str, obj: &Value, unknown: &Value) -> Priced {
    if t.free.iter().any(|f| f == ty) {
        return (Some(0.0), "no charge".into());
    }
    let h = t.hours_per_month;
    match ty {
        "azurerm_kubernetes_cluster" => {
            let tier = text(obj, unknown, "sku_tier").unwrap_or("Free");
            let Some(rate) = t.tier_hourly.get(tier) else {
                return not_estimated(format!("no price for AKS tier {tier}"));
            };
            let (pool, pool_unknown) = nested(obj, unknown, "default_node_pool");
            match aks_nodes(t, region, pool, pool_unknown) {
                Ok((nodes, note)) => (
                    Some(rate * h + nodes),
                    format!("AKS {tier} tier control plane ${rate}/h x {h} h + default node pool {note}"),
                ),
                Err(why) => not_estimated(format!("default node pool: {why}")),
            }
        }
        "azurerm_kubernetes_cluster_node_pool" => match aks_nodes(t, region, obj, unknown) {
            Ok((nodes, note)) => (Some(nodes), note),
            Err(why) => not_estimated(why),
        },
        "azurerm_lb" if text(obj, unknown, "sku").unwrap_or("Standard") == "Standard" => (
            Some(t.load_balancer_hourly * h),
            format!(
                "Standard load balancer ${}/h x {h} h (first 5 rules); data processed not included",
                t.load_balancer_hourly
            ),
        ),
        "azurerm_public_ip" => (
            Some(t.public_ip_hourly * h),
            format!("public IP address ${}/h x {h} h", t.public_ip_hourly),
        ),
        "azurerm_nat_gateway" => (
            Some(t.nat_gateway_hourly * h),
            format!(
                "NAT gateway ${}/h x {h} h; data processed not included",
                t.nat_gateway_hourly
            ),
        ),
        "azurerm_managed_disk" if text(obj, unknown, "storage_account_type") == Some("Premium_LRS") => {
            let Some(gib) = num(obj, unknown, "disk_size_gb") else {
                return not_estimated("disk size is only known after apply");
            };
            match premium_disk(t, gib) {
                Some((tier, price)) => (Some(price), format!("{gib} GB Premium SSD {tier} ${price}/month")),
                None => not_estimated(format!("no Premium SSD tier holds {gib} GB")),
            }
        }
        _ => not_estimated(format!("no price for {ty} in the Azure price table")),
    }
}

/// A Kubernetes control plane of DOKS or LKE: free, unless high availability is on (`ha_monthly` a month).
fn control_plane(ha: bool, ha_monthly: f64) -> (f64, String) {
    if ha {
        (
            ha_monthly,
            format!("high-availability control plane ${ha_monthly}/month"),
        )
    } else {
        (0.0, "control plane free".to_owned())
    }
}

/// A node pool (DOKS, LKE): `count` x the monthly price of its node `size` (what the cloud calls `what`:
/// a Droplet size, a plan) in `monthly`.
fn node_pool(
    monthly: &BTreeMap<String, f64>,
    what: &str,
    count: Option<f64>,
    size: Option<&str>,
) -> Result<(f64, String), String> {
    let count = count.ok_or("node count is only known after apply")?;
    let size = size.ok_or(format!("{what} is only known after apply"))?;
    let price = monthly.get(size).ok_or(format!("no price for {what} {size}"))?;
    Ok((count * price, format!("{count} x {size} ${price}/month")))
}

/// A DOKS node pool: count x the Droplet size's monthly price.
fn doks_pool(t: &DigitalOcean, pool: &Value, unknown: &Value) -> Result<(f64, String), String> {
    let count = num(pool, unknown, "node_count").or_else(|| num(pool, unknown, "min_nodes"));
    node_pool(
        &t.droplet_monthly,
        "Droplet size",
        count,
        text(pool, unknown, "size"),
    )
}

/// An LKE pool: count x the plan's monthly price.
fn lke_pool(t: &Linode, pool: &Value, unknown: &Value) -> Result<(f64, String), String> {
    let count = num(pool, unknown, "count");
    node_pool(&t.plan_monthly, "plan", count, text(pool, unknown, "type"))
}

/// A pool priced on its own, or why not.
fn pool_priced(pool: Result<(f64, String), String>) -> Priced {
    match pool {
        Ok((m, note)) => (Some(m), note),
        Err(why) => not_estimated(why),
    }
}

/// A machine of a monthly-priced size `name` (a Droplet's size, a Linode's plan).
fn machine(monthly: &BTreeMap<String, f64>, name: Option<&str>, unknown_why: &str) -> Priced {
    match name.and_then(|s| monthly.get(s).map(|p| (s, p))) {
        Some((s, p)) => (Some(*p), format!("{s} ${p}/month")),
        None => not_estimated(unknown_why),
    }
}

/// A block-storage volume: its `size` in GB x `gb_month`.
fn volume(obj: &Value, unknown: &Value, gb_month: f64) -> Priced {
    match num(obj, unknown, "size") {
        Some(gb) => (Some(gb * gb_month), format!("{gb} GB x ${gb_month}/GB-month")),
        None => not_estimated("volume size is only known after apply"),
    }
}

fn digitalocean(t: &DigitalOcean, ty: &str, obj: &Value, unknown: &Value) -> Priced {
    if t.free.iter().any(|f| f == ty) {
        return (Some(0.0), "no charge".into());
    }
    match ty {
        "digitalocean_kubernetes_cluster" => {
            let ha = obj.get("ha") == Some(&Value::Bool(true));
            let (cp, cp_note) = control_plane(ha, t.ha_control_plane_monthly);
            let (pool, pool_unknown) = nested(obj, unknown, "node_pool");
            match doks_pool(t, pool, pool_unknown) {
                Ok((nodes, note)) => (
                    Some(cp + nodes),
                    format!("{cp_note} + node pool {note}; the autoscaler may run more or fewer"),
                ),
                Err(why) => not_estimated(format!("node pool: {why}")),
            }
        }
        "digitalocean_kubernetes_node_pool" => pool_priced(doks_pool(t, obj, unknown)),
        "digitalocean_droplet" => machine(
            &t.droplet_monthly,
            text(obj, unknown, "size"),
            "Droplet size unknown or not in the table",
        ),
        "digitalocean_loadbalancer" => {
            let units = num(obj, unknown, "size_unit").unwrap_or(1.0);
            (
                Some(units * t.load_balancer_node_monthly),
                format!(
                    "{units} load balancer node(s) x ${}/month",
                    t.load_balancer_node_monthly
                ),
            )
        }
        "digitalocean_volume" => volume(obj, unknown, t.volume_gb_month),
        _ => not_estimated(format!("no price for {ty} in the DigitalOcean price table")),
    }
}

fn linode(t: &Linode, ty: &str, obj: &Value, unknown: &Value) -> Priced {
    if t.free.iter().any(|f| f == ty) {
        return (Some(0.0), "no charge".into());
    }
    match ty {
        "linode_lke_cluster" => {
            let (cp, cp_unknown) = nested(obj, unknown, "control_plane");
            let ha = known(cp, cp_unknown, "high_availability") == Some(&Value::Bool(true));
            let (fee, cp_note) = control_plane(ha, t.ha_control_plane_monthly);
            let pools = obj
                .get("pool")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut total = fee;
            let mut notes = vec![cp_note];
            for (i, pool) in pools.iter().enumerate() {
                let pu = unknown.get("pool").and_then(|p| p.get(i)).unwrap_or(&Value::Null);
                match lke_pool(t, pool, pu) {
                    Ok((m, note)) => {
                        total += m;
                        notes.push(format!("pool {note}"));
                    }
                    Err(why) => return not_estimated(format!("pool {i}: {why}")),
                }
            }
            (
                Some(total),
                notes.join(" + ") + "; the autoscaler may run more or fewer",
            )
        }
        "linode_lke_node_pool" => pool_priced(lke_pool(t, obj, unknown)),
        "linode_instance" => machine(
            &t.plan_monthly,
            text(obj, unknown, "type"),
            "plan unknown or not in the table",
        ),
        "linode_nodebalancer" => (
            Some(t.nodebalancer_monthly),
            format!("NodeBalancer ${}/month", t.nodebalancer_monthly),
        ),
        "linode_volume" => volume(obj, unknown, t.volume_gb_month),
        _ => not_estimated(format!("no price for {ty} in the Linode price table")),
    }
}

#[cfg(test)]
mod tests;

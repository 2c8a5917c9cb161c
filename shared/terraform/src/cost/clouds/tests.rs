//! Each cloud's template priced from a plan in Terraform's `show -json` format (fixtures/<template>.plan.json:
//! the resources the template's modules plan, plus one billed resource and one the tables do not know).

use super::*;
use crate::cost::{estimate, estimate_current};
use serde_json::json;
use strato_domain::catalog::Catalogs;
use strato_domain::model::CloudProvider;

fn fixture(name: &str) -> Value {
    let text = match name {
        "gcp" => include_str!("../fixtures/gcp-gke-basic.plan.json"),
        "azure" => include_str!("../fixtures/azure-aks-basic.plan.json"),
        "do" => include_str!("../fixtures/do-doks-basic.plan.json"),
        _ => include_str!("../fixtures/linode-lke-basic.plan.json"),
    };
    serde_json::from_str(text).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

fn monthly(e: &crate::cost::CostEstimate, address: &str) -> Option<f64> {
    e.resources
        .iter()
        .find(|r| r.address == address)
        .unwrap_or_else(|| panic!("{address} not in {e:#?}"))
        .monthly
}

#[test]
fn a_gke_plan_prices_the_management_fee_node_pool_and_nat_per_vm() {
    let e = estimate(&fixture("gcp"), "us-central1");
    assert_eq!(
        monthly(&e, "module.gcp-gke.google_container_cluster.this"),
        Some(73.0)
    );
    // 3 x (e2-standard-4 $0.134012/h x 730 h + 50 GB pd-balanced x $0.10).
    let pool = monthly(&e, "module.gcp-gke.google_container_node_pool.nodes").unwrap();
    assert!(close(pool, 3.0 * (0.134012 * 730.0 + 5.0)), "{pool}");
    // Cloud NAT: the node pool's 3 VMs x $0.0014/h.
    let nat = monthly(&e, "module.gcp-network.google_compute_router_nat.this[0]").unwrap();
    assert!(close(nat, 3.0 * 0.0014 * 730.0), "{nat}");
    assert_eq!(
        monthly(&e, "module.gcp-network.google_compute_network.this"),
        Some(0.0)
    );
    assert_eq!(
        e.not_estimated,
        ["google_dns_record_set.api"],
        "unknown types are listed, never zero"
    );
    assert!(close(e.total_monthly, 73.0 + pool + nat), "{}", e.total_monthly);
    assert!(
        e.price_table_source.starts_with("Google Cloud pricing"),
        "{}",
        e.price_table_source
    );
    let note = &e
        .resources
        .iter()
        .find(|r| r.resource_type == "google_container_cluster")
        .unwrap()
        .note;
    assert!(
        note.contains("regional cluster: the free tier does not apply"),
        "{note}"
    );
}

#[test]
fn an_aks_plan_prices_the_tier_nodes_and_disks_and_the_free_tier_is_free() {
    let plan = fixture("azure");
    let e = estimate(&plan, "eastus");
    // Standard tier $0.10/h + 3 x (Standard_D4s_v5 $0.192/h x 730 h + 50 GB OS disk as P6 $10.21).
    let cluster = monthly(&e, "module.azure-aks.azurerm_kubernetes_cluster.this").unwrap();
    assert!(close(cluster, 73.0 + 3.0 * (0.192 * 730.0 + 10.21)), "{cluster}");
    assert!(close(monthly(&e, "azurerm_public_ip.ingress").unwrap(), 3.65));
    assert_eq!(e.not_estimated, ["azurerm_log_analytics_workspace.logs"]);
    assert!(e.price_table_source.starts_with("Azure pricing"));

    let mut free = plan.clone();
    for rc in free["resource_changes"].as_array_mut().unwrap() {
        if rc["type"] == "azurerm_kubernetes_cluster" {
            rc["change"]["after"]["sku_tier"] = json!("Free");
        }
    }
    let e = estimate(&free, "eastus");
    let cluster = monthly(&e, "module.azure-aks.azurerm_kubernetes_cluster.this").unwrap();
    assert!(
        close(cluster, 3.0 * (0.192 * 730.0 + 10.21)),
        "Free tier: no control-plane charge: {cluster}"
    );

    // A region the table has no prices for: not estimated, never zero.
    let e = estimate(&plan, "westeurope");
    assert_eq!(
        monthly(&e, "module.azure-aks.azurerm_kubernetes_cluster.this"),
        None
    );
    assert!(
        e.not_estimated
            .contains(&"module.azure-aks.azurerm_kubernetes_cluster.this".to_owned())
    );
}

#[test]
fn a_doks_plan_prices_nodes_the_ha_control_plane_and_load_balancers() {
    let plan = fixture("do");
    let e = estimate(&plan, "fra1");
    // HA control plane $40 + 3 x s-4vcpu-8gb $48.
    assert_eq!(
        monthly(&e, "module.do-doks.digitalocean_kubernetes_cluster.this"),
        Some(184.0)
    );
    assert_eq!(monthly(&e, "digitalocean_loadbalancer.public"), Some(12.0));
    assert_eq!(monthly(&e, "module.do-doks.digitalocean_vpc.this"), Some(0.0));
    assert_eq!(e.not_estimated, ["digitalocean_spaces_bucket.backups"]);
    assert!(close(e.total_monthly, 196.0));

    // Turning HA on: the current side prices the cluster without it.
    let mut update = plan.clone();
    for rc in update["resource_changes"].as_array_mut().unwrap() {
        if rc["type"] == "digitalocean_kubernetes_cluster" {
            let mut before = rc["change"]["after"].clone();
            before["ha"] = json!(false);
            rc["change"]["before"] = before;
            rc["change"]["actions"] = json!(["update"]);
        }
    }
    let now = estimate_current(&update, "fra1");
    assert_eq!(
        monthly(&now, "module.do-doks.digitalocean_kubernetes_cluster.this"),
        Some(144.0)
    );
}

#[test]
fn an_lke_plan_prices_pools_and_the_ha_control_plane() {
    let e = estimate(&fixture("linode"), "eu-central");
    // HA control plane $60 + 3 x g6-standard-4 $48.
    assert_eq!(
        monthly(&e, "module.linode-lke.linode_lke_cluster.this"),
        Some(204.0)
    );
    assert_eq!(monthly(&e, "linode_nodebalancer.public"), Some(10.0));
    assert_eq!(monthly(&e, "module.linode-lke.linode_firewall.nodes"), Some(0.0));
    assert_eq!(e.not_estimated, ["linode_object_storage_bucket.backups"]);
    assert!(e.price_table_source.contains("Linode"));
}

#[test]
fn unknown_sizes_and_counts_are_not_estimated_never_zero() {
    let ctx = Context::default();
    let p = price(
        Cloud::Digitalocean,
        "digitalocean_kubernetes_cluster",
        "fra1",
        &json!({"node_pool": [{"size": "s-99vcpu", "node_count": 2}]}),
        &Value::Null,
        &ctx,
    );
    assert_eq!(p.0, None);
    assert!(p.1.contains("no price for Droplet size s-99vcpu"), "{}", p.1);
    let p = price(
        Cloud::Linode,
        "linode_lke_cluster",
        "eu-central",
        &json!({"pool": [{"type": "g6-standard-2"}]}),
        &json!({"pool": [{"count": true}]}),
        &ctx,
    );
    assert_eq!(p.0, None, "{}", p.1);
    // A regional pool without node_locations runs its count in each of the cluster's zones: not known here.
    let p = price(
        Cloud::Gcp,
        "google_container_node_pool",
        "us-central1",
        &json!({"node_count": 2, "node_config": [{"machine_type": "e2-standard-2"}]}),
        &Value::Null,
        &ctx,
    );
    assert_eq!(p.0, None, "{}", p.1);
    let p = price(
        Cloud::Gcp,
        "google_compute_router_nat",
        "us-central1",
        &json!({}),
        &Value::Null,
        &Context { gcp_vms: None },
    );
    assert_eq!(p.0, None, "{}", p.1);
    let p = price(
        Cloud::Gcp,
        "google_compute_router_nat",
        "us-central1",
        &json!({}),
        &Value::Null,
        &Context { gcp_vms: Some(40.0) },
    );
    assert!(
        close(p.0.unwrap(), 0.044 * 730.0),
        "more than 32 VMs: the flat rate"
    );
}

#[test]
fn every_catalog_size_has_a_price_and_every_table_names_its_date_and_source() {
    let t = CloudTables::builtin();
    let cats = Catalogs::builtin();
    let priced: [(CloudProvider, &BTreeMap<String, f64>); 4] = [
        (CloudProvider::Gcp, &t.gcp.machine_hourly),
        (CloudProvider::Azure, &t.azure.vm_hourly),
        (CloudProvider::Digitalocean, &t.digitalocean.droplet_monthly),
        (CloudProvider::Linode, &t.linode.plan_monthly),
    ];
    for (provider, prices) in priced {
        for it in &cats.get(provider).instance_types {
            assert!(
                prices.get(&it.name).is_some_and(|p| *p > 0.0),
                "{provider} {}",
                it.name
            );
        }
    }
    for region in t.gcp.regions.iter() {
        assert!(cats.get(CloudProvider::Gcp).region(region).is_some(), "{region}");
    }
    for region in t.azure.regions.iter() {
        assert!(
            cats.get(CloudProvider::Azure).region(region).is_some(),
            "{region}"
        );
    }
    for c in [Cloud::Gcp, Cloud::Azure, Cloud::Digitalocean, Cloud::Linode] {
        let (date, source, currency) = t.provenance(c);
        assert!(
            !date.is_empty() && !source.is_empty() && currency == "USD",
            "{c:?}"
        );
    }
}

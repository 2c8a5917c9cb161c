//! The Azure leg of `devstack_clouds` (it shares that test's stack): a tenant's Azure subscription reached by
//! a federated credential, the `azure-aks-standin` cluster created → ACTIVE → drift check → deleted with its
//! state in the tenant's Blob container, written by Terraform's real `azurerm` backend.

use serde_json::{Value, json};
use strato_devstack::client::Client;
use strato_testbed::{Azurite, FakeClouds};

use crate::devstack_clouds::{ISSUER, active_in, clean_drift_then_delete, resources};
use crate::devstack_support;

const ENTRA_TENANT: &str = "0f6b3c2e-4d1a-4b7e-9a35-1c2d3e4f5a60";
const APP: &str = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c10";
const SUBSCRIPTION: &str = "9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4";
const GROUP: &str = "acme-state";
const CONTAINER: &str = "tfstate";

pub(crate) async fn azure_lives_and_dies(
    stack: &strato_devstack::Devstack,
    clouds: &FakeClouds,
    az: &Azurite,
) {
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());
    // The tenant's side of the trust: an app whose federated credential trusts Strato's issuer for this
    // tenant's subjects (signatures checked against the stack's key), with a role on the subscription, and
    // the storage account Resource Manager knows in the state's resource group.
    clouds.knobs.trust_issuer(ISSUER);
    clouds.knobs.verify_with(stack.oidc_public_key().await.unwrap());
    clouds.knobs.azure_app(ENTRA_TENANT, APP, "tenant:acme:");
    clouds
        .knobs
        .azure_subscription(ENTRA_TENANT, SUBSCRIPTION, "acme-prod");
    clouds.knobs.azure_role(APP, SUBSCRIPTION);
    clouds.knobs.azure_storage_account(
        SUBSCRIPTION,
        GROUP,
        &az.account,
        &format!("{}/{}/", az.blob, az.account),
    );
    az.create_container(CONTAINER).unwrap_or_else(|e| panic!("{e}"));

    let request = |size: &str| {
        json!({
            "name": "azure-life",
            "template": {"name": "azure-aks-standin", "version": "1.0.0"},
            "provider": "azure", "region": "eastus",
            "variables": {"node_count": 2, "node_instance_type": size},
            "target": {"provider": "azure", "tenant_id": ENTRA_TENANT, "client_id": APP,
                "subscription_id": SUBSCRIPTION, "state_storage_account": az.account,
                "state_container": CONTAINER, "state_resource_group": GROUP},
        })
    };
    // Validated as azure-aks-basic is: a Google Cloud size names the field and its cloud.
    let r = api.post("/v1/clusters", &request("e2-standard-2")).await.unwrap();
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.text.contains("node_instance_type") && r.text.contains("gcp"),
        "{}",
        r.text
    );

    let before = clouds.knobs.calls().len();
    let (cluster, create, _) = api.create_cluster(&request("Standard_D2s_v5")).await.unwrap();
    let w = devstack_support::follow(stack, &token, &create).await;
    let said: Vec<&str> = w.lines.values().map(|l| l.text.as_str()).collect();
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{said:#?}");
    let calls = clouds.knobs.calls()[before..].to_vec();
    // (A client may double the slash after a base URL; the fake answers either.)
    let entra = format!("/{ENTRA_TENANT}/oauth2/v2.0/token");
    let exchanges = calls
        .iter()
        .filter(|c| c.starts_with("POST /") && c.ends_with(&entra))
        .count();
    // The preflight's exchange and the engine's own (Resource Manager's token and Storage's, from the
    // token file the runner gave it): only a valid federated assertion gets either.
    assert!(
        exchanges >= 3,
        "the run's tokens were exchanged at Entra ID: {calls:?}"
    );
    let lookup = format!(
        "/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.Storage/storageAccounts/{}",
        az.account
    );
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("GET /") && c.ends_with(&lookup)),
        "the backend asked Resource Manager for the account's blob endpoint: {calls:?}"
    );
    active_in(&api, &cluster, "eastus").await;

    // The state is a blob of the tenant's container, with its nodes; its lease (the lock) released.
    let blob = format!("/{CONTAINER}/tenants/acme/clusters/{cluster}/cluster.tfstate");
    let read_state = || {
        let a = az.call("GET", &blob).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.status, 200, "{blob}: {}", a.body);
        assert_eq!(
            a.header("x-ms-lease-state"),
            Some("available"),
            "the lease is released: {:?}",
            a.headers
        );
        serde_json::from_str::<Value>(&a.body).unwrap()
    };
    assert_eq!(resources(&read_state()), 3, "control plane + 2 nodes");
    let ours = stack
        .env
        .aws
        .s3
        .list_objects_v2()
        .bucket(stack.env.names.bucket("state"))
        .prefix(format!("tenants/acme/clusters/{cluster}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(ours.key_count(), Some(0), "{ours:?}");
    let r = api
        .get(&format!("/v1/clusters/{cluster}/state-versions"))
        .await
        .unwrap();
    // Listed from the record runs keep: on this emulated cloud the run does not list (the account's blob
    // endpoint is only named by Resource Manager, and Azurite keeps no blob versions), so the answer is an
    // empty list saying where the state is and how to list it there.
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.body["source"]["storage"]
            .as_str()
            .unwrap_or_default()
            .contains(&az.account),
        "{}",
        r.text
    );
    assert_eq!(
        r.body["source"]["listed_at"],
        serde_json::Value::Null,
        "{}",
        r.text
    );
    assert_eq!(r.body["items"], serde_json::json!([]), "{}", r.text);

    let w2 = clean_drift_then_delete(stack, &api, &token, &cluster).await;
    assert_eq!(resources(&read_state()), 0);
    // No identity or access token reached a log line (a JWT starts with its header's base64 `eyJ`).
    for l in w.lines.values().chain(w2.lines.values()) {
        assert!(!l.text.contains("eyJ"), "{}", l.text);
    }
    println!(
        "azure: {exchanges} token exchanges at the emulated Entra ID during the create, the state in {}/{CONTAINER}",
        az.account
    );
}

//! A tenant's target on another cloud, through devstack's public endpoints only: the `do-doks-standin`,
//! `linode-lke-standin`, `gcp-gke-standin` and `azure-aks-standin` templates (the basic templates' requests
//! and validation, played by the null provider on the modern engine) created → ACTIVE with their outputs →
//! drift check (clean) → deleted, each cluster's state in the tenant's own storage, never in Strato's.
//!
//! - DigitalOcean and Linode: the tenant's API token and object storage key registered through the API,
//!   checked by the runner's preflight against the clouds' account endpoints (FakeClouds); the state in an
//!   S3-compatible bucket (moto plays Spaces and Linode Object Storage: path-style, `use_lockfile`, no lock
//!   table).
//! - GCP: no key at all. The stack is an OIDC issuer (its signing key on moto's KMS); the dispatcher mints
//!   each stage's identity token, the runner's preflight exchanges it at Google's STS and impersonates the
//!   tenant's service account (FakeClouds, checking the token's issuer, audience and RS256 signature against
//!   the stack's public key, the pool's attribute condition and the account's binding), and Terraform's own
//!   `gcs` backend does the same exchange from the run's `external_account` file before it reads, locks and
//!   writes the state in the tenant's Cloud Storage bucket (fake-gcs-server, versioned).
//!
//! - Azure (`azure-aks-standin`): no key either. The preflight and Terraform's own `azurerm` backend exchange
//!   the stage's token (the file `ARM_OIDC_TOKEN_FILE_PATH` names) at Entra ID for the tenant's app
//!   (FakeClouds, checking issuer, audience `api://AzureADTokenExchange`, subject and signature as a
//!   federated credential does); the backend finds Entra ID and Resource Manager through the emulated
//!   cloud's metadata endpoint (`metadata_host`), asks Resource Manager for the storage account's blob
//!   endpoint (`lookup_blob_endpoint`: Azurite's, since nothing answers `<account>.blob.core.windows.net`)
//!   and reads, leases and writes the state blob in the tenant's container (Azurite, Entra ID tokens over
//!   https). Skipped loudly where Node.js/npm or openssl is absent.
//!
//! Skipped loudly where the modern engine is absent (the S3 backend's lock file needs Terraform 1.10).

use crate::devstack_clouds_state as state;
use crate::devstack_support;

use std::time::Duration;

use serde_json::{Value, json};
use strato_devstack::client::Client;
use strato_devstack::demo_cloud::{self, TokenCloud};
use strato_testbed::{
    Azurite, FakeClouds, FakeGcs, TestEngine, azure_bed, cloud_bed, modern_engine_or_skip,
    stand_in_cli_config,
};

/// The token clouds, as their tenant asks for a cluster there (the demo's other cloud is the first).
const CLOUDS: [&TokenCloud; 2] = [&demo_cloud::DIGITALOCEAN, &demo_cloud::LINODE];

#[tokio::test(flavor = "multi_thread")]
async fn digitalocean_linode_gcp_and_azure_stand_ins_live_and_die_with_their_state_in_the_tenants_storage() {
    let Some(modern) = modern_engine_or_skip("devstack_clouds") else {
        return;
    };
    let bed = tokio::task::spawn_blocking(cloud_bed)
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("installing the cloud bed: {e}"));
    let cli = stand_in_cli_config(modern, bed).unwrap_or_else(|e| panic!("{e}"));
    let standins = devstack_support::workspace().join("templates/standins");
    // The clouds' account endpoints, which the runner's preflight asks with the tenant's token.
    let clouds = FakeClouds::start().await.unwrap();
    clouds.knobs.digitalocean_token(CLOUDS[0].token);
    clouds.knobs.linode_token(CLOUDS[1].token);
    // The GCP tenant's Cloud Storage.
    let gcs = FakeGcs::start(bed).unwrap_or_else(|e| panic!("{e}"));
    // The Azure tenant's storage account, with the emulated cloud's metadata endpoint in front of FakeClouds.
    let arm = clouds.base_url.clone();
    let azure = tokio::task::spawn_blocking(move || match azure_bed() {
        Ok(b) => Some(Azurite::start(b, AZURE_ACCOUNT, &arm).unwrap_or_else(|e| panic!("{e}"))),
        Err(why) => {
            println!("SKIPPED the Azure leg of devstack_clouds: {why}");
            None
        }
    })
    .await
    .unwrap();
    let base = devstack_support::config("cl").await;
    let mut runner_env = clouds.runner_env();
    runner_env.extend([
        ("STRATO_GCS_ENDPOINT".into(), gcs.endpoint()),
        // The bed's null provider beside the machine's AWS mirror.
        ("TF_CLI_CONFIG_FILE".into(), cli.display().to_string()),
    ]);
    if let Some(az) = &azure {
        runner_env.extend([
            ("STRATO_AZURE_METADATA_HOST".into(), az.metadata_host.clone()),
            // The engine (Go) trusts the emulated cloud's certificate; nothing else it calls is https.
            ("SSL_CERT_FILE".into(), az.ca_file.display().to_string()),
        ]);
    }
    let stack = devstack_support::start(strato_devstack::DevstackConfig {
        extra_templates: CLOUDS
            .iter()
            .map(|c| c.template)
            .chain(["gcp-gke-standin", "azure-aks-standin"])
            .map(|t| (standins.join(t), standins.join("modules")))
            .collect(),
        engine: Some(TestEngine::modern(modern)),
        oidc_issuer: Some(ISSUER.into()),
        // Spaces and Linode Object Storage are moto here; the engine reaches it path-style.
        s3_compatible_on_emulator: true,
        runner_env,
        ..base
    })
    .await;
    for cloud in CLOUDS {
        lives_and_dies(&stack, &clouds, cloud).await;
    }
    gcp_lives_and_dies(&stack, &clouds, &gcs).await;
    if let Some(az) = &azure {
        crate::devstack_clouds_azure::azure_lives_and_dies(&stack, &clouds, az).await;
    }
}

/// The Azure tenant's storage account (Azurite serves it).
const AZURE_ACCOUNT: &str = "acmeakstfstate";

/// The stack's OIDC issuer: a name the emulated cloud trusts (nothing fetches its discovery document).
pub(crate) const ISSUER: &str = "https://devstack.strato.invalid";

/// A GCP project reached by workload identity federation, its state in the tenant's Cloud Storage bucket.
async fn gcp_lives_and_dies(stack: &strato_devstack::Devstack, clouds: &FakeClouds, gcs: &FakeGcs) {
    const PROVIDER: &str = "projects/123/locations/global/workloadIdentityPools/strato/providers/oidc";
    const ACCOUNT: &str = "terraform@acme-prod-1.iam.gserviceaccount.com";
    const BUCKET: &str = "acme-gke-tfstate";
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());
    // The tenant's side of the trust: the pool's provider trusts Strato's issuer for this tenant's tokens
    // (checked against the stack's signing key), and the service account lets the pool's principals in.
    clouds.knobs.trust_issuer(ISSUER);
    clouds.knobs.verify_with(stack.oidc_public_key().await.unwrap());
    clouds.knobs.gcp_provider(PROVIDER, "acme");
    clouds.knobs.gcp_impersonation(ACCOUNT, "acme");
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{}/storage/v1/b?project=acme-prod-1", gcs.base))
        .json(&json!({"name": BUCKET, "versioning": {"enabled": true}}))
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "{:?}", created.status());

    let request = |size: &str| {
        json!({
            "name": "gcp-life",
            "template": {"name": "gcp-gke-standin", "version": "1.0.0"},
            "provider": "gcp", "region": "us-central1",
            "variables": {"node_count": 2, "node_instance_type": size},
            "target": {"provider": "gcp", "project_id": "acme-prod-1",
                "workload_identity_provider": PROVIDER, "service_account": ACCOUNT, "state_bucket": BUCKET},
        })
    };
    // Validated as gcp-gke-basic is: a DigitalOcean size names the field and its cloud.
    let r = api.post("/v1/clusters", &request("s-2vcpu-4gb")).await.unwrap();
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.text.contains("node_instance_type") && r.text.contains("digitalocean"),
        "{}",
        r.text
    );

    let (cluster, create, _) = api.create_cluster(&request("e2-standard-2")).await.unwrap();
    let w = devstack_support::follow(stack, &token, &create).await;
    let said: Vec<&str> = w.lines.values().map(|l| l.text.as_str()).collect();
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{said:#?}");
    let calls = clouds.knobs.calls();
    // The preflight's exchange, then the engine's own (each Terraform command exchanges the stage's token
    // from its external_account file before it touches the state).
    let exchanges = calls.iter().filter(|c| *c == "POST /v1/token").count();
    assert!(exchanges >= 2, "the run's tokens were exchanged: {calls:?}");
    assert!(
        calls.iter().any(|c| c.contains(":generateAccessToken")),
        "the tenant's service account impersonated: {calls:?}"
    );
    active_in(&api, &cluster, "us-central1").await;

    // The state is in the tenant's bucket, written by the gcs backend; its lock released.
    let prefix = format!("tenants/acme/clusters/{cluster}/cluster");
    let object = |name: &str| {
        format!(
            "{}/storage/v1/b/{BUCKET}/o/{}",
            gcs.base,
            name.replace('/', "%2F")
        )
    };
    let state_name = format!("{prefix}/default.tfstate");
    let read_state = || async {
        let r = http
            .get(format!("{}?alt=media", object(&state_name)))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{state_name}: {}", r.status());
        r.json::<Value>().await.unwrap()
    };
    assert_eq!(resources(&read_state().await), 3, "control plane + 2 nodes");
    let lock = http
        .get(object(&format!("{prefix}/default.tflock")))
        .send()
        .await
        .unwrap();
    assert_eq!(lock.status(), 404, "the lock is released after the run");
    // The versions in the tenant's bucket, as the create's run listed them; an update writes another; the
    // older one restored by a restore-state run is the current object again, byte for byte.
    state::listed_by(
        &api,
        &cluster,
        &format!("Cloud Storage bucket {BUCKET}"),
        Some(&create),
        1,
    )
    .await;
    let update = state::updated(&api, &cluster, 3).await;
    assert_eq!(resources(&read_state().await), 4, "control plane + 3 nodes");
    let listing = state::listed_by(&api, &cluster, BUCKET, Some(&update), 2).await;
    let chosen = state::older(&listing);
    let bytes = |url: String| {
        let http = http.clone();
        async move {
            let r = http.get(url).send().await.unwrap();
            assert!(r.status().is_success(), "{}", r.status());
            r.bytes().await.unwrap()
        }
    };
    let chosen_bytes = bytes(format!("{}?alt=media&generation={chosen}", object(&state_name))).await;
    state::restored(&api, &cluster, &listing, &chosen).await;
    let current = bytes(format!("{}?alt=media", object(&state_name))).await;
    assert_eq!(current, chosen_bytes, "generation {chosen} is current again");

    let w2 = clean_drift_then_delete(stack, &api, &token, &cluster).await;
    assert_eq!(resources(&read_state().await), 0);
    // Every write kept as a version of the object (the bucket is versioned).
    let versions: Value = http
        .get(format!(
            "{}/storage/v1/b/{BUCKET}/o?versions=true&prefix={}",
            gcs.base,
            state_name.replace('/', "%2F")
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let n = versions["items"].as_array().map_or(0, Vec::len);
    assert!(n >= 2, "every write kept: {versions}");
    // No identity token reached a log line (a JWT starts with its header's base64 `eyJ`).
    for l in w.lines.values().chain(w2.lines.values()) {
        assert!(!l.text.contains("eyJ"), "{}", l.text);
    }
    println!(
        "gcp: {exchanges} token exchanges at the emulated STS during the create, {n} versions of the state in gs://{BUCKET}"
    );
}

async fn lives_and_dies(stack: &strato_devstack::Devstack, clouds: &FakeClouds, cloud: &TokenCloud) {
    let token = stack.token("acme");
    let api = Client::new(&stack.endpoints.http_api).with_token(token.clone());

    // The tenant's own bucket (it exists before Strato is asked to use it), versioned.
    let bucket = demo_cloud::tenant_bucket(stack, cloud).await.unwrap();
    // The token and the object storage key, registered once and never shown again (the answer repeats
    // neither: checked by register_token).
    let r = demo_cloud::register_token(&api, cloud).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text);

    // Validated as the real template is: a size of another cloud names the field and its cloud.
    let name = format!("{}-life", cloud.provider);
    let r = demo_cloud::refused_foreign_size(&api, cloud, &name, &bucket)
        .await
        .unwrap();
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.text.contains("node_instance_type") && r.text.contains("gcp"),
        "{}",
        r.text
    );

    let spec = demo_cloud::request(cloud, &name, &bucket, cloud.size);
    let created = demo_cloud::create_active(stack, &api, &spec, |_, _, _| {})
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (cluster, w) = (created.cluster, created.create);
    let said: Vec<&str> = w.lines.values().map(|l| l.text.as_str()).collect();
    assert_eq!(w.final_status.as_deref(), Some("succeeded"), "{said:#?}");
    assert!(
        said.iter()
            .any(|l| l.contains(&format!("state in your bucket {bucket}"))),
        "{said:#?}"
    );
    assert!(
        clouds.knobs.calls().iter().any(|c| c == cloud.account_call),
        "the token was checked before the engine ran"
    );
    active_in(&api, &cluster, cloud.region).await;

    // The state is in the tenant's bucket, with its nodes; Strato's own bucket has none of it.
    let key = demo_cloud::state_key("acme", &cluster);
    let state = demo_cloud::state_in(stack, &bucket, &key).await.unwrap();
    assert_eq!(resources(&state), 3, "control plane + 2 nodes: {state}");
    let ours = demo_cloud::in_strato_bucket(stack, "acme", &cluster)
        .await
        .unwrap();
    assert_eq!(ours, 0);
    // Its versions are listed where they are (by the create's run), not read as "none" from Strato's
    // bucket; an update writes another; the older one restored is the current object again, byte for byte.
    state::listed_by(&api, &cluster, &format!("bucket {bucket}"), None, 1).await;
    let update = state::updated(&api, &cluster, 3).await;
    let listing = state::listed_by(&api, &cluster, &bucket, Some(&update), 2).await;
    let chosen = state::older(&listing);
    let chosen_bytes = state::s3_bytes(stack, &bucket, &key, Some(&chosen)).await;
    state::restored(&api, &cluster, &listing, &chosen).await;
    let current = state::s3_bytes(stack, &bucket, &key, None).await;
    assert_eq!(current, chosen_bytes, "version {chosen} is current again");

    let w2 = clean_drift_then_delete(stack, &api, &token, &cluster).await;
    let state = demo_cloud::state_in(stack, &bucket, &key).await.unwrap();
    assert_eq!(resources(&state), 0, "{state}");
    let versions = demo_cloud::versions_of(stack, &bucket, &key).await.unwrap();
    assert!(versions >= 2, "every write kept: {versions} versions");

    // Neither secret reached a log line.
    for l in w.lines.values().chain(w2.lines.values()) {
        assert!(
            !l.text.contains(cloud.token) && !l.text.contains(cloud.secret),
            "{}",
            l.text
        );
    }
}

/// The cluster reaches ACTIVE with its API endpoint (https, in `region`) among its outputs.
pub(crate) async fn active_in(api: &Client, cluster: &str, region: &str) {
    let c = api
        .wait_cluster_state(cluster, &["ACTIVE"], Duration::from_secs(60))
        .await
        .unwrap();
    let endpoint = c["outputs"]["cluster_endpoint"].as_str().unwrap_or_default();
    assert!(
        endpoint.starts_with("https://") && endpoint.contains(region),
        "{c}"
    );
}

/// A drift check finds nothing; then the cluster is deleted. The delete's log, as followed.
pub(crate) async fn clean_drift_then_delete(
    stack: &strato_devstack::Devstack,
    api: &Client,
    _token: &str,
    cluster: &str,
) -> strato_devstack::client::Watched {
    let (drift, w) = demo_cloud::drift_then_delete(stack, api, cluster, |_, _, _| {})
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(drift["drifted"], false, "{drift}");
    assert_eq!(w.final_status.as_deref(), Some("succeeded"));
    w
}

/// Resource instances in a state document.
pub(crate) use strato_devstack::demo_cloud::resources;

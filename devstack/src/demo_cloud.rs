//! A cluster on a cloud without identity federation (DigitalOcean, Linode) through its life, as its tenant
//! does it through the HTTP API: the cloud's API token and object-storage key registered (never shown again),
//! a request validated as the real template's is (a size of another cloud is a 422), create → ACTIVE with
//! outputs, the Terraform state in the tenant's own bucket (never in Strato's), drift check, delete.
//!
//! The templates are the stand-ins (`templates/standins/`): the basic templates' requests and validation
//! played by the null provider, so nothing is created in any cloud. The clouds' account endpoints the
//! runner's preflight asks with the token are [`FakeClouds`]; the tenant's Spaces / Object Storage bucket is
//! the emulator's S3 (path-style, state locked by a lock file, which needs Terraform ≥ 1.10).
//!
//! Used by the demo (its DigitalOcean step, [`prepare`] + [`tour`]) and by the devstack clouds test, which
//! takes DigitalOcean and Linode through the same steps and checks each one.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use strato_testbed::FakeClouds;

use crate::DevstackConfig;
use crate::client::{ApiResponse, Client, DemoError, Watched, watch_operation};

/// One cloud whose runs get the tenant's API token (no federation), as its tenant asks for a cluster there.
#[derive(Debug)]
pub struct TokenCloud {
    pub provider: &'static str,
    pub template: &'static str,
    pub region: &'static str,
    pub size: &'static str,
    /// A node size of another cloud (GCP's), which the API refuses naming the field and that cloud.
    pub foreign_size: &'static str,
    /// The tenant's API token (a made-up one the emulated cloud accepts).
    pub token: &'static str,
    pub key_id: &'static str,
    pub secret: &'static str,
    /// The call the runner's preflight makes with the token, as [`FakeClouds`] records it.
    pub account_call: &'static str,
}

pub const DIGITALOCEAN: TokenCloud = TokenCloud {
    provider: "digitalocean",
    template: "do-doks-standin",
    region: "fra1",
    size: "s-2vcpu-4gb",
    foreign_size: "e2-standard-4",
    token: "dop_v1_devstack0123456789abcdef0123456789abcdef0123456789",
    key_id: "DO00DEVSTACKKEY00001",
    secret: "spaces/devstack-secret-0123456789abcdefghij",
    account_call: "GET /v2/account",
};

pub const LINODE: TokenCloud = TokenCloud {
    provider: "linode",
    template: "linode-lke-standin",
    region: "eu-central",
    size: "g6-standard-2",
    foreign_size: "e2-standard-4",
    token: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    key_id: "LINODEDEVSTACKKEY001",
    secret: "linode-obj/devstack-secret-0123456789abcdef",
    account_call: "GET /v4/profile",
};

const OP_TIMEOUT: Duration = Duration::from_secs(240);

/// The stand-in templates' folder and its modules, as [`DevstackConfig::extra_templates`] takes them.
pub fn standin(template: &str) -> (PathBuf, PathBuf) {
    let root = crate::stack::workspace_root().join("templates/standins");
    (root.join(template), root.join("modules"))
}

/// Readies `config` for `clouds` ([`tour`], or a tenant by hand on `up`): the machine's modern engine (the
/// S3-compatible backend locks by lock file, Terraform ≥ 1.10) with the null provider beside its AWS
/// mirror, each cloud's stand-in template, the emulated clouds' account endpoints (returned: keep them for
/// the stack's life) accepting each cloud's token, and the tenants' object storage on the stack's emulator.
/// `Err`: why not here, for the caller to say so and go on; `config` is then unchanged.
pub async fn prepare(config: &mut DevstackConfig, clouds: &[&TokenCloud]) -> Result<FakeClouds, String> {
    let modern = match std::env::var_os("STRATO_TERRAFORM").filter(|v| !v.is_empty()) {
        Some(user) => strato_testbed::modern_engine_at(PathBuf::from(user)).map_err(|e| {
            format!("STRATO_TERRAFORM is not Terraform ≥ 1.10 with an AWS provider mirror: {e}")
        })?,
        None => strato_testbed::modern_engine()
            .map_err(|e| format!("no Terraform ≥ 1.10 on this machine: {e}"))?
            .clone(),
    };
    if !at_least_1_10(&modern.version) {
        return Err(format!(
            "the engine is Terraform {}; the state in an S3-compatible bucket is locked by a lock file, \
             which needs 1.10 or later",
            modern.version
        ));
    }
    let bed = tokio::task::spawn_blocking(strato_testbed::cloud_bed)
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("installing the null provider: {e}"))?;
    let cli = strato_testbed::stand_in_cli_config(&modern, bed)?;
    let fake = FakeClouds::start()
        .await
        .map_err(|e| format!("starting the emulated cloud endpoints: {e}"))?;
    for cloud in clouds {
        match cloud.provider {
            "linode" => fake.knobs.linode_token(cloud.token),
            _ => fake.knobs.digitalocean_token(cloud.token),
        }
        config.extra_templates.push(standin(cloud.template));
    }
    config.engine = Some(strato_testbed::TestEngine::modern(&modern));
    config.s3_compatible_on_emulator = true;
    config.runner_env.extend(fake.runner_env());
    config
        .runner_env
        .push(("TF_CLI_CONFIG_FILE".into(), cli.display().to_string()));
    Ok(fake)
}

fn at_least_1_10(version: &str) -> bool {
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 10)
}

/// The tenant's own bucket, versioned, as the tenant makes it in its cloud account before asking Strato to
/// keep state there (the emulator's S3 plays Spaces / Object Storage).
pub async fn tenant_bucket(stack: &crate::Devstack, cloud: &TokenCloud) -> Result<String, DemoError> {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    let bucket = format!("{}-{}", stack.env.names.prefix(), cloud.provider);
    let s3 = &stack.env.aws.s3;
    let failed = |e: String| DemoError::Failed(format!("creating the bucket {bucket}: {e}"));
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .map_err(|e| failed(format!("{e:?}")))?;
    s3.put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .map_err(|e| failed(format!("{e:?}")))?;
    Ok(bucket)
}

/// `PUT /v1/tenant/cloud-tokens/{provider}`: the token and the object storage key pair. The answer must
/// not repeat either secret.
pub async fn register_token(api: &Client, cloud: &TokenCloud) -> Result<ApiResponse, DemoError> {
    let body = json!({"token": cloud.token, "storage_access_key_id": cloud.key_id,
        "storage_secret_access_key": cloud.secret});
    let path = format!("/v1/tenant/cloud-tokens/{}", cloud.provider);
    let r = api.request(reqwest::Method::PUT, &path, Some(&body)).await?;
    if r.status != 200 {
        return Err(DemoError::Failed(format!("PUT {path}: {} {}", r.status, r.text)));
    }
    if r.text.contains(cloud.token) || r.text.contains(cloud.secret) {
        return Err(DemoError::Failed(format!("PUT {path} showed a secret back")));
    }
    Ok(r)
}

/// The create request of a cluster `name` of `size` with its state in `bucket`.
pub fn request(cloud: &TokenCloud, name: &str, bucket: &str, size: &str) -> Value {
    json!({
        "name": name,
        "template": {"name": cloud.template, "version": "1.0.0"},
        "provider": cloud.provider, "region": cloud.region,
        "variables": {"node_count": 2, "node_instance_type": size},
        "target": {"provider": cloud.provider, "state_bucket": bucket, "state_region": cloud.region},
    })
}

/// The request with another cloud's node size: the answer, which must be a 422.
pub async fn refused_foreign_size(
    api: &Client,
    cloud: &TokenCloud,
    name: &str,
    bucket: &str,
) -> Result<ApiResponse, DemoError> {
    let r = api
        .post("/v1/clusters", &request(cloud, name, bucket, cloud.foreign_size))
        .await?;
    if r.status != 422 {
        return Err(DemoError::Failed(format!(
            "a {} size for {} was answered {}: {}",
            cloud.foreign_size, cloud.provider, r.status, r.text
        )));
    }
    Ok(r)
}

/// A created and ACTIVE cluster.
#[derive(Debug)]
pub struct Created {
    pub cluster: String,
    /// The create's log and status frames as the WebSocket delivered them (every line).
    pub create: Watched,
    /// `GET /v1/clusters/{id}` once ACTIVE (its outputs).
    pub item: Value,
}

/// Creates the cluster, follows the create over the WebSocket (`on_status` sees each status frame) and
/// waits for ACTIVE.
pub async fn create_active(
    stack: &crate::Devstack,
    api: &Client,
    spec: &Value,
    on_status: impl FnMut(&str, &str, Option<&str>),
) -> Result<Created, DemoError> {
    let (cluster, op, _) = api.create_cluster(spec).await?;
    let create = follow(stack, api, &op, on_status).await?;
    if create.final_status.as_deref() != Some("succeeded") {
        let tail: Vec<&str> = create
            .lines
            .values()
            .rev()
            .take(20)
            .map(|l| l.text.as_str())
            .collect();
        return Err(DemoError::Failed(format!(
            "the create ended {:?}; its last lines: {tail:#?}",
            create.final_status
        )));
    }
    let item = api
        .wait_cluster_state(&cluster, &["ACTIVE", "FAILED"], Duration::from_secs(60))
        .await?;
    if item["state"] != "ACTIVE" {
        return Err(DemoError::Failed(format!(
            "the cluster is {}: {}",
            item["state"], item["last_error"]
        )));
    }
    Ok(Created {
        cluster,
        create,
        item,
    })
}

/// Follows an operation to its end over the WebSocket; an error unless every line arrived.
async fn follow(
    stack: &crate::Devstack,
    api: &Client,
    op: &str,
    on_status: impl FnMut(&str, &str, Option<&str>),
) -> Result<Watched, DemoError> {
    let ws = stack
        .endpoints
        .websocket
        .clone()
        .ok_or_else(|| DemoError::Failed("the stack has no WebSocket API".into()))?;
    let w = watch_operation(api, &ws, op, Duration::from_secs(600), |_| {}, on_status).await?;
    if !w.complete() || w.last_seq == 0 {
        return Err(DemoError::Failed(format!(
            "operation {op}: lines 1..={} did not all arrive",
            w.last_seq
        )));
    }
    Ok(w)
}

/// The state document `key` in the tenant's `bucket`.
pub async fn state_in(stack: &crate::Devstack, bucket: &str, key: &str) -> Result<Value, DemoError> {
    let failed = |e: String| DemoError::Failed(format!("reading {bucket}/{key}: {e}"));
    let o = stack
        .env
        .aws
        .s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| failed(format!("{e:?}")))?;
    let bytes = o
        .body
        .collect()
        .await
        .map_err(|e| failed(e.to_string()))?
        .into_bytes();
    serde_json::from_slice(&bytes).map_err(|e| failed(e.to_string()))
}

/// Where a cluster's state is in a tenant's bucket.
pub fn state_key(tenant: &str, cluster: &str) -> String {
    format!("tenants/{tenant}/clusters/{cluster}/cluster.tfstate")
}

/// Resource instances in a state document.
pub fn resources(state: &Value) -> usize {
    state["resources"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| r["instances"].as_array().map_or(0, Vec::len))
                .sum()
        })
        .unwrap_or(0)
}

/// How many objects of the cluster Strato's own state bucket holds (none, when the tenant keeps its state).
pub async fn in_strato_bucket(
    stack: &crate::Devstack,
    tenant: &str,
    cluster: &str,
) -> Result<i32, DemoError> {
    let r = stack
        .env
        .aws
        .s3
        .list_objects_v2()
        .bucket(stack.env.names.bucket("state"))
        .prefix(format!("tenants/{tenant}/clusters/{cluster}/"))
        .send()
        .await
        .map_err(|e| DemoError::Failed(format!("listing Strato's state bucket: {e:?}")))?;
    Ok(r.key_count().unwrap_or(0))
}

/// The versions of `key` the tenant's versioned bucket keeps.
pub async fn versions_of(stack: &crate::Devstack, bucket: &str, key: &str) -> Result<usize, DemoError> {
    let r = stack
        .env
        .aws
        .s3
        .list_object_versions()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .map_err(|e| DemoError::Failed(format!("listing the versions in {bucket}: {e:?}")))?;
    Ok(r.versions().len())
}

/// A drift check (its result: the cluster's `drift`), then the delete, followed to DELETED.
pub async fn drift_then_delete(
    stack: &crate::Devstack,
    api: &Client,
    cluster: &str,
    mut on_status: impl FnMut(&str, &str, Option<&str>),
) -> Result<(Value, Watched), DemoError> {
    let r = api
        .post(&format!("/v1/clusters/{cluster}/drift-check"), &json!({}))
        .await?;
    let check = r.body["operation"]["id"].as_str().unwrap_or_default().to_owned();
    if r.status != 202 || check.is_empty() {
        return Err(DemoError::Failed(format!("drift check refused: {}", r.text)));
    }
    let done = api.wait_operation(&check, OP_TIMEOUT).await?;
    if done["status"] != "succeeded" {
        return Err(DemoError::Failed(format!("the drift check ended: {done}")));
    }
    let drift = api.get(&format!("/v1/clusters/{cluster}")).await?.body["drift"].clone();
    let r = api.delete(&format!("/v1/clusters/{cluster}")).await?;
    let del = r.body["operation"]["id"].as_str().unwrap_or_default().to_owned();
    if r.status != 202 || del.is_empty() {
        return Err(DemoError::Failed(format!("delete refused: {}", r.text)));
    }
    let w = follow(stack, api, &del, &mut on_status).await?;
    if w.final_status.as_deref() != Some("succeeded") {
        return Err(DemoError::Failed(format!(
            "the delete ended {:?}",
            w.final_status
        )));
    }
    let c = api
        .wait_cluster_state(cluster, &["DELETED", "FAILED"], Duration::from_secs(60))
        .await?;
    if c["state"] != "DELETED" {
        return Err(DemoError::Failed(format!(
            "the cluster is {}: {}",
            c["state"], c["last_error"]
        )));
    }
    Ok((drift, w))
}

/// The demo's step on another cloud: `cloud`'s stand-in through its life for `tenant`, told as it goes;
/// returns the summary's lines. `by_hand` prints the `strato` command of a step.
pub async fn tour(
    stack: &crate::Devstack,
    tenant: &str,
    cloud: &TokenCloud,
    by_hand: &dyn Fn(&str),
) -> Result<Vec<String>, DemoError> {
    let api = Client::new(&stack.endpoints.http_api).with_token(stack.token(tenant));
    let state = |cs: &str, os: &str, m: Option<&str>| {
        println!(
            "  ◆ cluster {cs}, operation {os}{}",
            m.map(|m| format!(" — {m}")).unwrap_or_default()
        );
    };
    let bucket = tenant_bucket(stack, cloud).await?;
    println!(
        "  your {} bucket {bucket} (versioned) will hold the state; the API token and the bucket's key are \
         registered once and never shown again",
        cloud.provider
    );
    register_token(&api, cloud).await?;
    by_hand(&format!(
        "cloud-tokens set {} --storage-access-key-id {}   (token and secret read from stdin)",
        cloud.provider, cloud.key_id
    ));
    let name = format!("demo-{}", cloud.provider);
    let r = refused_foreign_size(&api, cloud, &name, &bucket).await?;
    let e = &r.body["errors"][0];
    println!(
        "  a GCP size ({}) is refused before Terraform: {} — {}: {}",
        cloud.foreign_size,
        r.status,
        e["field"].as_str().unwrap_or("?"),
        e["problem"].as_str().unwrap_or(&r.text)
    );
    let spec = request(cloud, &name, &bucket, cloud.size);
    let c = create_active(stack, &api, &spec, state).await?;
    by_hand(&format!(
        "clusters create {name} -t {}@1.0.0 --provider {} --region {} --var node_instance_type={} \
         --target-state-bucket {bucket} --target-region {} --wait",
        cloud.template, cloud.provider, cloud.region, cloud.size, cloud.region
    ));
    let endpoint = c.item["outputs"]["cluster_endpoint"].as_str().unwrap_or_default();
    println!("  ACTIVE, cluster_endpoint = {endpoint}");
    let key = state_key(tenant, &c.cluster);
    let held = resources(&state_in(stack, &bucket, &key).await?);
    let ours = in_strato_bucket(stack, tenant, &c.cluster).await?;
    println!(
        "  state: s3://{bucket}/{key}, {held} resources; Strato's own state bucket holds {ours} objects of it"
    );
    if held == 0 || ours != 0 {
        return Err(DemoError::Failed(format!(
            "the state is not where the tenant asked: {held} resources in {bucket}, {ours} objects in Strato's"
        )));
    }
    let (drift, _) = drift_then_delete(stack, &api, &c.cluster, state).await?;
    let versions = versions_of(stack, &bucket, &key).await?;
    println!(
        "  drift check: drifted = {}; deleted; {versions} versions of the state kept in {bucket}",
        drift["drifted"]
    );
    by_hand(&format!("clusters delete {} --wait", c.cluster));
    Ok(vec![format!(
        "{}: {} ACTIVE → drift check → DELETED, the state in the tenant's bucket ({versions} versions)",
        cloud.provider, cloud.template
    )])
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_lock_file_needs_terraform_1_10() {
        assert!(super::at_least_1_10("1.11.4"));
        assert!(super::at_least_1_10("1.10.0"));
        assert!(!super::at_least_1_10("1.9.8"));
        assert!(!super::at_least_1_10("0.15.0-rc2"));
        assert!(super::at_least_1_10("2.0.0"));
    }
}

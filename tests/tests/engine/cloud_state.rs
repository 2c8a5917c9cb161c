//! State in the customer's own storage, with the real backends of a modern engine: the stand-in cluster
//! module (`templates/standins`, null provider) created, changed and destroyed with its state in Google
//! Cloud Storage (fake-gcs-server: the JSON API the `gcs` backend speaks) and in S3-compatible storage
//! without a lock table (DigitalOcean Spaces / Linode Object Storage shaped, on moto) — each backend's
//! blocks rendered by `strato_terraform::backend` as the runner writes them, its lock refusing a second
//! writer, and every write kept as a version.
//!
//! Not here: Azure Blob Storage. The `azurerm` backend addresses `https://<account>.blob.<cloud suffix>`
//! and no registry package serves that name locally (Azurite answers on a local port); its block is
//! checked by the unit tests only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use strato_domain::ids::ClusterId;
use strato_terraform::backend::{GcsBackend, S3CompatibleBackend, StateBackend, state_prefix};
use strato_terraform::render::{EngineVersion, state_key};
use strato_testbed::{FakeGcs, ModernEngine, TestEnv, cloud_bed, modern_engine_or_skip, stand_in_cli_config};

const MODULE: &str = "../templates/standins/modules/k8s-cluster";

/// A workspace holding the stand-in module, its variables and a backend block.
struct Stage {
    dir: PathBuf,
    env: Vec<(String, String)>,
    terraform: PathBuf,
}

impl Stage {
    fn new(modern: &ModernEngine, backend: &StateBackend, env: Vec<(String, String)>) -> Self {
        let bed = cloud_bed().unwrap_or_else(|e| panic!("installing the cloud bed: {e}"));
        let cli = stand_in_cli_config(modern, bed).unwrap_or_else(|e| panic!("{e}"));
        let dir = std::env::temp_dir().join(format!("strato-cloud-state-{}", ClusterId::generate()));
        std::fs::create_dir_all(&dir).unwrap();
        let module = Path::new(env!("CARGO_MANIFEST_DIR")).join(MODULE);
        for f in ["main.tf", "variables.tf", "outputs.tf", "versions.tf"] {
            std::fs::copy(module.join(f), dir.join(f)).unwrap();
        }
        let engine = EngineVersion::parse(&modern.version).expect("engine version");
        std::fs::write(
            dir.join("strato_backend.tf.json"),
            backend.tf_json(&engine).unwrap(),
        )
        .unwrap();
        let mut env = env;
        env.extend([
            ("TF_CLI_CONFIG_FILE".to_owned(), cli.display().to_string()),
            ("CHECKPOINT_DISABLE".to_owned(), "1".to_owned()),
            ("TF_IN_AUTOMATION".to_owned(), "1".to_owned()),
        ]);
        Stage {
            dir,
            env,
            terraform: modern.terraform.clone(),
        }
    }

    fn vars(&self, node_count: u32) {
        let vars = json!({
            "cluster_name": "shop-1a2b3c4d", "region": "nyc3", "kubernetes_version": "1.31",
            "node_instance_type": "s-2vcpu-4gb", "node_count": node_count, "tags": {"strato-tenant": "acme"},
        });
        std::fs::write(self.dir.join("terraform.tfvars.json"), vars.to_string()).unwrap();
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.terraform)
            .args(args)
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("running the engine")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "terraform {args:?} failed:\n{text}");
        text
    }

    fn apply(&self, node_count: u32) {
        self.vars(node_count);
        self.ok(&[
            "apply",
            "-input=false",
            "-no-color",
            "-auto-approve",
            "-lock-timeout=5s",
        ]);
    }

    /// An apply while another writer holds the lock is refused, and leaves the state as it was.
    fn apply_refused_while_locked(&self) -> String {
        self.vars(9);
        let out = self.run(&[
            "apply",
            "-input=false",
            "-no-color",
            "-auto-approve",
            "-lock-timeout=1s",
        ]);
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "an apply went through a held lock");
        assert!(text.contains("Error acquiring the state lock"), "{text}");
        text
    }

    fn nodes(&self) -> usize {
        let out = self.ok(&["output", "-json", "node_ids"]);
        serde_json::from_str::<Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .len()
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The resources a state document holds.
fn resources(state: &Value) -> usize {
    state["resources"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_stand_in_cluster_lives_and_dies_with_its_state_in_cloud_storage() {
    let Some(modern) = modern_engine_or_skip("cloud_state::gcs") else {
        return;
    };
    let bed = cloud_bed().unwrap_or_else(|e| panic!("installing the cloud bed: {e}"));
    let gcs = FakeGcs::start(bed).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let http = reqwest::Client::new();
    let send = |r: reqwest::RequestBuilder| rt.block_on(r.send()).unwrap();
    let json_of = |r: reqwest::Response| -> Value { rt.block_on(r.json()).unwrap() };
    let bucket = "acme-tfstate";
    let created = send(
        http.post(format!("{}/storage/v1/b?project=acme", gcs.base))
            .json(&json!({"name": bucket, "versioning": {"enabled": true}})),
    );
    assert!(created.status().is_success(), "{:?}", created.status());
    let prefix = state_prefix(&"acme".parse().unwrap(), &ClusterId::generate(), "cluster");
    let backend = StateBackend::Gcs(GcsBackend {
        bucket: bucket.into(),
        prefix: prefix.clone(),
        endpoint: Some(gcs.endpoint()),
    });
    // As a run gives it: a token in the engine's environment, none in the block.
    let stage = Stage::new(
        modern,
        &backend,
        vec![("GOOGLE_OAUTH_ACCESS_TOKEN".into(), "stand-in-token".into())],
    );
    let block = std::fs::read_to_string(stage.dir.join("strato_backend.tf.json")).unwrap();
    assert!(!block.contains("stand-in-token"), "{block}");

    stage.ok(&["init", "-input=false", "-no-color"]);
    stage.apply(2);
    assert_eq!(stage.nodes(), 2);
    let object = |name: &str| format!("{}/storage/v1/b/{bucket}/o/{}", gcs.base, urlencode(name));
    let state_name = format!("{prefix}/default.tfstate");
    let lock_name = format!("{prefix}/default.tflock");
    let read_state = || -> Value { json_of(send(http.get(format!("{}?alt=media", object(&state_name))))) };
    assert_eq!(
        resources(&read_state()),
        2,
        "control plane and the nodes' resource"
    );
    assert_eq!(
        send(http.get(object(&lock_name))).status(),
        404,
        "the lock is released after the apply"
    );

    // Another writer's lock object: the backend creates its own only if none exists (a generation
    // precondition), so this apply must wait and give up.
    let held = send(
        http.post(format!(
            "{}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={}",
            gcs.base,
            urlencode(&lock_name)
        ))
        .body(r#"{"ID":"another-run","Operation":"OperationTypeApply","Who":"another-runner"}"#),
    );
    assert!(held.status().is_success());
    stage.apply_refused_while_locked();
    assert_eq!(stage.nodes(), 2, "nothing applied while locked");
    send(http.delete(object(&lock_name)));

    stage.apply(3);
    assert_eq!(stage.nodes(), 3);
    let versions = json_of(send(http.get(format!(
        "{}/storage/v1/b/{bucket}/o?versions=true&prefix={}",
        gcs.base,
        urlencode(&state_name)
    ))));
    let generations = versions["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["name"] == state_name.as_str())
        .count();
    assert!(generations >= 3, "every write is a version: {versions}");

    stage.vars(3);
    stage.ok(&["destroy", "-input=false", "-no-color", "-auto-approve"]);
    assert_eq!(resources(&read_state()), 0, "destroyed");
}

#[test]
fn s3_compatible_storage_locks_with_a_lock_file_and_keeps_versions() {
    let Some(modern) = modern_engine_or_skip("cloud_state::s3-compatible") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let env = rt.block_on(TestEnv::new());
    let bucket = format!("{}-spaces", env.names.prefix());
    rt.block_on(async {
        env.aws.s3.create_bucket().bucket(&bucket).send().await.unwrap();
        env.aws
            .s3
            .put_bucket_versioning()
            .bucket(&bucket)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .unwrap();
    });
    let key = state_key(&"acme".parse().unwrap(), &ClusterId::generate(), "cluster");
    let backend = StateBackend::S3Compatible(S3CompatibleBackend {
        endpoint: env.endpoint.clone(),
        bucket: bucket.clone(),
        key: key.clone(),
        region: "us-east-1".into(),
        path_style: true,
        profile: Some("strato-state".into()),
    });
    let creds = std::env::temp_dir().join(format!("strato-spaces-{}", ClusterId::generate()));
    std::fs::write(
        &creds,
        "[strato-state]\naws_access_key_id = spaces-key\naws_secret_access_key = spaces-secret\n",
    )
    .unwrap();
    let stage = Stage::new(
        modern,
        &backend,
        vec![("AWS_SHARED_CREDENTIALS_FILE".into(), creds.display().to_string())],
    );
    stage.ok(&["init", "-input=false", "-no-color"]);
    stage.apply(1);
    assert_eq!(stage.nodes(), 1);

    let lock_key = format!("{key}.tflock");
    let s3 = &env.aws.s3;
    let head = |k: &str| {
        rt.block_on(s3.head_object().bucket(&bucket).key(k).send())
            .is_ok()
    };
    assert!(head(&key), "state written to the bucket");
    assert!(!head(&lock_key), "the lock file is removed after the apply");

    rt.block_on(
        s3.put_object()
            .bucket(&bucket)
            .key(&lock_key)
            .body(br#"{"ID":"another-run"}"#.to_vec().into())
            .send(),
    )
    .unwrap();
    stage.apply_refused_while_locked();
    rt.block_on(s3.delete_object().bucket(&bucket).key(&lock_key).send())
        .unwrap();

    stage.apply(2);
    assert_eq!(stage.nodes(), 2);
    let versions = rt
        .block_on(s3.list_object_versions().bucket(&bucket).prefix(&key).send())
        .unwrap();
    let kept = versions
        .versions()
        .iter()
        .filter(|v| v.key() == Some(key.as_str()))
        .count();
    assert!(kept >= 2, "every write is a version: {kept}");
    stage.ok(&["destroy", "-input=false", "-no-color", "-auto-approve"]);
    let _ = std::fs::remove_file(&creds);
}
fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

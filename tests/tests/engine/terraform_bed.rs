//! Proves the offline bed is real: the Terraform engine applies a VPC + security group into moto with its
//! state in S3 (DynamoDB-locked), using inputs rendered by `strato-shared`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use strato_domain::catalog::Catalogs;
use strato_domain::ids::ClusterId;
use strato_domain::model::ClusterSpec;
use strato_domain::template::Template;
use strato_domain::validate::validate;
use strato_terraform::render::{
    BackendConfig, EngineVersion, ManagedValues, aws_provider_override_tf_json, state_key,
    strip_write_prefix, tfvars_json,
};
use strato_testbed::TestEnv;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

const CREDENTIALS: &str = "credentials";
/// The state session's secret, only in the credentials file.
const BACKEND_SECRET: &str = "backend-secret-0f3a";

/// The text of every entry of a saved plan (a zip archive: each entry's local header, then its data,
/// stored or deflated; the sizes may follow the data, so a deflated entry is read to its stream's end).
fn saved_plan_text(bytes: &[u8]) -> String {
    use std::io::Read;
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    let mut text = String::new();
    let mut i = 0;
    while i + 30 <= bytes.len() {
        if bytes[i..i + 4] != [0x50, 0x4b, 0x03, 0x04] {
            i += 1;
            continue;
        }
        let method = u16_at(i + 8);
        let data = i + 30 + u16_at(i + 26) + u16_at(i + 28);
        let mut entry = Vec::new();
        if method == 8 {
            let _ = flate2::read::DeflateDecoder::new(&bytes[data..]).read_to_end(&mut entry);
        } else {
            entry = bytes[data..].to_vec();
        }
        text.push_str(&String::from_utf8_lossy(&entry));
        i = data;
    }
    text
}

fn tf(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(&env.tools.terraform)
        .args(args)
        .current_dir(dir)
        .envs(env.tools.engine_env())
        // As the runner runs it: every session a profile of a credentials file, no key in the environment.
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.join(CREDENTIALS))
        .env("AWS_PROFILE", "strato-engine")
        .env("AWS_REGION", &env.region)
        .output()
        .expect("running the engine");
    if !out.status.success() {
        // The engine's debug log is on stderr; the error is in its last lines.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.contains("[TRACE]") && !l.contains("[DEBUG]"))
            .collect();
        panic!(
            "terraform {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            tail.join("\n")
        );
    }
    out
}

async fn state_json(env: &TestEnv, key: &str) -> Value {
    let obj = env
        .aws
        .s3
        .get_object()
        .bucket(env.names.bucket("state"))
        .key(key)
        .send()
        .await
        .expect("state object");
    let bytes = obj.body.collect().await.expect("state body").into_bytes();
    serde_json::from_slice(&bytes).expect("state is JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn engine_applies_into_moto_with_s3_state() {
    let env = TestEnv::new().await;
    let template =
        Template::from_toml(&std::fs::read_to_string(fixture("vpc-sg/template.toml")).unwrap()).unwrap();
    let spec = ClusterSpec {
        region: env.region.clone(),
        variables: serde_json::from_value(json!({"vpc_cidr": "10.7.0.0/16", "tags": {"team": "o\"ps ${x}"}}))
            .unwrap(),
        ..strato_testbed::fixture_spec("bed-check")
    };
    let validated = validate(&spec, &template, Catalogs::builtin()).expect("fixture spec is valid");

    let work = std::env::temp_dir().join(format!("strato-bed-{}", ClusterId::generate()));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::copy(fixture("vpc-sg/main.tf"), work.join("main.tf")).unwrap();
    std::fs::write(
        work.join(CREDENTIALS),
        format!(
            "[strato-engine]\naws_access_key_id = testing\naws_secret_access_key = testing\n\
             [strato-state]\naws_access_key_id = backend-key\naws_secret_access_key = {BACKEND_SECRET}\n\
             aws_session_token = backend-token\n"
        ),
    )
    .unwrap();
    let managed = ManagedValues(BTreeMap::from([
        ("region".to_owned(), json!(env.region)),
        ("cluster_name".to_owned(), json!(spec.name.as_str())),
    ]));
    std::fs::write(
        work.join("terraform.tfvars.json"),
        tfvars_json(&validated, &managed).unwrap(),
    )
    .unwrap();

    let version = tf(&env, &work, &["version", "-json"]);
    let version =
        EngineVersion::from_version_json(&String::from_utf8_lossy(&version.stdout)).expect("engine version");
    let key = state_key(&"acme".parse().unwrap(), &ClusterId::generate(), "main");
    let backend = BackendConfig {
        bucket: env.names.bucket("state"),
        key: key.clone(),
        region: env.region.clone(),
        lock_table: env.names.table("tf-locks"),
        endpoint: Some(env.endpoint.clone()),
        // As the runner writes it: the backend's own (session) credentials, not the environment's, by the
        // name of their profile only.
        profile: Some("strato-state".into()),
        kms_key_id: None,
    };
    std::fs::write(
        work.join("strato_backend.tf.json"),
        backend.tf_json(version.dialect()).unwrap(),
    )
    .unwrap();
    std::fs::write(
        work.join("strato_provider_override.tf.json"),
        aws_provider_override_tf_json(&env.endpoint).unwrap(),
    )
    .unwrap();

    tf(&env, &work, &["init", "-input=false", "-no-color"]);
    // A saved plan records the backend configuration: the profile's name, never its keys (a plan applied
    // after an approval must use the applying run's sessions; the sealed plan must carry no credential).
    tf(
        &env,
        &work,
        &["plan", "-input=false", "-no-color", "-out=saved.tfplan"],
    );
    let recorded = saved_plan_text(&std::fs::read(work.join("saved.tfplan")).unwrap());
    assert!(
        recorded.contains("strato-state"),
        "the backend configuration is in the plan"
    );
    for secret in ["backend-key", BACKEND_SECRET, "backend-token"] {
        assert!(!recorded.contains(secret), "the saved plan holds {secret}");
    }
    tf(
        &env,
        &work,
        &["apply", "-input=false", "-auto-approve", "-no-color"],
    );
    let out = tf(&env, &work, &["output", "-json"]);
    let outputs: Value = serde_json::from_str(strip_write_prefix(&String::from_utf8_lossy(&out.stdout)))
        .expect("output -json is JSON");
    assert!(
        outputs["vpc_id"]["value"].as_str().unwrap().starts_with("vpc-"),
        "{outputs}"
    );
    assert!(
        outputs["security_group_id"]["value"]
            .as_str()
            .unwrap()
            .starts_with("sg-"),
        "{outputs}"
    );
    assert_eq!(outputs["vpc_cidr"]["value"], "10.7.0.0/16");
    assert_eq!(
        outputs["tags"]["value"]["team"], "o\"ps ${x}",
        "hostile tag value arrives verbatim"
    );
    assert_eq!(outputs["tags"]["value"]["Name"], "bed-check");

    let state = state_json(&env, &key).await;
    let types: Vec<&str> = state["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["aws_security_group", "aws_vpc"]);
    // The lock was taken and released: only the digest entry remains in the lock table.
    let locks = env
        .aws
        .dynamodb
        .scan()
        .table_name(env.names.table("tf-locks"))
        .send()
        .await
        .unwrap();
    assert!(
        locks
            .items()
            .iter()
            .all(|i| i["LockID"].as_s().unwrap().ends_with("-md5")),
        "no lock left: {locks:?}"
    );

    tf(
        &env,
        &work,
        &["destroy", "-input=false", "-auto-approve", "-no-color"],
    );
    let state = state_json(&env, &key).await;
    assert_eq!(
        state["resources"].as_array().map(Vec::len),
        Some(0),
        "destroy empties the state"
    );
    let _ = std::fs::remove_dir_all(&work);
}

use serde_json::{Value, json};
use strato_domain::ids::{ClusterId, TenantId};

use super::*;

fn engine(v: &str) -> EngineVersion {
    EngineVersion::parse(v).unwrap()
}

fn block(b: &StateBackend, v: &str) -> Value {
    serde_json::from_str(&b.tf_json(&engine(v)).unwrap()).unwrap()
}

fn gcs(endpoint: Option<&str>) -> StateBackend {
    StateBackend::Gcs(GcsBackend {
        bucket: "acme-tfstate".into(),
        prefix: "tenants/t1/clusters/c1/cluster".into(),
        endpoint: endpoint.map(Into::into),
    })
}

fn spaces() -> StateBackend {
    StateBackend::S3Compatible(S3CompatibleBackend {
        endpoint: "https://nyc3.digitaloceanspaces.com".into(),
        bucket: "acme-tfstate".into(),
        key: "tenants/t1/clusters/c1/cluster.tfstate".into(),
        region: "us-east-1".into(),
        path_style: false,
        profile: Some("strato-state".into()),
    })
}

#[test]
fn gcs_keeps_the_stage_under_its_prefix_and_names_an_emulator_only_when_given() {
    let b = block(&gcs(None), "1.11.4");
    assert_eq!(
        b,
        json!({"terraform": {"backend": {"gcs": {
            "bucket": "acme-tfstate", "prefix": "tenants/t1/clusters/c1/cluster"
        }}}})
    );
    let b = block(&gcs(Some("http://127.0.0.1:4443/storage/v1/")), "1.11.4");
    assert_eq!(
        b["terraform"]["backend"]["gcs"]["storage_custom_endpoint"],
        "http://127.0.0.1:4443/storage/v1/"
    );
}

#[test]
fn s3_compatible_storage_locks_with_a_lock_file_and_no_table() {
    let b = block(&spaces(), "1.10.0");
    let s3 = &b["terraform"]["backend"]["s3"];
    assert_eq!(s3["use_lockfile"], true);
    assert_eq!(s3["endpoints"]["s3"], "https://nyc3.digitaloceanspaces.com");
    assert_eq!(s3["profile"], "strato-state");
    assert_eq!(s3["skip_s3_checksum"], true);
    assert!(s3.get("dynamodb_table").is_none(), "{s3}");
}

#[test]
fn azure_blob_authorizes_with_the_runs_identity_never_a_key() {
    let b = StateBackend::AzureBlob(AzureBlobBackend {
        storage_account: "acmetfstate".into(),
        container: "tfstate".into(),
        key: "tenants/t1/clusters/c1/cluster.tfstate".into(),
        use_oidc: true,
        resource_group: None,
        metadata_host: None,
    });
    let az = block(&b, "1.11.4")["terraform"]["backend"]["azurerm"].clone();
    assert_eq!(az["use_azuread_auth"], true);
    assert_eq!(az["use_oidc"], true);
    for secret in ["access_key", "sas_token", "client_secret", "oidc_token"] {
        assert!(az.get(secret).is_none(), "{secret} in {az}");
    }
    assert!(b.credential_env().contains(&"ARM_OIDC_TOKEN_FILE_PATH"));
}

#[test]
fn azure_blob_in_an_emulated_cloud_asks_resource_manager_for_the_blob_endpoint() {
    let b = StateBackend::AzureBlob(AzureBlobBackend {
        storage_account: "acmetfstate".into(),
        container: "tfstate".into(),
        key: "k.tfstate".into(),
        use_oidc: true,
        resource_group: Some("acme-state".into()),
        metadata_host: Some("127.0.0.1:8443".into()),
    });
    let az = block(&b, "1.11.4")["terraform"]["backend"]["azurerm"].clone();
    assert_eq!(az["metadata_host"], "127.0.0.1:8443");
    assert_eq!(az["lookup_blob_endpoint"], true);
    assert_eq!(az["resource_group_name"], "acme-state");
    // On Azure's own cloud the account's endpoint is the one its name gives: no lookup, no metadata host.
    let public = StateBackend::AzureBlob(AzureBlobBackend {
        metadata_host: None,
        ..match b {
            StateBackend::AzureBlob(a) => a,
            _ => unreachable!(),
        }
    });
    let az = block(&public, "1.11.4")["terraform"]["backend"]["azurerm"].clone();
    assert!(
        az.get("metadata_host").is_none() && az.get("lookup_blob_endpoint").is_none(),
        "{az}"
    );
    assert_eq!(az["resource_group_name"], "acme-state");
}

#[test]
fn no_block_carries_a_credential() {
    // The arguments through which these backends would take a credential in their block.
    let credential_args = [
        "credentials",
        "access_token",
        "access_key",
        "secret_key",
        "token",
        "sas_token",
        "client_secret",
        "oidc_token",
        "oidc_request_token",
    ];
    for b in [gcs(Some("http://x/storage/v1/")), spaces()] {
        let doc = block(&b, "1.11.4");
        let (_, args) = doc["terraform"]["backend"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        for key in args.as_object().unwrap().keys() {
            assert!(!credential_args.contains(&key.as_str()), "{key} in {args}");
        }
    }
}

#[test]
fn an_engine_too_old_for_the_location_is_refused_with_the_fix() {
    let err = spaces().tf_json(&engine("1.9.8")).unwrap_err().to_string();
    assert!(err.contains("needs Terraform 1.10 or later"), "{err}");
    assert!(err.contains("engine is 1.9.8"), "{err}");
    assert!(err.contains("fix:"), "{err}");
    let err = gcs(None).tf_json(&engine("0.15.0-rc2")).unwrap_err().to_string();
    assert!(err.contains("Google Cloud Storage bucket acme-tfstate"), "{err}");
    // Strato's S3 backend still renders for the legacy engine.
    let s3 = StateBackend::from(BackendConfig {
        bucket: "b".into(),
        key: "k/x.tfstate".into(),
        region: "us-east-1".into(),
        lock_table: "t".into(),
        endpoint: None,
        kms_key_id: None,
        profile: None,
    });
    assert!(s3.tf_json(&engine("0.15.0")).is_ok());
}

#[test]
fn every_backend_keeps_a_stage_in_a_folder_of_its_tenant_and_cluster() {
    let t: TenantId = "acme".parse().unwrap();
    let c = ClusterId::generate();
    let p = state_prefix(&t, &c, "cluster");
    assert_eq!(p, format!("tenants/acme/clusters/{c}/cluster"));
    // The S3 key of the same stage lives in the same folder.
    assert!(crate::render::state_key(&t, &c, "cluster").starts_with(&format!("tenants/acme/clusters/{c}/")));
}

use serde_json::json;

use std::collections::BTreeMap;

use super::*;
use crate::error::exit;

fn no_file(f: &str) -> Result<String, CliError> {
    panic!("read {f}")
}

fn usage(r: Result<Option<Value>, CliError>) -> String {
    let e = r.unwrap_err();
    assert_eq!(e.exit_code(), exit::USAGE, "{e}");
    e.to_string()
}

#[test]
fn each_clouds_flags_build_its_target_and_another_clouds_flag_is_refused() {
    let gcp = TargetArgs {
        gcp_project: Some("acme-prod".into()),
        gcp_provider: Some("projects/1/locations/global/workloadIdentityPools/p/providers/s".into()),
        gcp_service_account: Some("tf@acme-prod.iam.gserviceaccount.com".into()),
        target_state_bucket: Some("acme-state".into()),
        ..Default::default()
    };
    assert_eq!(
        target_body(&gcp, "gcp", no_file).unwrap().unwrap(),
        json!({
            "provider": "gcp",
            "project_id": "acme-prod",
            "workload_identity_provider": "projects/1/locations/global/workloadIdentityPools/p/providers/s",
            "service_account": "tf@acme-prod.iam.gserviceaccount.com",
            "state_bucket": "acme-state",
        })
    );
    let err = usage(target_body(&gcp, "azure", no_file));
    assert!(
        err.contains("--target-state-bucket") || err.contains("--gcp-"),
        "{err}"
    );
    assert!(err.contains("azure"), "{err}");

    let azure = TargetArgs {
        azure_tenant: Some("11111111-1111-1111-1111-111111111111".into()),
        azure_client: Some("22222222-2222-2222-2222-222222222222".into()),
        ..Default::default()
    };
    // Incomplete: sent as given, for the API to name what is missing.
    assert_eq!(
        target_body(&azure, "azure", no_file).unwrap().unwrap(),
        json!({
            "provider": "azure",
            "tenant_id": "11111111-1111-1111-1111-111111111111",
            "client_id": "22222222-2222-2222-2222-222222222222",
        })
    );
    let aws_flag_on_gcp = TargetArgs {
        target_role_arn: Some("arn:aws:iam::123456789012:role/x".into()),
        ..Default::default()
    };
    assert!(usage(target_body(&aws_flag_on_gcp, "gcp", no_file)).contains("--target-role-arn"));
}

#[test]
fn an_aws_target_keeps_its_shape_and_needs_its_role() {
    let aws = TargetArgs {
        target_role_arn: Some("arn:aws:iam::123456789012:role/strato-target".into()),
        target_region: Some("eu-west-1".into()),
        ..Default::default()
    };
    assert_eq!(
        target_body(&aws, "aws", no_file).unwrap().unwrap(),
        json!({"role_arn": "arn:aws:iam::123456789012:role/strato-target", "region": "eu-west-1"})
    );
    assert_eq!(target_body(&TargetArgs::default(), "aws", no_file).unwrap(), None);
    let bucket_only = TargetArgs {
        target_state_bucket: Some("b".into()),
        ..Default::default()
    };
    assert!(usage(target_body(&bucket_only, "aws", no_file)).contains("--target-role-arn"));
    // GCP and Azure without flags: no target (the API says one is needed and what it takes).
    assert_eq!(target_body(&TargetArgs::default(), "gcp", no_file).unwrap(), None);
}

#[test]
fn digitalocean_and_linode_always_get_a_target_with_their_state_region() {
    assert_eq!(
        target_body(&TargetArgs::default(), "digitalocean", no_file).unwrap(),
        Some(json!({"provider": "digitalocean"}))
    );
    let spaces = TargetArgs {
        target_state_bucket: Some("acme-state".into()),
        target_region: Some("nyc3".into()),
        ..Default::default()
    };
    assert_eq!(
        target_body(&spaces, "linode", no_file).unwrap().unwrap(),
        json!({"provider": "linode", "state_bucket": "acme-state", "state_region": "nyc3"})
    );
}

#[test]
fn a_target_file_is_the_whole_target_of_any_cloud() {
    let file = TargetArgs {
        target_file: Some("t.json".into()),
        ..Default::default()
    };
    let read = |f: &str| {
        assert_eq!(f, "t.json");
        Ok(r#"{"project_id": "acme-prod", "service_account": "x"}"#.to_owned())
    };
    assert_eq!(
        target_body(&file, "gcp", read).unwrap().unwrap(),
        json!({"provider": "gcp", "project_id": "acme-prod", "service_account": "x"}),
        "the cluster's provider when the file names none"
    );
    let named = |_: &str| Ok(r#"{"provider": "azure", "tenant_id": "t"}"#.to_owned());
    assert_eq!(
        target_body(&file, "gcp", named).unwrap().unwrap()["provider"],
        "azure",
        "the file's own provider is sent as is, for the API to judge"
    );
    let not_object = |_: &str| Ok("[1, 2]".to_owned());
    assert!(usage(target_body(&file, "gcp", not_object)).contains("not a JSON object"));
    let both = TargetArgs {
        gcp_project: Some("p".into()),
        ..file.clone()
    };
    assert!(usage(target_body(&both, "gcp", no_file)).contains("--gcp-project"));
}

#[test]
fn secrets_come_from_stdins_lines_and_the_body_carries_the_pair_only_whole() {
    let (t, s) = piped_secrets("\n  dop_v1_abc  \nSECRET\n", true).unwrap();
    assert_eq!((t.as_str(), s.as_deref()), ("dop_v1_abc", Some("SECRET")));
    assert_eq!(piped_secrets("tok\nignored\n", false).unwrap().1, None);
    assert!(
        piped_secrets("tok\n", true)
            .unwrap_err()
            .to_string()
            .contains("second line")
    );
    assert!(piped_secrets("  \n", false).is_err());
    assert_eq!(
        token_body("tok".into(), Some("KEYID".into()), Some("SECRET".into())),
        json!({"token": "tok", "storage_access_key_id": "KEYID", "storage_secret_access_key": "SECRET"})
    );
    assert_eq!(token_body("tok".into(), None, None), json!({"token": "tok"}));
}

#[test]
fn target_access_has_a_section_per_cloud() {
    let access = json!({
        "external_id": "strato-abc",
        "principal": "arn:aws:iam::1:role/runner",
        "trust_policy": {"Version": "2012-10-17"},
        "federation": {
            "issuer": "https://id.example.com",
            "subject_pattern": "tenant:acme:…",
            "aws": {"oidc_provider": {}},
            "gcp": {"issuer_uri": "https://id.example.com"},
            "azure": {"audiences": ["api://AzureADTokenExchange"]},
        }
    });
    let tokens =
        json!({"tokens": [{"provider": "linode", "set_at": "t", "set_by": "alice", "storage_keys": true}]});
    let s: BTreeMap<_, _> = access_sections(&access, Some(&tokens)).into_iter().collect();
    assert_eq!(
        s.keys().copied().collect::<Vec<_>>(),
        ["aws", "azure", "digitalocean", "gcp", "linode"]
    );
    assert_eq!(s["aws"]["external_id"], "strato-abc");
    assert!(s["aws"]["web_identity"].is_object());
    assert_eq!(s["gcp"]["trust"]["issuer_uri"], "https://id.example.com");
    assert_eq!(s["gcp"]["issuer"], "https://id.example.com");
    assert_eq!(s["azure"]["trust"]["audiences"][0], "api://AzureADTokenExchange");
    assert_eq!(s["digitalocean"]["token"], "not set");
    assert_eq!(s["linode"]["token"]["storage_keys"], true);
    assert!(
        s["linode"]["how"]
            .as_str()
            .unwrap()
            .contains("cloud-tokens set linode")
    );

    let plain =
        json!({"external_id": "strato-abc", "principal": null, "trust_policy": {}, "federation": null});
    let s: BTreeMap<_, _> = access_sections(&plain, None).into_iter().collect();
    assert!(s["gcp"]["unavailable"].is_string());
    assert!(s["aws"].get("web_identity").is_none());
    assert!(
        s["digitalocean"]["token"]
            .as_str()
            .unwrap()
            .starts_with("unknown")
    );
}

//! Targets on clouds other than an AWS role with the external id: what each stage's engine is given (the
//! run's identity token per stage, or the tenant's API token), where the state goes (the customer's GCS,
//! Azure Blob or S3-compatible bucket), and why a run without what it needs stops at `prepare`.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use strato_domain::ErrorCategory;
use strato_domain::identity::cloud_tokens::{CloudToken, StorageKeys, seal_cloud_token, seal_storage_keys};
use strato_domain::identity::seal_run_tokens;
use strato_domain::model::{CloudProvider, OperationKind, Target};
use strato_domain::secret::Sensitive;

use super::support::{Bed, outputs, vpc_plan};
use crate::fakes::{Call, Cmd, FakeEngine, Reply};
use crate::workspace::{BACKEND_FILE, IDENTITY_DIR};

pub(super) const DO_TOKEN: &str = "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef";
pub(super) const SPACES_KEY: &str = "DO00EXAMPLEKEY123456";
pub(super) const SPACES_SECRET: &str = "spaces-secret/0123456789abcdefghijklmnopqrstuv";

/// A two-stage create of fixture `runner-clouds` on `provider`'s default region with `target`, on an
/// engine new enough for every backend.
pub(super) async fn bed(provider: &str, region: &str, target: Value) -> Bed {
    let mut bed = Bed::with_engine(OperationKind::Create, "clouds", FakeEngine::new("1.11.4")).await;
    let target: Target = serde_json::from_value(target).unwrap();
    bed.edit_op(|op| {
        let spec = op.spec.as_mut().unwrap();
        spec.provider = provider.parse().unwrap();
        spec.region = region.to_owned();
        spec.target = Some(target);
    });
    bed
}

/// What a stage's `init` found: its backend block, and its files in the run's identity folder.
type Seen = std::sync::Arc<std::sync::Mutex<BTreeMap<String, (Value, BTreeMap<String, String>)>>>;

/// Both stages go through, their plans printing `plan_stdout`; each `init` keeps what it found.
pub(super) fn both_stages_apply(bed: &Bed, plan_stdout: &str) -> Seen {
    let seen: Seen = Default::default();
    for stage in ["network", "cluster"] {
        let keep = seen.clone();
        let name = stage.to_owned();
        bed.engine.expect_in(
            stage,
            Cmd::Init,
            Reply::ok().on_start(move |dir| {
                let text = std::fs::read_to_string(dir.join(BACKEND_FILE)).unwrap();
                let mut files = BTreeMap::new();
                let identity = dir.join("../..").join(IDENTITY_DIR);
                for e in std::fs::read_dir(identity).into_iter().flatten().flatten() {
                    let text = std::fs::read_to_string(e.path()).unwrap();
                    files.insert(e.file_name().to_string_lossy().into_owned(), text);
                }
                keep.lock()
                    .unwrap()
                    .insert(name.clone(), (serde_json::from_str(&text).unwrap(), files));
            }),
        );
        bed.engine
            .expect_in(
                stage,
                Cmd::Plan,
                Reply::changes(b"saved plan").stdout(plan_stdout),
            )
            .expect_in(stage, Cmd::Show, Reply::json(&vpc_plan()))
            .expect_in(stage, Cmd::Apply, Reply::ok().stdout("Apply complete!"))
            .expect_in(stage, Cmd::Output, Reply::json(&outputs(&[])))
            .expect_in(stage, Cmd::Refresh, Reply::ok());
    }
    seen
}

/// The run's identity tokens, one per stage, sealed on the operation as the dispatcher does.
async fn issue_run_tokens(bed: &mut Bed, aud: &str, expires_in: i64) {
    let tokens: Vec<(String, Sensitive)> = ["network", "cluster"]
        .iter()
        .map(|s| {
            (
                s.to_string(),
                Sensitive::new(format!("eyJhbGciOiJSUzI1NiJ9.stage-{s}.sig")),
            )
        })
        .collect();
    let expires_at = strato_domain::ts::now().unix_timestamp() + expires_in;
    let sealed = seal_run_tokens(
        &bed.keys,
        &bed.op.tenant_id,
        &bed.op.operation_id,
        aud,
        expires_at,
        &tokens,
    )
    .await
    .unwrap();
    bed.edit_op(|op| op.run_identity = Some(sealed));
}

pub(super) async fn register_do_token(bed: &Bed, storage: bool) {
    let tenant = &bed.op.tenant_id;
    let cloud = CloudProvider::Digitalocean;
    let sealed = seal_cloud_token(&bed.keys, tenant, cloud, &Sensitive::new(DO_TOKEN))
        .await
        .unwrap();
    let storage_keys = if storage {
        let pair = StorageKeys {
            access_key_id: SPACES_KEY.into(),
            secret_access_key: Sensitive::new(SPACES_SECRET),
        };
        Some(seal_storage_keys(&bed.keys, tenant, cloud, &pair).await.unwrap())
    } else {
        None
    };
    let record = CloudToken {
        sealed,
        set_at: strato_domain::ts::now(),
        set_by: "alice".into(),
        storage_keys,
    };
    bed.store.set_cloud_token(tenant, cloud, record);
}

fn env_of<'a>(call: &'a Call, var: &str) -> Option<&'a str> {
    call.env
        .iter()
        .rev()
        .find(|(k, _)| k == var)
        .map(|(_, v)| v.as_str())
}

fn first(bed: &Bed, stage: &str, cmd: Cmd) -> Call {
    bed.engine
        .calls()
        .into_iter()
        .find(|c| c.stage == stage && c.cmd == cmd)
        .unwrap_or_else(|| panic!("no {cmd:?} in {stage}"))
}

/// The log and every event the run sent, as one text.
pub(super) fn everything_said(bed: &Bed) -> String {
    format!("{}\n{:?}", bed.log().join("\n"), bed.reporter.all())
}

#[tokio::test]
async fn a_digitalocean_target_gets_the_tenants_token_and_keeps_its_state_in_spaces() {
    let bed = bed(
        "digitalocean",
        "nyc3",
        json!({"provider": "digitalocean", "state_bucket": "acme-tfstate", "state_region": "ams3"}),
    )
    .await;
    register_do_token(&bed, true).await;
    // The engine prints the token and the key: neither may reach the log.
    let seen = both_stages_apply(&bed, &format!("{DO_TOKEN} {SPACES_SECRET}"));
    bed.run_to_success().await;
    let init = first(&bed, "network", Cmd::Init);
    assert_eq!(env_of(&init, "DIGITALOCEAN_TOKEN"), Some(DO_TOKEN));
    assert_eq!(env_of(&init, "SPACES_ACCESS_KEY_ID"), Some(SPACES_KEY));
    assert_eq!(env_of(&init, "SPACES_SECRET_ACCESS_KEY"), Some(SPACES_SECRET));
    assert!(
        env_of(&init, "AWS_PROFILE").is_none(),
        "no AWS session on another cloud"
    );
    assert!(
        bed.cloud.sessions().is_empty(),
        "neither the engine role nor the state role: {:?}",
        bed.cloud.sessions()
    );
    let seen = seen.lock().unwrap().clone();
    for stage in ["network", "cluster"] {
        let s3 = &seen[stage].0["terraform"]["backend"]["s3"];
        assert_eq!(s3["bucket"], "acme-tfstate", "{s3}");
        assert_eq!(
            s3["endpoints"]["s3"], "https://ams3.digitaloceanspaces.com",
            "{s3}"
        );
        assert_eq!(s3["use_lockfile"], true, "{s3}");
        assert_eq!(s3["profile"], "strato-state", "{s3}");
        assert_eq!(s3["key"], bed.state_key(stage), "{s3}");
        let text = s3.to_string();
        assert!(
            !text.contains(SPACES_SECRET) && !text.contains(DO_TOKEN),
            "{text}"
        );
    }
    assert!(bed.logged("state in your bucket acme-tfstate at https://ams3.digitaloceanspaces.com"));
    assert_eq!(
        bed.cloud.cloud_checks(),
        ["DigitalOcean"],
        "the token is checked first"
    );
    let said = everything_said(&bed);
    assert!(
        !said.contains(DO_TOKEN) && !said.contains(SPACES_SECRET),
        "{said}"
    );
}

#[tokio::test]
async fn a_token_cloud_without_its_token_or_storage_key_stops_at_prepare_and_says_how_to_fix_it() {
    // No token at all.
    let bed1 = bed("digitalocean", "nyc3", json!({"provider": "digitalocean"})).await;
    let error = bed1.run_to_failure().await;
    assert_eq!(
        (error.step.as_str(), error.category),
        ("prepare", ErrorCategory::Credentials)
    );
    assert!(error.what.contains("no digitalocean API token"), "{error:?}");
    assert!(
        error.fix.contains("/v1/tenant/cloud-tokens/digitalocean"),
        "{error:?}"
    );
    assert!(bed1.engine.calls().is_empty() && bed1.cloud.sessions().is_empty());
    // A token, but state in Spaces without the Spaces key.
    let bed2 = bed(
        "digitalocean",
        "nyc3",
        json!({"provider": "digitalocean", "state_bucket": "acme-tfstate"}),
    )
    .await;
    register_do_token(&bed2, false).await;
    let error = bed2.run_to_failure().await;
    assert_eq!(error.category, ErrorCategory::Credentials, "{error:?}");
    assert!(error.what.contains("no object storage key"), "{error:?}");
    assert!(error.fix.contains("storage_access_key_id"), "{error:?}");
    assert!(bed2.engine.calls().is_empty());
}

#[tokio::test]
async fn a_gcp_target_gives_each_stage_an_external_account_file_for_its_own_token_and_state_in_gcs() {
    let mut bed = bed("gcp", "us-central1", gcp_target()).await;
    issue_run_tokens(
        &mut bed,
        "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/strato/providers/oidc",
        3600,
    )
    .await;
    let seen = both_stages_apply(&bed, "");
    bed.run_to_success().await;
    let seen = seen.lock().unwrap().clone();
    let mut files = Vec::new();
    for stage in ["network", "cluster"] {
        let init = first(&bed, stage, Cmd::Init);
        assert_eq!(env_of(&init, "GOOGLE_PROJECT"), Some("acme-prod-1"));
        let creds = env_of(&init, "GOOGLE_APPLICATION_CREDENTIALS")
            .expect("credentials file")
            .to_owned();
        assert_eq!(env_of(&init, "GOOGLE_BACKEND_CREDENTIALS"), Some(creds.as_str()));
        // The file the engine reads is that stage's configuration, pointing at that stage's token.
        let (backend, identity) = &seen[stage];
        let config: Value = serde_json::from_str(&identity[&format!("{stage}.gcp.json")]).unwrap();
        assert_eq!(config["type"], "external_account", "{config}");
        assert!(
            config["credential_source"]["file"]
                .as_str()
                .unwrap()
                .ends_with(&format!("{stage}.jwt"))
        );
        assert!(identity[&format!("{stage}.jwt")].contains(&format!("stage-{stage}")));
        files.push(creds);
        let gcs = &backend["terraform"]["backend"]["gcs"];
        assert_eq!(gcs["bucket"], "acme-tfstate", "{gcs}");
        assert_eq!(
            gcs["prefix"],
            bed.state_key(stage).trim_end_matches(".tfstate"),
            "{gcs}"
        );
    }
    assert_ne!(files[0], files[1], "each stage its own file");
    // What the configuration says, in full.
    let config = crate::lifecycle::federation::external_account(
        &serde_json::from_value(json!({"project_id": "acme-prod-1",
            "workload_identity_provider": "projects/123/locations/global/workloadIdentityPools/strato/providers/oidc",
            "service_account": "terraform@acme-prod-1.iam.gserviceaccount.com"}))
        .unwrap(),
        "/w/network.jwt",
        &crate::clouds::CloudEndpoints::default(),
    );
    assert_eq!(config["type"], "external_account");
    assert_eq!(
        config["audience"],
        "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/strato/providers/oidc"
    );
    assert_eq!(config["token_url"], "https://sts.googleapis.com/v1/token");
    assert_eq!(
        config["service_account_impersonation_url"],
        "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/terraform@acme-prod-1.iam.gserviceaccount.com:generateAccessToken"
    );
    assert_eq!(config["credential_source"]["file"], "/w/network.jwt");
    let said = everything_said(&bed);
    assert!(!said.contains("stage-network"), "no token in the log: {said}");
}

#[tokio::test]
async fn an_azure_target_gets_its_ids_and_each_stage_its_token_file_with_state_in_blob_storage() {
    let mut bed = bed(
        "azure",
        "eastus",
        json!({"provider": "azure",
            "tenant_id": "11111111-1111-1111-1111-111111111111",
            "client_id": "22222222-2222-2222-2222-222222222222",
            "subscription_id": "33333333-3333-3333-3333-333333333333",
            "state_storage_account": "acmetfstate"}),
    )
    .await;
    issue_run_tokens(&mut bed, "api://AzureADTokenExchange", 3600).await;
    let seen = both_stages_apply(&bed, "");
    bed.run_to_success().await;
    let seen = seen.lock().unwrap().clone();
    for stage in ["network", "cluster"] {
        let init = first(&bed, stage, Cmd::Init);
        assert_eq!(
            env_of(&init, "ARM_TENANT_ID"),
            Some("11111111-1111-1111-1111-111111111111")
        );
        assert_eq!(
            env_of(&init, "ARM_CLIENT_ID"),
            Some("22222222-2222-2222-2222-222222222222")
        );
        assert_eq!(
            env_of(&init, "ARM_SUBSCRIPTION_ID"),
            Some("33333333-3333-3333-3333-333333333333")
        );
        assert_eq!(env_of(&init, "ARM_USE_OIDC"), Some("true"));
        let file = env_of(&init, "ARM_OIDC_TOKEN_FILE_PATH").expect("token file");
        assert!(file.ends_with(&format!("{stage}.jwt")), "{file}");
        // Each stage's token file holds that stage's token when its engine starts.
        let (backend, identity) = &seen[stage];
        assert!(identity[&format!("{stage}.jwt")].contains(&format!("stage-{stage}")));
        let blob = &backend["terraform"]["backend"]["azurerm"];
        assert_eq!(blob["storage_account_name"], "acmetfstate", "{blob}");
        assert_eq!(blob["container_name"], "tfstate", "{blob}");
        assert_eq!(blob["use_oidc"], true, "{blob}");
        assert!(
            blob.get("access_key").is_none() && blob.get("sas_token").is_none(),
            "{blob}"
        );
    }
}

#[tokio::test]
async fn an_aws_web_identity_target_assumes_its_role_once_per_stage_with_that_stages_token() {
    let role = "arn:aws:iam::210987654321:role/strato-oidc";
    let mut bed = bed(
        "aws",
        "us-east-1",
        json!({"role_arn": role, "auth": "web_identity"}),
    )
    .await;
    issue_run_tokens(&mut bed, "sts.amazonaws.com", 3600).await;
    both_stages_apply(&bed, "");
    bed.run_to_success().await;
    let sessions: Vec<_> = bed
        .cloud
        .sessions()
        .into_iter()
        .filter(|s| s.role_arn == role)
        .collect();
    let tokens: Vec<_> = sessions.iter().map(|s| s.web_identity.clone().unwrap()).collect();
    assert_eq!(
        tokens,
        [
            "eyJhbGciOiJSUzI1NiJ9.stage-network.sig",
            "eyJhbGciOiJSUzI1NiJ9.stage-cluster.sig"
        ]
    );
    assert!(sessions.iter().all(|s| s.external_id.is_none()));
    for stage in ["network", "cluster"] {
        let init = first(&bed, stage, Cmd::Init);
        assert_eq!(
            env_of(&init, "AWS_PROFILE"),
            Some(format!("strato-engine-{stage}").as_str())
        );
    }
    assert!(bed.logged("credentials checked (account 123456789012)"));
    let said = everything_said(&bed);
    assert!(!said.contains("stage-network"), "{said}");
}

#[tokio::test]
async fn a_federated_target_without_a_live_identity_token_stops_at_prepare() {
    let gcp = json!({"provider": "gcp", "project_id": "acme-prod-1",
        "workload_identity_provider": "projects/123/locations/global/workloadIdentityPools/strato/providers/oidc",
        "service_account": "terraform@acme-prod-1.iam.gserviceaccount.com"});
    // The deployment issues none.
    let bed1 = bed("gcp", "us-central1", gcp.clone()).await;
    let error = bed1.run_to_failure().await;
    assert_eq!(
        (error.step.as_str(), error.category),
        ("prepare", ErrorCategory::Credentials)
    );
    assert!(error.what.contains("STRATO_OIDC_ISSUER"), "{error:?}");
    assert!(bed1.engine.calls().is_empty() && bed1.cloud.sessions().is_empty());
    // Issued, but expired before the run began.
    let mut bed2 = bed("gcp", "us-central1", gcp).await;
    issue_run_tokens(&mut bed2, "x", -5).await;
    let error = bed2.run_to_failure().await;
    assert!(error.what.contains("expired"), "{error:?}");
    assert!(error.fix.contains("retry"), "{error:?}");
    assert!(bed2.engine.calls().is_empty());
}

/// What Terraform's gcs backend prints when another writer holds the lock (its lock info block).
fn locked_by(id: &str) -> String {
    format!(
        "Error: Error acquiring the state lock\n\nError message: writing \"gs://acme-tfstate/x/default.tflock\" \
         failed: googleapi: Error 412: At least one of the pre-conditions you specified did not hold., \
         conditionNotMet\nLock Info:\n  ID:        {id}\n  Path:      gs://acme-tfstate/x/default.tflock\n  \
         Operation: OperationTypeApply\n  Who:       root@runner\n"
    )
}

/// A GCP project reached through workload identity, its state in a bucket of its own.
fn gcp_target() -> serde_json::Value {
    json!({"provider": "gcp", "project_id": "acme-prod-1",
        "workload_identity_provider": "projects/123/locations/global/workloadIdentityPools/strato/providers/oidc",
        "service_account": "terraform@acme-prod-1.iam.gserviceaccount.com",
        "state_bucket": "acme-tfstate"})
}

async fn gcp_bed_with_state() -> Bed {
    let mut bed = bed("gcp", "us-central1", gcp_target()).await;
    issue_run_tokens(&mut bed, "aud", 3600).await;
    bed
}

#[tokio::test]
async fn a_dead_runs_lock_in_the_customers_storage_is_force_unlocked_once_and_the_command_rerun() {
    let bed = gcp_bed_with_state().await;
    let id = "1700000000123456";
    bed.engine
        .expect_in("network", Cmd::Plan, Reply::fail(&locked_by(id)))
        .expect_in("network", Cmd::ForceUnlock, Reply::ok());
    both_stages_apply(&bed, "");
    bed.run_to_success().await;
    let unlock = first(&bed, "network", Cmd::ForceUnlock);
    assert_eq!(unlock.args, ["force-unlock", "-force", id]);
    assert_eq!(
        bed.engine.count(Cmd::Plan),
        3,
        "the locked plan, its rerun, the next stage's"
    );
    assert!(bed.logged(&format!("released Terraform state lock {id}")));
}

#[tokio::test]
async fn a_lock_whose_holder_may_still_run_is_left_and_the_run_fails_state_locked() {
    let bed = gcp_bed_with_state().await;
    // Another operation of the cluster is unfinished (its lease ran out but its task may still run).
    let mut other = strato_domain::model::Operation::new(
        bed.op.tenant_id.clone(),
        bed.op.cluster_id.clone(),
        OperationKind::Update,
        strato_domain::ts::now(),
    );
    other.status = strato_domain::model::OperationStatus::Running;
    bed.store.store.put_operation(other.clone());
    bed.engine.expect_in("network", Cmd::Init, Reply::ok()).expect_in(
        "network",
        Cmd::Plan,
        Reply::fail(&locked_by("42")),
    );
    let error = bed.run_to_failure().await;
    assert_eq!(error.category, ErrorCategory::StateLocked, "{error:?}");
    assert_eq!(bed.engine.count(Cmd::ForceUnlock), 0);
    assert!(bed.logged(&format!(
        "operation(s) {} of this cluster may still run",
        other.operation_id
    )));
}

#[tokio::test]
async fn a_cloud_that_refuses_the_credentials_fails_prepare_with_its_fix_before_any_engine_command() {
    let bed = gcp_bed_with_state().await;
    bed.cloud.fail_cloud_preflight(crate::clouds::PreflightError {
        what: "the workload identity pool provider does not trust this issuer".into(),
        fix: "add issuer https://oidc.example.com to the provider".into(),
    });
    let error = bed.run_to_failure().await;
    assert_eq!(
        (error.step.as_str(), error.category),
        ("prepare", ErrorCategory::Credentials)
    );
    assert!(error.what.contains("does not trust this issuer"), "{error:?}");
    assert!(error.fix.contains("add issuer"), "{error:?}");
    assert!(bed.engine.calls().is_empty());
    assert_eq!(bed.cloud.cloud_checks(), ["GCP"]);
}

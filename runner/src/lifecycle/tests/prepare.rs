//! The `prepare` step's decisions: which template and inputs, which credentials go where (the engine role
//! or the tenant's target role, checked; the state role on the platform's bucket or the target account's
//! own bucket), what is redacted, and what becomes of a Terraform state lock left on the cluster's state.
//! A run that cannot be prepared fails at step `prepare` without running any engine command.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use strato_domain::ErrorCategory;
use strato_domain::model::{Operation, OperationKind, OperationStatus, Target, TargetAccount};
use strato_domain::sealed;

use super::support::{Bed, ENGINE_ROLE, STATE_ROLE, applies, credential_profiles, outputs, vpc_plan};
use crate::fakes::{Cmd, Reply};
use crate::workspace::{BACKEND_FILE, LOCK_FILE, TFVARS_FILE};

const TARGET_ROLE: &str = "arn:aws:iam::210987654321:role/strato";

/// Fails at `prepare` having run nothing.
async fn fails_at_prepare(bed: &Bed) -> strato_domain::error::UserError {
    let error = bed.run_to_failure().await;
    assert_eq!(error.step, "prepare", "{error:?}");
    assert_eq!(bed.steps(), ["prepare"], "no engine command ran");
    assert!(bed.engine.calls().is_empty());
    error
}

/// The tenant's external id, issued and sealed as the api does.
async fn issue_external_id(bed: &Bed) -> String {
    let id = sealed::generate_external_id();
    let env = sealed::seal_external_id(&bed.keys, &bed.op.tenant_id, &id)
        .await
        .unwrap();
    bed.store.set_external_id(&bed.op.tenant_id, env);
    id.expose().to_owned()
}

fn target(bed: &mut Bed, state_bucket: Option<&str>) {
    bed.edit_op(|op| {
        op.spec.as_mut().unwrap().target = Some(Target::Aws(TargetAccount {
            role_arn: TARGET_ROLE.into(),
            state_bucket: state_bucket.map(str::to_owned),
            lock_table: None,
            region: None,
            ..Default::default()
        }));
    });
}

/// The inputs, the backend block, and each credentials profile's access key id.
type Captured = (Value, Value, BTreeMap<String, String>);

/// Keeps what the stage directory held when `init` ran: the inputs, the backend block, and the profiles
/// (their access key ids) of the run's credentials file.
fn capture_init(bed: &Bed) -> Arc<Mutex<Captured>> {
    let files = Arc::new(Mutex::new((Value::Null, Value::Null, BTreeMap::new())));
    let seen = files.clone();
    bed.engine.expect(
        Cmd::Init,
        Reply::ok().on_start(move |dir| {
            let read = |f: &str| {
                std::fs::read_to_string(dir.join(f))
                    .map(|t| serde_json::from_str(&t).unwrap())
                    .unwrap_or(Value::Null)
            };
            *seen.lock().unwrap() = (read(TFVARS_FILE), read(BACKEND_FILE), credential_profiles(dir));
        }),
    );
    files
}

/// The rest of a successful one-stage update after `init`.
fn rest_of_update(bed: &Bed, plan_stdout: &str) {
    bed.engine
        .expect(Cmd::Plan, Reply::changes(b"p").stdout(plan_stdout))
        .expect(Cmd::Show, Reply::json(&vpc_plan()))
        .expect(Cmd::Apply, Reply::ok())
        .expect(Cmd::Output, Reply::json(&outputs(&[])))
        .expect(Cmd::Refresh, Reply::ok());
}

#[tokio::test]
async fn a_failed_credential_check_fails_fast_with_the_credentials_category() {
    let bed = Bed::new(OperationKind::Create, "net").await;
    bed.cloud
        .fail_preflight("the credential check (sts:GetCallerIdentity) did not answer within 10s");
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::Credentials);
    assert!(error.what.contains("GetCallerIdentity"), "{}", error.what);
}

#[tokio::test]
async fn an_engine_role_that_cannot_be_assumed_is_for_an_operator_to_fix() {
    let bed = Bed::new(OperationKind::Create, "net").await;
    bed.cloud.refuse_role(ENGINE_ROLE);
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::Credentials);
    assert!(error.what.contains("assuming the engine role"), "{}", error.what);
    assert!(
        error
            .fix
            .contains("an operator must let the runner's task role assume"),
        "{}",
        error.fix
    );
}

#[tokio::test]
async fn a_template_missing_from_the_catalog_fails_at_prepare() {
    let mut bed = Bed::new(OperationKind::Create, "net").await;
    bed.edit_op(|op| op.spec.as_mut().unwrap().template.version = "9.9.9".into());
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration);
    assert!(
        error.what.contains("runner-net@9.9.9 is not in the catalog"),
        "{}",
        error.what
    );
}

#[tokio::test]
async fn a_spec_the_template_refuses_fails_at_prepare() {
    let mut bed = Bed::new(OperationKind::Create, "net").await;
    bed.edit_op(|op| {
        op.spec
            .as_mut()
            .unwrap()
            .variables
            .insert("slow_seconds".into(), json!(9999));
    });
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration);
    assert!(error.what.contains("slow_seconds"), "{}", error.what);
}

#[tokio::test]
async fn a_platform_cluster_runs_with_the_engine_role_and_its_state_in_the_platform_bucket() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    let files = capture_init(&bed);
    rest_of_update(&bed, "");
    bed.run_to_success().await;
    bed.engine.assert_done();
    let sessions = bed.cloud.sessions();
    let roles: Vec<&str> = sessions.iter().map(|s| s.role_arn.as_str()).collect();
    assert_eq!(roles, [ENGINE_ROLE, STATE_ROLE]);
    // Each session narrowed to what it needs: the state session to this cluster's state.
    let state_policy = sessions[1].policy.as_deref().unwrap();
    let own = format!(
        "tenants/{}/clusters/{}/",
        bed.cluster.tenant_id, bed.cluster.cluster_id
    );
    assert!(state_policy.contains(&own), "{state_policy}");
    assert!(sessions[0].policy.is_some());
    // The engine's providers get the engine role's session; the backend the state session's: each a
    // profile of the run's credentials file, no key in the environment or the backend block.
    let env = &bed.engine.calls()[0].env;
    assert!(
        env.contains(&("AWS_PROFILE".into(), "strato-engine".into())),
        "{env:?}"
    );
    assert!(
        !env.iter().any(|(k, _)| k.starts_with("AWS_ACCESS_KEY")
            || k == "AWS_SECRET_ACCESS_KEY"
            || k == "AWS_SESSION_TOKEN"),
        "{env:?}"
    );
    let (_, backend, profiles) = files.lock().unwrap().clone();
    let s3 = &backend["terraform"]["backend"]["s3"];
    assert_eq!(s3["bucket"], bed.cfg.names.bucket("state"), "{backend}");
    assert_eq!(s3["key"], bed.state_key("main"));
    assert_eq!(s3["profile"], "strato-state", "{backend}");
    assert!(s3.get("access_key").is_none(), "{backend}");
    assert_eq!(profiles["strato-engine"], "ASIAFAKE0001");
    assert_eq!(profiles["strato-state"], "ASIAFAKE0002");
}

#[tokio::test]
async fn a_target_account_gets_its_role_checked_and_its_own_state_bucket() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    let external_id = issue_external_id(&bed).await;
    target(&mut bed, Some("customer-state"));
    let files = capture_init(&bed);
    // The engine prints the external id and the session's secret: neither may reach the log.
    rest_of_update(
        &bed,
        &format!("tags.ref = {external_id}\nsecret = fake-secret-key-0001"),
    );
    bed.run_to_success().await;
    bed.engine.assert_done();
    let sessions = bed.cloud.sessions();
    assert_eq!(sessions.len(), 1, "no engine or state role: {sessions:?}");
    assert_eq!(sessions[0].role_arn, TARGET_ROLE);
    assert_eq!(sessions[0].external_id.as_deref(), Some(external_id.as_str()));
    assert_eq!(bed.cloud.customer_buckets(), ["customer-state"]);
    let (_, backend, profiles) = files.lock().unwrap().clone();
    let s3 = &backend["terraform"]["backend"]["s3"];
    assert_eq!(s3["bucket"], "customer-state", "{backend}");
    assert!(
        s3.get("access_key").is_none() && s3.get("profile").is_none(),
        "the backend uses the environment's profile: the target's session"
    );
    assert_eq!(profiles.keys().collect::<Vec<_>>(), ["strato-engine"]);
    assert!(bed.logged("credentials checked (account 123456789012)"));
    let log = bed.log().join("\n");
    assert!(!log.contains(&external_id), "{log}");
    assert!(!log.contains("fake-secret-key-0001"), "{log}");
    assert!(log.contains("(sensitive value)"));
}

#[tokio::test]
async fn a_target_role_that_does_not_require_the_external_id_is_refused() {
    let mut bed = Bed::new(OperationKind::Create, "net").await;
    issue_external_id(&bed).await;
    target(&mut bed, None);
    bed.cloud.open_role(TARGET_ROLE);
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::Credentials);
    assert!(
        error.what.contains("can be assumed without your external id"),
        "{}",
        error.what
    );
}

#[tokio::test]
async fn a_target_role_that_takes_any_external_id_is_refused() {
    let mut bed = Bed::new(OperationKind::Create, "net").await;
    issue_external_id(&bed).await;
    target(&mut bed, None);
    bed.cloud.any_id_role(TARGET_ROLE);
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::Credentials);
    assert!(
        error.what.contains("with an external id that is not yours"),
        "{}",
        error.what
    );
}

#[tokio::test]
async fn a_tenant_without_an_external_id_cannot_use_a_target_role() {
    let mut bed = Bed::new(OperationKind::Create, "net").await;
    target(&mut bed, None);
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::Credentials);
    assert!(error.what.contains("no external id yet"), "{}", error.what);
    assert!(bed.cloud.sessions().is_empty());
}

#[tokio::test]
async fn sealed_variables_are_opened_for_the_engine_and_never_logged() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    let (keys, tenant, cluster) = (
        bed.keys.clone(),
        bed.op.tenant_id.clone(),
        bed.op.cluster_id.clone(),
    );
    let mut variables = std::collections::BTreeMap::new();
    variables.insert("db_password".to_owned(), json!("hunter2-password"));
    sealed::seal_variables(&keys, &tenant, &cluster, |k| k == "db_password", &mut variables)
        .await
        .unwrap();
    bed.edit_op(|op| op.spec.as_mut().unwrap().variables = variables);
    let files = capture_init(&bed);
    rest_of_update(&bed, "db_password = hunter2-password");
    bed.run_to_success().await;
    let (tfvars, ..) = files.lock().unwrap().clone();
    assert_eq!(
        tfvars["db_password"], "hunter2-password",
        "the engine gets the value"
    );
    assert!(!bed.log().join("\n").contains("hunter2-password"));
    assert!(bed.logged("db_password = (sensitive value)"), "{:#?}", bed.log());
}

/// Another operation of the cluster, still running (its lease may have run out, its task may be alive).
fn running_operation(bed: &Bed) -> Operation {
    let mut op = Operation::new(
        bed.op.tenant_id.clone(),
        bed.op.cluster_id.clone(),
        OperationKind::Update,
        strato_domain::ts::now(),
    );
    op.status = OperationStatus::Running;
    op.task_arn = Some("arn:aws:ecs:us-east-1:123456789012:task/runner/0f1e".into());
    bed.store.store.put_operation(op.clone());
    op
}

const LOCK_INFO: &str = r#"{"ID":"5f0c","Operation":"OperationTypeApply","Who":"runner@ip-10-0-1-7"}"#;

#[tokio::test]
async fn a_state_lock_a_live_run_may_hold_is_kept_and_the_run_fails_state_locked() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    let earlier = running_operation(&bed);
    let (table, lock_id) = bed.state_lock("main");
    bed.cloud.hold_lock(&table, &lock_id, LOCK_INFO);
    let error = fails_at_prepare(&bed).await;
    assert_eq!(error.category, ErrorCategory::StateLocked);
    assert!(
        error.what.contains(&lock_id) && error.what.contains(earlier.operation_id.as_str()),
        "{}",
        error.what
    );
    assert!(error.fix.contains(earlier.operation_id.as_str()), "{}", error.fix);
    assert_eq!(bed.cloud.held(&table), [lock_id], "the live run's lock is kept");
}

#[tokio::test]
async fn a_state_lock_left_by_a_finished_run_is_released_and_noted() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    let mut earlier = running_operation(&bed);
    earlier.status = OperationStatus::Failed;
    bed.store.store.put_operation(earlier);
    let (table, lock_id) = bed.state_lock("main");
    bed.cloud.hold_lock(&table, &lock_id, LOCK_INFO);
    applies(&bed.engine, "main", &vpc_plan(), &outputs(&[]));
    bed.run_to_success().await;
    bed.engine.assert_done();
    assert!(bed.cloud.held(&table).is_empty());
    assert!(
        bed.log()
            .iter()
            .any(|t| t.contains("released Terraform state lock") && t.contains("runner@ip-10-0-1-7")),
        "{:#?}",
        bed.log()
    );
}

#[tokio::test]
async fn a_run_waits_while_the_state_lock_may_be_held_and_releases_it_once_its_run_ended() {
    let mut bed = Bed::new(OperationKind::Update, "net").await;
    // Polled every 500 ms.
    bed.cfg.state_lock_wait = std::time::Duration::from_secs(5);
    let earlier = running_operation(&bed);
    let (table, lock_id) = bed.state_lock("main");
    bed.cloud.hold_lock(&table, &lock_id, LOCK_INFO);
    applies(&bed.engine, "main", &vpc_plan(), &outputs(&[]));
    let store = bed.store.store.clone();
    let ender = tokio::spawn(async move {
        // The earlier run's task stopped and status failed it, while this run waits.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let mut op = store.operation(&earlier.operation_id).unwrap();
        op.status = OperationStatus::Failed;
        store.put_operation(op);
    });
    bed.run_to_success().await;
    ender.await.unwrap();
    bed.engine.assert_done();
    assert!(bed.cloud.held(&table).is_empty());
    assert!(bed.logged("waiting up to 5s for them to end"), "{:#?}", bed.log());
    assert!(bed.logged("released Terraform state lock"));
}

#[tokio::test]
async fn a_drift_check_keeps_no_plan_and_no_artifact_or_event_holds_a_sensitive_input() {
    const SECRET: &str = "drift-s3cret-password-value";
    let mut bed = Bed::new(OperationKind::DriftCheck, "net").await;
    let (keys, tenant, cluster) = (
        bed.keys.clone(),
        bed.op.tenant_id.clone(),
        bed.op.cluster_id.clone(),
    );
    let mut variables = std::collections::BTreeMap::new();
    variables.insert("db_password".to_owned(), json!(SECRET));
    sealed::seal_variables(&keys, &tenant, &cluster, |k| k == "db_password", &mut variables)
        .await
        .unwrap();
    bed.edit_op(|op| op.spec.as_mut().unwrap().variables = variables);
    bed.engine
        .expect(Cmd::Init, Reply::ok())
        .expect(
            Cmd::Plan,
            Reply::changes(SECRET.as_bytes())
                .stdout(&format!("~ password = {SECRET}"))
                .debug(&format!("[DEBUG] request body password={SECRET}")),
        )
        .expect(Cmd::Show, Reply::json(&vpc_plan()))
        .expect(Cmd::Output, Reply::json(&outputs(&[])));
    bed.run_to_final().await;
    bed.engine.assert_done();
    let keys = bed.sinks.keys();
    assert!(keys.iter().any(|k| k.starts_with("debug/")), "{keys:?}");
    assert!(
        !keys.iter().any(|k| k.starts_with("plans/")),
        "no saved plan is kept: {keys:?}"
    );
    for key in &keys {
        let body = bed.sinks.object(key).unwrap();
        assert!(!String::from_utf8_lossy(&body).contains(SECRET), "{key} holds it");
    }
    assert!(
        !serde_json::to_string(&bed.reporter.all())
            .unwrap()
            .contains(SECRET)
    );
}

/// The inputs the `eks` fixture's `cluster` stage (whose `iam` module creates a role) gets on a create.
async fn cluster_stage_inputs(bed: &Bed) -> Value {
    super::support::cluster_stage_inputs(bed, &["subnet-1", "subnet-2"], &vpc_plan()).await
}

#[tokio::test]
async fn modules_in_the_platform_account_get_the_deployments_permissions_boundary() {
    let bed = Bed::new(OperationKind::Create, "eks").await;
    let inputs = cluster_stage_inputs(&bed).await;
    // The engine role's account, the deployment's boundary: what the engine session requires on new roles.
    assert_eq!(
        inputs["permissions_boundary"],
        format!(
            "arn:aws:iam::123456789012:policy/{}-engine-boundary",
            bed.cfg.names.prefix()
        ),
        "{inputs}"
    );
}

#[tokio::test]
async fn modules_in_a_target_account_get_no_permissions_boundary() {
    let mut bed = Bed::new(OperationKind::Create, "eks").await;
    issue_external_id(&bed).await;
    target(&mut bed, None);
    let inputs = cluster_stage_inputs(&bed).await;
    assert_eq!(inputs["permissions_boundary"], "", "{inputs}");
}

#[tokio::test]
async fn a_template_that_pins_its_providers_initializes_every_stage_with_its_lock_file_read_only() {
    let bed = Bed::new(OperationKind::Update, "locked").await;
    let lock = Arc::new(Mutex::new(None));
    let seen = lock.clone();
    bed.engine.expect(
        Cmd::Init,
        Reply::ok().on_start(move |dir| {
            *seen.lock().unwrap() = std::fs::read_to_string(dir.join(LOCK_FILE)).ok();
        }),
    );
    rest_of_update(&bed, "");
    bed.run_to_success().await;
    bed.engine.assert_done();
    let published = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/templates/locked")
            .join(LOCK_FILE),
    )
    .unwrap();
    assert_eq!(
        lock.lock().unwrap().as_deref(),
        Some(published.as_str()),
        "the stage starts with the template's lock file"
    );
    let init = &bed.engine.calls()[0];
    assert!(
        init.args.iter().any(|a| a == "-lockfile=readonly"),
        "{:?}",
        init.args
    );
}

#[tokio::test]
async fn a_template_without_a_lock_file_lets_init_choose_and_a_lock_mismatch_names_the_fix() {
    let bed = Bed::new(OperationKind::Update, "net").await;
    bed.engine.expect(Cmd::Init, Reply::ok());
    rest_of_update(&bed, "");
    bed.run_to_success().await;
    let init = &bed.engine.calls()[0];
    assert!(
        !init.args.iter().any(|a| a.starts_with("-lockfile")),
        "{:?}",
        init.args
    );

    // The engine refuses a package the lock file does not list: the template's to fix, not retried.
    let bed = Bed::new(OperationKind::Update, "locked").await;
    bed.engine.expect(
        Cmd::Init,
        Reply::fail(
            // Terraform 0.15's words, wrapped as it wraps them.
            "Error: Failed to install provider\n\nError while installing hashicorp/aws v3.39.0: the current package for\n\
             registry.terraform.io/hashicorp/aws 3.39.0 doesn't match any of the checksums\n\
             previously recorded in the dependency lock file",
        ),
    );
    let error = bed.run_to_failure().await;
    bed.engine.assert_done();
    assert_eq!(error.step, "init", "{error:?}");
    assert_eq!(error.category, ErrorCategory::InvalidConfiguration, "{error:?}");
    assert!(error.fix.contains("providers lock"), "{error:?}");
}

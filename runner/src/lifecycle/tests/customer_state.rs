//! The state in the customer's own storage: every run lists its versions at the end (metadata only, in the
//! final event), and a `restore-state` run copies the chosen version back natively, with no engine command,
//! reporting what it did or what failed with the fix; no credential is in any of it.

use serde_json::json;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{CustomerStateReport, OperationKind, RestoreRequest, Target};

use super::clouds::{DO_TOKEN, SPACES_SECRET, both_stages_apply, everything_said, register_do_token};
use super::support::Bed;
use crate::clouds::PreflightError;
use crate::fakes::{Cmd, FakeEngine};

const SPACES: &str = "bucket acme-tfstate at https://ams3.digitaloceanspaces.com";

/// An operation of `kind` on a DigitalOcean cluster whose state is in the tenant's Spaces bucket.
async fn spaces_bed(kind: OperationKind) -> Bed {
    let mut bed = Bed::with_engine(kind, "clouds", FakeEngine::new("1.11.4")).await;
    let target: Target = serde_json::from_value(
        json!({"provider": "digitalocean", "state_bucket": "acme-tfstate", "state_region": "ams3"}),
    )
    .unwrap();
    bed.edit_op(|op| {
        let spec = op.spec.as_mut().unwrap();
        spec.provider = "digitalocean".parse().unwrap();
        spec.region = "nyc3".to_owned();
        spec.target = Some(target);
    });
    register_do_token(&bed, true).await;
    bed
}

fn report_of(ev: &RunnerEvent) -> Option<CustomerStateReport> {
    match ev {
        RunnerEvent::Succeeded { state, .. } | RunnerEvent::Failed { state, .. } => state.as_deref().cloned(),
        _ => None,
    }
}

#[tokio::test]
async fn a_restore_copies_the_chosen_version_back_without_the_engine_and_reports_the_new_list() {
    let mut bed = spaces_bed(OperationKind::RestoreState).await;
    let key = bed.state_key("network");
    bed.cloud.put_state_version(&key, "v1", b"{\"serial\": 1}");
    bed.cloud
        .put_state_version(&key, "v2", b"{\"serial\": 2, \"broken\"");
    bed.edit_op(|op| {
        op.restore = Some(RestoreRequest {
            key: key.clone(),
            version_id: "v1".into(),
        })
    });
    let ev = bed.run_to_final().await;
    assert!(matches!(ev, RunnerEvent::Succeeded { .. }), "{ev:#?}");
    assert_eq!(bed.cloud.state_restores(), [(key.clone(), "v1".to_owned())]);
    assert_eq!(
        bed.cloud.current_state(&key).unwrap(),
        b"{\"serial\": 1}",
        "the chosen version's bytes are current"
    );
    let report = report_of(&ev).expect("the new list is reported");
    assert_eq!(report.storage, SPACES);
    let restored = report.restored.unwrap();
    assert_eq!(
        (restored.from_version.as_str(), restored.new_version.as_str()),
        ("v1", "v3")
    );
    let listed: Vec<_> = report
        .versions
        .iter()
        .map(|v| (v.version_id.as_str(), v.is_latest))
        .collect();
    assert_eq!(listed, [("v3", true), ("v2", false), ("v1", false)]);
    assert!(
        !bed.engine
            .calls()
            .iter()
            .any(|c| matches!(c.cmd, Cmd::Init | Cmd::Plan | Cmd::Apply)),
        "no engine command: {:?}",
        bed.engine.calls()
    );
    assert_eq!(bed.finished("restore-state"), [true]);
    let said = everything_said(&bed);
    assert!(
        !said.contains(DO_TOKEN) && !said.contains(SPACES_SECRET),
        "{said}"
    );
}

#[tokio::test]
async fn a_restore_the_storage_refuses_fails_with_what_and_fix_and_copies_nothing() {
    let mut bed = spaces_bed(OperationKind::RestoreState).await;
    let key = bed.state_key("network");
    bed.cloud.put_state_version(&key, "v1", b"one");
    bed.cloud.put_state_version(&key, "v2", b"two");
    bed.edit_op(|op| {
        op.restore = Some(RestoreRequest {
            key: key.clone(),
            version_id: "v1".into(),
        })
    });
    bed.cloud.refuse_storage(PreflightError {
        what: "CopyObject on bucket acme-tfstate failed: AccessDenied".into(),
        fix: "the run's storage credentials must be allowed CopyObject on bucket acme-tfstate".into(),
    });
    let error = bed.run_to_failure().await;
    assert_eq!(error.step, "restore-state");
    assert!(
        error
            .what
            .contains(&format!("copying version v1 of {key} back in your {SPACES}")),
        "{error:?}"
    );
    assert!(error.what.contains("AccessDenied"), "{error:?}");
    assert!(error.fix.contains("allowed CopyObject"), "{error:?}");
    assert_eq!(bed.cloud.current_state(&key).unwrap(), b"two");
    assert!(bed.cloud.state_restores().is_empty());
    assert_eq!(bed.finished("restore-state"), [false]);
    let said = everything_said(&bed);
    assert!(
        !said.contains(DO_TOKEN) && !said.contains(SPACES_SECRET),
        "{said}"
    );
}

#[tokio::test]
async fn a_restore_of_a_key_outside_the_clusters_folder_is_refused_before_any_copy() {
    let mut bed = spaces_bed(OperationKind::RestoreState).await;
    bed.cloud
        .put_state_version("tenants/other/clusters/x/main.tfstate", "v1", b"theirs");
    bed.edit_op(|op| {
        op.restore = Some(RestoreRequest {
            key: "tenants/other/clusters/x/main.tfstate".into(),
            version_id: "v1".into(),
        })
    });
    let error = bed.run_to_failure().await;
    assert!(
        error.what.contains("not one of this cluster's state objects"),
        "{error:?}"
    );
    assert!(bed.cloud.state_restores().is_empty());
}

#[tokio::test]
async fn a_create_with_its_state_in_spaces_lists_the_versions_at_its_end() {
    let bed = spaces_bed(OperationKind::Create).await;
    let key = bed.state_key("network");
    // What the engine's applies leave in the bucket (the fake storage does not watch the engine).
    bed.cloud.put_state_version(&key, "v1", b"one");
    bed.cloud.put_state_version(&key, "v2", b"two");
    both_stages_apply(&bed, "Plan: 1 to add");
    let ev = bed.run_to_final().await;
    let report = report_of(&ev).expect("listed");
    assert_eq!(report.storage, SPACES);
    assert_eq!(report.versions.len(), 2);
    assert!(report.versions.iter().all(|v| v.key == key));
    assert!(report.restored.is_none());
    assert!(bed.logged(&format!("2 state version(s) listed in your {SPACES}")));
}

#[tokio::test]
async fn a_list_the_storage_refuses_is_said_in_the_log_and_the_run_still_succeeds() {
    let bed = spaces_bed(OperationKind::Create).await;
    bed.cloud.refuse_storage(PreflightError {
        what: "ListObjectVersions on bucket acme-tfstate failed: AccessDenied".into(),
        fix: "allow s3:ListBucketVersions".into(),
    });
    both_stages_apply(&bed, "Plan: 1 to add");
    let ev = bed.run_to_final().await;
    assert!(
        matches!(ev, RunnerEvent::Succeeded { state: None, .. }),
        "{ev:#?}"
    );
    assert!(bed.logged("could not be listed: ListObjectVersions on bucket acme-tfstate failed"));
}

#[tokio::test]
async fn a_run_with_its_state_in_stratos_bucket_reports_no_listing() {
    let bed = Bed::quiet_drift_check().await;
    let ev = bed.run_to_final().await;
    assert!(
        matches!(ev, RunnerEvent::Succeeded { state: None, .. }),
        "{ev:#?}"
    );
}

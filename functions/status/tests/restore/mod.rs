//! A run's report of the state versions in the customer's own storage: the list is kept on the cluster, a
//! `restore-state` run's copy is recorded as a restore, and the cluster's state never changes (a restore is
//! allowed on a FAILED cluster, which stays FAILED; an ACTIVE one stays ACTIVE).

use super::*;
use strato_domain::model::{CustomerStateReport, ListedStateVersion, RestoredVersion};

fn listed(id: &str, latest: bool) -> ListedStateVersion {
    ListedStateVersion {
        key: "tenants/acme/clusters/c/main.tfstate".into(),
        version_id: id.into(),
        last_modified: None,
        size: 7,
        is_latest: latest,
    }
}

fn report(
    versions: Vec<ListedStateVersion>,
    restored: Option<RestoredVersion>,
) -> Option<Box<CustomerStateReport>> {
    Some(Box::new(CustomerStateReport {
        storage: "Cloud Storage bucket acme-tf".into(),
        versions,
        restored,
    }))
}

#[tokio::test]
async fn a_restore_runs_success_records_the_restore_and_the_new_list_and_a_failed_cluster_stays_failed() {
    let w = world();
    let (c, run) = w.running(ClusterState::Failed, OperationKind::RestoreState).await;
    let restored = RestoredVersion {
        key: "tenants/acme/clusters/c/main.tfstate".into(),
        from_version: "1".into(),
        new_version: "3".into(),
    };
    let ev = runner(RunnerEvent::Succeeded {
        operation_id: run.op.clone(),
        fencing_token: run.token,
        outputs: BTreeMap::new(),
        drift: None,
        estimate: None,
        preview: None,
        state: report(
            vec![listed("3", true), listed("2", false), listed("1", false)],
            Some(restored),
        ),
        at: w.clock.now(),
    });
    assert!(w.deliver_one(ev.clone(), 1).await);
    assert_eq!(w.op(&run.op).status, OperationStatus::Succeeded);
    let cluster = w.cluster(&c);
    assert_eq!(cluster.state(), ClusterState::Failed);
    let listing = cluster.customer_state.clone().unwrap();
    assert_eq!(listing.operation_id, run.op);
    assert_eq!(listing.storage, "Cloud Storage bucket acme-tf");
    assert_eq!(listing.versions.len(), 3);
    assert_eq!(cluster.state_restores.len(), 1);
    assert_eq!(
        (
            cluster.state_restores[0].from_version.as_str(),
            cluster.state_restores[0].new_version.as_str()
        ),
        ("1", "3")
    );
    assert!(!w.holds_anything(&c, &run));
    // Delivered again: recorded once.
    assert!(w.deliver_one(ev, 2).await);
    assert_eq!(w.cluster(&c).state_restores.len(), 1);
}

#[tokio::test]
async fn a_failed_runs_list_is_kept_and_an_active_clusters_drift_check_leaves_it_active() {
    let w = world();
    let (c, run) = w.running(ClusterState::Active, OperationKind::DriftCheck).await;
    let ev = runner(RunnerEvent::Failed {
        operation_id: run.op.clone(),
        fencing_token: run.token,
        error: apply_error(),
        state: report(vec![listed("2", true), listed("1", false)], None),
        at: w.clock.now(),
    });
    assert!(w.deliver_one(ev, 1).await);
    let cluster = w.cluster(&c);
    assert_eq!(cluster.state(), ClusterState::Active);
    assert_eq!(cluster.customer_state.unwrap().versions.len(), 2);
    assert!(cluster.state_restores.is_empty());
}

//! A run's report of the state versions in the customer's own storage (in its final event): the newest list
//! is kept on the cluster (what `GET …/state-versions` answers), and a `restore-state` run's copy is recorded
//! as a restore. The cluster's state is never changed here (a restore leaves an ACTIVE or FAILED cluster as
//! it is).

use strato_domain::messages::RunnerEvent;
use strato_domain::model::{Cluster, CustomerStateListing, CustomerStateReport, Operation, StateRestore};
use time::OffsetDateTime;

use crate::StatusError;
use crate::cluster_end::change;
use crate::ports::{Ports, Status};

/// The report a final event carries, and when the run ended.
fn report_of(ev: &RunnerEvent) -> Option<(&CustomerStateReport, OffsetDateTime)> {
    match ev {
        RunnerEvent::Succeeded {
            state: Some(s), at, ..
        }
        | RunnerEvent::Failed {
            state: Some(s), at, ..
        } => Some((s, *at)),
        _ => None,
    }
}

/// Records `report` on `c`: the list unless a later run's list is there already (events arrive out of
/// order and twice), and the restore unless it is recorded already. Whether anything changed.
pub(crate) fn record_report(
    c: &mut Cluster,
    op: &Operation,
    report: &CustomerStateReport,
    at: OffsetDateTime,
) -> bool {
    let mut changed = false;
    let newer = c.customer_state.as_ref().is_none_or(|l| l.listed_at < at);
    // A restore whose listing afterwards failed reports no versions: the last list stays.
    let listed = report.restored.is_none() || !report.versions.is_empty();
    if newer && listed {
        c.customer_state = Some(CustomerStateListing::capped(
            report.storage.clone(),
            &report.versions,
            at,
            op.operation_id.clone(),
        ));
        changed = true;
    }
    if let Some(r) = &report.restored {
        let known = c
            .state_restores
            .iter()
            .any(|s| s.key == r.key && s.new_version == r.new_version);
        if !known {
            c.record_restore(StateRestore {
                key: r.key.clone(),
                from_version: r.from_version.clone(),
                new_version: r.new_version.clone(),
                restored_by: op
                    .requested_by
                    .clone()
                    .unwrap_or_else(|| format!("tenant:{}", op.tenant_id)),
                at,
            });
            changed = true;
        }
    }
    changed
}

/// Saves the report a final event carries on the operation's cluster (nothing when it carries none).
pub(crate) async fn record<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    ev: &RunnerEvent,
) -> Result<(), StatusError> {
    let Some((report, at)) = report_of(ev) else {
        return Ok(());
    };
    if !op.kind.has_cluster() {
        return Ok(());
    }
    change(ctx.store, &op.tenant_id, &op.cluster_id, |c| {
        record_report(c, op, report, at)
    })
    .await?;
    if let Some(r) = &report.restored {
        tracing::info!(cluster_id = %op.cluster_id, key = %r.key, from = %r.from_version,
            "state version restored in the customer's storage");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::running;
    use strato_domain::model::{ClusterState, ListedStateVersion, OperationKind, RestoredVersion};
    use strato_domain::ts;

    fn listed(id: &str, latest: bool) -> ListedStateVersion {
        ListedStateVersion {
            key: "tenants/acme/clusters/c/main/default.tfstate".into(),
            version_id: id.into(),
            last_modified: None,
            size: 10,
            is_latest: latest,
        }
    }

    #[test]
    fn a_restore_run_records_the_restore_and_the_new_list_once_and_leaves_the_cluster_as_it_is() {
        let (mut op, mut c) = running(OperationKind::RestoreState, ClusterState::Failed);
        op.requested_by = Some("user-1".into());
        let report = CustomerStateReport {
            storage: "Cloud Storage bucket b".into(),
            versions: vec![listed("3", true), listed("2", false), listed("1", false)],
            restored: Some(RestoredVersion {
                key: "tenants/acme/clusters/c/main/default.tfstate".into(),
                from_version: "1".into(),
                new_version: "3".into(),
            }),
        };
        let at = ts::now();
        assert!(record_report(&mut c, &op, &report, at));
        assert_eq!(c.state(), ClusterState::Failed);
        let l = c.customer_state.clone().unwrap();
        assert_eq!((l.versions.len(), &l.operation_id), (3, &op.operation_id));
        assert_eq!(c.state_restores.len(), 1);
        assert_eq!(c.state_restores[0].restored_by, "user-1");
        assert_eq!(c.state_restores[0].from_version, "1");
        // The same event again changes nothing.
        assert!(!record_report(&mut c, &op, &report, at));
        assert_eq!(c.state_restores.len(), 1);
    }

    #[test]
    fn an_older_runs_list_arriving_late_does_not_replace_a_newer_one() {
        let (older, mut c) = running(OperationKind::DriftCheck, ClusterState::Active);
        let (newer, _) = running(OperationKind::Update, ClusterState::Active);
        let report = |n: usize| CustomerStateReport {
            storage: "s".into(),
            versions: (0..n).map(|i| listed(&i.to_string(), i == 0)).collect(),
            restored: None,
        };
        let t1 = ts::now();
        let t2 = t1 + time::Duration::seconds(5);
        assert!(record_report(&mut c, &newer, &report(2), t2));
        assert!(!record_report(&mut c, &older, &report(1), t1));
        let l = c.customer_state.unwrap();
        assert_eq!((l.versions.len(), l.operation_id), (2, newer.operation_id));
    }
}

//! What an operation's end does to its cluster: which state it moves to and what it records there. The
//! decision ([`cluster_end`]) and each change to the record are pure; [`apply_to_cluster`] saves them.

use strato_coordination::{fail_cluster, step_to, update_cluster};
use strato_domain::error::{ErrorCategory, UserError};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{Cluster, ClusterSpec, ClusterState, Operation, OperationKind, ResourceChange};
use strato_domain::ports::{Clusters, PortError};
use time::OffsetDateTime;

use crate::ending::{Final, Outputs};
use crate::ports::{Ports, Status};
use crate::{StatusError, drift};

/// The change an ended operation makes to its cluster.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClusterEnd<'a> {
    /// No cluster is read or written: an estimate (its id names no cluster), a plan, or a plan or drift
    /// check that failed or was cancelled.
    Untouched,
    /// A create whose outputs were verified: PROVISIONING → CONFIGURING (saved) → ACTIVE.
    Created(&'a Outputs),
    /// ACTIVE with the update's spec, and its outputs when it produced any.
    Updated {
        outputs: &'a Outputs,
        spec: Option<&'a ClusterSpec>,
    },
    /// DELETED, outputs cleared.
    Deleted,
    /// The drift check's result is recorded.
    DriftChecked {
        changes: Vec<ResourceChange>,
        at: OffsetDateTime,
    },
    /// A create, update or delete that failed or was cancelled mid-way: FAILED with this error.
    Failed(UserError),
    /// An update cancelled by request: the previous configuration still runs, back to ACTIVE.
    UpdateCancelled,
}

/// Given the operation and how it ends, what happens to its cluster.
pub(crate) fn cluster_end<'a>(op: &'a Operation, fin: &'a Final) -> ClusterEnd<'a> {
    if !op.kind.has_cluster() {
        return ClusterEnd::Untouched;
    }
    match (op.kind, fin) {
        (OperationKind::Create, Final::Succeeded { outputs, .. }) => ClusterEnd::Created(outputs),
        (OperationKind::Update, Final::Succeeded { outputs, .. }) => ClusterEnd::Updated {
            outputs,
            spec: op.spec.as_ref(),
        },
        (OperationKind::Delete, Final::Succeeded { .. }) => ClusterEnd::Deleted,
        (OperationKind::DriftCheck, Final::Succeeded { drift, at, .. }) => ClusterEnd::DriftChecked {
            changes: drift.clone().unwrap_or_default(),
            at: *at,
        },
        (OperationKind::Plan | OperationKind::Estimate, Final::Succeeded { .. }) => ClusterEnd::Untouched,
        (kind, Final::Failed(err)) if kind.mutates() => ClusterEnd::Failed(err.clone()),
        (OperationKind::Update, Final::Cancelled) => ClusterEnd::UpdateCancelled,
        (kind, Final::Cancelled) if kind.mutates() => ClusterEnd::Failed(UserError::new(
            ErrorCategory::Cancelled,
            op.current_step().map_or("runner", |s| s.name.as_str()),
            format!(
                "the {} was cancelled before it finished; resources may be half-built",
                if kind == OperationKind::Create {
                    "create"
                } else {
                    "delete"
                }
            ),
        )),
        // Plans and drift checks that fail or are cancelled leave the cluster as it is.
        _ => ClusterEnd::Untouched,
    }
}

/// Saves what [`cluster_end`] decided; the cluster as saved, or `None` when it was left untouched.
pub(crate) async fn apply_to_cluster<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    fin: &Final,
) -> Result<Option<Cluster>, StatusError> {
    let store = ctx.store;
    let (tenant, id) = (&op.tenant_id, &op.cluster_id);
    let cluster = match cluster_end(op, fin) {
        ClusterEnd::Untouched => return Ok(None),
        ClusterEnd::Created(outputs) => {
            // CONFIGURING is a real, saved intermediate state. Templates with an agent wait there (see
            // `agent::await_agent`); here the required outputs were verified before, so it goes on to ACTIVE.
            change(store, tenant, id, |c| to_configuring(c, outputs)).await?;
            change(store, tenant, id, configured).await?
        }
        ClusterEnd::Updated { outputs, spec } => {
            change(store, tenant, id, |c| updated(c, outputs, spec)).await?
        }
        ClusterEnd::Deleted => change(store, tenant, id, deleted).await?,
        ClusterEnd::DriftChecked { changes, at } => {
            // Counted once: a redelivered result finds it recorded (the last try's answer is what was saved).
            let mut recorded = false;
            let c = change(store, tenant, id, |c| {
                recorded = drift::record_drift(c, &op.operation_id, &changes, at);
                recorded
            })
            .await?;
            if recorded && !changes.is_empty() {
                strato_domain::vitals::drift_found(&c.spec.template.name);
            }
            c
        }
        ClusterEnd::Failed(err) => change(store, tenant, id, |c| fail_cluster(c, &err)).await?,
        ClusterEnd::UpdateCancelled => {
            change(store, tenant, id, |c| step_to(c, ClusterState::Active)).await?
        }
    };
    Ok(Some(cluster))
}

/// [`update_cluster`] with an infallible change.
pub(crate) async fn change(
    store: &impl Clusters,
    tenant: &TenantId,
    id: &ClusterId,
    mut edit: impl FnMut(&mut Cluster) -> bool,
) -> Result<Cluster, PortError> {
    update_cluster(store, tenant, id, |c| Ok::<_, PortError>(edit(c))).await
}

/// A provisioning cluster whose apply finished: CONFIGURING with its outputs. `false` (nothing done) once
/// it is past PROVISIONING, so a redelivery changes nothing.
pub(crate) fn to_configuring(c: &mut Cluster, outputs: &Outputs) -> bool {
    if c.state() != ClusterState::Provisioning {
        return false;
    }
    step_to(c, ClusterState::Configuring);
    c.outputs = outputs.clone();
    true
}

/// A configuring cluster that is ready: ACTIVE, its deadline and last error cleared.
fn configured(c: &mut Cluster) -> bool {
    if c.state() != ClusterState::Configuring {
        return false;
    }
    step_to(c, ClusterState::Active);
    c.configuring_deadline = None;
    c.last_error = None;
    true
}

fn updated(c: &mut Cluster, outputs: &Outputs, spec: Option<&ClusterSpec>) -> bool {
    if !step_to(c, ClusterState::Active) {
        return false;
    }
    if !outputs.is_empty() {
        c.outputs = outputs.clone();
    }
    if let Some(spec) = spec {
        c.spec = spec.clone();
    }
    c.last_error = None;
    clear_drift(c);
    true
}

fn deleted(c: &mut Cluster) -> bool {
    let moved = step_to(c, ClusterState::Deleted);
    if moved {
        c.outputs.clear();
        clear_drift(c);
    }
    moved
}

/// A successful update applied the desired state (reverting whatever had drifted), and a deleted cluster has
/// nothing left to drift: the last check's findings no longer hold. When it ran stays on record, and which
/// check it was (so a late redelivery of that check's result is still recognised and not recorded again).
fn clear_drift(c: &mut Cluster) {
    c.drift.drifted = false;
    c.drift.changed_resources.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::running;
    use strato_domain::model::Step;
    use strato_domain::ts;

    fn success(drift: Option<Vec<ResourceChange>>) -> Final {
        Final::Succeeded {
            outputs: Outputs::from([("endpoint".to_owned(), serde_json::json!("https://k8s"))]),
            drift,
            estimate: None,
            preview: None,
            at: ts::now(),
        }
    }

    #[test]
    fn a_create_goes_through_configuring_to_active_once() {
        let (op, mut c) = running(OperationKind::Create, ClusterState::Provisioning);
        let fin = success(None);
        let ClusterEnd::Created(outputs) = cluster_end(&op, &fin) else {
            panic!("{:?}", cluster_end(&op, &fin))
        };
        assert!(to_configuring(&mut c, outputs));
        assert_eq!(c.state(), ClusterState::Configuring);
        assert!(configured(&mut c));
        assert_eq!(c.state(), ClusterState::Active);
        assert_eq!(c.outputs, *outputs);
        assert!(
            !to_configuring(&mut c, outputs),
            "a redelivered success changes nothing"
        );
        assert!(!configured(&mut c));
    }

    #[test]
    fn a_drift_result_is_recorded_on_the_cluster() {
        let (op, _) = running(OperationKind::DriftCheck, ClusterState::Active);
        let change = ResourceChange {
            address: "aws_eks_node_group.main".into(),
            actions: vec!["update".into()],
        };
        let fin = success(Some(vec![change.clone()]));
        assert!(matches!(
            cluster_end(&op, &fin),
            ClusterEnd::DriftChecked { changes, .. } if changes == vec![change]
        ));
        let failed = Final::Failed(UserError::new(ErrorCategory::Internal, "plan", "boom"));
        assert_eq!(
            cluster_end(&op, &failed),
            ClusterEnd::Untouched,
            "a failed check leaves the cluster"
        );
        assert_eq!(cluster_end(&op, &Final::Cancelled), ClusterEnd::Untouched);
    }

    #[test]
    fn cancelled_mutations_fail_the_cluster_except_an_update() {
        let (mut op, mut c) = running(OperationKind::Create, ClusterState::Provisioning);
        op.steps.push(Step {
            name: "apply".into(),
            started_at: ts::now(),
            finished_at: None,
            ok: None,
        });
        let ClusterEnd::Failed(err) = cluster_end(&op, &Final::Cancelled) else {
            panic!()
        };
        assert_eq!(err.category, ErrorCategory::Cancelled);
        assert!(fail_cluster(&mut c, &err));
        assert_eq!(
            (c.state(), c.last_error.as_ref()),
            (ClusterState::Failed, Some(&err))
        );
        assert!(!fail_cluster(&mut c, &err), "failing it again changes nothing");

        let (op, _) = running(OperationKind::Update, ClusterState::Updating);
        assert_eq!(cluster_end(&op, &Final::Cancelled), ClusterEnd::UpdateCancelled);
        let (op, _) = running(OperationKind::Plan, ClusterState::Active);
        assert_eq!(cluster_end(&op, &Final::Cancelled), ClusterEnd::Untouched);
        let (op, _) = running(OperationKind::Estimate, ClusterState::Active);
        assert_eq!(cluster_end(&op, &success(None)), ClusterEnd::Untouched);
    }

    /// The drift an update reverted, and a deleted cluster's, is not shown as current.
    #[test]
    fn an_applied_update_and_a_delete_clear_the_drift_flag() {
        let drifted = |c: &mut Cluster| {
            c.drift.drifted = true;
            c.drift.changed_resources = vec![ResourceChange {
                address: "aws_eks_node_group.main".into(),
                actions: vec!["update".into()],
            }];
        };
        let (_, mut c) = running(OperationKind::Update, ClusterState::Updating);
        drifted(&mut c);
        assert!(updated(&mut c, &Outputs::new(), None));
        assert!(
            !c.drift.drifted && c.drift.changed_resources.is_empty(),
            "{:?}",
            c.drift
        );
        let (_, mut c) = running(OperationKind::Delete, ClusterState::Deleting);
        drifted(&mut c);
        assert!(deleted(&mut c));
        assert!(
            !c.drift.drifted && c.drift.changed_resources.is_empty(),
            "{:?}",
            c.drift
        );
    }

    #[test]
    fn a_deleted_cluster_loses_its_outputs() {
        let (op, mut c) = running(OperationKind::Delete, ClusterState::Deleting);
        c.outputs
            .insert("endpoint".into(), serde_json::json!("https://k8s"));
        assert_eq!(cluster_end(&op, &success(None)), ClusterEnd::Deleted);
        assert!(deleted(&mut c));
        assert_eq!(c.state(), ClusterState::Deleted);
        assert!(c.outputs.is_empty());
        assert!(!deleted(&mut c));
    }
}

//! Drift results: recorded on the cluster, described to subscribers, and acted on by the cluster's policy
//! (`reconcile` queues an update, `notify` queues a notification for the tenant's webhook).

use strato_domain::coordination::{submit, update_operation};
use strato_domain::ids::OperationId;
use strato_domain::messages::WebhookMessage;
use strato_domain::model::{Cluster, DriftInfo, DriftPolicy, Operation, OperationKind, ResourceChange};
use strato_domain::ports::{Clock, Operations, Webhooks};
use strato_domain::webhook::{DRIFT_DETECTED, DriftEvent};
use time::OffsetDateTime;

use crate::StatusError;
use crate::decide::{Ports, Status};

/// Records drift check `check`'s result (`changes`, found `at`) on the cluster. `false` when this check's
/// result is already there, so a redelivered success changes nothing.
pub(crate) fn record_drift(
    c: &mut Cluster,
    check: &OperationId,
    changes: &[ResourceChange],
    at: OffsetDateTime,
) -> bool {
    if c.drift.operation_id.as_ref() == Some(check) {
        return false;
    }
    c.drift = DriftInfo {
        drifted: !changes.is_empty(),
        checked_at: Some(at),
        changed_resources: changes.to_vec(),
        operation_id: Some(check.clone()),
    };
    true
}

/// The policy an ended drift check `op` must apply to `c`: only when drift was found, and only by the check
/// whose result the cluster holds (an older check that ends late does not act on a newer result).
pub(crate) fn policy_to_apply(op: &Operation, c: &Cluster) -> Option<DriftPolicy> {
    (c.drift.drifted && c.drift.operation_id.as_ref() == Some(&op.operation_id)).then_some(c.drift_policy)
}

/// What subscribers are told when a drift check ends.
pub(crate) fn drift_message(c: &Cluster) -> String {
    if !c.drift.drifted {
        return "no drift: the infrastructure matches the desired state".into();
    }
    let changed: Vec<String> = c
        .drift
        .changed_resources
        .iter()
        .map(|r| format!("{} ({})", r.address, r.actions.join("/")))
        .collect();
    format!(
        "drift detected in {} resource(s): {}; policy {}",
        changed.len(),
        changed.join(", "),
        match c.drift_policy {
            DriftPolicy::Notify => "notify (apply an update to restore the desired state)",
            DriftPolicy::Reconcile => "reconcile (an update was queued to restore it)",
        }
    )
}

/// `reconcile` policy: queue an update that applies the cluster's own spec again, unless one is open.
pub(crate) async fn reconcile<P: Ports>(ctx: &Status<'_, P>, c: &Cluster) -> Result<(), StatusError> {
    let ops = ctx.store.cluster_operations(&c.cluster_id).await?;
    if ops
        .iter()
        .any(|o| o.kind == OperationKind::Update && !o.status.is_terminal())
    {
        return Ok(());
    }
    let mut op = Operation::new(
        c.tenant_id.clone(),
        c.cluster_id.clone(),
        OperationKind::Update,
        ctx.clock.now(),
    );
    op.spec = Some(c.spec.clone());
    op.requested_by = Some("strato:drift-reconcile".into());
    if let Err(rejected) = submit(ctx.store, ctx.jobs, &op).await? {
        tracing::warn!(cluster = %c.cluster_id, ?rejected, "reconcile update not queued: tenant quota");
        return Ok(());
    }
    tracing::info!(cluster = %c.cluster_id, operation = %op.operation_id, "drift: reconcile update queued");
    Ok(())
}

/// The notification a `notify` policy sends for drift check `op` on `c`. Its delivery id is the check's id:
/// one `drift.detected` per check, the same on every attempt and duplicate.
pub(crate) fn drift_notification(op: &Operation, c: &Cluster) -> Result<WebhookMessage, serde_json::Error> {
    let event = DriftEvent {
        kind: DRIFT_DETECTED.into(),
        tenant_id: c.tenant_id.clone(),
        cluster_id: c.cluster_id.clone(),
        cluster_name: c.spec.name.to_string(),
        operation_id: op.operation_id.clone(),
        checked_at: c.drift.checked_at.unwrap_or(op.updated_at),
        policy: c.drift_policy,
        changed_resources: c.drift.changed_resources.clone(),
    };
    Ok(WebhookMessage {
        tenant_id: c.tenant_id.clone(),
        operation_id: op.operation_id.clone(),
        event: DRIFT_DETECTED.into(),
        delivery_id: op.operation_id.to_string(),
        payload: serde_json::to_value(&event)?,
    })
}

/// `notify` policy: queues the notification on the `webhooks` queue; its consumer reads the tenant's
/// webhook, posts it (with retries) and notes the outcome on the check. Only a queue send happens here, so a
/// slow receiver never holds up this batch. Everything that matters is saved before; a send that fails
/// (after the SDK's own retries) is logged and noted, since the ended check is not handled again.
pub(crate) async fn notify_webhook<P: Ports>(ctx: &Status<'_, P>, op: &Operation, c: &Cluster) {
    let queued = match drift_notification(op, c) {
        Ok(m) => ctx.webhooks.enqueue(&m).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let Err(error) = queued else {
        tracing::info!(operation = %op.operation_id, "drift webhook queued");
        return;
    };
    tracing::error!(operation = %op.operation_id, %error, "drift webhook not queued");
    let line = format!(
        "{}: webhook {DRIFT_DETECTED} not queued: {error}",
        strato_domain::ts::format(ctx.clock.now())
    );
    if let Err(e) = update_operation(ctx.store, &op.operation_id, |o| {
        o.notes.push(line.clone());
        true
    })
    .await
    {
        tracing::warn!(operation = %op.operation_id, error = %e, "webhook failure not recorded");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{at, running};
    use strato_domain::model::ClusterState;

    #[test]
    fn a_drift_result_is_recorded_once_and_acted_on_by_its_own_check() {
        let (op, mut c) = running(OperationKind::DriftCheck, ClusterState::Active);
        c.drift_policy = DriftPolicy::Reconcile;
        let changes = vec![ResourceChange {
            address: "aws_security_group.nodes".into(),
            actions: vec!["update".into()],
        }];
        let found = at("2026-11-22T04:40:00Z");
        assert!(record_drift(&mut c, &op.operation_id, &changes, found));
        assert!(c.drift.drifted);
        assert_eq!(c.drift.checked_at, Some(found));
        assert_eq!(c.drift.changed_resources, changes);
        assert!(
            !record_drift(&mut c, &op.operation_id, &changes, found),
            "a duplicate success"
        );
        assert_eq!(policy_to_apply(&op, &c), Some(DriftPolicy::Reconcile));
        let message = drift_message(&c);
        assert!(
            message.contains("drift detected in 1 resource(s): aws_security_group.nodes (update)"),
            "{message}"
        );
        assert!(message.contains("policy reconcile"), "{message}");

        let (older, _) = running(OperationKind::DriftCheck, ClusterState::Active);
        assert_eq!(policy_to_apply(&older, &c), None, "another check's result");
    }

    #[test]
    fn no_drift_needs_no_action() {
        let (op, mut c) = running(OperationKind::DriftCheck, ClusterState::Active);
        assert!(record_drift(
            &mut c,
            &op.operation_id,
            &[],
            at("2026-11-22T04:40:00Z")
        ));
        assert!(!c.drift.drifted);
        assert_eq!(policy_to_apply(&op, &c), None);
        assert!(drift_message(&c).starts_with("no drift"));
    }
}

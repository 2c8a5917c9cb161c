//! Drift results: recorded on the cluster, described to subscribers, and acted on by the cluster's policy
//! (`reconcile` queues an update, `notify` queues a notification for the tenant's webhook).

use strato_coordination::{submit, update_operation};
use strato_domain::approval::ApprovalMode;
use strato_domain::audit::{self, AuditEntry};
use strato_domain::ids::OperationId;
use strato_domain::messages::WebhookMessage;
use strato_domain::model::{
    Cluster, DriftInfo, DriftPolicy, Operation, OperationKind, OperationStatus, ResourceChange,
};
use strato_domain::ports::{Clock, Clusters, Operations, Templates, TenantSettings, Webhooks};
use strato_domain::webhook::{
    DRIFT_DETECTED, DriftEvent, EventType, delivery_tag, event_id, has_delivery_note,
};
use time::OffsetDateTime;

use crate::StatusError;
use crate::ports::{Ports, Status};

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
    let ops = ctx.store.open_cluster_operations(&c.cluster_id).await?;
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
    // A reconcile changes infrastructure like any update: it waits for approval where an update would.
    let template = ctx
        .templates
        .template(&c.spec.template.name, &c.spec.template.version)
        .await?
        .and_then(|t| t.manifest.approval);
    // The strictest of the three applies: the tenant's default is read unless the cluster or template
    // already requires approval (a cluster's own `auto` does not lower the tenant's `required`).
    let tenant = if ApprovalMode::resolve(c.approval, template, None) == ApprovalMode::Required {
        None
    } else {
        ctx.store.tenant_rules(&c.tenant_id).await?.approval
    };
    op.approval_required = ApprovalMode::resolve(c.approval, template, tenant) == ApprovalMode::Required;
    if let Err(rejected) = submit(ctx.store, ctx.jobs, &op).await? {
        tracing::warn!(cluster_id = %c.cluster_id, ?rejected, "reconcile update not queued: tenant quota");
        return Ok(());
    }
    tracing::info!(cluster_id = %c.cluster_id, operation_id = %op.operation_id, "drift: reconcile update queued");
    let entry = AuditEntry::system(
        "status",
        c.tenant_id.clone(),
        ctx.clock.now(),
        "drift.reconcile",
        audit::Outcome::Succeeded,
    )
    .on_cluster(Some(c.cluster_id.clone()))
    .on_operation(Some(op.operation_id.clone()))
    .with_detail("drift found; an update applying the cluster's spec again was queued");
    audit::record(ctx.audit, entry).await;
    Ok(())
}

/// The notification a `notify` policy sends for drift check `op` on `c`. Its event id derives from the
/// check's id: one `drift.detected` per check, the same on every attempt and duplicate.
pub(crate) fn drift_notification(op: &Operation, c: &Cluster) -> Result<WebhookMessage, serde_json::Error> {
    let checked_at = c.drift.checked_at.unwrap_or(op.updated_at);
    let event = DriftEvent {
        tenant_id: c.tenant_id.clone(),
        cluster_id: c.cluster_id.clone(),
        cluster_name: c.spec.name.to_string(),
        operation_id: op.operation_id.clone(),
        checked_at,
        policy: c.drift_policy,
        changed_resources: c.drift.changed_resources.clone(),
    };
    WebhookMessage::event(
        c.tenant_id.clone(),
        Some(op.operation_id.clone()),
        EventType::DriftDetected,
        op.operation_id.as_str(),
        checked_at,
        serde_json::to_value(&event)?,
    )
}

/// `notify` policy: when the tenant has a webhook, queues the notification on the `webhooks` queue and
/// notes it on the check (the webhooks function posts it, with retries, and replaces that note with the
/// outcome). Only a read and a queue send happen here, so a slow receiver never holds up this batch. A send
/// that fails fails the record: its redelivery finds the check ended and queues the notification then
/// ([`requeue_unsent`]), so a notification is queued at least once.
pub(crate) async fn notify_webhook<P: Ports>(
    ctx: &Status<'_, P>,
    op: &Operation,
    c: &Cluster,
) -> Result<(), StatusError> {
    if !ctx
        .webhooks
        .webhook_of(&c.tenant_id)
        .await?
        .is_some_and(|h| h.wants(DRIFT_DETECTED))
    {
        return Ok(());
    }
    let msg = drift_notification(op, c).map_err(|source| StatusError::Render {
        what: "drift notification",
        source,
    })?;
    ctx.webhooks.enqueue(&msg).await?;
    tracing::info!(operation_id = %op.operation_id, delivery = %msg.delivery_id, "drift webhook queued");
    let line = format!(
        "{}: webhook {DRIFT_DETECTED} queued {}",
        strato_domain::ts::format(ctx.clock.now()),
        delivery_tag(&msg.delivery_id)
    );
    // Only when absent: the webhooks function may have noted an attempt already.
    update_operation(ctx.store, &op.operation_id, |o| {
        let absent = !has_delivery_note(&o.notes, &msg.delivery_id);
        if absent {
            o.notes.push(line.clone());
        }
        absent
    })
    .await?;
    Ok(())
}

/// A redelivered final event of ended drift check `op`: queues its notification if an earlier delivery
/// ended the check but failed to queue it (no note of the delivery on the check).
pub(crate) async fn requeue_unsent<P: Ports>(ctx: &Status<'_, P>, op: &Operation) -> Result<(), StatusError> {
    if op.kind != OperationKind::DriftCheck
        || op.status != OperationStatus::Succeeded
        || has_delivery_note(
            &op.notes,
            &event_id(EventType::DriftDetected, op.operation_id.as_str()),
        )
    {
        return Ok(());
    }
    let Some(c) = ctx.store.load_cluster(&op.tenant_id, &op.cluster_id).await? else {
        return Ok(());
    };
    if policy_to_apply(op, &c) == Some(DriftPolicy::Notify) {
        notify_webhook(ctx, op, &c).await?;
    }
    Ok(())
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

//! An audited call's entry in the making: what the audit layer ([`crate::recording`]) knows of the call
//! before its handler runs. A create writes it inside its own TransactWriteItems (the entry exists exactly when
//! the cluster does, at no extra call) and marks it written; every other call's entry the layer writes after
//! the answer. Below the decisions, which take it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use strato_domain::audit::{AuditEntry, Outcome};
use strato_domain::ids::{ClusterId, OperationId, TenantId};

/// What the layer knows of an audited call before its handler runs: enough to write the call's entry once
/// the outcome is known. A handler whose change is written with its entry (a create) marks it
/// [written](Self::written), and the layer writes nothing more.
#[derive(Debug, Clone)]
pub struct AuditDraft {
    tenant: TenantId,
    principal: String,
    action: &'static str,
    request_id: Option<String>,
    path_cluster: Option<ClusterId>,
    path_operation: Option<OperationId>,
    written: Arc<AtomicBool>,
}

impl AuditDraft {
    /// The draft of a call by `principal` of `tenant`, recorded as `action`, with the request's id.
    pub fn new(
        tenant: TenantId,
        principal: impl Into<String>,
        action: &'static str,
        request_id: Option<String>,
    ) -> Self {
        Self {
            tenant,
            principal: principal.into(),
            action,
            request_id,
            path_cluster: None,
            path_operation: None,
            written: Arc::default(),
        }
    }

    /// The draft of a call whose path names `cluster` and/or `operation`.
    pub fn on_path(self, cluster: Option<ClusterId>, operation: Option<OperationId>) -> Self {
        Self {
            path_cluster: cluster,
            path_operation: operation,
            ..self
        }
    }

    /// The call's entry at `time`, answered with `status`: on the cluster the path names, else the answer's
    /// (`cluster`), and on the operation the answer names (`operation`), else the path's.
    pub fn entry(
        &self,
        time: time::OffsetDateTime,
        status: u16,
        cluster: Option<ClusterId>,
        operation: Option<OperationId>,
        detail: Option<String>,
    ) -> AuditEntry {
        let mut entry = AuditEntry::new(
            self.tenant.clone(),
            time,
            self.principal.clone(),
            self.action,
            Outcome::of_status(status),
        )
        .on_cluster(self.path_cluster.clone().or(cluster))
        .on_operation(operation.or_else(|| self.path_operation.clone()));
        entry.request_id = self.request_id.clone();
        entry.status = Some(status);
        entry.detail = detail;
        entry
    }

    /// The entry of a change accepted (202) with the new `operation` on `cluster`, as the layer would write
    /// it from the answer: for the change's own write.
    pub fn accepted(
        &self,
        time: time::OffsetDateTime,
        cluster: &ClusterId,
        operation: &OperationId,
    ) -> AuditEntry {
        self.entry(time, 202, Some(cluster.clone()), Some(operation.clone()), None)
    }

    /// The entry was written with the change it records.
    pub fn written(&self) {
        self.written.store(true, Ordering::Release);
    }

    /// Whether the entry was written with the change it records (the layer then writes none).
    pub fn is_written(&self) -> bool {
        self.written.load(Ordering::Acquire)
    }
}

//! The audit log on its own DynamoDB table (`resources::TABLES`, `audit`): one conditional put per entry
//! (`attribute_not_exists`, so nothing is ever overwritten) — a PutItem here, or inside the transaction of the
//! change it records (the store's create and operation saves, `crate::store::audit_items`) — and Queries, one tenant at a
//! time, on the table or on the index that serves the filter. No UpdateItem, DeleteItem or Scan here, nor in
//! any function's IAM.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use time::Duration;

use crate::env::{Env, EnvError};
use crate::error::Error;
use crate::resources::Names;
use crate::store::audit_items::{
    DEFAULT_RETENTION_DAYS, actor_key, cluster_key, corrupt, entry_item, retention, s,
};
use crate::store::conditional;
use strato_domain::audit::{AuditEntry, AuditLog, AuditPage, AuditQuery};
use strato_domain::ids::TenantId;
use strato_domain::ports::PortError;

#[derive(Debug, Clone)]
pub struct DynamoAuditLog {
    ddb: Client,
    table: String,
    /// Entries expire (DynamoDB TTL on `expires_at`) this long after they were recorded.
    retention: Duration,
}

impl DynamoAuditLog {
    pub fn new(ddb: Client, names: &Names, retention_days: u64) -> Self {
        Self {
            ddb,
            table: names.table("audit"),
            retention: retention(retention_days),
        }
    }

    /// Retention from `STRATO_AUDIT_RETENTION_DAYS` (default [`DEFAULT_RETENTION_DAYS`]).
    pub fn retention_days<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<u64, EnvError> {
        env.positive("STRATO_AUDIT_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)
    }

    /// The table from the process environment: for functions that record system actions.
    pub fn from_env(ddb: Client, names: &Names) -> Result<Self, EnvError> {
        let days = Self::retention_days(&Env::new(|k| std::env::var(k).ok()))?;
        Ok(Self::new(ddb, names, days))
    }
}

impl AuditLog for DynamoAuditLog {
    async fn append(&self, entry: &AuditEntry) -> Result<(), PortError> {
        let item = entry_item(entry, self.retention)?;
        let put = self
            .ddb
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(entry_id)")
            .send();
        match conditional("PutItem", put).await? {
            Ok(_) => Ok(()),
            Err(_) => Err(PortError::Conflict(format!("audit entry {} exists", entry.id))),
        }
    }

    async fn query(&self, tenant: &TenantId, q: &AuditQuery) -> Result<AuditPage, PortError> {
        // The most selective key: the cluster's index, else the actor's, else the tenant's partition. With
        // both filters the actor is a FilterExpression on the cluster's index (pages may come back short).
        let (index, pk_attr, pk) = match (&q.cluster, &q.actor) {
            (Some(c), _) => (Some("by_cluster"), "cluster_key", cluster_key(tenant, c.as_str())),
            (None, Some(a)) => (Some("by_actor"), "actor_key", actor_key(tenant, a)),
            (None, None) => (None, "tenant_id", tenant.as_str().to_owned()),
        };
        let mut req = self
            .ddb
            .query()
            .table_name(&self.table)
            .set_index_name(index.map(str::to_owned))
            .scan_index_forward(false)
            .limit(q.limit.clamp(1, strato_domain::audit::MAX_PAGE) as i32)
            .expression_attribute_names("#pk", pk_attr)
            .expression_attribute_values(":pk", s(&pk));
        req = match q.since {
            Some(since) => req
                .key_condition_expression("#pk = :pk AND entry_id >= :since")
                .expression_attribute_values(":since", s(strato_domain::ts::format(since))),
            None => req.key_condition_expression("#pk = :pk"),
        };
        if let (Some(_), Some(actor)) = (&q.cluster, &q.actor) {
            req = req
                .filter_expression("principal = :actor")
                .expression_attribute_values(":actor", s(actor));
        }
        if let Some(after) = &q.after {
            // The table's key plus the index's: all follow from the entry id and the query.
            let mut start = HashMap::from([
                ("tenant_id".to_owned(), s(tenant.as_str())),
                ("entry_id".to_owned(), s(after)),
            ]);
            if index.is_some() {
                start.insert(pk_attr.to_owned(), s(&pk));
            }
            req = req.set_exclusive_start_key(Some(start));
        }
        let out = req.send().await.map_err(|e| Error::aws("Query", e))?;
        let entries = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| serde_dynamo::from_item::<_, AuditEntry>(item).map_err(corrupt))
            .collect::<Result<Vec<_>, _>>()?;
        let next = out
            .last_evaluated_key
            .and_then(|k| k.get("entry_id").and_then(|v| v.as_s().ok()).cloned());
        Ok(AuditPage { entries, next })
    }
}

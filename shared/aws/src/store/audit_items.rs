//! How an audit entry is stored as a DynamoDB item on the `audit` table: the same whether it is put on its
//! own (`crate::ports::DynamoAuditLog`) or inside the transaction of the change it records (the store's
//! create and operation saves).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use strato_domain::audit::AuditEntry;
use strato_domain::ids::TenantId;
use time::Duration;

use crate::error::Error;

/// Retention when `STRATO_AUDIT_RETENTION_DAYS` is not set.
pub const DEFAULT_RETENTION_DAYS: u64 = 365;

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn cluster_key(tenant: &TenantId, cluster: &str) -> String {
    format!("{}#{cluster}", tenant.as_str())
}

pub(crate) fn actor_key(tenant: &TenantId, actor: &str) -> String {
    format!("{}#{actor}", tenant.as_str())
}

pub(crate) fn corrupt(reason: impl ToString) -> Error {
    Error::Corrupt {
        what: "audit entry".into(),
        reason: reason.to_string(),
    }
}

/// The item `entry` is stored as, expiring `retention` after it was recorded: the same whether it is put on
/// its own ([`DynamoAuditLog`]) or inside the transaction of the change it records (the store's create).
pub(crate) fn entry_item(
    entry: &AuditEntry,
    retention: Duration,
) -> Result<HashMap<String, AttributeValue>, Error> {
    let mut item: HashMap<String, AttributeValue> = serde_dynamo::to_item(entry).map_err(corrupt)?;
    item.insert("entry_id".into(), s(&entry.id));
    item.insert(
        "actor_key".into(),
        s(actor_key(&entry.tenant_id, &entry.principal)),
    );
    if let Some(c) = &entry.cluster_id {
        item.insert("cluster_key".into(), s(cluster_key(&entry.tenant_id, c.as_str())));
    }
    let expires = (entry.time + retention).unix_timestamp();
    item.insert("expires_at".into(), AttributeValue::N(expires.to_string()));
    Ok(item)
}

/// How long entries are kept, as a duration: `days`, at most a hundred years.
pub(crate) fn retention(days: u64) -> Duration {
    Duration::days(days.min(36_500) as i64)
}

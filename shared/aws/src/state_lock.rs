//! Terraform's state locks in the DynamoDB lock table of the S3 backend. Terraform writes one item per
//! locked state, `LockID = "<bucket>/<key>"`, with an `Info` JSON naming the holder, and deletes it when it
//! unlocks; a process killed mid-command leaves it behind and every later run of that state waits on it.
//! The same table holds `<bucket>/<key>-md5` digest items, which are not locks and are never touched here.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::error::Error;
use crate::store::conditional;
use strato_domain::ids::{ClusterId, TenantId};

/// The lock item's key for a state object.
pub fn lock_id(bucket: &str, key: &str) -> String {
    format!("{bucket}/{key}")
}

/// `<bucket>/tenants/<tenant>/clusters/<cluster>/<stage>.tfstate` → (tenant, cluster). Digest items and
/// states Strato does not own answer `None`.
pub fn owner(lock_id: &str) -> Option<(TenantId, ClusterId)> {
    if !lock_id.ends_with(".tfstate") {
        return None;
    }
    let mut parts = lock_id.split('/').skip_while(|p| *p != "tenants");
    parts.next()?;
    let tenant = parts.next()?.parse().ok()?;
    (parts.next()? == "clusters").then_some(())?;
    let cluster = parts.next()?.parse().ok()?;
    Some((tenant, cluster))
}

/// A lock as read from the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLock {
    pub lock_id: String,
    /// Terraform's lock info (JSON), empty when the item has none.
    pub info: String,
}

impl HeldLock {
    /// From a scanned or read item; `None` for items that are not locks (digests, foreign states).
    pub fn from_item(item: &HashMap<String, AttributeValue>) -> Option<Self> {
        let lock_id = item.get("LockID")?.as_s().ok()?.clone();
        if !lock_id.ends_with(".tfstate") {
            return None;
        }
        let info = item
            .get("Info")
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default();
        Some(Self { lock_id, info })
    }

    /// "who (operation, created)" from the lock info, for notes.
    pub fn holder(&self) -> String {
        strato_domain::ports::state_lock_holder(&self.info)
    }
}

/// The lock on `lock_id`, if one is held.
pub async fn held(ddb: &Client, table: &str, lock_id: &str) -> Result<Option<HeldLock>, Error> {
    let out = ddb
        .get_item()
        .table_name(table)
        .key("LockID", AttributeValue::S(lock_id.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| Error::aws("GetItem", e))?;
    Ok(out.item.as_ref().and_then(HeldLock::from_item))
}

/// Deletes exactly the lock that was read: a lock taken again meanwhile has another `Info` and stays.
/// `Ok(false)` when it was already gone or replaced.
pub async fn release(ddb: &Client, table: &str, lock: &HeldLock) -> Result<bool, Error> {
    let mut delete = ddb
        .delete_item()
        .table_name(table)
        .key("LockID", AttributeValue::S(lock.lock_id.clone()));
    delete = if lock.info.is_empty() {
        delete.condition_expression("attribute_exists(LockID) AND attribute_not_exists(Info)")
    } else {
        delete
            .condition_expression("Info = :info")
            .expression_attribute_values(":info", AttributeValue::S(lock.info.clone()))
    };
    Ok(conditional("DeleteItem", delete.send()).await?.is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_ids_name_their_cluster_and_digests_are_not_locks() {
        let c = ClusterId::generate();
        let key = strato_terraform::render::state_key(&"acme".parse().unwrap(), &c, "cluster");
        let id = lock_id("b-state", &key);
        assert_eq!(owner(&id), Some(("acme".parse().unwrap(), c.clone())));
        assert_eq!(owner(&format!("{id}-md5")), None);
        assert_eq!(owner("bucket/other/key.tfstate"), None);
        let item = |id: &str| HashMap::from([("LockID".to_owned(), AttributeValue::S(id.to_owned()))]);
        assert!(HeldLock::from_item(&item(&format!("{id}-md5"))).is_none());
        let l = HeldLock::from_item(&item(&id)).unwrap();
        assert_eq!((l.info.as_str(), l.holder().as_str()), ("", "unknown holder"));
    }
}

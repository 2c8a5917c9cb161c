//! The locks table: per-cluster locks with leases and fencing tokens, and per-tenant slot sets that bound
//! how many operations of a tenant run at once. (Name reservations live here too; see `clusters`.)

use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use time::{Duration, OffsetDateTime};

use super::write::conditional;
use super::{Item, Store, fetch, n, num, s, text};
use crate::error::Error;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::ts;

/// Outcome of trying to take a cluster lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOutcome {
    Acquired { fencing_token: u64 },
    Held { owner: OperationId },
}

pub(super) fn cluster_lock_id(c: &ClusterId) -> String {
    format!("cluster#{c}")
}

pub(super) fn tenant_slots_id(t: &TenantId) -> String {
    format!("slots#{t}")
}

/// A malformed cluster lock item.
fn corrupt_lock(cluster: &ClusterId, reason: &str) -> Error {
    Error::Corrupt {
        what: cluster_lock_id(cluster),
        reason: reason.into(),
    }
}

impl Store {
    /// An UpdateItem of the lock item `lock_id`; the caller adds the expressions.
    fn update_lock(&self, lock_id: String) -> UpdateItemFluentBuilder {
        self.ddb
            .update_item()
            .table_name(&self.locks)
            .key("lock_id", s(lock_id))
    }

    /// Takes the cluster lock for `op` by conditional write, with a lease and a fencing token that grows
    /// on every acquisition. Taking it again as the same owner returns the same token (redelivery).
    pub async fn acquire_cluster_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        lease: Duration,
        now: OffsetDateTime,
    ) -> Result<LockOutcome, Error> {
        let update = self
            .update_lock(cluster_lock_id(cluster))
            .update_expression("SET #o = :op, lease_expires_at = :exp ADD fencing_token :one")
            .condition_expression("attribute_not_exists(#o) OR lease_expires_at < :now")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .expression_attribute_values(":exp", s(ts::format(now + lease)))
            .expression_attribute_values(":now", s(ts::format(now)))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send();
        let old = match conditional("UpdateItem", update).await? {
            Ok(out) => {
                let token = out.attributes.as_ref().and_then(|i| num(i, "fencing_token"));
                let token = token.ok_or_else(|| corrupt_lock(cluster, "no fencing token"))?;
                return Ok(LockOutcome::Acquired { fencing_token: token });
            }
            Err(lost) => lost.old.unwrap_or_default(),
        };
        let owner: OperationId = text(&old, "owner")
            .map(|o| o.parse())
            .transpose()?
            .ok_or_else(|| corrupt_lock(cluster, "held without owner"))?;
        match (&owner == op, num(&old, "fencing_token")) {
            (true, Some(t)) => Ok(LockOutcome::Acquired { fencing_token: t }),
            _ => Ok(LockOutcome::Held { owner }),
        }
    }

    /// Extends the lease of a lock still held by `op` with `token`; `false` if it is no longer theirs.
    pub async fn renew_cluster_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        token: u64,
        lease: Duration,
        now: OffsetDateTime,
    ) -> Result<bool, Error> {
        let update = self
            .update_lock(cluster_lock_id(cluster))
            .update_expression("SET lease_expires_at = :exp")
            .condition_expression("#o = :op AND fencing_token = :t")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .expression_attribute_values(":t", n(token))
            .expression_attribute_values(":exp", s(ts::format(now + lease)))
            .send();
        Ok(conditional("UpdateItem", update).await?.is_ok())
    }

    /// Releases the lock only if `op` still holds it with `fencing_token`; `false` if it did not.
    pub async fn release_cluster_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
    ) -> Result<bool, Error> {
        let update = self
            .update_lock(cluster_lock_id(cluster))
            .update_expression("REMOVE #o, lease_expires_at")
            .condition_expression("#o = :op AND fencing_token = :t")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .expression_attribute_values(":t", n(fencing_token))
            .send();
        Ok(conditional("UpdateItem", update).await?.is_ok())
    }

    /// Deletes the lock item of a cluster id that will never be locked again (an estimate's synthetic id),
    /// unless another operation holds it. Released locks keep their item (the fencing token must keep
    /// growing for a real cluster); for a synthetic id that item would only pile up. `false` when someone
    /// else holds it.
    pub async fn forget_cluster_lock(&self, cluster: &ClusterId, op: &OperationId) -> Result<bool, Error> {
        let delete = self
            .ddb
            .delete_item()
            .table_name(&self.locks)
            .key("lock_id", s(cluster_lock_id(cluster)))
            .condition_expression("attribute_not_exists(#o) OR #o = :op")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .send();
        Ok(conditional("DeleteItem", delete).await?.is_ok())
    }

    /// Current holder of a cluster lock, with its token.
    pub async fn cluster_lock(&self, cluster: &ClusterId) -> Result<Option<(OperationId, u64)>, Error> {
        let Some(item) = fetch(self.lock_item(cluster_lock_id(cluster))).await? else {
            return Ok(None);
        };
        let owner = text(&item, "owner").and_then(|o| o.parse().ok());
        Ok(owner.zip(num(&item, "fencing_token")))
    }

    /// Takes one of the tenant's concurrent-operation slots (a string set of operation ids, so taking it
    /// twice for the same operation is harmless). `false` when the tenant is at its limit.
    pub async fn acquire_tenant_slot(
        &self,
        tenant: &TenantId,
        op: &OperationId,
        limit: u32,
    ) -> Result<bool, Error> {
        let update = self
            .update_lock(tenant_slots_id(tenant))
            // The limit is copied onto the item for the dispatcher's one-transaction claim, which cannot read
            // the tenant item; never over a copy `set_quotas` wrote (that one is newer than our read).
            .update_expression("ADD running :op SET max_running = if_not_exists(max_running, :lim)")
            .condition_expression(
                "attribute_not_exists(running) OR size(running) < :lim OR contains(running, :id)",
            )
            .expression_attribute_values(":op", AttributeValue::Ss(vec![op.to_string()]))
            .expression_attribute_values(":id", s(op.as_str()))
            .expression_attribute_values(":lim", n(limit))
            .send();
        Ok(conditional("UpdateItem", update).await?.is_ok())
    }

    pub async fn release_tenant_slot(&self, tenant: &TenantId, op: &OperationId) -> Result<(), Error> {
        self.update_lock(tenant_slots_id(tenant))
            .update_expression("DELETE running :op")
            .expression_attribute_values(":op", AttributeValue::Ss(vec![op.to_string()]))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// Operation ids currently holding the tenant's slots.
    pub async fn tenant_slots(&self, tenant: &TenantId) -> Result<Vec<String>, Error> {
        let item: Option<Item> = fetch(self.lock_item(tenant_slots_id(tenant))).await?;
        Ok(item
            .and_then(|i| i.get("running").and_then(|v| v.as_ss().ok()).cloned())
            .unwrap_or_default())
    }

    /// Every tenant's slot set, by one scan of the locks table filtered to the `slots#` items (the table holds
    /// one lock item per cluster and one slot item per tenant: small, and the sweeper reads it every few
    /// minutes). A malformed id or member is skipped with a warning rather than stopping the sweep.
    pub async fn all_tenant_slots(&self) -> Result<Vec<(TenantId, Vec<OperationId>)>, Error> {
        let mut out = Vec::new();
        let mut pages = self
            .ddb
            .scan()
            .table_name(&self.locks)
            .filter_expression("begins_with(lock_id, :p)")
            .expression_attribute_values(":p", s("slots#"))
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| Error::aws("Scan", e))?;
            for item in page.items() {
                let id = text(item, "lock_id").map(String::as_str).unwrap_or("");
                let Some(Ok(tenant)) = id.strip_prefix("slots#").map(str::parse::<TenantId>) else {
                    tracing::warn!(lock_id = %id, "slot item with a malformed tenant id skipped");
                    continue;
                };
                let members = item
                    .get("running")
                    .and_then(|v| v.as_ss().ok())
                    .cloned()
                    .unwrap_or_default();
                let ops = members.iter().filter_map(|m| m.parse().ok()).collect();
                out.push((tenant, ops));
            }
        }
        Ok(out)
    }

    /// A consistent GetItem of the lock item `lock_id`.
    fn lock_item(&self, lock_id: String) -> GetItemFluentBuilder {
        self.get(&self.locks, &[("lock_id", s(lock_id))])
            .consistent_read(true)
    }
}

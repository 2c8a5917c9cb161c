//! The dispatcher's claim in one TransactWriteItems ([`Claims`](strato_domain::ports::Claims)): the cluster
//! lock with the caller's token, a tenant slot bounded by the limit copied onto the slot item, the operation
//! saved against the `updated_at` read, and the cluster moved into its working state. A transaction returns
//! no values, so the token is the caller's (it must exceed the stored one: the condition says so).

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Put, TransactWriteItem, Update};

use super::locks::{cluster_lock_id, tenant_slots_id};
use super::operations::next_updated_at;
use super::write::{tx_put, tx_update};
use super::{Quotas, Store, n, s};
use crate::error::Error;
use strato_domain::model::{ClusterState, Operation};
use strato_domain::ports::{Claim, ClaimLost, ClusterStep};
use strato_domain::ts;

/// Which of the transaction's items lost, by position (the items are written in this order).
const LOST_BY_INDEX: [ClaimLost; 5] = [
    ClaimLost::Lock,
    ClaimLost::Slot,
    ClaimLost::Operation,
    ClaimLost::Slot,
    ClaimLost::Cluster,
];

impl Store {
    /// See [`Claims::claim`](strato_domain::ports::Claims::claim). A transaction cancelled because another
    /// one touched the same items at once (the tenant's slot item, typically) counts as a lost slot: the
    /// caller's step-by-step claim settles it.
    pub async fn claim_operation(
        &self,
        op: &mut Operation,
        claim: &Claim,
    ) -> Result<Result<(), ClaimLost>, Error> {
        let expected = ts::format(op.updated_at);
        let read_at = op.updated_at;
        op.updated_at = next_updated_at(read_at);
        let items = match self.claim_items(op, claim, &expected) {
            Ok(items) => items,
            Err(e) => {
                op.updated_at = read_at;
                return Err(e);
            }
        };
        let out = self
            .ddb
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let Err(e) = out else {
            return Ok(Ok(()));
        };
        op.updated_at = read_at;
        let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) = e.as_service_error()
        else {
            return Err(Error::aws("TransactWriteItems", e));
        };
        let reasons = cancelled.cancellation_reasons();
        if let Some(i) = reasons
            .iter()
            .position(|r| r.code() == Some("ConditionalCheckFailed"))
        {
            return Ok(Err(LOST_BY_INDEX.get(i).copied().unwrap_or(ClaimLost::Cluster)));
        }
        if reasons.iter().any(|r| r.code() == Some("TransactionConflict")) {
            return Ok(Err(ClaimLost::Slot));
        }
        Err(Error::aws("TransactWriteItems", e))
    }

    fn claim_items(
        &self,
        op: &Operation,
        claim: &Claim,
        expected_updated_at: &str,
    ) -> Result<Vec<TransactWriteItem>, Error> {
        let lock = Update::builder()
            .table_name(&self.locks)
            .key("lock_id", s(cluster_lock_id(&op.cluster_id)))
            .update_expression("SET #o = :op, lease_expires_at = :exp, fencing_token = :t")
            .condition_expression(
                "(attribute_not_exists(#o) OR lease_expires_at < :now) \
                 AND (attribute_not_exists(fencing_token) OR fencing_token < :t)",
            )
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.operation_id.as_str()))
            .expression_attribute_values(":exp", s(ts::format(claim.now + claim.lease)))
            .expression_attribute_values(":now", s(ts::format(claim.now)))
            .expression_attribute_values(":t", n(claim.token));
        // The limit is the tenant's quota as `set_quotas` (or the first step-by-step claim) copied it onto
        // the slot item: a transaction cannot compare one item's set with another item's number. Without a
        // copy the platform default applies, which the tenant check below allows only for a tenant that has
        // no quota of its own, or whose quota is the one `set_quotas` copied (a quota edited on the tenant
        // item by hand no longer matches, so the copy is not trusted).
        let slot = Update::builder()
            .table_name(&self.locks)
            .key("lock_id", s(tenant_slots_id(&op.tenant_id)))
            .update_expression("ADD running :ops")
            .condition_expression(
                "contains(running, :id) \
                 OR (attribute_exists(max_running) \
                     AND (attribute_not_exists(running) OR size(running) < max_running)) \
                 OR (attribute_not_exists(max_running) \
                     AND (attribute_not_exists(running) OR size(running) < :dflt))",
            )
            .expression_attribute_values(":ops", AttributeValue::Ss(vec![op.operation_id.to_string()]))
            .expression_attribute_values(":id", s(op.operation_id.as_str()))
            .expression_attribute_values(":dflt", n(Quotas::default().max_concurrent_operations));
        let tenant = ConditionCheck::builder()
            .table_name(&self.tenants)
            .key("tenant_id", s(op.tenant_id.as_str()))
            .condition_expression(
                "attribute_not_exists(max_concurrent_operations) \
                 OR max_running_copied = max_concurrent_operations",
            )
            .build()
            .map_err(|e| Error::aws("TransactWriteItems", e))?;
        let put = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(self.op_item(op)?))
            .condition_expression("updated_at = :u")
            .expression_attribute_values(":u", s(expected_updated_at));
        let mut items = vec![
            tx_update(lock)?,
            tx_update(slot)?,
            tx_put(put)?,
            TransactWriteItem::builder().condition_check(tenant).build(),
        ];
        let cluster_key = |b: aws_sdk_dynamodb::types::builders::UpdateBuilder| {
            b.table_name(&self.clusters)
                .key("tenant_id", s(op.tenant_id.as_str()))
                .key("cluster_id", s(op.cluster_id.as_str()))
        };
        match claim.cluster {
            ClusterStep::Untouched => {}
            ClusterStep::Not(state) => {
                let check = ConditionCheck::builder()
                    .table_name(&self.clusters)
                    .key("tenant_id", s(op.tenant_id.as_str()))
                    .key("cluster_id", s(op.cluster_id.as_str()))
                    .condition_expression("attribute_exists(cluster_id) AND #s <> :st")
                    .expression_attribute_names("#s", "state")
                    .expression_attribute_values(":st", s(state.as_str()))
                    .build()
                    .map_err(|e| Error::aws("TransactWriteItems", e))?;
                items.push(TransactWriteItem::builder().condition_check(check).build());
            }
            ClusterStep::Move { to, clear_error } => {
                let from = ClusterStep::from_states(to);
                let names: Vec<String> = (0..from.len()).map(|i| format!(":f{i}")).collect();
                // As `save_cluster` writes a cluster that is not ACTIVE: no next drift check.
                let mut remove = "REMOVE next_drift_check_at".to_owned();
                // A cluster being deleted leaves the sparse expiry index (strato_domain::expiry).
                if matches!(to, ClusterState::Deleting | ClusterState::Deleted) {
                    remove.push_str(", expiry_bucket");
                }
                if clear_error {
                    remove.push_str(", last_error");
                }
                let mut u = cluster_key(Update::builder())
                    .update_expression(format!(
                        "SET #s = :to, version = version + :one, updated_at = :now {remove}"
                    ))
                    .condition_expression(format!("#s IN ({})", names.join(", ")))
                    .expression_attribute_names("#s", "state")
                    .expression_attribute_values(":to", s(to.as_str()))
                    .expression_attribute_values(":one", n(1))
                    .expression_attribute_values(":now", s(ts::format(ts::now())));
                for (name, state) in names.iter().zip(&from) {
                    u = u.expression_attribute_values(name, s(state.as_str()));
                }
                items.push(tx_update(u)?);
            }
        }
        Ok(items)
    }
}

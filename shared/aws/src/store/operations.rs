//! Operation items. Open operations carry an `open_status` attribute, the key of the `open` index the
//! dispatcher and the sweeper read; it is absent once an operation is terminal, so the index holds only
//! open ones.

use aws_sdk_dynamodb::types::Put;
use time::Duration;

use super::write::tx_put;
use super::{Item, Store, fetch, from_item, query_all, s, to_item};
use crate::error::Error;
use crate::store::{CreateRejected, Quotas};
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::model::Operation;
use strato_domain::ports::OpenStatus;
use strato_domain::ts;

/// The `open` index key: the status while the operation is not terminal, with parked operations apart.
fn open_status(op: &Operation) -> Option<&'static str> {
    OpenStatus::of(op).map(OpenStatus::as_str)
}

impl Store {
    pub(super) fn op_item(op: &Operation) -> Result<Item, Error> {
        let mut item = to_item("operation", op)?;
        if let Some(open) = open_status(op) {
            item.insert("open_status".into(), s(open));
        }
        Ok(item)
    }

    /// Records a new operation on an existing cluster, bounded by the tenant's open-operation quota.
    pub async fn add_operation(
        &self,
        op: &Operation,
        quotas: &Quotas,
    ) -> Result<Result<(), CreateRejected>, Error> {
        let put = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(Self::op_item(op)?))
            .condition_expression("attribute_not_exists(operation_id)");
        let items = vec![
            self.tenant_counters(&op.tenant_id, 0, 1, Some(quotas))?,
            tx_put(put)?,
        ];
        Ok(self
            .transact(items)
            .await?
            .map_err(|_| CreateRejected::OperationQuota {
                max: quotas.max_open_operations,
            }))
    }

    pub async fn get_operation(&self, id: &OperationId) -> Result<Option<Operation>, Error> {
        let get = self
            .get(&self.operations, &[("operation_id", s(id.as_str()))])
            .consistent_read(true);
        fetch(get).await?.map(|i| from_item("operation", i)).transpose()
    }

    /// Saves an operation if its `updated_at` is still the one read (optimistic concurrency), and keeps the
    /// tenant's open-operation counter in step when it becomes terminal.
    pub async fn save_operation(&self, op: &mut Operation, was_terminal: bool) -> Result<(), Error> {
        let expected = ts::format(op.updated_at);
        let mut now = ts::now();
        if now <= op.updated_at {
            now = op.updated_at + Duration::microseconds(1);
        }
        op.updated_at = now;
        let put = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(Self::op_item(op)?))
            .condition_expression("updated_at = :u")
            .expression_attribute_values(":u", s(&expected));
        let mut items = vec![tx_put(put)?];
        if op.status.is_terminal() && !was_terminal {
            items.push(self.tenant_counters(&op.tenant_id, 0, -1, None)?);
        }
        if let Err(lost) = self.transact(items).await? {
            op.updated_at = ts::parse(&expected).unwrap_or(op.updated_at);
            return Err(lost.conflict(format!("operation {} changed concurrently", op.operation_id)));
        }
        Ok(())
    }

    /// Operations of a cluster, oldest first.
    pub async fn list_operations(&self, cluster: &ClusterId) -> Result<Vec<Operation>, Error> {
        let q = self
            .ddb
            .query()
            .table_name(&self.operations)
            .index_name("by_cluster")
            .key_condition_expression("cluster_id = :c")
            .expression_attribute_values(":c", s(cluster.as_str()));
        query_all("operation", q).await
    }

    /// Open operations in one `open_status` bucket (`queued`, `waiting`, `dispatched`, `running`),
    /// oldest first.
    pub async fn open_operations(&self, open_status: &str) -> Result<Vec<Operation>, Error> {
        let q = self
            .ddb
            .query()
            .table_name(&self.operations)
            .index_name("open")
            .key_condition_expression("open_status = :s")
            .expression_attribute_values(":s", s(open_status));
        query_all("operation", q).await
    }
}

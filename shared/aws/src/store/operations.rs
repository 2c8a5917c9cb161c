//! Operation items. Open operations carry an `open_status` attribute, the key of the `open` index the
//! dispatcher and the sweeper read, and an `open_cluster` attribute, the key of the `open_by_cluster` index
//! every decision about one cluster reads; both are absent once an operation is terminal, so those indexes
//! hold only open ones and a cluster's history never has to be read whole. A terminal operation carries
//! `retain_until` (epoch seconds), the operations table's TTL attribute: finished operations are deleted
//! by DynamoDB after the retention ([`Store::with_operation_retention`]); the audit log keeps who did what.

use super::audit_items;
use std::collections::HashMap;

use aws_sdk_dynamodb::types::{KeysAndAttributes, Put, Update};
use serde::Deserialize;
use time::{Duration, OffsetDateTime};

use super::write::{tx_put, tx_update};
use super::{Item, Store, fetch, from_item, n, query_all, s, to_item};
use crate::error::Error;
use crate::store::{CreateRejected, QuotaBound, Quotas};
use strato_domain::ids::{ClusterId, OperationId};
use strato_domain::model::{Cluster, Operation, OperationKind, OperationStatus};
use strato_domain::ports::OpenStatus;
use strato_domain::ts;

/// The `open` index key: the status while the operation is not terminal, with parked operations apart.
fn open_status(op: &Operation) -> Option<&'static str> {
    OpenStatus::of(op).map(OpenStatus::as_str)
}

/// The `updated_at` a conditional write stores over one read at `read`: now, or just after `read` when
/// the clock is behind it (the next write's condition compares it, so it must move forward).
pub(super) fn next_updated_at(read: time::OffsetDateTime) -> time::OffsetDateTime {
    let now = ts::now();
    if now <= read {
        read + Duration::microseconds(1)
    } else {
        now
    }
}

/// A page of a cluster's operations, newest first, and where the next page starts.
#[derive(Debug, Clone, Default)]
pub struct OperationPage {
    pub operations: Vec<Operation>,
    /// The key after which the next page starts (`created_at` + `operation_id` of the last one listed),
    /// opaque to callers; `None` on the last page.
    pub next: Option<PageKey>,
}

/// Where a page of a cluster's operations resumes: the last listed operation's index key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageKey {
    pub created_at: String,
    pub operation_id: String,
}

impl Store {
    pub(super) fn op_item(&self, op: &Operation) -> Result<Item, Error> {
        let mut item = to_item("operation", op)?;
        if let Some(open) = open_status(op) {
            item.insert("open_status".into(), s(open));
            item.insert("open_cluster".into(), s(op.cluster_id.as_str()));
        } else if op.status.is_terminal() {
            let ended = op.ended_at.unwrap_or(op.updated_at);
            let until = ended + Duration::days(i64::from(self.operation_retention_days));
            item.insert("retain_until".into(), n(until.unix_timestamp()));
        }
        Ok(item)
    }

    /// Records a new operation on an existing cluster, bounded by the tenant's open-operation quota.
    pub async fn add_operation(
        &self,
        op: &Operation,
        quotas: &Quotas,
    ) -> Result<Result<(), CreateRejected>, Error> {
        self.add_operation_bounded(op, QuotaBound::Given(quotas)).await
    }

    /// [`add_operation`](Self::add_operation) bounded as `bound` says (see
    /// [`create_cluster_bounded`](Self::create_cluster_bounded)).
    pub(crate) async fn add_operation_bounded(
        &self,
        op: &Operation,
        bound: QuotaBound<'_>,
    ) -> Result<Result<(), CreateRejected>, Error> {
        let put = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(self.op_item(op)?))
            .condition_expression("attribute_not_exists(operation_id)");
        let items = vec![self.tenant_counters(&op.tenant_id, 0, 1, bound)?, tx_put(put)?];
        if self.transact(items).await?.is_err() {
            let max = self
                .bounding_quotas(&op.tenant_id, bound)
                .await?
                .max_open_operations;
            return Ok(Err(CreateRejected::OperationQuota { max }));
        }
        Ok(Ok(()))
    }

    /// [`add_operation`](Self::add_operation), and in the same transaction the cluster marked with `op` as
    /// its pending operation, conditioned on the version read (bumped). A lost cluster condition is
    /// [`Error::Conflict`]; a lost quota is `Ok(Err(_))`; either way nothing is written.
    pub async fn add_operation_on(
        &self,
        cluster: &mut Cluster,
        op: &Operation,
        quotas: &Quotas,
    ) -> Result<Result<(), CreateRejected>, Error> {
        self.add_operation_on_bounded(cluster, op, QuotaBound::Given(quotas))
            .await
    }

    /// [`add_operation_on`](Self::add_operation_on) bounded as `bound` says.
    pub(crate) async fn add_operation_on_bounded(
        &self,
        cluster: &mut Cluster,
        op: &Operation,
        bound: QuotaBound<'_>,
    ) -> Result<Result<(), CreateRejected>, Error> {
        let put = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(self.op_item(op)?))
            .condition_expression("attribute_not_exists(operation_id)");
        let now = ts::now();
        // Accepting a delete revokes the cluster agent's credential in the same write.
        let deleting = op.kind == strato_domain::model::OperationKind::Delete;
        let mut expression = "SET version = :next, pending_operation = :op, updated_at = :now".to_owned();
        if deleting {
            expression.push_str(" REMOVE ");
            expression.push_str(&strato_domain::agent::REVOKED_ATTRIBUTES.join(", "));
        }
        let mark = Update::builder()
            .table_name(&self.clusters)
            .key("tenant_id", s(cluster.tenant_id.as_str()))
            .key("cluster_id", s(cluster.cluster_id.as_str()))
            .update_expression(expression)
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n(cluster.version))
            .expression_attribute_values(":next", n(cluster.version + 1))
            .expression_attribute_values(":op", s(op.operation_id.as_str()))
            .expression_attribute_values(":now", s(ts::format(now)));
        let items = vec![
            self.tenant_counters(&op.tenant_id, 0, 1, bound)?,
            tx_put(put)?,
            tx_update(mark)?,
        ];
        match self.transact(items).await?.map_err(|lost| lost.index) {
            Ok(()) => {
                cluster.version += 1;
                cluster.pending_operation = Some(op.operation_id.clone());
                cluster.updated_at = now;
                if deleting {
                    strato_domain::agent::revoke(cluster);
                }
                Ok(Ok(()))
            }
            Err(0) => Ok(Err(CreateRejected::OperationQuota {
                max: self
                    .bounding_quotas(&op.tenant_id, bound)
                    .await?
                    .max_open_operations,
            })),
            Err(_) => Err(Error::Conflict(format!(
                "cluster {} changed since version {} (or operation {} already exists)",
                cluster.cluster_id, cluster.version, op.operation_id
            ))),
        }
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
        self.save_operation_recorded(op, was_terminal, None).await
    }

    /// [`save_operation`](Self::save_operation), putting `audit` (an entry recording the change) in the same
    /// transaction: written exactly when the operation is.
    pub async fn save_operation_recorded(
        &self,
        op: &mut Operation,
        was_terminal: bool,
        audit: Option<&strato_domain::audit::AuditEntry>,
    ) -> Result<(), Error> {
        let expected = ts::format(op.updated_at);
        let now = next_updated_at(op.updated_at);
        op.updated_at = now;
        // The write that makes it terminal records when it ended (`updated_at` moves on later writes).
        let ended_now = op.status.is_terminal() && !was_terminal;
        let ended_before = op.ended_at;
        if ended_now {
            op.ended_at = Some(now);
        }
        let put = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(self.op_item(op)?))
            .condition_expression("updated_at = :u")
            .expression_attribute_values(":u", s(&expected));
        let mut items = vec![tx_put(put)?];
        if ended_now {
            items.push(self.tenant_counters(&op.tenant_id, 0, -1, QuotaBound::None)?);
        }
        if let Some(entry) = audit {
            let put = Put::builder()
                .table_name(&self.audit)
                .set_item(Some(audit_items::entry_item(entry, self.audit_retention)?))
                .condition_expression("attribute_not_exists(entry_id)");
            items.push(tx_put(put)?);
        }
        if let Err(lost) = self.transact(items).await? {
            op.updated_at = ts::parse(&expected).unwrap_or(op.updated_at);
            op.ended_at = ended_before;
            return Err(lost.conflict(format!("operation {} changed concurrently", op.operation_id)));
        }
        Ok(())
    }

    /// Every operation of a cluster, oldest first, read page by page. Decisions never need this (they
    /// read [`open_operations_of`](Self::open_operations_of) or a page); tests and tooling do.
    pub async fn list_operations(&self, cluster: &ClusterId) -> Result<Vec<Operation>, Error> {
        let mut all = Vec::new();
        let mut after = None;
        loop {
            let page = self.operations_page(cluster, 100, after.as_ref()).await?;
            all.extend(page.operations);
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        all.reverse();
        Ok(all)
    }

    /// The cluster's open (non-terminal) operations, oldest first: the sparse `open_by_cluster` index, so
    /// the read costs what is open, not the cluster's whole history. Eventually consistent like any index:
    /// a caller that must see an operation queued a moment ago reads the cluster's `pending_operation`.
    pub async fn open_operations_of(&self, cluster: &ClusterId) -> Result<Vec<Operation>, Error> {
        let q = self
            .ddb
            .query()
            .table_name(&self.operations)
            .index_name("open_by_cluster")
            .key_condition_expression("open_cluster = :c")
            .expression_attribute_values(":c", s(cluster.as_str()));
        query_all("operation", q).await
    }

    /// At most `limit` of the cluster's operations, newest first, starting after `after` (a previous
    /// page's `next`).
    pub async fn operations_page(
        &self,
        cluster: &ClusterId,
        limit: u32,
        after: Option<&PageKey>,
    ) -> Result<OperationPage, Error> {
        let mut q = self
            .ddb
            .query()
            .table_name(&self.operations)
            .index_name("by_cluster")
            .key_condition_expression("cluster_id = :c")
            .expression_attribute_values(":c", s(cluster.as_str()))
            .scan_index_forward(false)
            .limit(limit.clamp(1, 1000) as i32);
        if let Some(a) = after {
            q = q.set_exclusive_start_key(Some(HashMap::from([
                ("cluster_id".to_owned(), s(cluster.as_str())),
                ("created_at".to_owned(), s(&a.created_at)),
                ("operation_id".to_owned(), s(&a.operation_id)),
            ])));
        }
        let out = q.send().await.map_err(|e| Error::aws("Query", e))?;
        let operations = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|i| from_item("operation", i))
            .collect::<Result<Vec<Operation>, _>>()?;
        let next = out.last_evaluated_key.and_then(|k| {
            Some(PageKey {
                created_at: k.get("created_at")?.as_s().ok()?.clone(),
                operation_id: k.get("operation_id")?.as_s().ok()?.clone(),
            })
        });
        Ok(OperationPage { operations, next })
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

    /// The kind and status of each of `ids` (at most 100: one BatchGetItem, unprocessed keys asked again),
    /// read consistently and projected so a page of clusters does not load whole operations. Missing ids
    /// are absent from the answer.
    pub async fn operation_briefs(
        &self,
        ids: &[OperationId],
    ) -> Result<HashMap<OperationId, OperationBrief>, Error> {
        let mut out = HashMap::with_capacity(ids.len());
        let mut keys: Vec<Item> = ids
            .iter()
            .map(|id| HashMap::from([("operation_id".to_owned(), s(id.as_str()))]))
            .collect();
        keys.sort_by(|a, b| a["operation_id"].as_s().ok().cmp(&b["operation_id"].as_s().ok()));
        keys.dedup();
        for attempt in 0..6u32 {
            if keys.is_empty() {
                break;
            }
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20 << attempt)).await;
            }
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut keys)))
                .consistent_read(true)
                .projection_expression("operation_id, kind, #s, created_at, updated_at")
                .expression_attribute_names("#s", "status")
                .build()
                .map_err(|e| Error::aws("BatchGetItem", e))?;
            let answer = self
                .ddb
                .batch_get_item()
                .request_items(&self.operations, request)
                .send()
                .await
                .map_err(|e| Error::aws("BatchGetItem", e))?;
            for item in answer
                .responses
                .and_then(|mut r| r.remove(&self.operations))
                .unwrap_or_default()
            {
                let brief: OperationBrief = from_item("operation", item)?;
                out.insert(brief.operation_id.clone(), brief);
            }
            keys = answer
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.operations))
                .map(|k| k.keys)
                .unwrap_or_default();
        }
        if !keys.is_empty() {
            return Err(Error::Aws {
                operation: "BatchGetItem",
                source: format!("{} keys stayed unprocessed", keys.len()).into(),
            });
        }
        Ok(out)
    }
}

/// What a listing shows of an operation: which one, what it does and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OperationBrief {
    pub operation_id: OperationId,
    pub kind: OperationKind,
    pub status: OperationStatus,
    #[serde(with = "strato_domain::ts")]
    pub created_at: OffsetDateTime,
    #[serde(with = "strato_domain::ts")]
    pub updated_at: OffsetDateTime,
}

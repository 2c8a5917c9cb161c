//! Cluster items, with the per-tenant name reservations (in the locks table) that keep names unique.

use super::audit_items;
use std::collections::HashMap;

use aws_sdk_dynamodb::types::{Delete, Put};
use time::{Duration, OffsetDateTime};

use super::write::{conditional, tx_delete, tx_put};
use super::{Item, Store, fetch, from_item, n, s, text, to_item};
use crate::error::Error;
use crate::store::{QuotaBound, Quotas};
use strato_domain::audit::AuditEntry;
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::model::{Cluster, ClusterState, DEFAULT_DRIFT_INTERVAL_SECS, Operation};
use strato_domain::ts;

/// Why a create could not be recorded (the port's type: the API decides on it against fakes too).
pub use strato_domain::ports::CreateRejected;

/// Which of a tenant's clusters a listing returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFilter {
    /// Only clusters in this state (a DELETED one too, when asked for by state).
    pub state: Option<ClusterState>,
    /// Only the cluster of this name (names are unique among a tenant's clusters that are not deleted).
    pub name: Option<String>,
    /// Without a state: DELETED clusters too.
    pub include_deleted: bool,
}

fn name_lock_id(t: &TenantId, name: &str) -> String {
    format!("name#{t}#{name}")
}

impl Store {
    /// Writes the cluster, its first operation, the name reservation and the tenant's counters in one
    /// transaction, bounded by `quotas`. `Ok(Err(_))` says which rule refused it.
    pub async fn create_cluster(
        &self,
        cluster: &Cluster,
        op: &Operation,
        quotas: &Quotas,
    ) -> Result<Result<(), CreateRejected>, Error> {
        self.create_cluster_bounded(cluster, op, QuotaBound::Given(quotas), None)
            .await
    }

    /// [`create_cluster`](Self::create_cluster) bounded as `bound` says: with [`QuotaBound::Stored`] the
    /// tenant's quotas are checked by the transaction's own condition, so no read precedes it (they are read
    /// only to say which one refused). `audit`, the request's entry, is put in the same transaction (last,
    /// so the refusals keep their indexes): written exactly when the create is.
    pub(crate) async fn create_cluster_bounded(
        &self,
        cluster: &Cluster,
        op: &Operation,
        bound: QuotaBound<'_>,
        audit: Option<&AuditEntry>,
    ) -> Result<Result<(), CreateRejected>, Error> {
        let name_item: Item = HashMap::from([
            (
                "lock_id".into(),
                s(name_lock_id(&cluster.tenant_id, cluster.spec.name.as_str())),
            ),
            ("cluster_id".into(), s(cluster.cluster_id.as_str())),
        ]);
        let put = |table: &str, item: Item, cond: &str| {
            tx_put(
                Put::builder()
                    .table_name(table)
                    .set_item(Some(item))
                    .condition_expression(cond),
            )
        };
        let mut items = vec![
            self.tenant_counters(&cluster.tenant_id, 1, 1, bound)?,
            put(&self.locks, name_item, "attribute_not_exists(lock_id)")?,
            put(
                &self.clusters,
                to_item("cluster", cluster)?,
                "attribute_not_exists(cluster_id)",
            )?,
            put(
                &self.operations,
                self.op_item(op)?,
                "attribute_not_exists(operation_id)",
            )?,
        ];
        if let Some(entry) = audit {
            let item = audit_items::entry_item(entry, self.audit_retention)?;
            items.push(put(&self.audit, item, "attribute_not_exists(entry_id)")?);
        }
        match self.transact(items).await?.map_err(|lost| lost.index) {
            Ok(()) => Ok(Ok(())),
            Err(0) => Ok(Err(self.quota_hit(&cluster.tenant_id, bound).await?)),
            Err(1) => Ok(Err(CreateRejected::NameTaken)),
            Err(_) => Err(Error::Conflict(format!(
                "cluster {} or operation {} already exists",
                cluster.cluster_id, op.operation_id
            ))),
        }
    }

    pub async fn get_cluster(&self, tenant: &TenantId, id: &ClusterId) -> Result<Option<Cluster>, Error> {
        let key = [("tenant_id", s(tenant.as_str())), ("cluster_id", s(id.as_str()))];
        let get = self.get(&self.clusters, &key).consistent_read(true);
        fetch(get).await?.map(|i| from_item("cluster", i)).transpose()
    }

    /// Cluster by id alone, for callers that know no tenant (ECS events, agents). Reads the index to find
    /// the tenant, then the table consistently.
    pub async fn find_cluster(&self, id: &ClusterId) -> Result<Option<Cluster>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.clusters)
            .index_name("by_cluster_id")
            .key_condition_expression("cluster_id = :c")
            .expression_attribute_values(":c", s(id.as_str()))
            .send()
            .await
            .map_err(|e| Error::aws("Query", e))?;
        let Some(tenant) = out.items().first().and_then(|i| text(i, "tenant_id")) else {
            return Ok(None);
        };
        let tenant: TenantId = tenant.parse()?;
        self.get_cluster(&tenant, id).await
    }

    pub async fn find_cluster_by_agent_token(&self, token_hash: &str) -> Result<Option<Cluster>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.clusters)
            .index_name("by_agent_token")
            .key_condition_expression("agent_token_hash = :h")
            .expression_attribute_values(":h", s(token_hash))
            .send()
            .await
            .map_err(|e| Error::aws("Query", e))?;
        match out.items().first() {
            Some(i) => {
                let c: Cluster = from_item("cluster", i.clone())?;
                self.get_cluster(&c.tenant_id, &c.cluster_id).await
            }
            None => Ok(None),
        }
    }

    /// One page of a tenant's clusters, newest first, optionally filtered by state (DELETED ones included).
    pub async fn list_clusters(
        &self,
        tenant: &TenantId,
        state: Option<ClusterState>,
        limit: i32,
        after: Option<&ClusterId>,
    ) -> Result<(Vec<Cluster>, Option<ClusterId>), Error> {
        let filter = ClusterFilter {
            state,
            name: None,
            include_deleted: true,
        };
        self.list_clusters_matching(tenant, &filter, limit, after).await
    }

    /// One page of a tenant's clusters that match `filter`, newest first.
    pub async fn list_clusters_matching(
        &self,
        tenant: &TenantId,
        filter: &ClusterFilter,
        limit: i32,
        after: Option<&ClusterId>,
    ) -> Result<(Vec<Cluster>, Option<ClusterId>), Error> {
        let mut clusters = Vec::new();
        let mut start = after.map(|a| {
            HashMap::from([
                ("tenant_id".to_owned(), s(tenant.as_str())),
                ("cluster_id".to_owned(), s(a.as_str())),
            ])
        });
        let mut conditions = Vec::new();
        if filter.state.is_some() {
            conditions.push("#s = :s");
        } else if !filter.include_deleted {
            conditions.push("#s <> :deleted");
        }
        if filter.name.is_some() {
            conditions.push("#spec.#name = :n");
        }
        // A filter applies after the page limit, so keep reading until the page is full or the data ends.
        loop {
            let mut q = self
                .ddb
                .query()
                .table_name(&self.clusters)
                .key_condition_expression("tenant_id = :t")
                .expression_attribute_values(":t", s(tenant.as_str()))
                .scan_index_forward(false)
                .limit(limit - clusters.len() as i32)
                .set_exclusive_start_key(start);
            if !conditions.is_empty() {
                q = q.filter_expression(conditions.join(" AND "));
            }
            if let Some(st) = filter.state {
                q = q.expression_attribute_values(":s", s(st.as_str()));
            } else if !filter.include_deleted {
                q = q.expression_attribute_values(":deleted", s(ClusterState::Deleted.as_str()));
            }
            if filter.state.is_some() || !filter.include_deleted {
                q = q.expression_attribute_names("#s", "state");
            }
            if let Some(name) = &filter.name {
                q = q
                    .expression_attribute_names("#spec", "spec")
                    .expression_attribute_names("#name", "name")
                    .expression_attribute_values(":n", s(name));
            }
            let page = q.send().await.map_err(|e| Error::aws("Query", e))?;
            for item in page.items.unwrap_or_default() {
                clusters.push(from_item::<Cluster>("cluster", item)?);
            }
            start = page.last_evaluated_key;
            if start.is_none() || clusters.len() as i32 >= limit {
                break;
            }
        }
        let next = start.and_then(|k| text(&k, "cluster_id").and_then(|v| v.parse().ok()));
        Ok((clusters, next))
    }

    /// Saves `cluster` if nobody changed it since it was read (version check), bumping its version.
    pub async fn save_cluster(&self, cluster: &mut Cluster) -> Result<(), Error> {
        let expected = cluster.version;
        cluster.version += 1;
        cluster.updated_at = ts::now();
        cluster.next_drift_check_at = match cluster.state() {
            // First check one interval after the cluster becomes ACTIVE (the scheduler adds jitter later).
            ClusterState::Active => cluster.next_drift_check_at.clone().or_else(|| {
                let every = cluster.drift_interval_secs.unwrap_or(DEFAULT_DRIFT_INTERVAL_SECS);
                Some(ts::format(ts::now() + Duration::seconds(every as i64)))
            }),
            _ => None,
        };
        cluster.expiry_bucket = strato_domain::expiry::index_bucket(cluster);
        cluster.agent_watch = strato_domain::health::watch_bucket(cluster);
        let put = self
            .ddb
            .put_item()
            .table_name(&self.clusters)
            .set_item(Some(to_item("cluster", &*cluster)?))
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n(expected))
            .send();
        if let Err(lost) = conditional("PutItem", put).await? {
            cluster.version = expected;
            return Err(lost.conflict(format!(
                "cluster {} changed since version {expected}",
                cluster.cluster_id
            )));
        }
        Ok(())
    }

    /// Frees the cluster's name and quota slot once it is DELETED.
    pub async fn release_cluster_name(&self, cluster: &Cluster) -> Result<(), Error> {
        let del = Delete::builder()
            .table_name(&self.locks)
            .key(
                "lock_id",
                s(name_lock_id(&cluster.tenant_id, cluster.spec.name.as_str())),
            )
            .condition_expression("cluster_id = :c")
            .expression_attribute_values(":c", s(cluster.cluster_id.as_str()));
        let items = vec![
            tx_delete(del)?,
            self.tenant_counters(&cluster.tenant_id, -1, 0, QuotaBound::None)?,
        ];
        // A failed condition means the name was already released (duplicate event): nothing to do.
        let _ = self.transact(items).await?;
        Ok(())
    }

    /// ACTIVE clusters whose next drift check is due at `now`, most overdue first (the `by_state` index:
    /// a Query, never a Scan), at most `limit`.
    pub async fn clusters_due_for_drift(
        &self,
        now: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, Error> {
        let due = "#s = :p AND next_drift_check_at <= :before";
        self.clusters_up_to("by_state", due, ClusterState::Active.as_str(), now, limit)
            .await
    }

    /// Clusters whose expiry is at or before `before`, soonest first (the sparse `by_expiry` index: a
    /// Query, never a Scan), at most `limit`.
    pub async fn clusters_expiring_before(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, Error> {
        let due = "expiry_bucket = :p AND expires_at <= :before";
        let bucket = strato_domain::expiry::EXPIRY_BUCKET;
        self.clusters_up_to("by_expiry", due, bucket, before, limit).await
    }

    /// Clusters whose agent is expected to report and last did at or before `before`, longest silent
    /// first (the sparse `by_agent_seen` index: a Query, never a Scan), at most `limit`.
    pub async fn clusters_silent_since(
        &self,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, Error> {
        let due = "agent_watch = :p AND agent_last_seen <= :before";
        let bucket = strato_domain::health::WATCH_BUCKET;
        self.clusters_up_to("by_agent_seen", due, bucket, before, limit)
            .await
    }

    /// One page of index `index` of the clusters table under `condition`, its partition value `:p` being
    /// `partition` and its time bound `:before` being `before` (`#s` names the reserved `state`), oldest
    /// first, at most `limit`: the scheduler's three sweeps, each a Query on a sparse index.
    async fn clusters_up_to(
        &self,
        index: &str,
        condition: &str,
        partition: &str,
        before: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, Error> {
        let mut query = self
            .ddb
            .query()
            .table_name(&self.clusters)
            .index_name(index)
            .key_condition_expression(condition)
            .expression_attribute_values(":p", s(partition))
            .expression_attribute_values(":before", s(ts::format(before)))
            .limit(limit);
        if condition.contains("#s") {
            query = query.expression_attribute_names("#s", "state");
        }
        let page = query.send().await.map_err(|e| Error::aws("Query", e))?;
        page.items
            .unwrap_or_default()
            .into_iter()
            .map(|i| from_item::<Cluster>("cluster", i))
            .collect()
    }
}

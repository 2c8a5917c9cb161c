//! DynamoDB adapter for clusters, operations, templates, tenants, locks and idempotency records.
//! Every multi-item change is one conditional write or one transaction, so nothing is ever half-written.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::error::Error;
use crate::resources::Names;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{Cluster, ClusterState, DEFAULT_DRIFT_INTERVAL_SECS, Operation, OperationStatus};
use strato_domain::template::{Manifest, Template};
use strato_domain::ts;
use strato_domain::webhook::Webhook;

type Item = HashMap<String, AttributeValue>;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn to_item<T: Serialize>(what: &str, v: &T) -> Result<Item, Error> {
    serde_dynamo::to_item(v).map_err(|e| Error::Corrupt {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

fn from_item<T: DeserializeOwned>(what: &str, item: Item) -> Result<T, Error> {
    serde_dynamo::from_item(item).map_err(|e| Error::Corrupt {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

/// Per-tenant limits. Stored on the tenant item; absent fields fall back to the platform defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quotas {
    pub max_clusters: u32,
    pub max_open_operations: u32,
    pub max_concurrent_operations: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        Self {
            max_clusters: 20,
            max_open_operations: 50,
            max_concurrent_operations: 5,
        }
    }
}

/// Why a create could not be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateRejected {
    NameTaken,
    ClusterQuota { max: u32 },
    OperationQuota { max: u32 },
}

/// Outcome of trying to take a cluster lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockOutcome {
    Acquired { fencing_token: u64 },
    Held { owner: OperationId },
}

/// A stored idempotent answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotentResponse {
    pub request_hash: String,
    pub status: u16,
    pub body: String,
}

/// What reserving an idempotency key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// The key is ours: do the work, then `idempotent_put` its answer (or `idempotent_release`).
    Reserved,
    /// An earlier request finished with this answer.
    Done(IdempotentResponse),
    /// A request with this key (and this fingerprint) is being processed right now.
    InProgress { request_hash: String },
}

/// How long a reservation blocks repeats when its request dies without answering.
const RESERVATION_LEASE: Duration = Duration::seconds(60);

#[derive(Debug, Clone)]
pub struct Store {
    ddb: Client,
    clusters: String,
    operations: String,
    locks: String,
    idempotency: String,
    templates: String,
    tenants: String,
    /// Terraform's S3-backend lock table (state locks and state digests).
    tf_locks: String,
}

fn cluster_lock_id(c: &ClusterId) -> String {
    format!("cluster#{c}")
}

fn tenant_slots_id(t: &TenantId) -> String {
    format!("slots#{t}")
}

fn name_lock_id(t: &TenantId, name: &str) -> String {
    format!("name#{t}#{name}")
}

/// The `open` index key: the status while the operation is not terminal, with parked operations apart.
fn open_status(op: &Operation) -> Option<&'static str> {
    match op.status {
        OperationStatus::Queued if op.wait_reason.is_some() => Some("waiting"),
        OperationStatus::Queued => Some("queued"),
        OperationStatus::Dispatched => Some("dispatched"),
        OperationStatus::Running => Some("running"),
        _ => None,
    }
}

/// Whether a conditional DynamoDB write lost its condition (someone else wrote first).
pub fn condition_failed<E: aws_sdk_dynamodb::error::ProvideErrorMetadata, R>(
    e: &aws_sdk_dynamodb::error::SdkError<E, R>,
) -> bool {
    e.as_service_error().and_then(|e| e.code()) == Some("ConditionalCheckFailedException")
}

/// Every item of a Query, across pages.
async fn query_all<T: serde::de::DeserializeOwned>(
    what: &'static str,
    q: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> Result<Vec<T>, Error> {
    let mut out = Vec::new();
    let mut pages = q.into_paginator().send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| Error::aws("Query", e))?;
        for item in page.items.unwrap_or_default() {
            out.push(from_item::<T>(what, item)?);
        }
    }
    Ok(out)
}

impl Store {
    pub fn new(ddb: Client, names: &Names) -> Self {
        Self {
            ddb,
            clusters: names.table("clusters"),
            operations: names.table("operations"),
            locks: names.table("locks"),
            idempotency: names.table("idempotency"),
            templates: names.table("templates"),
            tenants: names.table("tenants"),
            tf_locks: names.table("tf-locks"),
        }
    }

    fn op_item(op: &Operation) -> Result<Item, Error> {
        let mut item = to_item("operation", op)?;
        if let Some(open) = open_status(op) {
            item.insert("open_status".into(), s(open));
        }
        Ok(item)
    }

    // ---- templates -------------------------------------------------------------------------------------

    /// Records a template version. Versions are immutable: a second put of the same version is refused
    /// unless the content hash matches (then it is a no-op).
    pub async fn put_template(
        &self,
        manifest: &Manifest,
        content_sha256: &str,
        bundle_key: &str,
    ) -> Result<(), Error> {
        let json = serde_json::to_string(manifest).map_err(|source| Error::Render {
            what: "manifest",
            source,
        })?;
        let item: Item = HashMap::from([
            ("name".into(), s(&manifest.name)),
            ("version".into(), s(&manifest.version)),
            ("manifest".into(), s(json)),
            ("sha256".into(), s(content_sha256)),
            ("bundle_key".into(), s(bundle_key)),
        ]);
        let res = self
            .ddb
            .put_item()
            .table_name(&self.templates)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#n) OR sha256 = :sha")
            .expression_attribute_names("#n", "name")
            .expression_attribute_values(":sha", s(content_sha256))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if condition_failed(&e) => Err(Error::Conflict(format!(
                "{}@{} is already published with different content",
                manifest.name, manifest.version
            ))),
            Err(e) => Err(Error::aws("PutItem", e)),
        }
    }

    pub async fn get_template(&self, name: &str, version: &str) -> Result<Option<StoredTemplate>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.templates)
            .key("name", s(name))
            .key("version", s(version))
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        out.item.map(StoredTemplate::from_item).transpose()
    }

    /// All versions of every template (the catalog is small; a Query per name would need a name list).
    pub async fn list_templates(&self) -> Result<Vec<StoredTemplate>, Error> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .ddb
                .scan()
                .table_name(&self.templates)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| Error::aws("Scan", e))?;
            for item in page.items.unwrap_or_default() {
                out.push(StoredTemplate::from_item(item)?);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        out.sort_by(|a, b| {
            a.template
                .name()
                .cmp(b.template.name())
                .then_with(|| a.version_key().cmp(&b.version_key()))
        });
        Ok(out)
    }

    // ---- Terraform state ---------------------------------------------------------------------------------

    /// Records `md5_hex` as the expected digest of the state object `bucket/key`, as Terraform's S3 backend
    /// does after each write. Terraform refuses to read a state whose md5 differs from this record, so a
    /// state version put back by hand must come with its digest.
    pub async fn set_state_digest(&self, bucket: &str, key: &str, md5_hex: &str) -> Result<(), Error> {
        self.ddb
            .put_item()
            .table_name(&self.tf_locks)
            .item(
                "LockID",
                s(format!("{}-md5", crate::state_lock::lock_id(bucket, key))),
            )
            .item("Digest", s(md5_hex))
            .send()
            .await
            .map_err(|e| Error::aws("PutItem", e))?;
        Ok(())
    }

    // ---- tenants ---------------------------------------------------------------------------------------

    pub async fn quotas(&self, tenant: &TenantId) -> Result<Quotas, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        let d = Quotas::default();
        let item = out.item.unwrap_or_default();
        let get = |k: &str, dflt: u32| {
            item.get(k)
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(dflt)
        };
        Ok(Quotas {
            max_clusters: get("max_clusters", d.max_clusters),
            max_open_operations: get("max_open_operations", d.max_open_operations),
            max_concurrent_operations: get("max_concurrent_operations", d.max_concurrent_operations),
        })
    }

    /// The tenant's monthly budget in USD, if it set one: an apply whose estimate exceeds it stops before
    /// apply.
    pub async fn monthly_budget(&self, tenant: &TenantId) -> Result<Option<f64>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .projection_expression("monthly_budget")
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        Ok(out.item.and_then(|i| {
            i.get("monthly_budget")
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse().ok())
        }))
    }

    pub async fn set_monthly_budget(&self, tenant: &TenantId, usd: Option<f64>) -> Result<(), Error> {
        let q = self
            .ddb
            .update_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()));
        let q = match usd {
            Some(v) => q
                .update_expression("SET monthly_budget = :b")
                .expression_attribute_values(":b", n(v)),
            None => q.update_expression("REMOVE monthly_budget"),
        };
        q.send().await.map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// The tenant's webhook (tenant item attributes `webhook_url`, `webhook_secret`), if it set one. A stored
    /// value that is no longer acceptable (e.g. a secret shorter than the minimum) counts as none.
    pub async fn tenant_webhook(&self, tenant: &TenantId) -> Result<Option<Webhook>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .projection_expression("webhook_url, webhook_secret")
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        let Some(item) = out.item else {
            return Ok(None);
        };
        let get = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
        let (Some(url), Some(secret)) = (get("webhook_url"), get("webhook_secret")) else {
            return Ok(None);
        };
        match Webhook::new(url, secret) {
            Ok(w) => Ok(Some(w)),
            Err(e) => {
                tracing::warn!(tenant = %tenant, error = %e, "stored tenant webhook is unusable; ignored");
                Ok(None)
            }
        }
    }

    pub async fn set_tenant_webhook(&self, tenant: &TenantId, hook: Option<&Webhook>) -> Result<(), Error> {
        let q = self
            .ddb
            .update_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()));
        let q = match hook {
            Some(w) => q
                .update_expression("SET webhook_url = :u, webhook_secret = :s")
                .expression_attribute_values(":u", s(w.url()))
                .expression_attribute_values(":s", s(w.secret())),
            None => q.update_expression("REMOVE webhook_url, webhook_secret"),
        };
        q.send().await.map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    pub async fn set_quotas(&self, tenant: &TenantId, q: &Quotas) -> Result<(), Error> {
        self.ddb
            .update_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .update_expression(
                "SET max_clusters = :a, max_open_operations = :b, max_concurrent_operations = :c",
            )
            .expression_attribute_values(":a", n(q.max_clusters))
            .expression_attribute_values(":b", n(q.max_open_operations))
            .expression_attribute_values(":c", n(q.max_concurrent_operations))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// One update of the tenant's counters (a transaction may touch an item only once). Increments are
    /// bounded by `quotas`.
    fn tenant_counters(
        &self,
        tenant: &TenantId,
        clusters: i64,
        operations: i64,
        quotas: Option<&Quotas>,
    ) -> Result<TransactWriteItem, Error> {
        let mut adds = Vec::new();
        let mut conds = Vec::new();
        let mut u = Update::builder()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()));
        for (attr, delta, max) in [
            ("cluster_count", clusters, quotas.map(|q| q.max_clusters)),
            (
                "open_operations",
                operations,
                quotas.map(|q| q.max_open_operations),
            ),
        ] {
            if delta == 0 {
                continue;
            }
            adds.push(format!("{attr} :{attr}"));
            u = u.expression_attribute_values(format!(":{attr}"), n(delta));
            if let (Some(max), true) = (max, delta > 0) {
                conds.push(format!("(attribute_not_exists({attr}) OR {attr} < :max_{attr})"));
                u = u.expression_attribute_values(format!(":max_{attr}"), n(max));
            }
        }
        u = u.update_expression(format!("ADD {}", adds.join(", ")));
        if !conds.is_empty() {
            u = u.condition_expression(conds.join(" AND "));
        }
        Ok(TransactWriteItem::builder()
            .update(u.build().map_err(|e| Error::aws("TransactWriteItems", e))?)
            .build())
    }

    /// Which quota a refused increment hit, read after the fact.
    async fn quota_hit(&self, tenant: &TenantId, quotas: &Quotas) -> Result<CreateRejected, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        let item = out.item.unwrap_or_default();
        let get = |k: &str| {
            item.get(k)
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(0)
        };
        Ok(if get("cluster_count") >= quotas.max_clusters {
            CreateRejected::ClusterQuota {
                max: quotas.max_clusters,
            }
        } else {
            CreateRejected::OperationQuota {
                max: quotas.max_open_operations,
            }
        })
    }

    // ---- clusters and operations -----------------------------------------------------------------------

    /// Writes the cluster, its first operation, the name reservation and the tenant's counters in one
    /// transaction. `Ok(Err(_))` says which rule refused it.
    pub async fn create_cluster(
        &self,
        cluster: &Cluster,
        op: &Operation,
        quotas: &Quotas,
    ) -> Result<Result<(), CreateRejected>, Error> {
        let put = |table: &str, item: Item, cond: &str| -> Result<TransactWriteItem, Error> {
            let p = Put::builder()
                .table_name(table)
                .set_item(Some(item))
                .condition_expression(cond)
                .build()
                .map_err(|e| Error::aws("TransactWriteItems", e))?;
            Ok(TransactWriteItem::builder().put(p).build())
        };
        let name_item: Item = HashMap::from([
            (
                "lock_id".into(),
                s(name_lock_id(&cluster.tenant_id, cluster.spec.name.as_str())),
            ),
            ("cluster_id".into(), s(cluster.cluster_id.as_str())),
        ]);
        let items = vec![
            self.tenant_counters(&cluster.tenant_id, 1, 1, Some(quotas))?,
            put(&self.locks, name_item, "attribute_not_exists(lock_id)")?,
            put(
                &self.clusters,
                to_item("cluster", cluster)?,
                "attribute_not_exists(cluster_id)",
            )?,
            put(
                &self.operations,
                Self::op_item(op)?,
                "attribute_not_exists(operation_id)",
            )?,
        ];
        match self.transact(items, |failed| failed).await? {
            Ok(()) => Ok(Ok(())),
            Err(0) => Ok(Err(self.quota_hit(&cluster.tenant_id, quotas).await?)),
            Err(1) => Ok(Err(CreateRejected::NameTaken)),
            Err(_) => Err(Error::Conflict(format!(
                "cluster {} or operation {} already exists",
                cluster.cluster_id, op.operation_id
            ))),
        }
    }

    /// Records a new operation on an existing cluster, bounded by the tenant's open-operation quota.
    pub async fn add_operation(
        &self,
        op: &Operation,
        quotas: &Quotas,
    ) -> Result<Result<(), CreateRejected>, Error> {
        let p = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(Self::op_item(op)?))
            .condition_expression("attribute_not_exists(operation_id)")
            .build()
            .map_err(|e| Error::aws("TransactWriteItems", e))?;
        let items = vec![
            self.tenant_counters(&op.tenant_id, 0, 1, Some(quotas))?,
            TransactWriteItem::builder().put(p).build(),
        ];
        self.transact(items, |_| CreateRejected::OperationQuota {
            max: quotas.max_open_operations,
        })
        .await
    }

    async fn transact<R>(
        &self,
        items: Vec<TransactWriteItem>,
        reject: impl Fn(usize) -> R,
    ) -> Result<Result<(), R>, Error> {
        // One conditional put needs no transaction: a PutItem is as atomic, costs half the write capacity,
        // and is the common case (an operation saved without touching the tenant's counters).
        if let [only] = items.as_slice()
            && let Some(p) = only.put()
        {
            let put = self
                .ddb
                .put_item()
                .table_name(p.table_name())
                .set_item(Some(p.item().clone()))
                .set_condition_expression(p.condition_expression().map(str::to_owned))
                .set_expression_attribute_names(p.expression_attribute_names().cloned())
                .set_expression_attribute_values(p.expression_attribute_values().cloned());
            return match put.send().await {
                Ok(_) => Ok(Ok(())),
                Err(e) if condition_failed(&e) => Ok(Err(reject(0))),
                Err(e) => Err(Error::aws("PutItem", e)),
            };
        }
        match self
            .ddb
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(Ok(())),
            Err(e) => {
                let reasons = e
                    .as_service_error()
                    .and_then(|se| match se {
                        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(t) => {
                            Some(t.cancellation_reasons().to_vec())
                        }
                        _ => None,
                    });
                match reasons {
                    Some(reasons) => {
                        let failed = reasons
                            .iter()
                            .position(|r| r.code() == Some("ConditionalCheckFailed"));
                        match failed {
                            Some(i) => Ok(Err(reject(i))),
                            None => Err(Error::aws("TransactWriteItems", e)),
                        }
                    }
                    None => Err(Error::aws("TransactWriteItems", e)),
                }
            }
        }
    }

    pub async fn get_cluster(&self, tenant: &TenantId, id: &ClusterId) -> Result<Option<Cluster>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.clusters)
            .key("tenant_id", s(tenant.as_str()))
            .key("cluster_id", s(id.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        out.item.map(|i| from_item("cluster", i)).transpose()
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
        let Some(tenant) = out
            .items()
            .first()
            .and_then(|i| i.get("tenant_id"))
            .and_then(|v| v.as_s().ok())
        else {
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

    /// One page of a tenant's clusters, newest first, optionally filtered by state.
    pub async fn list_clusters(
        &self,
        tenant: &TenantId,
        state: Option<ClusterState>,
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
            if let Some(st) = state {
                q = q
                    .filter_expression("#s = :s")
                    .expression_attribute_names("#s", "state")
                    .expression_attribute_values(":s", s(st.as_str()));
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
        let next = start.and_then(|k| {
            k.get("cluster_id")
                .and_then(|v| v.as_s().ok())
                .and_then(|v| v.parse().ok())
        });
        Ok((clusters, next))
    }

    /// Saves `cluster` if nobody changed it since it was read (version check), bumping its version.
    pub async fn save_cluster(&self, cluster: &mut Cluster) -> Result<(), Error> {
        let expected = cluster.version;
        cluster.version += 1;
        cluster.updated_at = ts::now();
        cluster.next_drift_check_at = match cluster.state {
            // First check one interval after the cluster becomes ACTIVE (the scheduler adds jitter later).
            ClusterState::Active => cluster.next_drift_check_at.clone().or_else(|| {
                let every = cluster.drift_interval_secs.unwrap_or(DEFAULT_DRIFT_INTERVAL_SECS);
                Some(ts::format(ts::now() + Duration::seconds(every as i64)))
            }),
            _ => None,
        };
        let res = self
            .ddb
            .put_item()
            .table_name(&self.clusters)
            .set_item(Some(to_item("cluster", &*cluster)?))
            .condition_expression("version = :v")
            .expression_attribute_values(":v", n(expected))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if condition_failed(&e) => {
                cluster.version = expected;
                Err(Error::Conflict(format!(
                    "cluster {} changed since version {expected}",
                    cluster.cluster_id
                )))
            }
            Err(e) => Err(Error::aws("PutItem", e)),
        }
    }

    /// Frees the cluster's name and quota slot once it is DELETED.
    pub async fn release_cluster_name(&self, cluster: &Cluster) -> Result<(), Error> {
        let del = aws_sdk_dynamodb::types::Delete::builder()
            .table_name(&self.locks)
            .key(
                "lock_id",
                s(name_lock_id(&cluster.tenant_id, cluster.spec.name.as_str())),
            )
            .condition_expression("cluster_id = :c")
            .expression_attribute_values(":c", s(cluster.cluster_id.as_str()))
            .build()
            .map_err(|e| Error::aws("TransactWriteItems", e))?;
        let items = vec![
            TransactWriteItem::builder().delete(del).build(),
            self.tenant_counters(&cluster.tenant_id, -1, 0, None)?,
        ];
        // A failed condition means the name was already released (duplicate event): nothing to do.
        let _ = self.transact(items, |_| ()).await?;
        Ok(())
    }

    pub async fn get_operation(&self, id: &OperationId) -> Result<Option<Operation>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.operations)
            .key("operation_id", s(id.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        out.item.map(|i| from_item("operation", i)).transpose()
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
        let p = Put::builder()
            .table_name(&self.operations)
            .set_item(Some(Self::op_item(op)?))
            .condition_expression("updated_at = :u")
            .expression_attribute_values(":u", s(&expected))
            .build()
            .map_err(|e| Error::aws("TransactWriteItems", e))?;
        let mut items = vec![TransactWriteItem::builder().put(p).build()];
        if op.status.is_terminal() && !was_terminal {
            items.push(self.tenant_counters(&op.tenant_id, 0, -1, None)?);
        }
        match self.transact(items, |_| ()).await? {
            Ok(()) => Ok(()),
            Err(()) => {
                op.updated_at = ts::parse(&expected).unwrap_or(op.updated_at);
                Err(Error::Conflict(format!(
                    "operation {} changed concurrently",
                    op.operation_id
                )))
            }
        }
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

    /// ACTIVE clusters whose next drift check is due at `now`, most overdue first (the `by_state` index:
    /// a Query, never a Scan), at most `limit`.
    pub async fn clusters_due_for_drift(
        &self,
        now: OffsetDateTime,
        limit: i32,
    ) -> Result<Vec<Cluster>, Error> {
        let page = self
            .ddb
            .query()
            .table_name(&self.clusters)
            .index_name("by_state")
            .key_condition_expression("#s = :active AND next_drift_check_at <= :now")
            .expression_attribute_names("#s", "state")
            .expression_attribute_values(":active", s(ClusterState::Active.as_str()))
            .expression_attribute_values(":now", s(ts::format(now)))
            .limit(limit)
            .send()
            .await
            .map_err(|e| Error::aws("Query", e))?;
        page.items
            .unwrap_or_default()
            .into_iter()
            .map(|i| from_item::<Cluster>("cluster", i))
            .collect()
    }

    // ---- locks -----------------------------------------------------------------------------------------

    /// Extends the lease of a lock still held by `op` with `token`; `false` if it is no longer theirs.
    pub async fn renew_cluster_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        token: u64,
        lease: Duration,
        now: OffsetDateTime,
    ) -> Result<bool, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.locks)
            .key("lock_id", s(cluster_lock_id(cluster)))
            .update_expression("SET lease_expires_at = :exp")
            .condition_expression("#o = :op AND fencing_token = :t")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .expression_attribute_values(":t", n(token))
            .expression_attribute_values(":exp", s(ts::format(now + lease)))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if condition_failed(&e) => Ok(false),
            Err(e) => Err(Error::aws("UpdateItem", e)),
        }
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
        let res = self
            .ddb
            .update_item()
            .table_name(&self.locks)
            .key("lock_id", s(cluster_lock_id(cluster)))
            .update_expression("SET #o = :op, lease_expires_at = :exp ADD fencing_token :one")
            .condition_expression("attribute_not_exists(#o) OR lease_expires_at < :now")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .expression_attribute_values(":exp", s(ts::format(now + lease)))
            .expression_attribute_values(":now", s(ts::format(now)))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let token = |item: &Item| {
            item.get("fencing_token")
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse::<u64>().ok())
        };
        match res {
            Ok(out) => {
                let t = out
                    .attributes
                    .as_ref()
                    .and_then(token)
                    .ok_or_else(|| Error::Corrupt {
                        what: cluster_lock_id(cluster),
                        reason: "no fencing token".into(),
                    })?;
                Ok(LockOutcome::Acquired { fencing_token: t })
            }
            Err(e) => {
                let old = match e.as_service_error() {
                    Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c)) => {
                        c.item.clone()
                    }
                    _ => return Err(Error::aws("UpdateItem", e)),
                };
                let old = old.unwrap_or_default();
                let owner: OperationId = old
                    .get("owner")
                    .and_then(|v| v.as_s().ok())
                    .map(|o| o.parse())
                    .transpose()?
                    .ok_or_else(|| Error::Corrupt {
                        what: cluster_lock_id(cluster),
                        reason: "held without owner".into(),
                    })?;
                match (&owner == op, token(&old)) {
                    (true, Some(t)) => Ok(LockOutcome::Acquired { fencing_token: t }),
                    _ => Ok(LockOutcome::Held { owner }),
                }
            }
        }
    }

    /// Releases the lock only if `op` still holds it with `fencing_token`; `false` if it did not.
    pub async fn release_cluster_lock(
        &self,
        cluster: &ClusterId,
        op: &OperationId,
        fencing_token: u64,
    ) -> Result<bool, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.locks)
            .key("lock_id", s(cluster_lock_id(cluster)))
            .update_expression("REMOVE #o, lease_expires_at")
            .condition_expression("#o = :op AND fencing_token = :t")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .expression_attribute_values(":t", n(fencing_token))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if condition_failed(&e) => Ok(false),
            Err(e) => Err(Error::aws("UpdateItem", e)),
        }
    }

    /// Deletes the lock item of a cluster id that will never be locked again (an estimate's synthetic id),
    /// unless another operation holds it. Released locks keep their item (the fencing token must keep
    /// growing for a real cluster); for a synthetic id that item would only pile up. `false` when someone
    /// else holds it.
    pub async fn forget_cluster_lock(&self, cluster: &ClusterId, op: &OperationId) -> Result<bool, Error> {
        let res = self
            .ddb
            .delete_item()
            .table_name(&self.locks)
            .key("lock_id", s(cluster_lock_id(cluster)))
            .condition_expression("attribute_not_exists(#o) OR #o = :op")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":op", s(op.as_str()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if condition_failed(&e) => Ok(false),
            Err(e) => Err(Error::aws("DeleteItem", e)),
        }
    }

    /// Current holder of a cluster lock, with its token.
    pub async fn cluster_lock(&self, cluster: &ClusterId) -> Result<Option<(OperationId, u64)>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.locks)
            .key("lock_id", s(cluster_lock_id(cluster)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        let Some(item) = out.item else { return Ok(None) };
        let owner = item
            .get("owner")
            .and_then(|v| v.as_s().ok())
            .and_then(|o| o.parse().ok());
        let token = item
            .get("fencing_token")
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok());
        Ok(owner.zip(token))
    }

    /// Takes one of the tenant's concurrent-operation slots (a string set of operation ids, so taking it
    /// twice for the same operation is harmless). `false` when the tenant is at its limit.
    pub async fn acquire_tenant_slot(
        &self,
        tenant: &TenantId,
        op: &OperationId,
        limit: u32,
    ) -> Result<bool, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.locks)
            .key("lock_id", s(tenant_slots_id(tenant)))
            .update_expression("ADD running :op")
            .condition_expression(
                "attribute_not_exists(running) OR size(running) < :lim OR contains(running, :id)",
            )
            .expression_attribute_values(":op", AttributeValue::Ss(vec![op.to_string()]))
            .expression_attribute_values(":id", s(op.as_str()))
            .expression_attribute_values(":lim", n(limit))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if condition_failed(&e) => Ok(false),
            Err(e) => Err(Error::aws("UpdateItem", e)),
        }
    }

    pub async fn release_tenant_slot(&self, tenant: &TenantId, op: &OperationId) -> Result<(), Error> {
        self.ddb
            .update_item()
            .table_name(&self.locks)
            .key("lock_id", s(tenant_slots_id(tenant)))
            .update_expression("DELETE running :op")
            .expression_attribute_values(":op", AttributeValue::Ss(vec![op.to_string()]))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// Operation ids currently holding the tenant's slots.
    pub async fn tenant_slots(&self, tenant: &TenantId) -> Result<Vec<String>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.locks)
            .key("lock_id", s(tenant_slots_id(tenant)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        Ok(out
            .item
            .and_then(|i| i.get("running").and_then(|v| v.as_ss().ok()).cloned())
            .unwrap_or_default())
    }

    // ---- idempotency -----------------------------------------------------------------------------------

    pub async fn idempotent_get(
        &self,
        tenant: &TenantId,
        key: &str,
        now: OffsetDateTime,
    ) -> Result<Option<IdempotentResponse>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.idempotency)
            .key("idempotency_key", s(format!("{tenant}#{key}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::aws("GetItem", e))?;
        let Some(item) = out.item else { return Ok(None) };
        // TTL deletion lags (and moto never runs it): expiry is checked here.
        let expires = item
            .get("expires_at")
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        if expires <= now.unix_timestamp() {
            return Ok(None);
        }
        from_item("idempotency record", item).map(Some)
    }

    /// Claims `key` before the work is done, so two concurrent requests with one key cannot both act.
    /// A reservation is an answer with status 0 that expires after a short lease (a crashed request does
    /// not block its key for 24 hours).
    pub async fn idempotent_reserve(
        &self,
        tenant: &TenantId,
        key: &str,
        request_hash: &str,
        now: OffsetDateTime,
    ) -> Result<Reservation, Error> {
        for _ in 0..3 {
            let res = self
                .ddb
                .put_item()
                .table_name(&self.idempotency)
                .item("idempotency_key", s(format!("{tenant}#{key}")))
                .item("request_hash", s(request_hash))
                .item("status", n(0))
                .item("body", s(""))
                .item("expires_at", n((now + RESERVATION_LEASE).unix_timestamp()))
                .condition_expression("attribute_not_exists(idempotency_key) OR expires_at <= :now")
                .expression_attribute_values(":now", n(now.unix_timestamp()))
                .send()
                .await;
            match res {
                Ok(_) => return Ok(Reservation::Reserved),
                Err(e) if condition_failed(&e) => {
                    match self.idempotent_get(tenant, key, now).await? {
                        Some(r) if r.status == 0 => {
                            return Ok(Reservation::InProgress {
                                request_hash: r.request_hash,
                            });
                        }
                        Some(r) => return Ok(Reservation::Done(r)),
                        // Expired between the put and the read: try again.
                        None => continue,
                    }
                }
                Err(e) => return Err(Error::aws("PutItem", e)),
            }
        }
        Err(Error::Conflict(format!("idempotency key {key} kept changing")))
    }

    /// Gives a reservation back (the work failed in a way a retry should get a fresh chance at).
    pub async fn idempotent_release(
        &self,
        tenant: &TenantId,
        key: &str,
        request_hash: &str,
    ) -> Result<(), Error> {
        let res = self
            .ddb
            .delete_item()
            .table_name(&self.idempotency)
            .key("idempotency_key", s(format!("{tenant}#{key}")))
            .condition_expression("#st = :zero AND request_hash = :h")
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":h", s(request_hash))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if condition_failed(&e) => Ok(()),
            Err(e) => Err(Error::aws("DeleteItem", e)),
        }
    }

    /// Stores the answer for a key: completes our own reservation, or (without one) stores the first answer.
    /// If another request's answer is already there, returns that one instead.
    pub async fn idempotent_put(
        &self,
        tenant: &TenantId,
        key: &str,
        resp: &IdempotentResponse,
        now: OffsetDateTime,
    ) -> Result<Option<IdempotentResponse>, Error> {
        let mut item = to_item("idempotency record", resp)?;
        item.insert("idempotency_key".into(), s(format!("{tenant}#{key}")));
        item.insert(
            "expires_at".into(),
            n((now + Duration::hours(24)).unix_timestamp()),
        );
        let res = self
            .ddb
            .put_item()
            .table_name(&self.idempotency)
            .set_item(Some(item))
            .condition_expression(
                "attribute_not_exists(idempotency_key) OR expires_at <= :now \
                 OR (#st = :zero AND request_hash = :h)",
            )
            .expression_attribute_names("#st", "status")
            .expression_attribute_values(":now", n(now.unix_timestamp()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":h", s(&resp.request_hash))
            .send()
            .await;
        match res {
            Ok(_) => Ok(None),
            Err(e) if condition_failed(&e) => self.idempotent_get(tenant, key, now).await,
            Err(e) => Err(Error::aws("PutItem", e)),
        }
    }
}

/// A published template version as the catalog table holds it.
#[derive(Debug, Clone)]
pub struct StoredTemplate {
    pub template: Template,
    pub sha256: String,
    pub bundle_key: String,
}

impl StoredTemplate {
    fn from_item(item: Item) -> Result<Self, Error> {
        let get = |k: &str| {
            item.get(k)
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default()
        };
        let manifest: Manifest = serde_json::from_str(&get("manifest")).map_err(|e| Error::Corrupt {
            what: format!("template {}", get("name")),
            reason: e.to_string(),
        })?;
        Ok(Self {
            template: Template::from_manifest(manifest)?,
            sha256: get("sha256"),
            bundle_key: get("bundle_key"),
        })
    }

    fn version_key(&self) -> Vec<u64> {
        self.template
            .version()
            .split('.')
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    }
}

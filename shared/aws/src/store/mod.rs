//! DynamoDB adapter for clusters, operations, templates, tenants, locks and idempotency records.
//! Every multi-item change is one conditional write or one transaction, so nothing is ever half-written.
//!
//! One file per aggregate, all of them `impl Store` blocks over the tables named here. Every conditional
//! write goes through `write::conditional`, which alone decides whether a condition was lost.

pub(crate) mod audit_items;
mod claim;
mod cloud_tokens;
mod clusters;
mod fleet;
mod idempotency;
mod locks;
mod operations;
mod policies;
mod rollouts;
mod templates;
mod tenant_admin;
mod tenants;
mod terraform;
mod write;

use std::collections::HashMap;
use std::str::FromStr;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::resources::Names;

pub use clusters::{ClusterFilter, CreateRejected};
pub use fleet::{FleetFilter, FleetKey, OperationFilter};
pub use idempotency::{IdempotentResponse, Reservation};
pub use locks::LockOutcome;
pub use operations::{OperationBrief, OperationPage, PageKey};
pub use policies::TenantGovernance;
pub use templates::StoredTemplate;
pub use tenant_admin::{TenantPage, TenantRecord};
pub(crate) use tenants::QuotaBound;
pub use tenants::Quotas;
pub(crate) use write::conditional;

type Item = HashMap<String, AttributeValue>;

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
    /// Template versions read so far: a published version never changes, so a warm container reads each
    /// once. Shared by clones (one per process, as the handlers build their store once).
    template_cache: templates::TemplateCache,
    /// Template versions' standings, each reused for a short while (they change: deprecate, yank).
    status_cache: templates::StatusCache,
    /// Days a finished operation is kept before the table's TTL deletes it.
    operation_retention_days: u32,
    /// The audit log's table, for the entries a change writes in its own transaction.
    audit: String,
    /// How long those entries are kept (the audit log's retention).
    audit_retention: time::Duration,
}

/// Days a finished operation is kept unless `STRATO_OPERATION_RETENTION_DAYS` says otherwise.
pub const DEFAULT_OPERATION_RETENTION_DAYS: u32 = 90;

/// `STRATO_OPERATION_RETENTION_DAYS`: a positive whole number of days (default
/// [`DEFAULT_OPERATION_RETENTION_DAYS`]), read by every function that ends or notes operations.
pub fn operation_retention_days<F: Fn(&str) -> Option<String>>(
    env: &crate::env::Env<F>,
) -> Result<u32, crate::env::EnvError> {
    let days = env.positive(
        "STRATO_OPERATION_RETENTION_DAYS",
        u64::from(DEFAULT_OPERATION_RETENTION_DAYS),
    )?;
    Ok(days.min(36_500) as u32)
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
            template_cache: Default::default(),
            status_cache: templates::status_cache(),
            operation_retention_days: DEFAULT_OPERATION_RETENTION_DAYS,
            audit: names.table("audit"),
            audit_retention: audit_items::retention(audit_items::DEFAULT_RETENTION_DAYS),
        }
    }

    /// The same store, keeping the audit entries it writes `days` days (`STRATO_AUDIT_RETENTION_DAYS`, as
    /// the audit log does).
    pub fn with_audit_retention(mut self, days: u64) -> Self {
        self.audit_retention = audit_items::retention(days);
        self
    }

    /// The same store, keeping finished operations `days` days (at least one).
    pub fn with_operation_retention(mut self, days: u32) -> Self {
        self.operation_retention_days = days.max(1);
        self
    }

    /// A GetItem of `table` by the key attributes `key`; the caller adds read options.
    fn get(&self, table: &str, key: &[(&str, AttributeValue)]) -> GetItemFluentBuilder {
        let key = key.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        self.ddb.get_item().table_name(table).set_key(Some(key))
    }
}

/// Sends a GetItem: the item, if there is one.
async fn fetch(get: GetItemFluentBuilder) -> Result<Option<Item>, Error> {
    let out = get.send().await.map_err(|e| Error::aws("GetItem", e))?;
    Ok(out.item)
}

/// Every item of a Query, across pages.
async fn query_all<T: DeserializeOwned>(what: &'static str, q: QueryFluentBuilder) -> Result<Vec<T>, Error> {
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

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// A string attribute, if present and a string.
fn text<'a>(item: &'a Item, attr: &str) -> Option<&'a String> {
    item.get(attr).and_then(|v| v.as_s().ok())
}

/// A number attribute parsed as `T`; absent, not a number or out of range all read as `None`.
fn num<T: FromStr>(item: &Item, attr: &str) -> Option<T> {
    item.get(attr)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
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

//! The platform operator's read of clusters and operations across tenants: one bounded Scan page of the
//! table per call (never a read of the whole table), filtered by what the operator asked for.

use std::collections::HashMap;

use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind, OperationStatus};

use super::{Store, from_item, s, text};
use crate::error::Error;

/// What a fleet page is filtered by (each applies after the read: a page may hold fewer than its limit
/// and still have a next one).
#[derive(Debug, Clone, Default)]
pub struct FleetFilter {
    pub state: Option<ClusterState>,
    pub template: Option<String>,
    pub version: Option<String>,
}

/// Where a fleet page resumes: the last key read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetKey {
    pub tenant: TenantId,
    pub cluster: ClusterId,
}

impl Store {
    /// One page of clusters of every tenant: a Scan reading at most `limit` items, resumed after `after`.
    pub async fn scan_fleet(
        &self,
        filter: &FleetFilter,
        limit: i32,
        after: Option<&FleetKey>,
    ) -> Result<(Vec<Cluster>, Option<FleetKey>), Error> {
        let mut scan = self.ddb.scan().table_name(&self.clusters).limit(limit);
        if let Some(a) = after {
            scan = scan.set_exclusive_start_key(Some(HashMap::from([
                ("tenant_id".to_owned(), s(a.tenant.as_str())),
                ("cluster_id".to_owned(), s(a.cluster.as_str())),
            ])));
        }
        let mut conditions = Vec::new();
        if let Some(st) = filter.state {
            conditions.push("#s = :s");
            scan = scan
                .expression_attribute_names("#s", "state")
                .expression_attribute_values(":s", s(st.as_str()));
        }
        if filter.template.is_some() || filter.version.is_some() {
            scan = scan
                .expression_attribute_names("#spec", "spec")
                .expression_attribute_names("#tpl", "template");
        }
        if let Some(t) = &filter.template {
            conditions.push("#spec.#tpl.#name = :tn");
            scan = scan
                .expression_attribute_names("#name", "name")
                .expression_attribute_values(":tn", s(t));
        }
        if let Some(v) = &filter.version {
            conditions.push("#spec.#tpl.#version = :tv");
            scan = scan
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":tv", s(v));
        }
        if !conditions.is_empty() {
            scan = scan.filter_expression(conditions.join(" AND "));
        }
        let page = scan.send().await.map_err(|e| Error::aws("Scan", e))?;
        let mut clusters = Vec::new();
        for item in page.items.unwrap_or_default() {
            clusters.push(from_item::<Cluster>("cluster", item)?);
        }
        let next = page.last_evaluated_key.and_then(|k| {
            Some(FleetKey {
                tenant: text(&k, "tenant_id")?.parse().ok()?,
                cluster: text(&k, "cluster_id")?.parse().ok()?,
            })
        });
        Ok((clusters, next))
    }

    /// One page of operations of every tenant: a Scan reading at most `limit` items, resumed after `after`
    /// (the filters apply to the items read).
    pub async fn scan_operations(
        &self,
        filter: &OperationFilter,
        limit: i32,
        after: Option<&OperationId>,
    ) -> Result<(Vec<Operation>, Option<OperationId>), Error> {
        let mut scan = self.ddb.scan().table_name(&self.operations).limit(limit);
        if let Some(a) = after {
            scan = scan
                .set_exclusive_start_key(Some(HashMap::from([("operation_id".to_owned(), s(a.as_str()))])));
        }
        let mut conditions = Vec::new();
        let mut equal = |attr: &'static str, name: &'static str, value: &'static str, v: String| {
            conditions.push(format!("{name} = {value}"));
            (attr, name, value, v)
        };
        let mut wanted = Vec::new();
        if let Some(t) = &filter.tenant {
            wanted.push(equal("tenant_id", "#t", ":t", t.to_string()));
        }
        if let Some(c) = &filter.cluster {
            wanted.push(equal("cluster_id", "#c", ":c", c.to_string()));
        }
        if let Some(k) = filter.kind {
            wanted.push(equal("kind", "#k", ":k", k.as_str().to_owned()));
        }
        if let Some(st) = filter.status {
            wanted.push(equal("status", "#s", ":s", st.as_str().to_owned()));
        }
        for (attr, name, value, v) in wanted {
            scan = scan
                .expression_attribute_names(name, attr)
                .expression_attribute_values(value, s(&v));
        }
        if !conditions.is_empty() {
            scan = scan.filter_expression(conditions.join(" AND "));
        }
        let page = scan.send().await.map_err(|e| Error::aws("Scan", e))?;
        let mut operations = Vec::new();
        for item in page.items.unwrap_or_default() {
            operations.push(from_item::<Operation>("operation", item)?);
        }
        let next = page
            .last_evaluated_key
            .and_then(|k| text(&k, "operation_id")?.parse().ok());
        Ok((operations, next))
    }
}

/// What an operations page across tenants is filtered by (after the read, as [`FleetFilter`]).
#[derive(Debug, Clone, Default)]
pub struct OperationFilter {
    pub tenant: Option<TenantId>,
    pub cluster: Option<ClusterId>,
    pub kind: Option<OperationKind>,
    pub status: Option<OperationStatus>,
}

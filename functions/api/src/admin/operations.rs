//! `GET /v1/admin/operations`: the operations of every tenant, read-only, filtered by tenant, cluster, kind
//! and status — what the platform team looks at when a tenant says "my cluster is stuck". One Scan page of
//! the operations table per request, reading at most `limit` items (the filters apply to the items read, so
//! a page may be short or even empty and still have a next); never the whole table.

use serde::{Deserialize, Serialize};
use strato_aws::store::OperationFilter;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{Operation, OperationKind, OperationStatus};
use utoipa::ToSchema;

use crate::edge::Reply;
use crate::requests::{page_after, query_param};
use crate::{context::Ctx, error::ApiError, schema};

/// `GET /v1/admin/operations` query parameters, read as text and checked (422 naming each).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct OperationsQuery {
    pub tenant: Option<String>,
    pub cluster: Option<String>,
    pub kind: Option<String>,
    pub status: Option<String>,
    pub limit: Option<String>,
    pub next: Option<String>,
}

/// An operation as the platform operator lists it: whose, what, where it is and why it failed or waits —
/// not its spec, variables, plan or outputs, which are the tenant's.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminOperation)]
pub(crate) struct FleetOperationView {
    pub id: String,
    pub tenant: String,
    pub cluster_id: String,
    #[schema(value_type = schema::OperationKind)]
    pub kind: OperationKind,
    #[schema(value_type = schema::OperationStatus)]
    pub status: OperationStatus,
    pub attempt: u32,
    /// The step it is at (or ended at).
    pub current_step: Option<String>,
    #[schema(value_type = Option<schema::UserErrorSchema>)]
    pub error: Option<strato_domain::UserError>,
    /// Why a queued operation is parked (the cluster busy, the tenant at its concurrency limit).
    pub wait_reason: Option<String>,
    /// The JWT subject that asked for it (or `strato:scheduler`).
    pub requested_by: Option<String>,
    #[schema(value_type = schema::Timestamp)]
    pub created_at: String,
    #[schema(value_type = schema::Timestamp)]
    pub updated_at: String,
    #[schema(value_type = Option<schema::Timestamp>)]
    pub ended_at: Option<String>,
}

/// A page of operations across tenants.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminOperationPage)]
pub(crate) struct FleetOperationPageView {
    pub operations: Vec<FleetOperationView>,
    /// The next page's token (`?next=`), or null when everything was read.
    pub next: Option<String>,
}

fn view(op: &Operation) -> FleetOperationView {
    FleetOperationView {
        id: op.operation_id.to_string(),
        tenant: op.tenant_id.to_string(),
        cluster_id: op.cluster_id.to_string(),
        kind: op.kind,
        status: op.status,
        attempt: op.attempt,
        current_step: op.steps.last().map(|s| s.name.clone()),
        error: op.error.clone(),
        wait_reason: op.wait_reason.clone(),
        requested_by: op.requested_by.clone(),
        created_at: strato_domain::ts::format(op.created_at),
        updated_at: strato_domain::ts::format(op.updated_at),
        ended_at: op.ended_at.map(strato_domain::ts::format),
    }
}

/// A wire name (`drift-check`, `awaiting_approval`) as the enum, by its serde name.
fn named<T: serde::de::DeserializeOwned>(v: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(v.to_ascii_lowercase())).ok()
}

/// What a request asks for, or every problem with it.
fn parse(q: &OperationsQuery) -> Result<(OperationFilter, u32, Option<OperationId>), ApiError> {
    let mut errors = Vec::new();
    let e = &mut errors;
    let tenant = query_param(
        e,
        "tenant",
        q.tenant.as_deref(),
        |t| t.parse::<TenantId>().ok(),
        "is not a tenant id",
        "letters, digits, - and _",
    );
    let cluster = query_param(
        e,
        "cluster",
        q.cluster.as_deref(),
        |c| c.parse::<ClusterId>().ok(),
        "is not a cluster id",
        "a cluster's id: cl- and 32 hex digits",
    );
    let kind = query_param(
        e,
        "kind",
        q.kind.as_deref(),
        named::<OperationKind>,
        "is not an operation kind",
        "create, update, delete, plan, drift-check, restore-state or estimate",
    );
    let status = query_param(
        e,
        "status",
        q.status.as_deref(),
        named::<OperationStatus>,
        "is not an operation status",
        "queued, dispatched, running, awaiting_approval, succeeded, failed or cancelled",
    );
    let limit = crate::requests::page_limit(q.limit.as_deref(), 50, 100, e);
    let after = page_after(q.next.as_deref(), |n| n.parse::<OperationId>().ok(), e);
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    Ok((
        OperationFilter {
            tenant,
            cluster,
            kind,
            status,
        },
        limit,
        after,
    ))
}

pub(crate) async fn list(ctx: &Ctx, q: &OperationsQuery) -> Result<Reply<FleetOperationPageView>, ApiError> {
    let (filter, limit, after) = parse(q)?;
    let (operations, next) = ctx
        .store
        .scan_operations(&filter, limit as i32, after.as_ref())
        .await?;
    Ok(Reply::ok(FleetOperationPageView {
        operations: operations.iter().map(view).collect(),
        next: next.map(|id| id.to_string()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_are_named_and_good_ones_parse_by_their_wire_names() {
        let q = OperationsQuery {
            tenant: Some("a b".into()),
            cluster: Some("nope".into()),
            kind: Some("explode".into()),
            status: Some("sleeping".into()),
            limit: Some("101".into()),
            next: Some("zz".into()),
        };
        let Err(ApiError::Invalid { errors, .. }) = parse(&q) else {
            panic!("422 expected")
        };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["tenant", "cluster", "kind", "status", "limit", "next"]);
        let q = OperationsQuery {
            tenant: Some("acme".into()),
            kind: Some("Drift-Check".into()),
            status: Some("awaiting_approval".into()),
            next: Some("op-0190f1c23b4a7cde8f0123456789abcd".into()),
            ..Default::default()
        };
        let (f, limit, after) = parse(&q).unwrap();
        assert_eq!(f.tenant.map(|t| t.to_string()).as_deref(), Some("acme"));
        assert_eq!(
            (f.kind, f.status),
            (
                Some(OperationKind::DriftCheck),
                Some(OperationStatus::AwaitingApproval)
            )
        );
        assert_eq!(limit, 50);
        assert!(after.is_some());
    }
}

//! The platform operator's routes (`/v1/admin/…`, [`Access::Platform`](crate::route::Access::Platform)):
//! tenants — registered, listed, read, their quotas, monthly budget, approval and lifetime defaults set,
//! suspended and resumed — and the clusters of every tenant, read-only ([`fleet`]). Every setting is the
//! tenant item's own attribute, the one the rest of Strato reads (no copy).
//!
//! Every change an operator makes is recorded in the audit log of the tenant it acts on, with the
//! operator's `sub` as the actor and an `admin.` action: the tenant's administrators see who changed their
//! settings (`GET /v1/audit`), and the operator reads the same entries with
//! `GET /v1/admin/tenants/{tenant}/audit`.

pub(crate) mod fleet;
pub(crate) mod handlers;
mod input;
pub(crate) mod operations;
pub(crate) mod templates;

use serde::Serialize;
use strato_aws::store::TenantRecord;
use strato_domain::ids::TenantId;
use utoipa::ToSchema;

use crate::audit::{AuditPageView, AuditParams};
use crate::edge::Reply;
use crate::operator::path_tenant;
use crate::{context::Ctx, error::ApiError};
pub(crate) use input::{TenantBody, TenantsQuery};

/// A tenant's settings and usage, as the platform operator sees them.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminTenant)]
pub(crate) struct TenantView {
    pub id: String,
    /// Clusters it may have (not counting deleted ones).
    pub max_clusters: u32,
    /// Operations it may have open (queued or running).
    pub max_open_operations: u32,
    /// Operations of it that may run at once.
    pub max_concurrent_operations: u32,
    /// USD per month; an apply whose estimate exceeds it stops before apply. Null: none.
    pub monthly_budget: Option<f64>,
    /// The default approval mode of its clusters (`auto` or `required`); null: auto.
    #[schema(value_type = Option<String>, example = "required")]
    pub approval: Option<strato_domain::approval::ApprovalMode>,
    /// The longest its clusters may live, in hours; null: the platform default.
    pub max_ttl_hours: Option<u64>,
    /// Whether its changes are refused (reads still work).
    pub suspended: bool,
    /// Why it is suspended; null when it is not.
    pub suspended_reason: Option<String>,
    /// When an operator registered it; null for a tenant only ever used by its tokens.
    pub created_at: Option<String>,
    pub cluster_count: u64,
    pub open_operations: u64,
}

/// A page of tenants, by id.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminTenantPage)]
pub(crate) struct TenantPageView {
    pub tenants: Vec<TenantView>,
    /// The next page's token (`?next=`), or null on the last page.
    pub next: Option<String>,
}

fn view(r: TenantRecord) -> TenantView {
    TenantView {
        id: r.id.to_string(),
        max_clusters: r.quotas.max_clusters,
        max_open_operations: r.quotas.max_open_operations,
        max_concurrent_operations: r.quotas.max_concurrent_operations,
        monthly_budget: r.monthly_budget,
        approval: r.rules.approval,
        max_ttl_hours: r.rules.max_ttl_hours,
        suspended: r.suspended.is_some(),
        suspended_reason: r.suspended,
        created_at: r.created_at,
        cluster_count: r.cluster_count,
        open_operations: r.open_operations,
    }
}

async fn read(ctx: &Ctx, tenant: &TenantId) -> Result<TenantView, ApiError> {
    ctx.store.tenant_record(tenant).await?.map(view).ok_or_else(|| {
        ApiError::NotFound(format!(
            "no tenant '{tenant}'; POST /v1/admin/tenants registers one"
        ))
    })
}

/// Applies the settings a body names (each a write of the tenant item the rest of Strato reads), then reads
/// the tenant back.
async fn apply(ctx: &Ctx, tenant: &TenantId, change: &input::Change) -> Result<TenantView, ApiError> {
    if change.quotas_changed() {
        let now = ctx.store.quotas(tenant).await?;
        ctx.store.set_quotas(tenant, &change.quotas(now)).await?;
    }
    if let Some(budget) = change.monthly_budget {
        ctx.store.set_monthly_budget(tenant, budget).await?;
    }
    if change.rules_changed() {
        let now = ctx.store.tenant_rules(tenant).await?;
        ctx.store.set_tenant_rules(tenant, &change.rules(now)).await?;
    }
    if let Some(suspension) = &change.suspended {
        ctx.store
            .set_tenant_suspended(tenant, suspension.as_deref())
            .await?;
        // This process knows at once; others within `suspension::MAX_AGE`.
        ctx.suspensions
            .put(tenant, suspension.clone(), std::time::Instant::now());
    }
    read(ctx, tenant).await
}

/// `POST /v1/admin/tenants`: registers a tenant (idempotent by id: 201 the first time, 200 after, the
/// settings of the body applied either way).
pub(crate) async fn create(ctx: &Ctx, body: TenantBody) -> Result<Reply<TenantView>, ApiError> {
    let (id, change) = input::create(body)?;
    let created = ctx
        .store
        .register_tenant(&id, &strato_domain::ts::format(strato_domain::ts::now()))
        .await?;
    let v = apply(ctx, &id, &change).await?;
    let mut reply = Reply::ok(v);
    if created {
        reply.status = axum::http::StatusCode::CREATED;
        reply.location = Some(format!("/v1/admin/tenants/{id}"));
    }
    Ok(reply)
}

/// `GET /v1/admin/tenants`: one bounded Scan page of the tenants table (one small item per tenant).
pub(crate) async fn list(ctx: &Ctx, q: &TenantsQuery) -> Result<Reply<TenantPageView>, ApiError> {
    let (limit, after) = input::page(q)?;
    let page = ctx.store.list_tenants(limit as i32, after.as_ref()).await?;
    Ok(Reply::ok(TenantPageView {
        tenants: page.tenants.into_iter().map(view).collect(),
        next: page.next.map(|t| t.to_string()),
    }))
}

/// `GET /v1/admin/tenants/{tenant}`: one read of the tenant item.
pub(crate) async fn get(ctx: &Ctx, tenant: &str) -> Result<Reply<TenantView>, ApiError> {
    Ok(Reply::ok(read(ctx, &path_tenant(tenant)?).await?))
}

/// `PATCH /v1/admin/tenants/{tenant}`: changes the settings the body names, the others untouched.
pub(crate) async fn update(ctx: &Ctx, tenant: &str, body: TenantBody) -> Result<Reply<TenantView>, ApiError> {
    let id = path_tenant(tenant)?;
    let change = input::update(body)?;
    // Only a tenant that exists is changed: a typo must not create one.
    read(ctx, &id).await?;
    Ok(Reply::ok(apply(ctx, &id, &change).await?))
}

/// `GET /v1/admin/tenants/{tenant}/audit`: the tenant's audit log (the operator's own actions on it
/// included), as its administrators read it.
pub(crate) async fn audit(
    ctx: &Ctx,
    tenant: &str,
    p: &AuditParams,
) -> Result<Reply<AuditPageView>, ApiError> {
    let id = path_tenant(tenant)?;
    crate::audit::list_of(ctx, &id, p).await
}

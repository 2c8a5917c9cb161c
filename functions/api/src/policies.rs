//! Tenant policies (`/v1/policies`, admin scope): Rego sources in `package strato.request` (checked on
//! create, update and delete) or `package strato.plan` (checked by the runner on the plan, before apply),
//! compile-checked on PUT. The platform's own policies ship with the catalog and are listed beside them; the
//! platform operator may set more for one tenant (`/v1/admin/tenants/{tenant}/policies`), which that tenant
//! reads and is held to but cannot change.

use std::collections::BTreeMap;

use serde_json::Value;
use strato_domain::ids::TenantId;
use strato_domain::ports::{PolicyOwner, StoredPolicies, TenantRules};
use strato_policy::{MAX_SOURCE_BYTES, MAX_TENANT_POLICIES, Policy, PolicyError, PolicySet, Stage};

use crate::requests::{Field, unknown};
use crate::views::Deleted;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

/// The most Rego a tenant may store in all: the policies live on the tenant item (400 KB at most).
pub(crate) const MAX_TOTAL_BYTES: usize = 256 * 1024;
/// The most Rego the operator may set for one tenant, beside the tenant's own on the same item.
pub(crate) const MAX_OPERATOR_BYTES: usize = 64 * 1024;

/// One policy.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = Policy)]
pub(crate) struct PolicyView {
    /// The name in `/v1/policies/{name}`; messages call it `tenant/<name>` (`platform/<name>` for the
    /// platform's, `operator/<name>` for those the platform operator set for your tenant).
    pub name: String,
    /// `platform` (shipped with the catalog, read-only), `operator` (set for your tenant by the platform
    /// operator, read-only) or `tenant` (yours).
    #[schema(pattern = "^(platform|operator|tenant)$")]
    pub owner: &'static str,
    /// `request` (package strato.request) or `plan` (package strato.plan).
    #[schema(pattern = "^(request|plan)$")]
    pub stage: &'static str,
    /// The Rego source.
    pub source: String,
}

/// Every policy that applies to your requests and plans, and the version of that set.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = PolicyList)]
pub(crate) struct PolicyListView {
    /// `sha256:` and 16 hex digits; recorded on each operation as `policy_version`.
    pub version: String,
    pub policies: Vec<PolicyView>,
}

/// `PUT /v1/policies/{name}`.
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = PolicyRequest)]
pub(crate) struct PolicyBody {
    /// Rego v1 in `package strato.request` or `package strato.plan`, defining `deny contains msg if {…}`
    /// and/or `warn contains msg if {…}`.
    #[serde(default)]
    #[schema(value_type = String, required = true, max_length = 32768)]
    pub source: Field<String>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}

fn stage_name(s: Stage) -> &'static str {
    match s {
        Stage::Request => "request",
        Stage::Plan => "plan",
    }
}

fn owner_name(owner: PolicyOwner) -> &'static str {
    match owner {
        PolicyOwner::Tenant => "tenant",
        PolicyOwner::Operator => "operator",
    }
}

fn view(owner: &'static str, name: &str, source: String) -> PolicyView {
    let stage = strato_policy::check(&Policy::tenant(name, source.clone()))
        .map(stage_name)
        .unwrap_or("request");
    PolicyView {
        name: name.to_owned(),
        owner,
        stage,
        source,
    }
}

/// What a create, update or delete is held to: the platform's policies, the operator's for the tenant and
/// the tenant's own, compiled, and the tenant's rules (lifetime maximum, approval default) — read together,
/// in one read of the tenant item.
pub(crate) struct Governing {
    pub set: std::sync::Arc<PolicySet>,
    pub rules: TenantRules,
}

/// The caller's tenant item as this request read it (consistently) for its suspension check (the router's
/// `authorize`): [`load`] uses it instead of reading the item again.
#[derive(Clone, Debug)]
pub(crate) struct TenantRead(pub std::sync::Arc<strato_aws::store::TenantGovernance>);

/// The [`Governing`] of the caller's tenant: from the tenant item this request already read (`read`, the
/// suspension check's), or from a read of its own. A stored policy that no longer compiles (it was checked
/// when it was stored: a Rego engine upgrade) is its owner's to fix.
pub(crate) async fn load(
    ctx: &Ctx,
    caller: &Caller,
    read: Option<&TenantRead>,
) -> Result<Governing, ApiError> {
    let own;
    let item = match read {
        Some(TenantRead(item)) => item.as_ref(),
        None => {
            own = ctx.store.tenant_governance(&caller.tenant).await?;
            &own
        }
    };
    let (stored, rules) = (&item.policies, item.rules);
    let set =
        PolicySet::cached_with_platform(&Policy::stored(&stored.operator, &stored.tenant)).map_err(|e| {
            ApiError::invalid(vec![ApiError::field(
                "policy",
                e.to_string(),
                "stored policies that compile: PUT /v1/policies/{name} a corrected one, or DELETE it",
            )])
        })?;
    Ok(Governing { set, rules })
}

fn bad_name(name: &str) -> Result<(), ApiError> {
    strato_policy::check_name(name).map_err(|_| ApiError::NotFound(format!("no policy named '{name}'")))
}

/// Every policy that applies to `tenant`, with its owner, and the version of that set.
async fn applying(ctx: &Ctx, tenant: &TenantId) -> Result<PolicyListView, ApiError> {
    let stored: StoredPolicies = ctx.store.stored_policies(tenant).await?;
    let mut all = strato_policy::platform();
    all.extend(Policy::stored(&stored.operator, &stored.tenant));
    let version = PolicySet::compile(&all)
        .map(|s| s.version().to_owned())
        .unwrap_or_default();
    let policies = all
        .into_iter()
        .map(|p| match p.name.split_once('/') {
            Some(("platform", n)) => view("platform", n, p.source),
            Some(("operator", n)) => view("operator", n, p.source),
            Some((_, n)) => view("tenant", n, p.source),
            None => view("tenant", &p.name, p.source),
        })
        .collect();
    Ok(PolicyListView { version, policies })
}

pub(crate) async fn list(ctx: &Ctx, caller: &Caller) -> Result<Reply<PolicyListView>, ApiError> {
    Ok(Reply::ok(applying(ctx, &caller.tenant).await?))
}

/// One of the caller's stored policies: its own, else one the operator set for it.
pub(crate) async fn get(ctx: &Ctx, caller: &Caller, name: &str) -> Result<Reply<PolicyView>, ApiError> {
    bad_name(name)?;
    let mut stored = ctx.store.stored_policies(&caller.tenant).await?;
    match (stored.tenant.remove(name), stored.operator.remove(name)) {
        (Some(source), _) => Ok(Reply::ok(view("tenant", name, source))),
        (None, Some(source)) => Ok(Reply::ok(view("operator", name, source))),
        (None, None) => Err(ApiError::NotFound(format!("you have no policy named '{name}'"))),
    }
}

/// The source a PUT stores, checked against `existing` (the same owner's policies on the tenant) and the
/// owner's bounds; every problem named.
fn checked(
    existing: &BTreeMap<String, String>,
    name: &str,
    body: PolicyBody,
    max_total: usize,
) -> Result<String, ApiError> {
    let mut errors = Vec::new();
    unknown(
        &body.other,
        "",
        "is not a field of this request",
        "source",
        &mut errors,
    );
    let rego = "Rego v1 in package strato.request or strato.plan";
    let source = body.source.required("source", rego, &mut errors);
    if let Err(e) = strato_policy::check_name(name) {
        errors.push(ApiError::field(
            "name",
            e.to_string(),
            "1-63 of a-z, 0-9 and '-', starting with a letter",
        ));
    }
    if let Some(src) = &source {
        let others: Vec<&String> = existing
            .iter()
            .filter(|(n, _)| *n != name)
            .map(|(_, s)| s)
            .collect();
        let total = others.iter().map(|s| s.len()).sum::<usize>() + src.len();
        if others.len() >= MAX_TENANT_POLICIES {
            errors.push(ApiError::field(
                "name",
                format!("there are {MAX_TENANT_POLICIES} policies, the most allowed"),
                "the name of an existing policy (to replace it), or delete one first",
            ));
        } else if src.len() > MAX_SOURCE_BYTES {
            errors.push(ApiError::field(
                "source",
                format!("is {} bytes", src.len()),
                format!("at most {MAX_SOURCE_BYTES} bytes"),
            ));
        } else if total > max_total {
            errors.push(ApiError::field(
                "source",
                format!("would make the policies {total} bytes in all"),
                format!("at most {max_total} bytes of policies in all"),
            ));
        } else if errors.is_empty() {
            match strato_policy::check(&Policy::tenant(name, src.clone())) {
                Ok(_) => {}
                Err(
                    e @ (PolicyError::Compile { .. }
                    | PolicyError::Package { .. }
                    | PolicyError::TooLarge { .. }),
                ) => errors.push(ApiError::field("source", e.to_string(), rego)),
                Err(e @ PolicyError::Name(_)) => errors.push(ApiError::field("name", e.to_string(), rego)),
            }
        }
    }
    match source {
        Some(src) if errors.is_empty() => Ok(src),
        _ => Err(ApiError::invalid(errors)),
    }
}

/// Stores `owner`'s policy `name` on `tenant`, checked.
async fn put_as(
    ctx: &Ctx,
    tenant: &TenantId,
    owner: PolicyOwner,
    name: &str,
    body: PolicyBody,
) -> Result<Reply<PolicyView>, ApiError> {
    let existing = ctx.store.policies_of(tenant, owner).await?;
    let max_total = match owner {
        PolicyOwner::Tenant => MAX_TOTAL_BYTES,
        PolicyOwner::Operator => MAX_OPERATOR_BYTES,
    };
    let src = checked(&existing, name, body, max_total)?;
    ctx.store.put_policy(tenant, owner, name, &src).await?;
    Ok(Reply::ok(view(owner_name(owner), name, src)))
}

pub(crate) async fn put(
    ctx: &Ctx,
    caller: &Caller,
    name: &str,
    body: PolicyBody,
) -> Result<Reply<PolicyView>, ApiError> {
    put_as(ctx, &caller.tenant, PolicyOwner::Tenant, name, body).await
}

pub(crate) async fn delete(ctx: &Ctx, caller: &Caller, name: &str) -> Result<Reply<Deleted>, ApiError> {
    bad_name(name)?;
    if ctx
        .store
        .delete_policy(&caller.tenant, PolicyOwner::Tenant, name)
        .await?
    {
        return Ok(Reply::ok(Deleted { deleted: true }));
    }
    if ctx
        .store
        .policies_of(&caller.tenant, PolicyOwner::Operator)
        .await?
        .contains_key(name)
    {
        return Err(ApiError::Conflict(format!(
            "policy '{name}' was set for your tenant by the platform operator: only they can change or remove it"
        )));
    }
    Err(ApiError::NotFound(format!("you have no policy named '{name}'")))
}

/// `GET /v1/admin/tenants/{tenant}/policies`: what the tenant is held to, with each policy's owner.
pub(crate) async fn admin_list(ctx: &Ctx, tenant: &str) -> Result<Reply<PolicyListView>, ApiError> {
    let tenant = registered_tenant(ctx, tenant).await?;
    Ok(Reply::ok(applying(ctx, &tenant).await?))
}

/// `PUT /v1/admin/tenants/{tenant}/policies/{name}`: the operator's policy for the tenant.
pub(crate) async fn admin_put(
    ctx: &Ctx,
    tenant: &str,
    name: &str,
    body: PolicyBody,
) -> Result<Reply<PolicyView>, ApiError> {
    let tenant = registered_tenant(ctx, tenant).await?;
    put_as(ctx, &tenant, PolicyOwner::Operator, name, body).await
}

/// `DELETE /v1/admin/tenants/{tenant}/policies/{name}`: removes the operator's policy (never the tenant's).
pub(crate) async fn admin_delete(ctx: &Ctx, tenant: &str, name: &str) -> Result<Reply<Deleted>, ApiError> {
    let tenant = registered_tenant(ctx, tenant).await?;
    bad_name(name)?;
    if !ctx
        .store
        .delete_policy(&tenant, PolicyOwner::Operator, name)
        .await?
    {
        return Err(ApiError::NotFound(format!(
            "no policy named '{name}' was set for tenant {tenant} by the operator"
        )));
    }
    Ok(Reply::ok(Deleted { deleted: true }))
}

/// The tenant an operator's path names, when it is registered (a typo must not reach a write).
async fn registered_tenant(ctx: &Ctx, raw: &str) -> Result<TenantId, ApiError> {
    let id = crate::operator::path_tenant(raw)?;
    match ctx.store.tenant_record(&id).await? {
        Some(_) => Ok(id),
        None => Err(ApiError::NotFound(format!(
            "no tenant '{id}'; POST /v1/admin/tenants registers one"
        ))),
    }
}

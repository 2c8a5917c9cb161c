//! Tenant policies (`/v1/policies`, admin scope): Rego sources in `package strato.request` (checked on
//! create, update and delete) or `package strato.plan` (checked by the runner on the plan, before apply),
//! compile-checked on PUT. The platform's own policies ship with the catalog and are listed beside them.

use std::collections::BTreeMap;

use serde_json::Value;
use strato_domain::ports::TenantRules;
use strato_policy::{MAX_SOURCE_BYTES, MAX_TENANT_POLICIES, Policy, PolicyError, PolicySet, Stage};

use crate::requests::{Field, unknown};
use crate::views::Deleted;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

/// The most Rego a tenant may store in all: the policies live on the tenant item (400 KB at most).
pub(crate) const MAX_TOTAL_BYTES: usize = 256 * 1024;

/// One policy.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = Policy)]
pub(crate) struct PolicyView {
    /// The name in `/v1/policies/{name}`; messages call it `tenant/<name>` (`platform/<name>` for the
    /// platform's).
    pub name: String,
    /// `platform` (shipped with the catalog, read-only) or `tenant` (yours).
    #[schema(pattern = "^(platform|tenant)$")]
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

/// The tenant's stored policies as [`Policy`]s (`tenant/<name>`).
async fn stored(ctx: &Ctx, caller: &Caller) -> Result<Vec<Policy>, ApiError> {
    Ok(as_policies(ctx.store.tenant_policies(&caller.tenant).await?))
}

fn as_policies(stored: BTreeMap<String, String>) -> Vec<Policy> {
    stored
        .into_iter()
        .map(|(name, source)| Policy::tenant(&name, source))
        .collect()
}

/// What a create, update or delete is held to: the platform's and the tenant's policies, compiled, and the
/// tenant's rules (lifetime maximum, approval default) — read together, in one read of the tenant item.
pub(crate) struct Governing {
    pub set: std::sync::Arc<PolicySet>,
    pub rules: TenantRules,
}

/// The [`Governing`] of the caller's tenant. A stored policy that no longer compiles (it was checked when it
/// was stored: a Rego engine upgrade) is the tenant's to fix.
pub(crate) async fn load(ctx: &Ctx, caller: &Caller) -> Result<Governing, ApiError> {
    let (stored, rules) = ctx.store.tenant_policies_and_rules(&caller.tenant).await?;
    let set = PolicySet::cached_with_platform(&as_policies(stored)).map_err(|e| {
        ApiError::invalid(vec![ApiError::field(
            "policy",
            e.to_string(),
            "stored policies that compile: PUT /v1/policies/{name} a corrected one, or DELETE it",
        )])
    })?;
    Ok(Governing { set, rules })
}

fn bad_name(name: &str) -> Result<(), ApiError> {
    strato_policy::check_name(name)
        .map_err(|_| ApiError::NotFound(format!("you have no policy named '{name}'")))
}

pub(crate) async fn list(ctx: &Ctx, caller: &Caller) -> Result<Reply<PolicyListView>, ApiError> {
    let tenant = stored(ctx, caller).await?;
    let mut all = strato_policy::platform();
    all.extend(tenant.iter().cloned());
    let version = PolicySet::compile(&all)
        .map(|s| s.version().to_owned())
        .unwrap_or_default();
    let policies = all
        .into_iter()
        .map(|p| match p.name.split_once('/') {
            Some(("platform", n)) => view("platform", n, p.source),
            Some((_, n)) => view("tenant", n, p.source),
            None => view("tenant", &p.name, p.source),
        })
        .collect();
    Ok(Reply::ok(PolicyListView { version, policies }))
}

pub(crate) async fn get(ctx: &Ctx, caller: &Caller, name: &str) -> Result<Reply<PolicyView>, ApiError> {
    bad_name(name)?;
    match ctx.store.tenant_policies(&caller.tenant).await?.remove(name) {
        Some(source) => Ok(Reply::ok(view("tenant", name, source))),
        None => Err(ApiError::NotFound(format!("you have no policy named '{name}'"))),
    }
}

pub(crate) async fn put(
    ctx: &Ctx,
    caller: &Caller,
    name: &str,
    body: PolicyBody,
) -> Result<Reply<PolicyView>, ApiError> {
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
    let existing = ctx.store.tenant_policies(&caller.tenant).await?;
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
                format!("you have {MAX_TENANT_POLICIES} policies, the most allowed"),
                "the name of an existing policy (to replace it), or delete one first",
            ));
        } else if src.len() > MAX_SOURCE_BYTES {
            errors.push(ApiError::field(
                "source",
                format!("is {} bytes", src.len()),
                format!("at most {MAX_SOURCE_BYTES} bytes"),
            ));
        } else if total > MAX_TOTAL_BYTES {
            errors.push(ApiError::field(
                "source",
                format!("would make your policies {total} bytes in all"),
                format!("at most {MAX_TOTAL_BYTES} bytes of policies in all"),
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
        Some(src) if errors.is_empty() => {
            ctx.store.put_tenant_policy(&caller.tenant, name, &src).await?;
            Ok(Reply::ok(view("tenant", name, src)))
        }
        _ => Err(ApiError::invalid(errors)),
    }
}

pub(crate) async fn delete(ctx: &Ctx, caller: &Caller, name: &str) -> Result<Reply<Deleted>, ApiError> {
    bad_name(name)?;
    if !ctx.store.delete_tenant_policy(&caller.tenant, name).await? {
        return Err(ApiError::NotFound(format!("you have no policy named '{name}'")));
    }
    Ok(Reply::ok(Deleted { deleted: true }))
}

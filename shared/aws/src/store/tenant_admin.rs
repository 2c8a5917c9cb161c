//! The platform operator's view of tenant items: the same item the quotas, budget, rules and counters live on
//! (no parallel copy), read whole, listed a page at a time, marked registered, and suspended or resumed.

use aws_sdk_dynamodb::types::AttributeValue;
use strato_domain::approval::ApprovalMode;
use strato_domain::ids::TenantId;
use strato_domain::ports::TenantRules;

use super::tenants::rules_of;
use super::{Item, Quotas, Store, conditional, fetch, n, num, s, text};
use crate::error::Error;

/// A tenant item as the operator sees it: every setting, with the platform defaults where none is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantRecord {
    pub id: TenantId,
    pub quotas: Quotas,
    pub monthly_budget: Option<f64>,
    pub rules: TenantRules,
    /// Why its writes are refused, while suspended.
    pub suspended: Option<String>,
    /// When an operator registered it (RFC 3339); `None` for a tenant only ever used by its tokens.
    pub created_at: Option<String>,
    pub cluster_count: u64,
    pub open_operations: u64,
}

/// One page of tenants and where the next starts (a tenant id), if there is one.
#[derive(Debug, Clone)]
pub struct TenantPage {
    pub tenants: Vec<TenantRecord>,
    pub next: Option<TenantId>,
}

fn record_of(item: &Item) -> Option<TenantRecord> {
    let id = text(item, "tenant_id")?.parse().ok()?;
    let d = Quotas::default();
    let get = |k: &str, dflt: u32| num(item, k).unwrap_or(dflt);
    Some(TenantRecord {
        id,
        quotas: Quotas {
            max_clusters: get("max_clusters", d.max_clusters),
            max_open_operations: get("max_open_operations", d.max_open_operations),
            max_concurrent_operations: get("max_concurrent_operations", d.max_concurrent_operations),
        },
        monthly_budget: num(item, "monthly_budget"),
        rules: rules_of(item),
        suspended: text(item, "suspended").cloned(),
        created_at: text(item, "created_at").cloned(),
        cluster_count: num(item, "cluster_count").unwrap_or(0),
        open_operations: num(item, "open_operations").unwrap_or(0),
    })
}

impl Store {
    /// The whole tenant item; `None` when nothing was ever stored for the tenant.
    pub async fn tenant_record(&self, tenant: &TenantId) -> Result<Option<TenantRecord>, Error> {
        let get = self
            .get(&self.tenants, &[("tenant_id", s(tenant.as_str()))])
            .consistent_read(true);
        Ok(fetch(get).await?.as_ref().and_then(record_of))
    }

    /// Registers the tenant (its item, `created_at` = `now`) unless it is registered already: `true` when
    /// this call registered it. An item its tokens' use already created keeps its counters and settings.
    pub async fn register_tenant(&self, tenant: &TenantId, now: &str) -> Result<bool, Error> {
        let register = self
            .update_tenant(tenant)
            .update_expression("SET created_at = :t")
            .condition_expression("attribute_not_exists(created_at)")
            .expression_attribute_values(":t", s(now))
            .send();
        Ok(conditional("UpdateItem", register).await?.is_ok())
    }

    /// One page of tenant items: a Scan of the tenants table bounded by `limit` items (the table holds one
    /// small item per tenant), resumed after `after`.
    pub async fn list_tenants(&self, limit: i32, after: Option<&TenantId>) -> Result<TenantPage, Error> {
        let mut scan = self.ddb.scan().table_name(&self.tenants).limit(limit);
        if let Some(a) = after {
            scan = scan.exclusive_start_key("tenant_id", s(a.as_str()));
        }
        let out = scan.send().await.map_err(|e| Error::aws("Scan", e))?;
        let mut tenants: Vec<TenantRecord> = out.items().iter().filter_map(record_of).collect();
        tenants.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        let next = out
            .last_evaluated_key
            .as_ref()
            .and_then(|k| k.get("tenant_id"))
            .and_then(|v| v.as_s().ok())
            .and_then(|t| t.parse().ok());
        Ok(TenantPage { tenants, next })
    }

    /// Sets (or with `None` removes, back to the platform default) the tenant's maximum cluster lifetime and
    /// default approval mode: the attributes [`Store::tenant_rules`] reads.
    pub async fn set_tenant_rules(&self, tenant: &TenantId, rules: &TenantRules) -> Result<(), Error> {
        let mut set = Vec::new();
        let mut remove = Vec::new();
        let mut q = self.update_tenant(tenant);
        match rules.max_ttl_hours {
            Some(h) => {
                set.push("max_ttl_hours = :h");
                q = q.expression_attribute_values(":h", n(h));
            }
            None => remove.push("max_ttl_hours"),
        }
        match rules.approval {
            Some(mode) => {
                set.push("approval = :a");
                let name = match mode {
                    ApprovalMode::Auto => "auto",
                    ApprovalMode::Required => "required",
                };
                q = q.expression_attribute_values(":a", s(name));
            }
            None => remove.push("approval"),
        }
        let mut expr = String::new();
        if !set.is_empty() {
            expr.push_str(&format!("SET {}", set.join(", ")));
        }
        if !remove.is_empty() {
            expr.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        q.update_expression(expr.trim())
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// Suspends the tenant for `reason`, or with `None` resumes it.
    pub async fn set_tenant_suspended(&self, tenant: &TenantId, reason: Option<&str>) -> Result<(), Error> {
        let q = self.update_tenant(tenant);
        let q = match reason {
            Some(r) => q
                .update_expression("SET suspended = :r")
                .expression_attribute_values(":r", s(r)),
            None => q.update_expression("REMOVE suspended"),
        };
        q.send().await.map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }
}

/// The operator's reason on a tenant item, when the tenant is suspended.
pub(super) fn suspension_of(item: &Item) -> Option<String> {
    item.get("suspended")
        .and_then(|v: &AttributeValue| v.as_s().ok())
        .cloned()
}

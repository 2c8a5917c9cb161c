//! Tenant policies (policy as code): map attributes (name → Rego source) on the tenant item — `policies`, the
//! tenant's own, and `platform_policies`, those the platform operator set for this tenant (the tenant reads
//! them, never changes them) — so the api's request check and the runner's plan check read them all with one
//! GetItem (the runner's task role already has `dynamodb:GetItem` on the tenants table). The api bounds their
//! count and total size well under DynamoDB's 400 KB item limit.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Item, Store, conditional, fetch, s};
use crate::error::Error;
use strato_domain::ids::TenantId;
use strato_domain::ports::{PolicyOwner, StoredPolicies, TenantRules};

/// What governs a tenant's changes, read together ([`Store::tenant_governance`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantGovernance {
    pub policies: StoredPolicies,
    pub rules: TenantRules,
    /// The operator's reason, when the tenant is suspended.
    pub suspended: Option<String>,
}

/// The tenant item's attribute holding `owner`'s policies.
fn attribute(owner: PolicyOwner) -> &'static str {
    match owner {
        PolicyOwner::Tenant => "policies",
        PolicyOwner::Operator => "platform_policies",
    }
}

impl Store {
    /// The policies `owner` set on the tenant, by name (none when there are none).
    pub async fn policies_of(
        &self,
        tenant: &TenantId,
        owner: PolicyOwner,
    ) -> Result<BTreeMap<String, String>, Error> {
        let get = self
            .get(&self.tenants, &[("tenant_id", s(tenant.as_str()))])
            .projection_expression(attribute(owner))
            .consistent_read(true);
        Ok(fetch(get)
            .await?
            .map(|i| map_of(&i, attribute(owner)))
            .unwrap_or_default())
    }

    /// Every policy stored for the tenant (its own and the operator's), in one read.
    pub async fn stored_policies(&self, tenant: &TenantId) -> Result<StoredPolicies, Error> {
        let get = self
            .get(&self.tenants, &[("tenant_id", s(tenant.as_str()))])
            .projection_expression("policies, platform_policies")
            .consistent_read(true);
        Ok(fetch(get).await?.map(|i| stored_of(&i)).unwrap_or_default())
    }

    /// What governs the tenant's changes, in one (consistent) read of the tenant item: its policies, its
    /// [rules](Self::tenant_rules) (lifetime maximum, approval default) and whether the operator suspended it.
    /// The api's change routes read it once per request at most: the suspension check reads it whole when its
    /// memory has no answer, and the request's policy check then uses that read.
    pub async fn tenant_governance(&self, tenant: &TenantId) -> Result<TenantGovernance, Error> {
        let get = self
            .get(&self.tenants, &[("tenant_id", s(tenant.as_str()))])
            .projection_expression("policies, platform_policies, max_ttl_hours, approval, suspended")
            .consistent_read(true);
        Ok(match fetch(get).await? {
            Some(item) => TenantGovernance {
                policies: stored_of(&item),
                rules: super::tenants::rules_of(&item),
                suspended: super::tenant_admin::suspension_of(&item),
            },
            None => TenantGovernance::default(),
        })
    }

    /// Creates or replaces one policy. Two writes: the map must exist before a member can be set in it (one
    /// expression cannot do both: overlapping paths); each write is idempotent.
    pub async fn put_policy(
        &self,
        tenant: &TenantId,
        owner: PolicyOwner,
        name: &str,
        source: &str,
    ) -> Result<(), Error> {
        let attr = attribute(owner);
        let update = || {
            self.ddb
                .update_item()
                .table_name(&self.tenants)
                .key("tenant_id", s(tenant.as_str()))
        };
        update()
            .update_expression(format!("SET {attr} = if_not_exists({attr}, :empty)"))
            .expression_attribute_values(":empty", AttributeValue::M(Default::default()))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        update()
            .update_expression(format!("SET {attr}.#n = :src"))
            .expression_attribute_names("#n", name)
            .expression_attribute_values(":src", s(source))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// Removes one policy; whether it existed.
    pub async fn delete_policy(
        &self,
        tenant: &TenantId,
        owner: PolicyOwner,
        name: &str,
    ) -> Result<bool, Error> {
        let attr = attribute(owner);
        let remove = self
            .ddb
            .update_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .update_expression(format!("REMOVE {attr}.#n"))
            .condition_expression(format!("attribute_exists({attr}.#n)"))
            .expression_attribute_names("#n", name)
            .send();
        Ok(conditional("UpdateItem", remove).await?.is_ok())
    }
}

/// Both policy maps of a tenant item.
fn stored_of(item: &Item) -> StoredPolicies {
    StoredPolicies {
        tenant: map_of(item, attribute(PolicyOwner::Tenant)),
        operator: map_of(item, attribute(PolicyOwner::Operator)),
    }
}

/// A policy map attribute of a tenant item, name → source (none when absent).
fn map_of(item: &Item, attr: &str) -> BTreeMap<String, String> {
    match item.get(attr) {
        Some(AttributeValue::M(m)) => m
            .iter()
            .filter_map(|(k, v)| v.as_s().ok().map(|src| (k.clone(), src.clone())))
            .collect(),
        _ => BTreeMap::new(),
    }
}

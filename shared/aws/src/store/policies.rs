//! Tenant policies (policy as code): a map attribute `policies` (name → Rego source) on the tenant item, so
//! the api's request check and the runner's plan check read them all with one GetItem (the runner's task role
//! already has `dynamodb:GetItem` on the tenants table). The api bounds their count and total size well under
//! DynamoDB's 400 KB item limit.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Item, Store, conditional, fetch, s};
use crate::error::Error;
use strato_domain::ids::TenantId;
use strato_domain::ports::TenantRules;

impl Store {
    /// The tenant's policies by name (none when it has none).
    pub async fn tenant_policies(&self, tenant: &TenantId) -> Result<BTreeMap<String, String>, Error> {
        let get = self
            .get(&self.tenants, &[("tenant_id", s(tenant.as_str()))])
            .projection_expression("policies")
            .consistent_read(true);
        Ok(fetch(get).await?.map(|i| policies_of(&i)).unwrap_or_default())
    }

    /// The tenant's policies and its [rules](Self::tenant_rules) in one (consistent) read of the tenant item:
    /// everything a create, update or delete is held to.
    pub async fn tenant_policies_and_rules(
        &self,
        tenant: &TenantId,
    ) -> Result<(BTreeMap<String, String>, TenantRules), Error> {
        let get = self
            .get(&self.tenants, &[("tenant_id", s(tenant.as_str()))])
            .projection_expression("policies, max_ttl_hours, approval")
            .consistent_read(true);
        Ok(match fetch(get).await? {
            Some(item) => (policies_of(&item), super::tenants::rules_of(&item)),
            None => Default::default(),
        })
    }

    /// Creates or replaces one policy. Two writes: the map must exist before a member can be set in it (one
    /// expression cannot do both: overlapping paths); each write is idempotent.
    pub async fn put_tenant_policy(&self, tenant: &TenantId, name: &str, source: &str) -> Result<(), Error> {
        let update = || {
            self.ddb
                .update_item()
                .table_name(&self.tenants)
                .key("tenant_id", s(tenant.as_str()))
        };
        update()
            .update_expression("SET policies = if_not_exists(policies, :empty)")
            .expression_attribute_values(":empty", AttributeValue::M(Default::default()))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        update()
            .update_expression("SET policies.#n = :src")
            .expression_attribute_names("#n", name)
            .expression_attribute_values(":src", s(source))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// Removes one policy; whether it existed.
    pub async fn delete_tenant_policy(&self, tenant: &TenantId, name: &str) -> Result<bool, Error> {
        let remove = self
            .ddb
            .update_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .update_expression("REMOVE policies.#n")
            .condition_expression("attribute_exists(policies.#n)")
            .expression_attribute_names("#n", name)
            .send();
        Ok(conditional("UpdateItem", remove).await?.is_ok())
    }
}

/// The `policies` map on a tenant item, name → source (none when absent).
fn policies_of(item: &Item) -> BTreeMap<String, String> {
    match item.get("policies") {
        Some(AttributeValue::M(m)) => m
            .iter()
            .filter_map(|(k, v)| v.as_s().ok().map(|src| (k.clone(), src.clone())))
            .collect(),
        _ => BTreeMap::new(),
    }
}

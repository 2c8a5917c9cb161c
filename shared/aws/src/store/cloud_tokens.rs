//! Tenants' cloud API tokens (DigitalOcean, Linode): a map attribute `cloud_tokens` (cloud → JSON of
//! [`CloudToken`]: the sealed token, when and by whom it was set) on the tenant item, read with the tenant's
//! other settings. The value is sealed before it reaches the store.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use strato_domain::identity::cloud_tokens::CloudToken;
use strato_domain::ids::TenantId;

use super::{Store, conditional, fetch, s};
use crate::error::Error;

fn corrupt(tenant: &TenantId, reason: String) -> Error {
    Error::Domain(strato_domain::Error::Corrupt {
        what: format!("tenant {tenant}'s cloud tokens"),
        reason,
    })
}

impl Store {
    /// The tenant's cloud tokens by cloud (`digitalocean`, `linode`).
    pub async fn cloud_tokens(&self, tenant: &TenantId) -> Result<BTreeMap<String, CloudToken>, Error> {
        let get = self
            .get(&self.tenants, &[("tenant_id", s(tenant.as_str()))])
            .projection_expression("cloud_tokens")
            .consistent_read(true);
        let Some(item) = fetch(get).await? else {
            return Ok(BTreeMap::new());
        };
        let Some(AttributeValue::M(m)) = item.get("cloud_tokens") else {
            return Ok(BTreeMap::new());
        };
        m.iter()
            .map(|(k, v)| {
                let json = v
                    .as_s()
                    .map_err(|_| corrupt(tenant, format!("{k} is not a string")))?;
                let t = serde_json::from_str(json).map_err(|e| corrupt(tenant, e.to_string()))?;
                Ok((k.clone(), t))
            })
            .collect()
    }

    /// Sets (or replaces: rotation) the tenant's token for `cloud`. Two idempotent writes, as for policies:
    /// the map must exist before a member is set in it.
    pub async fn put_cloud_token(
        &self,
        tenant: &TenantId,
        cloud: &str,
        token: &CloudToken,
    ) -> Result<(), Error> {
        let json = serde_json::to_string(token).map_err(|e| corrupt(tenant, e.to_string()))?;
        let update = || {
            self.ddb
                .update_item()
                .table_name(&self.tenants)
                .key("tenant_id", s(tenant.as_str()))
        };
        update()
            .update_expression("SET cloud_tokens = if_not_exists(cloud_tokens, :empty)")
            .expression_attribute_values(":empty", AttributeValue::M(Default::default()))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        update()
            .update_expression("SET cloud_tokens.#c = :t")
            .expression_attribute_names("#c", cloud)
            .expression_attribute_values(":t", s(&json))
            .send()
            .await
            .map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// Removes the tenant's token for `cloud`; whether there was one.
    pub async fn delete_cloud_token(&self, tenant: &TenantId, cloud: &str) -> Result<bool, Error> {
        let remove = self
            .ddb
            .update_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .update_expression("REMOVE cloud_tokens.#c")
            .condition_expression("attribute_exists(cloud_tokens.#c)")
            .expression_attribute_names("#c", cloud)
            .send();
        Ok(conditional("UpdateItem", remove).await?.is_ok())
    }
}

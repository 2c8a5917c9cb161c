//! Tenant items: quotas, budget, webhook, and the cluster and open-operation counters that quotas bound.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};

use super::write::tx_update;
use super::{Item, Store, fetch, n, num, s, text};
use crate::error::Error;
use crate::store::CreateRejected;
use strato_domain::ids::TenantId;
use strato_domain::ports::TenantRules;
use strato_domain::sealed::Envelope;
use strato_domain::webhook::Webhook;

/// Per-tenant limits. Stored on the tenant item; absent fields fall back to the platform defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quotas {
    pub max_clusters: u32,
    pub max_open_operations: u32,
    pub max_concurrent_operations: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        Self {
            max_clusters: 20,
            max_open_operations: 50,
            max_concurrent_operations: 5,
        }
    }
}

/// What bounds the increments of [`Store::tenant_counters`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum QuotaBound<'a> {
    /// Nothing (decrements).
    None,
    /// These quotas, as the caller read them.
    Given(&'a Quotas),
    /// The quotas stored on the tenant item, compared in the write's own condition (platform defaults
    /// where absent).
    Stored,
}

impl QuotaBound<'_> {
    fn given(&self) -> Option<&Quotas> {
        match self {
            Self::Given(q) => Some(q),
            _ => None,
        }
    }
}

impl Store {
    fn tenant_key(tenant: &TenantId) -> [(&'static str, AttributeValue); 1] {
        [("tenant_id", s(tenant.as_str()))]
    }

    /// An unconditional UpdateItem of the tenant item; the caller adds the expression.
    pub(super) fn update_tenant(&self, tenant: &TenantId) -> UpdateItemFluentBuilder {
        self.ddb
            .update_item()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
    }

    pub async fn quotas(&self, tenant: &TenantId) -> Result<Quotas, Error> {
        let item = fetch(self.get(&self.tenants, &Self::tenant_key(tenant)))
            .await?
            .unwrap_or_default();
        let d = Quotas::default();
        let get = |k: &str, dflt: u32| num(&item, k).unwrap_or(dflt);
        Ok(Quotas {
            max_clusters: get("max_clusters", d.max_clusters),
            max_open_operations: get("max_open_operations", d.max_open_operations),
            max_concurrent_operations: get("max_concurrent_operations", d.max_concurrent_operations),
        })
    }

    /// Sets the tenant's quotas, and in the same transaction the concurrency limit's copy on the tenant's
    /// slot item, which the dispatcher's one-transaction claim checks against. The tenant item records
    /// which value was copied (`max_running_copied`): a quota changed any other way no longer matches it,
    /// and the claim then refuses to trust the copy.
    pub async fn set_quotas(&self, tenant: &TenantId, q: &Quotas) -> Result<(), Error> {
        let quotas = Update::builder()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()))
            .update_expression(
                "SET max_clusters = :a, max_open_operations = :b, max_concurrent_operations = :c, \
                 max_running_copied = :c",
            )
            .expression_attribute_values(":a", n(q.max_clusters))
            .expression_attribute_values(":b", n(q.max_open_operations))
            .expression_attribute_values(":c", n(q.max_concurrent_operations));
        let copy = Update::builder()
            .table_name(&self.locks)
            .key("lock_id", s(super::locks::tenant_slots_id(tenant)))
            .update_expression("SET max_running = :c")
            .expression_attribute_values(":c", n(q.max_concurrent_operations));
        self.ddb
            .transact_write_items()
            .transact_items(tx_update(quotas)?)
            .transact_items(tx_update(copy)?)
            .send()
            .await
            .map_err(|e| Error::aws("TransactWriteItems", e))?;
        Ok(())
    }

    /// The tenant's monthly budget in USD, if it set one: an apply whose estimate exceeds it stops before
    /// apply.
    pub async fn monthly_budget(&self, tenant: &TenantId) -> Result<Option<f64>, Error> {
        let get = self
            .get(&self.tenants, &Self::tenant_key(tenant))
            .projection_expression("monthly_budget");
        Ok(fetch(get).await?.and_then(|i| num(&i, "monthly_budget")))
    }

    pub async fn set_monthly_budget(&self, tenant: &TenantId, usd: Option<f64>) -> Result<(), Error> {
        let q = self.update_tenant(tenant);
        let q = match usd {
            Some(v) => q
                .update_expression("SET monthly_budget = :b")
                .expression_attribute_values(":b", n(v)),
            None => q.update_expression("REMOVE monthly_budget"),
        };
        q.send().await.map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// The rules an operator set on the tenant item like the quotas: the maximum cluster lifetime in hours
    /// (`max_ttl_hours`) and the default approval mode (`approval`: `auto` or `required`; anything else
    /// counts as unset).
    pub async fn tenant_rules(&self, tenant: &TenantId) -> Result<TenantRules, Error> {
        let get = self
            .get(&self.tenants, &Self::tenant_key(tenant))
            .projection_expression("max_ttl_hours, approval");
        Ok(fetch(get).await?.map(|i| rules_of(&i)).unwrap_or_default())
    }

    /// The tenant's webhook (tenant item attributes `webhook_url`, `webhook_secret`, `webhook_events`), if it
    /// set one. A stored
    /// value that is no longer acceptable (e.g. a secret shorter than the minimum) counts as none.
    pub async fn tenant_webhook(&self, tenant: &TenantId) -> Result<Option<Webhook>, Error> {
        let get = self
            .get(&self.tenants, &Self::tenant_key(tenant))
            .projection_expression("webhook_url, webhook_secret, webhook_events")
            .consistent_read(true);
        let Some(item) = fetch(get).await? else {
            return Ok(None);
        };
        let (Some(url), Some(secret)) = (text(&item, "webhook_url"), text(&item, "webhook_secret")) else {
            return Ok(None);
        };
        // The subscription: comma-separated event types; absent (or one no longer known): every event.
        let events = text(&item, "webhook_events")
            .and_then(|list| strato_domain::webhook::parse_event_list(list).ok());
        match Webhook::new(url.clone(), secret.clone()) {
            Ok(w) => Ok(Some(w.with_events(events))),
            Err(e) => {
                tracing::warn!(tenant_id = %tenant, error = %e, "stored tenant webhook is unusable; ignored");
                Ok(None)
            }
        }
    }

    pub async fn set_tenant_webhook(&self, tenant: &TenantId, hook: Option<&Webhook>) -> Result<(), Error> {
        let q = self.update_tenant(tenant);
        let q = match hook {
            Some(w) => match w.events() {
                Some(events) => q
                    .update_expression("SET webhook_url = :u, webhook_secret = :s, webhook_events = :e")
                    .expression_attribute_values(
                        ":e",
                        s(events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(",")),
                    ),
                None => {
                    q.update_expression("SET webhook_url = :u, webhook_secret = :s REMOVE webhook_events")
                }
            }
            .expression_attribute_values(":u", s(w.url()))
            .expression_attribute_values(":s", s(w.secret())),
            None => q.update_expression("REMOVE webhook_url, webhook_secret, webhook_events"),
        };
        q.send().await.map_err(|e| Error::aws("UpdateItem", e))?;
        Ok(())
    }

    /// The tenant's issued external id, sealed (tenant item attribute `external_id_sealed`), if one was issued.
    pub async fn tenant_external_id(&self, tenant: &TenantId) -> Result<Option<Envelope>, Error> {
        let get = self
            .get(&self.tenants, &Self::tenant_key(tenant))
            .projection_expression("external_id_sealed")
            .consistent_read(true);
        let Some(item) = fetch(get).await? else {
            return Ok(None);
        };
        text(&item, "external_id_sealed")
            .map(|j| {
                serde_json::from_str(j).map_err(|e| {
                    Error::Domain(strato_domain::Error::Corrupt {
                        what: format!("tenant {tenant}'s external id"),
                        reason: e.to_string(),
                    })
                })
            })
            .transpose()
    }

    /// Records the tenant's sealed external id unless one is already there: issued once, never replaced.
    /// `false` when another request issued one first (read that one).
    pub async fn issue_tenant_external_id(
        &self,
        tenant: &TenantId,
        sealed: &Envelope,
    ) -> Result<bool, Error> {
        let json = serde_json::to_string(sealed).map_err(|e| {
            Error::Domain(strato_domain::Error::Corrupt {
                what: "external id envelope".into(),
                reason: e.to_string(),
            })
        })?;
        let r = self
            .update_tenant(tenant)
            .update_expression("SET external_id_sealed = :e")
            .condition_expression("attribute_not_exists(external_id_sealed)")
            .expression_attribute_values(":e", s(&json))
            .send()
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(Error::aws("UpdateItem", e)),
        }
    }

    /// One update of the tenant's counters (a transaction may touch an item only once). Increments are
    /// bounded as `bound` says.
    pub(super) fn tenant_counters(
        &self,
        tenant: &TenantId,
        clusters: i64,
        operations: i64,
        bound: QuotaBound<'_>,
    ) -> Result<TransactWriteItem, Error> {
        let mut adds = Vec::new();
        let mut conds = Vec::new();
        let mut u = Update::builder()
            .table_name(&self.tenants)
            .key("tenant_id", s(tenant.as_str()));
        let d = Quotas::default();
        for (attr, delta, quota, given, dflt) in [
            (
                "cluster_count",
                clusters,
                "max_clusters",
                bound.given().map(|q| q.max_clusters),
                d.max_clusters,
            ),
            (
                "open_operations",
                operations,
                "max_open_operations",
                bound.given().map(|q| q.max_open_operations),
                d.max_open_operations,
            ),
        ] {
            if delta == 0 {
                continue;
            }
            adds.push(format!("{attr} :{attr}"));
            u = u.expression_attribute_values(format!(":{attr}"), n(delta));
            if delta < 0 {
                continue;
            }
            match (bound, given) {
                (QuotaBound::Given(_), Some(max)) => {
                    conds.push(format!("(attribute_not_exists({attr}) OR {attr} < :max_{attr})"));
                    u = u.expression_attribute_values(format!(":max_{attr}"), n(max));
                }
                // The quota as the tenant item holds it (or the platform default): checked by the write
                // itself, so the create needs no read of the tenant first.
                (QuotaBound::Stored, _) => {
                    conds.push(format!(
                        "(attribute_not_exists({attr}) OR (attribute_exists({quota}) AND {attr} < {quota}) \
                         OR (attribute_not_exists({quota}) AND {attr} < :max_{attr}))"
                    ));
                    u = u.expression_attribute_values(format!(":max_{attr}"), n(dflt));
                }
                _ => {}
            }
        }
        u = u.update_expression(format!("ADD {}", adds.join(", ")));
        if !conds.is_empty() {
            u = u.condition_expression(conds.join(" AND "));
        }
        tx_update(u)
    }

    /// The quotas `bound` stood for (read from the tenant item for [`QuotaBound::Stored`]): what a refusal
    /// names.
    pub(super) async fn bounding_quotas(
        &self,
        tenant: &TenantId,
        bound: QuotaBound<'_>,
    ) -> Result<Quotas, Error> {
        match bound {
            QuotaBound::Given(q) => Ok(*q),
            _ => self.quotas(tenant).await,
        }
    }

    /// Which quota a refused increment hit, read after the fact.
    pub(super) async fn quota_hit(
        &self,
        tenant: &TenantId,
        bound: QuotaBound<'_>,
    ) -> Result<CreateRejected, Error> {
        let quotas = &self.bounding_quotas(tenant, bound).await?;
        let get = self
            .get(&self.tenants, &Self::tenant_key(tenant))
            .consistent_read(true);
        let item = fetch(get).await?.unwrap_or_default();
        let clusters: u32 = num(&item, "cluster_count").unwrap_or(0);
        Ok(if clusters >= quotas.max_clusters {
            CreateRejected::ClusterQuota {
                max: quotas.max_clusters,
            }
        } else {
            CreateRejected::OperationQuota {
                max: quotas.max_open_operations,
            }
        })
    }
}

/// The rules on a tenant item (attributes `max_ttl_hours`, `approval`; see [`Store::tenant_rules`]).
pub(super) fn rules_of(item: &Item) -> TenantRules {
    TenantRules {
        max_ttl_hours: num::<u64>(item, "max_ttl_hours").filter(|h| *h > 0),
        approval: text(item, "approval")
            .and_then(|a| serde_json::from_value(serde_json::Value::String(a.clone())).ok()),
    }
}

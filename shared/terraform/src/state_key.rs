//! Where a stage's state lives in the store: one folder per tenant, cluster and stage. The backend block
//! of every cloud (the `backend` module) and the S3 key the engine is handed (`render`) both start
//! from it, so it stands below them both.

use strato_domain::ids::{ClusterId, TenantId};

/// The state key's folder of a stage, shared by every backend: per tenant, cluster and stage.
pub fn state_prefix(tenant: &TenantId, cluster: &ClusterId, stage: &str) -> String {
    format!("tenants/{tenant}/clusters/{cluster}/{stage}")
}

/// Per tenant, per cluster, per stage. Ids are restricted alphabets, so the key needs no escaping.
pub fn state_key(tenant: &TenantId, cluster: &ClusterId, stage: &str) -> String {
    format!("{}.tfstate", state_prefix(tenant, cluster, stage))
}

//! The control plane's records a run reads, in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use strato_aws::store::StoredTemplate;
use strato_domain::identity::cloud_tokens::CloudToken;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{CloudProvider, Cluster, Operation};
use strato_domain::ports::{ClusterLocks, Operations, StoredPolicies};
use strato_domain::sealed::Envelope;
use strato_fakes::FakeStore;

use super::lock;
use crate::RunnerError;
use crate::ports::RunStore;

#[derive(Default)]
struct Tenants {
    budgets: HashMap<TenantId, f64>,
    policies: HashMap<TenantId, StoredPolicies>,
    external_ids: HashMap<TenantId, Envelope>,
    cloud_tokens: HashMap<(TenantId, CloudProvider), CloudToken>,
    templates: HashMap<(String, String), StoredTemplate>,
}

/// [`RunStore`] in memory: operations, clusters and cluster locks in the domain's [`FakeStore`] (`store`,
/// shared with the test), tenants' budgets, policies and external ids and the catalog beside it. Clones
/// share the data.
#[derive(Clone)]
pub struct FakeRunStore {
    pub store: FakeStore,
    tenants: Arc<Mutex<Tenants>>,
}

impl FakeRunStore {
    pub fn new(store: FakeStore) -> Self {
        Self {
            store,
            tenants: Arc::default(),
        }
    }

    pub fn set_monthly_budget(&self, tenant: &TenantId, usd: f64) {
        lock(&self.tenants).budgets.insert(tenant.clone(), usd);
    }

    pub fn put_policy(&self, tenant: &TenantId, name: &str, source: &str) {
        lock(&self.tenants)
            .policies
            .entry(tenant.clone())
            .or_default()
            .tenant
            .insert(name.to_owned(), source.to_owned());
    }

    /// A policy the platform operator set for `tenant`.
    pub fn put_operator_policy(&self, tenant: &TenantId, name: &str, source: &str) {
        lock(&self.tenants)
            .policies
            .entry(tenant.clone())
            .or_default()
            .operator
            .insert(name.to_owned(), source.to_owned());
    }

    pub fn set_external_id(&self, tenant: &TenantId, sealed: Envelope) {
        lock(&self.tenants).external_ids.insert(tenant.clone(), sealed);
    }

    pub fn set_cloud_token(&self, tenant: &TenantId, cloud: CloudProvider, token: CloudToken) {
        lock(&self.tenants)
            .cloud_tokens
            .insert((tenant.clone(), cloud), token);
    }

    pub fn put_template(&self, stored: StoredTemplate) {
        let key = (
            stored.template.name().to_owned(),
            stored.template.version().to_owned(),
        );
        lock(&self.tenants).templates.insert(key, stored);
    }
}

impl RunStore for FakeRunStore {
    async fn operation(&self, id: &OperationId) -> Result<Option<Operation>, RunnerError> {
        Ok(self.store.load_operation(id).await?)
    }

    async fn cluster(&self, id: &ClusterId) -> Result<Option<Cluster>, RunnerError> {
        Ok(self.store.cluster(id))
    }

    async fn open_cluster_operations(&self, cluster: &ClusterId) -> Result<Vec<Operation>, RunnerError> {
        Ok(self.store.open_cluster_operations(cluster).await?)
    }

    async fn lock_owner(&self, cluster: &ClusterId) -> Result<Option<(OperationId, u64)>, RunnerError> {
        Ok(ClusterLocks::lock_owner(&self.store, cluster).await?)
    }

    async fn monthly_budget(&self, tenant: &TenantId) -> Result<Option<f64>, RunnerError> {
        Ok(lock(&self.tenants).budgets.get(tenant).copied())
    }

    async fn tenant_policies(&self, tenant: &TenantId) -> Result<StoredPolicies, RunnerError> {
        Ok(lock(&self.tenants)
            .policies
            .get(tenant)
            .cloned()
            .unwrap_or_default())
    }

    async fn tenant_external_id(&self, tenant: &TenantId) -> Result<Option<Envelope>, RunnerError> {
        Ok(lock(&self.tenants).external_ids.get(tenant).cloned())
    }

    async fn cloud_token(
        &self,
        tenant: &TenantId,
        cloud: CloudProvider,
    ) -> Result<Option<CloudToken>, RunnerError> {
        Ok(lock(&self.tenants)
            .cloud_tokens
            .get(&(tenant.clone(), cloud))
            .cloned())
    }

    async fn template(&self, name: &str, version: &str) -> Result<Option<StoredTemplate>, RunnerError> {
        Ok(lock(&self.tenants)
            .templates
            .get(&(name.to_owned(), version.to_owned()))
            .cloned())
    }
}

//! The control plane's records and the cluster's sensitive outputs on AWS: [`RunStore`] on the DynamoDB
//! [`Store`], [`OutputSecrets`] on Secrets Manager.

use serde_json::{Map, Value};
use strato_aws::store::{Store, StoredTemplate};
use strato_domain::identity::cloud_tokens::CloudToken;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::model::{CloudProvider, Cluster, Operation};
use strato_domain::ports::StoredPolicies;
use strato_domain::sealed::Envelope;

use crate::RunnerError;
use crate::ports::{OutputSecrets, RunStore};

impl RunStore for Store {
    async fn operation(&self, id: &OperationId) -> Result<Option<Operation>, RunnerError> {
        Ok(self.get_operation(id).await?)
    }

    async fn cluster(&self, id: &ClusterId) -> Result<Option<Cluster>, RunnerError> {
        Ok(self.find_cluster(id).await?)
    }

    async fn open_cluster_operations(&self, cluster: &ClusterId) -> Result<Vec<Operation>, RunnerError> {
        Ok(self.open_operations_of(cluster).await?)
    }

    async fn lock_owner(&self, cluster: &ClusterId) -> Result<Option<(OperationId, u64)>, RunnerError> {
        Ok(self.cluster_lock(cluster).await?)
    }

    async fn monthly_budget(&self, tenant: &TenantId) -> Result<Option<f64>, RunnerError> {
        Ok(Store::monthly_budget(self, tenant).await?)
    }

    async fn tenant_policies(&self, tenant: &TenantId) -> Result<StoredPolicies, RunnerError> {
        Ok(Store::stored_policies(self, tenant).await?)
    }

    async fn tenant_external_id(&self, tenant: &TenantId) -> Result<Option<Envelope>, RunnerError> {
        Ok(Store::tenant_external_id(self, tenant).await?)
    }

    async fn cloud_token(
        &self,
        tenant: &TenantId,
        cloud: CloudProvider,
    ) -> Result<Option<CloudToken>, RunnerError> {
        Ok(self.cloud_tokens(tenant).await?.remove(cloud.as_str()))
    }

    async fn template(&self, name: &str, version: &str) -> Result<Option<StoredTemplate>, RunnerError> {
        Ok(self.get_template(name, version).await?)
    }
}

impl OutputSecrets for aws_sdk_secretsmanager::Client {
    async fn store_outputs(&self, name: &str, values: &Map<String, Value>) -> Result<(), RunnerError> {
        Ok(crate::secrets::store_outputs(self, name, values).await?)
    }

    async fn delete_outputs(&self, name: &str) -> Result<(), RunnerError> {
        Ok(crate::secrets::delete_outputs(self, name).await?)
    }
}

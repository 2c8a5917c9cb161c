//! The API's side of the fakes: recording new clusters and operations under the tenant's quotas, and the
//! template catalog.

use std::sync::{Arc, Mutex};

use super::{DEFAULT_MAX_CLUSTERS, DEFAULT_MAX_OPEN_OPERATIONS, FakeStore, StoreState, lock};
use strato_domain::audit::AuditEntry;
use strato_domain::ids::TenantId;
use strato_domain::model::{Cluster, ClusterState, Operation};
use strato_domain::ports::{CreateRejected, Intake, PortError, Templates};
use strato_domain::template::Template;
use strato_domain::template_status::TemplateStatus;

impl FakeStore {
    /// Checks the tenant's quotas for `clusters` more clusters and one more open operation, as the tenant
    /// counters' conditions do (counting what is stored rather than keeping counters).
    fn quota_refusal(s: &StoreState, tenant: &TenantId, clusters: u32) -> Option<CreateRejected> {
        let (max_clusters, max_open) = s
            .quotas
            .get(tenant)
            .copied()
            .unwrap_or((DEFAULT_MAX_CLUSTERS, DEFAULT_MAX_OPEN_OPERATIONS));
        let have = s
            .clusters
            .values()
            .filter(|c| &c.tenant_id == tenant && c.state() != ClusterState::Deleted)
            .count() as u32;
        let open = s
            .operations
            .values()
            .filter(|o| &o.tenant_id == tenant && !o.status.is_terminal())
            .count() as u32;
        if clusters > 0 && have + clusters > max_clusters {
            return Some(CreateRejected::ClusterQuota { max: max_clusters });
        }
        (open + 1 > max_open).then_some(CreateRejected::OperationQuota { max: max_open })
    }
}

/// All or nothing, like the transaction: a refusal writes nothing. A name is reserved while a cluster
/// holding it is not DELETED (the status function releases it on deletion).
impl Intake for FakeStore {
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        op: &Operation,
        audit: Option<&AuditEntry>,
    ) -> Result<Result<(), CreateRejected>, PortError> {
        let mut s = lock(&self.state);
        if let Some(refused) = Self::quota_refusal(&s, &cluster.tenant_id, 1) {
            return Ok(Err(refused));
        }
        let taken = s.clusters.values().any(|c| {
            c.tenant_id == cluster.tenant_id
                && c.spec.name == cluster.spec.name
                && c.state() != ClusterState::Deleted
        });
        if taken {
            return Ok(Err(CreateRejected::NameTaken));
        }
        let key = (cluster.tenant_id.clone(), cluster.cluster_id.clone());
        if s.clusters.contains_key(&key) || s.operations.contains_key(&op.operation_id) {
            return Err(PortError::Conflict(format!(
                "cluster {} or operation {} already exists",
                cluster.cluster_id, op.operation_id
            )));
        }
        if let Some(entry) = audit {
            self.audit.insert(entry)?;
        }
        s.clusters.insert(key, cluster.clone());
        s.operations.insert(op.operation_id.clone(), op.clone());
        Ok(Ok(()))
    }

    async fn add_operation(&self, op: &Operation) -> Result<Result<(), CreateRejected>, PortError> {
        let mut s = lock(&self.state);
        if let Some(refused) = Self::quota_refusal(&s, &op.tenant_id, 0) {
            return Ok(Err(refused));
        }
        if s.operations.contains_key(&op.operation_id) {
            return Err(PortError::Conflict(format!(
                "operation {} already exists",
                op.operation_id
            )));
        }
        s.operations.insert(op.operation_id.clone(), op.clone());
        Ok(Ok(()))
    }

    async fn add_operation_on(
        &self,
        cluster: &mut Cluster,
        op: &Operation,
    ) -> Result<Result<(), CreateRejected>, PortError> {
        let mut s = lock(&self.state);
        Self::check_cluster_version(&mut s, cluster)?;
        let key = (cluster.tenant_id.clone(), cluster.cluster_id.clone());
        if let Some(refused) = Self::quota_refusal(&s, &op.tenant_id, 0) {
            return Ok(Err(refused));
        }
        if s.operations.contains_key(&op.operation_id) {
            return Err(PortError::Conflict(format!(
                "operation {} already exists",
                op.operation_id
            )));
        }
        let c = s.clusters.get_mut(&key).expect("the version check found it");
        c.version += 1;
        c.pending_operation = Some(op.operation_id.clone());
        // As the store: accepting a delete revokes the cluster agent's credential in the same write.
        if op.kind == strato_domain::model::OperationKind::Delete {
            strato_domain::agent::revoke(c);
        }
        *cluster = c.clone();
        s.operations.insert(op.operation_id.clone(), op.clone());
        Ok(Ok(()))
    }
}

/// The template catalog in memory. Clones share the data.
#[derive(Debug, Clone, Default)]
pub struct FakeTemplates {
    state: Arc<Mutex<Vec<Template>>>,
    statuses: Arc<Mutex<std::collections::BTreeMap<(String, String), TemplateStatus>>>,
}

impl FakeTemplates {
    /// Publishes `t` (replacing the same name and version).
    pub fn publish(&self, t: Template) {
        let mut all = lock(&self.state);
        all.retain(|o| (o.name(), o.version()) != (t.name(), t.version()));
        all.push(t);
    }

    /// Sets a version's standing, as an operator's deprecate or yank does.
    pub fn set_status(&self, name: &str, version: &str, status: TemplateStatus) {
        lock(&self.statuses).insert((name.into(), version.into()), status);
    }
}

impl Templates for FakeTemplates {
    async fn template(&self, name: &str, version: &str) -> Result<Option<Template>, PortError> {
        Ok(lock(&self.state)
            .iter()
            .find(|t| t.name() == name && t.version() == version)
            .cloned())
    }

    async fn templates(&self) -> Result<Vec<Template>, PortError> {
        let mut all = lock(&self.state).clone();
        all.sort_by(|a, b| a.name().cmp(b.name()).then_with(|| a.version().cmp(b.version())));
        Ok(all)
    }

    async fn status(&self, name: &str, version: &str) -> Result<TemplateStatus, PortError> {
        Ok(lock(&self.statuses)
            .get(&(name.to_owned(), version.to_owned()))
            .cloned()
            .unwrap_or_default())
    }

    async fn statuses(&self, name: &str) -> Result<Vec<(String, TemplateStatus)>, PortError> {
        let versions: Vec<String> = lock(&self.state)
            .iter()
            .filter(|t| t.name() == name)
            .map(|t| t.version().to_owned())
            .collect();
        let statuses = lock(&self.statuses);
        Ok(versions
            .into_iter()
            .map(|v| {
                let s = statuses
                    .get(&(name.to_owned(), v.clone()))
                    .cloned()
                    .unwrap_or_default();
                (v, s)
            })
            .collect())
    }
}

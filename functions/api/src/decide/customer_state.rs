//! State versions in the customer's own storage. The api holds no credentials of it (it is internet-facing;
//! a tenant's cloud credentials are opened only inside a run), so the list is the one the cluster's last run
//! reported at its end, and a restore is an operation (`restore-state`) whose run copies the version back.

use strato_coordination::{ATTEMPTS, Attempt, optimistic};
use strato_domain::model::{
    Cluster, ClusterState, CustomerStateListing, ListedStateVersion, OperationKind, RestoreRequest,
};
use strato_domain::ports::{Clock, JobQueue, Templates};
use strato_domain::sealed::Keys;

use super::{Api, ApiStore, Started, kept_changing, stage_of};
use crate::{caller::Caller, error::ApiError};

/// A cluster whose state is in the customer's storage: where, the last listing (if a run listed yet), and
/// how to list the versions there directly.
#[derive(Debug, Clone)]
pub struct CustomerState {
    pub cluster: Cluster,
    /// As the tenant reads it (`Cloud Storage bucket acme-tf`).
    pub storage: String,
    pub listing: Option<CustomerStateListing>,
    /// The cloud CLI command that lists the versions in that storage right now.
    pub list_yourself: String,
}

impl<S: ApiStore, T: Templates, Q: JobQueue, C: Clock, K: Keys> Api<'_, S, T, Q, C, K> {
    /// The caller's cluster when its state is in the customer's own storage; `None` when it is in Strato's
    /// bucket (listed live there).
    pub async fn customer_state(&self, caller: &Caller, id: &str) -> Result<Option<CustomerState>, ApiError> {
        let c = self.load_cluster(caller, id).await?;
        Ok(customer_state_of(c))
    }

    /// Queues a `restore-state` operation for a state in the customer's own storage: the version must be in
    /// the last listed versions (404 otherwise) and not the current one (409). `None` when the state is in
    /// Strato's bucket (restored by the api itself).
    pub async fn restore_customer_state(
        &self,
        caller: &Caller,
        id: &str,
        version: &str,
    ) -> Result<Option<Started>, ApiError> {
        optimistic(
            ATTEMPTS,
            || kept_changing(id),
            || async move {
                let c = self.load_cluster(caller, id).await?;
                let Some(cs) = customer_state_of(c) else {
                    return Ok(Attempt::Done(None));
                };
                let v = chosen(&cs, id, version)?.clone();
                let c = cs.cluster;
                // A FAILED cluster is when a restore is most needed; one being built or deleted has a run
                // holding the state.
                if !matches!(c.state(), ClusterState::Active | ClusterState::Failed) {
                    return Err(ApiError::Conflict(format!(
                        "a state version can be restored on an ACTIVE or FAILED cluster; this one is {}",
                        c.state()
                    )));
                }
                let t = self.template_for(&c.spec.template, "template").await?;
                let mut op = self.new_operation(caller, &c.cluster_id, OperationKind::RestoreState);
                op.restore = Some(RestoreRequest {
                    key: v.key.clone(),
                    version_id: v.version_id.clone(),
                });
                Ok(match self.start(caller, c, op, t).await? {
                    Attempt::Done(s) => Attempt::Done(Some(s)),
                    Attempt::Conflict => Attempt::Conflict,
                })
            },
        )
        .await
    }
}

fn customer_state_of(cluster: Cluster) -> Option<CustomerState> {
    let target = cluster.spec.target.as_ref()?;
    let storage = target.customer_storage(&cluster.spec.region)?;
    let folder = format!("tenants/{}/clusters/{}", cluster.tenant_id, cluster.cluster_id);
    let list_yourself = target
        .customer_state_versions(&folder, &cluster.spec.region)
        .unwrap_or_default();
    Some(CustomerState {
        listing: cluster.customer_state.clone(),
        storage,
        list_yourself,
        cluster,
    })
}

/// The listed version `version`: 404 when the last listing has no such version, 409 when it is current.
fn chosen<'a>(cs: &'a CustomerState, id: &str, version: &str) -> Result<&'a ListedStateVersion, ApiError> {
    let found = cs
        .listing
        .as_ref()
        .and_then(|l| l.versions.iter().find(|v| v.version_id == version));
    let Some(v) = found else {
        let when = match &cs.listing {
            Some(l) => format!("the versions listed by operation {}", l.operation_id),
            None => "the versions listed so far (none: no run has listed them yet)".to_owned(),
        };
        return Err(ApiError::NotFound(format!(
            "state version '{version}' is not among {when} in your {}; GET /v1/clusters/{id}/state-versions \
             lists them (any operation, e.g. POST /v1/clusters/{id}/drift-check, lists them again)",
            cs.storage
        )));
    };
    if v.is_latest {
        return Err(ApiError::Conflict(format!(
            "version {version} is already the current state of stage '{}'; nothing to restore",
            stage_of(&v.key)
        )));
    }
    Ok(v)
}

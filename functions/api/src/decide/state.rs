//! The state-restore decision: list a cluster's Terraform state versions, and put an earlier one back while
//! holding the cluster lock (no runner may read or write the state meanwhile), then hand the lock on.

use strato_coordination::{release_lock_and_wake, update_cluster};
use strato_domain::ids::OperationId;
use strato_domain::model::{Cluster, StateRestore};
use strato_domain::ports::{Clock, JobQueue, LockOutcome, StateArchive, StateVersion, Templates};
use strato_domain::sealed::Keys;

use super::{Api, ApiStore};
use crate::{caller::Caller, error::ApiError};

/// Long enough for one copy; a crashed restore frees the cluster after this.
pub const RESTORE_LEASE: time::Duration = time::Duration::minutes(5);

/// The stage a state key belongs to: `…/clusters/<id>/<stage>.tfstate` (S3, Azure Blob), or
/// `…/clusters/<id>/<stage>/default.tfstate` (GCS, where the engine names the object in the stage's folder).
pub fn stage_of(key: &str) -> &str {
    let rest = key
        .split_once("/clusters/")
        .and_then(|(_, r)| r.split_once('/'))
        .map_or(key, |(_, r)| r);
    let rest = rest.strip_suffix(".tfstate").unwrap_or(rest);
    rest.split('/').next().unwrap_or(rest)
}

impl<S: ApiStore, T: Templates, Q: JobQueue, C: Clock, K: Keys> Api<'_, S, T, Q, C, K> {
    /// The caller's cluster and its state versions.
    pub async fn state_versions(
        &self,
        archive: &impl StateArchive,
        caller: &Caller,
        id: &str,
    ) -> Result<(Cluster, Vec<StateVersion>), ApiError> {
        let c = self.load_cluster(caller, id).await?;
        let folder = format!("tenants/{}/clusters/{}", c.tenant_id, c.cluster_id);
        if let Some(elsewhere) = c
            .spec
            .target
            .as_ref()
            .and_then(|t| t.customer_state_versions(&folder, &c.spec.region))
        {
            return Err(ApiError::Conflict(elsewhere));
        }
        let versions = archive.state_versions(&c.tenant_id, &c.cluster_id).await?;
        Ok((c, versions))
    }

    /// Copies `version` back on top of its state under the cluster lock, records the restore on the cluster,
    /// and frees the lock, waking the operation that waited for it.
    pub async fn restore_state(
        &self,
        archive: &impl StateArchive,
        caller: &Caller,
        id: &str,
        version: &str,
    ) -> Result<StateRestore, ApiError> {
        let (c, all) = self.state_versions(archive, caller, id).await?;
        let Some(v) = all.into_iter().find(|v| v.version_id == version) else {
            return Err(ApiError::NotFound(format!(
                "state version '{version}' is not a version of this cluster's state; \
                 GET /v1/clusters/{id}/state-versions lists them"
            )));
        };
        if v.is_latest {
            return Err(ApiError::Conflict(format!(
                "version {version} is already the current state of stage '{}'; nothing to restore",
                stage_of(&v.key)
            )));
        }
        // Hold the cluster lock like an operation would: no runner may read or write the state meanwhile.
        let holder = OperationId::generate();
        let token = match self
            .store
            .acquire_lock(&c.cluster_id, &holder, RESTORE_LEASE, self.clock.now())
            .await?
        {
            LockOutcome::Acquired { fencing_token } => fencing_token,
            LockOutcome::Held { owner } => {
                return Err(ApiError::Conflict(format!(
                    "operation {owner} is running on this cluster; restore the state once it has finished"
                )));
            }
        };
        let result = self.copy_back(archive, caller, &c, &v).await;
        // Operations parked behind the lock meanwhile wait for a wake-up: the release gives it.
        release_lock_and_wake(self.store, &self.jobs, &c.cluster_id, &holder, token).await?;
        result
    }

    async fn copy_back(
        &self,
        archive: &impl StateArchive,
        caller: &Caller,
        c: &Cluster,
        v: &StateVersion,
    ) -> Result<StateRestore, ApiError> {
        let restored = archive.restore_state_version(v).await?;
        let record = StateRestore {
            key: v.key.clone(),
            from_version: v.version_id.clone(),
            new_version: restored.new_version,
            restored_by: caller
                .subject
                .clone()
                .unwrap_or_else(|| format!("tenant:{}", caller.tenant)),
            at: self.clock.now(),
        };
        update_cluster(self.store, &c.tenant_id, &c.cluster_id, |cl| {
            cl.record_restore(record.clone());
            Ok::<_, ApiError>(true)
        })
        .await?;
        tracing::info!(cluster_id = %c.cluster_id, key = %v.key, from = %v.version_id, by = %record.restored_by,
            "state version restored");
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_state_keys_stage_is_read_on_every_backends_naming() {
        assert_eq!(super::stage_of("tenants/t/clusters/c/main.tfstate"), "main");
        assert_eq!(super::stage_of("tenants/t/clusters/c/net/default.tfstate"), "net");
        assert_eq!(super::stage_of("loose.tfstate"), "loose");
    }
}

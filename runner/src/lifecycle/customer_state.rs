//! The state in the customer's own storage: where it is and what the run reaches it with (built while the
//! run is prepared), the `restore-state` operation's one stage (the chosen version copied back natively, no
//! engine command), and the listing every run of such a cluster reports at its end (metadata only).

use strato_domain::error::ErrorCategory;
use strato_domain::messages::RunnerEvent;
use strato_domain::model::{ClusterSpec, CustomerStateReport, RestoredVersion, Target, newest_per_key};
use strato_terraform::backend::StateBackend;

use super::access::EngineAccess;
use super::failure::Failure;
use super::stages::ExecOutcome;
use super::{PreparedRun, RunContext};
use crate::clouds::storage::{AzureAccess, GcsAccess, S3Access, StorageAccess};
use crate::ports::{Cloud, Ports};

/// The restore's step name.
pub(super) const STEP: &str = "restore-state";

/// Google's Cloud Storage JSON API.
const GCS_API: &str = "https://storage.googleapis.com/storage/v1";

/// The customer's storage as the tenant reads it, and how the run reaches it; `None` when the state is in
/// Strato's bucket, or (an emulated Azure cloud, whose blob endpoint only Resource Manager names) when the
/// run cannot reach it itself.
pub(super) fn storage_access<P: Ports>(
    ctx: &RunContext<P>,
    spec: &ClusterSpec,
    access: &EngineAccess<'_>,
    backends: Option<&[(String, StateBackend)]>,
) -> Option<(String, StorageAccess)> {
    let target = spec.target.as_ref()?;
    let storage = target.customer_storage(&spec.region)?;
    let prefix = format!(
        "tenants/{}/clusters/{}/",
        ctx.cluster.tenant_id, ctx.cluster.cluster_id
    );
    let id_token = || access.cloud.as_ref().map(|(_, t)| t.clone());
    let reach = match (target, backends.and_then(|b| b.first()).map(|(_, b)| b)) {
        (Target::Aws(t), _) => {
            let (_, creds) = access.target.as_ref()?;
            let bucket = t.state_bucket.clone()?;
            StorageAccess::S3(S3Access {
                endpoint: ctx.cfg.provider_endpoint.clone(),
                path_style: ctx.cfg.provider_endpoint.is_some(),
                region: t.region.clone().unwrap_or_else(|| spec.region.clone()),
                lock_table: Some(t.lock_table.clone().unwrap_or_else(|| format!("{bucket}-locks"))),
                bucket,
                prefix,
                creds: creds.clone(),
            })
        }
        (Target::Gcp(g), Some(StateBackend::Gcs(b))) => StorageAccess::Gcs(GcsAccess {
            api: b.endpoint.clone().unwrap_or_else(|| GCS_API.to_owned()),
            bucket: b.bucket.clone(),
            prefix,
            target: g.clone(),
            id_token: id_token()?,
        }),
        (Target::Azure(a), Some(StateBackend::AzureBlob(b))) if b.metadata_host.is_none() => {
            StorageAccess::Azure(AzureAccess {
                blob_endpoint: format!("https://{}.blob.core.windows.net", b.storage_account),
                container: b.container.clone(),
                prefix,
                target: a.clone(),
                id_token: id_token()?,
            })
        }
        (Target::Digitalocean(_) | Target::Linode(_), Some(StateBackend::S3Compatible(b))) => {
            StorageAccess::S3(S3Access {
                endpoint: Some(b.endpoint.clone()),
                path_style: b.path_style,
                region: b.region.clone(),
                bucket: b.bucket.clone(),
                prefix,
                creds: access.storage_keys.clone()?,
                lock_table: None,
            })
        }
        _ => return None,
    };
    Some((storage, reach))
}

impl<P: Ports> PreparedRun<'_, P> {
    /// The `restore-state` operation: the chosen version of a state object copied back on top of it in the
    /// customer's storage, while the run holds the cluster lock (fenced before the write).
    pub(super) async fn restore_state(&mut self) -> Result<ExecOutcome, Failure> {
        let failed = |what: String, fix: &str| {
            let mut f = Failure::new(STEP, ErrorCategory::InvalidConfiguration, what);
            f.fix = fix.to_owned();
            f
        };
        let Some(chosen) = self.ctx.op.restore.clone() else {
            return Err(Failure::internal(
                STEP,
                "the restore-state operation names no version",
            ));
        };
        let Some((storage, access)) = &self.customer_storage else {
            return Err(failed(
                "this cluster's state is not in storage this run can reach itself".to_owned(),
                "restore it with POST /v1/clusters/{id}/state-versions/{version}/restore when it is in \
                 Strato's bucket, or with your cloud's CLI (GET …/state-versions says how)",
            ));
        };
        let prefix = format!(
            "tenants/{}/clusters/{}/",
            self.ctx.cluster.tenant_id, self.ctx.cluster.cluster_id
        );
        if !chosen.key.starts_with(&prefix) {
            return Err(failed(
                format!("{} is not one of this cluster's state objects", chosen.key),
                "choose a version GET /v1/clusters/{id}/state-versions lists",
            ));
        }
        self.ctx.event_step(STEP, None);
        let result = self
            .copy_back(storage, access, &chosen.key, &chosen.version_id)
            .await;
        self.ctx.event_step(STEP, Some(result.is_ok()));
        self.restored = Some(result?);
        Ok(ExecOutcome::nothing())
    }

    async fn copy_back(
        &self,
        storage: &str,
        access: &StorageAccess,
        key: &str,
        version: &str,
    ) -> Result<RestoredVersion, Failure> {
        self.ctx.fenced(STEP).await?;
        let new_version = self
            .ctx
            .ports
            .cloud
            .restore_state_version(access, key, version)
            .await
            .map_err(|e| {
                let mut f = Failure::new(
                    STEP,
                    ErrorCategory::Credentials,
                    format!(
                        "copying version {version} of {key} back in your {storage} failed: {}",
                        e.what
                    ),
                );
                f.fix = e.fix;
                f
            })?;
        self.note(
            STEP,
            &format!("version {version} of {key} copied back in your {storage}: it is the current state now"),
        );
        Ok(RestoredVersion {
            key: key.to_owned(),
            from_version: version.to_owned(),
            new_version,
        })
    }

    /// The versions in the customer's storage, for the final event (and the restore this run did). A list
    /// that fails is said in the log and left out: the run's own result stands.
    pub(super) async fn customer_state_report(&self) -> Option<CustomerStateReport> {
        let (storage, access) = self.customer_storage.as_ref()?;
        match self.ctx.ports.cloud.list_state_versions(access).await {
            Ok(versions) => {
                self.note(
                    "state-versions",
                    &format!("{} state version(s) listed in your {storage}", versions.len()),
                );
                Some(CustomerStateReport {
                    storage: storage.clone(),
                    // The event stays small: the cluster keeps no more than these anyway.
                    versions: newest_per_key(&versions),
                    restored: self.restored.clone(),
                })
            }
            Err(e) => {
                self.note(
                    "state-versions",
                    &format!(
                        "the state versions in your {storage} could not be listed: {} ({})",
                        e.what, e.fix
                    ),
                );
                self.restored.clone().map(|r| CustomerStateReport {
                    storage: storage.clone(),
                    versions: Vec::new(),
                    restored: Some(r),
                })
            }
        }
    }
}

/// `ev` with `report` attached (a final event that can carry it).
pub(super) fn with_report(mut ev: RunnerEvent, report: Option<CustomerStateReport>) -> RunnerEvent {
    if let RunnerEvent::Succeeded { state, .. } | RunnerEvent::Failed { state, .. } = &mut ev {
        *state = report.map(Box::new);
    }
    ev
}

//! Terraform state versions of a cluster (S3 versioning on the state bucket): list them, and restore one —
//! the way out when a state file is corrupted. A restore copies the chosen version back on top (so the
//! version it replaces is kept), holds the cluster lock while doing it (no runner can be writing the state),
//! and records who did it on the cluster. The state's digest in Terraform's lock table is set to the restored
//! bytes, so any version can be restored, not only the one Terraform wrote last.

use md5::{Digest, Md5};
use serde::Serialize;
use strato_aws::coordination::update_cluster;
use strato_aws::store::LockOutcome;
use strato_domain::ids::OperationId;
use strato_domain::model::{Cluster, StateRestore};
use strato_domain::ts;
use utoipa::ToSchema;

use crate::clusters::load;
use crate::{ApiError, Caller, Ctx, Reply, schema};

/// One stored version of a stage's state.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct StateVersionView {
    pub stage: String,
    pub version_id: String,
    pub last_modified: Option<String>,
    /// Bytes.
    pub size: i64,
    pub is_latest: bool,
}

/// A state restore: which stage, from which version to which new one, by whom and when.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = StateRestoreResult)]
pub(crate) struct RestoreView {
    pub stage: String,
    pub from_version: String,
    pub new_version: String,
    pub restored_by: String,
    #[schema(value_type = schema::Timestamp)]
    pub at: String,
}

/// A past restore as recorded on the cluster.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = StateRestoreRecord)]
pub(crate) struct RestoreRecordView {
    /// The state object's key.
    pub key: String,
    pub from_version: String,
    pub new_version: String,
    pub restored_by: String,
    #[schema(value_type = schema::Timestamp)]
    pub at: String,
}

/// A cluster's state versions and the restores done so far.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct StateVersions {
    pub items: Vec<StateVersionView>,
    pub restores: Vec<RestoreRecordView>,
}

/// Long enough for one CopyObject; a crashed restore frees the cluster after this.
const RESTORE_LEASE: time::Duration = time::Duration::minutes(5);

fn prefix(c: &Cluster) -> String {
    format!("tenants/{}/clusters/{}/", c.tenant_id, c.cluster_id)
}

struct Version {
    key: String,
    version_id: String,
    last_modified: Option<String>,
    size: i64,
    latest: bool,
}

async fn versions(ctx: &Ctx, c: &Cluster) -> Result<Vec<Version>, ApiError> {
    let bucket = ctx.config.names.bucket("state");
    let mut out = Vec::new();
    let (mut key_marker, mut version_marker) = (None, None);
    loop {
        let page = ctx
            .s3
            .list_object_versions()
            .bucket(&bucket)
            .prefix(prefix(c))
            .set_key_marker(key_marker)
            .set_version_id_marker(version_marker)
            .send()
            .await
            .map_err(|e| strato_aws::Error::aws("ListObjectVersions", e))?;
        for v in page.versions() {
            let key = v.key().unwrap_or_default();
            if !key.ends_with(".tfstate") {
                continue;
            }
            out.push(Version {
                key: key.to_owned(),
                version_id: v.version_id().unwrap_or_default().to_owned(),
                last_modified: v
                    .last_modified()
                    .and_then(|t| t.fmt(aws_sdk_s3::primitives::DateTimeFormat::DateTime).ok()),
                size: v.size().unwrap_or(0),
                latest: v.is_latest().unwrap_or(false),
            });
        }
        if page.is_truncated() != Some(true) {
            break;
        }
        key_marker = page.next_key_marker().map(str::to_owned);
        version_marker = page.next_version_id_marker().map(str::to_owned);
    }
    Ok(out)
}

/// The stage a state key belongs to (`…/<stage>.tfstate`).
fn stage_of(key: &str) -> &str {
    key.rsplit('/')
        .next()
        .and_then(|f| f.strip_suffix(".tfstate"))
        .unwrap_or(key)
}

pub(crate) async fn list(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<StateVersions>, ApiError> {
    let c = load(ctx, caller, id).await?;
    let items: Vec<_> = versions(ctx, &c)
        .await?
        .iter()
        .map(|v| StateVersionView {
            stage: stage_of(&v.key).to_owned(),
            version_id: v.version_id.clone(),
            last_modified: v.last_modified.clone(),
            size: v.size,
            is_latest: v.latest,
        })
        .collect();
    let restores = c
        .state_restores
        .iter()
        .map(|r| RestoreRecordView {
            key: r.key.clone(),
            from_version: r.from_version.clone(),
            new_version: r.new_version.clone(),
            restored_by: r.restored_by.clone(),
            at: ts::format(r.at),
        })
        .collect();
    Ok(Reply::ok(StateVersions { items, restores }))
}

pub(crate) async fn restore(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    version: &str,
) -> Result<Reply<RestoreView>, ApiError> {
    let c = load(ctx, caller, id).await?;
    let all = versions(ctx, &c).await?;
    let Some(v) = all.iter().find(|v| v.version_id == version) else {
        return Err(ApiError::NotFound(format!(
            "state version '{version}' is not a version of this cluster's state; \
             GET /v1/clusters/{id}/state-versions lists them"
        )));
    };
    if v.latest {
        return Err(ApiError::Conflict(format!(
            "version {version} is already the current state of stage '{}'; nothing to restore",
            stage_of(&v.key)
        )));
    }
    // Hold the cluster lock like an operation would: no runner may read or write the state meanwhile.
    let holder = OperationId::generate();
    let token = match ctx
        .store
        .acquire_cluster_lock(&c.cluster_id, &holder, RESTORE_LEASE, ts::now())
        .await?
    {
        LockOutcome::Acquired { fencing_token } => fencing_token,
        LockOutcome::Held { owner } => {
            return Err(ApiError::Conflict(format!(
                "operation {owner} is running on this cluster; restore the state once it has finished"
            )));
        }
    };
    let result = copy_back(ctx, caller, &c, v).await;
    ctx.store
        .release_cluster_lock(&c.cluster_id, &holder, token)
        .await?;
    let record = result?;
    Ok(Reply::ok(RestoreView {
        stage: stage_of(&record.key).to_owned(),
        from_version: record.from_version,
        new_version: record.new_version,
        restored_by: record.restored_by,
        at: ts::format(record.at),
    }))
}

async fn copy_back(ctx: &Ctx, caller: &Caller, c: &Cluster, v: &Version) -> Result<StateRestore, ApiError> {
    let bucket = ctx.config.names.bucket("state");
    let out = ctx
        .s3
        .copy_object()
        .bucket(&bucket)
        .key(&v.key)
        .copy_source(format!("{bucket}/{}?versionId={}", v.key, v.version_id))
        .send()
        .await
        .map_err(|e| strato_aws::Error::aws("CopyObject", e))?;
    // Terraform checks the state's md5 against the digest it recorded at its last write; the restored bytes
    // become the state it must accept now.
    let restored = ctx
        .s3
        .get_object()
        .bucket(&bucket)
        .key(&v.key)
        .set_version_id(out.version_id().map(str::to_owned))
        .send()
        .await
        .map_err(|e| strato_aws::Error::aws("GetObject", e))?
        .body
        .collect()
        .await
        .map_err(|e| strato_aws::Error::aws("GetObject", e))?
        .into_bytes();
    let digest = hex::encode(Md5::digest(&restored));
    ctx.store.set_state_digest(&bucket, &v.key, &digest).await?;
    let record = StateRestore {
        key: v.key.clone(),
        from_version: v.version_id.clone(),
        new_version: out.version_id().unwrap_or_default().to_owned(),
        restored_by: caller
            .subject
            .clone()
            .unwrap_or_else(|| format!("tenant:{}", caller.tenant)),
        at: ts::now(),
    };
    let rec = record.clone();
    update_cluster(&ctx.store, &c.tenant_id, &c.cluster_id, move |cl| {
        cl.state_restores.push(rec.clone());
        Ok(true)
    })
    .await?;
    tracing::info!(cluster = %c.cluster_id, key = %v.key, from = %v.version_id, by = %record.restored_by,
        "state version restored");
    Ok(record)
}

//! Terraform state versions of a cluster (S3 versioning on the state bucket): list them, and restore one —
//! the way out when a state file is corrupted. A restore copies the chosen version back on top (so the
//! version it replaces is kept), holds the cluster lock while doing it (no runner can be writing the state),
//! and records who did it on the cluster. The state's digest in Terraform's lock table is set to the restored
//! bytes, so any version can be restored, not only the one Terraform wrote last.

use serde::Serialize;
use strato_aws::ports::S3StateArchive;
use strato_domain::ts;
use utoipa::ToSchema;

use crate::decide::stage_of;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError, schema};

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

/// The state bucket and Terraform's lock table, as the [`StateArchive`](strato_domain::ports::StateArchive)
/// port the decisions use.
fn archive<'a>(ctx: &'a Ctx, bucket: &'a str) -> S3StateArchive<'a> {
    S3StateArchive {
        s3: &ctx.s3,
        store: &ctx.store,
        bucket,
    }
}

pub(crate) async fn list(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<StateVersions>, ApiError> {
    let bucket = ctx.config.names.bucket("state");
    let (c, versions) = ctx
        .api()
        .state_versions(&archive(ctx, &bucket), caller, id)
        .await?;
    let items: Vec<_> = versions
        .into_iter()
        .map(|v| StateVersionView {
            stage: stage_of(&v.key).to_owned(),
            version_id: v.version_id,
            last_modified: v.last_modified,
            size: v.size,
            is_latest: v.is_latest,
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
    let bucket = ctx.config.names.bucket("state");
    let record = ctx
        .api()
        .restore_state(&archive(ctx, &bucket), caller, id, version)
        .await?;
    Ok(Reply::ok(RestoreView {
        stage: stage_of(&record.key).to_owned(),
        from_version: record.from_version,
        new_version: record.new_version,
        restored_by: record.restored_by,
        at: ts::format(record.at),
    }))
}

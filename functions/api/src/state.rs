//! Terraform state versions of a cluster (S3 versioning on the state bucket): list them, and restore one —
//! the way out when a state file is corrupted. A restore copies the chosen version back on top (so the
//! version it replaces is kept), holds the cluster lock while doing it (no runner can be writing the state),
//! and records who did it on the cluster. The state's digest in Terraform's lock table is set to the restored
//! bytes, so any version can be restored, not only the one Terraform wrote last.
//!
//! A state in the customer's own storage (GCS, Azure Blob, Spaces, Linode, an AWS target's bucket) is listed
//! by the runs (each lists the versions at its end with the credentials only it holds) and restored by an
//! operation (`restore-state`, 202): the api holds no credentials of that storage.

use serde::Serialize;
use strato_aws::ports::S3StateArchive;
use strato_domain::ts;
use utoipa::ToSchema;

use crate::decide::{CustomerState, stage_of};
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

/// Where the listed versions come from, for a state in the customer's own storage (absent for Strato's
/// bucket, which is listed live).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct StateSource {
    /// The customer's storage (`Cloud Storage bucket acme-tf`).
    pub storage: String,
    /// When a run listed them; null before any run did.
    #[schema(value_type = Option<schema::Timestamp>)]
    pub listed_at: Option<String>,
    /// The operation whose run listed them; null before any run did.
    pub operation_id: Option<String>,
    /// How current the list is, and how to list the storage directly.
    pub note: String,
}

/// A cluster's state versions and the restores done so far.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct StateVersions {
    pub items: Vec<StateVersionView>,
    pub restores: Vec<RestoreRecordView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<StateSource>,
}

/// A restore: done (Strato's bucket, 200) or queued as a `restore-state` operation (the customer's storage,
/// 202).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum RestoreAnswer {
    Restored(RestoreView),
    Queued(Box<crate::views::Accepted>),
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

fn restores_of(c: &strato_domain::model::Cluster) -> Vec<RestoreRecordView> {
    c.state_restores
        .iter()
        .map(|r| RestoreRecordView {
            key: r.key.clone(),
            from_version: r.from_version.clone(),
            new_version: r.new_version.clone(),
            restored_by: r.restored_by.clone(),
            at: ts::format(r.at),
        })
        .collect()
}

/// The versions a run last listed in the customer's storage, and where they come from.
pub(crate) fn customer_versions(cs: &CustomerState) -> StateVersions {
    let items = cs
        .listing
        .iter()
        .flat_map(|l| &l.versions)
        .map(|v| StateVersionView {
            stage: stage_of(&v.key).to_owned(),
            version_id: v.version_id.clone(),
            last_modified: v.last_modified.clone(),
            size: v.size,
            is_latest: v.is_latest,
        })
        .collect();
    let note = match &cs.listing {
        Some(l) => format!(
            "listed in your {} by operation {} at its end; every operation lists them again. Right now: {}",
            cs.storage, l.operation_id, cs.list_yourself
        ),
        None => format!(
            "no run has listed the versions in your {} yet (every operation lists them at its end, e.g. a \
             drift check). Right now: {}",
            cs.storage, cs.list_yourself
        ),
    };
    StateVersions {
        items,
        restores: restores_of(&cs.cluster),
        source: Some(StateSource {
            storage: cs.storage.clone(),
            listed_at: cs.listing.as_ref().map(|l| ts::format(l.listed_at)),
            operation_id: cs.listing.as_ref().map(|l| l.operation_id.to_string()),
            note,
        }),
    }
}

pub(crate) async fn list(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<StateVersions>, ApiError> {
    if let Some(cs) = ctx.api().customer_state(caller, id).await? {
        return Ok(Reply::ok(customer_versions(&cs)));
    }
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
    Ok(Reply::ok(StateVersions {
        items,
        restores: restores_of(&c),
        source: None,
    }))
}

pub(crate) async fn restore(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    version: &str,
) -> Result<Reply<RestoreAnswer>, ApiError> {
    if let Some(started) = ctx.api().restore_customer_state(caller, id, version).await? {
        let r = crate::clusters::accepted(started);
        return Ok(r.map(|a| RestoreAnswer::Queued(Box::new(a))));
    }
    let bucket = ctx.config.names.bucket("state");
    let record = ctx
        .api()
        .restore_state(&archive(ctx, &bucket), caller, id, version)
        .await?;
    Ok(Reply::ok(RestoreAnswer::Restored(RestoreView {
        stage: stage_of(&record.key).to_owned(),
        from_version: record.from_version,
        new_version: record.new_version,
        restored_by: record.restored_by,
        at: ts::format(record.at),
    })))
}

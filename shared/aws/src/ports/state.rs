//! [`StateArchive`] on the versioned S3 state bucket, with the digest Terraform checks kept in its lock
//! table.

use aws_sdk_s3::primitives::DateTimeFormat;
use md5::{Digest, Md5};
use strato_domain::ids::{ClusterId, TenantId};
use strato_domain::ports::{PortError, RestoredState, StateArchive, StateVersion};

use crate::error::Error;
use crate::store::Store;

/// The state bucket (`bucket`) and Terraform's lock table (through `store`).
#[derive(Debug, Clone, Copy)]
pub struct S3StateArchive<'a> {
    pub s3: &'a aws_sdk_s3::Client,
    pub store: &'a Store,
    pub bucket: &'a str,
}

/// Where a cluster's state objects live in the bucket.
pub fn state_prefix(tenant: &TenantId, cluster: &ClusterId) -> String {
    format!("tenants/{tenant}/clusters/{cluster}/")
}

/// Every version of every `.tfstate` object under `prefix` in a versioned bucket, each key's newest first (as
/// S3 lists them), through every page. Strato's bucket and a customer's (AWS or S3-compatible) alike.
pub async fn list_state_versions(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    prefix: &str,
) -> Result<Vec<StateVersion>, ListVersionsError> {
    let mut out = Vec::new();
    let (mut key_marker, mut version_marker) = (None, None);
    loop {
        let page = s3
            .list_object_versions()
            .bucket(bucket)
            .prefix(prefix)
            .set_key_marker(key_marker)
            .set_version_id_marker(version_marker)
            .send()
            .await?;
        for v in page.versions() {
            let key = v.key().unwrap_or_default();
            if !key.ends_with(".tfstate") {
                continue;
            }
            out.push(StateVersion {
                key: key.to_owned(),
                version_id: v.version_id().unwrap_or_default().to_owned(),
                last_modified: v
                    .last_modified()
                    .and_then(|t| t.fmt(DateTimeFormat::DateTime).ok()),
                size: v.size().unwrap_or(0),
                is_latest: v.is_latest().unwrap_or(false),
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

/// What [`list_state_versions`] fails with: the SDK's error of `ListObjectVersions`.
pub type ListVersionsError = aws_sdk_s3::error::SdkError<
    aws_sdk_s3::operation::list_object_versions::ListObjectVersionsError,
    aws_sdk_s3::config::http::HttpResponse,
>;

impl StateArchive for S3StateArchive<'_> {
    async fn state_versions(
        &self,
        tenant: &TenantId,
        cluster: &ClusterId,
    ) -> Result<Vec<StateVersion>, PortError> {
        Ok(
            list_state_versions(self.s3, self.bucket, &state_prefix(tenant, cluster))
                .await
                .map_err(|e| Error::aws("ListObjectVersions", e))?,
        )
    }

    /// Digest first, then the copy, so no failure leaves a state Terraform refuses: the chosen version's bytes
    /// give the digest Terraform must accept after the copy; the current bytes give the one it accepts now.
    /// The new digest is written, then the version is copied back; if the copy fails, the old digest is put
    /// back. Either way the state and its digest agree (an error says whether the rollback itself failed).
    async fn restore_state_version(&self, v: &StateVersion) -> Result<RestoredState, PortError> {
        let failed = |step: &'static str, unchanged: bool| {
            move |e: Error| Error::StateRestore {
                step,
                unchanged,
                source: Box::new(e),
            }
        };
        let chosen = self
            .read(&v.key, Some(&v.version_id))
            .await
            .map_err(failed("reading the chosen version", true))?
            .ok_or_else(|| Error::Domain(PortError::NotFound(format!("state version {}", v.version_id))))?;
        let current = self
            .read(&v.key, None)
            .await
            .map_err(failed("reading the current state", true))?;
        self.store
            .set_state_digest(self.bucket, &v.key, &md5_hex(&chosen))
            .await
            .map_err(failed("recording Terraform's digest of the restored state", true))?;
        let copied = self
            .s3
            .copy_object()
            .bucket(self.bucket)
            .key(&v.key)
            .copy_source(format!("{}/{}?versionId={}", self.bucket, v.key, v.version_id))
            .send()
            .await
            .map_err(|e| Error::aws("CopyObject", e));
        let out = match copied {
            Ok(out) => out,
            // Put back the digest of the state that is still current. With no current state there is no
            // digest Terraform would accept to put back (it is then ahead; a retried restore completes it).
            Err(copy) => {
                let step = "copying the chosen version back";
                let Some(bytes) = &current else {
                    return Err(failed(step, false)(copy).into());
                };
                return Err(match self.store.set_state_digest(self.bucket, &v.key, &md5_hex(bytes)).await {
                    Ok(()) => failed(step, true)(copy),
                    Err(rollback) => {
                        tracing::error!(key = %v.key, copy = %copy, "state restore: the copy failed and the previous digest could not be put back");
                        failed("putting the previous digest back after a failed copy", false)(rollback)
                    }
                }
                .into());
            }
        };
        Ok(RestoredState {
            new_version: out.version_id().unwrap_or_default().to_owned(),
        })
    }
}

fn md5_hex(bytes: &[u8]) -> String {
    hex::encode(Md5::digest(bytes))
}

impl S3StateArchive<'_> {
    /// The bytes of `key` (at `version`, or the current one); `None` when there is no such object.
    async fn read(&self, key: &str, version: Option<&str>) -> Result<Option<Vec<u8>>, Error> {
        let got = self
            .s3
            .get_object()
            .bucket(self.bucket)
            .key(key)
            .set_version_id(version.map(str::to_owned))
            .send()
            .await;
        let out = match got {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(Error::aws("GetObject", e)),
        };
        let bytes = out.body.collect().await.map_err(|e| Error::aws("GetObject", e))?;
        Ok(Some(bytes.into_bytes().to_vec()))
    }
}

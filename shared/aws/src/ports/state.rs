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

impl StateArchive for S3StateArchive<'_> {
    async fn state_versions(
        &self,
        tenant: &TenantId,
        cluster: &ClusterId,
    ) -> Result<Vec<StateVersion>, PortError> {
        let mut out = Vec::new();
        let (mut key_marker, mut version_marker) = (None, None);
        loop {
            let page = self
                .s3
                .list_object_versions()
                .bucket(self.bucket)
                .prefix(state_prefix(tenant, cluster))
                .set_key_marker(key_marker)
                .set_version_id_marker(version_marker)
                .send()
                .await
                .map_err(|e| Error::aws("ListObjectVersions", e))?;
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

    async fn restore_state_version(&self, v: &StateVersion) -> Result<RestoredState, PortError> {
        let out = self
            .s3
            .copy_object()
            .bucket(self.bucket)
            .key(&v.key)
            .copy_source(format!("{}/{}?versionId={}", self.bucket, v.key, v.version_id))
            .send()
            .await
            .map_err(|e| Error::aws("CopyObject", e))?;
        // Terraform checks the state's md5 against the digest it recorded at its last write; the restored
        // bytes become the state it must accept now.
        let restored = self
            .s3
            .get_object()
            .bucket(self.bucket)
            .key(&v.key)
            .set_version_id(out.version_id().map(str::to_owned))
            .send()
            .await
            .map_err(|e| Error::aws("GetObject", e))?
            .body
            .collect()
            .await
            .map_err(|e| Error::aws("GetObject", e))?
            .into_bytes();
        let digest = hex::encode(Md5::digest(&restored));
        self.store.set_state_digest(self.bucket, &v.key, &digest).await?;
        Ok(RestoredState {
            new_version: out.version_id().unwrap_or_default().to_owned(),
        })
    }
}

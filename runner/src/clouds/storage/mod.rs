//! Terraform state versions in the customer's own storage, reached natively with the run's credentials (the
//! api holds none): list a stage's state object's versions (metadata only) and copy one back on top.
//!
//! - **S3** (an AWS target's bucket) and **S3-compatible** stores (Spaces, Linode Object Storage):
//!   `ListObjectVersions`, `CopyObject` with `versionId`; for an AWS bucket also the digest Terraform keeps
//!   in the lock table (`<bucket>/<key>-md5`), set to the restored bytes' MD5 before the copy.
//! - **GCS**: the JSON API's `objects.list?versions=true` and `rewriteTo` with `sourceGeneration`, with the
//!   target service account's token (the preflight's STS exchange and `generateAccessToken`).
//! - **Azure Blob**: List Blobs with `include=versions` and Copy Blob from `…?versionid=`, with an Entra ID
//!   token for `https://storage.azure.com/.default`.
//!
//! No credential or token is ever in an error: each is scrubbed before it is returned.

mod azure_blob;
mod gcs;
mod s3;

use std::time::Duration;

use strato_domain::model::{AzureTarget, GcpTarget, ListedStateVersion};
use strato_domain::secret::Sensitive;

use super::CloudEndpoints;
use super::refusal::{PreflightError, Secrets};
use crate::credentials::EngineCredentials;

/// Where the state is, with what the run reaches it with.
pub enum StorageAccess {
    S3(S3Access),
    Gcs(GcsAccess),
    Azure(AzureAccess),
}

/// An S3 bucket (the customer's on AWS, or an S3-compatible store).
pub struct S3Access {
    /// The store's endpoint; `None`: AWS S3 in `region`.
    pub endpoint: Option<String>,
    pub path_style: bool,
    pub region: String,
    pub bucket: String,
    /// The cluster's folder (`tenants/<t>/clusters/<c>/`).
    pub prefix: String,
    pub creds: EngineCredentials,
    /// Terraform's lock table, whose digest item must match the state (AWS only).
    pub lock_table: Option<String>,
}

/// A GCS bucket.
pub struct GcsAccess {
    /// The JSON API's base (`https://storage.googleapis.com/storage/v1`, or an emulator's).
    pub api: String,
    pub bucket: String,
    pub prefix: String,
    pub target: GcpTarget,
    pub id_token: Sensitive,
}

/// An Azure storage account's container.
pub struct AzureAccess {
    /// `https://<account>.blob.core.windows.net`, or an emulator's.
    pub blob_endpoint: String,
    pub container: String,
    pub prefix: String,
    pub target: AzureTarget,
    pub id_token: Sensitive,
}

impl StorageAccess {
    /// The secrets any answer must be scrubbed of.
    fn secrets(&self) -> Secrets {
        let mut s = Secrets::default();
        match self {
            StorageAccess::S3(a) => {
                use secrecy::ExposeSecret;
                s.add(a.creds.secret_access_key.expose_secret());
                if let Some(t) = &a.creds.session_token {
                    s.add(t.expose_secret());
                }
            }
            StorageAccess::Gcs(a) => s.add(a.id_token.expose()),
            StorageAccess::Azure(a) => s.add(a.id_token.expose()),
        }
        s
    }
}

/// Every version of the state objects under the access's prefix, each key's newest first.
pub async fn list(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    base: &aws_config::SdkConfig,
    access: &StorageAccess,
    timeout: Duration,
) -> Result<Vec<ListedStateVersion>, PreflightError> {
    let mut secrets = access.secrets();
    let calls = async {
        match access {
            StorageAccess::S3(a) => s3::list(&s3::client(base, a), a).await,
            StorageAccess::Gcs(a) => gcs::list(http, ep, a, &mut secrets).await,
            StorageAccess::Azure(a) => azure_blob::list(http, ep, a, &mut secrets).await,
        }
    };
    let r = bounded(timeout, calls).await;
    scrubbed(&secrets, r)
}

/// Copies `version` of `key` back on top of it; the new current version's id.
pub async fn restore(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    base: &aws_config::SdkConfig,
    access: &StorageAccess,
    key: &str,
    version: &str,
    timeout: Duration,
) -> Result<String, PreflightError> {
    let mut secrets = access.secrets();
    let calls = async {
        match access {
            StorageAccess::S3(a) => s3::restore(base, a, key, version).await,
            StorageAccess::Gcs(a) => gcs::restore(http, ep, a, key, version, &mut secrets).await,
            StorageAccess::Azure(a) => azure_blob::restore(http, ep, a, key, version, &mut secrets).await,
        }
    };
    let r = bounded(timeout, calls).await;
    scrubbed(&secrets, r)
}

async fn bounded<T>(
    timeout: Duration,
    calls: impl Future<Output = Result<T, PreflightError>>,
) -> Result<T, PreflightError> {
    tokio::time::timeout(timeout, calls).await.unwrap_or_else(|_| {
        Err(PreflightError {
            what: format!("the state storage did not answer within {}s", timeout.as_secs()),
            fix: "retry the operation; if it persists check the runner's network path to the storage".into(),
        })
    })
}

fn scrubbed<T>(secrets: &Secrets, r: Result<T, PreflightError>) -> Result<T, PreflightError> {
    r.map_err(|e| PreflightError {
        what: secrets.scrub(e.what),
        fix: secrets.scrub(e.fix),
    })
}

/// Each key's versions newest first (by the storage's order key), keys in name order.
fn newest_first(mut v: Vec<(ListedStateVersion, i128)>) -> Vec<ListedStateVersion> {
    v.sort_by(|(a, an), (b, bn)| a.key.cmp(&b.key).then(bn.cmp(an)));
    v.into_iter().map(|(x, _)| x).collect()
}

/// A storage answer that is not success, as what/fix.
fn refused(what: &str, status: u16, body: &str, fix: &str) -> PreflightError {
    let body: String = body.chars().take(300).collect();
    PreflightError {
        what: format!("{what} answered HTTP {status}: {body}"),
        fix: fix.to_owned(),
    }
}

fn unreachable(what: &str, e: &reqwest::Error) -> PreflightError {
    PreflightError {
        what: format!("{what} could not be reached: {e}"),
        fix: "check the runner's outbound network to the storage; retry the operation".into(),
    }
}

#[cfg(test)]
mod tests {
    use secrecy::SecretString;

    use super::*;

    #[test]
    fn no_credential_of_the_storage_is_in_its_error() {
        let access = StorageAccess::S3(S3Access {
            endpoint: Some("https://ams3.digitaloceanspaces.com".into()),
            path_style: false,
            region: "us-east-1".into(),
            bucket: "acme-tfstate".into(),
            prefix: "tenants/t/clusters/c/".into(),
            creds: EngineCredentials {
                access_key_id: "DO00KEY".into(),
                secret_access_key: SecretString::from("spaces-secret/0123"),
                session_token: Some(SecretString::from("session-token-abc")),
            },
            lock_table: None,
        });
        let said = PreflightError {
            what: "signature for spaces-secret/0123 with session-token-abc refused".into(),
            fix: "rotate spaces-secret/0123".into(),
        };
        let e = scrubbed(&access.secrets(), Err::<(), _>(said)).unwrap_err();
        let text = format!("{} {}", e.what, e.fix);
        assert!(
            !text.contains("spaces-secret/0123") && !text.contains("session-token-abc"),
            "{text}"
        );
        assert!(text.contains("(redacted)"), "{text}");
    }
}

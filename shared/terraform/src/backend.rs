//! The backend block of a stage: where its state lives and how the engine locks it, on each cloud.
//!
//! Strato's own S3 bucket (with its DynamoDB lock table) stays the default ([`BackendConfig`]); a target
//! may keep the state in the customer's storage instead:
//!
//! | location | locking | versions |
//! |---|---|---|
//! | Google Cloud Storage (`gcs`) | a lock object created only if absent (generation precondition) | object versioning |
//! | Azure Blob Storage (`azurerm`) | a lease on the state blob | blob versioning / snapshots |
//! | S3-compatible storage (DigitalOcean Spaces, Linode Object Storage) | a lock file created only if absent (`use_lockfile`) | bucket versioning |
//!
//! No credential is ever in a block: a saved plan records the backend configuration, and the run that
//! applies an approved plan must use its own fresh credentials. The engine finds them in its environment
//! ([`StateBackend::credential_env`] names what it reads) or, for S3-compatible storage, in a profile of the
//! run's credentials file, as Strato's own S3 state does.

use serde_json::json;

use strato_domain::error::Error;

use crate::render::{BackendConfig, EngineVersion};

/// A stage's state backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateBackend {
    /// Amazon S3 with a DynamoDB lock table: Strato's bucket, or a customer's AWS bucket.
    S3(BackendConfig),
    /// Google Cloud Storage.
    Gcs(GcsBackend),
    /// Azure Blob Storage.
    AzureBlob(AzureBlobBackend),
    /// An S3-compatible object store without DynamoDB (DigitalOcean Spaces, Linode Object Storage).
    S3Compatible(S3CompatibleBackend),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcsBackend {
    pub bucket: String,
    /// The stage's folder: the engine keeps `<prefix>/default.tfstate` and `<prefix>/default.tflock`.
    pub prefix: String,
    /// The JSON API's base URL (`…/storage/v1/`) of an emulator; `None` on Google Cloud.
    pub endpoint: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AzureBlobBackend {
    pub storage_account: String,
    pub container: String,
    /// The state blob's name.
    pub key: String,
    /// The engine authenticates to Blob Storage with the run's federated identity (Entra ID tokens from
    /// Strato's OIDC token), never with an account key or a SAS.
    pub use_oidc: bool,
    /// The resource group of the storage account (the target's `state_resource_group`).
    pub resource_group: Option<String>,
    /// The host (`host:port`) of an emulated cloud's ARM metadata endpoint; `None` on Azure's public cloud.
    /// Its answer names Entra ID's and Resource Manager's endpoints, and the backend then asks Resource
    /// Manager where the account's blob endpoint is (`lookup_blob_endpoint`), because an emulator's is not
    /// `https://<account>.blob.<suffix>`.
    pub metadata_host: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3CompatibleBackend {
    /// The store's S3 endpoint, e.g. `https://nyc3.digitaloceanspaces.com` or
    /// `https://us-east-1.linodeobjects.com`.
    pub endpoint: String,
    pub bucket: String,
    pub key: String,
    /// The region the store's signatures name (Spaces and Linode accept their own region or `us-east-1`).
    pub region: String,
    /// Path-style addressing (emulators); the real stores use virtual-hosted buckets.
    pub path_style: bool,
    /// The profile of the run's credentials file with the store's access key.
    pub profile: Option<String>,
}

pub use crate::state_key::state_prefix;

/// Lock files (`use_lockfile`) in the S3 backend arrived in Terraform 1.10 (OpenTofu 1.8).
const LOCKFILE_ENGINE: (u32, u32) = (1, 10);
/// The GCS backend's `storage_custom_endpoint` and the azurerm backend's OIDC settings: Terraform 1.6.
const MODERN_BACKENDS_ENGINE: (u32, u32) = (1, 6);

impl StateBackend {
    /// What the backend is, for errors and notes ("Google Cloud Storage bucket tfstate-x").
    pub fn describe(&self) -> String {
        match self {
            StateBackend::S3(c) => format!("S3 bucket {}", c.bucket),
            StateBackend::Gcs(g) => format!("Google Cloud Storage bucket {}", g.bucket),
            StateBackend::AzureBlob(a) => format!(
                "Azure storage account {} container {}",
                a.storage_account, a.container
            ),
            StateBackend::S3Compatible(s) => format!("bucket {} at {}", s.bucket, s.endpoint),
        }
    }

    /// `strato_backend.tf.json`: a complete `terraform { backend "<type>" {} }` block for this engine, or why
    /// the engine cannot keep state there.
    pub fn tf_json(&self, engine: &EngineVersion) -> Result<String, Error> {
        let (kind, block) = match self {
            StateBackend::S3(c) => return c.tf_json(engine.dialect()),
            StateBackend::Gcs(g) => {
                self.needs(engine, MODERN_BACKENDS_ENGINE)?;
                let mut b = json!({ "bucket": g.bucket, "prefix": g.prefix });
                if let Some(ep) = &g.endpoint {
                    b["storage_custom_endpoint"] = json!(ep);
                }
                ("gcs", b)
            }
            StateBackend::AzureBlob(a) => {
                self.needs(engine, MODERN_BACKENDS_ENGINE)?;
                // Data-plane (Entra ID) authorization: no account key is read, no SAS is issued.
                let mut b = json!({
                    "storage_account_name": a.storage_account,
                    "container_name": a.container,
                    "key": a.key,
                    "use_azuread_auth": true,
                });
                if a.use_oidc {
                    b["use_oidc"] = json!(true);
                }
                if let Some(rg) = &a.resource_group {
                    b["resource_group_name"] = json!(rg);
                }
                if let Some(host) = &a.metadata_host {
                    b["metadata_host"] = json!(host);
                    b["lookup_blob_endpoint"] = json!(true);
                }
                ("azurerm", b)
            }
            StateBackend::S3Compatible(s) => {
                self.needs(engine, LOCKFILE_ENGINE)?;
                let mut b = json!({
                    "bucket": s.bucket,
                    "key": s.key,
                    "region": s.region,
                    "endpoints": { "s3": s.endpoint },
                    "use_path_style": s.path_style,
                    "use_lockfile": true,
                    // Not AWS: no STS to validate keys against, no IMDS, regions of the store's own, and
                    // no flexible checksums (the stores reject the SDK's new checksum headers).
                    "skip_credentials_validation": true,
                    "skip_requesting_account_id": true,
                    "skip_metadata_api_check": true,
                    "skip_region_validation": true,
                    "skip_s3_checksum": true,
                });
                if let Some(p) = &s.profile {
                    b["profile"] = json!(p);
                }
                ("s3", b)
            }
        };
        let doc = json!({ "terraform": { "backend": { kind: block } } });
        serde_json::to_string_pretty(&doc).map_err(|source| Error::Render {
            what: "backend configuration",
            source,
        })
    }

    /// The environment variables through which the engine's backend reads its credentials (the runner
    /// puts the values there, never in the block).
    pub fn credential_env(&self) -> &'static [&'static str] {
        match self {
            // The credentials file and profile: AWS_SHARED_CREDENTIALS_FILE + the block's `profile`.
            StateBackend::S3(_) | StateBackend::S3Compatible(_) => &["AWS_SHARED_CREDENTIALS_FILE"],
            // A credentials file (an `external_account` file for workload identity federation) or an
            // OAuth access token.
            StateBackend::Gcs(_) => &["GOOGLE_BACKEND_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN"],
            StateBackend::AzureBlob(_) => &[
                "ARM_TENANT_ID",
                "ARM_CLIENT_ID",
                "ARM_SUBSCRIPTION_ID",
                "ARM_OIDC_TOKEN_FILE_PATH",
            ],
        }
    }

    fn needs(&self, engine: &EngineVersion, (major, minor): (u32, u32)) -> Result<(), Error> {
        if (engine.major, engine.minor) >= (major, minor) {
            return Ok(());
        }
        Err(Error::Conflict(format!(
            "state in the {} needs Terraform {major}.{minor} or later; this run's engine is {}.{}.{} \
             (fix: run the template on a newer engine, or keep the state in Strato's bucket)",
            self.describe(),
            engine.major,
            engine.minor,
            engine.patch
        )))
    }
}

impl From<BackendConfig> for StateBackend {
    fn from(c: BackendConfig) -> Self {
        StateBackend::S3(c)
    }
}

#[cfg(test)]
mod tests;

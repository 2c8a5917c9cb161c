//! API tokens of clouds without federation (DigitalOcean, Linode), one per tenant and cloud: sealed with
//! Strato's data key under the encryption context `{tenant, purpose: cloud-token}`, bound by their associated
//! data to the tenant and the cloud, never shown again after they are set.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::TenantId;
use crate::model::CloudProvider;
use crate::ports::PortError;
use crate::sealed::{Envelope, KeyContext, Keys, aad, open, seal};
use crate::secret::Sensitive;

/// The KMS encryption context's `purpose` of a tenant's cloud API token.
pub const PURPOSE_CLOUD_TOKEN: &str = "cloud-token";

/// The clouds whose engine credentials are a tenant's API token.
pub const TOKEN_CLOUDS: [CloudProvider; 2] = [CloudProvider::Digitalocean, CloudProvider::Linode];

/// What a token must look like (its value is never echoed in an error).
pub const TOKEN_RULE: &str = "the cloud's API token: 20-512 printable ASCII characters without spaces \
     (DigitalOcean: dop_v1_…, Linode: 64 hexadecimal digits)";

/// A stored token: sealed, with who set it when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudToken {
    pub sealed: Envelope,
    #[serde(with = "crate::ts")]
    pub set_at: OffsetDateTime,
    pub set_by: String,
    /// The access key of the tenant's S3-compatible object storage (DigitalOcean Spaces, Linode Object
    /// Storage), sealed as a [`StorageKeys`]: the API token does not sign S3 requests, so a target that keeps
    /// its state there needs these too. `None`: none registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_keys: Option<Envelope>,
}

/// An S3-compatible store's access key pair (Spaces keys, Linode Object Storage keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageKeys {
    pub access_key_id: String,
    pub secret_access_key: Sensitive,
}

#[derive(Serialize, Deserialize)]
struct StorageKeysPlain {
    access_key_id: String,
    secret_access_key: String,
}

fn storage_aad(tenant: &TenantId, cloud: CloudProvider) -> String {
    aad(tenant, "tenant", &format!("cloud_tokens.{cloud}.storage_keys"))
}

/// What an access key id must look like (Spaces: 20 upper-case letters and digits; Linode: the same).
pub const ACCESS_KEY_RULE: &str = "the object storage access key id: 16-128 letters and digits";
/// What a secret access key must look like (never echoed).
pub const SECRET_KEY_RULE: &str =
    "the object storage secret key: 20-512 printable ASCII characters without spaces";

pub fn access_key_ok(id: &str) -> bool {
    (16..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Seals `keys_in` for `tenant`'s `cloud` (same key context as its token, associated data of its own).
pub async fn seal_storage_keys(
    keys: &impl Keys,
    tenant: &TenantId,
    cloud: CloudProvider,
    pair: &StorageKeys,
) -> Result<Envelope, PortError> {
    let ctx = KeyContext::new(tenant, PURPOSE_CLOUD_TOKEN);
    let plain = serde_json::to_vec(&StorageKeysPlain {
        access_key_id: pair.access_key_id.clone(),
        secret_access_key: pair.secret_access_key.expose().to_owned(),
    })
    .map_err(|e| PortError::Corrupt {
        what: "storage keys".into(),
        reason: e.to_string(),
    })?;
    seal(keys, &ctx, &storage_aad(tenant, cloud), &plain).await
}

/// Opens `tenant`'s storage keys for `cloud` (the runner's, for the state backend's credentials profile).
pub async fn open_storage_keys(
    keys: &impl Keys,
    tenant: &TenantId,
    cloud: CloudProvider,
    sealed: &Envelope,
) -> Result<StorageKeys, PortError> {
    use secrecy::ExposeSecret;
    let ctx = KeyContext::new(tenant, PURPOSE_CLOUD_TOKEN);
    let plain = open(keys, sealed, &ctx, &storage_aad(tenant, cloud)).await?;
    let p: StorageKeysPlain =
        serde_json::from_slice(plain.expose_secret()).map_err(|_| PortError::Corrupt {
            what: "storage keys".into(),
            reason: "not the sealed key pair".into(),
        })?;
    Ok(StorageKeys {
        access_key_id: p.access_key_id,
        secret_access_key: Sensitive::new(p.secret_access_key),
    })
}

fn token_aad(tenant: &TenantId, cloud: CloudProvider) -> String {
    aad(tenant, "tenant", &format!("cloud_tokens.{cloud}"))
}

/// Whether `token` has the form of an API token (not whether the cloud accepts it: the preflight says).
pub fn token_ok(token: &str) -> bool {
    (20..=512).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_graphic())
}

/// Seals `token` for `tenant`'s `cloud`.
pub async fn seal_cloud_token(
    keys: &impl Keys,
    tenant: &TenantId,
    cloud: CloudProvider,
    token: &Sensitive,
) -> Result<Envelope, PortError> {
    let ctx = KeyContext::new(tenant, PURPOSE_CLOUD_TOKEN);
    seal(keys, &ctx, &token_aad(tenant, cloud), token.expose().as_bytes()).await
}

/// Opens `tenant`'s token for `cloud` (the runner's, when it hands the engine its provider variable).
pub async fn open_cloud_token(
    keys: &impl Keys,
    tenant: &TenantId,
    cloud: CloudProvider,
    sealed: &Envelope,
) -> Result<Sensitive, PortError> {
    use secrecy::ExposeSecret;
    let ctx = KeyContext::new(tenant, PURPOSE_CLOUD_TOKEN);
    let plain = open(keys, sealed, &ctx, &token_aad(tenant, cloud)).await?;
    let s = String::from_utf8(plain.expose_secret().clone()).map_err(|_| PortError::Corrupt {
        what: "cloud token".into(),
        reason: "not UTF-8".into(),
    })?;
    Ok(Sensitive::new(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sealed::FakeKeys;

    #[tokio::test]
    async fn a_cloud_token_opens_only_for_its_tenant_and_cloud() {
        let keys = FakeKeys::default();
        let acme: TenantId = "acme".parse().unwrap();
        let token = Sensitive::new("dop_v1_0123456789abcdef0123456789abcdef");
        let env = seal_cloud_token(&keys, &acme, CloudProvider::Digitalocean, &token)
            .await
            .unwrap();
        assert!(!serde_json::to_string(&env).unwrap().contains(token.expose()));
        let back = open_cloud_token(&keys, &acme, CloudProvider::Digitalocean, &env)
            .await
            .unwrap();
        assert_eq!(back, token);
        assert!(
            open_cloud_token(&keys, &acme, CloudProvider::Linode, &env)
                .await
                .is_err()
        );
        let globex: TenantId = "globex".parse().unwrap();
        assert!(
            open_cloud_token(&keys, &globex, CloudProvider::Digitalocean, &env)
                .await
                .is_err()
        );
        let pair = StorageKeys {
            access_key_id: "DO00ABCDEFGHIJKLMNOP".into(),
            secret_access_key: Sensitive::new("s3cr3t/ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        };
        let sealed = seal_storage_keys(&keys, &acme, CloudProvider::Digitalocean, &pair)
            .await
            .unwrap();
        assert!(!serde_json::to_string(&sealed).unwrap().contains("s3cr3t"));
        let back = open_storage_keys(&keys, &acme, CloudProvider::Digitalocean, &sealed)
            .await
            .unwrap();
        assert_eq!(back, pair);
        // Not interchangeable with the token's envelope, nor another cloud's.
        assert!(
            open_storage_keys(&keys, &acme, CloudProvider::Digitalocean, &env)
                .await
                .is_err()
        );
        assert!(
            open_storage_keys(&keys, &acme, CloudProvider::Linode, &sealed)
                .await
                .is_err()
        );
        assert!(access_key_ok(&pair.access_key_id));
        assert!(!access_key_ok("short"));
        assert!(token_ok(token.expose()));
        assert!(!token_ok("short"));
        assert!(!token_ok("has a space in it 0123456789"));
    }
}

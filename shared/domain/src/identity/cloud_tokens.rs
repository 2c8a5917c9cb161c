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
        assert!(token_ok(token.expose()));
        assert!(!token_ok("short"));
        assert!(!token_ok("has a space in it 0123456789"));
    }
}

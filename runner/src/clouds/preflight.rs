//! The preflight of a cloud other than AWS: the cheapest call each cloud documents that proves the run's
//! credentials work, before any engine starts (providers given bad credentials tend to hang or fail late).
//!
//! - **GCP**: Google STS exchanges the run's identity token for a federated token (the workload identity pool
//!   provider trusts Strato's issuer, the token's audience and its attribute condition), then
//!   `generateAccessToken` for the target's service account with it (the pool's principals may impersonate it).
//! - **Azure**: Entra ID's token endpoint takes the run's token as a client assertion for the target's app
//!   (a federated credential on it matches the token's issuer, subject and audience), then Azure Resource
//!   Manager reads the target's subscription with the access token (the app has a role there).
//! - **DigitalOcean**: `GET /v2/account` with the tenant's API token. **Linode**: `GET /v4/profile`.
//!
//! One hard timeout bounds the whole check, every call included. A refusal becomes what happened and the fix,
//! named from the cloud's documented error codes. No token (the run's, the tenant's, or one a cloud handed out
//! during the check) is ever in the text: every answer is scrubbed of them before it is returned.

use std::time::Duration;

use strato_domain::model::{AzureTarget, GcpTarget};

use super::CloudEndpoints;
pub use super::refusal::PreflightError;
use super::refusal::Secrets;

/// What to check, with the credentials the engine will get.
#[derive(Clone, Copy)]
pub enum CloudCheck<'a> {
    /// The run's identity token for the provider's audience.
    Gcp {
        target: &'a GcpTarget,
        id_token: &'a str,
    },
    /// The run's identity token for Azure's audience.
    Azure {
        target: &'a AzureTarget,
        id_token: &'a str,
    },
    /// The tenant's API token.
    Digitalocean {
        token: &'a str,
    },
    Linode {
        token: &'a str,
    },
}

impl std::fmt::Debug for CloudCheck<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        write!(f, "CloudCheck({})", self.cloud())
    }
}

impl CloudCheck<'_> {
    /// The cloud's name as the tenant reads it.
    pub fn cloud(&self) -> &'static str {
        match self {
            CloudCheck::Gcp { .. } => "GCP",
            CloudCheck::Azure { .. } => "Azure",
            CloudCheck::Digitalocean { .. } => "DigitalOcean",
            CloudCheck::Linode { .. } => "Linode",
        }
    }

    fn secret(&self) -> &str {
        match self {
            CloudCheck::Gcp { id_token, .. } | CloudCheck::Azure { id_token, .. } => id_token,
            CloudCheck::Digitalocean { token } | CloudCheck::Linode { token } => token,
        }
    }
}

/// Proves `check`'s credentials with its cloud's identity call(s), all within `timeout`: `Ok` says what was
/// proven (e.g. the DigitalOcean account), `Err` what failed and the fix.
pub async fn check(
    http: &reqwest::Client,
    endpoints: &CloudEndpoints,
    check: CloudCheck<'_>,
    timeout: Duration,
) -> Result<String, PreflightError> {
    let mut secrets = Secrets::default();
    secrets.add(check.secret());
    let calls = async {
        match check {
            CloudCheck::Gcp { target, id_token } => {
                super::gcp::check(http, endpoints, target, id_token, &mut secrets).await
            }
            CloudCheck::Azure { target, id_token } => {
                super::azure::check(http, endpoints, target, id_token, &mut secrets).await
            }
            CloudCheck::Digitalocean { token } => super::tokens::digitalocean(http, endpoints, token).await,
            CloudCheck::Linode { token } => super::tokens::linode(http, endpoints, token).await,
        }
    };
    let result = tokio::time::timeout(timeout, calls).await.unwrap_or_else(|_| {
        Err(PreflightError {
            what: format!(
                "the {} endpoint did not answer within {}",
                check.cloud(),
                seconds(timeout)
            ),
            fix: format!(
                "the credential check is bounded so a hanging provider cannot stall the run; retry the \
                 operation, and if it persists check the runner's network path to {}'s API \
                 (STRATO_PREFLIGHT_TIMEOUT_SECS sets the bound)",
                check.cloud()
            ),
        })
    });
    match result {
        Ok(proven) => Ok(secrets.scrub(proven)),
        Err(e) => Err(PreflightError {
            what: secrets.scrub(e.what),
            fix: secrets.scrub(e.fix),
        }),
    }
}

/// `10s`, `0.2s`.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

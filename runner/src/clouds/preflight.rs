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

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use strato_domain::model::{AzureTarget, GcpTarget};

use super::CloudEndpoints;

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

/// Why the check failed, for the tenant: what happened and how to fix it (the `what`/`fix` of a failed step).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightError {
    pub what: String,
    pub fix: String,
}

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; fix: {}", self.what, self.fix)
    }
}

impl std::error::Error for PreflightError {}

/// Tokens met during one check (the run's or tenant's, and those the cloud handed out), scrubbed from every
/// text the check returns.
#[derive(Default)]
pub(super) struct Secrets(Vec<String>);

impl Secrets {
    pub fn add(&mut self, s: &str) {
        if !s.is_empty() {
            self.0.push(s.to_owned());
        }
    }

    fn scrub(&self, text: String) -> String {
        self.0.iter().fold(text, |t, s| {
            if t.contains(s.as_str()) {
                t.replace(s.as_str(), "(redacted)")
            } else {
                t
            }
        })
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

/// The claims of the run's token a fix names (who the cloud was shown), read without verifying: the token is
/// Strato's own, and these are no secret (the tenant pastes them into its cloud's trust settings).
#[derive(Debug, Default)]
pub(super) struct Shown {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub tenant: String,
}

impl Shown {
    pub fn of(token: &str) -> Self {
        let claims = token
            .split('.')
            .nth(1)
            .and_then(|p| B64URL.decode(p).ok())
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .unwrap_or_default();
        let s = |k: &str| {
            claims
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("(not in the token)")
                .to_owned()
        };
        Self {
            iss: s("iss"),
            sub: s("sub"),
            aud: s("aud"),
            tenant: s("strato_tenant"),
        }
    }
}

/// A refusal the mapping does not know, said as the cloud said it.
pub(super) fn unexpected(what: &str, a: &super::http::Answer, detail: &str, fix: &str) -> PreflightError {
    let detail = if detail.is_empty() {
        a.text.as_str()
    } else {
        detail
    };
    PreflightError {
        what: format!("{what} answered HTTP {}: {}", a.status, detail.trim()),
        fix: fix.to_owned(),
    }
}

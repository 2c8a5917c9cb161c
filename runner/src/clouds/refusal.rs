//! What a cloud's refusal becomes for the tenant: the error (what happened and the fix), the tokens scrubbed
//! from its text, and the claims of the run's token a fix names. Every cloud's check and the HTTP reader
//! build on it, and it on none of them.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;

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

    pub fn scrub(&self, text: String) -> String {
        self.0.iter().fold(text, |t, s| {
            if t.contains(s.as_str()) {
                t.replace(s.as_str(), "(redacted)")
            } else {
                t
            }
        })
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

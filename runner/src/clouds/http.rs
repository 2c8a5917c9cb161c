//! The preflight's HTTP: one client on the AWS SDK's TLS stack, and answers read as status + JSON.

use std::sync::Arc;

use serde_json::Value;

use super::refusal::PreflightError;

/// An HTTPS client on rustls with aws-lc-rs (the AWS SDK's stack: no second TLS library in the runner) and the
/// system's root certificates. Redirects are not followed: an identity endpoint answers directly, and a bearer
/// token is never sent on to another address.
pub fn client() -> Result<reqwest::Client, String> {
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates leave the store short; a cloud's endpoint then fails its TLS handshake,
    // which the preflight reports, so nothing is lost by going on.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    let tls =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS configuration: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("HTTP client: {}", chain(&e)))
}

/// One answer of an identity endpoint.
pub(super) struct Answer {
    pub status: u16,
    /// The body as JSON; `Null` when it is not JSON.
    pub json: Value,
    /// The body's start, for an answer that is not the documented JSON.
    pub text: String,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A string field of the body, or "".
    pub fn str(&self, pointer: &str) -> &str {
        self.json.pointer(pointer).and_then(Value::as_str).unwrap_or("")
    }
}

/// Sends `req`; a failure to reach `what` at all (DNS, TLS, connection) is the error.
pub(super) async fn send(req: reqwest::RequestBuilder, what: &str) -> Result<Answer, PreflightError> {
    let resp = req.send().await.map_err(|e| PreflightError {
        what: format!("{what} could not be reached: {}", chain(&e)),
        fix: "check the runner's outbound network (NAT, proxy, DNS) to the cloud's endpoint; nothing about the \
              target was learned"
            .into(),
    })?;
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap_or_default();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let text: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
    Ok(Answer { status, json, text })
}

/// An error with its sources, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// A refusal the mapping does not know, said as the cloud said it.
pub(super) fn unexpected(what: &str, a: &Answer, detail: &str, fix: &str) -> PreflightError {
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

//! The control plane's `/v1/agent` endpoints over HTTPS.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::RETRY_AFTER;
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use strato_agent_wire::{Ack, Registered, Report, Rotated};

use crate::AgentError;
use crate::ports::{CallError, ControlPlane};

/// An HTTPS client on rustls with aws-lc-rs (the TLS stack kube-rs uses here too) and the system's roots.
/// Redirects are not followed: a bearer credential is never sent on to another address.
pub fn client() -> Result<reqwest::Client, AgentError> {
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates leave the store short; the control plane's TLS handshake then fails
    // and is reported as unreachable, with the fix, on every attempt.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    let tls =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| AgentError::Http(format!("TLS configuration: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| AgentError::Http(e.to_string()))
}

pub struct HttpControlPlane {
    client: reqwest::Client,
    /// Without a trailing `/`.
    base: String,
}

impl HttpControlPlane {
    pub fn new(client: reqwest::Client, base_url: &str) -> Self {
        HttpControlPlane {
            client,
            base: base_url.trim_end_matches('/').to_string(),
        }
    }

    async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        bearer: &SecretString,
        report: Option<&Report>,
    ) -> Result<T, CallError> {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(bearer.expose_secret());
        req = match report {
            Some(r) => req.json(r),
            None => req.header(reqwest::header::CONTENT_LENGTH, "0"),
        };
        // The error's text names the URL, never the header.
        let res = req
            .send()
            .await
            .map_err(|e| CallError::Unreachable(describe(&e)))?;
        let status = res.status();
        let retry_after = res
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        if status.is_success() {
            return res.json::<T>().await.map_err(|e| CallError::Rejected {
                status: status.as_u16(),
                detail: format!("unreadable answer: {e}"),
            });
        }
        let body = res.text().await.unwrap_or_default();
        Err(match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => CallError::Refused,
            StatusCode::TOO_MANY_REQUESTS => CallError::TooMany { retry_after },
            s if s.is_server_error() => {
                CallError::Unreachable(format!("{} from the control plane", s.as_u16()))
            }
            s => CallError::Rejected {
                status: s.as_u16(),
                detail: body.chars().take(300).collect(),
            },
        })
    }
}

fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl ControlPlane for HttpControlPlane {
    async fn register(&self, token: &SecretString, report: &Report) -> Result<Registered, CallError> {
        self.post("/v1/agent/register", token, Some(report)).await
    }

    async fn heartbeat(&self, credential: &SecretString, report: &Report) -> Result<Ack, CallError> {
        self.post("/v1/agent/heartbeat", credential, Some(report)).await
    }

    async fn rotate(&self, credential: &SecretString) -> Result<Rotated, CallError> {
        self.post("/v1/agent/credential", credential, None).await
    }
}

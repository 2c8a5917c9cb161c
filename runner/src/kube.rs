//! A new cluster's Kubernetes API, as the runner reaches it to install the cluster agent: server-side apply
//! of one object at a time ([`KubeApi`], the port), over HTTPS that trusts only the cluster's own CA
//! ([`HttpKube`], the adapter), with bounded request timeouts. What to apply is [`manifests`]; when, with
//! which token and how often to try again is the lifecycle's (`lifecycle/agent_install.rs`).

pub mod manifests;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;

/// The field manager the runner applies as: a later apply by the runner owns the same fields, and the
/// agent's own writes (its credential, manager `strato-agent`) are left alone.
pub const FIELD_MANAGER: &str = "strato-runner";

/// Where a cluster's API is and the CA its certificate must chain to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeCluster {
    /// `https://…`, without a trailing path.
    pub endpoint: String,
    /// The CA certificate(s), PEM.
    pub ca_pem: Vec<u8>,
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The object did not exist before (201).
    pub created: bool,
    /// The object's resource version after the apply (unchanged by a no-op apply).
    pub resource_version: Option<String>,
}

/// Why an apply did not happen: an outcome the lifecycle decides on (wait, or fail with which fix), as
/// [`crate::trust::AssumeFailure`] is, not one of the crate's errors ([`crate::RunnerError`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeError {
    /// No answer: DNS, connection, timeout. A new cluster's API often is not reachable yet.
    Unreachable(String),
    /// The server's certificate does not chain to the cluster's CA (or the CA is unusable).
    Tls(String),
    /// The API answered with an error status.
    Status {
        code: u16,
        reason: String,
        message: String,
    },
}

impl std::fmt::Display for KubeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KubeError::Unreachable(e) => write!(f, "no answer: {e}"),
            KubeError::Tls(e) => write!(f, "TLS: {e}"),
            KubeError::Status {
                code,
                reason,
                message,
            } => write!(f, "{code} {reason}: {message}"),
        }
    }
}

impl KubeError {
    /// Worth another try a little later: no answer yet, or the API server overloaded or starting.
    pub fn is_transient(&self) -> bool {
        match self {
            KubeError::Unreachable(_) => true,
            KubeError::Tls(_) => false,
            KubeError::Status { code, .. } => *code == 429 || *code >= 500,
        }
    }
}

/// A cluster's API: server-side apply (field manager [`FIELD_MANAGER`], forced) of `object` at `path`
/// (the object's URL path, see [`manifests::object_path`]) with bearer `token`.
pub trait KubeApi: Clone + Send + Sync + 'static {
    fn apply(
        &self,
        cluster: &KubeCluster,
        token: &str,
        path: &str,
        object: &Value,
    ) -> impl Future<Output = Result<Applied, KubeError>> + Send;
}

/// [`KubeApi`] over HTTPS (rustls on aws-lc-rs, the runner's one TLS stack), trusting only the cluster's
/// CA: neither the system's roots nor any other CA vouch for a cluster's API. Redirects are not followed (a
/// bearer token is never sent on to another address).
#[derive(Debug, Clone)]
pub struct HttpKube {
    /// Each request's limit, connecting included.
    pub timeout: Duration,
}

impl HttpKube {
    fn client(&self, cluster: &KubeCluster) -> Result<reqwest::Client, KubeError> {
        if !cluster.endpoint.starts_with("https://") {
            return Err(KubeError::Tls(format!(
                "the endpoint {} is not https://",
                cluster.endpoint
            )));
        }
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&cluster.ca_pem) {
            let cert = cert.map_err(|e| KubeError::Tls(format!("the CA is not PEM: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| KubeError::Tls(format!("the CA is not a usable certificate: {e}")))?;
        }
        if roots.is_empty() {
            return Err(KubeError::Tls("the CA holds no certificate".into()));
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| KubeError::Tls(format!("TLS configuration: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.timeout)
            .connect_timeout(self.timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| KubeError::Tls(format!("HTTP client: {}", chain(&e))))
    }
}

impl KubeApi for HttpKube {
    async fn apply(
        &self,
        cluster: &KubeCluster,
        token: &str,
        path: &str,
        object: &Value,
    ) -> Result<Applied, KubeError> {
        let client = self.client(cluster)?;
        let url = format!("{}{path}", cluster.endpoint.trim_end_matches('/'));
        let resp = client
            .patch(url)
            .bearer_auth(token)
            // JSON is YAML: the apply body may be either.
            .header("content-type", "application/apply-patch+yaml")
            .header("accept", "application/json")
            .body(object.to_string())
            .send()
            .await
            .map_err(|e| {
                let text = chain(&e);
                // A certificate the CA does not vouch for will not change by waiting.
                if text.contains("invalid peer certificate") {
                    KubeError::Tls(text)
                } else {
                    KubeError::Unreachable(text)
                }
            })?;
        let code = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if (200..300).contains(&code) {
            return Ok(Applied {
                created: code == 201,
                resource_version: body["metadata"]["resourceVersion"].as_str().map(str::to_owned),
            });
        }
        let text = |k: &str| {
            body[k]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(400)
                .collect::<String>()
        };
        Err(KubeError::Status {
            code,
            reason: text("reason"),
            message: text("message"),
        })
    }
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

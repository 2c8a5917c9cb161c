//! Strato's HTTP API over reqwest. Every mutating request carries an `Idempotency-Key`, reused when the
//! request is retried after a dropped connection or a 429/502/503/504, so a retry never queues a second
//! operation. Answers are JSON values: the CLI prints what the API returns (`-o json` passes it through)
//! and reads the few fields it acts on by their documented names.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::error::{CliError, Problem};

const ATTEMPTS: usize = 4;

#[derive(Debug, Clone)]
pub struct Api {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Api {
    pub fn new(base: &str, token: Option<String>) -> Result<Self, CliError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("strato-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| CliError::Usage(format!("cannot set up HTTPS: {e}")))?;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            token,
            http,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn get(&self, path: &str) -> Result<Value, CliError> {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.call(Method::PATCH, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, CliError> {
        self.call(Method::DELETE, path, None).await
    }

    /// Publishes a packed template version through the operator's route (an operator token): the API
    /// checks the bundle as publishing does and answers the version with its standing. A version already
    /// published is a 409 whatever its content (versions are immutable).
    pub async fn publish_template(
        &self,
        bundle: &strato_terraform::bundle::Bundle,
    ) -> Result<Value, CliError> {
        use base64::Engine;
        let body = serde_json::json!({
            "bundle": base64::engine::general_purpose::STANDARD.encode(&bundle.bytes)
        });
        let (name, version) = (bundle.template.name(), bundle.template.version());
        let path = format!("/v1/admin/templates/{}/versions/{}", seg(name), seg(version));
        self.post(&path, &body).await
    }

    /// A WebSocket ticket for live logs (`POST /v1/ws-tickets`): the WebSocket API takes tickets only.
    pub async fn ws_ticket(&self) -> Result<String, CliError> {
        let r = self
            .post("/v1/ws-tickets", &Value::Object(Default::default()))
            .await?;
        r["token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| unexpected("POST", "/v1/ws-tickets", 201, &r))
    }

    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, CliError> {
        // One key for every attempt: a retried create is the same request to the API.
        let key = (method != Method::GET).then(|| uuid::Uuid::new_v4().to_string());
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_times(ATTEMPTS - 1);
        (|| self.attempt(&method, path, body, key.as_deref()))
            .retry(backoff)
            .when(transient)
            .await
    }

    async fn attempt(
        &self,
        method: &Method,
        path: &str,
        body: Option<&Value>,
        key: Option<&str>,
    ) -> Result<Value, CliError> {
        let url = format!("{}{path}", self.base);
        let unreachable = |source| CliError::Unreachable {
            method: method.to_string(),
            url: url.clone(),
            source,
        };
        let mut req = self.http.request(method.clone(), &url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(k) = key {
            req = req.header("Idempotency-Key", k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(unreachable)?;
        let status = resp.status();
        let text = resp.text().await.map_err(unreachable)?;
        let value: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text.clone()))
        };
        if status.is_success() {
            return Ok(value);
        }
        Err(problem(status, method, path, value))
    }
}

/// Worth another attempt: the request never got an answer, or the answer says "later" (429, 502–504).
fn transient(e: &CliError) -> bool {
    match e {
        CliError::Unreachable { source, .. } => {
            source.is_connect() || source.is_timeout() || source.is_request()
        }
        CliError::Api(p) => matches!(p.status, 429 | 502 | 503 | 504),
        _ => false,
    }
}

/// A problem+json answer as [`CliError::Api`]; any other error body becomes a problem whose detail is the
/// body, so the exit code still follows the status.
fn problem(status: StatusCode, method: &Method, path: &str, body: Value) -> CliError {
    let parsed = serde_json::from_value::<Problem>(body.clone())
        .ok()
        .filter(|p| !p.title.is_empty() || !p.detail.is_empty());
    let mut p = parsed.unwrap_or_else(|| Problem {
        kind: String::new(),
        title: status.canonical_reason().unwrap_or("error").to_owned(),
        status: status.as_u16(),
        detail: match &body {
            Value::String(s) => s.chars().take(500).collect(),
            Value::Null => format!("{method} {path} answered {status} with no body"),
            other => other.to_string(),
        },
        errors: Vec::new(),
        request_id: None,
    });
    // The HTTP status decides the exit code, whatever the body repeats.
    p.status = status.as_u16();
    CliError::Api(Box::new(p))
}

pub(crate) fn unexpected(method: &str, path: &str, status: u16, body: &Value) -> CliError {
    CliError::Unexpected {
        method: method.to_owned(),
        path: path.to_owned(),
        status,
        body: body.to_string(),
    }
}

/// `s` as one URL path segment (ids and names are plain, but a user may type anything; `..` must not
/// climb out of the resource either).
pub fn seg(s: &str) -> String {
    let dots_only = s.bytes().all(|b| b == b'.');
    s.bytes()
        .map(|b| match b {
            b'.' if dots_only => "%2E".to_owned(),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_json_error_body_still_gives_the_status_its_exit_code() {
        let e = problem(
            StatusCode::UNAUTHORIZED,
            &Method::GET,
            "/v1/clusters",
            Value::String("Unauthorized".into()),
        );
        assert_eq!(e.exit_code(), crate::error::exit::AUTH);
        assert!(e.render(false).contains("Unauthorized"));
    }

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(seg("cl-1"), "cl-1");
        assert_eq!(seg("../x y"), "..%2Fx%20y");
        assert_eq!(seg(".."), "%2E%2E");
    }
}

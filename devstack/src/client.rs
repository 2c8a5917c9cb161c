//! What a user of the stack calls it with: the HTTP API over reqwest, and dev tokens. The demo and the
//! end-to-end tests use this, so they exercise the stack exactly as a person with `curl` would.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;
pub use strato_api::timeline::{Timeline, format_lines as timeline_lines};
use strato_domain::messages::LogLine;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{method} {url}: {source}")]
    Http {
        method: Method,
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{what} did not happen within {secs} s; last seen: {last}")]
    Timeout { what: String, secs: u64, last: String },
    #[error("{method} {path} answered {status}: {body}")]
    Unexpected {
        method: Method,
        path: String,
        status: u16,
        body: String,
    },
}

/// One answer: status, headers, and the body parsed as JSON (`Null` when empty or not JSON).
#[derive(Debug, Clone)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl ApiResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

impl Client {
    pub fn new(base_url: &str) -> Self {
        Self {
            base: base_url.trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap_or_default(),
            token: None,
        }
    }

    /// The same client sending `Authorization: Bearer <token>`.
    pub fn with_token(&self, token: impl Into<String>) -> Self {
        Self {
            token: Some(token.into()),
            ..self.clone()
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<ApiResponse, ClientError> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.request(method.clone(), &url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let err = |source| ClientError::Http {
            method: method.clone(),
            url: url.clone(),
            source,
        };
        let resp = req.send().await.map_err(err)?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.map_err(err)?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(ApiResponse {
            status,
            headers,
            body,
            text,
        })
    }

    pub async fn get(&self, path: &str) -> Result<ApiResponse, ClientError> {
        self.request(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<ApiResponse, ClientError> {
        self.request(Method::POST, path, Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> Result<ApiResponse, ClientError> {
        self.request(Method::PATCH, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Result<ApiResponse, ClientError> {
        self.request(Method::DELETE, path, None).await
    }

    /// `POST /v1/clusters`, expecting 202; returns (cluster id, operation id, the whole answer).
    pub async fn create_cluster(&self, spec: &Value) -> Result<(String, String, ApiResponse), ClientError> {
        let r = self.post("/v1/clusters", spec).await?;
        expect(&r, Method::POST, "/v1/clusters", 202)?;
        let cluster = r.body["cluster"]["id"].as_str().unwrap_or_default().to_owned();
        let op = r.body["operation"]["id"].as_str().unwrap_or_default().to_owned();
        Ok((cluster, op, r))
    }

    /// `GET /v1/operations/{id}/timeline`, expecting 200; [`timeline_lines`] formats it for a terminal.
    pub async fn operation_timeline(&self, operation_id: &str) -> Result<Timeline, ClientError> {
        let path = format!("/v1/operations/{operation_id}/timeline");
        let r = self.get(&path).await?;
        expect(&r, Method::GET, &path, 200)?;
        serde_json::from_value(r.body).map_err(|e| ClientError::Unexpected {
            method: Method::GET,
            path,
            status: r.status,
            body: format!("not a timeline ({e}): {}", r.text),
        })
    }

    /// Polls `GET /v1/operations/{id}` until the operation is succeeded, failed or cancelled.
    pub async fn wait_operation(&self, operation_id: &str, timeout: Duration) -> Result<Value, ClientError> {
        let path = format!("/v1/operations/{operation_id}");
        self.poll(
            &path,
            timeout,
            &format!("operation {operation_id} finishing"),
            |b| matches!(b["status"].as_str(), Some("succeeded" | "failed" | "cancelled")),
        )
        .await
    }

    /// Polls `GET /v1/clusters/{id}` until its state is one of `states`.
    pub async fn wait_cluster_state(
        &self,
        cluster_id: &str,
        states: &[&str],
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let path = format!("/v1/clusters/{cluster_id}");
        self.poll(
            &path,
            timeout,
            &format!("cluster {cluster_id} reaching {states:?}"),
            |b| b["state"].as_str().is_some_and(|s| states.contains(&s)),
        )
        .await
    }

    async fn poll(
        &self,
        path: &str,
        timeout: Duration,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Result<Value, ClientError> {
        let start = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            let r = self.get(path).await?;
            expect(&r, Method::GET, path, 200)?;
            if done(&r.body) {
                return Ok(r.body);
            }
            if start.elapsed() > timeout {
                return Err(ClientError::Timeout {
                    what: what.to_owned(),
                    secs: timeout.as_secs(),
                    last: r.text,
                });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(1));
        }
    }
}

fn expect(r: &ApiResponse, method: Method, path: &str, status: u16) -> Result<(), ClientError> {
    if r.status == status {
        Ok(())
    } else {
        Err(ClientError::Unexpected {
            method,
            path: path.to_owned(),
            status: r.status,
            body: r.text.clone(),
        })
    }
}

/// Why the demo did not complete.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{0}")]
    Failed(String),
}

/// What a watched operation's stream delivered.
#[derive(Debug, Default)]
pub struct Watched {
    /// Log lines by seq (duplicates from the replay/live overlap collapse here).
    pub lines: std::collections::BTreeMap<u64, LogLine>,
    /// `(cluster state, operation status, message)` of every status frame, in arrival order.
    pub states: Vec<(String, String, Option<String>)>,
    pub final_status: Option<String>,
    pub last_seq: u64,
}

impl Watched {
    /// Every line from 1 to `last_seq` arrived.
    pub fn complete(&self) -> bool {
        self.lines.len() as u64 == self.last_seq && self.lines.keys().copied().eq(1..=self.last_seq)
    }
}

/// Follows an operation over the WebSocket API to its `end` frame with the `strato` CLI's follower
/// (tickets from `client`, reconnects and gap repair by seq), calling `on_line` for each line in seq order
/// and `on_status` for each status frame.
pub async fn watch_operation(
    client: &Client,
    ws_url: &str,
    operation_id: &str,
    timeout: Duration,
    mut on_line: impl FnMut(&LogLine),
    mut on_status: impl FnMut(&str, &str, Option<&str>),
) -> Result<Watched, DemoError> {
    use strato_cli::follow::{Event, Options, follow};
    let api = strato_cli::api::Api::new(&client.base, client.token.clone())
        .map_err(|e| DemoError::Failed(e.to_string()))?;
    let mut out = Watched::default();
    let opts = Options {
        timeout: Some(timeout),
        ..Options::default()
    };
    let outcome = follow(&api, ws_url, operation_id, opts, |e| match e {
        Event::Line(l) => {
            on_line(l);
            out.lines.insert(l.seq, l.clone());
        }
        Event::Status {
            cluster_state,
            operation_status,
            detail,
        } => {
            on_status(&cluster_state, &operation_status, detail.as_deref());
            out.states.push((cluster_state, operation_status, detail));
        }
        Event::Reconnecting { .. } => {}
    })
    .await
    .map_err(|e| DemoError::Failed(format!("following {operation_id} over the WebSocket: {e}")))?;
    out.final_status = outcome.final_status;
    out.last_seq = outcome.last_seq;
    Ok(out)
}

pub use crate::demo::{DemoOptions, demo};

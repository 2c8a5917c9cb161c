//! A Lambda Runtime API emulator, to run a function's real binary (`strato-api`, `strato-dispatcher`,
//! `strato-status`, …) exactly as Lambda does: the binary polls `GET /2018-06-01/runtime/invocation/next`
//! on `AWS_LAMBDA_RUNTIME_API` and answers on `…/{request id}/response` or `…/error` (or `init/error`
//! when it cannot start). [`LambdaProcess::invoke`] hands it one event and waits for the answer.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::{Mutex, Notify, oneshot, watch};

use crate::error::DevstackError;

pub const API_PREFIX: &str = "/2018-06-01/runtime";

#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    /// The function answered on `/error`.
    #[error("the function failed: {error_type}: {message}")]
    Function { error_type: String, message: String },
    /// The runtime reported `init/error`, or the process exited before answering.
    #[error("the function did not start or died: {0}")]
    Exited(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

struct Invocation {
    id: String,
    event: Value,
    deadline_ms: u64,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<Invocation>>,
    ready: Notify,
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<Value, InvokeError>>>>,
    init_error: Mutex<Option<String>>,
    function_arn: String,
    /// When the function first asked for an invocation: the end of its init (cold start).
    first_poll: std::sync::OnceLock<std::time::Instant>,
    polled: Notify,
}

/// The Runtime API server for one function (one execution environment).
pub struct RuntimeApi {
    /// `host:port`, the value of `AWS_LAMBDA_RUNTIME_API`.
    pub address: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl RuntimeApi {
    pub async fn start(function_name: &str) -> Result<Self, DevstackError> {
        let shared = Arc::new(Shared {
            function_arn: format!(
                "arn:aws:lambda:us-east-1:{}:function:{function_name}",
                crate::gateway::ACCOUNT_ID
            ),
            ..Shared::default()
        });
        let app = Router::new()
            .route(&format!("{API_PREFIX}/invocation/next"), get(next))
            .route(&format!("{API_PREFIX}/invocation/{{id}}/response"), post(respond))
            .route(&format!("{API_PREFIX}/invocation/{{id}}/error"), post(fail))
            .route(&format!("{API_PREFIX}/init/error"), post(init_error))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(DevstackError::io("binding the Runtime API"))?;
        let address = listener
            .local_addr()
            .map_err(DevstackError::io("Runtime API address"))?
            .to_string();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            address,
            shared,
            server,
        })
    }

    /// Queues `event`; the answer arrives on the returned channel.
    async fn enqueue(
        &self,
        event: Value,
        timeout: Duration,
    ) -> oneshot::Receiver<Result<Value, InvokeError>> {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        self.shared.waiting.lock().await.insert(id.clone(), tx);
        let deadline_ms = (time::OffsetDateTime::now_utc() + timeout).unix_timestamp_nanos() / 1_000_000;
        self.shared.queue.lock().await.push_back(Invocation {
            id,
            event,
            deadline_ms: deadline_ms as u64,
        });
        self.shared.ready.notify_one();
        rx
    }
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn next(State(s): State<Arc<Shared>>) -> Response {
    if s.first_poll.set(std::time::Instant::now()).is_ok() {
        s.polled.notify_waiters();
    }
    loop {
        // Register interest before checking, so a push between the check and the wait is not missed.
        let notified = s.ready.notified();
        if let Some(inv) = s.queue.lock().await.pop_front() {
            let mut h = HeaderMap::new();
            let mut set = |k: &'static str, v: String| {
                if let Ok(v) = v.parse() {
                    h.insert(k, v);
                }
            };
            set("lambda-runtime-aws-request-id", inv.id.clone());
            set("lambda-runtime-deadline-ms", inv.deadline_ms.to_string());
            set("lambda-runtime-invoked-function-arn", s.function_arn.clone());
            set(
                "lambda-runtime-trace-id",
                format!(
                    "Root=1-{:08x}-{}",
                    inv.deadline_ms / 1000,
                    &inv.id.replace('-', "")[..24]
                ),
            );
            set("content-type", "application/json".into());
            return (StatusCode::OK, h, inv.event.to_string()).into_response();
        }
        notified.await;
    }
}

async fn respond(State(s): State<Arc<Shared>>, UrlPath(id): UrlPath<String>, body: Bytes) -> Response {
    let value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    settle(&s, &id, Ok(value)).await
}

async fn fail(
    State(s): State<Arc<Shared>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (error_type, message) = error_body(&headers, &body);
    settle(&s, &id, Err(InvokeError::Function { error_type, message })).await
}

async fn init_error(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let (t, m) = error_body(&headers, &body);
    *s.init_error.lock().await = Some(format!("{t}: {m}"));
    (StatusCode::ACCEPTED, r#"{"status":"OK"}"#).into_response()
}

fn error_body(headers: &HeaderMap, body: &[u8]) -> (String, String) {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error_type = v["errorType"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| {
            headers
                .get("lambda-runtime-function-error-type")
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "Unhandled".into());
    let message = v["errorMessage"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    (error_type, message)
}

async fn settle(s: &Shared, id: &str, result: Result<Value, InvokeError>) -> Response {
    match s.waiting.lock().await.remove(id) {
        Some(tx) => {
            let _ = tx.send(result);
            (StatusCode::ACCEPTED, r#"{"status":"OK"}"#).into_response()
        }
        None => (
            StatusCode::BAD_REQUEST,
            r#"{"errorType":"InvalidRequestID","errorMessage":"unknown or already answered request id"}"#,
        )
            .into_response(),
    }
}

/// One function binary running against its own Runtime API.
pub struct LambdaProcess {
    pub name: String,
    api: RuntimeApi,
    exited: watch::Receiver<Option<String>>,
    pid: Option<u32>,
    waiter: tokio::task::JoinHandle<()>,
    spawned: std::time::Instant,
}

impl LambdaProcess {
    /// Starts `binary` with the Lambda environment, `env` and `AWS_LAMBDA_RUNTIME_API` pointing at a fresh
    /// Runtime API. Its stdout/stderr (the function's logs) are forwarded to devstack's log.
    ///
    /// Long because it sets up the process, its Runtime API and its log forwarding together; they share handles.
    pub async fn spawn(
        binary: &Path,
        function_name: &str,
        env: &[(String, String)],
    ) -> Result<Self, DevstackError> {
        let api = RuntimeApi::start(function_name).await?;
        let spawned = std::time::Instant::now();
        let mut cmd = tokio::process::Command::new(binary);
        cmd.env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for k in ["PATH", "HOME", "RUST_LOG", "RUST_BACKTRACE"] {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
        cmd.env("AWS_LAMBDA_RUNTIME_API", &api.address)
            .env("AWS_LAMBDA_FUNCTION_NAME", function_name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env(
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{function_name}"),
            )
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "devstack")
            .env("AWS_EXECUTION_ENV", "AWS_Lambda_rust")
            .envs(crate::xray::daemon_env())
            .envs(env.iter().map(|(k, v)| (k, v)));
        let mut child = cmd
            .spawn()
            .map_err(|e| DevstackError::step(format!("starting {}", binary.display()), e))?;
        let pid = child.id();
        // The last lines of output explain a process that dies before its first invocation.
        let tail: Arc<std::sync::Mutex<VecDeque<String>>> = Arc::default();
        let mut outputs = Vec::new();
        for (stream, pipe) in [
            (
                "stdout",
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            ),
            (
                "stderr",
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            ),
        ] {
            if let Some(p) = pipe {
                let name = function_name.to_owned();
                let tail = tail.clone();
                outputs.push(tokio::spawn(async move {
                    use tokio::io::AsyncBufReadExt;
                    let mut lines = tokio::io::BufReader::new(p).lines();
                    while let Ok(Some(l)) = lines.next_line().await {
                        tracing::info!(target: "lambda", function = %name, stream, "{l}");
                        if let Ok(mut t) = tail.lock() {
                            if t.len() == 20 {
                                t.pop_front();
                            }
                            t.push_back(l);
                        }
                    }
                }));
            }
        }
        let (exit_tx, exited) = watch::channel(None);
        let shared = api.shared.clone();
        let waiter = tokio::spawn(async move {
            let status = child.wait().await;
            for o in outputs {
                let _ = o.await;
            }
            let init = shared.init_error.lock().await.clone();
            let mut why = match (init, status) {
                (Some(i), _) => format!("init error: {i}"),
                (None, Ok(s)) => format!("the process exited ({s})"),
                (None, Err(e)) => format!("waiting for the process failed: {e}"),
            };
            if let Ok(t) = tail.lock()
                && !t.is_empty()
            {
                why.push_str("; last output:\n");
                why.push_str(&t.iter().cloned().collect::<Vec<_>>().join("\n"));
            }
            // Whatever was waiting will never be answered.
            for (_, tx) in shared.waiting.lock().await.drain() {
                let _ = tx.send(Err(InvokeError::Exited(why.clone())));
            }
            let _ = exit_tx.send(Some(why));
        });
        Ok(Self {
            name: function_name.to_owned(),
            api,
            exited,
            pid,
            waiter,
            spawned,
        })
    }

    /// The function's init: from starting the process to its first request for an invocation (what
    /// Lambda reports as Init Duration), waiting up to `timeout`.
    pub async fn init_duration(&self, timeout: Duration) -> Result<Duration, InvokeError> {
        let wait = async {
            let mut exited = self.exited.clone();
            loop {
                let polled = self.api.shared.polled.notified();
                if let Some(at) = self.api.shared.first_poll.get() {
                    return Ok(at.duration_since(self.spawned));
                }
                if let Some(why) = exited.borrow().clone() {
                    return Err(InvokeError::Exited(why));
                }
                tokio::select! {
                    _ = polled => {}
                    changed = exited.changed() => if changed.is_err() {
                        return Err(InvokeError::Exited("the process watcher went away".into()));
                    },
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or(Err(InvokeError::Timeout(timeout)))
    }

    /// Invokes the function with `event` (synchronously, like `lambda invoke`).
    pub async fn invoke(&self, event: Value, timeout: Duration) -> Result<Value, InvokeError> {
        if let Some(why) = self.exited.borrow().clone() {
            return Err(InvokeError::Exited(why));
        }
        let rx = self.api.enqueue(event, timeout).await;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(InvokeError::Exited("the Runtime API went away".into())),
            Err(_) => Err(InvokeError::Timeout(timeout)),
        }
    }

    /// Stops the process (SIGTERM, as Lambda does at shutdown, then SIGKILL after 2 s).
    pub async fn stop(self) {
        if let Some(pid) = self.pid {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let mut waiter = self.waiter;
        if tokio::time::timeout(Duration::from_secs(2), &mut waiter)
            .await
            .is_err()
        {
            waiter.abort(); // Drops the child: kill_on_drop sends SIGKILL.
        }
    }
}

/// The function binaries of the workspace, as `(binary name, events/ sample directory)`. Functions not yet
/// built are skipped by callers that find no binary.
pub const FUNCTIONS: &[(&str, &str)] = &[
    ("strato-api", "api"),
    ("strato-dispatcher", "dispatcher"),
    ("strato-status", "status"),
    ("strato-ws", "ws"),
    ("strato-log-fanout", "log-fanout"),
    ("strato-scheduler", "scheduler"),
];

/// The sample events of a function (`events/<dir>/*.json`), sorted by file name.
pub fn sample_events(events_root: &Path, dir: &str) -> Result<Vec<(String, Value)>, DevstackError> {
    let d = events_root.join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
        .map_err(DevstackError::io(format!("reading {}", d.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).map_err(DevstackError::io(format!("reading {}", p.display())))?;
            let v = serde_json::from_str(&text)
                .map_err(|e| DevstackError::step(format!("parsing {}", p.display()), e))?;
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok((name, v))
        })
        .collect()
}

//! An emulated API Gateway WebSocket API (moto accepts the API definition but serves neither the socket nor
//! the `@connections` endpoint), on one local port:
//!
//! - `GET /{stage}` (or `/`) upgrades to a WebSocket. A connection id is assigned, a `$connect` event (headers,
//!   query string, identity) goes to the integration, and a non-2xx answer refuses the upgrade with that
//!   status, as API Gateway does. Each text message is routed by `$request.body.action` to one of the
//!   configured route keys, else `$default`, and delivered as a `MESSAGE` event (concurrently: API Gateway
//!   does not serialize a connection's messages either). Closing (either side) sends `$disconnect`.
//! - The management API on the same port, speaking API Gateway's REST-JSON wire protocol so the real
//!   `aws-sdk-apigatewaymanagement` client works with `endpoint_url = management_endpoint()`:
//!   `POST /{stage}/@connections/{id}` delivers the body as one text frame, `GET` describes the connection,
//!   `DELETE` closes it; an unknown or closed id answers 410 `GoneException`, a body over the frame limit 413
//!   `PayloadTooLargeException`.
//!
//! Integration responses of `MESSAGE` routes with a non-empty body are sent back to the client (as with a
//! route response configured); a failing integration makes the client receive API Gateway's
//! `{"message": "Internal server error", ...}`.
//!
//! Plugging a function in (devstack, tests):
//! ```ignore
//! let bound = WsApi::bind(WsApiConfig::default()).await?;
//! let ctx = Arc::new(strato_ws::Ctx::new(config_with(bound.management_endpoint()), &aws));
//! let api = bound.serve(move |event| {
//!     let ctx = ctx.clone();
//!     async move { Ok(strato_ws::handle(&ctx, event).await) }
//! });
//! // clients connect to api.ws_url(); api.shutdown().await when done
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body as LambdaBody;
use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

mod management;

use management::{delete_connection, get_connection, post_to_connection};

/// What an integration returns; `Err` stands for a failed Lambda invocation.
pub type IntegrationResult = Result<ApiGatewayProxyResponse, String>;
pub type IntegrationFuture = Pin<Box<dyn Future<Output = IntegrationResult> + Send>>;

/// The backend of every route (API Gateway's Lambda proxy integration). Any
/// `Fn(ApiGatewayWebsocketProxyRequest) -> impl Future<Output = IntegrationResult>` is one.
pub trait WsIntegration: Send + Sync + 'static {
    fn invoke(&self, event: ApiGatewayWebsocketProxyRequest) -> IntegrationFuture;
}

impl<F, Fut> WsIntegration for F
where
    F: Fn(ApiGatewayWebsocketProxyRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = IntegrationResult> + Send + 'static,
{
    fn invoke(&self, event: ApiGatewayWebsocketProxyRequest) -> IntegrationFuture {
        Box::pin(self(event))
    }
}

#[derive(Debug, Clone)]
pub struct WsApiConfig {
    /// `127.0.0.1:0` picks a free port.
    pub bind: SocketAddr,
    pub api_id: String,
    pub stage: String,
    pub region: String,
    /// Route keys besides `$connect`, `$disconnect` and `$default`, selected by the body's `action`.
    pub routes: Vec<String>,
    /// Largest body `POST @connections` accepts (API Gateway's 32 KB frame).
    pub max_frame_bytes: usize,
}

impl Default for WsApiConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            api_id: "strato-ws".into(),
            stage: "local".into(),
            region: "us-east-1".into(),
            routes: vec!["subscribe".into(), "unsubscribe".into(), "ping".into()],
            max_frame_bytes: 32 * 1024,
        }
    }
}

/// Misbehaviour of one connection's management endpoint, for tests of the posting side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The next `times` posts answer 429 `LimitExceededException`, as API Gateway does under throttling.
    Throttle { times: u32 },
    /// Every post takes this long before it is delivered (a slow client or a congested endpoint).
    Delay(Duration),
}

/// Counters of the management API, for tests and the benchmark.
#[derive(Debug, Default)]
pub struct ManagementStats {
    pub posts: AtomicU64,
    pub posted_bytes: AtomicU64,
    pub gone: AtomicU64,
    pub too_large: AtomicU64,
    pub throttled: AtomicU64,
}

struct Conn {
    tx: mpsc::UnboundedSender<Message>,
    connected_at: OffsetDateTime,
    last_active_at: Mutex<OffsetDateTime>,
    source_ip: String,
    user_agent: Option<String>,
}

struct Shared {
    config: WsApiConfig,
    addr: SocketAddr,
    integration: Arc<dyn WsIntegration>,
    conns: Mutex<HashMap<String, Arc<Conn>>>,
    faults: Mutex<HashMap<String, Fault>>,
    stats: ManagementStats,
    counter: AtomicU64,
}

/// A bound but not yet serving API: its address is known, so the integration can be built with it.
pub struct BoundWsApi {
    listener: tokio::net::TcpListener,
    config: WsApiConfig,
    addr: SocketAddr,
}

impl BoundWsApi {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn management_endpoint(&self) -> String {
        format!("http://{}/{}", self.addr, self.config.stage)
    }

    pub fn serve(self, integration: impl WsIntegration) -> WsApi {
        let shared = Arc::new(Shared {
            config: self.config,
            addr: self.addr,
            integration: Arc::new(integration),
            conns: Mutex::new(HashMap::new()),
            faults: Mutex::new(HashMap::new()),
            stats: ManagementStats::default(),
            counter: AtomicU64::new(0),
        });
        let conn_routes = get(get_connection)
            .post(post_to_connection)
            .delete(delete_connection);
        let app = Router::new()
            .route("/", get(upgrade))
            .route("/{stage}", get(upgrade))
            .route("/@connections/{id}", conn_routes.clone())
            .route("/{stage}/@connections/{id}", conn_routes)
            .with_state(shared.clone());
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(
                self.listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async {
                let _ = stop_rx.await;
            });
            if let Err(e) = serve.await {
                tracing::error!(error = %e, "websocket emulation stopped");
            }
        });
        WsApi {
            shared,
            stop: Some(stop_tx),
            task,
        }
    }
}

/// A running emulated WebSocket API.
pub struct WsApi {
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl WsApi {
    pub async fn bind(config: WsApiConfig) -> std::io::Result<BoundWsApi> {
        let listener = tokio::net::TcpListener::bind(config.bind).await?;
        let addr = listener.local_addr()?;
        Ok(BoundWsApi {
            listener,
            config,
            addr,
        })
    }

    /// Binds and serves in one step, for integrations that do not need the address.
    pub async fn start(config: WsApiConfig, integration: impl WsIntegration) -> std::io::Result<WsApi> {
        Ok(Self::bind(config).await?.serve(integration))
    }

    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// `ws://host:port/{stage}`: where clients connect (add `?token=...`).
    pub fn ws_url(&self) -> String {
        format!("ws://{}/{}", self.shared.addr, self.shared.config.stage)
    }

    /// The `@connections` endpoint for the management API client's `endpoint_url`.
    pub fn management_endpoint(&self) -> String {
        format!("http://{}/{}", self.shared.addr, self.shared.config.stage)
    }

    pub fn connection_ids(&self) -> Vec<String> {
        lock(&self.shared.conns).keys().cloned().collect()
    }

    /// Makes posts to `connection_id` misbehave (replacing any earlier fault).
    pub fn inject_fault(&self, connection_id: &str, fault: Fault) {
        lock(&self.shared.faults).insert(connection_id.to_owned(), fault);
    }

    pub fn stats(&self) -> &ManagementStats {
        &self.shared.stats
    }

    /// Closes every connection (each gets its `$disconnect`) and stops the server.
    pub async fn shutdown(mut self) {
        let conns: Vec<Arc<Conn>> = lock(&self.shared.conns).drain().map(|(_, c)| c).collect();
        for c in conns {
            let _ = c.tx.send(close_message(1001, "Going away"));
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(Duration::from_secs(5), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

impl Drop for WsApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn close_message(code: u16, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

fn epoch_ms(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// API Gateway's `requestTime`, e.g. `09/Apr/2020:18:03:44 +0000`.
fn request_time(t: OffsetDateTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{:02}/{}/{}:{:02}:{:02}:{:02} +0000",
        t.day(),
        MONTHS[t.month() as usize - 1],
        t.year(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

impl Shared {
    /// API Gateway ids look like `L0SM9cOFvHcCIhw=`: the `=` also exercises URL encoding in the SDK.
    fn new_connection_id(&self) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let bytes = uuid::Uuid::new_v4().into_bytes();
        let mut id: String = bytes[..15]
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect();
        id.push('=');
        id
    }

    fn request_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n:x}", uuid::Uuid::new_v4().simple())
    }

    fn context(
        &self,
        conn_id: &str,
        route: &str,
        event_type: &str,
        connected_at: OffsetDateTime,
        ip: &str,
    ) -> Value {
        let now = OffsetDateTime::now_utc();
        let rid = self.request_id();
        let mut ctx = json!({
            "routeKey": route,
            "eventType": event_type,
            "extendedRequestId": rid,
            "requestTime": request_time(now),
            "messageDirection": "IN",
            "stage": self.config.stage,
            "connectedAt": epoch_ms(connected_at),
            "requestTimeEpoch": epoch_ms(now),
            "identity": { "sourceIp": ip },
            "requestId": rid,
            "domainName": self.addr.to_string(),
            "connectionId": conn_id,
            "apiId": self.config.api_id,
        });
        if event_type == "MESSAGE" {
            ctx["messageId"] = json!(self.request_id());
        }
        ctx
    }

    async fn invoke(&self, event: Value) -> IntegrationResult {
        let event: ApiGatewayWebsocketProxyRequest =
            serde_json::from_value(event).map_err(|e| format!("building the event: {e}"))?;
        self.integration.invoke(event).await
    }

    fn route_of(&self, body: &str) -> String {
        let action = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v.get("action").and_then(Value::as_str).map(str::to_owned));
        match action {
            Some(a) if self.config.routes.contains(&a) => a,
            _ => "$default".into(),
        }
    }
}

fn ok_status(r: &IntegrationResult) -> Result<(), u16> {
    match r {
        Ok(r) if (200..300).contains(&r.status_code) => Ok(()),
        Ok(r) => Err(u16::try_from(r.status_code).unwrap_or(500)),
        Err(_) => Err(500),
    }
}

fn body_text(r: &ApiGatewayProxyResponse) -> Option<String> {
    match r.body.as_ref()? {
        LambdaBody::Text(t) if !t.is_empty() => Some(t.clone()),
        LambdaBody::Binary(b) if !b.is_empty() => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

fn headers_json(headers: &HeaderMap) -> (Value, Value) {
    let mut single = serde_json::Map::new();
    let mut multi: serde_json::Map<String, Value> = serde_json::Map::new();
    for (k, v) in headers {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        single.insert(k.as_str().to_owned(), json!(v));
        if let Value::Array(a) = multi.entry(k.as_str().to_owned()).or_insert_with(|| json!([])) {
            a.push(json!(v));
        }
    }
    (Value::Object(single), Value::Object(multi))
}

async fn upgrade(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let conn_id = shared.new_connection_id();
    let connected_at = OffsetDateTime::now_utc();
    let ip = peer.ip().to_string();
    let (h, mh) = headers_json(&headers);
    let mut qs = serde_json::Map::new();
    let mut mqs: serde_json::Map<String, Value> = serde_json::Map::new();
    for (k, v) in &query {
        qs.insert(k.clone(), json!(v));
        if let Value::Array(a) = mqs.entry(k.clone()).or_insert_with(|| json!([])) {
            a.push(json!(v));
        }
    }
    let mut ctx = shared.context(&conn_id, "$connect", "CONNECT", connected_at, &ip);
    if let Some(ua) = headers.get("user-agent").and_then(|v| v.to_str().ok()) {
        ctx["identity"]["userAgent"] = json!(ua);
    }
    let event = json!({
        "headers": h,
        "multiValueHeaders": mh,
        "queryStringParameters": if qs.is_empty() { Value::Null } else { Value::Object(qs) },
        "multiValueQueryStringParameters": if mqs.is_empty() { Value::Null } else { Value::Object(mqs) },
        "requestContext": ctx,
        "isBase64Encoded": false,
    });
    let result = shared.invoke(event).await;
    if let Err(status) = ok_status(&result) {
        if let Err(e) = &result {
            tracing::warn!(error = %e, "$connect integration failed");
        }
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = result.ok().as_ref().and_then(body_text).unwrap_or_default();
        return (status, body).into_response();
    }
    let user_agent = headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // Registered before the 101 goes out: once the client sees the handshake complete, posts reach it
    // (they wait in the channel until the socket is running).
    let (tx, rx) = mpsc::unbounded_channel::<Message>();
    let conn = Arc::new(Conn {
        tx,
        connected_at,
        last_active_at: Mutex::new(connected_at),
        source_ip: ip,
        user_agent,
    });
    lock(&shared.conns).insert(conn_id.clone(), conn.clone());
    let failed = (shared.clone(), conn_id.clone());
    ws.on_failed_upgrade(move |_| {
        lock(&failed.0.conns).remove(&failed.1);
    })
    .on_upgrade(move |socket| run_connection(shared, socket, conn_id, conn, rx))
}

/// One WebSocket connection's life: frames in to the route's integration, posts out, `$disconnect` at the
/// end. One function because the read and write halves share the connection's state.
async fn run_connection(
    shared: Arc<Shared>,
    socket: WebSocket,
    conn_id: String,
    conn: Arc<Conn>,
    mut rx: mpsc::UnboundedReceiver<Message>,
) {
    let (mut sink, mut stream) = socket.split();
    let tx = conn.tx.clone();
    let (connected_at, ip) = (conn.connected_at, conn.source_ip.clone());
    let (closed_tx, closed_rx) = oneshot::channel::<()>();
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            let closing = matches!(m, Message::Close(_));
            if sink.send(m).await.is_err() || closing {
                break;
            }
        }
        let _ = sink.close().await;
        let _ = closed_tx.send(());
    });
    // Once the server side has closed (DELETE @connections, shutdown), the client gets a moment to answer
    // the close handshake; API Gateway does not wait for an unresponsive client either.
    let grace = async {
        let _ = closed_rx.await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    tokio::pin!(grace);
    let (mut code, mut reason) = (1006_i64, String::from("Going away"));
    loop {
        let msg = tokio::select! {
            m = stream.next() => match m {
                Some(m) => m,
                None => break,
            },
            () = &mut grace => {
                (code, reason) = (1000, "Connection closed by the server".into());
                break;
            }
        };
        let text = match msg {
            Ok(Message::Text(t)) => t.to_string(),
            Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
            Ok(Message::Close(frame)) => {
                if let Some(f) = frame {
                    code = i64::from(f.code);
                    reason = f.reason.to_string();
                } else {
                    code = 1005;
                }
                break;
            }
            Ok(_) => continue,
            Err(_) => break,
        };
        *lock(&conn.last_active_at) = OffsetDateTime::now_utc();
        let route = shared.route_of(&text);
        let event = json!({
            "requestContext": shared.context(&conn_id, &route, "MESSAGE", connected_at, &ip),
            "body": text,
            "isBase64Encoded": false,
        });
        let (shared, conn_id, tx) = (shared.clone(), conn_id.clone(), tx.clone());
        tokio::spawn(async move {
            let rid = event["requestContext"]["requestId"].clone();
            let result = shared.invoke(event).await;
            let reply = match &result {
                Ok(r) if (200..300).contains(&r.status_code) => body_text(r),
                other => {
                    if let Err(e) = other {
                        tracing::warn!(error = %e, "message integration failed");
                    }
                    Some(
                        json!({"message": "Internal server error", "connectionId": conn_id, "requestId": rid})
                            .to_string(),
                    )
                }
            };
            if let Some(reply) = reply {
                let _ = tx.send(Message::Text(reply.into()));
            }
        });
    }
    // The connection is gone for the management API before $disconnect runs, as on API Gateway.
    lock(&shared.conns).remove(&conn_id);
    let _ = tx.send(close_message(1000, "bye"));
    drop(tx);
    let _ = writer.await;
    let mut ctx = shared.context(&conn_id, "$disconnect", "DISCONNECT", connected_at, &ip);
    ctx["disconnectStatusCode"] = json!(code);
    ctx["disconnectReason"] = json!(reason);
    let event = json!({
        "headers": { "Host": shared.addr.to_string() },
        "multiValueHeaders": { "Host": [shared.addr.to_string()] },
        "requestContext": ctx,
        "isBase64Encoded": false,
    });
    if let Err(status) = ok_status(&shared.invoke(event).await) {
        tracing::warn!(status, connection_id = %conn_id, "$disconnect integration failed");
    }
}

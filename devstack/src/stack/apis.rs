//! The two API Gateway emulations in front of their functions: the HTTP API (api) and the WebSocket API
//! (ws, with log-fanout on the `logs` queue).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use super::config::{DevstackConfig, StackEnv};
use crate::error::DevstackError;
use crate::gateway::Gateway;
use crate::registry::Registry;

/// The WebSocket API with the ws function behind it, and log-fanout on the `logs` queue. Its address (and so
/// the @connections endpoint) is known before both functions are built, as in AWS where the stage URL is
/// configuration.
pub(super) async fn websocket_api(
    config: &DevstackConfig,
    env: &Arc<StackEnv>,
    jwt_secret: &str,
    registry: &mut Registry,
) -> Result<crate::apigw_ws::WsApi, DevstackError> {
    let ws_bound = crate::apigw_ws::WsApi::bind(crate::apigw_ws::WsApiConfig {
        bind: config.ws_addr,
        ..Default::default()
    })
    .await
    .map_err(|e| DevstackError::step("binding the WebSocket API", e))?;
    let management = ws_bound.management_endpoint();
    let prefix = env.names.prefix().to_owned();
    let lookup = |k: &str| match k {
        "STRATO_RESOURCE_PREFIX" => Some(prefix.clone()),
        "STRATO_JWT_SECRET" => Some(jwt_secret.to_owned()),
        "STRATO_TENANT_CLAIM" => Some(config.tenant_claim.clone()),
        "STRATO_WS_MANAGEMENT_ENDPOINT" => Some(management.clone()),
        _ => None,
    };
    let mut ws_ctx = strato_ws::Ctx::new(
        strato_ws::Config::from_lookup(env.lookup_for("ws", lookup))
            .map_err(|e| DevstackError::step("configuring ws", e))?,
        &env.aws_for("ws"),
    );
    ws_ctx.mgmt = env.management_for("ws", &management);
    let ws_ctx = Arc::new(ws_ctx);
    let mut fanout = strato_log_fanout::Ctx::new(
        strato_log_fanout::Config::from_lookup(env.lookup_for("log-fanout", lookup))
            .map_err(|e| DevstackError::step("configuring log-fanout", e))?,
        &env.aws_for("log-fanout"),
    );
    fanout.mgmt = env.management_for("log-fanout", &management);
    let fanout = Arc::new(fanout);
    registry.map_queue(
        "logs",
        crate::registry::sqs_handler(move |event| {
            let f = fanout.clone();
            async move { Ok::<_, String>(strato_log_fanout::handle(&f, event).await) }
        }),
        env.sqs_concurrency,
    );
    Ok(ws_bound.serve(move |ev| {
        let c = ws_ctx.clone();
        let invocation = async move { Ok(strato_ws::handle(&c, ev).await) };
        tracing::Instrument::instrument(invocation, crate::capture::component_span("ws"))
    }))
}

/// The HTTP API gateway in front of the api function, stopping when `intake` turns true.
pub(super) async fn serve_http_api(
    config: &DevstackConfig,
    env: &StackEnv,
    registry: &Registry,
    intake: &watch::Receiver<bool>,
    ws_url: &str,
) -> Result<(SocketAddr, Vec<tokio::task::JoinHandle<()>>), DevstackError> {
    let listener = tokio::net::TcpListener::bind(config.http_addr)
        .await
        .map_err(DevstackError::io(format!(
            "binding the HTTP API to {}",
            config.http_addr
        )))?;
    let http_addr = listener
        .local_addr()
        .map_err(DevstackError::io("HTTP API address"))?;
    let mut tasks = Vec::new();
    if let Some(handler) = registry.http.clone() {
        let console = config
            .console_dir
            .as_deref()
            .and_then(|dir| crate::console::ConsoleSite::new(dir, ws_url));
        let router = Gateway::new(handler, env.auth.clone())
            .with_console(console)
            .router();
        let mut rx = intake.clone();
        tasks.push(tokio::spawn(async move {
            let serve = axum::serve(
                listener,
                router.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async move {
                let _ = rx.wait_for(|s| *s).await;
            });
            if let Err(e) = serve.await {
                tracing::error!(error = %e, "HTTP API server stopped");
            }
        }));
    }
    Ok((http_addr, tasks))
}

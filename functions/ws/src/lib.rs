//! `strato-ws`: the WebSocket API's one Lambda (API Gateway WebSocket API, Lambda proxy integration).
//!
//! Routes (route selection on `$request.body.action`):
//! - `$connect?token=<JWT>`: the token is an HS256 JWT signed with `STRATO_JWT_SECRET`; its tenant claim
//!   (`STRATO_TENANT_CLAIM`, default `tenant_id`) names the tenant. A bad token answers 401 and API Gateway
//!   refuses the upgrade. The connection is recorded with API Gateway's 2 h lifetime.
//! - `subscribe {"operation_id", "from_seq"}`: only the caller's tenant's operations. The subscription is
//!   recorded first, then the archive is replayed from `from_seq`, so live batches fanned out meanwhile are
//!   not lost (they may arrive twice or interleaved with the replay: clients keep lines by `seq`). A
//!   `subscribed` frame ends the replay; a terminal operation is followed by `end`. One subscribe replays
//!   one page ([`PAGE_LINES`]); `subscribed` with `more` asks the client to subscribe again from
//!   `replayed_to + 1`, and `end` comes with the last page.
//! - `unsubscribe {"operation_id"}`, `ping` (answers `pong`), `$disconnect` (removes the connection and its
//!   subscriptions), `$default` (an `error` frame naming the known actions).
//!
//! All replies go through the management API (`PostToConnection`), in order; the integration response body
//! is empty, so no route response needs configuring. Frame formats: `strato_stream::logs`.
//!
//! A line archived after the replay listed the archive but fanned out before the subscription existed is
//! the one case a client sees as a gap in `seq`; it re-subscribes with `from_seq` = the first missing seq
//! (at the latest when `end` tells it the final seq), and the archive has it by then.

mod aws_calls;
mod replay;
pub use aws_calls::AWS_CALLS;
pub use replay::PAGE_LINES;

use secrecy::SecretSlice;
use std::time::Duration;
use strato_model::telemetry::{self, Traceparent, fields};
use tracing::Instrument;

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body;
use serde::Deserialize;
use strato_aws::aws::AwsClients;
use strato_aws::env::{Env, EnvError};
use strato_aws::resources::Names;
use strato_aws::store::Store;
use strato_model::ids::OperationId;
use strato_model::messages::LogFrame;
use strato_stream::logs::ControlFrame;
use time::OffsetDateTime;

use strato_connections::tickets;
use strato_connections::{
    self, CONNECTION_LIFETIME, Connection, Connections, PostError, management_client, post_frame,
};

mod auth;
pub use auth::authenticate;

#[derive(Debug, thiserror::Error)]
pub enum WsError {
    #[error("configuration: {0}")]
    Config(#[from] EnvError),
    #[error(transparent)]
    Shared(#[from] strato_aws::Error),
    #[error(transparent)]
    Domain(#[from] strato_model::Error),
    #[error(transparent)]
    Post(#[from] PostError),
}

/// Settings read once per process.
/// `Debug` never shows the JWT secret (`secrecy`).
#[derive(Debug, Clone)]
pub struct Config {
    /// `STRATO_RESOURCE_PREFIX` (required).
    pub names: Names,
    /// `STRATO_JWT_SECRET` (required, at least 32 bytes): the HS256 key tickets are signed with.
    pub jwt_secret: SecretSlice<u8>,
    /// `STRATO_JWT_SECRET_PREVIOUS` (optional, at least 32 bytes): the key before a rotation (Secrets
    /// Manager's `AWSPREVIOUS`), still accepted so tickets the api signed just before it keep working.
    pub previous_jwt_secret: Option<SecretSlice<u8>>,
    /// `STRATO_TENANT_CLAIM`, default `tenant_id` (as the HTTP API).
    pub tenant_claim: String,
    /// `STRATO_JWT_AUDIENCE`, default `strato-ws`: always checked.
    pub audience: String,
    /// `STRATO_JWT_ISSUER`: checked when set.
    pub issuer: Option<String>,
    /// `STRATO_WS_MANAGEMENT_ENDPOINT` (required): `https://{api-id}.execute-api.{region}.amazonaws.com/{stage}`.
    pub management_endpoint: String,
    /// Bound on one post, retries included (`STRATO_WS_POST_TIMEOUT_MS`, default 3000).
    pub post_timeout: Duration,
}

impl Config {
    pub fn from_env() -> Result<Self, WsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, WsError> {
        let env = Env::new(get);
        Ok(Self {
            names: env.names()?,
            jwt_secret: SecretSlice::from(
                env.secret("STRATO_JWT_SECRET", tickets::MIN_SECRET_BYTES)?
                    .ok_or_else(|| EnvError {
                        var: "STRATO_JWT_SECRET",
                        reason: "is not set".into(),
                    })?
                    .into_bytes(),
            ),
            previous_jwt_secret: env
                .secret("STRATO_JWT_SECRET_PREVIOUS", tickets::MIN_SECRET_BYTES)?
                .map(|s| SecretSlice::from(s.into_bytes())),
            tenant_claim: env.or("STRATO_TENANT_CLAIM", "tenant_id"),
            audience: env.or("STRATO_JWT_AUDIENCE", tickets::AUDIENCE),
            issuer: env.optional("STRATO_JWT_ISSUER"),
            management_endpoint: env.required("STRATO_WS_MANAGEMENT_ENDPOINT")?,
            post_timeout: Duration::from_millis(env.positive("STRATO_WS_POST_TIMEOUT_MS", 3000)?),
        })
    }
}

#[derive(Debug, Clone)]
pub struct Ctx {
    pub config: Config,
    pub store: Store,
    pub connections: Connections,
    pub s3: aws_sdk_s3::Client,
    pub artifacts_bucket: String,
    pub mgmt: aws_sdk_apigatewaymanagement::Client,
}

impl Ctx {
    pub fn new(config: Config, aws: &AwsClients) -> Self {
        let mgmt = management_client(&aws.config, &config.management_endpoint);
        Self {
            store: Store::new(aws.dynamodb.clone(), &config.names),
            connections: Connections {
                ddb: aws.dynamodb.clone(),
                table: config.names.table("connections"),
            },
            s3: aws.s3.clone(),
            artifacts_bucket: config.names.bucket("artifacts"),
            mgmt,
            config,
        }
    }
}

fn response(status: i64, body: Option<String>) -> ApiGatewayProxyResponse {
    let mut r = ApiGatewayProxyResponse::default();
    r.status_code = status;
    r.body = body.map(Body::Text);
    r
}

/// Handles one WebSocket event. Refusals of client requests are `error` frames with status 200; a 500
/// means Strato failed (API Gateway then tells the client "Internal server error").
pub async fn handle(ctx: &Ctx, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
    // One span per WebSocket request: its tenant once authenticated, the operation once subscribed.
    let span = telemetry::span("ws", &Traceparent::new_root(), None);
    if let Some(id) = &event.request_context.request_id {
        telemetry::record(&span, fields::REQUEST_ID, id);
    }
    handle_in_span(ctx, event).instrument(span).await
}

async fn handle_in_span(ctx: &Ctx, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
    let rc = &event.request_context;
    let route = rc.route_key.clone().unwrap_or_default();
    let Some(conn_id) = rc.connection_id.clone() else {
        tracing::error!(route, "event without a connection id");
        return response(400, Some("missing requestContext.connectionId".into()));
    };
    let result = match route.as_str() {
        "$connect" => return connect(ctx, &event, &conn_id).await,
        "$disconnect" => ctx
            .connections
            .remove_connection(&conn_id)
            .await
            .map(|_| ())
            .map_err(Into::into),
        _ => message(ctx, &conn_id, event.body.as_deref().unwrap_or_default()).await,
    };
    match result {
        Ok(()) => response(200, None),
        // The client left mid-reply: nothing to tell anyone; $disconnect cleans up.
        Err(WsError::Post(PostError::Gone(_))) => response(200, None),
        Err(e) => {
            tracing::error!(route, connection_id = %conn_id, error = %e, "ws request failed");
            response(500, None)
        }
    }
}

async fn connect(
    ctx: &Ctx,
    event: &ApiGatewayWebsocketProxyRequest,
    conn_id: &str,
) -> ApiGatewayProxyResponse {
    let token = event.query_string_parameters.first("token");
    let (tenant, subject) = match authenticate(&ctx.config, token) {
        Ok(t) => t,
        Err(reason) => {
            // The token itself is never logged.
            tracing::info!(connection_id = %conn_id, reason, "connection refused");
            return response(401, Some(format!("Unauthorized: {reason}")));
        }
    };
    tracing::Span::current().record(fields::TENANT_ID, tenant.as_str());
    let ms = event.request_context.connected_at;
    let connected_at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .filter(|_| ms > 0)
        .unwrap_or_else(OffsetDateTime::now_utc);
    let c = Connection {
        pk: strato_connections::conn_pk(conn_id),
        sk: "conn".into(),
        connection_id: conn_id.to_owned(),
        tenant_id: tenant,
        subject,
        connected_at,
        expires_at: (connected_at + CONNECTION_LIFETIME).unix_timestamp(),
    };
    match ctx.connections.put_connection(&c).await {
        Ok(()) => response(200, None),
        Err(e) => {
            tracing::error!(connection_id = %conn_id, error = %e, "recording the connection failed");
            response(500, None)
        }
    }
}

#[derive(Debug, Deserialize)]
struct Request {
    action: Option<String>,
    operation_id: Option<String>,
    from_seq: Option<u64>,
}

fn error_frame(
    message: impl Into<String>,
    fix: impl Into<String>,
    action: Option<&str>,
    op: Option<&str>,
) -> String {
    let f = ControlFrame::Error {
        message: message.into(),
        fix: fix.into(),
        action: action.map(str::to_owned),
        operation_id: op.map(str::to_owned),
    };
    serde_json::to_string(&f).unwrap_or_default()
}

async fn post(ctx: &Ctx, conn_id: &str, data: &str) -> Result<(), WsError> {
    Ok(post_frame(&ctx.mgmt, conn_id, data, ctx.config.post_timeout).await?)
}

async fn message(ctx: &Ctx, conn_id: &str, body: &str) -> Result<(), WsError> {
    let req: Request = match serde_json::from_str(body) {
        Ok(r) => r,
        Err(e) => {
            let f = error_frame(
                format!("the message is not a JSON request: {e}"),
                r#"send e.g. {"action":"subscribe","operation_id":"op_...","from_seq":1}"#,
                None,
                None,
            );
            return post(ctx, conn_id, &f).await;
        }
    };
    match req.action.as_deref() {
        Some("ping") => {
            post(
                ctx,
                conn_id,
                &serde_json::to_string(&ControlFrame::Pong).unwrap_or_default(),
            )
            .await
        }
        Some(action @ ("subscribe" | "unsubscribe")) => {
            let op = match req.operation_id.as_deref().map(str::parse::<OperationId>) {
                Some(Ok(op)) => op,
                Some(Err(e)) => {
                    let f = error_frame(
                        format!("operation_id: {e}"),
                        "pass the id the API returned",
                        Some(action),
                        None,
                    );
                    return post(ctx, conn_id, &f).await;
                }
                None => {
                    let f = error_frame(
                        "operation_id is missing",
                        "add \"operation_id\" to the request",
                        Some(action),
                        None,
                    );
                    return post(ctx, conn_id, &f).await;
                }
            };
            if action == "subscribe" {
                subscribe(ctx, conn_id, &op, req.from_seq.unwrap_or(1).max(1)).await
            } else {
                ctx.connections.unsubscribe(conn_id, &op).await?;
                let f = ControlFrame::Unsubscribed { operation_id: op };
                post(ctx, conn_id, &serde_json::to_string(&f).unwrap_or_default()).await
            }
        }
        other => {
            let f = error_frame(
                format!("unknown action '{}'", other.unwrap_or_default()),
                "use one of: subscribe, unsubscribe, ping",
                other,
                None,
            );
            post(ctx, conn_id, &f).await
        }
    }
}

async fn subscribe(ctx: &Ctx, conn_id: &str, op_id: &OperationId, from_seq: u64) -> Result<(), WsError> {
    let now = OffsetDateTime::now_utc();
    let Some(conn) = ctx
        .connections
        .get_connection(conn_id)
        .await?
        .filter(|c| c.is_live(now))
    else {
        let f = error_frame(
            "this connection is not registered or has expired",
            "reconnect with a valid token",
            Some("subscribe"),
            Some(op_id.as_str()),
        );
        return post(ctx, conn_id, &f).await;
    };
    let span = tracing::Span::current();
    span.record(fields::TENANT_ID, conn.tenant_id.as_str());
    span.record(fields::OPERATION_ID, op_id.as_str());
    // Unknown and foreign operations get the same answer, so ids of other tenants cannot be probed.
    let op = ctx.store.get_operation(op_id).await?;
    if op.as_ref().is_none_or(|o| o.tenant_id != conn.tenant_id) {
        let f = error_frame(
            format!("operation {op_id} was not found"),
            "check the operation id; only your tenant's operations can be watched",
            Some("subscribe"),
            Some(op_id.as_str()),
        );
        return post(ctx, conn_id, &f).await;
    }
    // Subscription first, replay second: nothing fanned out from now on is missed.
    ctx.connections.subscribe(&conn, op_id).await?;
    let archive = replay::S3Archive {
        s3: &ctx.s3,
        bucket: &ctx.artifacts_bucket,
    };
    let frames = Posts { ctx, conn_id };
    let mut page = replay::replay(&archive, &frames, op_id, from_seq, PAGE_LINES).await?;
    // Re-read after subscribing: an `end` published before the subscription existed was not delivered.
    let terminal = ctx
        .store
        .get_operation(op_id)
        .await?
        .filter(|o| o.status.is_terminal());
    if terminal.is_some() && page.complete.is_none() && !page.more {
        // The runner may have archived its last chunks after the first listing.
        let rest = PAGE_LINES.saturating_sub(page.next - from_seq).max(1);
        page = replay::replay(&archive, &frames, op_id, page.next, rest).await?;
    }
    let subscribed = ControlFrame::Subscribed {
        operation_id: op_id.clone(),
        from_seq,
        replayed_to: page.next - 1,
        more: page.more,
    };
    post(
        ctx,
        conn_id,
        &serde_json::to_string(&subscribed).unwrap_or_default(),
    )
    .await?;
    // The end comes with the last page (a client seeing it early would take the rest for a gap).
    if let Some(op) = terminal.filter(|_| !page.more) {
        let end = LogFrame::End {
            operation_id: op_id.clone(),
            final_status: op.status,
            last_seq: page.complete.unwrap_or(page.next - 1),
        };
        post(ctx, conn_id, &serde_json::to_string(&end).unwrap_or_default()).await?;
    }
    Ok(())
}

/// Frames to one connection, through the management API.
struct Posts<'a> {
    ctx: &'a Ctx,
    conn_id: &'a str,
}

impl replay::Frames for Posts<'_> {
    async fn post(&self, frame: &str) -> Result<(), WsError> {
        post(self.ctx, self.conn_id, frame).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> Result<Config, WsError> {
        let mut vars = vec![
            ("STRATO_RESOURCE_PREFIX", "strato-dev"),
            ("STRATO_JWT_SECRET", KEY),
            ("STRATO_WS_MANAGEMENT_ENDPOINT", "http://127.0.0.1:1/local"),
        ];
        vars.extend_from_slice(extra);
        Config::from_lookup(|k| {
            vars.iter()
                .rev()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    const KEY: &str = "s3cret-0123456789abcdef-0123456789";

    /// A ticket as the api signs it, with `claims` on top (a ticket's defaults: aud, scope, iat).
    fn sign(claims: serde_json::Value, secret: &str) -> String {
        let mut all = serde_json::json!({
            "aud": tickets::AUDIENCE,
            "scope": tickets::SCOPE,
            "iat": OffsetDateTime::now_utc().unix_timestamp(),
        });
        for (k, v) in claims.as_object().unwrap() {
            all[k] = v.clone();
        }
        let claims = all;
        jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    }

    fn exp() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp() + 240
    }

    #[test]
    fn after_a_key_rotation_tickets_of_the_previous_key_still_open_until_it_is_dropped() {
        const OLD: &str = "old-s3cret-0123456789abcdef-012345";
        let ticket = sign(serde_json::json!({"tenant_id": "acme", "exp": exp()}), OLD);
        let rotated = config(&[("STRATO_JWT_SECRET_PREVIOUS", OLD)]).unwrap();
        assert_eq!(authenticate(&rotated, Some(&ticket)).unwrap().0.as_str(), "acme");
        let current = sign(serde_json::json!({"tenant_id": "acme", "exp": exp()}), KEY);
        assert!(
            authenticate(&rotated, Some(&current)).is_ok(),
            "the current key's tickets"
        );
        let other = sign(
            serde_json::json!({"tenant_id": "acme", "exp": exp()}),
            "another-s3cret-0123456789abcdef-01",
        );
        assert!(
            authenticate(&rotated, Some(&other)).is_err(),
            "any other key is refused"
        );
        let e = authenticate(&config(&[]).unwrap(), Some(&ticket)).unwrap_err();
        assert!(e.contains("invalid"), "without the overlap: {e}");
        let short = config(&[("STRATO_JWT_SECRET_PREVIOUS", "short")])
            .unwrap_err()
            .to_string();
        assert!(short.contains("STRATO_JWT_SECRET_PREVIOUS"), "{short}");
    }

    #[test]
    fn tokens_name_the_tenant_and_bad_ones_say_why() {
        let c = config(&[]).unwrap();
        let ok = sign(
            serde_json::json!({"tenant_id": "acme", "sub": "u1", "exp": exp()}),
            KEY,
        );
        let (tenant, sub) = authenticate(&c, Some(&ok)).unwrap();
        assert_eq!((tenant.as_str(), sub.as_deref()), ("acme", Some("u1")));
        // Issue 16 finding 6: audience, scope and a short life are always required, so an API token signed
        // with the same key (devstack's: aud strato-api, 12 h) opens nothing.
        let now = OffsetDateTime::now_utc().unix_timestamp();
        for (claims, why) in [
            (
                serde_json::json!({"tenant_id": "acme", "aud": "x", "exp": exp()}),
                "audience",
            ),
            (
                serde_json::json!({"tenant_id": "acme", "aud": null, "exp": exp()}),
                "aud",
            ),
            (
                serde_json::json!({"tenant_id": "acme", "scope": "clusters:read", "exp": exp()}),
                "scope",
            ),
            (
                serde_json::json!({"tenant_id": "acme", "scope": null, "exp": exp()}),
                "scope",
            ),
            (
                serde_json::json!({"tenant_id": "acme", "iat": null, "exp": exp()}),
                "iat",
            ),
            (
                serde_json::json!({"tenant_id": "acme", "iat": now, "exp": now + 12 * 3600}),
                "longer",
            ),
            (
                serde_json::json!({"tenant_id": "acme", "aud": "strato-api",
                    "scope": "clusters:read clusters:write", "exp": now + 12 * 3600}),
                "audience",
            ),
        ] {
            let e = authenticate(&c, Some(&sign(claims.clone(), KEY))).unwrap_err();
            assert!(e.to_lowercase().contains(why), "{claims}: {e}");
        }
        let cases = [
            (None, "no token"),
            (
                Some(sign(
                    serde_json::json!({"tenant_id": "acme", "exp": exp()}),
                    "other",
                )),
                "invalid",
            ),
            (
                Some(sign(
                    serde_json::json!({"tenant_id": "acme", "exp": exp() - 4000}),
                    KEY,
                )),
                "expired",
            ),
            (Some(sign(serde_json::json!({"tenant_id": "acme"}), KEY)), "exp"),
            (
                Some(sign(serde_json::json!({"org": "acme", "exp": exp()}), KEY)),
                "'tenant_id' claim",
            ),
            (
                Some(sign(
                    serde_json::json!({"tenant_id": "Not A Tenant", "exp": exp()}),
                    KEY,
                )),
                "not a valid tenant id",
            ),
        ];
        for (token, why) in cases {
            let e = authenticate(&c, token.as_deref()).unwrap_err();
            assert!(e.to_lowercase().contains(&why.to_lowercase()), "{why}: {e}");
        }
        let c = config(&[("STRATO_TENANT_CLAIM", "org"), ("STRATO_JWT_AUDIENCE", "strato")]).unwrap();
        let t = sign(
            serde_json::json!({"org": "globex", "aud": "strato", "exp": exp()}),
            KEY,
        );
        assert_eq!(authenticate(&c, Some(&t)).unwrap().0.as_str(), "globex");
        let t = sign(
            serde_json::json!({"org": "globex", "aud": "other", "exp": exp()}),
            KEY,
        );
        assert!(authenticate(&c, Some(&t)).is_err());
    }

    #[test]
    fn config_names_the_missing_variable_and_hides_the_secret() {
        let c = config(&[]).unwrap();
        assert_eq!(c.post_timeout, Duration::from_secs(3));
        assert!(!format!("{c:?}").contains(KEY));
        let e = config(&[("STRATO_JWT_SECRET", "")]).unwrap_err().to_string();
        assert!(e.contains("STRATO_JWT_SECRET"), "{e}");
        // Issue 16 finding 6: a guessable key refuses to start, saying how long it must be.
        let e = config(&[("STRATO_JWT_SECRET", "short-but-not-empty")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("STRATO_JWT_SECRET") && e.contains("at least 32"),
            "{e}"
        );
        let e = config(&[("STRATO_WS_POST_TIMEOUT_MS", "soon")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("STRATO_WS_POST_TIMEOUT_MS") && e.contains("soon"),
            "{e}"
        );
    }
}

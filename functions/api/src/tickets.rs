//! WebSocket tickets (`POST /v1/ws-tickets`): the caller's API credentials — whatever the HTTP API's
//! authorizer accepts, the identity provider's JWTs in AWS — traded for a short-lived HS256 token that the
//! `ws` function accepts at `$connect?token=`. A WebSocket API cannot use the HTTP API's JWT authorizer and a
//! browser cannot set headers on a WebSocket, so the token travels in the URL: it lives minutes, names only
//! the tenant and the subject, and is good for nothing but connecting.

use axum::http::StatusCode;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use secrecy::ExposeSecret;
use serde_json::json;
use time::Duration;

use crate::context::Ctx;
use crate::{caller::Caller, edge::Reply, error::ApiError, schema};

/// A WebSocket ticket.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = WsTicket)]
pub(crate) struct TicketView {
    /// An HS256 JWT for `$connect?token=`.
    pub token: String,
    #[schema(value_type = schema::Timestamp)]
    pub expires_at: String,
    /// How to use it.
    #[serde(rename = "use")]
    #[schema(rename = "use")]
    pub usage: &'static str,
}

/// How long a ticket can be used to connect. A connection, once open, lives on (API Gateway ends it
/// after 2 hours).
pub const TICKET_TTL: Duration = strato_connections::tickets::MAX_LIFETIME;

pub(crate) fn create(ctx: &Ctx, caller: &Caller) -> Result<Reply<TicketView>, ApiError> {
    let settings = ctx.config.ws_tickets.as_ref().ok_or_else(|| {
        ApiError::Config(
            "STRATO_JWT_SECRET is not set, so no WebSocket tickets can be issued (set it to the ws function's)"
                .into(),
        )
    })?;
    let now = time::OffsetDateTime::now_utc();
    let expires = now + TICKET_TTL;
    let mut claims = json!({
        "iat": now.unix_timestamp(),
        "exp": expires.unix_timestamp(),
        "scope": strato_connections::tickets::SCOPE,
        "aud": settings.audience,
    });
    claims[&ctx.config.tenant_claim] = json!(caller.tenant.as_str());
    if let Some(sub) = &caller.subject {
        claims["sub"] = json!(sub);
    }
    if let Some(iss) = &settings.issuer {
        claims["iss"] = json!(iss);
    }
    let token = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(settings.secret.expose_secret()),
    )
    .map_err(|e| ApiError::Config(format!("signing a WebSocket ticket: {e}")))?;
    Ok(Reply {
        status: StatusCode::CREATED,
        body: TicketView {
            token,
            expires_at: strato_domain::ts::format(expires),
            usage: "connect to the WebSocket API with ?token=<token> before expires_at",
        },
        location: None,
        etag: None,
    })
}

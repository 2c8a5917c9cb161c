//! `$connect?token=`: a WebSocket ticket (issued by the api at `POST /v1/ws-tickets`) checked: signature,
//! expiry, audience, the `ws:connect` scope and a life of at most five minutes, always — so no other token
//! signed with the same key opens a connection — then the tenant it names.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use secrecy::ExposeSecret;
use serde_json::Value;
use strato_connections::tickets::{MAX_LIFETIME, SCOPE};
use strato_model::ids::TenantId;

use crate::Config;

#[derive(Debug, thiserror::Error)]
enum AuthError {
    #[error("no token: connect with ?token=<JWT>")]
    Missing,
    #[error("the token is invalid or expired: {0}")]
    Invalid(String),
    #[error("the token has no '{0}' claim")]
    NoClaim(String),
    #[error("the token's '{0}' claim is not a valid tenant id")]
    BadTenant(String),
    #[error(
        "the token is not a WebSocket ticket: its scope lacks '{SCOPE}' (get one from POST /v1/ws-tickets)"
    )]
    NotATicket,
    #[error("the ticket lives longer than {MAX_LIFETIME} or has no 'iat' (get one from POST /v1/ws-tickets)")]
    TooLong,
}

/// Verifies the token and returns the tenant and subject.
pub fn authenticate(config: &Config, token: Option<&str>) -> Result<(TenantId, Option<String>), String> {
    authenticate_inner(config, token).map_err(|e| e.to_string())
}

fn authenticate_inner(config: &Config, token: Option<&str>) -> Result<(TenantId, Option<String>), AuthError> {
    let token = token.filter(|t| !t.is_empty()).ok_or(AuthError::Missing)?;
    // Audience, expiry and scope are always required: only a ticket opens a connection, not any token
    // signed with the same key.
    let mut v = Validation::new(Algorithm::HS256);
    v.set_audience(&[&config.audience]);
    v.set_required_spec_claims(&["exp", "aud"]);
    if let Some(i) = &config.issuer {
        v.set_issuer(&[i]);
    }
    let decode = |key: &[u8]| {
        jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &DecodingKey::from_secret(key), &v)
    };
    // The previous key (while a rotation overlaps) is tried only for a signature the current one refuses.
    let data = match (
        decode(config.jwt_secret.expose_secret()),
        &config.previous_jwt_secret,
    ) {
        (Err(e), Some(previous)) if *e.kind() == jsonwebtoken::errors::ErrorKind::InvalidSignature => {
            decode(previous.expose_secret())
        }
        (result, _) => result,
    }
    .map_err(|e| AuthError::Invalid(e.to_string()))?;
    let scoped = data
        .claims
        .get("scope")
        .and_then(Value::as_str)
        .is_some_and(|s| s.split_whitespace().any(|x| x == SCOPE));
    if !scoped {
        return Err(AuthError::NotATicket);
    }
    let at = |k: &str| data.claims.get(k).and_then(Value::as_i64);
    let short = match (at("iat"), at("exp")) {
        (Some(iat), Some(exp)) => exp - iat <= MAX_LIFETIME.whole_seconds(),
        _ => false,
    };
    if !short {
        return Err(AuthError::TooLong);
    }
    let claim = &config.tenant_claim;
    let raw = data
        .claims
        .get(claim)
        .and_then(Value::as_str)
        .ok_or_else(|| AuthError::NoClaim(claim.clone()))?;
    let tenant = raw
        .parse::<TenantId>()
        .map_err(|_| AuthError::BadTenant(claim.clone()))?;
    let subject = data.claims.get("sub").and_then(Value::as_str).map(str::to_owned);
    Ok((tenant, subject))
}

//! Tenant webhooks: where a tenant is told about drift, and how each call is signed — the contract a
//! receiver verifies.
//!
//! A call is `POST <url>` with a JSON body and
//! `X-Strato-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` (the scheme Stripe and
//! others use). The receiver recomputes the HMAC over the raw body with its copy of the secret, compares in
//! constant time, and refuses timestamps older than a few minutes, so a captured request cannot be replayed
//! later. `X-Strato-Delivery` (the operation id) is the same on every retry: receivers deduplicate on it.

use secrecy::{ExposeSecret, SecretString};
use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use time::OffsetDateTime;

use crate::ids::{ClusterId, OperationId, TenantId};

mod egress;
use crate::model::{DriftPolicy, ResourceChange};
pub use egress::{ALLOW_HTTP_ENV, ALLOW_LOOPBACK_ENV, ALLOWED, Egress, forbidden_kind};

pub const SIGNATURE_HEADER: &str = "X-Strato-Signature";
pub const EVENT_HEADER: &str = "X-Strato-Event";
pub const DELIVERY_HEADER: &str = "X-Strato-Delivery";

/// How far a signature's timestamp may be from the receiver's clock ([`verify`]'s usual tolerance).
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// Shortest secret accepted: an HMAC key a caller could guess protects nothing.
pub const MIN_SECRET_LEN: usize = 16;

/// A tenant's webhook: where to call and the secret calls are signed with. The secret is never printed
/// (`Debug` hides it, `secrecy` wipes it on drop) and never logged.
#[derive(Clone)]
pub struct Webhook {
    url: String,
    secret: SecretString,
}

impl PartialEq for Webhook {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url && self.secret.expose_secret() == other.secret.expose_secret()
    }
}

impl Eq for Webhook {}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &redacted_url(&self.url))
            .field("secret", &"(hidden)")
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("webhook url '{0}' must start with https:// (or http:// for a local receiver) and name a host")]
    Url(String),
    #[error("webhook secret must be at least {MIN_SECRET_LEN} characters")]
    ShortSecret,
    /// The URL points where Strato does not call ([`Egress`]): what is wrong with it, no secret in it.
    #[error("{0}")]
    Forbidden(String),
}

impl Webhook {
    pub fn new(url: impl Into<String>, secret: impl Into<String>) -> Result<Self, WebhookError> {
        let url = url.into();
        let secret = secret.into();
        let host = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default());
        if host.is_none_or(|h| h.is_empty() || h.contains(char::is_whitespace)) {
            return Err(WebhookError::Url(redacted_url(&url)));
        }
        // Characters, as the spec's `minLength` counts them (a byte count let 8 two-byte characters pass).
        if secret.chars().count() < MIN_SECRET_LEN {
            return Err(WebhookError::ShortSecret);
        }
        Ok(Self {
            url,
            secret: secret.into(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Scheme and host only: what logs and records may show (a path or query can carry a token).
    pub fn display_url(&self) -> String {
        redacted_url(&self.url)
    }

    pub fn secret(&self) -> &str {
        self.secret.expose_secret()
    }

    /// The signature header for `body` sent at `timestamp` (unix seconds).
    pub fn sign(&self, timestamp: i64, body: &[u8]) -> String {
        signature_header(self.secret.expose_secret().as_bytes(), timestamp, body)
    }
}

fn redacted_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            // user:password@host → host
            let host = host.rsplit('@').next().unwrap_or_default();
            format!("{scheme}://{host}")
        }
        None => "(not a url)".into(),
    }
}

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// `t=<timestamp>,v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`.
pub fn signature_header(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let sig = hex::encode(mac(secret, timestamp, body).finalize().into_bytes());
    format!("t={timestamp},v1={sig}")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature header is not 't=<unix seconds>,v1=<hex>'")]
    Malformed,
    #[error(
        "the signature's timestamp is {age_secs} s away from now (tolerance {tolerance_secs} s): a replay?"
    )]
    Expired { age_secs: i64, tolerance_secs: i64 },
    #[error("no v1 signature matches the body")]
    Mismatch,
}

/// Checks a received call: the header's timestamp is within `tolerance_secs` of `now` and one of its `v1`
/// signatures is the HMAC of `"<t>.<body>"` (compared in constant time). Returns the timestamp.
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: OffsetDateTime,
    tolerance_secs: i64,
) -> Result<i64, SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => timestamp = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            Some(("v1", v)) => signatures.push(hex::decode(v).map_err(|_| SignatureError::Malformed)?),
            // Other schemes (a future v2) are ignored, as receivers of such headers usually do.
            Some(_) => {}
            None => return Err(SignatureError::Malformed),
        }
    }
    let t = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let age = (now.unix_timestamp() - t).abs();
    if age > tolerance_secs {
        return Err(SignatureError::Expired {
            age_secs: age,
            tolerance_secs,
        });
    }
    let expected = mac(secret, t, body);
    if signatures
        .iter()
        .any(|s| expected.clone().verify_slice(s).is_ok())
    {
        Ok(t)
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The tag that ends the one note an operation keeps per webhook delivery (queued, each attempt, the
/// outcome): the status function adds it when it queues the delivery, the webhooks function replaces it.
pub fn delivery_tag(delivery_id: &str) -> String {
    format!("[delivery {delivery_id}]")
}

/// Whether `notes` hold the note of delivery `delivery_id`.
pub fn has_delivery_note(notes: &[String], delivery_id: &str) -> bool {
    let tag = delivery_tag(delivery_id);
    notes.iter().any(|n| n.ends_with(&tag))
}

/// `X-Strato-Event` of a drift notification.
pub const DRIFT_DETECTED: &str = "drift.detected";

/// The body of a drift notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftEvent {
    /// Always [`DRIFT_DETECTED`].
    #[serde(rename = "type")]
    pub kind: String,
    pub tenant_id: TenantId,
    pub cluster_id: ClusterId,
    pub cluster_name: String,
    /// The drift check that found it (also `X-Strato-Delivery`).
    pub operation_id: OperationId,
    #[serde(with = "crate::ts")]
    pub checked_at: OffsetDateTime,
    pub policy: DriftPolicy,
    /// Each drifted resource with the actions a plan would take to restore it.
    pub changed_resources: Vec<ResourceChange>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec-0123456789abcdef";

    #[test]
    fn a_signature_verifies_and_any_change_breaks_it() {
        let hook = Webhook::new("https://hooks.example.com/strato?token=abc", SECRET).unwrap();
        let now = OffsetDateTime::now_utc();
        let t = now.unix_timestamp();
        let body = br#"{"type":"drift.detected"}"#;
        let header = hook.sign(t, body);
        assert!(header.starts_with(&format!("t={t},v1=")), "{header}");
        assert_eq!(
            verify(SECRET.as_bytes(), &header, body, now, DEFAULT_TOLERANCE_SECS),
            Ok(t)
        );
        // Another body, another secret, another timestamp under the same signature: all refused.
        assert_eq!(
            verify(SECRET.as_bytes(), &header, b"{}", now, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"another-secret-0000", &header, body, now, 300),
            Err(SignatureError::Mismatch)
        );
        let forged = header.replace(&format!("t={t}"), &format!("t={}", t + 1));
        assert_eq!(
            verify(SECRET.as_bytes(), &forged, body, now, 300),
            Err(SignatureError::Mismatch)
        );
        // A replay ten minutes later is refused even though the signature is genuine.
        let later = now + time::Duration::minutes(10);
        assert!(matches!(
            verify(SECRET.as_bytes(), &header, body, later, 300),
            Err(SignatureError::Expired { age_secs: 600, .. })
        ));
        for bad in ["", "v1=00", "t=x,v1=00", "t=1", "t=1,v1=zz", "garbage"] {
            assert_eq!(
                verify(SECRET.as_bytes(), bad, body, now, 300),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_sample_call_is_a_drift_event() {
        let path = format!(
            "{}/../../events/webhook/drift-detected.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let sample: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let event: DriftEvent = serde_json::from_value(sample["body"].clone()).unwrap();
        assert_eq!(event.kind, DRIFT_DETECTED);
        assert_eq!(sample["headers"]["x-strato-event"], DRIFT_DETECTED);
        assert_eq!(
            sample["headers"]["x-strato-delivery"],
            event.operation_id.as_str()
        );
        assert_eq!(serde_json::to_value(&event).unwrap(), sample["body"]);
    }

    #[test]
    fn the_secret_and_the_urls_path_are_never_printed() {
        let hook = Webhook::new("https://user:pw@hooks.example.com/p/abc?token=xyz", SECRET).unwrap();
        let shown = format!("{hook:?}");
        assert!(
            !shown.contains(SECRET) && !shown.contains("xyz") && !shown.contains("pw"),
            "{shown}"
        );
        assert_eq!(hook.display_url(), "https://hooks.example.com");
        assert_eq!(
            Webhook::new("ftp://x", SECRET).unwrap_err(),
            WebhookError::Url("ftp://x".into())
        );
        assert_eq!(
            Webhook::new("https://", SECRET).unwrap_err(),
            WebhookError::Url("https://".into())
        );
        assert_eq!(
            Webhook::new("https://h.example.com", "short").unwrap_err(),
            WebhookError::ShortSecret
        );
    }
}

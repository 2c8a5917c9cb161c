//! Tenant webhooks: where a tenant is told about lifecycle events, and how each call is signed — the
//! contract a receiver verifies. Calls follow the Standard Webhooks specification
//! (<https://www.standardwebhooks.com>), so any of its libraries verifies them:
//!
//! - `webhook-id`: the event's id, deterministic (the same on every retry and duplicate; receivers
//!   deduplicate on it);
//! - `webhook-timestamp`: unix seconds of this attempt (each attempt is signed afresh);
//! - `webhook-signature`: `v1,<base64(HMAC-SHA256(key, "<id>.<timestamp>.<body>"))>`;
//! - body: `{"type": "...", "timestamp": "...", "data": {...}}` ([`Envelope`]).
//!
//! The key: a secret given as `whsec_<base64>` (the spec's form) is the base64-decoded bytes (standard
//! alphabet, padding optional), at least 16 of them; any other secret (every secret set before Standard
//! Webhooks) has at least 16 characters and is its UTF-8 bytes as they are — the same key as `whsec_` +
//! base64(secret), which is what a receiver's library is given.
//!
//! It stands on `strato-model` alone (ids, operations, drift), so the webhooks function links no catalog,
//! template or port; `strato-domain` re-exports it as `strato_domain::webhook`.

use secrecy::{ExposeSecret, SecretString};
use std::fmt;

use base64::Engine as _;
use base64::alphabet;
#[cfg(test)]
use base64::engine::general_purpose::STANDARD as B64;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use strato_model::ids::{ClusterId, OperationId, TenantId};

mod egress;
mod events;
mod message;
mod signature;
pub use egress::{ALLOW_HTTP_ENV, ALLOW_LOOPBACK_ENV, ALLOWED, Egress, forbidden_kind};
pub use events::{ClusterStateEvent, Envelope, EventType, OperationEvent, event_id, parse_event_list};
pub use message::WebhookMessage;
pub use signature::{SignatureError, sign, verify};
use strato_model::model::{DriftPolicy, ResourceChange};

/// The Standard Webhooks headers.
pub const ID_HEADER: &str = "webhook-id";
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// How far a signature's timestamp may be from the receiver's clock ([`verify`]'s usual tolerance).
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// Shortest secret accepted (characters of a plain secret, decoded bytes of a `whsec_` key): an HMAC key a
/// caller could guess protects nothing.
pub const MIN_SECRET_LEN: usize = 16;

/// What a webhook secret must be, for messages that say what would be accepted.
pub const SECRET_RULE: &str = "whsec_ followed by the base64 (standard alphabet, padding optional) of a key of \
                               at least 16 bytes, as Standard Webhooks generates; or any other string of at \
                               least 16 characters";

/// How a `whsec_` key is decoded: the standard alphabet, with or without the `=` padding (generators differ:
/// 19 random bytes are 26 characters unpadded, 28 padded; the same key).
const WHSEC_B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The prefix of a secret in the Standard Webhooks form.
pub const WHSEC_PREFIX: &str = "whsec_";

/// A tenant's webhook: where to call, the secret calls are signed with, and which events it wants. The
/// secret is never printed (`Debug` hides it, `secrecy` wipes it on drop) and never logged.
#[derive(Clone)]
pub struct Webhook {
    url: String,
    secret: SecretString,
    /// `None`: every event.
    events: Option<Vec<EventType>>,
}

impl PartialEq for Webhook {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.secret.expose_secret() == other.secret.expose_secret()
            && self.events == other.events
    }
}

impl Eq for Webhook {}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &redacted_url(&self.url))
            .field("secret", &"(hidden)")
            .field("events", &self.events)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("webhook url '{0}' must start with https:// (or http:// for a local receiver) and name a host")]
    Url(String),
    /// A plain secret (no `whsec_`) of this many characters.
    #[error(
        "a webhook secret without the whsec_ prefix must have at least {MIN_SECRET_LEN} characters; this one has {0}"
    )]
    ShortSecret(usize),
    /// A `whsec_` secret whose key decodes to this many bytes.
    #[error(
        "a whsec_ webhook secret's key is the base64 after whsec_, decoded, and must be at least {MIN_SECRET_LEN} bytes; this one decodes to {0}"
    )]
    ShortKey(usize),
    /// A `whsec_` secret whose rest is not base64.
    #[error(
        "a whsec_ webhook secret must continue with base64 (standard alphabet: A-Z a-z 0-9 + /, padding optional) of a key of at least {MIN_SECRET_LEN} bytes"
    )]
    NotBase64,
    /// The URL points where Strato does not call ([`Egress`]): what is wrong with it, no secret in it.
    #[error("{0}")]
    Forbidden(String),
    #[error("unknown webhook event type '{0}'; known: {known}", known = EventType::names().join(", "))]
    UnknownEvent(String),
}

/// The HMAC key of `secret` (see the module doc); `None` when a `whsec_` secret is not base64.
pub fn signing_key(secret: &str) -> Option<Vec<u8>> {
    match secret.strip_prefix(WHSEC_PREFIX) {
        Some(b64) => WHSEC_B64.decode(b64).ok(),
        None => Some(secret.as_bytes().to_vec()),
    }
}

/// Whether `secret` is strong enough to sign with ([`SECRET_RULE`]): what counts is the key, so a `whsec_`
/// secret is measured by its decoded bytes and any other by its characters (as the API's `minLength`
/// counts them: a byte count let 8 two-byte characters pass).
pub fn check_secret(secret: &str) -> Result<(), WebhookError> {
    match secret.strip_prefix(WHSEC_PREFIX) {
        Some(_) => match signing_key(secret) {
            None => Err(WebhookError::NotBase64),
            Some(k) if k.len() < MIN_SECRET_LEN => Err(WebhookError::ShortKey(k.len())),
            Some(_) => Ok(()),
        },
        None => match secret.chars().count() {
            n if n < MIN_SECRET_LEN => Err(WebhookError::ShortSecret(n)),
            _ => Ok(()),
        },
    }
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
        check_secret(&secret)?;
        Ok(Self {
            url,
            secret: secret.into(),
            events: None,
        })
    }

    /// Only these events are sent (`None` or an empty list: all of them).
    pub fn with_events(mut self, events: Option<Vec<EventType>>) -> Self {
        self.events = events.filter(|e| !e.is_empty());
        self
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

    /// The events this webhook subscribed to (`None`: all).
    pub fn events(&self) -> Option<&[EventType]> {
        self.events.as_deref()
    }

    /// Whether an event named `event` is sent to this webhook. A name no type has (a message queued by a
    /// newer version) is sent only to webhooks that take everything.
    pub fn wants(&self, event: &str) -> bool {
        match &self.events {
            None => true,
            Some(list) => list.iter().any(|e| e.as_str() == event),
        }
    }

    /// The `webhook-signature` of event `id` with `body`, sent at `timestamp` (unix seconds).
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        // `new` checked that the key decodes.
        let key = signing_key(self.secret.expose_secret()).unwrap_or_default();
        sign(&key, id, timestamp, body)
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

/// The tag that ends the one note an operation keeps per webhook delivery (queued, each attempt, the
/// outcome): the emitter adds it when it queues the delivery, the webhooks function replaces it.
pub fn delivery_tag(delivery_id: &str) -> String {
    format!("[delivery {delivery_id}]")
}

/// Whether `notes` hold the note of delivery `delivery_id`.
pub fn has_delivery_note(notes: &[String], delivery_id: &str) -> bool {
    let tag = delivery_tag(delivery_id);
    notes.iter().any(|n| n.ends_with(&tag))
}

/// The type of a drift notification.
pub const DRIFT_DETECTED: &str = "drift.detected";

/// The `data` of a `drift.detected` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftEvent {
    pub tenant_id: TenantId,
    pub cluster_id: ClusterId,
    pub cluster_name: String,
    /// The drift check that found it.
    pub operation_id: OperationId,
    #[serde(with = "strato_model::ts")]
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
    fn the_sample_call_is_a_drift_event() {
        let path = format!(
            "{}/../../events/webhook/drift-detected.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let sample: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // The body exactly as posted (the signature covers these bytes).
        let raw = sample["raw_body"].as_str().unwrap();
        let envelope: Envelope = serde_json::from_str(raw).unwrap();
        assert_eq!(serde_json::to_value(&envelope).unwrap(), sample["body"]);
        assert_eq!(envelope.kind, DRIFT_DETECTED);
        let event: DriftEvent = serde_json::from_value(envelope.data.clone()).unwrap();
        let h = |k: &str| sample["headers"][k].as_str().unwrap().to_owned();
        assert_eq!(
            h(ID_HEADER),
            event_id(EventType::DriftDetected, event.operation_id.as_str())
        );
        // The sample's signature is genuine (its secret is in the sample).
        let t: i64 = h(TIMESTAMP_HEADER).parse().unwrap();
        let key = signing_key(sample["secret"].as_str().unwrap()).unwrap();
        let now = OffsetDateTime::from_unix_timestamp(t).unwrap();
        let sig = verify(
            &key,
            &h(ID_HEADER),
            &h(TIMESTAMP_HEADER),
            &h(SIGNATURE_HEADER),
            raw.as_bytes(),
            now,
            DEFAULT_TOLERANCE_SECS,
        );
        assert_eq!(sig, Ok(t));
    }

    #[test]
    fn plain_and_whsec_secrets_map_to_the_same_key() {
        let plain = Webhook::new("https://h.example.com", SECRET).unwrap();
        let whsec = format!("{WHSEC_PREFIX}{}", B64.encode(SECRET));
        let std_form = Webhook::new("https://h.example.com", whsec).unwrap();
        assert_eq!(plain.sign("evt_1", 5, b"{}"), std_form.sign("evt_1", 5, b"{}"));
        // A whsec_ key must decode and be long enough.
        assert_eq!(
            Webhook::new("https://h.example.com", "whsec_***notbase64***").unwrap_err(),
            WebhookError::NotBase64
        );
        assert_eq!(
            Webhook::new("https://h.example.com", "whsec_c2hvcnQ=").unwrap_err(),
            WebhookError::ShortKey(5)
        );
    }

    /// What counts for a `whsec_` secret is its decoded key: 32 characters of `whsec_` and unpadded base64
    /// (a 19-byte key) is accepted, padded or not, and signs with those bytes; a secret longer than 16
    /// characters whose key is short is refused naming bytes, a short plain one naming characters.
    #[test]
    fn a_whsec_secret_is_measured_by_its_decoded_key() {
        let key: Vec<u8> = (1..=19).collect();
        let unpadded = format!("{WHSEC_PREFIX}{}", B64.encode(&key).trim_end_matches('='));
        assert_eq!(unpadded.len(), 32, "{unpadded}");
        let padded = format!("{WHSEC_PREFIX}{}", B64.encode(&key));
        for secret in [&unpadded, &padded] {
            assert_eq!(check_secret(secret), Ok(()), "{secret}");
            assert_eq!(signing_key(secret).as_deref(), Some(&key[..]), "{secret}");
            Webhook::new("https://h.example.com", secret.as_str()).unwrap();
        }
        // 15 bytes: 26 characters in all, more than 16, still too short a key.
        let short = format!("{WHSEC_PREFIX}{}", B64.encode([7u8; 15]));
        let e = check_secret(&short).unwrap_err();
        assert_eq!(e, WebhookError::ShortKey(15));
        let shown = e.to_string();
        assert!(
            shown.contains("at least 16 bytes") && shown.contains("decodes to 15"),
            "{shown}"
        );
        assert!(!shown.contains("characters"), "{shown}");
        let e = check_secret("\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}").unwrap_err();
        assert_eq!(e, WebhookError::ShortSecret(8));
        assert!(e.to_string().contains("at least 16 characters"), "{e}");
        assert_eq!(check_secret("whsec_not base64!"), Err(WebhookError::NotBase64));
    }

    #[test]
    fn a_subscription_gets_only_its_events() {
        let all = Webhook::new("https://h.example.com", SECRET).unwrap();
        assert!(all.wants("cluster.expiring") && all.wants("some.future.type"));
        let some = all
            .clone()
            .with_events(Some(vec![EventType::OperationFailed, EventType::ClusterExpiring]));
        assert!(some.wants("operation.failed") && some.wants("cluster.expiring"));
        assert!(!some.wants("operation.succeeded") && !some.wants("some.future.type"));
        assert_eq!(all.clone().with_events(Some(vec![])), all, "an empty list is all");
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
            WebhookError::ShortSecret(5)
        );
    }
}

//! Calling a tenant's webhook when a drift check finds drift (policy `notify`).
//!
//! The call happens after the drift result, the operation's end and the lock hand-off are saved, so it can
//! delay nothing but the rest of this batch, and that by at most [`WebhookPolicy::budget`]. Each attempt has
//! a short timeout; connection errors, timeouts, 408, 429 and 5xx are retried with jittered exponential
//! backoff (backon), other answers are final. Each attempt is signed afresh (its own timestamp), so a slow
//! retry is not refused as a replay. The outcome is noted on the drift-check operation; the secret and the
//! URL's path and query never reach a log or a record.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use strato_domain::ids::TenantId;
use strato_domain::ports::{PortError, Webhooks};
use strato_domain::webhook::{DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, Webhook};

/// How hard a webhook is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookPolicy {
    /// Per attempt (connect + answer).
    pub attempt_timeout: Duration,
    pub attempts: u32,
    pub min_delay: Duration,
    pub max_delay: Duration,
}

impl Default for WebhookPolicy {
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_secs(3),
            attempts: 3,
            min_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl WebhookPolicy {
    /// The longest one delivery can take, retries and waits included.
    pub fn budget(&self) -> Duration {
        self.attempt_timeout * self.attempts + self.max_delay * self.attempts.saturating_sub(1)
    }
}

/// What became of one notification.
pub use strato_domain::ports::WebhookDelivery as Delivery;

/// Tenants' webhooks on AWS: the webhook as the tenants table holds it, delivered over HTTPS by [`deliver`].
#[derive(Debug, Clone, Copy)]
pub struct HttpWebhooks<'a> {
    pub store: &'a strato_aws::store::Store,
    pub http: &'a reqwest::Client,
    pub policy: &'a WebhookPolicy,
}

impl Webhooks for HttpWebhooks<'_> {
    async fn webhook_of(&self, tenant: &TenantId) -> Result<Option<Webhook>, PortError> {
        Ok(self.store.tenant_webhook(tenant).await?)
    }

    async fn deliver(&self, hook: &Webhook, event: &str, delivery_id: &str, body: &[u8]) -> Delivery {
        deliver(self.http, hook, event, delivery_id, body, self.policy).await
    }
}

#[derive(Debug)]
struct AttemptError {
    status: Option<u16>,
    message: String,
    retryable: bool,
}

/// Posts `body` to `hook`, signed, retrying what may succeed later.
pub async fn deliver(
    http: &reqwest::Client,
    hook: &Webhook,
    event: &str,
    delivery_id: &str,
    body: &[u8],
    policy: &WebhookPolicy,
) -> Delivery {
    let attempts = AtomicU32::new(0);
    let attempt = || async {
        attempts.fetch_add(1, Ordering::Relaxed);
        let t = time::OffsetDateTime::now_utc().unix_timestamp();
        let sent = http
            .post(hook.url())
            .timeout(policy.attempt_timeout)
            .header("content-type", "application/json")
            .header(
                "user-agent",
                concat!("strato-webhook/", env!("CARGO_PKG_VERSION")),
            )
            .header(EVENT_HEADER, event)
            .header(DELIVERY_HEADER, delivery_id)
            .header(SIGNATURE_HEADER, hook.sign(t, body))
            .body(body.to_vec())
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => Ok(r.status().as_u16()),
            Ok(r) => {
                let s = r.status().as_u16();
                Err(AttemptError {
                    status: Some(s),
                    message: format!("the receiver answered HTTP {s}"),
                    retryable: s == 408 || s == 429 || s >= 500,
                })
            }
            // `without_url`: the URL's path or query may hold a token.
            Err(e) => Err(AttemptError {
                status: None,
                message: if e.is_timeout() {
                    format!("no answer within {} ms", policy.attempt_timeout.as_millis())
                } else {
                    error_chain(&e.without_url())
                },
                retryable: true,
            }),
        }
    };
    let result = attempt
        .retry(
            ExponentialBuilder::default()
                .with_min_delay(policy.min_delay)
                .with_max_delay(policy.max_delay)
                .with_max_times(policy.attempts.saturating_sub(1) as usize)
                .with_jitter(),
        )
        .when(|e: &AttemptError| e.retryable)
        .await;
    let attempts = attempts.load(Ordering::Relaxed);
    match result {
        Ok(status) => Delivery {
            delivered: true,
            attempts,
            status: Some(status),
            error: None,
        },
        Err(e) => Delivery {
            delivered: false,
            attempts,
            status: e.status,
            error: Some(e.message),
        },
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The line recorded on the operation.
pub fn note(hook: &Webhook, event: &str, d: &Delivery, at: time::OffsetDateTime) -> String {
    let at = strato_domain::ts::format(at);
    let tries = if d.attempts == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{} attempts", d.attempts)
    };
    if d.delivered {
        format!(
            "{at}: webhook {event} delivered to {} (HTTP {}, {tries})",
            hook.display_url(),
            d.status.unwrap_or_default()
        )
    } else {
        format!(
            "{at}: webhook {event} NOT delivered to {} after {tries}: {}",
            hook.display_url(),
            d.error.as_deref().unwrap_or("unknown error")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_bounds_a_delivery() {
        let p = WebhookPolicy::default();
        assert_eq!(p.budget(), Duration::from_secs(13));
        let one = WebhookPolicy { attempts: 1, ..p };
        assert_eq!(one.budget(), Duration::from_secs(3));
    }

    #[test]
    fn notes_show_the_host_only() {
        let hook = Webhook::new("https://hooks.example.com/t/SECRETPATH?k=v", "0123456789abcdef0").unwrap();
        let d = Delivery {
            delivered: false,
            attempts: 3,
            status: Some(503),
            error: Some("the receiver answered HTTP 503".into()),
        };
        let n = note(&hook, "drift.detected", &d, time::OffsetDateTime::UNIX_EPOCH);
        assert!(
            n.contains("NOT delivered to https://hooks.example.com after 3 attempts"),
            "{n}"
        );
        assert!(
            !n.contains("SECRETPATH") && !n.contains("0123456789abcdef0"),
            "{n}"
        );
    }
}

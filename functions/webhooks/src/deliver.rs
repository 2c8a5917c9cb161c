//! One POST of a notification to a tenant's webhook, and the note its outcome leaves on the operation.
//!
//! One attempt per delivery of the queue message: the queue's redeliveries are the retries (with a back-off
//! between them), so a slow receiver holds up one record for at most [`DeliveryPolicy::attempt_timeout`].
//! Each attempt is signed afresh (its own timestamp), so a late retry is not refused as a replay. Redirects
//! are not followed (a receiver must answer itself; a redirect could send the signed body elsewhere). The
//! secret and the URL's path and query never reach a log or a note.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use strato_domain::webhook::{Egress, ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, Webhook, delivery_tag};

use crate::WebhooksError;
use time::OffsetDateTime;

/// How a delivery is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryPolicy {
    /// Per attempt (connect + answer).
    pub attempt_timeout: Duration,
    /// Attempts before giving up: the `webhooks` queue's deliveries before its DLQ.
    pub max_attempts: u32,
}

impl Default for DeliveryPolicy {
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_secs(5),
            max_attempts: strato_aws::resources::queue("webhooks").max_receive_count,
        }
    }
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The receiver answered 2xx.
    Delivered { status: u16 },
    Failed {
        /// The receiver's HTTP status, if it answered.
        status: Option<u16>,
        /// Why (no URL in it).
        error: String,
        /// Whether a later attempt may succeed: no answer, 408, 429, 5xx.
        retryable: bool,
    },
}

/// An HTTP client for webhooks: no redirects followed, no proxy (the address check must see the address
/// connected to), and a resolver that drops every address `egress` refuses.
pub fn client(egress: Egress) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { egress }))
        .user_agent(concat!("strato-webhook/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

/// Resolves a receiver's host name and keeps only addresses webhooks may reach. The check and the connect
/// use the same answer, so a name that changes between them (DNS rebinding) cannot slip through.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub egress: Egress,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let egress = self.egress;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = all
                .iter()
                .copied()
                .filter(|a| egress.address_allowed(a.ip()))
                .collect();
            if allowed.is_empty() {
                // Operators' logs may show what it resolved to; the tenant's note never does.
                tracing::warn!(%host, resolved = ?all, "webhook host resolves only to forbidden addresses");
                return Err(Box::new(WebhooksError::ForbiddenAddress { host }) as BoxError);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Posts `body` to `hook` once, signed the Standard Webhooks way with event id `delivery_id`, if `egress`
/// lets the call go there (a webhook stored before the guard existed is checked here too). `event` is
/// only for the caller's logs: the type is in the body.
pub async fn post(
    http: &reqwest::Client,
    egress: Egress,
    hook: &Webhook,
    _event: &str,
    delivery_id: &str,
    body: &[u8],
    timeout: Duration,
) -> Attempt {
    if let Err(e) = egress.check_call(hook.url()) {
        // Retryable like any unreachable receiver, so the note and the attempts tell nothing apart.
        return Attempt::Failed {
            status: None,
            error: format!("refused by the egress policy: {e}"),
            retryable: true,
        };
    }
    let t = OffsetDateTime::now_utc().unix_timestamp();
    let sent = http
        .post(hook.url())
        .timeout(timeout)
        .header("content-type", "application/json")
        .header(ID_HEADER, delivery_id)
        .header(TIMESTAMP_HEADER, t.to_string())
        .header(SIGNATURE_HEADER, hook.sign(delivery_id, t, body))
        .body(body.to_vec())
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() => Attempt::Delivered {
            status: r.status().as_u16(),
        },
        Ok(r) => {
            let s = r.status().as_u16();
            Attempt::Failed {
                status: Some(s),
                error: if r.status().is_redirection() {
                    format!("the receiver answered HTTP {s} (redirects are not followed)")
                } else {
                    format!("the receiver answered HTTP {s}")
                },
                retryable: s == 408 || s == 429 || s >= 500,
            }
        }
        // `without_url`: the URL's path or query may hold a token.
        Err(e) => Attempt::Failed {
            status: None,
            error: if e.is_timeout() {
                format!("no answer within {} ms", timeout.as_millis())
            } else {
                error_chain(&e.without_url())
            },
            retryable: true,
        },
    }
}

/// The whole chain, for operators' logs only (never a note: it would map the receiver's network).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Where a delivery stands, as its note on the operation says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteState {
    /// Queued (the status function's note) or attempts failed so far; more will come.
    Retrying,
    /// Delivered, or given up: nothing more to do for this delivery id.
    Final,
}

/// The state of delivery `delivery_id` according to `notes`; `None` when no attempt was recorded.
pub fn note_state(notes: &[String], delivery_id: &str) -> Option<NoteState> {
    let tag = delivery_tag(delivery_id);
    let note = notes.iter().find(|n| n.ends_with(&tag))?;
    Some(if note.contains(" delivered to ") {
        NoteState::Final
    } else {
        NoteState::Retrying
    })
}

/// Puts `line` as the note of `delivery_id`: replaces the note an earlier attempt left, else adds it.
/// `false` when the notes already say exactly that (a duplicate).
pub fn set_note(notes: &mut Vec<String>, delivery_id: &str, line: String) -> bool {
    let tag = delivery_tag(delivery_id);
    match notes.iter_mut().find(|n| n.ends_with(&tag)) {
        Some(n) if *n == line => false,
        Some(n) => {
            *n = line;
            true
        }
        None => {
            notes.push(line);
            true
        }
    }
}

/// Why any attempt failed, as a tenant is told: the same words whatever happened (see the module doc).
pub const NOT_DELIVERED: &str = "the receiver did not answer with 2xx";

/// The note after attempt `attempt` of `max` came to `outcome`; `last` when no attempt will follow.
#[allow(clippy::too_many_arguments)] // one note's every part; a struct would only rename them
pub fn note(
    hook: &Webhook,
    event: &str,
    delivery_id: &str,
    outcome: &Attempt,
    attempt: u32,
    max: u32,
    last: bool,
    at: OffsetDateTime,
) -> String {
    let at = strato_domain::ts::format(at);
    let to = hook.display_url();
    let tag = delivery_tag(delivery_id);
    match outcome {
        Attempt::Delivered { .. } => {
            format!("{at}: webhook {event} delivered to {to} (attempt {attempt} of {max}) {tag}")
        }
        Attempt::Failed { .. } if last => {
            format!(
                "{at}: webhook {event} NOT delivered to {to}: {NOT_DELIVERED} (attempt {attempt} of {max}; no more attempts) {tag}"
            )
        }
        Attempt::Failed { .. } => {
            format!(
                "{at}: webhook {event} to {to}: not delivered: {NOT_DELIVERED} (attempt {attempt} of {max}); will retry {tag}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_show_the_host_only_and_one_note_per_delivery() {
        let hook = Webhook::new("https://hooks.example.com/t/SECRETPATH?k=v", "0123456789abcdef0").unwrap();
        let failed = Attempt::Failed {
            status: Some(503),
            error: "the receiver answered HTTP 503".into(),
            retryable: true,
        };
        let at = OffsetDateTime::UNIX_EPOCH;
        let first = note(&hook, "drift.detected", "op-1", &failed, 1, 3, false, at);
        let last = note(&hook, "drift.detected", "op-1", &failed, 3, 3, true, at);
        assert!(
            last.contains("NOT delivered to https://hooks.example.com: the receiver did not answer with 2xx (attempt 3 of 3; no more attempts)"),
            "{last}"
        );
        for n in [&first, &last] {
            assert!(
                !n.contains("SECRETPATH") && !n.contains("0123456789abcdef0"),
                "{n}"
            );
            // Generic: neither the status nor the error says what the receiver's network looks like.
            assert!(!n.contains("503") && !n.contains("HTTP"), "{n}");
        }

        let mut notes = vec!["other".to_owned()];
        assert_eq!(note_state(&notes, "op-1"), None);
        assert!(set_note(&mut notes, "op-1", first.clone()));
        assert_eq!(note_state(&notes, "op-1"), Some(NoteState::Retrying));
        assert!(
            !set_note(&mut notes, "op-1", first),
            "a duplicate changes nothing"
        );
        assert!(set_note(&mut notes, "op-1", last));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(note_state(&notes, "op-1"), Some(NoteState::Final));
        assert_eq!(note_state(&notes, "op-2"), None);
    }
}

//! One POST of a notification to a tenant's webhook, and the note its outcome leaves on the operation.
//!
//! One attempt per delivery of the queue message: the queue's redeliveries are the retries (with a back-off
//! between them), so a slow receiver holds up one record for at most [`DeliveryPolicy::attempt_timeout`].
//! Each attempt is signed afresh (its own timestamp), so a late retry is not refused as a replay. Redirects
//! are not followed (a receiver must answer itself; a redirect could send the signed body elsewhere). The
//! secret and the URL's path and query never reach a log or a note.

use std::time::Duration;

use strato_domain::webhook::{DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, Webhook, delivery_tag};
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

/// An HTTP client for webhooks: no redirects followed, no proxy surprises beyond the environment's.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("strato-webhook/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_default()
}

/// Posts `body` to `hook` once, signed, as `event` with delivery id `delivery_id`.
pub async fn post(
    http: &reqwest::Client,
    hook: &Webhook,
    event: &str,
    delivery_id: &str,
    body: &[u8],
    timeout: Duration,
) -> Attempt {
    let t = OffsetDateTime::now_utc().unix_timestamp();
    let sent = http
        .post(hook.url())
        .timeout(timeout)
        .header("content-type", "application/json")
        .header(EVENT_HEADER, event)
        .header(DELIVERY_HEADER, delivery_id)
        .header(SIGNATURE_HEADER, hook.sign(t, body))
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

fn tries(n: u32) -> String {
    if n == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{n} attempts")
    }
}

/// The note after attempt `attempt` of `max` came to `outcome`; `last` when no attempt will follow.
pub fn note(
    hook: &Webhook,
    event: &str,
    delivery_id: &str,
    outcome: &Attempt,
    attempt: u32,
    last: bool,
    at: OffsetDateTime,
) -> String {
    let at = strato_domain::ts::format(at);
    let to = hook.display_url();
    let tag = delivery_tag(delivery_id);
    match outcome {
        Attempt::Delivered { status } => {
            format!(
                "{at}: webhook {event} delivered to {to} (HTTP {status}, {}) {tag}",
                tries(attempt)
            )
        }
        Attempt::Failed { error, .. } if last => {
            format!(
                "{at}: webhook {event} NOT delivered to {to} after {}: {error} {tag}",
                tries(attempt)
            )
        }
        Attempt::Failed { error, .. } => {
            format!("{at}: webhook {event} to {to}: attempt {attempt} failed: {error}; will retry {tag}")
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
        let first = note(&hook, "drift.detected", "op-1", &failed, 1, false, at);
        let last = note(&hook, "drift.detected", "op-1", &failed, 3, true, at);
        assert!(
            last.contains("NOT delivered to https://hooks.example.com after 3 attempts"),
            "{last}"
        );
        for n in [&first, &last] {
            assert!(
                !n.contains("SECRETPATH") && !n.contains("0123456789abcdef0"),
                "{n}"
            );
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

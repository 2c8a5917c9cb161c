//! A tenant's webhook receiver for the devstack tests: records every call and answers 204; what it returns
//! has had its Standard Webhooks signature verified (a bad signature on any call fails the test).

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use strato_domain::webhook::{self, Envelope};
use time::OffsetDateTime;

pub struct Receiver {
    pub url: String,
    calls: Arc<Mutex<Vec<(HeaderMap, Bytes, OffsetDateTime)>>>,
}

/// One verified call: its `webhook-id` and body.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: String,
    pub envelope: Envelope,
}

impl Receiver {
    pub async fn start() -> Self {
        let calls: Arc<Mutex<Vec<_>>> = Arc::default();
        let seen = calls.clone();
        let app = axum::Router::new().route(
            "/strato",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let seen = seen.clone();
                async move {
                    seen.lock()
                        .unwrap()
                        .push((headers, body, OffsetDateTime::now_utc()));
                    StatusCode::NO_CONTENT
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            url: format!("http://{addr}/strato"),
            calls,
        }
    }

    /// Every call so far, each signature verified with `secret` against the time it arrived.
    pub fn deliveries(&self, secret: &str) -> Vec<Delivery> {
        let key = webhook::signing_key(secret).expect("a usable secret");
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(h, body, at)| {
                let h = |k: &str| {
                    h.get(k)
                        .unwrap_or_else(|| panic!("a webhook call without {k}"))
                        .to_str()
                        .unwrap()
                        .to_owned()
                };
                let (id, ts, sig) = (
                    h(webhook::ID_HEADER),
                    h(webhook::TIMESTAMP_HEADER),
                    h(webhook::SIGNATURE_HEADER),
                );
                webhook::verify(&key, &id, &ts, &sig, body, *at, webhook::DEFAULT_TOLERANCE_SECS)
                    .unwrap_or_else(|e| panic!("webhook signature {sig}: {e}"));
                Delivery {
                    id,
                    envelope: serde_json::from_slice(body).expect("a JSON envelope"),
                }
            })
            .collect()
    }
}

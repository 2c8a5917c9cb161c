//! `Idempotency-Key` on POST/PATCH/DELETE: the first lasting answer for a key (not a [transient] one) is
//! stored for 24 hours and replayed for every repeat of the same request; the same key with a different
//! request is refused.

use std::future::Future;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use strato_aws::store::{IdempotentResponse, Reservation};
use strato_domain::ts;

use crate::problem::PROBLEM_JSON;
use crate::{caller::Caller, context::Ctx, error::ApiError};

/// sha256 of method, path, `If-Match` and body: what makes two requests "the same".
pub(crate) struct Fingerprint(String);

impl Fingerprint {
    pub fn new(method: &str, path: &str, if_match: Option<&[u8]>, body: &[u8]) -> Self {
        let mut h = Sha256::new();
        // Separators keep ("POST", "/a", "b") and ("POST", "/ab", "") apart.
        h.update(method.as_bytes());
        // A conditional request is another request than the same one unconditional (or with another
        // version). NUL never occurs in a method, so this cannot collide; without the header the
        // fingerprint is what it always was.
        if let Some(tag) = if_match {
            h.update(b"\0If-Match\0");
            h.update(tag);
        }
        h.update(b"\n");
        h.update(path.as_bytes());
        h.update(b"\n");
        h.update(body);
        Self(hex::encode(h.finalize()))
    }
}

fn check_key(key: &str) -> Result<(), ApiError> {
    let ok = (1..=255).contains(&key.len()) && key.chars().all(|c| c.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(ApiError::BadRequest {
            detail: "the Idempotency-Key header is not usable".into(),
            errors: vec![ApiError::field(
                "Idempotency-Key",
                "is empty, too long or has non-printable characters",
                "1-255 printable ASCII characters, e.g. a UUID",
            )],
        })
    }
}

fn replay(stored: IdempotentResponse) -> Response {
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    // Every 202 this API stores is about an operation (`{cluster, operation}`, or the operation itself for
    // a cancel); the Location points at it, as the first answer's did.
    let location = serde_json::from_str::<serde_json::Value>(&stored.body)
        .ok()
        .and_then(|v| {
            let id = v["operation"]["id"].as_str().or(v["id"].as_str())?;
            HeaderValue::from_str(&format!("/v1/operations/{id}")).ok()
        })
        .filter(|_| status == StatusCode::ACCEPTED);
    let content_type = if status.is_client_error() || status.is_server_error() {
        PROBLEM_JSON
    } else {
        "application/json"
    };
    let mut resp = (status, [(header::CONTENT_TYPE, content_type)], stored.body).into_response();
    if let Some(location) = location {
        resp.headers_mut().insert(header::LOCATION, location);
    }
    resp.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    resp
}

/// Whether an answer depends on the moment rather than on the request, so a retry with the same key must get
/// a fresh chance instead of a replay: server faults, quota refusals (429), conflicts with the resource's
/// current state or a concurrent writer (409), and a failed `If-Match` (412).
pub(crate) fn transient(status: StatusCode) -> bool {
    status.is_server_error()
        || matches!(
            status,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::CONFLICT | StatusCode::PRECONDITION_FAILED
        )
}

/// Answers a repeat from the store, or runs `work` and stores its answer.
pub(crate) async fn run<F, Fut>(
    ctx: &Ctx,
    caller: &Caller,
    key: &str,
    request: &Fingerprint,
    work: F,
) -> Result<Response, ApiError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Response>,
{
    check_key(key)?;
    // Reserve first: a concurrent repeat sees the reservation and waits its turn instead of acting twice.
    match ctx
        .store
        .idempotent_reserve(&caller.tenant, key, &request.0, ts::now())
        .await?
    {
        Reservation::Reserved => {}
        Reservation::Done(stored) if stored.request_hash != request.0 => {
            return Err(ApiError::IdempotencyMismatch);
        }
        Reservation::Done(stored) => return Ok(replay(stored)),
        Reservation::InProgress { request_hash } if request_hash != request.0 => {
            return Err(ApiError::IdempotencyMismatch);
        }
        Reservation::InProgress { .. } => {
            return Err(ApiError::Conflict(
                "a request with this Idempotency-Key is still being processed; repeat it in a few seconds \
                 to get its answer"
                    .into(),
            ));
        }
    }
    let resp = work().await;
    let status = resp.status();
    if transient(status) {
        ctx.store
            .idempotent_release(&caller.tenant, key, &request.0)
            .await?;
        return Ok(resp);
    }
    // Answers are small JSON documents already in memory; reading one cannot fail.
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let resp = Response::from_parts(parts, Body::from(bytes.clone()));
    let record = IdempotentResponse {
        request_hash: request.0.clone(),
        status: status.as_u16(),
        body: String::from_utf8_lossy(&bytes).into_owned(),
    };
    match ctx
        .store
        .idempotent_put(&caller.tenant, key, &record, ts::now())
        .await?
    {
        // Our reservation lapsed and another request answered meanwhile: its answer is the key's answer.
        Some(first) if first.request_hash == record.request_hash => Ok(replay(first)),
        Some(_) => Err(ApiError::IdempotencyMismatch),
        None => Ok(resp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_covers_method_path_and_body() {
        let a = Fingerprint::new("POST", "/v1/clusters", None, b"{}").0;
        assert_eq!(a, Fingerprint::new("POST", "/v1/clusters", None, b"{}").0);
        assert_ne!(a, Fingerprint::new("PATCH", "/v1/clusters", None, b"{}").0);
        assert_ne!(a, Fingerprint::new("POST", "/v1/clusters/x", None, b"{}").0);
        assert_ne!(a, Fingerprint::new("POST", "/v1/clusters", None, b"{ }").0);
        assert_ne!(
            Fingerprint::new("POST", "/a", None, b"b").0,
            Fingerprint::new("POST", "/ab", None, b"").0
        );
        let v1 = Fingerprint::new("PATCH", "/v1/clusters/x", Some(b"\"1\""), b"{}").0;
        assert_ne!(v1, Fingerprint::new("PATCH", "/v1/clusters/x", None, b"{}").0);
        assert_ne!(
            v1,
            Fingerprint::new("PATCH", "/v1/clusters/x", Some(b"\"2\""), b"{}").0
        );
    }

    #[test]
    fn transient_answers_are_not_kept_for_replay() {
        for s in [409, 412, 429, 500, 503] {
            assert!(transient(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [200, 202, 400, 404, 422] {
            assert!(!transient(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }

    #[test]
    fn keys_are_bounded_and_printable() {
        assert!(check_key("7f1c2a9e-3b1d-4e55-9f0a-1c2d3e4f5a6b").is_ok());
        assert!(check_key("").is_err());
        assert!(check_key(&"k".repeat(256)).is_err());
        assert!(check_key("a b").is_err());
    }
}

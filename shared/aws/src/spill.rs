//! Runner events larger than an SQS message (256 KiB): the runner stores the whole event in the
//! `artifacts` bucket ([`artifacts::spilled_event_key`]) and sends a small copy naming it in
//! [`artifacts::SPILLED_EVENT_FIELD`]; the status function reads the message through [`unspill`], which
//! swaps the reference for the stored event. A message without the field passes through unchanged.

use std::borrow::Cow;

use aws_sdk_s3::Client as S3;
use serde_json::Value;
use strato_domain::messages::RunnerEvent;
use strato_domain::run_proof;
use strato_terraform::artifacts;

use crate::error::Error;

/// The largest body sent as is: SQS takes 262,144 bytes, less some room for the message's attributes.
pub const INLINE_MAX: usize = 240 * 1024;

/// The body to send for `ev` with its run's `proof`: its JSON when small enough; else the event is stored
/// whole and the body is `small` (the same event without its bulk) with the stored object's key added. Both
/// carry the proof.
pub async fn spill_if_large(
    s3: &S3,
    bucket: &str,
    ev: &RunnerEvent,
    proof: &str,
    small: impl FnOnce() -> RunnerEvent,
) -> Result<String, Error> {
    let render = |what: &'static str, v: &RunnerEvent| {
        run_proof::proven_body(v, proof).map_err(|source| Error::Render { what, source })
    };
    let full = render("runner event", ev)?.to_string();
    if full.len() <= INLINE_MAX {
        return Ok(full);
    }
    let key = artifacts::spilled_event_key(ev.operation_id());
    s3.put_object()
        .bucket(bucket)
        .key(&key)
        .content_type("application/json")
        .body(full.into_bytes().into())
        .send()
        .await
        .map_err(|e| Error::aws("PutObject", e))?;
    let mut reference = render("runner event reference", &small())?;
    if let Some(obj) = reference.as_object_mut() {
        obj.insert(artifacts::SPILLED_EVENT_FIELD.into(), Value::String(key));
    }
    Ok(reference.to_string())
}

/// `body` itself, or — for a message naming a spilled event — the stored event, checked to be the same
/// operation's with the same fencing token.
pub async fn unspill<'b>(s3: &S3, bucket: &str, body: &'b str) -> Result<Cow<'b, str>, Error> {
    let Ok(Value::Object(msg)) = serde_json::from_str::<Value>(body) else {
        return Ok(Cow::Borrowed(body));
    };
    let Some(key) = msg.get(artifacts::SPILLED_EVENT_FIELD).and_then(Value::as_str) else {
        return Ok(Cow::Borrowed(body));
    };
    let invalid = |why: &str| Error::Corrupt {
        what: format!("spilled runner event {key}"),
        reason: why.to_owned(),
    };
    if !key.starts_with(artifacts::SPILLED_EVENT_PREFIX) {
        return Err(invalid("not a spilled event's key"));
    }
    let obj = s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| Error::aws("GetObject", e))?;
    let bytes = obj
        .body
        .collect()
        .await
        .map_err(|e| invalid(&e.to_string()))?
        .into_bytes();
    let text = String::from_utf8(bytes.to_vec()).map_err(|e| invalid(&e.to_string()))?;
    let stored: Value = serde_json::from_str(&text).map_err(|e| invalid(&e.to_string()))?;
    for field in ["operation_id", "fencing_token", "type"] {
        if stored.get(field) != msg.get(field) {
            return Err(invalid(&format!("its {field} differs from the message's")));
        }
    }
    Ok(Cow::Owned(text))
}

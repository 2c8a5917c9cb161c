//! Standard Webhooks signatures: `v1,<base64(HMAC-SHA256(key, "<id>.<timestamp>.<body>"))>`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use time::OffsetDateTime;

fn mac(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `webhook-signature` header of event `id` with `body` sent at `timestamp`, signed with `key` (the
/// decoded secret: [`super::signing_key`]).
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    format!(
        "v1,{}",
        B64.encode(mac(key, id, timestamp, body).finalize().into_bytes())
    )
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error(
        "the webhook headers are malformed (webhook-timestamp: unix seconds; webhook-signature: 'v1,<base64>' separated by spaces)"
    )]
    Malformed,
    #[error(
        "the signature's timestamp is {age_secs} s away from now (tolerance {tolerance_secs} s): a replay?"
    )]
    Expired { age_secs: i64, tolerance_secs: i64 },
    #[error("no v1 signature matches the body")]
    Mismatch,
}

/// Checks a received call as the spec says: `timestamp` is within `tolerance_secs` of `now`, and one of the
/// space-separated `v1,<base64>` signatures in `signatures` is the HMAC of `"<id>.<timestamp>.<body>"`
/// (compared in constant time; other versions are ignored). Returns the timestamp.
pub fn verify(
    key: &[u8],
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: OffsetDateTime,
    tolerance_secs: i64,
) -> Result<i64, SignatureError> {
    let t = timestamp
        .trim()
        .parse::<i64>()
        .map_err(|_| SignatureError::Malformed)?;
    let mut v1 = Vec::new();
    for part in signatures.split(' ').filter(|p| !p.is_empty()) {
        match part.split_once(',') {
            Some(("v1", s)) => v1.push(B64.decode(s).map_err(|_| SignatureError::Malformed)?),
            // Other schemes (v1a: asymmetric) are not ours; a receiver ignores them.
            Some(_) => {}
            None => return Err(SignatureError::Malformed),
        }
    }
    if v1.is_empty() || id.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let age = (now.unix_timestamp() - t).abs();
    if age > tolerance_secs {
        return Err(SignatureError::Expired {
            age_secs: age,
            tolerance_secs,
        });
    }
    let expected = mac(key, id, t, body);
    if v1.iter().any(|s| expected.clone().verify_slice(s).is_ok()) {
        Ok(t)
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing_key;

    // The specification's published test vector (the reference libraries' `sign` test).
    const VECTOR_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const VECTOR_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const VECTOR_T: i64 = 1614265330;
    const VECTOR_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const VECTOR_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn at(t: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(t).unwrap()
    }

    #[test]
    fn the_spec_test_vector_signs_and_verifies() {
        let key = signing_key(VECTOR_SECRET).unwrap();
        assert_eq!(sign(&key, VECTOR_ID, VECTOR_T, VECTOR_BODY), VECTOR_SIG);
        let t = VECTOR_T.to_string();
        assert_eq!(
            verify(&key, VECTOR_ID, &t, VECTOR_SIG, VECTOR_BODY, at(VECTOR_T), 300),
            Ok(VECTOR_T)
        );
        // Several signatures (a key rotation): one matching is enough; unknown versions are ignored.
        let several = format!("v1,bm9wZQ== v1a,xyz {VECTOR_SIG}");
        assert_eq!(
            verify(&key, VECTOR_ID, &t, &several, VECTOR_BODY, at(VECTOR_T), 300),
            Ok(VECTOR_T)
        );
    }

    #[test]
    fn any_change_breaks_a_signature_and_replays_are_refused() {
        let key = signing_key(VECTOR_SECRET).unwrap();
        let t = VECTOR_T.to_string();
        let now = at(VECTOR_T);
        let ok =
            |id: &str, ts: &str, body: &[u8], key: &[u8]| verify(key, id, ts, VECTOR_SIG, body, now, 300);
        assert_eq!(
            ok(VECTOR_ID, &t, b"{}", &key),
            Err(SignatureError::Mismatch),
            "another body"
        );
        assert_eq!(
            ok("msg_other", &t, VECTOR_BODY, &key),
            Err(SignatureError::Mismatch),
            "another id"
        );
        assert_eq!(
            ok(VECTOR_ID, &(VECTOR_T + 1).to_string(), VECTOR_BODY, &key),
            Err(SignatureError::Mismatch),
            "another timestamp"
        );
        assert_eq!(
            ok(VECTOR_ID, &t, VECTOR_BODY, b"another-key-00000"),
            Err(SignatureError::Mismatch)
        );
        assert!(matches!(
            verify(
                &key,
                VECTOR_ID,
                &t,
                VECTOR_SIG,
                VECTOR_BODY,
                at(VECTOR_T + 600),
                300
            ),
            Err(SignatureError::Expired { age_secs: 600, .. })
        ));
        for (ts, sig) in [
            ("x", VECTOR_SIG),
            (t.as_str(), ""),
            (t.as_str(), "v1"),
            (t.as_str(), "v1,***"),
        ] {
            assert_eq!(
                verify(&key, VECTOR_ID, ts, sig, VECTOR_BODY, now, 300),
                Err(SignatureError::Malformed),
                "{ts} {sig}"
            );
        }
    }
}

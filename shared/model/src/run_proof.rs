//! Run proofs: which runner sent an event. The dispatcher starts each runner with a proof of its run
//! (`STRATO_RUN_PROOF` in the task's overrides): HMAC-SHA256 under a key only the dispatcher and the status
//! function hold, over the operation id and the fencing token. The runner puts it on every event it sends and
//! status refuses a runner event whose proof is not its run's. So code running inside one tenant's run (a
//! Terraform module or provider) cannot forge `Succeeded` for another tenant's operation: it would need that
//! run's proof, which only that run's task was given.
//!
//! The proof is a function of (operation, token), so a redelivered job that starts the same task again (same
//! ECS client token) hands it the same proof.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use secrecy::{ExposeSecret, SecretSlice};
use sha2::Sha256;

use crate::ids::OperationId;
use crate::messages::RunnerEvent;

/// The task override carrying the run's proof.
pub const ENV_RUN_PROOF: &str = "STRATO_RUN_PROOF";
/// The field of a runner event's body that carries it.
pub const PROOF_FIELD: &str = "proof";
/// The shortest key accepted: 32 bytes, as HMAC-SHA256's block of security.
pub const MIN_KEY_BYTES: usize = 32;

/// The key proofs are made with, and the key before it while a rotation overlaps (Secrets Manager's
/// `AWSPREVIOUS`): proofs are always made with the current key, and one made with the previous key still
/// verifies, so runs started before a rotation keep reporting. `Debug` never shows either.
#[derive(Clone)]
pub struct RunProofKey {
    current: SecretSlice<u8>,
    previous: Option<SecretSlice<u8>>,
}

/// A key shorter than [`MIN_KEY_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the run-proof key has {0} bytes; at least {MIN_KEY_BYTES} are needed (e.g. `openssl rand -hex 32`)")]
pub struct ShortKey(pub usize);

impl RunProofKey {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, ShortKey> {
        let bytes = bytes.into();
        if bytes.len() < MIN_KEY_BYTES {
            return Err(ShortKey(bytes.len()));
        }
        Ok(Self {
            current: SecretSlice::from(bytes),
            previous: None,
        })
    }

    /// This key, also accepting proofs made with `previous` (the key it replaced).
    pub fn with_previous(self, previous: RunProofKey) -> Self {
        Self {
            current: self.current,
            previous: Some(previous.current),
        }
    }

    fn mac(key: &SecretSlice<u8>, op: &OperationId, fencing_token: u64) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key.expose_secret())
            .expect("HMAC takes any key length");
        // Versioned and separated, so a proof never doubles as another HMAC of the same key.
        mac.update(b"strato-run-proof.v1\n");
        mac.update(op.as_str().as_bytes());
        mac.update(b"\n");
        mac.update(fencing_token.to_string().as_bytes());
        mac
    }

    /// The proof the run of `op` under `fencing_token` is started with (hex).
    pub fn proof(&self, op: &OperationId, fencing_token: u64) -> String {
        hex::encode(
            Self::mac(&self.current, op, fencing_token)
                .finalize()
                .into_bytes(),
        )
    }

    /// Whether `proof` is that run's (under the current or the previous key), compared in constant time.
    pub fn verify(&self, op: &OperationId, fencing_token: u64, proof: &str) -> bool {
        let Ok(bytes) = hex::decode(proof) else {
            return false;
        };
        std::iter::once(&self.current)
            .chain(&self.previous)
            .any(|key| Self::mac(key, op, fencing_token).verify_slice(&bytes).is_ok())
    }

    /// Whether `ev` carries its own run's proof.
    pub fn verify_event(&self, ev: &RunnerEvent, proof: Option<&str>) -> bool {
        proof.is_some_and(|p| self.verify(ev.operation_id(), ev.fencing_token(), p))
    }
}

// Compares the keys themselves (configs are compared in tests); never used to check a proof.
impl PartialEq for RunProofKey {
    fn eq(&self, other: &Self) -> bool {
        let bytes = |k: &Self| {
            (
                k.current.expose_secret().to_vec(),
                k.previous.as_ref().map(|p| p.expose_secret().to_vec()),
            )
        };
        bytes(self) == bytes(other)
    }
}

impl Eq for RunProofKey {}

impl fmt::Debug for RunProofKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RunProofKey(redacted)")
    }
}

/// The body the runner sends: the event's JSON with its run's proof beside the event's own fields.
pub fn proven_body(ev: &RunnerEvent, proof: &str) -> Result<serde_json::Value, serde_json::Error> {
    let mut v = serde_json::to_value(ev)?;
    if let Some(map) = v.as_object_mut() {
        map.insert(
            PROOF_FIELD.to_owned(),
            serde_json::Value::String(proof.to_owned()),
        );
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> RunProofKey {
        RunProofKey::new(vec![byte; 32]).unwrap()
    }

    fn heartbeat(op: &OperationId, token: u64) -> RunnerEvent {
        RunnerEvent::Heartbeat {
            operation_id: op.clone(),
            fencing_token: token,
            at: crate::ts::parse("2026-11-24T10:00:00Z").unwrap(),
        }
    }

    #[test]
    fn a_proof_holds_only_for_its_own_run_and_key() {
        let (a, b) = (OperationId::generate(), OperationId::generate());
        let k = key(7);
        let p = k.proof(&a, 3);
        assert_eq!(
            p,
            k.proof(&a, 3),
            "deterministic: a restarted task gets the same proof"
        );
        assert!(k.verify(&a, 3, &p));
        assert!(!k.verify(&b, 3, &p), "another operation");
        assert!(!k.verify(&a, 4, &p), "another lock (fencing token)");
        assert!(!key(8).verify(&a, 3, &p), "another key");
        assert!(!k.verify(&a, 3, "not hex"));
        assert!(!k.verify(&a, 3, &p[..10]), "a prefix is not a proof");
    }

    #[test]
    fn events_carry_the_proof_beside_their_fields() {
        let (op, k) = (OperationId::generate(), key(1));
        let ev = heartbeat(&op, 2);
        let body = proven_body(&ev, &k.proof(&op, 2)).unwrap();
        assert_eq!(body["type"], "heartbeat");
        let parsed: RunnerEvent = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(parsed, ev, "the proof field does not disturb the event");
        assert!(k.verify_event(&parsed, body[PROOF_FIELD].as_str()));
        assert!(!k.verify_event(&parsed, None), "no proof, no trust");
        let other = heartbeat(&OperationId::generate(), 2);
        assert!(!k.verify_event(&other, body[PROOF_FIELD].as_str()));
    }

    #[test]
    fn after_a_rotation_proofs_of_the_previous_key_still_verify_and_new_ones_use_the_current() {
        let op = OperationId::generate();
        let (old, new) = (key(1), key(2));
        let started_before = old.proof(&op, 5);
        let rotated = new.clone().with_previous(old.clone());
        assert!(
            rotated.verify(&op, 5, &started_before),
            "a run started before the rotation"
        );
        assert_eq!(
            rotated.proof(&op, 5),
            new.proof(&op, 5),
            "new runs get the current key's proof"
        );
        assert!(!old.verify(&op, 5, &rotated.proof(&op, 5)));
        assert!(
            !new.verify(&op, 5, &started_before),
            "without the overlap the old proof is refused"
        );
        assert!(
            !rotated.verify(&op, 5, &key(3).proof(&op, 5)),
            "any other key is still refused"
        );
        assert_eq!(format!("{rotated:?}"), "RunProofKey(redacted)");
    }

    #[test]
    fn short_keys_are_refused_and_keys_never_print() {
        assert_eq!(RunProofKey::new(vec![0; 31]).unwrap_err(), ShortKey(31));
        let k = key(0x41);
        assert!(!format!("{k:?}").contains("AAAA"));
    }
}

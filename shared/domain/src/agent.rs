//! The cluster agent's secrets. The one-time registration token is derived (HMAC-SHA256 of the cluster id
//! under a platform secret), so the runner can hand it to Terraform without it ever being stored; the
//! control plane keeps only its sha256, which is also the key of the `by_agent_token` index. Registering
//! gives the agent its own credential, `<cluster id>.<secret>` (see `strato_agent_wire`): random, shown
//! once, stored as its sha256 on the cluster item, compared in constant time.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use aes_gcm::aead::{OsRng, rand_core::RngCore};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::ids::ClusterId;

/// Random bytes in a credential's secret.
pub const CREDENTIAL_SECRET_BYTES: usize = 32;

/// The token the template installs the agent with. `secret` is the platform's agent-token secret.
pub fn registration_token(secret: &[u8], cluster: &ClusterId) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(b"strato-agent-registration:");
    mac.update(cluster.as_str().as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// What the control plane stores and looks tokens up by.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The attributes [`revoke`] clears (the store removes them in the write that accepts a delete).
pub const REVOKED_ATTRIBUTES: [&str; 3] = [
    "agent_credential_hash",
    "agent_next_credential_hash",
    "agent_watch",
];

/// A delete was accepted: the agent's credentials stop working (and it is no longer expected to report).
pub fn revoke(c: &mut crate::model::Cluster) {
    c.agent_credential_hash = None;
    c.agent_next_credential_hash = None;
    c.agent_watch = None;
}

/// A new credential for `cluster`'s agent: `<cluster id>.<base64url of 32 random bytes>`.
pub fn new_credential(cluster: &ClusterId) -> String {
    let mut b = [0u8; CREDENTIAL_SECRET_BYTES];
    OsRng.fill_bytes(&mut b);
    format!("{cluster}.{}", URL_SAFE_NO_PAD.encode(b))
}

/// Whether `credential` hashes to `stored` (a [`token_hash`]), comparing every byte whatever differs
/// first, so the time taken tells nothing about the stored hash.
pub fn credential_matches(stored: &str, credential: &str) -> bool {
    let given = token_hash(credential);
    let (a, b) = (stored.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_name_their_cluster_and_match_only_their_hash() {
        let id = ClusterId::generate();
        let c = new_credential(&id);
        assert_eq!(strato_agent_wire::credential_cluster(&c), Some(id.as_str()));
        let secret = c.split_once('.').unwrap().1;
        assert_eq!(
            URL_SAFE_NO_PAD.decode(secret).unwrap().len(),
            CREDENTIAL_SECRET_BYTES
        );
        assert_ne!(c, new_credential(&id), "random");
        let stored = token_hash(&c);
        assert!(credential_matches(&stored, &c));
        assert!(!credential_matches(&stored, &new_credential(&id)));
        assert!(!credential_matches(&stored[..10], &c));
    }

    #[test]
    fn tokens_are_per_cluster_and_per_secret() {
        let (a, b) = (ClusterId::generate(), ClusterId::generate());
        let t = registration_token(b"secret", &a);
        assert_eq!(t.len(), 64);
        assert_eq!(
            t,
            registration_token(b"secret", &a),
            "derivable again by the runner"
        );
        assert_ne!(t, registration_token(b"secret", &b));
        assert_ne!(t, registration_token(b"other", &a));
        assert_ne!(token_hash(&t), t);
        assert_eq!(token_hash(&t), token_hash(&t));
    }
}

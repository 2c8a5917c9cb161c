//! The cluster agent's one-time registration token. It is derived (HMAC-SHA256 of the cluster id under a
//! platform secret), so the runner can hand it to Terraform without it ever being stored; the control plane
//! keeps only its sha256, which is also the key of the `by_agent_token` index.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::ids::ClusterId;

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

#[cfg(test)]
mod tests {
    use super::*;

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

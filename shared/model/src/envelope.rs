//! A sealed value's stored form. Sealing and opening (AES-256-GCM under a KMS data key) are the domain's
//! (`strato_domain::sealed`); the model only carries the envelope, e.g. in a run's tokens.

use serde::{Deserialize, Serialize};

/// A sealed value as stored: version, wrapped data key, nonce and ciphertext (with its tag), base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub v: u8,
    pub key: String,
    pub nonce: String,
    pub ct: String,
}

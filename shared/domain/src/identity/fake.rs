//! The in-memory [`Signer`]: an RSA 2048 key generated per instance (aws-lc-rs, already the TLS stack's
//! crypto), signing RS256 as KMS does and giving its public key in the same DER form as `GetPublicKey`.

use std::sync::Arc;

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{KeyPair, RSA_PKCS1_SHA256, RsaKeyPair};

use super::Signer;
use crate::ports::PortError;

#[derive(Clone)]
pub struct FakeSigner {
    key: Arc<RsaKeyPair>,
}

impl Default for FakeSigner {
    fn default() -> Self {
        Self {
            key: Arc::new(RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key generation")),
        }
    }
}

impl std::fmt::Debug for FakeSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FakeSigner")
    }
}

fn failed(what: &str) -> PortError {
    PortError::Corrupt {
        what: "fake signer".into(),
        reason: what.into(),
    }
}

impl Signer for FakeSigner {
    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, PortError> {
        let mut sig = vec![0u8; self.key.public_modulus_len()];
        self.key
            .sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), message, &mut sig)
            .map_err(|_| failed("signing failed"))?;
        Ok(sig)
    }

    async fn public_key_der(&self) -> Result<Vec<u8>, PortError> {
        let der = self
            .key
            .public_key()
            .as_der()
            .map_err(|_| failed("no public key DER"))?;
        Ok(der.as_ref().to_vec())
    }
}

//! [`Signer`] on KMS: Strato's asymmetric token-signing key (`RSA_2048`, `SIGN_VERIFY`, alias
//! `alias/<prefix>-oidc`). `Sign` gets the JWT's signing input itself (`MessageType = RAW`,
//! `RSASSA_PKCS1_V1_5_SHA_256` = RS256; KMS hashes it). RAW rather than a precomputed DIGEST: a run token's
//! signing input is well under RAW's 4096-byte limit (checked here), and moto (5.2.5, the test bed's) ignores
//! `MessageType` and would hash a digest again, so DIGEST could not be verified offline. `GetPublicKey` gives
//! the DER `SubjectPublicKeyInfo` the JWKS is made of, fetched once per process (a key's public half never
//! changes; a new key is a new alias target and a new process).

use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{MessageType, SigningAlgorithmSpec};
use strato_domain::identity::Signer;
use strato_domain::ports::PortError;
use tokio::sync::OnceCell;

use crate::error::Error;

/// The largest message KMS `Sign` takes with `MessageType = RAW`.
const MAX_RAW_MESSAGE: usize = 4096;

/// Strato's token-signing KMS key, by id, ARN or alias.
#[derive(Debug, Clone)]
pub struct KmsSigner {
    pub kms: aws_sdk_kms::Client,
    pub key_id: String,
    public: std::sync::Arc<OnceCell<Vec<u8>>>,
}

impl KmsSigner {
    pub fn new(kms: &aws_sdk_kms::Client, key_id: impl Into<String>) -> Self {
        Self {
            kms: kms.clone(),
            key_id: key_id.into(),
            public: Default::default(),
        }
    }
}

impl Signer for KmsSigner {
    async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, PortError> {
        if message.len() > MAX_RAW_MESSAGE {
            return Err(PortError::Corrupt {
                what: "token to sign".into(),
                reason: format!("{} bytes, over KMS Sign's {MAX_RAW_MESSAGE}", message.len()),
            });
        }
        let out = self
            .kms
            .sign()
            .key_id(&self.key_id)
            .message(Blob::new(message.to_vec()))
            .message_type(MessageType::Raw)
            .signing_algorithm(SigningAlgorithmSpec::RsassaPkcs1V15Sha256)
            .send()
            .await
            .map_err(|e| Error::aws("Sign", e))?;
        out.signature()
            .map(|s| s.as_ref().to_vec())
            .ok_or_else(|| PortError::Unavailable("Sign returned no signature".into()))
    }

    async fn public_key_der(&self) -> Result<Vec<u8>, PortError> {
        self.public
            .get_or_try_init(|| async {
                let out = self
                    .kms
                    .get_public_key()
                    .key_id(&self.key_id)
                    .send()
                    .await
                    .map_err(|e| Error::aws("GetPublicKey", e))?;
                out.public_key()
                    .map(|k| k.as_ref().to_vec())
                    .ok_or_else(|| PortError::Unavailable("GetPublicKey returned no key".into()))
            })
            .await
            .cloned()
    }
}

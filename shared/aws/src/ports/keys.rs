//! [`Keys`] on KMS: data keys from `GenerateDataKey` (AES_256) under Strato's customer-managed key, unwrapped
//! with `Decrypt`. The key is named by its alias (`Names::kms_alias`).

use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use secrecy::SecretBox;
use strato_domain::ports::PortError;
use strato_domain::sealed::{DataKey, Keys};

use crate::error::Error;

/// Strato's KMS key, by id, ARN or alias.
#[derive(Debug, Clone)]
pub struct KmsKeys {
    pub kms: aws_sdk_kms::Client,
    pub key_id: String,
}

impl KmsKeys {
    /// The key `names` calls Strato's ([`Names::kms_alias`](crate::resources::Names::kms_alias)).
    pub fn new(kms: &aws_sdk_kms::Client, names: &crate::resources::Names) -> Self {
        Self {
            kms: kms.clone(),
            key_id: names.kms_alias(),
        }
    }
}

fn key32(bytes: &[u8]) -> Result<SecretBox<[u8; 32]>, PortError> {
    let k: [u8; 32] = bytes.try_into().map_err(|_| PortError::Corrupt {
        what: "KMS data key".into(),
        reason: format!("{} bytes, not 32", bytes.len()),
    })?;
    Ok(SecretBox::new(Box::new(k)))
}

impl Keys for KmsKeys {
    async fn data_key(&self) -> Result<DataKey, PortError> {
        let out = self
            .kms
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256)
            .send()
            .await
            .map_err(|e| Error::aws("GenerateDataKey", e))?;
        let (Some(plain), Some(wrapped)) = (out.plaintext(), out.ciphertext_blob()) else {
            return Err(PortError::Unavailable("GenerateDataKey returned no key".into()));
        };
        Ok(DataKey {
            plaintext: key32(plain.as_ref())?,
            wrapped: wrapped.as_ref().to_vec(),
        })
    }

    async fn unwrap_key(&self, wrapped: &[u8]) -> Result<SecretBox<[u8; 32]>, PortError> {
        let out = self
            .kms
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(wrapped.to_vec()))
            .send()
            .await
            .map_err(|e| Error::aws("Decrypt", e))?;
        let plain = out
            .plaintext()
            .ok_or_else(|| PortError::Unavailable("Decrypt returned nothing".into()))?;
        key32(plain.as_ref())
    }
}

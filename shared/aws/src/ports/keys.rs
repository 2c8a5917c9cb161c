//! [`Keys`] on KMS: data keys from `GenerateDataKey` (AES_256) under Strato's customer-managed key, unwrapped
//! with `Decrypt`, both with the value's encryption context `{tenant, purpose}` ([`KeyContext`]), which KMS
//! binds to the wrapped key and the key policy conditions on. The key is named by its alias
//! (`Names::kms_alias`).

use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::DataKeySpec;
use secrecy::SecretBox;
use strato_domain::ports::PortError;
use strato_domain::sealed::{DataKey, KeyContext, Keys};

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
    async fn data_key(&self, ctx: &KeyContext) -> Result<DataKey, PortError> {
        let out = self
            .kms
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(DataKeySpec::Aes256)
            .set_encryption_context(Some(ctx.pairs().into_iter().collect()))
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

    async fn unwrap_key(&self, wrapped: &[u8], ctx: &KeyContext) -> Result<SecretBox<[u8; 32]>, PortError> {
        let out = self
            .kms
            .decrypt()
            .key_id(&self.key_id)
            .set_encryption_context(Some(ctx.pairs().into_iter().collect()))
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use aws_sdk_kms::config::{BehaviorVersion, Credentials, Region};
    use aws_smithy_runtime_api::box_error::BoxError;
    use aws_smithy_runtime_api::client::interceptors::Intercept;
    use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
    use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
    use aws_smithy_types::config_bag::ConfigBag;
    use serde_json::{Value, json};

    use super::*;

    /// Keeps each request's JSON body and stops it before it is sent (no endpoint is reached).
    #[derive(Debug, Clone, Default)]
    struct Capture(Arc<Mutex<Vec<Value>>>);

    impl Intercept for Capture {
        fn name(&self) -> &'static str {
            "capture"
        }

        fn read_before_transmit(
            &self,
            context: &BeforeTransmitInterceptorContextRef<'_>,
            _: &RuntimeComponents,
            _: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            let body = context.request().body().bytes().unwrap_or_default();
            self.0
                .lock()
                .unwrap()
                .push(serde_json::from_slice(body).unwrap_or(Value::Null));
            Err("captured, not sent".into())
        }
    }

    #[tokio::test]
    async fn every_generate_data_key_and_decrypt_carries_the_tenant_and_purpose() {
        let capture = Capture::default();
        let conf = aws_sdk_kms::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("AKIDTEST", "secret", None, None, "test"))
            .retry_config(aws_sdk_kms::config::retry::RetryConfig::disabled())
            .endpoint_url("http://127.0.0.1:9")
            .interceptor(capture.clone())
            .build();
        let keys = KmsKeys {
            kms: aws_sdk_kms::Client::from_conf(conf),
            key_id: "alias/strato-data".into(),
        };
        let ctx = KeyContext::new(&"acme".parse().unwrap(), strato_domain::sealed::PURPOSE_VARIABLES);
        assert!(keys.data_key(&ctx).await.is_err(), "stopped before sending");
        assert!(keys.unwrap_key(b"wrapped", &ctx).await.is_err());
        let sent = capture.0.lock().unwrap().clone();
        assert_eq!(sent.len(), 2, "{sent:?}");
        for body in &sent {
            assert_eq!(
                body["EncryptionContext"],
                json!({"tenant": "acme", "purpose": "variables"}),
                "{body}"
            );
        }
    }
}

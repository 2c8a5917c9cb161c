//! Envelope encryption of values at rest: sensitive template variables in cluster and operation items, and
//! each tenant's issued external id. A value is encrypted with AES-256-GCM under a data key that Strato's KMS
//! key issues ([`Keys::data_key`]) and stored with that data key in its wrapped (KMS-encrypted) form, as a
//! small versioned [`Envelope`]. The associated data names the item the value belongs to (tenant, cluster,
//! field), so a ciphertext copied into another tenant's or cluster's item does not open there.
//!
//! The data key itself is bound to its tenant and purpose by KMS: every `GenerateDataKey` and `Decrypt`
//! carries the encryption context [`KeyContext`] `{tenant, purpose}`, so a wrapped key unwraps only under
//! the context it was made with, and the key policy can require it (a principal allowed to decrypt only
//! for some tenants or purposes cannot unwrap another's data key). The associated data alone would not do:
//! it is checked only after KMS has handed out the plaintext key.
//!
//! The AWS adapter of [`Keys`] is `strato_aws::ports::KmsKeys`; [`FakeKeys`](crate::fakes::FakeKeys) is the
//! in-memory one.

use std::collections::BTreeMap;
use std::future::Future;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload, rand_core::RngCore};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use secrecy::{ExposeSecret, SecretBox};
use serde_json::Value;

use crate::ids::{ClusterId, TenantId};
use crate::model::ClusterSpec;
use crate::ports::PortError;
use crate::secret::Sensitive;

/// The member a sealed JSON value is wrapped in: `{"$strato_sealed": {…envelope…}}`.
pub const SEALED_MEMBER: &str = "$strato_sealed";
/// The envelope format this code writes and opens: 2, its data key wrapped under a [`KeyContext`]. Version 1
/// (data keys wrapped without a context) is refused: its values must be set again.
pub const ENVELOPE_VERSION: u8 = 2;

/// What a data key is for, in its KMS encryption context (`purpose`).
pub const PURPOSE_VARIABLES: &str = "variables";
/// The tenant's issued external id.
pub const PURPOSE_EXTERNAL_ID: &str = "external_id";
/// A saved plan awaiting approval.
pub const PURPOSE_PLAN: &str = "plan";

/// The KMS encryption context of a data key: `{"tenant": <tenant id>, "purpose": <purpose>}`. Not secret
/// (KMS logs it in CloudTrail); it binds the wrapped key to the tenant and the kind of value it seals.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyContext {
    pub tenant: TenantId,
    pub purpose: &'static str,
}

impl KeyContext {
    pub fn new(tenant: &TenantId, purpose: &'static str) -> Self {
        Self {
            tenant: tenant.clone(),
            purpose,
        }
    }

    /// The context as KMS takes it.
    pub fn pairs(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("tenant".to_owned(), self.tenant.to_string()),
            ("purpose".to_owned(), self.purpose.to_owned()),
        ])
    }
}

/// A 256-bit data key: in the clear (wiped on drop) for this process only, and wrapped by the KMS key for
/// storing beside what it encrypted.
pub struct DataKey {
    pub plaintext: SecretBox<[u8; 32]>,
    pub wrapped: Vec<u8>,
}

/// Strato's key-encryption key (KMS in AWS): issues data keys and unwraps stored ones, each under its
/// encryption context.
pub trait Keys: Send + Sync {
    /// A fresh data key (KMS `GenerateDataKey`, AES_256), wrapped under `ctx`.
    fn data_key(&self, ctx: &KeyContext) -> impl Future<Output = Result<DataKey, PortError>> + Send;
    /// The data key a stored envelope names (KMS `Decrypt`); fails unless `ctx` is the one it was made with.
    fn unwrap_key(
        &self,
        wrapped: &[u8],
        ctx: &KeyContext,
    ) -> impl Future<Output = Result<SecretBox<[u8; 32]>, PortError>> + Send;
}

pub use strato_model::envelope::Envelope;

/// The associated data binding a value to its place: `strato:v1:<tenant>:<scope>:<field>`, where the scope
/// is the cluster id (variables) or `tenant` (the tenant's own secrets).
pub fn aad(tenant: &TenantId, scope: &str, field: &str) -> String {
    format!("strato:v1:{tenant}:{scope}:{field}")
}

/// The associated data of a cluster's sensitive variable `name`.
pub fn variable_aad(tenant: &TenantId, cluster: &ClusterId, name: &str) -> String {
    aad(tenant, cluster.as_str(), &format!("variables.{name}"))
}

/// The associated data of a tenant's issued external id.
pub fn external_id_aad(tenant: &TenantId) -> String {
    aad(tenant, "tenant", "external_id")
}

fn corrupt(reason: impl Into<String>) -> PortError {
    PortError::Corrupt {
        what: "sealed value".into(),
        reason: reason.into(),
    }
}

/// Encrypts `plaintext` under `key`, bound to `aad`.
pub fn seal_with(key: &DataKey, aad: &str, plaintext: &[u8]) -> Result<Envelope, PortError> {
    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key.plaintext.expose_secret()));
    let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
    let ct = cipher
        .encrypt(
            &nonce,
            Payload {
                msg: plaintext,
                aad: aad.as_bytes(),
            },
        )
        .map_err(|_| corrupt("encryption failed"))?;
    Ok(Envelope {
        v: ENVELOPE_VERSION,
        key: B64.encode(&key.wrapped),
        nonce: B64.encode(nonce),
        ct: B64.encode(ct),
    })
}

/// Seals `plaintext` under a fresh data key made for `ctx`.
pub async fn seal(
    keys: &impl Keys,
    ctx: &KeyContext,
    aad: &str,
    plaintext: &[u8],
) -> Result<Envelope, PortError> {
    seal_with(&keys.data_key(ctx).await?, aad, plaintext)
}

/// Decrypts an envelope; fails (without saying more) when it was sealed for other associated data or
/// another key context, was altered, or names a data key the KMS key cannot unwrap.
pub async fn open(
    keys: &impl Keys,
    env: &Envelope,
    ctx: &KeyContext,
    aad: &str,
) -> Result<SecretBox<Vec<u8>>, PortError> {
    if env.v == 1 {
        return Err(corrupt(
            "sealed by an older version without a KMS encryption context, which Strato no longer opens; \
             set the value again",
        ));
    }
    if env.v != ENVELOPE_VERSION {
        return Err(corrupt(format!("unknown envelope version {}", env.v)));
    }
    let b64 = |s: &str| B64.decode(s).map_err(|_| corrupt("not base64"));
    let (wrapped, nonce, ct) = (b64(&env.key)?, b64(&env.nonce)?, b64(&env.ct)?);
    if nonce.len() != 12 {
        return Err(corrupt("bad nonce length"));
    }
    let key = keys.unwrap_key(&wrapped, ctx).await?;
    let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key.expose_secret()));
    let plain = cipher
        .decrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: &ct,
                aad: aad.as_bytes(),
            },
        )
        .map_err(|_| corrupt("it does not open here (altered, or sealed for another item)"))?;
    Ok(SecretBox::new(Box::new(plain)))
}

/// The envelope a JSON value holds, when it is a sealed value.
pub fn as_sealed(v: &Value) -> Option<Envelope> {
    let m = v.as_object().filter(|m| m.len() == 1)?;
    serde_json::from_value(m.get(SEALED_MEMBER)?.clone()).ok()
}

/// Whether a JSON value has the shape of a sealed value (requests may not send one).
pub fn looks_sealed(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.contains_key(SEALED_MEMBER))
}

fn sealed_value(env: &Envelope) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(
        SEALED_MEMBER.into(),
        serde_json::to_value(env).unwrap_or_default(),
    );
    Value::Object(m)
}

/// Seals, in place, each variable `is_sensitive` names that is not sealed yet (one data key for them all;
/// none asked for when nothing needs sealing). Values already sealed keep their ciphertext.
pub async fn seal_variables(
    keys: &impl Keys,
    tenant: &TenantId,
    cluster: &ClusterId,
    is_sensitive: impl Fn(&str) -> bool,
    variables: &mut BTreeMap<String, Value>,
) -> Result<(), PortError> {
    let todo: Vec<String> = variables
        .iter()
        .filter(|(k, v)| is_sensitive(k) && as_sealed(v).is_none())
        .map(|(k, _)| k.clone())
        .collect();
    if todo.is_empty() {
        return Ok(());
    }
    let key = keys.data_key(&KeyContext::new(tenant, PURPOSE_VARIABLES)).await?;
    for k in todo {
        let plain = serde_json::to_vec(&variables[&k]).map_err(|e| corrupt(e.to_string()))?;
        let env = seal_with(&key, &variable_aad(tenant, cluster, &k), &plain)?;
        variables.insert(k, sealed_value(&env));
    }
    Ok(())
}

/// The spec with every sealed variable opened (the runner, just before validating and rendering).
pub async fn open_spec(
    keys: &impl Keys,
    tenant: &TenantId,
    cluster: &ClusterId,
    spec: &ClusterSpec,
) -> Result<ClusterSpec, PortError> {
    let mut out = spec.clone();
    let ctx = KeyContext::new(tenant, PURPOSE_VARIABLES);
    for (k, v) in out.variables.iter_mut() {
        if let Some(env) = as_sealed(v) {
            let plain = open(keys, &env, &ctx, &variable_aad(tenant, cluster, k)).await?;
            *v = serde_json::from_slice(plain.expose_secret()).map_err(|e| corrupt(e.to_string()))?;
        }
    }
    Ok(out)
}

/// A new external id for a tenant: 64 hex characters from the OS's random source (AWS allows 2-1224
/// characters of `[\w+=,.@:/-]`).
pub fn generate_external_id() -> Sensitive {
    let mut b = [0u8; 32];
    OsRng.fill_bytes(&mut b);
    Sensitive::new(format!("strato-{}", hex::encode(b)))
}

/// Seals a tenant's external id for its tenant item.
pub async fn seal_external_id(
    keys: &impl Keys,
    tenant: &TenantId,
    id: &Sensitive,
) -> Result<Envelope, PortError> {
    let ctx = KeyContext::new(tenant, PURPOSE_EXTERNAL_ID);
    seal(keys, &ctx, &external_id_aad(tenant), id.expose().as_bytes()).await
}

/// Opens a tenant's sealed external id.
pub async fn open_external_id(
    keys: &impl Keys,
    tenant: &TenantId,
    env: &Envelope,
) -> Result<Sensitive, PortError> {
    let ctx = KeyContext::new(tenant, PURPOSE_EXTERNAL_ID);
    let plain = open(keys, env, &ctx, &external_id_aad(tenant)).await?;
    let s = String::from_utf8(plain.expose_secret().clone()).map_err(|_| corrupt("not UTF-8"))?;
    Ok(Sensitive::new(s))
}

/// The in-memory [`Keys`]: data keys wrapped with AES-GCM under a random master key of its own, bound to
/// their [`KeyContext`] (the associated data of the wrapping), so only the same `FakeKeys` (or a clone)
/// unwraps them, and only under the same context, as only the same KMS key would.
#[cfg(any(test, feature = "fakes"))]
#[derive(Clone)]
pub struct FakeKeys {
    master: std::sync::Arc<[u8; 32]>,
}

#[cfg(any(test, feature = "fakes"))]
impl Default for FakeKeys {
    fn default() -> Self {
        let mut m = [0u8; 32];
        OsRng.fill_bytes(&mut m);
        Self {
            master: std::sync::Arc::new(m),
        }
    }
}

#[cfg(any(test, feature = "fakes"))]
impl std::fmt::Debug for FakeKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FakeKeys")
    }
}

#[cfg(any(test, feature = "fakes"))]
fn context_aad(ctx: &KeyContext) -> Vec<u8> {
    serde_json::to_vec(&ctx.pairs()).unwrap_or_default()
}

#[cfg(any(test, feature = "fakes"))]
impl Keys for FakeKeys {
    async fn data_key(&self, ctx: &KeyContext) -> Result<DataKey, PortError> {
        let mut k = [0u8; 32];
        OsRng.fill_bytes(&mut k);
        let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&self.master[..]));
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let mut wrapped = nonce.to_vec();
        let payload = Payload {
            msg: &k[..],
            aad: &context_aad(ctx),
        };
        wrapped.extend(
            cipher
                .encrypt(&nonce, payload)
                .map_err(|_| corrupt("fake wrap"))?,
        );
        Ok(DataKey {
            plaintext: SecretBox::new(Box::new(k)),
            wrapped,
        })
    }

    async fn unwrap_key(&self, wrapped: &[u8], ctx: &KeyContext) -> Result<SecretBox<[u8; 32]>, PortError> {
        if wrapped.len() < 12 {
            return Err(corrupt("fake unwrap: too short"));
        }
        let cipher = Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&self.master[..]));
        let plain = cipher
            .decrypt(
                Nonce::from_slice(&wrapped[..12]),
                Payload {
                    msg: &wrapped[12..],
                    aad: &context_aad(ctx),
                },
            )
            .map_err(|_| corrupt("fake unwrap: not this key's, or another context"))?;
        let k: [u8; 32] = plain.try_into().map_err(|_| corrupt("fake unwrap: length"))?;
        Ok(SecretBox::new(Box::new(k)))
    }
}

mod cache;
pub use cache::{CachedKeys, DEFAULT_MAX_AGE, DEFAULT_MAX_USES};

#[cfg(test)]
mod tests;

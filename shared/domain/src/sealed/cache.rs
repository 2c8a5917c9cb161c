//! A bounded cache of data keys in front of any [`Keys`], as the AWS Encryption SDK's caching materials
//! manager does: a warm api process seals many requests' sensitive variables without one KMS
//! `GenerateDataKey` each. Each cached key serves one encryption context only (a tenant and purpose, so one
//! tenant's key never seals another's values), for at most `max_age` and `max_uses` values, after which a
//! fresh key is generated. Every value still gets its own random nonce and its associated data (tenant,
//! cluster, field), so sharing a key between values of one tenant weakens nothing AES-GCM relies on well
//! below its 2^32-messages-per-key bound. Unwrapping is not cached: opening a stored value always asks KMS,
//! which checks the context and logs the use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use secrecy::{ExposeSecret, SecretBox};

use super::{DataKey, KeyContext, Keys};
use crate::ports::PortError;

struct Cached {
    plaintext: SecretBox<[u8; 32]>,
    wrapped: Vec<u8>,
    made: Instant,
    uses: u32,
}

/// [`Keys`] that reuses a data key per encryption context within bounds (see the module). Clones share
/// one cache.
#[derive(Clone)]
pub struct CachedKeys<K> {
    inner: K,
    max_age: Duration,
    max_uses: u32,
    keys: Arc<Mutex<HashMap<KeyContext, Cached>>>,
}

/// Names the bounds only: the cached keys are never printed.
impl<K> std::fmt::Debug for CachedKeys<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedKeys")
            .field("max_age", &self.max_age)
            .field("max_uses", &self.max_uses)
            .finish_non_exhaustive()
    }
}

/// The bounds the api uses: five minutes or 1,000 values per key, whichever comes first.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);
pub const DEFAULT_MAX_USES: u32 = 1_000;
/// Contexts kept at most: beyond that the cache starts over (a process serving that many tenants at once
/// loses only the saving, never correctness).
const MAX_CONTEXTS: usize = 256;

impl<K: Keys> CachedKeys<K> {
    pub fn new(inner: K, max_age: Duration, max_uses: u32) -> Self {
        Self {
            inner,
            max_age,
            max_uses,
            keys: Arc::default(),
        }
    }

    pub fn inner(&self) -> &K {
        &self.inner
    }

    fn reuse(&self, ctx: &KeyContext) -> Option<DataKey> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let cached = keys.get_mut(ctx)?;
        if cached.made.elapsed() >= self.max_age || cached.uses >= self.max_uses {
            keys.remove(ctx);
            return None;
        }
        cached.uses += 1;
        Some(DataKey {
            plaintext: SecretBox::new(Box::new(*cached.plaintext.expose_secret())),
            wrapped: cached.wrapped.clone(),
        })
    }
}

impl<K: Keys> Keys for CachedKeys<K> {
    async fn data_key(&self, ctx: &KeyContext) -> Result<DataKey, PortError> {
        if let Some(key) = self.reuse(ctx) {
            return Ok(key);
        }
        let key = self.inner.data_key(ctx).await?;
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.len() >= MAX_CONTEXTS {
            keys.clear();
        }
        keys.insert(
            ctx.clone(),
            Cached {
                plaintext: SecretBox::new(Box::new(*key.plaintext.expose_secret())),
                wrapped: key.wrapped.clone(),
                made: Instant::now(),
                uses: 1,
            },
        );
        Ok(key)
    }

    async fn unwrap_key(&self, wrapped: &[u8], ctx: &KeyContext) -> Result<SecretBox<[u8; 32]>, PortError> {
        self.inner.unwrap_key(wrapped, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TenantId;
    use crate::sealed::FakeKeys;

    fn ctx(tenant: &str, purpose: &'static str) -> KeyContext {
        KeyContext::new(&tenant.parse::<TenantId>().unwrap(), purpose)
    }

    #[tokio::test]
    async fn a_key_is_reused_only_for_its_own_context_and_within_its_bounds() {
        let keys = CachedKeys::new(FakeKeys::default(), Duration::from_secs(300), 3);
        let a = ctx("acme", "variables");
        let first = keys.data_key(&a).await.unwrap();
        let again = keys.data_key(&a).await.unwrap();
        assert_eq!(first.wrapped, again.wrapped, "reused within its bounds");
        assert_eq!(first.plaintext.expose_secret(), again.plaintext.expose_secret());
        let other_tenant = keys.data_key(&ctx("globex", "variables")).await.unwrap();
        let other_purpose = keys.data_key(&ctx("acme", "plan")).await.unwrap();
        assert_ne!(other_tenant.wrapped, first.wrapped, "never another tenant's key");
        assert_ne!(
            other_purpose.wrapped, first.wrapped,
            "never another purpose's key"
        );
        let third = keys.data_key(&a).await.unwrap();
        assert_eq!(third.wrapped, first.wrapped);
        let fourth = keys.data_key(&a).await.unwrap();
        assert_ne!(fourth.wrapped, first.wrapped, "a fresh key after max_uses");
        // What a cached key sealed opens through KMS under its own context only.
        let opened = keys.unwrap_key(&first.wrapped, &a).await.unwrap();
        assert_eq!(opened.expose_secret(), first.plaintext.expose_secret());
        assert!(
            keys.unwrap_key(&first.wrapped, &ctx("globex", "variables"))
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn an_old_key_is_not_reused() {
        let keys = CachedKeys::new(FakeKeys::default(), Duration::ZERO, 1_000);
        let a = ctx("acme", "variables");
        let first = keys.data_key(&a).await.unwrap();
        let second = keys.data_key(&a).await.unwrap();
        assert_ne!(first.wrapped, second.wrapped);
    }
}

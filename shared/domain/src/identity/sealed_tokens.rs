//! A run's identity tokens on their way from the dispatcher (which mints) to the runner (which hands each
//! stage's token to the engine): sealed with Strato's data key under the encryption context
//! `{tenant, purpose: run-identity}`, each bound by its associated data to its operation and stage, so a
//! token copied onto another operation or stage does not open there.

use std::collections::BTreeMap;

use secrecy::ExposeSecret;

use crate::ids::{OperationId, TenantId};
use crate::ports::PortError;
use crate::sealed::{KeyContext, Keys, aad, open, seal_with};
use crate::secret::Sensitive;

pub use strato_model::run_identity::{PURPOSE_RUN_IDENTITY, RunTokens};

fn token_aad(tenant: &TenantId, operation: &OperationId, stage: &str) -> String {
    aad(tenant, operation.as_str(), &format!("run_identity.{stage}"))
}

/// Seals `(stage, token)` pairs under one data key (one KMS call per run, not per stage).
pub async fn seal_run_tokens(
    keys: &impl Keys,
    tenant: &TenantId,
    operation: &OperationId,
    aud: &str,
    expires_at: i64,
    tokens: &[(String, Sensitive)],
) -> Result<RunTokens, PortError> {
    let key = keys
        .data_key(&KeyContext::new(tenant, PURPOSE_RUN_IDENTITY))
        .await?;
    let mut stages = BTreeMap::new();
    for (stage, token) in tokens {
        let env = seal_with(
            &key,
            &token_aad(tenant, operation, stage),
            token.expose().as_bytes(),
        )?;
        stages.insert(stage.clone(), env);
    }
    Ok(RunTokens {
        aud: aud.to_owned(),
        expires_at,
        stages,
    })
}

/// The token of `stage`; `None` when none was minted for it.
pub async fn open_run_token(
    keys: &impl Keys,
    tenant: &TenantId,
    operation: &OperationId,
    tokens: &RunTokens,
    stage: &str,
) -> Result<Option<Sensitive>, PortError> {
    let Some(env) = tokens.stages.get(stage) else {
        return Ok(None);
    };
    let ctx = KeyContext::new(tenant, PURPOSE_RUN_IDENTITY);
    let plain = open(keys, env, &ctx, &token_aad(tenant, operation, stage)).await?;
    let s = String::from_utf8(plain.expose_secret().clone()).map_err(|_| PortError::Corrupt {
        what: "run identity token".into(),
        reason: "not UTF-8".into(),
    })?;
    Ok(Some(Sensitive::new(s)))
}

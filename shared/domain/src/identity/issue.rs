//! Issuing a run's identity tokens: when the operation's target federates (AWS `web_identity`, GCP, Azure),
//! one token per stage of its template, all for the target's audience, sealed for the runner. Done by the
//! dispatcher as it starts the run, never by the runner (which executes tenants' Terraform).

use std::future::Future;

use time::Duration;

use super::{Issuer, MAX_TOKEN_LIFE, RunSubject, RunTokens, Signer, mint, seal_run_tokens};
use crate::model::{ClusterSpec, Operation};
use crate::ports::{Clock, PortError, Templates};
use crate::sealed::Keys;

/// Issues the tokens of a run about to start.
pub trait RunIdentities: Send + Sync {
    /// The run's sealed tokens when `spec`'s target federates; `None` when it needs none.
    fn issue(
        &self,
        op: &Operation,
        spec: &ClusterSpec,
    ) -> impl Future<Output = Result<Option<RunTokens>, PortError>> + Send;
}

/// A deployment without an OIDC issuer (`STRATO_OIDC_ISSUER` unset): no run gets a token, and a target that
/// needs one fails in the runner saying the deployment has no issuer.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRunIdentities;

impl RunIdentities for NoRunIdentities {
    async fn issue(&self, _: &Operation, _: &ClusterSpec) -> Result<Option<RunTokens>, PortError> {
        Ok(None)
    }
}

/// Mints with `signer` for the stages `templates` lists, seals with `keys`.
pub struct TokenIssuer<'a, G, K, T, C> {
    pub signer: &'a G,
    pub keys: &'a K,
    pub templates: &'a T,
    pub clock: &'a C,
    pub issuer: &'a Issuer,
    /// How long the tokens live (at most [`MAX_TOKEN_LIFE`]).
    pub life: Duration,
}

impl<G: Signer, K: Keys, T: Templates, C: Clock> RunIdentities for TokenIssuer<'_, G, K, T, C> {
    async fn issue(&self, op: &Operation, spec: &ClusterSpec) -> Result<Option<RunTokens>, PortError> {
        let Some(aud) = spec.target.as_ref().and_then(|t| t.identity_audience()) else {
            return Ok(None);
        };
        let (name, version) = (&spec.template.name, &spec.template.version);
        let template = self
            .templates
            .template(name, version)
            .await?
            .ok_or_else(|| PortError::Corrupt {
                what: format!("template {name}@{version}"),
                reason: "not published, so its stages are unknown".into(),
            })?;
        let now = self.clock.now();
        let life = self.life.min(MAX_TOKEN_LIFE);
        let mut tokens = Vec::new();
        for stage in &template.manifest.stages {
            let subject = RunSubject {
                tenant: op.tenant_id.clone(),
                cluster: op.cluster_id.clone(),
                operation: op.operation_id.clone(),
                stage: stage.name.clone(),
            };
            let token = mint(self.signer, self.issuer, &subject, &aud, now, life).await?;
            tokens.push((stage.name.clone(), token));
        }
        let expires_at = (now + life).unix_timestamp();
        let sealed = seal_run_tokens(
            self.keys,
            &op.tenant_id,
            &op.operation_id,
            &aud,
            expires_at,
            &tokens,
        )
        .await?;
        Ok(Some(sealed))
    }
}

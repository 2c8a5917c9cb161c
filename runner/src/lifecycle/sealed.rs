//! Sealed inputs of a run (see `strato_domain::sealed`): Strato's KMS key, and the external id Strato issued
//! the operation's tenant, opened only here, where a target role is assumed with it.

use strato_domain::ErrorCategory;
use strato_domain::secret::Sensitive;

use super::RunContext;
use super::failure::Failure;
use crate::ports::{Ports, RunStore};

impl<P: Ports> RunContext<P> {
    /// Strato's KMS key, which opens sealed values (the tenant's external id, sensitive variables).
    pub(super) fn keys(&self) -> &P::Keys {
        &self.ports.keys
    }
}

/// The external id Strato issued the operation's tenant (sealed on the tenant item), opened.
pub(super) async fn tenant_external_id<P: Ports>(
    ctx: &RunContext<P>,
    step: &str,
) -> Result<Sensitive, Failure> {
    let tenant = &ctx.op.tenant_id;
    let sealed = ctx
        .ports
        .store
        .tenant_external_id(tenant)
        .await
        .map_err(|e| Failure::internal(step, e))?
        .ok_or_else(|| {
            Failure::new(
                step,
                ErrorCategory::Credentials,
                "your tenant has no external id yet, so no target role can be assumed; \
                 GET /v1/tenant/target-access issues it and shows the trust policy your role needs",
            )
        })?;
    strato_domain::sealed::open_external_id(ctx.keys(), tenant, &sealed)
        .await
        .map_err(|e| Failure::internal(step, format!("opening the tenant's external id: {e}")))
}

//! `GET /v1/tenant/target-access`: the external id Strato issued the calling tenant, and the trust policy its
//! target roles need. The id is issued on first read (random, 64 hex characters after `strato-`), stored
//! sealed with Strato's KMS key on the tenant item, and never replaced; every role the tenant names in a
//! `target` is assumed with it, so no tenant can choose (or guess) the id another tenant's role trusts.

use serde_json::{Value, json};
use strato_aws::store::Store;
use strato_domain::ids::TenantId;
use strato_domain::sealed;
use strato_domain::secret::Sensitive;

use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

/// Your issued external id, and the trust policy a target role needs.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = TargetAccess)]
pub(crate) struct TargetAccessView {
    /// The external id every `target` role of yours is assumed with; put it in the role's trust policy.
    pub external_id: String,
    /// The principal that assumes your role (Strato's runner role), when the deployment names it.
    pub principal: Option<String>,
    /// A trust policy for your role: only Strato's principal, and only with your external id.
    #[schema(value_type = Object)]
    pub trust_policy: Value,
    /// Each cloud's settings to trust your runs' OIDC identity tokens (AWS `web_identity`, GCP, Azure);
    /// absent when the deployment issues none.
    pub federation: Option<crate::federation::Federation>,
}

/// The trust policy a tenant's target role needs: `sts:AssumeRole` for Strato's principal, only with the
/// tenant's external id.
pub(crate) fn trust_policy(principal: Option<&str>, external_id: &str) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"AWS": principal.unwrap_or("<Strato's runner role ARN>")},
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"sts:ExternalId": external_id}}
        }]
    })
}

/// The tenant's external id, issued now if it has none. Two first reads at once issue one id: the loser of
/// the conditional write reads the winner's.
pub(crate) async fn issued_external_id(
    store: &Store,
    keys: &crate::context::ApiKeys,
    tenant: &TenantId,
) -> Result<Sensitive, ApiError> {
    for _ in 0..2 {
        if let Some(env) = store.tenant_external_id(tenant).await? {
            return Ok(sealed::open_external_id(keys, tenant, &env).await?);
        }
        let id = sealed::generate_external_id();
        let env = sealed::seal_external_id(keys, tenant, &id).await?;
        if store.issue_tenant_external_id(tenant, &env).await? {
            return Ok(id);
        }
    }
    Err(ApiError::Store(strato_aws::Error::Conflict(format!(
        "tenant {tenant}'s external id could not be read back"
    ))))
}

pub(crate) async fn get(ctx: &Ctx, caller: &Caller) -> Result<Reply<TargetAccessView>, ApiError> {
    let id = issued_external_id(&ctx.store, &ctx.keys, &caller.tenant).await?;
    let principal = ctx.config.runner_role_arn.clone();
    Ok(Reply::ok(TargetAccessView {
        trust_policy: trust_policy(principal.as_deref(), id.expose()),
        external_id: id.expose().to_owned(),
        principal,
        federation: ctx
            .config
            .oidc_issuer
            .as_ref()
            .map(|i| crate::federation::federation(i, &caller.tenant)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trust_policy_requires_the_external_id() {
        let p = trust_policy(Some("arn:aws:iam::123456789012:role/strato-runner"), "strato-abc");
        let s = &p["Statement"][0];
        assert_eq!(s["Condition"]["StringEquals"]["sts:ExternalId"], "strato-abc");
        assert_eq!(
            s["Principal"]["AWS"],
            "arn:aws:iam::123456789012:role/strato-runner"
        );
        assert_eq!(s["Action"], "sts:AssumeRole");
    }
}

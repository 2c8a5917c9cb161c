//! `/v1/tenant/cloud-tokens`: the API tokens the engine uses on clouds without federation (DigitalOcean,
//! Linode), one per tenant and cloud. PUT sets or rotates one (admin), DELETE removes it (admin), GET lists
//! which are set, when and by whom (never a value: a token is sealed before it is stored and shown to
//! nobody). Its value never appears in an answer, an error, a log line or an audit entry.

use std::collections::BTreeMap;

use serde_json::Value;
use strato_domain::identity::cloud_tokens::{
    CloudToken, TOKEN_CLOUDS, TOKEN_RULE, seal_cloud_token, token_ok,
};
use strato_domain::model::CloudProvider;
use strato_domain::secret::Sensitive;

use crate::requests::{Field, unknown};
use crate::views::Deleted;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

/// `PUT /v1/tenant/cloud-tokens/{provider}`.
#[derive(Debug, Default, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = CloudTokenRequest)]
pub(crate) struct CloudTokenBody {
    /// The cloud's API token (write-only: never shown again).
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 20, max_length = 512, write_only)]
    pub token: Field<Sensitive>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}

/// One stored token, without its value.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = CloudToken)]
pub(crate) struct CloudTokenView {
    /// `digitalocean` or `linode`.
    pub provider: String,
    /// When it was set (RFC 3339).
    pub set_at: String,
    /// Who set it (the token's `sub`).
    pub set_by: String,
}

/// The tenant's stored tokens.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = CloudTokenList)]
pub(crate) struct CloudTokenListView {
    pub tokens: Vec<CloudTokenView>,
}

fn view(provider: &str, t: &CloudToken) -> CloudTokenView {
    CloudTokenView {
        provider: provider.to_owned(),
        set_at: strato_domain::ts::format(t.set_at),
        set_by: t.set_by.clone(),
    }
}

/// The cloud named in the path: one that takes a token (others federate: 404 saying so).
fn cloud(provider: &str) -> Result<CloudProvider, ApiError> {
    let shown: String = provider.chars().take(32).collect();
    match provider.parse::<CloudProvider>() {
        Ok(p) if TOKEN_CLOUDS.contains(&p) => Ok(p),
        Ok(p) => Err(ApiError::NotFound(format!(
            "{p} takes no stored token: its runs federate with Strato's identity tokens (GET /v1/tenant/target-access)"
        ))),
        Err(_) => Err(ApiError::NotFound(format!(
            "'{shown}' is not a cloud with API tokens; use digitalocean or linode"
        ))),
    }
}

pub(crate) async fn list(ctx: &Ctx, caller: &Caller) -> Result<Reply<CloudTokenListView>, ApiError> {
    let stored = ctx.store.cloud_tokens(&caller.tenant).await?;
    Ok(Reply::ok(CloudTokenListView {
        tokens: stored.iter().map(|(p, t)| view(p, t)).collect(),
    }))
}

pub(crate) async fn put(
    ctx: &Ctx,
    caller: &Caller,
    provider: &str,
    body: CloudTokenBody,
) -> Result<Reply<CloudTokenView>, ApiError> {
    let cloud = cloud(provider)?;
    let mut errors = Vec::new();
    unknown(
        &body.other,
        "",
        "is not a field of a cloud token",
        "token",
        &mut errors,
    );
    // Problems name the field and the rule, never the value.
    let token = match body.token {
        Field::Ok(t) if token_ok(t.expose()) => Some(t),
        Field::Ok(_) => {
            errors.push(ApiError::field("token", "is not an API token", TOKEN_RULE));
            None
        }
        Field::Missing | Field::Null => {
            errors.push(ApiError::field("token", "is required", TOKEN_RULE));
            None
        }
        Field::Bad(_) => {
            errors.push(ApiError::field("token", "must be a string", TOKEN_RULE));
            None
        }
    };
    let Some(token) = token.filter(|_| errors.is_empty()) else {
        return Err(ApiError::Invalid {
            detail: "the cloud token is invalid".into(),
            errors,
        });
    };
    let sealed = seal_cloud_token(&ctx.keys, &caller.tenant, cloud, &token).await?;
    let record = CloudToken {
        sealed,
        set_at: strato_domain::ts::now(),
        set_by: caller.subject.clone().unwrap_or_default(),
        storage_keys: None,
    };
    ctx.store
        .put_cloud_token(&caller.tenant, cloud.as_str(), &record)
        .await?;
    Ok(Reply::ok(view(cloud.as_str(), &record)))
}

pub(crate) async fn delete(ctx: &Ctx, caller: &Caller, provider: &str) -> Result<Reply<Deleted>, ApiError> {
    let cloud = cloud(provider)?;
    if !ctx
        .store
        .delete_cloud_token(&caller.tenant, cloud.as_str())
        .await?
    {
        return Err(ApiError::NotFound(format!("you have no {cloud} token")));
    }
    Ok(Reply::ok(Deleted { deleted: true }))
}

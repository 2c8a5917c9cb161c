//! `/v1/tenant/cloud-tokens`: the API tokens the engine uses on clouds without federation (DigitalOcean,
//! Linode), one per tenant and cloud. PUT sets or rotates one (admin), DELETE removes it (admin), GET lists
//! which are set, when and by whom (never a value: a token is sealed before it is stored and shown to
//! nobody). Its value never appears in an answer, an error, a log line or an audit entry. The same holds for
//! the optional object storage key pair (Spaces, Linode Object Storage) a PUT may carry beside the token:
//! sealed on its own, shown only as whether one is set.

use std::collections::BTreeMap;

use serde_json::Value;
use strato_domain::identity::cloud_tokens::{
    ACCESS_KEY_RULE, CloudToken, SECRET_KEY_RULE, StorageKeys, TOKEN_CLOUDS, TOKEN_RULE, access_key_ok,
    seal_cloud_token, seal_storage_keys, token_ok,
};
use strato_domain::model::CloudProvider;
use strato_domain::secret::Sensitive;

use crate::requests::{Field, unknown};
use crate::views::Deleted;
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};
use strato_domain::validate::FieldError;

/// `PUT /v1/tenant/cloud-tokens/{provider}`: sets the cloud's record as a whole. A PUT replaces the
/// stored record: a key pair set before and not sent again is removed (send it again when rotating the
/// token of a target that keeps its state in the cloud's object storage).
#[derive(Debug, Default, serde::Deserialize, utoipa::ToSchema)]
#[schema(as = CloudTokenRequest)]
pub(crate) struct CloudTokenBody {
    /// The cloud's API token (write-only: never shown again).
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 20, max_length = 512, write_only)]
    pub token: Field<Sensitive>,
    /// The access key id of the cloud's S3-compatible object storage (Spaces, Linode Object Storage), for a
    /// target whose state lives there (the API token does not sign S3 requests). With
    /// `storage_secret_access_key`, both or neither; write-only.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 16, max_length = 128, pattern = "^[A-Za-z0-9]+$", write_only)]
    pub storage_access_key_id: Field<Sensitive>,
    /// That access key's secret (write-only: never shown again). With `storage_access_key_id`.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 20, max_length = 512, write_only)]
    pub storage_secret_access_key: Field<Sensitive>,
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
    /// Whether an object storage key pair is set with it (its values are never shown).
    pub storage_keys: bool,
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
        storage_keys: t.storage_keys.is_some(),
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
    let (token, pair) = checked(body)?;
    let sealed = seal_cloud_token(&ctx.keys, &caller.tenant, cloud, &token).await?;
    let record = CloudToken {
        sealed,
        set_at: strato_domain::ts::now(),
        set_by: caller.subject.clone().unwrap_or_default(),
        storage_keys: match &pair {
            Some(p) => Some(seal_storage_keys(&ctx.keys, &caller.tenant, cloud, p).await?),
            None => None,
        },
    };
    ctx.store
        .put_cloud_token(&caller.tenant, cloud.as_str(), &record)
        .await?;
    Ok(Reply::ok(view(cloud.as_str(), &record)))
}

const FIELDS: &str = "token, storage_access_key_id, storage_secret_access_key";

/// A secret member's value when it has its form; else its problem at `field` (never its value).
fn secret(
    v: Field<Sensitive>,
    field: &str,
    ok: fn(&str) -> bool,
    rule: &str,
    errors: &mut Vec<FieldError>,
) -> Option<Sensitive> {
    match v {
        Field::Ok(t) if ok(t.expose()) => Some(t),
        Field::Ok(_) => {
            errors.push(ApiError::field(field, "does not have the expected form", rule));
            None
        }
        Field::Missing | Field::Null => None,
        Field::Bad(_) => {
            errors.push(ApiError::field(field, "must be a string", rule));
            None
        }
    }
}

/// The body's token and key pair, or a 422 naming each bad field and its rule (never a value).
fn checked(body: CloudTokenBody) -> Result<(Sensitive, Option<StorageKeys>), ApiError> {
    let mut errors = Vec::new();
    unknown(
        &body.other,
        "",
        "is not a field of a cloud token",
        FIELDS,
        &mut errors,
    );
    let missing = matches!(body.token, Field::Missing | Field::Null);
    let token = secret(body.token, "token", token_ok, TOKEN_RULE, &mut errors);
    if missing {
        errors.push(ApiError::field("token", "is required", TOKEN_RULE));
    }
    let id_given = !matches!(body.storage_access_key_id, Field::Missing | Field::Null);
    let secret_given = !matches!(body.storage_secret_access_key, Field::Missing | Field::Null);
    let id = secret(
        body.storage_access_key_id,
        "storage_access_key_id",
        access_key_ok,
        ACCESS_KEY_RULE,
        &mut errors,
    );
    let key = secret(
        body.storage_secret_access_key,
        "storage_secret_access_key",
        token_ok,
        SECRET_KEY_RULE,
        &mut errors,
    );
    // A key pair is whole or absent: one half alone could sign nothing.
    match (id_given, secret_given) {
        (true, false) => errors.push(ApiError::field(
            "storage_secret_access_key",
            "is required with storage_access_key_id",
            SECRET_KEY_RULE,
        )),
        (false, true) => errors.push(ApiError::field(
            "storage_access_key_id",
            "is required with storage_secret_access_key",
            ACCESS_KEY_RULE,
        )),
        _ => {}
    }
    match token {
        Some(token) if errors.is_empty() => Ok((
            token,
            id.zip(key).map(|(id, key)| StorageKeys {
                access_key_id: id.expose().to_owned(),
                secret_access_key: key,
            }),
        )),
        _ => Err(ApiError::Invalid {
            detail: "the cloud token is invalid".into(),
            errors,
        }),
    }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TOKEN: &str = "dop_v1_9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddccbbaa";
    const KEY_ID: &str = "DO00ABCDEFGHIJKLMNOP";
    const SECRET: &str = "s3cr3t/ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

    fn body(v: serde_json::Value) -> CloudTokenBody {
        serde_json::from_value(v).unwrap()
    }

    /// The fields a refusal names, and its text (to check no value is in it).
    fn refused(v: serde_json::Value) -> (Vec<String>, String) {
        match checked(body(v)) {
            Err(ApiError::Invalid { errors, detail }) => (
                errors.iter().map(|e| e.field.clone()).collect(),
                format!("{detail} {errors:?}"),
            ),
            other => panic!("not refused: {:?}", other.map(|(_, p)| p.is_some())),
        }
    }

    #[test]
    fn a_key_pair_is_taken_whole_beside_the_token() {
        let (token, pair) = checked(body(json!({
            "token": TOKEN,
            "storage_access_key_id": KEY_ID,
            "storage_secret_access_key": SECRET,
        })))
        .unwrap();
        assert_eq!(token.expose(), TOKEN);
        let pair = pair.unwrap();
        assert_eq!(pair.access_key_id, KEY_ID);
        assert_eq!(pair.secret_access_key.expose(), SECRET);
        let (_, none) = checked(body(json!({"token": TOKEN}))).unwrap();
        assert!(none.is_none());
        let (_, null) = checked(body(json!({
            "token": TOKEN, "storage_access_key_id": null, "storage_secret_access_key": null
        })))
        .unwrap();
        assert!(null.is_none(), "null is absent");
    }

    #[test]
    fn half_a_key_pair_or_a_malformed_half_is_a_422_naming_the_field_without_its_value() {
        let (fields, text) = refused(json!({"token": TOKEN, "storage_access_key_id": KEY_ID}));
        assert_eq!(fields, ["storage_secret_access_key"]);
        assert!(!text.contains(KEY_ID), "{text}");
        let (fields, text) = refused(json!({"token": TOKEN, "storage_secret_access_key": SECRET}));
        assert_eq!(fields, ["storage_access_key_id"]);
        assert!(!text.contains(SECRET), "{text}");
        let (fields, text) = refused(json!({
            "token": TOKEN,
            "storage_access_key_id": "short-and-dashed",
            "storage_secret_access_key": "has spaces in a long secret value",
        }));
        assert_eq!(fields, ["storage_access_key_id", "storage_secret_access_key"]);
        assert!(
            !text.contains("short-and-dashed") && !text.contains("has spaces"),
            "{text}"
        );
        assert!(
            text.contains(ACCESS_KEY_RULE) && text.contains(SECRET_KEY_RULE),
            "{text}"
        );
        let (fields, _) =
            refused(json!({"token": TOKEN, "storage_access_key_id": 7, "storage_secret_access_key": SECRET}));
        assert_eq!(fields, ["storage_access_key_id"]);
        // The token is still required, and a stray member is named with the fields there are.
        let (fields, text) = refused(
            json!({"storage_access_key_id": KEY_ID, "storage_secret_access_key": SECRET, "region": "nyc3"}),
        );
        assert_eq!(fields, ["region", "token"]);
        assert!(text.contains(FIELDS), "{text}");
    }

    #[test]
    fn the_view_says_whether_a_key_pair_is_set_and_never_a_value() {
        let env = strato_domain::sealed::Envelope {
            v: 1,
            key: "AA==".into(),
            nonce: "AA==".into(),
            ct: "AA==".into(),
        };
        let mut t = CloudToken {
            sealed: env.clone(),
            set_at: strato_domain::ts::now(),
            set_by: "alice".into(),
            storage_keys: None,
        };
        assert!(!view("digitalocean", &t).storage_keys);
        t.storage_keys = Some(env);
        let v = serde_json::to_value(view("digitalocean", &t)).unwrap();
        assert_eq!(v["storage_keys"], json!(true));
        assert_eq!(
            v.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["provider", "set_at", "set_by", "storage_keys"]
        );
    }
}

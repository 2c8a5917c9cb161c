//! Strato as an OIDC issuer, as clouds see it: the discovery document and the JWKS at the issuer URL
//! (`GET /.well-known/openid-configuration`, `GET /.well-known/jwks.json`, unauthenticated: a cloud fetches
//! them anonymously), and what a tenant configures on each cloud to trust its runs' identity tokens (shown
//! by `GET /v1/tenant/target-access`).
//!
//! Served by the api rather than as static files beside the console: the JWKS is made of the signing key's
//! public half (KMS `GetPublicKey`, DER), whose modulus and `kid` (RFC 7638 thumbprint) Terraform cannot
//! compute at deploy time, and serving it from the key itself means it can never drift from what signs.

use serde::Serialize;
use serde_json::{Value, json};
use strato_domain::identity::jwk::{self, discovery};
use strato_domain::identity::{AUD_AWS, AUD_AZURE, Issuer, Signer};
use strato_domain::ids::TenantId;

use crate::context::Ctx;
use crate::edge::Reply;
use crate::error::ApiError;

fn issuer(ctx: &Ctx) -> Result<&Issuer, ApiError> {
    ctx.config.oidc_issuer.as_ref().ok_or_else(|| {
        ApiError::NotFound("this deployment issues no identity tokens (STRATO_OIDC_ISSUER is not set)".into())
    })
}

/// `GET /.well-known/openid-configuration`.
pub(crate) async fn openid_configuration(ctx: &Ctx) -> Result<Reply<Value>, ApiError> {
    Ok(Reply::ok(discovery(issuer(ctx)?)))
}

/// `GET /.well-known/jwks.json`.
pub(crate) async fn jwks(ctx: &Ctx) -> Result<Reply<jwk::Jwks>, ApiError> {
    issuer(ctx)?;
    let der = ctx.signer.public_key_der().await?;
    Ok(Reply::ok(jwk::Jwks::from_spki_ders([der.as_slice()])?))
}

/// What to configure on each cloud so that it trusts your runs' identity tokens (and only yours: every
/// condition is on `sub` starting `tenant:<you>:` or on `strato_tenant`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub(crate) struct Federation {
    /// The issuer URL every token names (`iss`); its discovery document is at
    /// `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// Every token's `sub` for your runs: `tenant:<you>:cluster:<c>:operation:<o>:stage:<s>`.
    pub subject_pattern: String,
    /// AWS (`target.auth: web_identity`): an IAM OIDC identity provider for the issuer with client id
    /// `sts.amazonaws.com`, and this trust policy on the role.
    #[schema(value_type = Object)]
    pub aws: Value,
    /// GCP: a workload identity pool provider (OIDC) with these settings.
    #[schema(value_type = Object)]
    pub gcp: Value,
    /// Azure: a federated identity credential on the app registration or managed identity.
    #[schema(value_type = Object)]
    pub azure: Value,
}

/// The trust settings for `tenant` under `issuer`.
pub(crate) fn federation(issuer: &Issuer, tenant: &TenantId) -> Federation {
    let host = issuer.host_path();
    let sub_prefix = format!("tenant:{tenant}:");
    Federation {
        issuer: issuer.as_str().to_owned(),
        subject_pattern: format!("{sub_prefix}cluster:<cluster id>:operation:<operation id>:stage:<stage>"),
        aws: json!({
            "oidc_provider": {"url": issuer.as_str(), "client_id_list": [AUD_AWS]},
            "trust_policy": {
                "Version": "2012-10-17",
                "Statement": [{
                    "Effect": "Allow",
                    "Principal": {"Federated": format!("arn:aws:iam::<your account id>:oidc-provider/{host}")},
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": {
                        "StringEquals": {format!("{host}:aud"): AUD_AWS},
                        "StringLike": {format!("{host}:sub"): format!("{sub_prefix}*")}
                    }
                }]
            }
        }),
        gcp: json!({
            "issuer_uri": issuer.as_str(),
            "allowed_audiences": "leave empty: tokens carry the provider's default audience \
                                  //iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>",
            "attribute_mapping": {
                "google.subject": "assertion.sub",
                "attribute.tenant": "assertion.strato_tenant",
                "attribute.cluster": "assertion.strato_cluster"
            },
            "attribute_condition": format!("assertion.strato_tenant == '{tenant}'"),
            "service_account_binding": format!(
                "roles/iam.workloadIdentityUser on the service account for \
                 principalSet://iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/attribute.tenant/{tenant}"
            )
        }),
        azure: json!({
            "issuer": issuer.as_str(),
            "audiences": [AUD_AZURE],
            "claims_matching_expression": format!("claims['sub'] matches '{sub_prefix}*'"),
            "limit": "A classic federated identity credential matches `subject` exactly, and every run's sub \
                      differs (cluster, operation, stage), so it needs the flexible federated identity \
                      credential's claims-matching expression above. Microsoft offers that only in preview and \
                      only for some issuers; until Entra accepts it for your Strato issuer, an Azure target \
                      cannot be trusted per tenant. Only a real tenant can show which applies."
        }),
    }
}

/// The OpenID Provider metadata (`/.well-known/openid-configuration`), for the OpenAPI document.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // Documents the schema; the body is `strato_domain::identity::jwk::discovery`'s.
pub(crate) struct OidcDiscovery {
    issuer: String,
    jwks_uri: String,
    response_types_supported: Vec<String>,
    subject_types_supported: Vec<String>,
    id_token_signing_alg_values_supported: Vec<String>,
    claims_supported: Vec<String>,
    scopes_supported: Vec<String>,
}

/// A JWK Set of RSA signing keys (`/.well-known/jwks.json`), for the OpenAPI document.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // Documents the schema; the body is `strato_domain::identity::jwk::Jwks`.
pub(crate) struct Jwks {
    keys: Vec<JwkDoc>,
}

/// One RSA public key: `kty` RSA, `use` sig, `alg` RS256, `kid` (its RFC 7638 thumbprint), `n`, `e`
/// (base64url).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(as = Jwk)]
pub(crate) struct JwkDoc {
    kty: String,
    #[schema(rename = "use")]
    use_: String,
    alg: String,
    kid: String,
    n: String,
    e: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_clouds_trust_is_limited_to_the_tenant() {
        let issuer: Issuer = "https://api.strato.example.com".parse().unwrap();
        let f = federation(&issuer, &"acme".parse().unwrap());
        let s = &f.aws["trust_policy"]["Statement"][0];
        assert_eq!(
            s["Principal"]["Federated"],
            "arn:aws:iam::<your account id>:oidc-provider/api.strato.example.com"
        );
        assert_eq!(
            s["Condition"]["StringLike"]["api.strato.example.com:sub"],
            "tenant:acme:*"
        );
        assert_eq!(
            s["Condition"]["StringEquals"]["api.strato.example.com:aud"],
            AUD_AWS
        );
        assert_eq!(f.gcp["attribute_condition"], "assertion.strato_tenant == 'acme'");
        assert_eq!(f.gcp["attribute_mapping"]["google.subject"], "assertion.sub");
        assert_eq!(f.azure["audiences"][0], AUD_AZURE);
        assert!(f.subject_pattern.starts_with("tenant:acme:cluster:"));
    }
}

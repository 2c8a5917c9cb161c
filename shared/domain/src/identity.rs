//! Strato as an OpenID Connect issuer: a short-lived identity token per run stage that a cloud exchanges for
//! its own credentials (AWS `AssumeRoleWithWebIdentity`, GCP Workload Identity Federation, Azure federated
//! credentials), so no tenant stores long-lived cloud keys with Strato.
//!
//! A token is a JWT signed RS256 by Strato's asymmetric signing key (KMS in AWS, behind [`Signer`]); its
//! header names the key (`kid`, the key's RFC 7638 thumbprint), its claims say who runs what:
//! `sub = tenant:<t>:cluster:<c>:operation:<o>:stage:<s>`, `aud` as the trusting cloud expects it, `iat`,
//! `nbf`, `exp` (at most [`MAX_TOKEN_LIFE`] after `iat`), `jti`, and `strato_tenant` / `strato_cluster`
//! (a cloud's attribute mapping conditions on them). The discovery document and the JWKS a cloud fetches to
//! check the signature are built from the same key ([`jwk`]).
//!
//! Only a trusted function mints (the dispatcher, when it starts a run): the runner executes tenants'
//! Terraform and holds no signing right. The runner gets its tokens sealed ([`RunTokens`]).

use std::future::Future;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::ids::{ClusterId, OperationId, TenantId};
use crate::ports::PortError;
use crate::secret::Sensitive;

pub mod cloud_tokens;
mod issue;
pub mod jwk;
mod sealed_tokens;
pub use issue::{NoRunIdentities, RunIdentities, TokenIssuer};
pub use sealed_tokens::{PURPOSE_RUN_IDENTITY, RunTokens, open_run_token, seal_run_tokens};

#[cfg(any(test, feature = "fakes"))]
mod fake;
#[cfg(any(test, feature = "fakes"))]
pub use fake::FakeSigner;

#[cfg(test)]
mod tests;

/// The longest a token lives: a cloud's exchange needs it only at the start of a stage (the credentials it
/// hands out are what the engine then uses), and a leaked token is worth little an hour later.
pub const MAX_TOKEN_LIFE: Duration = Duration::hours(1);
/// How far `nbf` lies before `iat`: tolerance for a verifier's clock running behind ours.
pub const CLOCK_SKEW: Duration = Duration::seconds(60);
pub use strato_model::run_identity::{AUD_AWS, AUD_AZURE, gcp_audience};

/// The deployment's issuer URL (`STRATO_OIDC_ISSUER`): `https://host[/path]`, no trailing slash, query or
/// fragment, because a verifier compares `iss` with it byte for byte and fetches
/// `<issuer>/.well-known/openid-configuration`. Plain `http` only on loopback (devstack).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Issuer(String);

impl Issuer {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the discovery document is served.
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.0)
    }

    /// Where the JWKS is served.
    pub fn jwks_url(&self) -> String {
        format!("{}/.well-known/jwks.json", self.0)
    }

    /// The issuer without its scheme, as AWS names an OIDC provider (`arn:aws:iam::<acct>:oidc-provider/<host/path>`)
    /// and its condition keys (`<host/path>:sub`).
    pub fn host_path(&self) -> &str {
        self.0.split_once("://").map_or(self.0.as_str(), |(_, r)| r)
    }
}

impl TryFrom<String> for Issuer {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let rule =
            "an https URL without a trailing slash, query or fragment, e.g. https://api.strato.example.com";
        let url = url::Url::parse(&s).map_err(|e| format!("'{s}' is not a URL ({e}): {rule}"))?;
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && loopback);
        if !scheme_ok || url.host_str().is_none() {
            return Err(format!("'{s}' is not https: {rule}"));
        }
        if s.ends_with('/') || url.query().is_some() || url.fragment().is_some() || !url.username().is_empty()
        {
            return Err(format!("'{s}': {rule}"));
        }
        Ok(Self(s))
    }
}

impl From<Issuer> for String {
    fn from(i: Issuer) -> String {
        i.0
    }
}

impl std::str::FromStr for Issuer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::try_from(s.to_owned())
    }
}

/// Whom a token speaks for: one stage of one operation of one cluster of one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSubject {
    pub tenant: TenantId,
    pub cluster: ClusterId,
    pub operation: OperationId,
    pub stage: String,
}

impl RunSubject {
    /// `tenant:<t>:cluster:<c>:operation:<o>:stage:<s>`: tenants' trust conditions match its prefix
    /// (`tenant:<t>:*`), so no part may contain a `:` (ids cannot; a stage name is checked by [`mint`]).
    pub fn sub(&self) -> String {
        format!(
            "tenant:{}:cluster:{}:operation:{}:stage:{}",
            self.tenant, self.cluster, self.operation, self.stage
        )
    }
}

/// The claims of a run's identity token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub jti: String,
    pub strato_tenant: String,
    pub strato_cluster: String,
    pub strato_operation: String,
    pub strato_stage: String,
}

/// Strato's token-signing key: RSA 2048, RS256 (RSASSA-PKCS1-v1_5 with SHA-256). The AWS adapter is KMS
/// (`strato_aws::ports::KmsSigner`: `Sign`, `GetPublicKey`); [`FakeSigner`] holds a
/// key in memory.
pub trait Signer: Send + Sync {
    /// The RS256 signature of `message` (the JWT's signing input).
    fn sign(&self, message: &[u8]) -> impl Future<Output = Result<Vec<u8>, PortError>> + Send;
    /// The public key as DER `SubjectPublicKeyInfo` (what KMS `GetPublicKey` returns).
    fn public_key_der(&self) -> impl Future<Output = Result<Vec<u8>, PortError>> + Send;
}

/// Signs a token for `subject`, audience `aud`, valid from `now` for `life` (capped at [`MAX_TOKEN_LIFE`]).
/// The token is a bearer credential: it comes back [`Sensitive`] (never in a `Debug`).
pub async fn mint(
    signer: &impl Signer,
    issuer: &Issuer,
    subject: &RunSubject,
    aud: &str,
    now: OffsetDateTime,
    life: Duration,
) -> Result<Sensitive, PortError> {
    let stage_ok = !subject.stage.is_empty()
        && subject.stage.len() <= 64
        && subject
            .stage
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if !stage_ok {
        return Err(PortError::Corrupt {
            what: "identity token subject".into(),
            reason: format!("stage name '{}' is not 1-64 of [A-Za-z0-9._-]", subject.stage),
        });
    }
    let der = signer.public_key_der().await?;
    let key = jwk::Jwk::from_spki_der(&der)?;
    let life = life.min(MAX_TOKEN_LIFE);
    let iat = now.unix_timestamp();
    let claims = Claims {
        iss: issuer.as_str().to_owned(),
        sub: subject.sub(),
        aud: aud.to_owned(),
        iat,
        nbf: iat - CLOCK_SKEW.whole_seconds(),
        exp: iat + life.whole_seconds(),
        jti: uuid::Uuid::new_v4().to_string(),
        strato_tenant: subject.tenant.to_string(),
        strato_cluster: subject.cluster.to_string(),
        strato_operation: subject.operation.to_string(),
        strato_stage: subject.stage.clone(),
    };
    let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": key.kid});
    let json = |v: &dyn erased::Json| v.to_vec();
    let input = format!(
        "{}.{}",
        B64URL.encode(json(&header)?),
        B64URL.encode(json(&claims)?)
    );
    let sig = signer.sign(input.as_bytes()).await?;
    Ok(Sensitive::new(format!("{input}.{}", B64URL.encode(sig))))
}

mod erased {
    use crate::ports::PortError;

    /// Serialising either the header (a JSON value) or the claims, with one error mapping.
    pub trait Json {
        fn to_vec(&self) -> Result<Vec<u8>, PortError>;
    }

    impl<T: serde::Serialize> Json for T {
        fn to_vec(&self) -> Result<Vec<u8>, PortError> {
            serde_json::to_vec(self).map_err(|source| PortError::Render {
                what: "identity token",
                source,
            })
        }
    }
}

//! The emulated API Gateway JWT authorizer: bearer tokens are HS256 JWTs signed with a dev secret
//! (`STRATO_JWT_SECRET`, random per run when unset), or entries of a static token file. The WebSocket
//! emulation uses the same [`Authenticator`] for `?token=`.
//!
//! JWT claims: `iss` = [`ISSUER`], `aud` = [`AUDIENCE`], `exp` (required), `sub`, and the tenant claim
//! (`STRATO_TENANT_CLAIM`, default `tenant_id`). Static token file: one token per line,
//! `TOKEN TENANT [SUBJECT]`, blank lines and `#` comments ignored.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::{ExposeSecret, SecretSlice, SecretString};
use serde_json::{Value, json};

pub const ISSUER: &str = "strato-devstack";
pub const AUDIENCE: &str = "strato-api";
/// The audience of the platform operator's tokens (the api's `STRATO_OPERATOR_AUDIENCE` in devstack): a
/// token of it names no tenant and grants `platform:admin` ([`mint_operator`]).
pub const OPERATOR_AUDIENCE: &str = "strato-operator";
/// The platform operator's scope.
pub const OPERATOR_SCOPE: &str = "platform:admin";

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("the request has no bearer token (Authorization: Bearer <token>)")]
    Missing,
    #[error("the token is not valid: {0}")]
    Invalid(String),
    #[error("token file {path}, line {line}: {reason}")]
    TokenFile {
        path: String,
        line: usize,
        reason: String,
    },
}

/// One entry of the static token file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticToken {
    pub tenant: String,
    pub subject: String,
}

/// Verifies bearer tokens and mints dev tokens. The secret and the static tokens are `secrecy` secrets, so
/// `Debug` shows them as `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct Authenticator {
    secret: SecretSlice<u8>,
    tenant_claim: String,
    /// A dev tool's handful of tokens: looked up one by one.
    static_tokens: Vec<(SecretString, StaticToken)>,
}

/// A fresh random secret (hex of 32 random bytes).
pub fn random_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Mints an HS256 token for `tenant` without an [`Authenticator`] (clients that only know the secret).
/// What a dev token may do unless asked otherwise: everything (the tenant's owner). See the api's
/// `scopes` module for what each scope allows.
pub const DEV_SCOPE: &str = "clusters:read clusters:write admin";

pub fn mint(secret: &[u8], tenant_claim: &str, tenant: &str, subject: &str, ttl: Duration) -> String {
    mint_scoped(secret, tenant_claim, tenant, subject, ttl, DEV_SCOPE)
}

/// A token with the given scopes (space-separated), e.g. a viewer's `clusters:read`.
pub fn mint_scoped(
    secret: &[u8],
    tenant_claim: &str,
    tenant: &str,
    subject: &str,
    ttl: Duration,
    scope: &str,
) -> String {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let mut claims = json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": subject,
        "iat": now,
        "exp": now + ttl.as_secs() as i64,
        "scope": scope,
    });
    claims[tenant_claim] = tenant.into();
    // Encoding a JSON object with an HMAC key cannot fail.
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret),
    )
    .unwrap_or_default()
}

/// The platform operator's token: the operator's audience, no tenant claim, `platform:admin`, `sub` =
/// `subject`. The api's `/v1/admin` routes accept it, no tenant route does.
pub fn mint_operator(secret: &[u8], subject: &str, ttl: Duration) -> String {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let claims = json!({
        "iss": ISSUER,
        "aud": OPERATOR_AUDIENCE,
        "sub": subject,
        "iat": now,
        "exp": now + ttl.as_secs() as i64,
        "scope": OPERATOR_SCOPE,
    });
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret),
    )
    .unwrap_or_default()
}

impl Authenticator {
    pub fn new(secret: impl Into<Vec<u8>>, tenant_claim: impl Into<String>) -> Self {
        Self {
            secret: SecretSlice::from(secret.into()),
            tenant_claim: tenant_claim.into(),
            static_tokens: Vec::new(),
        }
    }

    pub fn tenant_claim(&self) -> &str {
        &self.tenant_claim
    }

    /// Adds the tokens of a static token file (format in the module docs).
    pub fn with_token_file(mut self, path: &Path) -> Result<Self, AuthError> {
        let text = std::fs::read_to_string(path).map_err(|e| AuthError::TokenFile {
            path: path.display().to_string(),
            line: 0,
            reason: e.to_string(),
        })?;
        let tokens = parse_token_file(&text).map_err(|(line, reason)| AuthError::TokenFile {
            path: path.display().to_string(),
            line,
            reason,
        })?;
        self.add_tokens(tokens);
        Ok(self)
    }

    pub fn add_static_token(&mut self, token: impl Into<String>, tenant: &str, subject: &str) {
        let entry = StaticToken {
            tenant: tenant.into(),
            subject: subject.into(),
        };
        self.add_tokens([(token.into(), entry)]);
    }

    /// Adds tokens, a token given again replacing its earlier entry.
    fn add_tokens(&mut self, tokens: impl IntoIterator<Item = (String, StaticToken)>) {
        for (token, entry) in tokens {
            self.static_tokens.retain(|(t, _)| t.expose_secret() != token);
            self.static_tokens.push((SecretString::from(token), entry));
        }
    }

    /// The HS256 key tokens are signed with (the ws function checks the same).
    pub fn secret(&self) -> &[u8] {
        self.secret.expose_secret()
    }

    /// A dev token for `tenant`, valid for `ttl`.
    pub fn mint(&self, tenant: &str, subject: &str, ttl: Duration) -> String {
        mint(self.secret(), &self.tenant_claim, tenant, subject, ttl)
    }

    /// The platform operator's token ([`mint_operator`]).
    pub fn mint_operator(&self, subject: &str, ttl: Duration) -> String {
        mint_operator(self.secret(), subject, ttl)
    }

    pub fn mint_scoped(&self, tenant: &str, subject: &str, ttl: Duration, scope: &str) -> String {
        mint_scoped(self.secret(), &self.tenant_claim, tenant, subject, ttl, scope)
    }

    /// The claims of a valid token, as the authorizer would pass them on.
    pub fn verify(&self, token: &str) -> Result<BTreeMap<String, Value>, AuthError> {
        if let Some((_, t)) = self
            .static_tokens
            .iter()
            .find(|(t, _)| t.expose_secret() == token)
        {
            return Ok(BTreeMap::from([
                ("iss".into(), ISSUER.into()),
                ("aud".into(), AUDIENCE.into()),
                ("sub".into(), t.subject.clone().into()),
                ("scope".into(), DEV_SCOPE.into()),
                (self.tenant_claim.clone(), t.tenant.clone().into()),
            ]));
        }
        let mut v = Validation::new(Algorithm::HS256);
        v.set_issuer(&[ISSUER]);
        // API Gateway's authorizer accepts the tenants' and the operator's app clients alike; the api tells
        // them apart.
        v.set_audience(&[AUDIENCE, OPERATOR_AUDIENCE]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        v.leeway = 5;
        jsonwebtoken::decode::<BTreeMap<String, Value>>(token, &DecodingKey::from_secret(self.secret()), &v)
            .map(|d| d.claims)
            .map_err(|e| AuthError::Invalid(e.to_string()))
    }

    /// Verifies an `Authorization` header value (`Bearer <token>`; the scheme is case-insensitive).
    pub fn verify_header(&self, header: Option<&str>) -> Result<BTreeMap<String, Value>, AuthError> {
        let h = header
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .ok_or(AuthError::Missing)?;
        if h.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Missing);
        }
        let token = match h.split_once(' ') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
            _ => {
                return Err(AuthError::Invalid(
                    "the Authorization header is not 'Bearer <token>'".into(),
                ));
            }
        };
        if token.is_empty() {
            return Err(AuthError::Missing);
        }
        self.verify(token)
    }
}

/// Claims as API Gateway hands them to the function: every value a string (numbers and booleans printed,
/// arrays as `[a b]`, objects as JSON).
pub fn claims_as_strings(claims: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    claims
        .iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => {
                    let items: Vec<String> = a
                        .iter()
                        .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                        .collect();
                    format!("[{}]", items.join(" "))
                }
                other => other.to_string(),
            };
            (k.clone(), s)
        })
        .collect()
}

fn parse_token_file(text: &str) -> Result<HashMap<String, StaticToken>, (usize, String)> {
    let mut out = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        let (token, tenant, subject) = match parts.as_slice() {
            [t, tenant] => (*t, *tenant, format!("static-{tenant}")),
            [t, tenant, sub] => (*t, *tenant, (*sub).to_owned()),
            _ => return Err((i + 1, "expected 'TOKEN TENANT [SUBJECT]'".into())),
        };
        if token.len() < 16 {
            return Err((i + 1, "tokens must be at least 16 characters".into()));
        }
        if out
            .insert(
                token.to_owned(),
                StaticToken {
                    tenant: tenant.to_owned(),
                    subject,
                },
            )
            .is_some()
        {
            return Err((i + 1, "this token is listed twice".into()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_verify_and_carry_the_tenant() {
        let a = Authenticator::new("s3cret", "tenant_id");
        let t = a.mint("demo", "alice", Duration::from_secs(60));
        let c = a.verify(&t).unwrap();
        assert_eq!(c["tenant_id"], "demo");
        assert_eq!(c["sub"], "alice");
        let c = a.verify_header(Some(&format!("bearer {t}"))).unwrap();
        assert_eq!(claims_as_strings(&c)["exp"], c["exp"].to_string());
    }

    #[test]
    fn the_operator_token_verifies_names_no_tenant_and_grants_the_platform_scope() {
        let a = Authenticator::new("s3cret", "tenant_id");
        let claims = a
            .verify(&a.mint_operator("ops", Duration::from_secs(60)))
            .unwrap();
        assert_eq!(claims["aud"], OPERATOR_AUDIENCE);
        assert_eq!(claims["sub"], "ops");
        assert_eq!(claims["scope"], OPERATOR_SCOPE);
        assert!(!claims.contains_key("tenant_id"), "{claims:?}");
    }

    #[test]
    fn wrong_secret_expired_and_malformed_tokens_are_refused() {
        let a = Authenticator::new("s3cret", "tenant_id");
        let other = Authenticator::new("other", "tenant_id").mint("demo", "x", Duration::from_secs(60));
        assert!(matches!(a.verify(&other), Err(AuthError::Invalid(_))));
        let expired = {
            let now = time::OffsetDateTime::now_utc().unix_timestamp();
            let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "exp": now - 3600, "tenant_id": "demo"});
            jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(b"s3cret")).unwrap()
        };
        assert!(matches!(a.verify(&expired), Err(AuthError::Invalid(_))));
        assert!(matches!(a.verify_header(None), Err(AuthError::Missing)));
        assert!(matches!(
            a.verify_header(Some("Basic abc")),
            Err(AuthError::Invalid(_))
        ));
        assert!(matches!(
            a.verify_header(Some("Bearer ")),
            Err(AuthError::Missing)
        ));
    }

    #[test]
    fn static_token_file_maps_tokens_to_tenants() {
        let text = "# dev tokens\n\ntok-aaaaaaaaaaaaaaaa demo\ntok-bbbbbbbbbbbbbbbb acme bob\n";
        let tokens = parse_token_file(text).unwrap();
        assert_eq!(tokens["tok-aaaaaaaaaaaaaaaa"].tenant, "demo");
        assert_eq!(tokens["tok-bbbbbbbbbbbbbbbb"].subject, "bob");
        assert_eq!(parse_token_file("short demo").unwrap_err().0, 1);
        assert_eq!(parse_token_file("x\n").unwrap_err().0, 1);
        let mut a = Authenticator::new("s", "tenant_id");
        a.add_tokens(tokens);
        assert_eq!(a.verify("tok-bbbbbbbbbbbbbbbb").unwrap()["tenant_id"], "acme");
        assert!(a.verify("tok-cccccccccccccccc").is_err());
        // `Debug` shows neither the signing secret nor a token.
        let shown = format!("{a:?}");
        assert!(
            !shown.contains("tok-") && !shown.contains("secret: [") && shown.contains("REDACTED"),
            "{shown}"
        );
        let b = Authenticator::new("s3cret-key", "tenant_id");
        assert!(!format!("{b:?}").contains("s3cret"));
    }
}

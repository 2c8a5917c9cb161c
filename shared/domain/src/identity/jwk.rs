//! The public half of the signing key as a cloud fetches it: the JWK (RSA `n` and `e` from the key's DER
//! `SubjectPublicKeyInfo`, `kid` its RFC 7638 thumbprint), the JWKS, and the OpenID discovery document that
//! points at the JWKS. Generated from the key itself, so what is published cannot drift from what signs.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Issuer;
use crate::ports::PortError;

/// The OID of rsaEncryption (1.2.840.113549.1.1.1), DER-encoded.
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// One RSA signing key as JSON Web Key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    pub kty: String,
    #[serde(rename = "use")]
    pub use_: String,
    pub alg: String,
    pub kid: String,
    pub n: String,
    pub e: String,
}

/// A JWK Set (`/.well-known/jwks.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

fn bad(reason: &str) -> PortError {
    PortError::Corrupt {
        what: "signing key's public key (SubjectPublicKeyInfo DER)".into(),
        reason: reason.into(),
    }
}

/// One DER element: its tag and contents, and what follows it.
fn element(input: &[u8]) -> Result<(u8, &[u8], &[u8]), PortError> {
    let (&tag, rest) = input.split_first().ok_or_else(|| bad("truncated"))?;
    let (&first, rest) = rest.split_first().ok_or_else(|| bad("truncated length"))?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return Err(bad("unsupported length"));
        }
        let len = rest[..n].iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return Err(bad("truncated contents"));
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

fn expect(input: &[u8], tag: u8) -> Result<(&[u8], &[u8]), PortError> {
    let (t, body, rest) = element(input)?;
    if t != tag {
        return Err(bad(&format!("expected tag {tag:#04x}, found {t:#04x}")));
    }
    Ok((body, rest))
}

/// An INTEGER's magnitude without the sign byte DER adds before a high bit.
fn unsigned(int: &[u8]) -> &[u8] {
    let mut i = int;
    while i.len() > 1 && i[0] == 0 {
        i = &i[1..];
    }
    i
}

/// `(n, e)` of an RSA `SubjectPublicKeyInfo`, big-endian without leading zeros.
pub fn rsa_components(spki: &[u8]) -> Result<(Vec<u8>, Vec<u8>), PortError> {
    let (spki, _) = expect(spki, 0x30)?;
    let (alg, rest) = expect(spki, 0x30)?;
    let (oid, _) = expect(alg, 0x06)?;
    if oid != RSA_ENCRYPTION {
        return Err(bad("not an RSA key"));
    }
    let (bits, _) = expect(rest, 0x03)?;
    let (&unused, key) = bits.split_first().ok_or_else(|| bad("empty key bits"))?;
    if unused != 0 {
        return Err(bad("key bits not whole bytes"));
    }
    let (rsa, _) = expect(key, 0x30)?;
    let (n, rest) = expect(rsa, 0x02)?;
    let (e, _) = expect(rest, 0x02)?;
    let n = unsigned(n);
    if n.len() < 256 {
        return Err(bad("modulus under 2048 bits"));
    }
    Ok((n.to_vec(), unsigned(e).to_vec()))
}

impl Jwk {
    /// The JWK of an RSA public key given as DER `SubjectPublicKeyInfo`.
    pub fn from_spki_der(der: &[u8]) -> Result<Self, PortError> {
        let (n, e) = rsa_components(der)?;
        let (n, e) = (B64URL.encode(n), B64URL.encode(e));
        // RFC 7638: SHA-256 of the required members in lexicographic order, no whitespace.
        let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
        let kid = B64URL.encode(Sha256::digest(canonical.as_bytes()));
        Ok(Self {
            kty: "RSA".into(),
            use_: "sig".into(),
            alg: "RS256".into(),
            kid,
            n,
            e,
        })
    }
}

impl Jwks {
    /// The set publishing `keys` (more than one while a new signing key is rolled in).
    pub fn from_spki_ders<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Result<Self, PortError> {
        Ok(Self {
            keys: keys
                .into_iter()
                .map(Jwk::from_spki_der)
                .collect::<Result<_, _>>()?,
        })
    }
}

/// The OpenID Provider metadata a cloud reads at `<issuer>/.well-known/openid-configuration`: only what a
/// relying party that verifies tokens needs (there is no authorization endpoint: Strato issues tokens to its
/// own runs, no one logs in).
pub fn discovery(issuer: &Issuer) -> serde_json::Value {
    serde_json::json!({
        "issuer": issuer.as_str(),
        "jwks_uri": issuer.jwks_url(),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "claims_supported": [
            "iss", "sub", "aud", "iat", "nbf", "exp", "jti",
            "strato_tenant", "strato_cluster", "strato_operation", "strato_stage"
        ],
        "scopes_supported": ["openid"],
    })
}

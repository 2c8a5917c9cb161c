use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use time::{Duration, OffsetDateTime};

use super::jwk::{Jwks, discovery, rsa_components};
use super::*;
use crate::sealed::FakeKeys;

const ISSUER: &str = "https://api.strato.example.com";

fn subject() -> RunSubject {
    RunSubject {
        tenant: "acme".parse().unwrap(),
        cluster: ClusterId::generate(),
        operation: OperationId::generate(),
        stage: "k8s".into(),
    }
}

/// What a cloud serves itself from the issuer: the discovery document and the JWKS, by URL.
fn published(issuer: &Issuer, signers: &[&FakeSigner]) -> BTreeMap<String, serde_json::Value> {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let ders: Vec<Vec<u8>> = signers
        .iter()
        .map(|s| rt.block_on(s.public_key_der()).unwrap())
        .collect();
    let jwks = Jwks::from_spki_ders(ders.iter().map(Vec::as_slice)).unwrap();
    BTreeMap::from([
        (issuer.discovery_url(), discovery(issuer)),
        (issuer.jwks_url(), serde_json::to_value(jwks).unwrap()),
    ])
}

/// Verifies `token` as a relying cloud does: discovery at the configured issuer → `jwks_uri` → the key the
/// header's `kid` names → the RS256 signature → `iss`, `aud`, `exp`, `nbf`, and a `sub` under the tenant.
fn verify_like_a_cloud(
    web: &BTreeMap<String, serde_json::Value>,
    trusted_issuer: &str,
    aud: &str,
    tenant: &str,
    token: &str,
) -> Result<Claims, String> {
    let disco = &web[&format!("{trusted_issuer}/.well-known/openid-configuration")];
    if disco["issuer"] != trusted_issuer {
        return Err("discovery names another issuer".into());
    }
    let jwks: Jwks = serde_json::from_value(web[disco["jwks_uri"].as_str().unwrap()].clone()).unwrap();
    let header = decode_header(token).map_err(|e| e.to_string())?;
    let kid = header.kid.ok_or("no kid")?;
    let key = jwks.keys.iter().find(|k| k.kid == kid).ok_or("unknown kid")?;
    let dk = DecodingKey::from_rsa_components(&key.n, &key.e).map_err(|e| e.to_string())?;
    let mut v = Validation::new(Algorithm::RS256);
    v.set_issuer(&[trusted_issuer]);
    v.set_audience(&[aud]);
    v.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
    v.validate_nbf = true;
    v.leeway = 0;
    let claims = decode::<Claims>(token, &dk, &v)
        .map_err(|e| e.to_string())?
        .claims;
    if !claims.sub.starts_with(&format!("tenant:{tenant}:")) {
        return Err("sub is another tenant's".into());
    }
    Ok(claims)
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn mint_now(signer: &FakeSigner, aud: &str, now: OffsetDateTime, life: Duration) -> String {
    let issuer: Issuer = ISSUER.parse().unwrap();
    block(mint(signer, &issuer, &subject(), aud, now, life))
        .unwrap()
        .expose()
        .to_owned()
}

#[test]
fn a_minted_token_verifies_as_a_cloud_checks_it_and_says_who_runs_what() {
    let signer = FakeSigner::default();
    let web = published(&ISSUER.parse().unwrap(), &[&signer]);
    let now = OffsetDateTime::now_utc();
    let token = mint_now(&signer, AUD_AWS, now, Duration::minutes(30));
    let c = verify_like_a_cloud(&web, ISSUER, AUD_AWS, "acme", &token).unwrap();
    assert_eq!(c.iss, ISSUER);
    assert_eq!(c.aud, AUD_AWS);
    assert!(c.sub.starts_with("tenant:acme:cluster:"), "{}", c.sub);
    assert!(c.sub.ends_with(":stage:k8s"), "{}", c.sub);
    assert!(
        c.sub.contains(&format!(":operation:{}:", c.strato_operation)),
        "{}",
        c.sub
    );
    assert_eq!(c.strato_tenant, "acme");
    assert_eq!(c.exp - c.iat, 1800);
    assert!(c.nbf <= c.iat);
    assert!(!c.jti.is_empty());
    // A life asked beyond the maximum is cut to it.
    let long = mint_now(&signer, AUD_AWS, now, Duration::hours(12));
    let c = verify_like_a_cloud(&web, ISSUER, AUD_AWS, "acme", &long).unwrap();
    assert_eq!(c.exp - c.iat, MAX_TOKEN_LIFE.whole_seconds());
    // Two tokens are never the same (jti).
    assert_ne!(token, mint_now(&signer, AUD_AWS, now, Duration::minutes(30)));
}

#[test]
fn tampered_foreign_expired_and_misaddressed_tokens_are_refused() {
    let signer = FakeSigner::default();
    let web = published(&ISSUER.parse().unwrap(), &[&signer]);
    let now = OffsetDateTime::now_utc();
    let token = mint_now(&signer, AUD_AZURE, now, Duration::minutes(10));
    assert!(verify_like_a_cloud(&web, ISSUER, AUD_AZURE, "acme", &token).is_ok());

    // Tampered: the claims rewritten for another tenant, the signature kept.
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims: serde_json::Value = serde_json::from_slice(&B64URL.decode(parts[1]).unwrap()).unwrap();
    claims["sub"] = "tenant:globex:cluster:c:operation:o:stage:k8s".into();
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        B64URL.encode(serde_json::to_vec(&claims).unwrap()),
        parts[2]
    );
    let err = verify_like_a_cloud(&web, ISSUER, AUD_AZURE, "globex", &forged).unwrap_err();
    assert!(err.contains("InvalidSignature"), "{err}");

    // Signed by another key: its kid is not published…
    let other = FakeSigner::default();
    let foreign = mint_now(&other, AUD_AZURE, now, Duration::minutes(10));
    assert_eq!(
        verify_like_a_cloud(&web, ISSUER, AUD_AZURE, "acme", &foreign).unwrap_err(),
        "unknown kid"
    );
    // …and naming the published kid does not help it.
    let fparts: Vec<&str> = foreign.split('.').collect();
    let swapped = format!("{}.{}.{}", parts[0], fparts[1], fparts[2]);
    let err = verify_like_a_cloud(&web, ISSUER, AUD_AZURE, "acme", &swapped).unwrap_err();
    assert!(err.contains("InvalidSignature"), "{err}");

    // Expired: minted two hours ago for one hour.
    let old = mint_now(&signer, AUD_AZURE, now - Duration::hours(2), Duration::hours(1));
    let err = verify_like_a_cloud(&web, ISSUER, AUD_AZURE, "acme", &old).unwrap_err();
    assert!(err.contains("ExpiredSignature"), "{err}");

    // Not yet valid: minted for an hour from now.
    let early = mint_now(
        &signer,
        AUD_AZURE,
        now + Duration::minutes(30),
        Duration::hours(1),
    );
    let err = verify_like_a_cloud(&web, ISSUER, AUD_AZURE, "acme", &early).unwrap_err();
    assert!(err.contains("ImmatureSignature"), "{err}");

    // Another audience: a token for AWS is no token for Azure.
    let aws = mint_now(&signer, AUD_AWS, now, Duration::minutes(10));
    let err = verify_like_a_cloud(&web, ISSUER, AUD_AZURE, "acme", &aws).unwrap_err();
    assert!(err.contains("InvalidAudience"), "{err}");

    // Another issuer trusted by the cloud: the token's iss does not match it.
    let web2 = published(&"https://other.example.com".parse().unwrap(), &[&signer]);
    let err = verify_like_a_cloud(&web2, "https://other.example.com", AUD_AZURE, "acme", &token).unwrap_err();
    assert!(err.contains("InvalidIssuer"), "{err}");
}

#[test]
fn the_jwks_is_the_signing_keys_public_half_and_its_kid_the_thumbprint() {
    let signer = FakeSigner::default();
    let der = block(signer.public_key_der()).unwrap();
    let (n, e) = rsa_components(&der).unwrap();
    assert_eq!(n.len(), 256, "RSA 2048 modulus");
    assert_eq!(e, [1, 0, 1]);
    let jwks = Jwks::from_spki_ders([der.as_slice()]).unwrap();
    let header = decode_header(mint_now(
        &signer,
        AUD_AWS,
        OffsetDateTime::now_utc(),
        Duration::minutes(5),
    ))
    .unwrap();
    assert_eq!(header.kid.as_deref(), Some(jwks.keys[0].kid.as_str()));
    assert_eq!(header.alg, Algorithm::RS256);
    assert!(rsa_components(b"\x30\x03\x02\x01\x01").is_err());
    assert!(rsa_components(&der[..40]).is_err());
    let d = discovery(&ISSUER.parse().unwrap());
    assert_eq!(d["jwks_uri"], format!("{ISSUER}/.well-known/jwks.json"));
    assert_eq!(d["id_token_signing_alg_values_supported"][0], "RS256");
}

#[test]
fn an_issuer_is_an_https_url_a_verifier_can_compare_byte_for_byte() {
    for ok in [ISSUER, "https://id.example.com/strato", "http://127.0.0.1:8080"] {
        assert!(ok.parse::<Issuer>().is_ok(), "{ok}");
    }
    for bad in [
        "http://api.example.com",
        "https://api.example.com/",
        "https://api.example.com?x=1",
        "api.example.com",
        "",
    ] {
        assert!(bad.parse::<Issuer>().is_err(), "{bad}");
    }
    let i: Issuer = "https://id.example.com/strato".parse().unwrap();
    assert_eq!(i.host_path(), "id.example.com/strato");
}

#[test]
fn a_stage_name_that_would_break_the_subject_is_refused() {
    let signer = FakeSigner::default();
    let mut s = subject();
    s.stage = "k8s:tenant:globex".into();
    let issuer: Issuer = ISSUER.parse().unwrap();
    let r = block(mint(
        &signer,
        &issuer,
        &s,
        AUD_AWS,
        OffsetDateTime::now_utc(),
        Duration::minutes(5),
    ));
    assert!(r.is_err());
}

#[test]
fn a_runs_sealed_token_opens_only_for_its_operation_and_stage() {
    let keys = FakeKeys::default();
    let tenant: TenantId = "acme".parse().unwrap();
    let op = OperationId::generate();
    let tokens = vec![
        ("network".to_owned(), Sensitive::new("tok-net")),
        ("k8s".to_owned(), Sensitive::new("tok-k8s")),
    ];
    let sealed = block(seal_run_tokens(&keys, &tenant, &op, AUD_AWS, 42, &tokens)).unwrap();
    let json = serde_json::to_string(&sealed).unwrap();
    assert!(!json.contains("tok-net") && !json.contains("tok-k8s"), "{json}");
    let got = block(open_run_token(&keys, &tenant, &op, &sealed, "k8s"))
        .unwrap()
        .unwrap();
    assert_eq!(got.expose(), "tok-k8s");
    assert!(
        block(open_run_token(&keys, &tenant, &op, &sealed, "other"))
            .unwrap()
            .is_none()
    );
    // Another operation's or stage's place: does not open.
    let mut moved = sealed.clone();
    let net = moved.stages["network"].clone();
    moved.stages.insert("k8s".into(), net);
    assert!(block(open_run_token(&keys, &tenant, &op, &moved, "k8s")).is_err());
    assert!(
        block(open_run_token(
            &keys,
            &tenant,
            &OperationId::generate(),
            &sealed,
            "k8s"
        ))
        .is_err()
    );
    let other: TenantId = "globex".parse().unwrap();
    assert!(block(open_run_token(&keys, &other, &op, &sealed, "k8s")).is_err());
}

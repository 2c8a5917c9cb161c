//! Run identity tokens signed by the KMS adapter on moto's KMS (an RSA_2048 SIGN_VERIFY key): the JWKS made
//! from `GetPublicKey` verifies what `Sign` signed, as a cloud checks it; and the runner trades such a token
//! for an AWS session on moto's STS.

use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use strato_aws::ports::KmsSigner;
use strato_aws::resources;
use strato_domain::identity::jwk::Jwks;
use strato_domain::identity::{AUD_AWS, Claims, Issuer, RunSubject, Signer, mint};
use strato_domain::ids::{ClusterId, OperationId};
use strato_testbed::TestEnv;
use time::{Duration, OffsetDateTime};

#[tokio::test(flavor = "multi_thread")]
async fn a_token_signed_by_kms_verifies_with_the_jwks_made_from_its_public_key() {
    let env = TestEnv::new().await;
    resources::create_signing_key(&env.aws, &env.names).await.unwrap();
    let signer = KmsSigner::new(&env.aws.kms, env.names.oidc_key_alias());
    let issuer: Issuer = "https://api.strato.example.com".parse().unwrap();
    let subject = RunSubject {
        tenant: "acme".parse().unwrap(),
        cluster: ClusterId::generate(),
        operation: OperationId::generate(),
        stage: "k8s".into(),
    };
    let token = mint(
        &signer,
        &issuer,
        &subject,
        AUD_AWS,
        OffsetDateTime::now_utc(),
        Duration::minutes(15),
    )
    .await
    .unwrap();
    let der = signer.public_key_der().await.unwrap();
    let jwks = Jwks::from_spki_ders([der.as_slice()]).unwrap();
    let kid = decode_header(token.expose()).unwrap().kid.unwrap();
    let key = jwks
        .keys
        .iter()
        .find(|k| k.kid == kid)
        .expect("the token's kid is published");
    let mut v = Validation::new(Algorithm::RS256);
    v.set_issuer(&[issuer.as_str()]);
    v.set_audience(&[AUD_AWS]);
    let dk = DecodingKey::from_rsa_components(&key.n, &key.e).unwrap();
    let claims = decode::<Claims>(token.expose(), &dk, &v).unwrap().claims;
    assert_eq!(claims.sub, subject.sub());
    // The AWS path: the runner trades the token for the target role's session
    // (`AssumeRoleWithWebIdentity`, unsigned), and the session answers as that account. moto checks neither
    // the role's trust nor the token's signature (AWS does both); what is shown here is the call and its use.
    let base = strato_runner::credentials::default_base().await;
    let role = "arn:aws:iam::123456789012:role/strato-oidc";
    let timeout = std::time::Duration::from_secs(10);
    let session = strato_runner::credentials::assume_web_identity(
        &base,
        Some(&env.endpoint),
        &env.region,
        role,
        "strato-op-test",
        token.expose(),
        timeout,
    )
    .await
    .unwrap();
    assert!(!session.access_key_id.is_empty());
    let account = strato_runner::credentials::preflight(
        &base,
        Some(&env.endpoint),
        &env.region,
        Some(&session),
        timeout,
    )
    .await
    .unwrap();
    assert_eq!(account, "123456789012");
    // Another KMS key's JWKS does not verify it.
    let other = TestEnv::new().await;
    resources::create_signing_key(&other.aws, &other.names)
        .await
        .unwrap();
    let other_der = KmsSigner::new(&other.aws.kms, other.names.oidc_key_alias())
        .public_key_der()
        .await
        .unwrap();
    let ok = Jwks::from_spki_ders([other_der.as_slice()]).unwrap();
    let dk = DecodingKey::from_rsa_components(&ok.keys[0].n, &ok.keys[0].e).unwrap();
    assert!(decode::<Claims>(token.expose(), &dk, &v).is_err());
}

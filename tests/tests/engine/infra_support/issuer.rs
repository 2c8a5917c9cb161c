//! Strato as an OIDC issuer, as infra/ deploys it (modules/issuer): the asymmetric signing key that only the
//! dispatcher may use to sign, the same issuer URL and key on the dispatcher and the api, the discovery
//! document and JWKS as the code would build them from the applied key, served by CloudFront from a private
//! bucket; and, switched off, functions that neither get an issuer nor may sign.
//!
//! moto keeps no origin access control id on a distribution's origin (checked on the planned values) and
//! cannot be reached over TLS, so the bucket's TLS-only policy refuses the engine's reads: the apply test
//! probes that refusal, then lifts the policy (infra_apply.rs).

use std::collections::BTreeMap;

use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::{Value, json};
use strato_aws::resources::Names;
use strato_domain::identity::jwk::{Jwks, discovery};
use strato_domain::identity::{AUD_AWS, Claims, Issuer, RunSubject, mint};

use super::checks::{Function, asked_for, function_configs};
use super::iam::{RequestContext, World, allows, allows_in};
use super::permissions_checks::{function_policies, role_policy};
use super::{FUNCTIONS, PREFIX, State, StateRes, json_attr};

const ENV_ISSUER: &str = "STRATO_OIDC_ISSUER";
const ENV_KEY: &str = "STRATO_OIDC_SIGNING_KEY";
/// CloudFront's managed CachingOptimized policy (honours the documents' Cache-Control).
const CACHING_OPTIMIZED: &str = "658327ea-f89d-4fab-a63d-7e88639e58f6";

/// What the applied issuer publishes, for the check against the key on the emulator.
pub struct Published {
    pub issuer: Issuer,
    pub signing_key_arn: String,
    pub discovery: Value,
    pub jwks: Jwks,
}

fn in_plan<'a>(planned: &'a [StateRes], address: &str) -> &'a StateRes {
    planned
        .iter()
        .find(|r| r.address == address)
        .unwrap_or_else(|| panic!("{address} is not in the plan"))
}

/// The applied issuer (`state`; `planned`: the second plan's values, for what moto does not read back).
pub fn check_issuer(
    state: &State,
    planned: &[StateRes],
    names: &Names,
    fns: &BTreeMap<String, Function>,
    issuer_output: &str,
) -> Published {
    let w = World { state, names };
    // The signing key: asymmetric, for signatures, under the alias the code defaults to.
    let key_arn = w.signing_key();
    let key = state.by("aws_kms_key", "arn", &key_arn);
    assert_eq!(key.s("key_usage"), "SIGN_VERIFY", "the signing key signs");
    assert_eq!(
        key.s("customer_master_key_spec"),
        "RSA_2048",
        "the signing key is RSA-2048 (RS256)"
    );
    assert_eq!(
        key.values["enable_key_rotation"], false,
        "asymmetric keys cannot rotate automatically (a rotation is a new generation)"
    );
    // Its key policy: only the dispatcher's role signs, only RS256 over a raw message.
    let policy = json_attr(key, "policy");
    let role = |name: &str| format!("arn:aws:iam::{}:role/{PREFIX}-{name}", super::ACCOUNT);
    let sign = |principal: &str, algorithm: &str| -> RequestContext {
        vec![
            ("aws:PrincipalArn", vec![principal.to_owned()]),
            ("kms:SigningAlgorithm", vec![algorithm.to_owned()]),
            ("kms:MessageType", vec!["RAW".to_owned()]),
        ]
    };
    const RS256: &str = "RSASSA_PKCS1_V1_5_SHA_256";
    assert!(
        allows_in(&policy, "kms:Sign", &key_arn, &sign(&role("dispatcher"), RS256)),
        "the key policy lets the dispatcher sign: {policy}"
    );
    for other in ["api", "runner-task", "runner-engine", "scheduler"] {
        assert!(
            !allows_in(&policy, "kms:Sign", &key_arn, &sign(&role(other), RS256)),
            "the key policy lets {other} sign"
        );
    }
    assert!(
        !allows_in(
            &policy,
            "kms:Sign",
            &key_arn,
            &sign(&role("dispatcher"), "RSASSA_PSS_SHA_512")
        ),
        "only RS256"
    );

    // The same issuer and key on the dispatcher and the api, and on no other function.
    let (api, dispatcher) = (&fns["api"].env, &fns["dispatcher"].env);
    for var in [ENV_ISSUER, ENV_KEY] {
        assert!(api.contains_key(var), "the api has no {var}");
        assert_eq!(api.get(var), dispatcher.get(var), "{var}: dispatcher and api");
    }
    for f in FUNCTIONS.iter().filter(|f| !["api", "dispatcher"].contains(f)) {
        assert!(!fns[*f].env.contains_key(ENV_ISSUER), "{f} gets {ENV_ISSUER}");
    }
    assert_eq!(
        api[ENV_ISSUER], issuer_output,
        "the oidc_issuer output is what the functions name"
    );
    let issuer: Issuer = api[ENV_ISSUER]
        .parse()
        .unwrap_or_else(|e| panic!("{ENV_ISSUER}: {e}"));
    assert_eq!(
        api[ENV_KEY], key_arn,
        "the signing key by ARN (the alias' target)"
    );
    let cdn = state
        .all("aws_cloudfront_distribution")
        .next()
        .expect("the issuer's distribution");
    assert_eq!(
        issuer.as_str(),
        format!("https://{}", cdn.s("domain_name")),
        "the issuer is the distribution's host"
    );

    // IAM: the dispatcher signs and seals the tokens, the api reads the public half; nobody else signs.
    let policies = function_policies(state);
    assert!(allows(&policies["dispatcher"], "kms:Sign", &key_arn));
    assert!(allows(
        &policies["dispatcher"],
        "kms:GenerateDataKey",
        &w.data_key()
    ));
    assert!(allows(&policies["api"], "kms:GetPublicKey", &key_arn));
    let runner = role_policy(state, "runner-task");
    for (who, p) in policies.iter().chain([(&"runner-task".to_owned(), &runner)]) {
        assert_eq!(
            allows(p, "kms:Sign", &key_arn),
            who == "dispatcher",
            "{who} kms:Sign on the signing key"
        );
    }

    // Served: CloudFront reads the private bucket through origin access control, GET/HEAD, HTTPS, cached.
    let cdn_plan = in_plan(planned, "module.issuer[0].aws_cloudfront_distribution.issuer");
    let origin = cdn_plan.block("origin");
    let bucket = format!("{PREFIX}-oidc");
    assert_eq!(
        origin["domain_name"],
        format!("{bucket}.s3.{}.amazonaws.com", super::REGION)
    );
    assert!(
        origin["origin_access_control_id"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "the bucket is read through OAC"
    );
    let behaviour = cdn_plan.block("default_cache_behavior");
    assert_eq!(
        behaviour["allowed_methods"].as_array().map(Vec::len),
        Some(2),
        "GET and HEAD only"
    );
    assert_eq!(behaviour["viewer_protocol_policy"], "https-only");
    assert_eq!(behaviour["cache_policy_id"], CACHING_OPTIMIZED);
    let block = state.by("aws_s3_bucket_public_access_block", "bucket", &bucket);
    for flag in [
        "block_public_acls",
        "block_public_policy",
        "ignore_public_acls",
        "restrict_public_buckets",
    ] {
        assert_eq!(block.values[flag], true, "{bucket}: {flag}");
    }
    let bucket_policy = json_attr(
        in_plan(planned, "module.issuer[0].aws_s3_bucket_policy.issuer"),
        "policy",
    );
    let statements = bucket_policy["Statement"].as_array().unwrap();
    assert!(
        statements
            .iter()
            .any(|s| s["Effect"] == "Deny" && s["Condition"]["Bool"]["aws:SecureTransport"] == "false"),
        "{bucket}: TLS only"
    );
    for s in statements.iter().filter(|s| s["Effect"] == "Allow") {
        assert_eq!(s["Principal"], json!({"Service": "cloudfront.amazonaws.com"}));
        assert_eq!(
            s["Condition"]["StringEquals"]["AWS:SourceArn"],
            cdn.s("arn"),
            "only this distribution reads"
        );
    }
    let document = |key: &str| -> Value {
        let object = state
            .all("aws_s3_object")
            .find(|o| o.s("bucket") == bucket && o.s("key") == key)
            .unwrap_or_else(|| panic!("{bucket}/{key}"));
        assert_eq!(object.s("content_type"), "application/json", "{key}");
        assert!(
            object.s("cache_control").starts_with("public, max-age="),
            "{key}: cached"
        );
        serde_json::from_str(object.s("content")).unwrap_or_else(|e| panic!("{key}: {e}"))
    };
    let published = Published {
        discovery: document(".well-known/openid-configuration"),
        jwks: serde_json::from_value(document(".well-known/jwks.json")).expect("a JWK set"),
        issuer,
        signing_key_arn: key_arn,
    };
    assert_eq!(
        published.discovery,
        discovery(&published.issuer),
        "the published discovery document is the code's"
    );
    published
}

/// The published JWKS is the code's JWKS of the applied key (read back from the emulator's KMS), and a run
/// token the code mints with that key verifies against it as a cloud verifies it: kid, RS256, iss, aud.
pub async fn published_jwks_verifies_a_run_token(p: &Published, aws_endpoint: &str) {
    use strato_domain::identity::Signer as _;
    let aws = strato_aws::aws::AwsClients::for_endpoint(aws_endpoint, super::REGION).await;
    let signer = strato_aws::ports::KmsSigner::new(&aws.kms, p.signing_key_arn.clone());
    let der = signer
        .public_key_der()
        .await
        .expect("GetPublicKey of the signing key");
    assert_eq!(
        p.jwks,
        Jwks::from_spki_ders([der.as_slice()]).unwrap(),
        "the published JWKS (built by Terraform) is the code's JWKS of the signing key"
    );
    let subject = RunSubject {
        tenant: "acme".parse().unwrap(),
        cluster: strato_domain::ids::ClusterId::generate(),
        operation: strato_domain::ids::OperationId::generate(),
        stage: "k8s".into(),
    };
    let now = time::OffsetDateTime::now_utc();
    let token = mint(
        &signer,
        &p.issuer,
        &subject,
        AUD_AWS,
        now,
        time::Duration::minutes(5),
    )
    .await
    .expect("the signing key signs");
    let kid = decode_header(token.expose()).unwrap().kid.expect("a kid");
    let jwk = p
        .jwks
        .keys
        .iter()
        .find(|k| k.kid == kid)
        .expect("the token's kid is published");
    let mut v = Validation::new(Algorithm::RS256);
    v.set_issuer(&[p.discovery["issuer"].as_str().unwrap()]);
    v.set_audience(&[AUD_AWS]);
    let claims = decode::<Claims>(
        token.expose(),
        &DecodingKey::from_rsa_components(&jwk.n, &jwk.e).unwrap(),
        &v,
    )
    .expect("the published JWKS verifies a run token")
    .claims;
    assert_eq!(claims.sub, subject.sub());
}

/// A plan of the applied deployment with `oidc_issuer = { enabled = false }`: the functions lose the issuer
/// (and still accept their environment), nobody may sign, and the keys and the distribution go.
pub fn check_issuer_off(plan: &Value) {
    let planned = State::from_module(&plan["planned_values"]["root_module"]);
    let configs = function_configs();
    for r in planned.all("aws_lambda_function") {
        let name = r
            .s("function_name")
            .trim_start_matches(&format!("{PREFIX}-"))
            .to_owned();
        let env: BTreeMap<String, String> = r.block("environment")["variables"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        assert!(
            !env.contains_key(ENV_ISSUER) && !env.contains_key(ENV_KEY),
            "{name}: the issuer is off"
        );
        asked_for(&env, configs[name.as_str()])
            .unwrap_or_else(|e| panic!("{name} refuses its environment without an issuer: {e}"));
    }
    for r in planned.all("aws_iam_role_policy") {
        let policy: Value = serde_json::from_str(r.s("policy")).unwrap();
        assert!(
            !allows(&policy, "kms:Sign", "arn:aws:kms:eu-west-1:123456789012:key/any"),
            "{}",
            r.address
        );
    }
    let deleted: Vec<&str> = plan["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["change"]["actions"] == json!(["delete"]))
        .filter_map(|c| c["type"].as_str())
        .collect();
    for kind in ["aws_kms_key", "aws_cloudfront_distribution", "aws_s3_bucket"] {
        assert!(deleted.contains(&kind), "off: {kind} is destroyed ({deleted:?})");
    }
}

/// The issuer's bucket refuses a plain-HTTP read (moto evaluates its TLS-only statement, as for the data
/// buckets); the policy is then removed so the engine, which reaches moto over plain HTTP, can read the
/// documents back. The next plan puts it back ([`moto_artifact`]); destroy finds it gone.
pub async fn tls_only_bucket_refuses_plain_http_then_lift(aws_endpoint: &str) {
    let aws = strato_aws::aws::AwsClients::for_endpoint(aws_endpoint, super::REGION).await;
    let bucket = format!("{PREFIX}-oidc");
    let get = aws
        .s3
        .get_object()
        .bucket(&bucket)
        .key(".well-known/jwks.json")
        .send()
        .await;
    let status = get
        .as_ref()
        .err()
        .and_then(|e| e.raw_response())
        .map(|r| r.status().as_u16());
    assert_eq!(
        status,
        Some(403),
        "{bucket}: a plain-HTTP read must be refused: {get:?}"
    );
    aws.s3
        .delete_bucket_policy()
        .bucket(&bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{bucket}: DeleteBucketPolicy: {e:?}"));
}

/// A second-plan change of the issuer that is moto's, not infra/'s: the bucket policy lifted above, put back;
/// the distribution read back with legacy `forwarded_values`, no origin access control id on its origin and
/// `sni-only` under the default certificate. Anything else differing is a real change.
pub fn moto_artifact(change: &Value) -> bool {
    let (address, actions) = (
        change["address"].as_str().unwrap_or_default(),
        &change["change"]["actions"],
    );
    if address == "module.issuer[0].aws_s3_bucket_policy.issuer" {
        return actions == &json!(["create"]);
    }
    if address != "module.issuer[0].aws_cloudfront_distribution.issuer" || actions != &json!(["update"]) {
        return false;
    }
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        for b in v["default_cache_behavior"].as_array_mut().into_iter().flatten() {
            b.as_object_mut().map(|o| o.remove("forwarded_values"));
        }
        for o in v["origin"].as_array_mut().into_iter().flatten() {
            o.as_object_mut().map(|o| o.remove("origin_access_control_id"));
        }
        for c in v["viewer_certificate"].as_array_mut().into_iter().flatten() {
            c.as_object_mut().map(|o| o.remove("ssl_support_method"));
        }
        v
    }
    let (before, after) = (
        strip(&change["change"]["before"]),
        strip(&change["change"]["after"]),
    );
    after
        .as_object()
        .is_some_and(|a| a.iter().all(|(k, v)| before.get(k) == Some(v)))
}

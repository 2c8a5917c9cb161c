//! The preflight of each cloud driven against `strato_testbed::FakeClouds`: success per cloud, each documented
//! refusal mapped to its fix, the hard timeout, and no token in any text.

use std::time::{Duration, Instant};

use strato_domain::identity::{AUD_AZURE, FakeSigner, Issuer, RunSubject, Signer, gcp_audience, mint};
use strato_domain::model::{AzureTarget, GcpTarget};
use strato_testbed::FakeClouds;
use time::OffsetDateTime;

use super::preflight::check;
use super::{CloudCheck, CloudEndpoints, PreflightError};

const ISSUER: &str = "https://api.strato.example.com";
const PROVIDER: &str =
    "projects/123456789/locations/global/workloadIdentityPools/strato/providers/strato-oidc";
const SA: &str = "terraform@acme-prod-1.iam.gserviceaccount.com";
const ENTRA_TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const APP: &str = "00000000-0000-0000-0000-000000000001";
const SUBSCRIPTION: &str = "a1b2c3d4-0000-0000-0000-00000000abcd";
const DO_TOKEN: &str = "dop_v1_fake0123456789abcdef";
const LINODE_TOKEN: &str = "linode-fake-0123456789abcdef";
const TIMEOUT: Duration = Duration::from_secs(5);
/// Prefixes of the tokens the fake hands out during a check: none may reach a message either.
const ISSUED: [&str; 3] = ["fake-federated-", "fake-arm-token-", "fake-sa-token-"];

struct Bed {
    fake: FakeClouds,
    /// `None` for the token clouds' tests: generating an RSA key is most of a test's time.
    key: Option<FakeSigner>,
    endpoints: CloudEndpoints,
    http: reqwest::Client,
}

/// The fake with acme's GCP provider and binding, Azure app, subscription and role, and one token per
/// token cloud.
async fn bed() -> Bed {
    bed_signing(true).await
}

async fn bed_signing(sign: bool) -> Bed {
    let fake = FakeClouds::start().await.unwrap();
    let key = sign.then(FakeSigner::default);
    let k = &fake.knobs;
    k.trust_issuer(ISSUER);
    if let Some(signer) = &key {
        k.verify_with(signer.public_key_der().await.unwrap());
    }
    k.gcp_provider(PROVIDER, "acme");
    k.gcp_impersonation(SA, "acme");
    k.azure_app(ENTRA_TENANT, APP, "tenant:acme:");
    k.azure_subscription(ENTRA_TENANT, SUBSCRIPTION, "acme-prod");
    k.azure_role(APP, SUBSCRIPTION);
    k.digitalocean_token(DO_TOKEN);
    k.linode_token(LINODE_TOKEN);
    let endpoints = CloudEndpoints::all_at(&fake.base_url);
    Bed {
        fake,
        key,
        endpoints,
        http: super::http::client().unwrap(),
    }
}

fn subject(tenant: &str) -> RunSubject {
    RunSubject {
        tenant: tenant.parse().unwrap(),
        cluster: strato_domain::ids::ClusterId::generate(),
        operation: strato_domain::ids::OperationId::generate(),
        stage: "k8s".into(),
    }
}

async fn token(signer: &FakeSigner, issuer: &str, tenant: &str, aud: &str, age: time::Duration) -> String {
    let issuer: Issuer = issuer.parse().unwrap();
    let now = OffsetDateTime::now_utc() - age;
    mint(
        signer,
        &issuer,
        &subject(tenant),
        aud,
        now,
        time::Duration::minutes(10),
    )
    .await
    .unwrap()
    .expose()
    .to_owned()
}

fn gcp_target(sa: &str, provider: &str) -> GcpTarget {
    serde_json::from_value(serde_json::json!({
        "project_id": "acme-prod-1", "workload_identity_provider": provider, "service_account": sa
    }))
    .unwrap()
}

fn azure_target(tenant: &str, app: &str, subscription: &str) -> AzureTarget {
    serde_json::from_value(serde_json::json!({
        "tenant_id": tenant, "client_id": app, "subscription_id": subscription
    }))
    .unwrap()
}

/// No secret of the check in `r`, whichever way it went.
fn assert_clean(r: &Result<String, PreflightError>, secrets: &[&str]) {
    let text = match r {
        Ok(s) => s.clone(),
        Err(e) => format!("{} {}", e.what, e.fix),
    };
    for s in secrets.iter().chain(&ISSUED) {
        assert!(!text.contains(s), "a secret in {text}");
    }
}

impl Bed {
    fn signer(&self) -> &FakeSigner {
        self.key.as_ref().expect("a bed with a signing key")
    }

    async fn run(&self, c: CloudCheck<'_>) -> Result<String, PreflightError> {
        check(&self.http, &self.endpoints, c, TIMEOUT).await
    }

    async fn gcp(&self, target: &GcpTarget, id_token: &str) -> Result<String, PreflightError> {
        let r = self.run(CloudCheck::Gcp { target, id_token }).await;
        assert_clean(&r, &[id_token]);
        r
    }

    async fn azure(&self, target: &AzureTarget, id_token: &str) -> Result<String, PreflightError> {
        let r = self.run(CloudCheck::Azure { target, id_token }).await;
        assert_clean(&r, &[id_token]);
        r
    }

    async fn gcp_token(&self, tenant: &str) -> String {
        token(
            self.signer(),
            ISSUER,
            tenant,
            &gcp_audience(PROVIDER),
            time::Duration::ZERO,
        )
        .await
    }

    async fn azure_token(&self, tenant: &str) -> String {
        token(self.signer(), ISSUER, tenant, AUD_AZURE, time::Duration::ZERO).await
    }
}

#[tokio::test]
async fn each_clouds_preflight_proves_its_credentials_against_its_identity_endpoints() {
    let bed = bed().await;
    let gcp = bed
        .gcp(&gcp_target(SA, PROVIDER), &bed.gcp_token("acme").await)
        .await
        .unwrap();
    assert!(gcp.contains(PROVIDER) && gcp.contains(SA), "{gcp}");
    let azure = bed
        .azure(
            &azure_target(ENTRA_TENANT, APP, SUBSCRIPTION),
            &bed.azure_token("acme").await,
        )
        .await
        .unwrap();
    assert!(
        azure.contains(SUBSCRIPTION) && azure.contains("acme-prod") && azure.contains("Enabled"),
        "{azure}"
    );
    let d = bed
        .run(CloudCheck::Digitalocean { token: DO_TOKEN })
        .await
        .unwrap();
    assert!(d.contains("team@example.com") && d.contains("active"), "{d}");
    let l = bed.run(CloudCheck::Linode { token: LINODE_TOKEN }).await.unwrap();
    assert!(l.contains("fake-user"), "{l}");
    assert_eq!(
        bed.fake.knobs.calls(),
        [
            "POST /v1/token".to_owned(),
            format!("POST /v1/projects/-/serviceAccounts/{SA}:generateAccessToken"),
            format!("POST /{ENTRA_TENANT}/oauth2/v2.0/token"),
            format!("GET /subscriptions/{SUBSCRIPTION}"),
            "GET /v2/account".to_owned(),
            "GET /v4/profile".to_owned(),
        ]
    );
}

#[tokio::test]
async fn gcp_refusals_name_the_setting_to_fix() {
    let bed = bed().await;
    let target = gcp_target(SA, PROVIDER);
    // Another audience than the provider's.
    let wrong_aud = token(bed.signer(), ISSUER, "acme", AUD_AZURE, time::Duration::ZERO).await;
    let e = bed.gcp(&target, &wrong_aud).await.unwrap_err();
    assert!(e.what.contains("invalid_grant"), "{e}");
    assert!(
        e.fix.contains(&format!("does not accept audience {AUD_AZURE}")),
        "{e}"
    );
    // Another issuer than the one the provider trusts.
    let aud = gcp_audience(PROVIDER);
    let other = token(
        bed.signer(),
        "https://other.example.com",
        "acme",
        &aud,
        time::Duration::ZERO,
    )
    .await;
    let e = bed.gcp(&target, &other).await.unwrap_err();
    assert!(
        e.fix
            .contains("does not trust this issuer: set its issuer URI to https://other.example.com"),
        "{e}"
    );
    // Signed by a key the issuer does not publish.
    let forged = token(&FakeSigner::default(), ISSUER, "acme", &aud, time::Duration::ZERO).await;
    let e = bed.gcp(&target, &forged).await.unwrap_err();
    assert!(
        e.what.contains("invalid_grant") && e.fix.contains("Strato's published JWKS"),
        "{e}"
    );
    // The attribute condition admits another tenant.
    let e = bed
        .gcp(&target, &bed.gcp_token("globex").await)
        .await
        .unwrap_err();
    assert!(e.what.contains("unauthorized_client"), "{e}");
    assert!(e.fix.contains("assertion.strato_tenant == 'globex'"), "{e}");
    // No such provider.
    let missing = PROVIDER.replace("strato-oidc", "gone-oidc");
    let t = token(
        bed.signer(),
        ISSUER,
        "acme",
        &gcp_audience(&missing),
        time::Duration::ZERO,
    )
    .await;
    let e = bed.gcp(&gcp_target(SA, &missing), &t).await.unwrap_err();
    assert!(
        e.what.contains("invalid_target") && e.fix.contains("does not exist"),
        "{e}"
    );
    // The pool's principals may not impersonate this service account.
    let other_sa = "deployer@acme-prod-1.iam.gserviceaccount.com";
    let e = bed
        .gcp(&gcp_target(other_sa, PROVIDER), &bed.gcp_token("acme").await)
        .await
        .unwrap_err();
    assert!(
        e.what
            .contains("Permission 'iam.serviceAccounts.getAccessToken' denied"),
        "{e}"
    );
    assert_eq!(
        e.fix,
        format!(
            "grant roles/iam.workloadIdentityUser on service account {other_sa} to principalSet://iam.googleapis.com/\
             projects/123456789/locations/global/workloadIdentityPools/strato/attribute.tenant/acme (and check \
             that {other_sa} exists)"
        )
    );
}

#[tokio::test]
async fn azure_refusals_name_the_federated_credential_or_role_to_add() {
    let bed = bed().await;
    let target = azure_target(ENTRA_TENANT, APP, SUBSCRIPTION);
    let other = token(
        bed.signer(),
        "https://other.example.com",
        "acme",
        AUD_AZURE,
        time::Duration::ZERO,
    )
    .await;
    let e = bed.azure(&target, &other).await.unwrap_err();
    assert!(
        e.what.contains("AADSTS700211") && !e.what.contains("Trace ID"),
        "{e}"
    );
    assert!(e.fix.contains(&format!(
        "no federated credential of app {APP} has issuer https://other.example.com"
    )));
    assert!(e.fix.contains("claims['sub'] matches 'tenant:acme:*'"), "{e}");
    // The app's credential is for another tenant's subjects.
    let globex = bed.azure_token("globex").await;
    let e = bed.azure(&target, &globex).await.unwrap_err();
    assert!(e.what.contains("AADSTS700213"), "{e}");
    assert!(e.fix.contains("matches subject tenant:globex:cluster:"), "{e}");
    // A token past its expiry.
    let old = token(bed.signer(), ISSUER, "acme", AUD_AZURE, time::Duration::hours(2)).await;
    let e = bed.azure(&target, &old).await.unwrap_err();
    assert!(
        e.what.contains("AADSTS700024") && e.fix.contains("validity window"),
        "{e}"
    );
    let acme = bed.azure_token("acme").await;
    let e = bed
        .azure(
            &azure_target("11111111-1111-1111-1111-111111111111", APP, SUBSCRIPTION),
            &acme,
        )
        .await
        .unwrap_err();
    assert!(
        e.fix
            .starts_with("Entra tenant 11111111-1111-1111-1111-111111111111 does not exist"),
        "{e}"
    );
    let stranger = "00000000-0000-0000-0000-0000000000ff";
    let e = bed
        .azure(&azure_target(ENTRA_TENANT, stranger, SUBSCRIPTION), &acme)
        .await
        .unwrap_err();
    assert!(
        e.what.contains("AADSTS700016") && e.fix.contains("check target.client_id"),
        "{e}"
    );
    // Signed in, but no role on the subscription / no such subscription.
    let k = &bed.fake.knobs;
    let unassigned = "b1b2c3d4-0000-0000-0000-00000000abcd";
    k.azure_subscription(ENTRA_TENANT, unassigned, "acme-dev");
    let e = bed
        .azure(&azure_target(ENTRA_TENANT, APP, unassigned), &acme)
        .await
        .unwrap_err();
    assert!(e.what.contains("AuthorizationFailed"), "{e}");
    assert!(
        e.fix
            .starts_with(&format!("assign app {APP} a role on subscription {unassigned}")),
        "{e}"
    );
    let unknown = "c1b2c3d4-0000-0000-0000-00000000abcd";
    let e = bed
        .azure(&azure_target(ENTRA_TENANT, APP, unknown), &acme)
        .await
        .unwrap_err();
    assert!(
        e.what.contains("SubscriptionNotFound") && e.fix.contains("check target.subscription_id"),
        "{e}"
    );
}

#[tokio::test]
async fn token_clouds_refusals_say_to_register_a_new_token_or_add_scopes() {
    let bed = bed_signing(false).await;
    let r = bed
        .run(CloudCheck::Digitalocean {
            token: "dop_v1_revoked",
        })
        .await;
    assert_clean(&r, &["dop_v1_revoked"]);
    let e = r.unwrap_err();
    assert!(
        e.what
            .contains("HTTP 401: unauthorized: Unable to authenticate you"),
        "{e}"
    );
    assert!(
        e.fix.contains("revoked") && e.fix.contains("PUT /v1/tenant/cloud-tokens/digitalocean"),
        "{e}"
    );
    bed.fake.knobs.digitalocean_unscoped_token("dop_v1_narrow");
    let e = bed
        .run(CloudCheck::Digitalocean {
            token: "dop_v1_narrow",
        })
        .await
        .unwrap_err();
    assert!(
        e.what.contains("HTTP 403: forbidden") && e.fix.contains("account:read"),
        "{e}"
    );
    let e = bed
        .run(CloudCheck::Linode {
            token: "linode-revoked",
        })
        .await
        .unwrap_err();
    assert!(e.what.contains("HTTP 401: Invalid Token"), "{e}");
    assert!(e.fix.contains("PUT /v1/tenant/cloud-tokens/linode"), "{e}");
    // The fake's 401 mode: every endpoint refuses even the registered tokens.
    bed.fake.knobs.unauthorized(true);
    for c in [
        CloudCheck::Digitalocean { token: DO_TOKEN },
        CloudCheck::Linode { token: LINODE_TOKEN },
    ] {
        let e = bed.run(c).await.unwrap_err();
        assert!(
            e.fix.starts_with("the token is revoked, expired or mistyped"),
            "{e}"
        );
    }
}

#[tokio::test]
async fn a_token_an_endpoint_echoes_back_is_redacted_from_the_message() {
    let bed = bed_signing(false).await;
    bed.fake.knobs.echo_tokens(true);
    let secret = "dop_v1_echoed_secret_value";
    let e = bed
        .run(CloudCheck::Digitalocean { token: secret })
        .await
        .unwrap_err();
    assert!(!e.what.contains(secret) && e.what.contains("(redacted)"), "{e}");
    let secret = "linode-echoed-secret-value";
    let e = bed.run(CloudCheck::Linode { token: secret }).await.unwrap_err();
    assert!(!e.what.contains(secret) && e.what.contains("(redacted)"), "{e}");
    // Nor does a check's Debug show its token.
    assert_eq!(
        format!("{:?}", CloudCheck::Linode { token: secret }),
        "CloudCheck(Linode)"
    );
}

#[tokio::test]
async fn a_hanging_endpoint_fails_the_whole_check_at_its_timeout() {
    let bed = bed().await;
    let timeout = Duration::from_millis(200);
    let gcp = gcp_target(SA, PROVIDER);
    let gcp_token = bed.gcp_token("acme").await;
    // Only the second call hangs: the bound is the whole check's, not each call's.
    bed.fake.knobs.hang_calls_to(":generateAccessToken");
    let start = Instant::now();
    let gcp_check = CloudCheck::Gcp {
        target: &gcp,
        id_token: &gcp_token,
    };
    let e = check(&bed.http, &bed.endpoints, gcp_check, timeout)
        .await
        .unwrap_err();
    let took = start.elapsed();
    assert_eq!(e.what, "the GCP endpoint did not answer within 0.2s");
    assert!(took >= timeout && took < Duration::from_secs(2), "{took:?}");
    bed.fake.knobs.hang(true);
    let checks = [
        CloudCheck::Digitalocean { token: DO_TOKEN },
        CloudCheck::Linode { token: LINODE_TOKEN },
    ];
    let start = Instant::now();
    let results = futures_join(checks.map(|c| check(&bed.http, &bed.endpoints, c, timeout))).await;
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert_eq!(
        results[0].as_ref().unwrap_err().what,
        "the DigitalOcean endpoint did not answer within 0.2s"
    );
    assert_eq!(
        results[1].as_ref().unwrap_err().what,
        "the Linode endpoint did not answer within 0.2s"
    );
}

/// Runs both checks at once (the hang is ~timeout for each; together the test waits one timeout).
async fn futures_join<F: std::future::Future>(fs: [F; 2]) -> [F::Output; 2] {
    let [a, b] = fs;
    let (a, b) = tokio::join!(a, b);
    [a, b]
}

#[test]
fn endpoints_default_to_the_clouds_and_each_is_overridden_by_its_variable() {
    let env = strato_aws::env::Env::new(|k: &str| match k {
        "STRATO_ENDPOINT_LINODE" => Some("http://127.0.0.1:9999/".to_owned()),
        "STRATO_ENDPOINT_GCP_STS" => Some("  ".to_owned()),
        _ => None,
    });
    let ep = CloudEndpoints::from_env(&env);
    assert_eq!(ep.linode, "http://127.0.0.1:9999");
    assert_eq!(ep.gcp_sts, "https://sts.googleapis.com");
    assert_eq!(ep.azure_login, "https://login.microsoftonline.com");
    assert_eq!(ep.digitalocean, "https://api.digitalocean.com");
}

#[tokio::test]
async fn the_fake_cloud_port_records_each_check_and_answers_as_scripted() {
    use crate::ports::Cloud;
    let cloud = crate::fakes::FakeCloud::default();
    assert!(
        cloud
            .cloud_preflight(CloudCheck::Linode { token: LINODE_TOKEN })
            .await
            .is_ok()
    );
    let refusal = PreflightError {
        what: "the DigitalOcean API refused the registered API token (HTTP 401: unauthorized)".into(),
        fix: "register a new token".into(),
    };
    cloud.fail_cloud_preflight(refusal.clone());
    let e = cloud
        .cloud_preflight(CloudCheck::Digitalocean { token: DO_TOKEN })
        .await
        .unwrap_err();
    assert_eq!(e, refusal);
    assert_eq!(cloud.cloud_checks(), ["Linode", "DigitalOcean"]);
}

#[tokio::test]
async fn the_fakes_runner_environment_points_every_endpoint_at_it() {
    let fake = FakeClouds::start().await.unwrap();
    let env = fake.runner_env();
    let ep = CloudEndpoints::from_env(&strato_aws::env::Env::new(|k: &str| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }));
    assert_eq!(ep, CloudEndpoints::all_at(&fake.base_url));
}

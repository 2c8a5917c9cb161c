//! [`FakeClouds`]: the identity endpoints the runner's preflight calls on GCP, Azure, DigitalOcean and Linode,
//! as one local HTTP server (their paths do not overlap), for fast tests and devstack.
//!
//! What it reproduces, per endpoint, answering the documented success and error shapes:
//!
//! - **Google STS** `POST /v1/token` (form): `grant_type` token-exchange and `subject_token_type` jwt, else
//!   `invalid_request`; an `audience` that is not `//iam.googleapis.com/projects/…` → `invalid_request`
//!   ("Invalid value for \"audience\" …", Google's wording); a provider not registered → `invalid_target`
//!   (Google's wording); the token checked as a provider checks it (below) → `invalid_grant` naming the issuer or
//!   the audience; the provider's attribute condition (`assertion.strato_tenant == '<tenant>'`) →
//!   `unauthorized_client` ("The given credential is rejected by the attribute condition."). Success:
//!   `{access_token, issued_token_type, token_type: "Bearer", expires_in}`.
//! - **IAM Credentials** `POST /v1/projects/-/serviceAccounts/<sa>:generateAccessToken`: a bearer STS did not
//!   issue → 401 `UNAUTHENTICATED`; no `roles/iam.workloadIdentityUser` binding of the account for the token's
//!   tenant → 403 `PERMISSION_DENIED` / `IAM_PERMISSION_DENIED` (Google's message). Success:
//!   `{accessToken, expireTime}`.
//! - **Entra ID** `POST /<tenant>/oauth2/v2.0/token` (form, client credentials with a jwt-bearer client
//!   assertion): an unknown tenant → AADSTS90002, an unknown app → AADSTS700016, the assertion against the app's
//!   flexible federated credential (issuer, audience `api://AzureADTokenExchange`, `claims['sub'] matches
//!   '<prefix>*'`) → AADSTS700211 (issuer) / 700212 (audience) / 700213 (subject), an expired one → 700024;
//!   each as `{error, error_description: "AADSTS<code>: … Trace ID: …", error_codes: [code]}`. The
//!   descriptions' first sentences are Microsoft's; the rest is the fake's.
//! - **Resource Manager** `GET /subscriptions/<id>`: a bearer Entra did not issue → 401
//!   `InvalidAuthenticationToken`; an unknown subscription → 404 `SubscriptionNotFound`; no role of the app
//!   on it → 403 `AuthorizationFailed`. Success: the subscription (`subscriptionId`, `displayName`, `state`,
//!   `tenantId`).
//!   `GET /subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Storage/storageAccounts/<name>`: the
//!   same checks, then 404 `ResourceNotFound` for an account not registered with
//!   [`Knobs::azure_storage_account`], else the account with its `primaryEndpoints.blob` (the `azurerm`
//!   backend's `lookup_blob_endpoint` reads it). An Entra token asked for the scope
//!   `https://storage.azure.com/.default` is a JWT with Entra's v1 storage claims (Azurite reads them);
//!   others are opaque.
//! - **DigitalOcean** `GET /v2/account`: an unknown bearer → 401 `{"id":"unauthorized","message":"Unable to
//!   authenticate you"}`, a token registered without `account:read` → 403 `forbidden`. Success: `{account:
//!   {email, uuid, status, team, …}}`.
//! - **Linode** `GET /v4/profile`: an unknown bearer → 401 `{"errors":[{"reason":"Invalid Token"}]}`. Success:
//!   the profile (`username`, `email`, `uid`, `restricted`).
//!
//! The run's token is checked as a cloud checks it, from its claims: `iss` equal to the trusted issuer, `aud`
//! the expected audience, `exp` in the future and `nbf` not (60 s skew); and its RS256 signature against
//! the key given to [`Knobs::verify_with`] (as a cloud does with the issuer's JWKS; without a key the
//! signature is not checked). It does not fetch discovery or JWKS documents over the network.
//!
//! Modes: [`Knobs::hang`] holds every request unanswered (a provider that hangs on bad credentials), and
//! [`Knobs::hang_calls_to`] only some; [`Knobs::echo_tokens`] makes 401 answers quote the token sent;
//! [`Knobs::unauthorized`] answers every request with its endpoint's 401 shape. The requests seen are kept as
//! `METHOD /path` ([`Knobs::calls`]), never a body or header.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::json;

mod answers;
use answers::{
    UNAUTHENTICATED, arm_error, arm_storage_account, arm_subscription, do_account, entra_token,
    gcp_impersonate, gcp_sts, google_error, linode_profile,
};

#[derive(Default)]
struct State {
    issuer: Option<String>,
    key: Option<Vec<u8>>,
    /// Provider resource name → the tenant its attribute condition admits.
    gcp_providers: BTreeMap<String, String>,
    /// (service account, tenant) pairs with `roles/iam.workloadIdentityUser`.
    gcp_bindings: BTreeSet<(String, String)>,
    /// Federated tokens issued → the token's tenant.
    gcp_federated: BTreeMap<String, String>,
    /// Entra tenants → app client ids → the subject prefix of the app's federated credential.
    azure_apps: BTreeMap<String, BTreeMap<String, String>>,
    /// Subscription id → (tenant, display name).
    azure_subscriptions: BTreeMap<String, (String, String)>,
    /// (app client id, subscription) role assignments.
    azure_roles: BTreeSet<(String, String)>,
    /// Access tokens issued → app client id.
    azure_access: BTreeMap<String, String>,
    /// (subscription, resource group lower-cased, account name) → the account's blob endpoint.
    azure_storage: BTreeMap<(String, String, String), String>,
    do_tokens: BTreeSet<String>,
    do_unscoped: BTreeSet<String>,
    linode_tokens: BTreeSet<String>,
    /// Requests whose path contains this are held unanswered ("" holds all).
    hang: Option<String>,
    unauthorized: bool,
    /// Error answers quote the presented token (an endpoint that echoes what it was sent).
    echo: bool,
    calls: Vec<String>,
}

/// The fake's settings, shared with its server. Clones share them.
#[derive(Clone, Default)]
pub struct Knobs(Arc<Mutex<State>>);

impl Knobs {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The OIDC issuer GCP's providers and Azure's federated credentials trust.
    pub fn trust_issuer(&self, issuer: &str) {
        self.with(|s| s.issuer = Some(issuer.to_owned()));
    }

    /// Check tokens' RS256 signatures against this public key (DER SubjectPublicKeyInfo, as `Signer`
    /// gives it).
    pub fn verify_with(&self, spki_der: Vec<u8>) {
        self.with(|s| s.key = Some(spki_der));
    }

    /// A workload identity pool provider (`projects/<n>/locations/global/workloadIdentityPools/<p>/providers/<x>`)
    /// with the default audience and the attribute condition `assertion.strato_tenant == '<tenant>'`.
    pub fn gcp_provider(&self, provider: &str, tenant: &str) {
        self.with(|s| s.gcp_providers.insert(provider.to_owned(), tenant.to_owned()));
    }

    /// `roles/iam.workloadIdentityUser` on `service_account` for the pool's principals of `tenant`.
    pub fn gcp_impersonation(&self, service_account: &str, tenant: &str) {
        self.with(|s| {
            s.gcp_bindings
                .insert((service_account.to_owned(), tenant.to_owned()))
        });
    }

    /// An app in Entra tenant `tenant_id` with a flexible federated credential: the trusted issuer, audience
    /// `api://AzureADTokenExchange`, `claims['sub'] matches '<subject_prefix>*'`.
    pub fn azure_app(&self, tenant_id: &str, client_id: &str, subject_prefix: &str) {
        self.with(|s| {
            s.azure_apps
                .entry(tenant_id.to_owned())
                .or_default()
                .insert(client_id.to_owned(), subject_prefix.to_owned())
        });
    }

    /// A subscription in `tenant_id`, enabled.
    pub fn azure_subscription(&self, tenant_id: &str, subscription_id: &str, name: &str) {
        self.with(|s| {
            s.azure_subscriptions.insert(
                subscription_id.to_owned(),
                (tenant_id.to_owned(), name.to_owned()),
            )
        });
    }

    /// A role of app `client_id` on `subscription_id`.
    pub fn azure_role(&self, client_id: &str, subscription_id: &str) {
        self.with(|s| {
            s.azure_roles
                .insert((client_id.to_owned(), subscription_id.to_owned()))
        });
    }

    /// A storage account in `resource_group` of `subscription_id` whose blob endpoint is `blob_endpoint`
    /// (e.g. Azurite's `https://127.0.0.1:<port>/<account>/`).
    pub fn azure_storage_account(
        &self,
        subscription_id: &str,
        resource_group: &str,
        name: &str,
        blob_endpoint: &str,
    ) {
        self.with(|s| {
            s.azure_storage.insert(
                (
                    subscription_id.to_owned(),
                    resource_group.to_lowercase(),
                    name.to_owned(),
                ),
                blob_endpoint.to_owned(),
            )
        });
    }

    /// A DigitalOcean token that reads the account (full access or `account:read`).
    pub fn digitalocean_token(&self, token: &str) {
        self.with(|s| s.do_tokens.insert(token.to_owned()));
    }

    /// A DigitalOcean custom-scoped token without `account:read`.
    pub fn digitalocean_unscoped_token(&self, token: &str) {
        self.with(|s| s.do_unscoped.insert(token.to_owned()));
    }

    /// A Linode personal access token.
    pub fn linode_token(&self, token: &str) {
        self.with(|s| s.linode_tokens.insert(token.to_owned()));
    }

    /// Hold every request unanswered (`true`) or answer again.
    pub fn hang(&self, on: bool) {
        self.with(|s| s.hang = on.then(String::new));
    }

    /// Hold unanswered only the requests whose path contains `fragment` (e.g. `:generateAccessToken`: the
    /// second call of a check).
    pub fn hang_calls_to(&self, fragment: &str) {
        self.with(|s| s.hang = Some(fragment.to_owned()));
    }

    /// DigitalOcean's and Linode's 401 answers quote the token they were sent, as a careless endpoint might:
    /// what the caller reports must still not show it.
    pub fn echo_tokens(&self, on: bool) {
        self.with(|s| s.echo = on);
    }

    /// Answer every request with its endpoint's 401.
    pub fn unauthorized(&self, on: bool) {
        self.with(|s| s.unauthorized = on);
    }

    /// The requests seen, as `METHOD /path`.
    pub fn calls(&self) -> Vec<String> {
        self.with(|s| s.calls.clone())
    }
}

/// The fake's server on a free loopback port; it stops when dropped.
pub struct FakeClouds {
    /// `http://127.0.0.1:<port>`: every endpoint's base URL.
    pub base_url: String,
    pub knobs: Knobs,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeClouds {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeClouds {
    /// The runner's environment pointing every cloud endpoint of its preflight here (`STRATO_ENDPOINT_*`), for
    /// devstack's task definition or a test's runner.
    pub fn runner_env(&self) -> Vec<(String, String)> {
        [
            "GCP_STS",
            "GCP_IAM_CREDENTIALS",
            "AZURE_LOGIN",
            "AZURE_MANAGEMENT",
            "DIGITALOCEAN",
            "LINODE",
        ]
        .iter()
        .map(|n| (format!("STRATO_ENDPOINT_{n}"), self.base_url.clone()))
        .collect()
    }

    /// Starts the server on the current tokio runtime.
    pub async fn start() -> std::io::Result<Self> {
        let knobs = Knobs::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let k = knobs.clone();
        let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let k = k.clone();
            async move { answer(&k, method, uri, headers, body).await }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            base_url,
            knobs,
            task,
        })
    }
}

async fn answer(k: &Knobs, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_owned();
    let (hang, unauthorized) = k.with(|s| {
        s.calls.push(format!("{method} {path}"));
        (
            s.hang.as_ref().is_some_and(|f| path.contains(f.as_str())),
            s.unauthorized,
        )
    });
    if hang {
        std::future::pending::<()>().await;
    }
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned();
    let form: BTreeMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let endpoint = Endpoint::of(&method, &path);
    if unauthorized {
        return endpoint.unauthorized();
    }
    match endpoint {
        Endpoint::Sts => k.with(|s| gcp_sts(s, &form)),
        Endpoint::GenerateAccessToken(sa) => k.with(|s| gcp_impersonate(s, &sa, &bearer)),
        Endpoint::EntraToken(tenant) => k.with(|s| entra_token(s, &tenant, &form)),
        Endpoint::Subscription(id) => k.with(|s| arm_subscription(s, &id, &bearer)),
        Endpoint::StorageAccount => k.with(|s| arm_storage_account(s, &path, &bearer)),
        Endpoint::DoAccount => k.with(|s| do_account(s, &bearer)),
        Endpoint::LinodeProfile => k.with(|s| linode_profile(s, &bearer)),
        Endpoint::Unknown => (StatusCode::NOT_FOUND, "not an endpoint of the fake clouds").into_response(),
    }
}

enum Endpoint {
    Sts,
    GenerateAccessToken(String),
    EntraToken(String),
    Subscription(String),
    StorageAccount,
    DoAccount,
    LinodeProfile,
    Unknown,
}

impl Endpoint {
    fn of(method: &Method, path: &str) -> Self {
        let post = method == Method::POST;
        if post && path == "/v1/token" {
            return Self::Sts;
        }
        if post
            && let Some(sa) = path
                .strip_prefix("/v1/projects/-/serviceAccounts/")
                .and_then(|r| r.strip_suffix(":generateAccessToken"))
        {
            return Self::GenerateAccessToken(sa.to_owned());
        }
        if post && let Some(t) = path.strip_suffix("/oauth2/v2.0/token") {
            return Self::EntraToken(t.trim_start_matches('/').to_owned());
        }
        if method == Method::GET {
            let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            if let [
                "subscriptions",
                _,
                "resourceGroups",
                _,
                "providers",
                p,
                "storageAccounts",
                _,
            ] = parts[..]
                && p.eq_ignore_ascii_case("Microsoft.Storage")
            {
                return Self::StorageAccount;
            }
            if let Some(id) = path.strip_prefix("/subscriptions/") {
                return Self::Subscription(id.to_owned());
            }
            if path == "/v2/account" {
                return Self::DoAccount;
            }
            if path == "/v4/profile" {
                return Self::LinodeProfile;
            }
        }
        Self::Unknown
    }

    fn unauthorized(&self) -> Response {
        let body = match self {
            Self::Sts | Self::EntraToken(_) => {
                json!({"error": "invalid_client", "error_description": "the client is not authorized (fake 401 mode)"})
            }
            Self::GenerateAccessToken(_) => google_error(401, "UNAUTHENTICATED", UNAUTHENTICATED, None),
            Self::Subscription(_) | Self::StorageAccount => {
                arm_error("InvalidAuthenticationToken", "The access token is invalid.")
            }
            Self::DoAccount => json!({"id": "unauthorized", "message": "Unable to authenticate you"}),
            Self::LinodeProfile => json!({"errors": [{"reason": "Invalid Token"}]}),
            Self::Unknown => return (StatusCode::NOT_FOUND, "").into_response(),
        };
        (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests;

//! GCP: Google STS token exchange, then `generateAccessToken` for the target's service account.
//!
//! Error shapes: STS answers OAuth 2.0 errors (`{"error": "invalid_grant", "error_description": "…"}`, RFC
//! 6749 §5.2): `invalid_grant` for a token the provider does not accept (its audience, its issuer, or "Error
//! connecting to the given credential's issuer" when Google cannot fetch the discovery document or JWKS),
//! `unauthorized_client` when the provider's attribute condition rejects it, `invalid_target` when the pool or
//! provider is missing or disabled, `invalid_request` for an audience that is not a provider's resource name.
//! IAM Credentials answers Google API errors (`{"error": {"code": 403, "status": "PERMISSION_DENIED",
//! "message": "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
//! "details": [{"reason": "IAM_PERMISSION_DENIED" | "SERVICE_DISABLED", …}]}}`).

use strato_domain::identity::gcp_audience;
use strato_domain::model::GcpTarget;

use super::CloudEndpoints;
use super::http::{Answer, send, unexpected};
use super::refusal::{PreflightError, Secrets, Shown};

const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";

pub(super) async fn check(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    target: &GcpTarget,
    id_token: &str,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    access_token(http, ep, target, id_token, secrets).await?;
    let (provider, sa) = (
        target.workload_identity_provider.as_str(),
        target.service_account.as_str(),
    );
    Ok(format!(
        "GCP workload identity provider {provider} accepted this run's token and service account {sa} can be \
         impersonated by it"
    ))
}

/// The target service account's access token: the run's identity token exchanged at Google STS, then
/// `generateAccessToken` with the federated token (the preflight's two calls; the state-version listing and
/// restore use the token too). Both tokens are added to `secrets`.
pub(crate) async fn access_token(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    target: &GcpTarget,
    id_token: &str,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    let provider = target.workload_identity_provider.as_str();
    let audience = gcp_audience(provider);
    let exchange = http.post(format!("{}/v1/token", ep.gcp_sts)).form(&[
        ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
        ("audience", audience.as_str()),
        ("scope", CLOUD_PLATFORM),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("subject_token", id_token),
        ("subject_token_type", "urn:ietf:params:oauth:token-type:jwt"),
    ]);
    let a = send(exchange, "Google STS").await?;
    let shown = Shown::of(id_token);
    if !a.ok() {
        return Err(sts_refusal(&a, target, &shown));
    }
    let federated = a.str("/access_token").to_owned();
    secrets.add(&federated);
    if federated.is_empty() {
        return Err(unexpected(
            "Google STS",
            &a,
            "no access_token in its answer",
            "retry the operation",
        ));
    }
    let sa = target.service_account.as_str();
    let impersonate = http
        .post(format!(
            "{}/v1/projects/-/serviceAccounts/{sa}:generateAccessToken",
            ep.gcp_iam_credentials
        ))
        .bearer_auth(&federated)
        .json(&serde_json::json!({ "scope": [CLOUD_PLATFORM] }));
    let b = send(impersonate, "Google IAM Credentials").await?;
    secrets.add(b.str("/accessToken"));
    if !b.ok() {
        return Err(impersonation_refusal(&b, target, &shown));
    }
    Ok(b.str("/accessToken").to_owned())
}

fn sts_refusal(a: &Answer, target: &GcpTarget, shown: &Shown) -> PreflightError {
    let provider = target.workload_identity_provider.as_str();
    let code = a.str("/error");
    let desc = a.str("/error_description");
    let what = format!("Google STS refused the run's identity token ({code}: {desc})");
    let lower = desc.to_ascii_lowercase();
    let fix = match code {
        "invalid_grant" if lower.contains("connecting to the given credential's issuer") => format!(
            "Google could not fetch {iss}/.well-known/openid-configuration or the JWKS it names: the issuer must \
             be reachable over HTTPS from the internet with a publicly trusted certificate",
            iss = shown.iss
        ),
        "invalid_grant" if lower.contains("audience") => format!(
            "the workload identity pool provider {provider} does not accept audience {aud}: leave its allowed \
             audiences empty (the default is exactly that value) or add {aud} to them",
            aud = shown.aud
        ),
        "invalid_grant" if lower.contains("issuer") => format!(
            "the workload identity pool provider {provider} does not trust this issuer: set its issuer URI to \
             {iss} with allowed audience {aud} (GET /v1/tenant/target-access shows the settings)",
            iss = shown.iss,
            aud = shown.aud
        ),
        "invalid_grant" => format!(
            "the workload identity pool provider {provider} refused the token: its issuer URI must be {iss} and \
             its keys Strato's published JWKS (GET /v1/tenant/target-access shows the settings)",
            iss = shown.iss
        ),
        "unauthorized_client" => format!(
            "the attribute condition of provider {provider} rejects this run's token: use \
             assertion.strato_tenant == '{tenant}' with the attribute mapping GET /v1/tenant/target-access shows",
            tenant = shown.tenant
        ),
        "invalid_target" => format!(
            "workload identity pool provider {provider} does not exist, or it or its pool is disabled or \
             deleted: check target.workload_identity_provider (projects/<project number>/...) and the \
             provider's state"
        ),
        "invalid_request" if lower.contains("audience") => format!(
            "{provider} is not a workload identity pool provider's full resource name: set \
             target.workload_identity_provider to projects/<project number>/locations/global/\
             workloadIdentityPools/<pool>/providers/<provider>"
        ),
        _ => {
            return unexpected(
                "Google STS",
                a,
                desc,
                "check the target's workload identity provider settings",
            );
        }
    };
    PreflightError { what, fix }
}

fn impersonation_refusal(a: &Answer, target: &GcpTarget, shown: &Shown) -> PreflightError {
    let sa = target.service_account.as_str();
    let message = a.str("/error/message");
    let reasons: Vec<&str> = a
        .json
        .pointer("/error/details")
        .and_then(|d| d.as_array())
        .map(|d| {
            d.iter()
                .filter_map(|x| x.get("reason").and_then(|r| r.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let what = format!("Google IAM refused to let this run impersonate service account {sa} ({message})");
    if reasons.contains(&"SERVICE_DISABLED") {
        return PreflightError {
            what,
            fix: "enable the IAM Service Account Credentials API (iamcredentials.googleapis.com) in the project \
                  of the workload identity pool"
                .into(),
        };
    }
    if matches!(a.status, 403 | 404) {
        let pool = target
            .workload_identity_provider
            .as_str()
            .split("/providers/")
            .next()
            .unwrap_or_default();
        return PreflightError {
            what,
            fix: format!(
                "grant roles/iam.workloadIdentityUser on service account {sa} to \
                 principalSet://iam.googleapis.com/{pool}/attribute.tenant/{tenant} (and check that {sa} exists)",
                tenant = shown.tenant
            ),
        };
    }
    unexpected(
        "Google IAM Credentials",
        a,
        message,
        "check the target's service account and retry",
    )
}

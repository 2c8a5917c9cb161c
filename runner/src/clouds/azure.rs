//! Azure: Entra ID's client-credentials token with the run's token as client assertion, then Azure Resource
//! Manager's `GET /subscriptions/<id>` with the access token.
//!
//! Error shapes: Entra ID answers `{"error": "invalid_client", "error_description": "AADSTS70021: No matching
//! federated identity record found for presented assertion. …", "error_codes": [70021], "trace_id": …}`; the
//! codes mapped here: 70021 (no federated credential matches), 700211 / 700212 / 700213 (none matches the
//! assertion's issuer / audience / subject), 7002137 / 7002138 (subject matches only case-insensitively),
//! 700016 (no such application in the directory), 90002 (no such tenant), 700024 (assertion outside its
//! validity). Resource Manager answers `{"error": {"code": "AuthorizationFailed" | "SubscriptionNotFound" |
//! "InvalidAuthenticationToken", "message": …}}`.

use strato_domain::identity::AUD_AZURE;
use strato_domain::model::AzureTarget;

use super::CloudEndpoints;
use super::http::{Answer, send, unexpected};
use super::refusal::{PreflightError, Secrets, Shown};

const MANAGEMENT_SCOPE: &str = "https://management.azure.com/.default";
const API_VERSION: &str = "2022-12-01";

pub(super) async fn check(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    target: &AzureTarget,
    id_token: &str,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    let access = access_token(http, ep, target, id_token, MANAGEMENT_SCOPE, secrets).await?;
    subscription(http, ep, target, &access).await
}

/// An Entra ID access token of the target's app for `scope`, with the run's identity token as client
/// assertion (the preflight's first call; the state-version listing and restore ask for Blob Storage's
/// scope). The token is added to `secrets`.
pub(crate) async fn access_token(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    target: &AzureTarget,
    id_token: &str,
    scope: &str,
    secrets: &mut Secrets,
) -> Result<String, PreflightError> {
    let token_req = http
        .post(format!(
            "{}/{}/oauth2/v2.0/token",
            ep.azure_login, target.tenant_id
        ))
        .form(&[
            ("client_id", target.client_id.as_str()),
            ("scope", scope),
            ("grant_type", "client_credentials"),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", id_token),
        ]);
    let a = send(token_req, "Microsoft Entra ID").await?;
    let shown = Shown::of(id_token);
    if !a.ok() {
        return Err(token_refusal(&a, target, &shown));
    }
    let access = a.str("/access_token").to_owned();
    secrets.add(&access);
    if access.is_empty() {
        return Err(unexpected(
            "Microsoft Entra ID",
            &a,
            "no access_token in its answer",
            "retry the operation",
        ));
    }
    Ok(access)
}

async fn subscription(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    target: &AzureTarget,
    access: &str,
) -> Result<String, PreflightError> {
    let sub = target.subscription_id.as_str();
    let read = http
        .get(format!(
            "{}/subscriptions/{sub}?api-version={API_VERSION}",
            ep.azure_management
        ))
        .bearer_auth(access);
    let b = send(read, "Azure Resource Manager").await?;
    if !b.ok() {
        return Err(subscription_refusal(&b, target));
    }
    let state = b.str("/state");
    if matches!(state, "Disabled" | "Deleted") {
        return Err(PreflightError {
            what: format!("Azure subscription {sub} is {state}"),
            fix: "re-enable the subscription (or register a target with an active one): nothing can be created \
                  in it"
                .into(),
        });
    }
    Ok(format!(
        "Azure app {} signed in to tenant {} with this run's token and reads subscription {sub} ({}, {state})",
        target.client_id,
        target.tenant_id,
        b.str("/displayName")
    ))
}

/// The AADSTS code of an Entra ID error: `error_codes[0]`, else the one its description starts with.
fn aadsts(a: &Answer) -> Option<u64> {
    a.json
        .pointer("/error_codes/0")
        .and_then(|c| c.as_u64())
        .or_else(|| {
            let d = a.str("/error_description");
            let digits: String = d
                .strip_prefix("AADSTS")?
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
}

fn token_refusal(a: &Answer, target: &AzureTarget, shown: &Shown) -> PreflightError {
    let desc = a.str("/error_description");
    // Entra ID appends trace and correlation ids and a timestamp: noise for the tenant.
    let desc = desc.split(" Trace ID:").next().unwrap_or(desc).trim();
    let what = format!("Microsoft Entra ID refused the run's identity token ({desc})");
    let (app, tenant) = (&target.client_id, &target.tenant_id);
    let credential = format!(
        "add a federated identity credential to app (or managed identity) {app} with issuer {iss}, audience \
         {AUD_AZURE} and subject {sub}; every run's subject differs, so it has to be a flexible federated \
         identity credential with claims matching expression claims['sub'] matches 'tenant:{t}:*' (GET \
         /v1/tenant/target-access shows the settings)",
        iss = shown.iss,
        sub = shown.sub,
        t = shown.tenant,
    );
    let fix = match aadsts(a) {
        Some(700211) => format!(
            "no federated credential of app {app} has issuer {}: {credential}",
            shown.iss
        ),
        Some(700212) => {
            format!("no federated credential of app {app} has audience {AUD_AZURE}: {credential}")
        }
        Some(700213) => format!(
            "no federated credential of app {app} matches subject {}: {credential}",
            shown.sub
        ),
        Some(7002137 | 7002138) => format!(
            "a federated credential of app {app} matches subject {} only ignoring case (matching is case \
             sensitive): {credential}",
            shown.sub
        ),
        Some(70021) => format!("federated credential issuer/subject mismatch: {credential}"),
        Some(700016) => format!(
            "no application with client id {app} in Entra tenant {tenant}: check target.client_id and \
             target.tenant_id (the app's Application (client) ID and Directory (tenant) ID)"
        ),
        Some(90002) => format!("Entra tenant {tenant} does not exist: check target.tenant_id"),
        Some(700024) => {
            "the run's token was outside its validity window when Entra ID checked it (clock skew \
                         or a slow start): retry the operation"
                .to_owned()
        }
        _ => {
            return unexpected(
                "Microsoft Entra ID",
                a,
                desc,
                "check the target's app and its federated credential",
            );
        }
    };
    PreflightError { what, fix }
}

fn subscription_refusal(a: &Answer, target: &AzureTarget) -> PreflightError {
    let (app, sub) = (&target.client_id, &target.subscription_id);
    let code = a.str("/error/code");
    let message = a.str("/error/message");
    let what =
        format!("Azure Resource Manager refused to read subscription {sub} as app {app} ({code}: {message})");
    let fix = match code {
        "AuthorizationFailed" => format!(
            "assign app {app} a role on subscription {sub}: Contributor (or a narrower role covering the \
             template's resources) to provision clusters"
        ),
        "SubscriptionNotFound" => format!(
            "subscription {sub} is not in Entra tenant {} or app {app} has no role on it: check \
             target.subscription_id and assign the app a role there",
            target.tenant_id
        ),
        _ => {
            return unexpected(
                "Azure Resource Manager",
                a,
                message,
                "check the target's subscription and retry",
            );
        }
    };
    PreflightError { what, fix }
}

//! The fake endpoints' answers, and the token check they share.

use std::collections::BTreeMap;

use aws_lc_rs::signature::{RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use serde_json::{Value, json};

use super::{Endpoint, State};

const GCP_AUDIENCE_PREFIX: &str = "//iam.googleapis.com/";
const AZURE_AUDIENCE: &str = "api://AzureADTokenExchange";
const SKEW_SECS: i64 = 60;
pub(super) const UNAUTHENTICATED: &str = "Request had invalid authentication credentials. Expected OAuth 2 access token, login \
                               cookie or other valid authentication credential.";

pub(super) fn google_error(code: u16, status: &str, message: &str, reason: Option<&str>) -> Value {
    let details: Vec<Value> = reason
        .map(|r| {
            vec![
                json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": r,
                        "domain": "iam.googleapis.com"}),
            ]
        })
        .unwrap_or_default();
    json!({"error": {"code": code, "message": message, "status": status, "details": details}})
}

pub(super) fn arm_error(code: &str, message: &str) -> Value {
    json!({"error": {"code": code, "message": message}})
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

/// Why a token is refused, as a cloud's verifier finds it.
enum Bad {
    Malformed(&'static str),
    Signature,
    Issuer(String),
    Audience(String),
    Expired,
}

/// The token's claims when its signature (with a key set), issuer, audience and validity window hold.
fn verify(s: &State, token: &str, audience: &str) -> Result<Value, Bad> {
    let parts: Vec<&str> = token.split('.').collect();
    let [header, payload, sig] = parts[..] else {
        return Err(Bad::Malformed("not a JWT"));
    };
    let claims: Value = B64URL
        .decode(payload)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(Bad::Malformed("unreadable claims"))?;
    if let Some(key) = &s.key {
        let (n, e) = strato_domain::identity::jwk::rsa_components(key).map_err(|_| Bad::Signature)?;
        let sig = B64URL.decode(sig).map_err(|_| Bad::Signature)?;
        RsaPublicKeyComponents { n, e }
            .verify(
                &RSA_PKCS1_2048_8192_SHA256,
                format!("{header}.{payload}").as_bytes(),
                &sig,
            )
            .map_err(|_| Bad::Signature)?;
    }
    let get = |k: &str| claims.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    if s.issuer.as_deref() != Some(get("iss").as_str()) {
        return Err(Bad::Issuer(get("iss")));
    }
    if get("aud") != audience {
        return Err(Bad::Audience(get("aud")));
    }
    let now = time_now();
    let num = |k: &str| claims.get(k).and_then(Value::as_i64);
    if num("exp").is_none_or(|exp| exp <= now) || num("nbf").is_some_and(|nbf| nbf > now + SKEW_SECS) {
        return Err(Bad::Expired);
    }
    Ok(claims)
}

fn time_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn claim(claims: &Value, k: &str) -> String {
    claims.get(k).and_then(Value::as_str).unwrap_or("").to_owned()
}

pub(super) fn gcp_sts(s: &mut State, form: &BTreeMap<String, String>) -> Response {
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
    if field("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
        || field("subject_token_type") != "urn:ietf:params:oauth:token-type:jwt"
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "grant_type must be token-exchange and subject_token_type jwt (fake's wording)",
        );
    }
    let audience = field("audience");
    let Some(provider) = audience
        .strip_prefix(GCP_AUDIENCE_PREFIX)
        .filter(|p| p.starts_with("projects/"))
    else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "Invalid value for \"audience\". This value should be the full resource name of the Identity \
             Provider. See https://cloud.google.com/iam/docs/reference/sts/rest/v1/TopLevel/token for the list \
             of possible formats.",
        );
    };
    let Some(tenant) = s.gcp_providers.get(provider).cloned() else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "The target service indicated by the \"audience\" parameters is invalid. This might either be \
             because the pool or provider is disabled or deleted or because it doesn't exist.",
        );
    };
    let claims = match verify(s, field("subject_token"), audience) {
        Ok(c) => c,
        Err(bad) => {
            let d = match bad {
                Bad::Audience(aud) => format!(
                    "The audience in ID Token [{aud}] does not match the expected audience [{audience}]."
                ),
                Bad::Issuer(iss) => format!(
                    "The issuer in ID Token [{iss}] does not match the expected issuer of the provider (fake's \
                     wording)."
                ),
                Bad::Signature => "The ID Token's signature is invalid (fake's wording).".to_owned(),
                Bad::Expired => "The ID Token has expired (fake's wording).".to_owned(),
                Bad::Malformed(why) => format!("The ID Token is malformed: {why} (fake's wording)."),
            };
            return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", &d);
        }
    };
    if claim(&claims, "strato_tenant") != tenant {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            "The given credential is rejected by the attribute condition.",
        );
    }
    let token = format!("fake-federated-{}", uuid::Uuid::new_v4());
    s.gcp_federated.insert(token.clone(), tenant);
    axum::Json(json!({
        "access_token": token,
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer",
        "expires_in": 3600
    }))
    .into_response()
}

pub(super) fn gcp_impersonate(s: &mut State, sa: &str, bearer: &str) -> Response {
    let Some(tenant) = s.gcp_federated.get(bearer).cloned() else {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(google_error(401, "UNAUTHENTICATED", UNAUTHENTICATED, None)),
        )
            .into_response();
    };
    if !s.gcp_bindings.contains(&(sa.to_owned(), tenant)) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(google_error(
                403,
                "PERMISSION_DENIED",
                "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
                Some("IAM_PERMISSION_DENIED"),
            )),
        )
            .into_response();
    }
    axum::Json(json!({
        "accessToken": format!("fake-sa-token-{}", uuid::Uuid::new_v4()),
        "expireTime": "2099-01-01T00:00:00Z"
    }))
    .into_response()
}

fn entra_error(error: &str, code: u64, first: &str) -> Response {
    let trace = uuid::Uuid::new_v4();
    let body = json!({
        "error": error,
        "error_description": format!("AADSTS{code}: {first} Trace ID: {trace} Correlation ID: {trace} Timestamp: 2026-01-01 00:00:00Z"),
        "error_codes": [code],
        "trace_id": trace.to_string(),
        "correlation_id": trace.to_string()
    });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

pub(super) fn entra_token(s: &mut State, tenant: &str, form: &BTreeMap<String, String>) -> Response {
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
    let Some(apps) = s.azure_apps.get(tenant) else {
        return entra_error(
            "invalid_request",
            90002,
            &format!("Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID."),
        );
    };
    let client = field("client_id");
    let Some(prefix) = apps.get(client).cloned() else {
        return entra_error(
            "unauthorized_client",
            700016,
            &format!("Application with identifier '{client}' was not found in the directory '{tenant}'."),
        );
    };
    if field("grant_type") != "client_credentials"
        || field("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "client credentials with a jwt-bearer client assertion expected (fake's wording)",
        );
    }
    const MISMATCH: &str = "Check your federated identity credential Subject, Audience and Issuer against the \
                            presented assertion.";
    let claims = match verify(s, field("client_assertion"), AZURE_AUDIENCE) {
        Ok(c) => c,
        Err(Bad::Issuer(iss)) => {
            return entra_error(
                "invalid_client",
                700211,
                &format!(
                    "No matching federated identity record found for presented assertion issuer '{iss}'. {MISMATCH}"
                ),
            );
        }
        Err(Bad::Audience(aud)) => {
            return entra_error(
                "invalid_client",
                700212,
                &format!(
                    "No matching federated identity record found for presented assertion audience '{aud}'. {MISMATCH}"
                ),
            );
        }
        Err(Bad::Expired) => {
            return entra_error(
                "invalid_client",
                700024,
                "Client assertion is not within its valid time range.",
            );
        }
        Err(Bad::Signature | Bad::Malformed(_)) => {
            return entra_error(
                "invalid_client",
                700027,
                "Client assertion failed signature validation (fake's choice of code and wording).",
            );
        }
    };
    let sub = claim(&claims, "sub");
    if !sub.starts_with(&prefix) {
        return entra_error(
            "invalid_client",
            700213,
            &format!(
                "No matching federated identity record found for presented assertion subject '{sub}'. {MISMATCH}"
            ),
        );
    }
    // Azure Storage reads its token's claims (Azurite too); Resource Manager's stays opaque here.
    let token = if field("scope").starts_with("https://storage.azure.com") {
        crate::azurite::storage_token(tenant, client)
    } else {
        format!("fake-arm-token-{}", uuid::Uuid::new_v4())
    };
    s.azure_access.insert(token.clone(), client.to_owned());
    axum::Json(
        json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token}),
    )
    .into_response()
}

/// A storage account's properties (`primaryEndpoints.blob` is where the `azurerm` backend's
/// `lookup_blob_endpoint` sends it), to an app with a role on the subscription.
pub(super) fn arm_storage_account(s: &State, path: &str, bearer: &str) -> Response {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    // subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Storage/storageAccounts/<name>
    let (sub, rg, name) = (parts[1], parts[3], parts[7]);
    if let Some(refused) = arm_refusal(s, sub, bearer, "Microsoft.Storage/storageAccounts/read") {
        return refused;
    }
    match s.azure_storage.get(&(sub.to_owned(), rg.to_lowercase(), name.to_owned())) {
        Some(blob) => axum::Json(json!({
            "id": format!("/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Storage/storageAccounts/{name}"),
            "name": name,
            "type": "Microsoft.Storage/storageAccounts",
            "kind": "StorageV2",
            "location": "eastus",
            "properties": {"isHnsEnabled": false, "primaryEndpoints": {"blob": blob}},
        }))
        .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(arm_error(
                "ResourceNotFound",
                &format!(
                    "The Resource 'Microsoft.Storage/storageAccounts/{name}' under resource group '{rg}' was not found."
                ),
            )),
        )
            .into_response(),
    }
}

/// Resource Manager's checks before any read (a token Entra issued, a subscription that exists, a role of
/// the app on it): the answer refusing it, or `None`.
fn arm_refusal(s: &State, id: &str, bearer: &str, action: &str) -> Option<Response> {
    let Some(client) = s.azure_access.get(bearer) else {
        return Some(
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(arm_error(
                    "InvalidAuthenticationToken",
                    "The access token is invalid.",
                )),
            )
                .into_response(),
        );
    };
    if !s.azure_subscriptions.contains_key(id) {
        return Some(
            (
                StatusCode::NOT_FOUND,
                axum::Json(arm_error(
                    "SubscriptionNotFound",
                    &format!("The subscription '{id}' could not be found."),
                )),
            )
                .into_response(),
        );
    }
    if !s.azure_roles.contains(&(client.clone(), id.to_owned())) {
        return Some((
            StatusCode::FORBIDDEN,
            axum::Json(arm_error(
                "AuthorizationFailed",
                &format!(
                    "The client '{client}' with object id '{client}' does not have authorization to perform \
                     action '{action}' over scope '/subscriptions/{id}' or the scope is invalid. If access was \
                     recently granted, please refresh your credentials."
                ),
            )),
        )
            .into_response());
    }
    None
}

pub(super) fn arm_subscription(s: &State, id: &str, bearer: &str) -> Response {
    let Some(client) = s.azure_access.get(bearer) else {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(arm_error(
                "InvalidAuthenticationToken",
                "The access token is invalid.",
            )),
        )
            .into_response();
    };
    let Some((tenant, name)) = s.azure_subscriptions.get(id) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(arm_error(
                "SubscriptionNotFound",
                &format!("The subscription '{id}' could not be found."),
            )),
        )
            .into_response();
    };
    if !s.azure_roles.contains(&(client.clone(), id.to_owned())) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(arm_error(
                "AuthorizationFailed",
                &format!(
                    "The client '{client}' with object id '{client}' does not have authorization to perform \
                     action 'Microsoft.Resources/subscriptions/read' over scope '/subscriptions/{id}' or the \
                     scope is invalid. If access was recently granted, please refresh your credentials."
                ),
            )),
        )
            .into_response();
    }
    axum::Json(json!({
        "id": format!("/subscriptions/{id}"),
        "subscriptionId": id,
        "tenantId": tenant,
        "displayName": name,
        "state": "Enabled",
        "authorizationSource": "RoleBased"
    }))
    .into_response()
}

pub(super) fn do_account(s: &State, bearer: &str) -> Response {
    if s.do_unscoped.contains(bearer) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(
                json!({"id": "forbidden", "message": "You are not authorized to perform this operation"}),
            ),
        )
            .into_response();
    }
    if !s.do_tokens.contains(bearer) {
        if s.echo {
            let message = format!("Unable to authenticate you with {bearer}");
            return (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({"id": "unauthorized", "message": message})),
            )
                .into_response();
        }
        return Endpoint::DoAccount.unauthorized();
    }
    axum::Json(json!({"account": {
        "droplet_limit": 25, "floating_ip_limit": 5, "email": "team@example.com", "name": "Fake Team",
        "uuid": "b6fr89dbf6d9156cace5f3c78dc9851d957381ef", "email_verified": true, "status": "active",
        "status_message": " ", "team": {"uuid": "5df3e3004a17e242b7c20ca6c9fc25b701a47ece", "name": "Fake Team"}
    }}))
    .into_response()
}

pub(super) fn linode_profile(s: &State, bearer: &str) -> Response {
    if !s.linode_tokens.contains(bearer) {
        if s.echo {
            let reason = format!("Invalid Token {bearer}");
            return (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({"errors": [{"reason": reason}]})),
            )
                .into_response();
        }
        return Endpoint::LinodeProfile.unauthorized();
    }
    axum::Json(json!({
        "username": "fake-user", "email": "fake-user@example.com", "uid": 1234, "restricted": false,
        "timezone": "UTC", "two_factor_auth": true
    }))
    .into_response()
}

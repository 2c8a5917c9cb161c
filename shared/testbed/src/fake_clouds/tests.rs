//! The Azure storage-account lookup and storage-scoped tokens, answered as Resource Manager and Entra ID do.

use super::*;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const TENANT: &str = "0f6b3c2e-4d1a-4b7e-9a35-1c2d3e4f5a60";
const APP: &str = "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c10";
const SUB: &str = "9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4";
const ACCOUNT_PATH: &str = "/subscriptions/9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4/resourceGroups/Acme-State/providers/Microsoft.Storage/storageAccounts/acmetfstate";

fn knobs() -> Knobs {
    let k = Knobs::default();
    k.trust_issuer("https://issuer.test");
    k.azure_app(TENANT, APP, "tenant:acme:");
    k.azure_subscription(TENANT, SUB, "acme-prod");
    k.azure_storage_account(
        SUB,
        "acme-state",
        "acmetfstate",
        "https://127.0.0.1:1/acmetfstate/",
    );
    k
}

/// An unsigned federated assertion (no key given to the fake: it checks the claims only).
fn assertion() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let part = |v: serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.x",
        part(json!({"alg": "RS256"})),
        part(
            json!({"iss": "https://issuer.test", "aud": "api://AzureADTokenExchange",
            "sub": "tenant:acme:cluster:c1", "exp": now + 300, "nbf": now - 1})
        )
    )
}

async fn call(
    k: &Knobs,
    method: Method,
    path: &str,
    bearer: &str,
    form: &str,
) -> (StatusCode, serde_json::Value) {
    let mut headers = HeaderMap::new();
    if !bearer.is_empty() {
        headers.insert("authorization", format!("Bearer {bearer}").parse().unwrap());
    }
    let r = answer(
        k,
        method,
        path.parse().unwrap(),
        headers,
        Bytes::from(form.to_owned()),
    )
    .await;
    let status = r.status();
    let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

async fn token(k: &Knobs, scope: &str) -> String {
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "client_credentials")
        .append_pair("client_id", APP)
        .append_pair("scope", scope)
        .append_pair(
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        )
        .append_pair("client_assertion", &assertion())
        .finish();
    let (status, body) = call(
        k,
        Method::POST,
        &format!("/{TENANT}/oauth2/v2.0/token"),
        "",
        &form,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["access_token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn storage_scoped_tokens_carry_entra_storage_claims_and_others_are_opaque() {
    let k = knobs();
    let storage = token(&k, "https://storage.azure.com/.default").await;
    let claims: serde_json::Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(storage.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["aud"], "https://storage.azure.com");
    assert_eq!(claims["iss"], format!("https://sts.windows.net/{TENANT}/"));
    assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());
    let arm = token(&k, "http://127.0.0.1:1/.default").await;
    assert!(arm.starts_with("fake-arm-token-"), "{arm}");
}

#[tokio::test]
async fn the_storage_account_lookup_answers_its_blob_endpoint_only_to_an_app_with_a_role() {
    let k = knobs();
    let (status, body) = call(&k, Method::GET, ACCOUNT_PATH, "not-issued", "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let bearer = token(&k, "http://127.0.0.1:1/.default").await;
    let (status, body) = call(&k, Method::GET, ACCOUNT_PATH, &bearer, "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no role yet: {body}");
    assert_eq!(body["error"]["code"], "AuthorizationFailed");
    k.azure_role(APP, SUB);
    // Resource group names are case-insensitive, as in Azure.
    let (status, body) = call(&k, Method::GET, ACCOUNT_PATH, &bearer, "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["properties"]["primaryEndpoints"]["blob"],
        "https://127.0.0.1:1/acmetfstate/"
    );
    let other = ACCOUNT_PATH.replace("acmetfstate", "othertfstate");
    let (status, body) = call(&k, Method::GET, &other, &bearer, "").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "ResourceNotFound");
}

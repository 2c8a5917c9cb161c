//! The routes of tenants' identities on clouds: the OIDC issuer's public documents, the target-access
//! settings and the cloud API tokens (entries of [`super::ROUTES`]).

use axum::routing::on;

use super::{ADMIN, READ};
use crate::handlers as h;
use crate::route::{Access, Body, Endpoint, Route, doc};

// Clouds fetch these anonymously to verify runs' identity tokens (`iss` is this api's URL).
pub(super) const OIDC_DISCOVERY: Route = Route {
    endpoint: Endpoint::OidcDiscovery,
    method: "GET",
    path: "/.well-known/openid-configuration",
    access: Access::Public,
    body: Body::Ignored,
    handler: |m| on(m, h::openid_configuration),
    audit: None,
    doc: doc(
        "The OpenID discovery document of Strato's run identity tokens",
        None,
        &[(200, "OidcDiscovery", "Issuer, JWKS URL, RS256")],
        &[404],
    ),
};

pub(super) const OIDC_JWKS: Route = Route {
    endpoint: Endpoint::OidcJwks,
    method: "GET",
    path: "/.well-known/jwks.json",
    access: Access::Public,
    body: Body::Ignored,
    handler: |m| on(m, h::jwks),
    audit: None,
    doc: doc(
        "The public keys that verify Strato's run identity tokens",
        None,
        &[(200, "Jwks", "The signing key's public half, by kid")],
        &[404],
    ),
};

pub(super) const TARGET_ACCESS: Route = Route {
    endpoint: Endpoint::GetTargetAccess,
    method: "GET",
    path: "/v1/tenant/target-access",
    access: READ,
    body: Body::Limited,
    handler: |m| on(m, h::get_target_access),
    audit: None,
    doc: doc(
        "Your issued external id and the trust policy your target roles need",
        None,
        &[(200, "TargetAccess", "Issued on first read, never replaced")],
        &[],
    ),
};

pub(super) const LIST_CLOUD_TOKENS: Route = Route {
    endpoint: Endpoint::ListCloudTokens,
    method: "GET",
    path: "/v1/tenant/cloud-tokens",
    access: READ,
    body: Body::Limited,
    handler: |m| on(m, h::list_cloud_tokens),
    audit: None,
    doc: doc(
        "Which cloud API tokens you have set, when and by whom (never their values)",
        None,
        &[(200, "CloudTokenList", "The stored tokens")],
        &[],
    ),
};

pub(super) const PUT_CLOUD_TOKEN: Route = Route {
    endpoint: Endpoint::PutCloudToken,
    method: "PUT",
    path: "/v1/tenant/cloud-tokens/{provider}",
    access: ADMIN,
    body: Body::Limited,
    handler: |m| on(m, h::put_cloud_token),
    audit: Some("cloud_token.put"),
    doc: doc(
        "Set or rotate your API token for digitalocean or linode (sealed, never shown again)",
        Some("CloudTokenRequest"),
        &[(200, "CloudToken", "Stored")],
        &[400, 404, 422],
    ),
};

pub(super) const DELETE_CLOUD_TOKEN: Route = Route {
    endpoint: Endpoint::DeleteCloudToken,
    method: "DELETE",
    path: "/v1/tenant/cloud-tokens/{provider}",
    access: ADMIN,
    body: Body::Keyed,
    handler: |m| on(m, h::delete_cloud_token),
    audit: Some("cloud_token.delete"),
    doc: doc(
        "Remove your API token for digitalocean or linode",
        None,
        &[(200, "Deleted", "Removed")],
        &[400, 404, 409, 422],
    ),
};

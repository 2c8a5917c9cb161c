//! DigitalOcean and Linode: one authenticated read with the tenant's API token.
//!
//! Error shapes: DigitalOcean answers `{"id": "unauthorized", "message": "Unable to authenticate you"}` (401)
//! and `{"id": "forbidden", "message": "You are not authorized to perform this operation"}` (403, a custom-
//! scoped token without the scope; `/v2/account` needs `account:read`), `too_many_requests` (429). Linode
//! answers `{"errors": [{"reason": "Invalid Token"}]}` (401) and `{"errors": [{"reason": "…"}]}` otherwise
//! (`/v4/profile` is readable with any scope, so a 403 there is an account restriction).

use super::CloudEndpoints;
use super::http::{Answer, send, unexpected};
use super::refusal::PreflightError;

pub(super) async fn digitalocean(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    token: &str,
) -> Result<String, PreflightError> {
    let a = send(
        http.get(format!("{}/v2/account", ep.digitalocean))
            .bearer_auth(token),
        "the DigitalOcean API",
    )
    .await?;
    if !a.ok() {
        let detail = format!("{}: {}", a.str("/id"), a.str("/message"));
        return Err(refusal(
            "DigitalOcean",
            "digitalocean",
            &a,
            &detail,
            "account:read",
        ));
    }
    let status = a.str("/account/status");
    if status == "locked" {
        return Err(PreflightError {
            what: format!(
                "the DigitalOcean account of the registered token is locked ({})",
                a.str("/account/status_message").trim()
            ),
            fix: "resolve the account's status with DigitalOcean (billing, verification): a locked account \
                  cannot create resources"
                .into(),
        });
    }
    let team = a.str("/account/team/name");
    let team = if team.is_empty() {
        String::new()
    } else {
        format!(", team {team}")
    };
    Ok(format!(
        "DigitalOcean account {} (uuid {}{team}), status {status}",
        a.str("/account/email"),
        a.str("/account/uuid"),
    ))
}

pub(super) async fn linode(
    http: &reqwest::Client,
    ep: &CloudEndpoints,
    token: &str,
) -> Result<String, PreflightError> {
    let a = send(
        http.get(format!("{}/v4/profile", ep.linode)).bearer_auth(token),
        "the Linode API",
    )
    .await?;
    if !a.ok() {
        let reasons: Vec<&str> = a
            .json
            .pointer("/errors")
            .and_then(|e| e.as_array())
            .map(|e| {
                e.iter()
                    .filter_map(|x| x.get("reason").and_then(|r| r.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        return Err(refusal("Linode", "linode", &a, &reasons.join("; "), "any"));
    }
    let restricted = if a.json.get("restricted").and_then(|r| r.as_bool()) == Some(true) {
        " (a restricted user: its grants limit what the token can create)"
    } else {
        ""
    };
    Ok(format!(
        "Linode user {} ({}){restricted}",
        a.str("/username"),
        a.str("/email")
    ))
}

fn refusal(cloud: &str, provider: &str, a: &Answer, detail: &str, read_scope: &str) -> PreflightError {
    let api = format!("the {cloud} API");
    let what = format!(
        "{api} refused the registered API token (HTTP {}: {detail})",
        a.status
    );
    let fix = match a.status {
        401 => format!(
            "the token is revoked, expired or mistyped: create a new {cloud} API token and register it with \
             PUT /v1/tenant/cloud-tokens/{provider}"
        ),
        403 if provider == "digitalocean" => format!(
            "the token lacks scopes: it needs {read_scope} for this check and the create/read/update/delete \
             scopes of the template's resources (kubernetes, vpc, …), or full access; register the new token \
             with PUT /v1/tenant/cloud-tokens/{provider}"
        ),
        403 => format!(
            "the token's user or scopes do not allow this: give the token read/write scopes for the template's \
             resources (Kubernetes, Linodes, VPCs, …) and register it with PUT /v1/tenant/cloud-tokens/{provider}"
        ),
        429 => format!("{api} is rate limiting this token: retry the operation in a minute"),
        _ => {
            return unexpected(
                &api,
                a,
                detail,
                "retry the operation; if it persists, check the cloud's status page",
            );
        }
    };
    PreflightError { what, fix }
}

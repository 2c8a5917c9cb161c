//! The platform operator's identity, checked by the router before any `/v1/admin/…` route runs
//! ([`Access::Platform`](crate::route::Access::Platform)), and what a suspended tenant may still do.
//!
//! An operator's token must pass all of these, each on its own enough to keep a tenant's token out:
//!
//! 1. **The operator's audience.** Its `aud` (or, for Cognito access tokens, `client_id`) is
//!    `STRATO_OPERATOR_AUDIENCE`: the app client of the operator's identity provider, never one tenants'
//!    users sign in with. Unset: no token is an operator's, every `/v1/admin` route answers 403 (closed by
//!    default). With `STRATO_OPERATOR_ISSUER` set, `iss` must be exactly that too.
//! 2. **No tenant.** The token has no tenant claim (`STRATO_TENANT_CLAIM`): every tenant token names its
//!    tenant (tenant routes refuse one that does not), so a token that does is a tenant's, whatever else it
//!    carries — the string `platform:admin` included.
//! 3. **The platform scope** `platform:admin` under the same prefix rules as the tenant scopes
//!    ([`crate::scopes`]), and a subject (`sub`): every operator action is recorded under it.
//!
//! Conversely an operator's token names no tenant, so every tenant route refuses it (401).

use std::collections::HashMap;

use crate::error::ApiError;
use crate::requests::truncate;
use crate::scopes::{self, Scope};
use strato_domain::ids::TenantId;

/// The log the platform's own actions (the template catalog's, its rollouts') go into: a tenant id no tenant
/// may register or carry (`crate::admin` refuses to register it, the router refuses a tenant token naming
/// it), read with `GET /v1/admin/tenants/strato-platform/audit`.
pub(crate) const PLATFORM_LOG: &str = "strato-platform";

/// The tenant an operator's path names (`/v1/admin/tenants/{tenant}…`), parsed; one that cannot be a
/// tenant id is a tenant that does not exist.
pub(crate) fn path_tenant(raw: &str) -> Result<TenantId, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::NotFound(format!("no tenant '{}'", truncate(raw, 64))))
}

/// Who the platform operator is: the audience (and optionally the issuer) of its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorIdentity {
    /// `STRATO_OPERATOR_AUDIENCE`: the operator's app client id.
    pub audience: Option<String>,
    /// `STRATO_OPERATOR_ISSUER`: checked when set.
    pub issuer: Option<String>,
}

/// The platform operator of a request (a request extension on `/v1/admin` routes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// The token's `sub`: who the audit log names for every operator action.
    pub subject: String,
}

/// Whether a claim holds `want`: the value itself, or one item of an array claim (API Gateway passes an
/// array as `[a b]`).
fn claim_holds(claims: &HashMap<String, String>, claim: &str, want: &str) -> bool {
    claims.get(claim).is_some_and(|v| {
        v.trim_matches(|c| c == '[' || c == ']')
            .split(|c: char| c.is_whitespace() || c == ',')
            .map(|s| s.trim_matches('"'))
            .any(|s| s == want)
    })
}

fn refused(detail: &str) -> ApiError {
    ApiError::NotOperator(format!(
        "{detail}; the /v1/admin routes are the platform operator's: a token from the operator's identity \
         provider (its audience), naming no tenant, with the 'platform:admin' scope"
    ))
}

/// The operator a token's claims are, or why they are not one (403; 401 without a subject).
pub fn authorize(
    claims: &HashMap<String, String>,
    identity: &OperatorIdentity,
    tenant_claim: &str,
    scope_claim: &str,
    scope_prefix: &str,
) -> Result<Operator, ApiError> {
    let Some(audience) = identity.audience.as_deref() else {
        return Err(refused(
            "this deployment has no operator identity (STRATO_OPERATOR_AUDIENCE is unset)",
        ));
    };
    if !claim_holds(claims, "aud", audience) && !claim_holds(claims, "client_id", audience) {
        return Err(refused("the token is not of the operator's audience"));
    }
    if let Some(issuer) = identity.issuer.as_deref()
        && claims.get("iss").map(String::as_str) != Some(issuer)
    {
        return Err(refused("the token is not from the operator's issuer"));
    }
    if claims.contains_key(tenant_claim) {
        return Err(refused(&format!(
            "the token names a tenant ('{tenant_claim}'): it is a tenant's"
        )));
    }
    if !scopes::allows(
        &scopes::granted(claims, scope_claim, scope_prefix),
        Scope::PlatformAdmin,
    ) {
        return Err(ApiError::Forbidden {
            need: Scope::PlatformAdmin,
        });
    }
    let subject = claims
        .get("sub")
        .filter(|s| !s.trim().is_empty())
        .cloned()
        .ok_or_else(|| ApiError::Unauthorized(crate::caller::NO_SUBJECT.into()))?;
    Ok(Operator { subject })
}

/// Whether a tenant call changes something: what a suspension refuses (and the only calls whose tenant's
/// suspension is read at all).
pub fn changes(method: &str, need: Scope) -> bool {
    !(method == "GET" || method == "HEAD" || need == Scope::ClustersRead)
}

/// Whether a suspended tenant may make this call: reads (GET, and the read-scoped POST of a WebSocket
/// ticket) yes, anything that changes something no (403 naming the reason).
pub fn suspension_allows(method: &str, need: Scope, suspended: Option<&str>) -> Result<(), ApiError> {
    match suspended {
        Some(reason) if changes(method, need) => Err(ApiError::Suspended(format!(
            "your tenant is suspended by the platform operator ({reason}): reads still work, changes are \
             refused until it is resumed; ask your platform team"
        ))),
        _ => Ok(()),
    }
}

/// The claims the access checks' tests (here and in `access`) make tokens of.
#[cfg(test)]
pub(crate) mod test_tokens {
    use std::collections::HashMap;

    pub(crate) fn claims(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// Tenant tokens as near an operator's as they come: one with `admin`, one carrying `platform:admin`,
    /// one of the operator's audience (`strato-operator`) with both.
    pub(crate) fn tenant_tokens() -> Vec<HashMap<String, String>> {
        let token = |aud: &str, scope: &str| {
            claims(&[
                ("aud", aud),
                ("sub", "u"),
                ("tenant_id", "acme"),
                ("scope", scope),
            ])
        };
        vec![
            token("strato-api", "admin"),
            token("strato-api", "platform:admin"),
            token("strato-operator", "platform:admin admin"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::test_tokens::{claims, tenant_tokens};
    use super::*;

    const AUD: &str = "strato-operator";

    fn identity() -> OperatorIdentity {
        OperatorIdentity {
            audience: Some(AUD.into()),
            issuer: None,
        }
    }

    fn check(c: &HashMap<String, String>, id: &OperatorIdentity) -> Result<Operator, ApiError> {
        authorize(c, id, "tenant_id", "scope", "")
    }

    fn operator() -> HashMap<String, String> {
        claims(&[("aud", AUD), ("sub", "ops-1"), ("scope", "platform:admin")])
    }

    #[test]
    fn an_operator_token_passes_and_names_its_subject() {
        assert_eq!(check(&operator(), &identity()).unwrap().subject, "ops-1");
        // Cognito access tokens carry the client id, not `aud`; arrays as API Gateway passes them.
        let cognito = claims(&[("client_id", AUD), ("sub", "ops-2"), ("scope", "platform:admin")]);
        assert_eq!(check(&cognito, &identity()).unwrap().subject, "ops-2");
        let array = claims(&[
            ("aud", "[other strato-operator]"),
            ("sub", "o"),
            ("scope", "platform:admin"),
        ]);
        assert!(check(&array, &identity()).is_ok());
    }

    /// Every tenant token — even one carrying `platform:admin`, of the operator's audience, with `admin` —
    /// is refused (403). That every route of the table whose access is the operator's applies this check is
    /// `access::tests::every_operator_route_refuses_every_tenant_token`.
    #[test]
    fn no_tenant_token_is_an_operator() {
        let mut tenant_tokens = tenant_tokens();
        tenant_tokens.push(claims(&[
            ("aud", "strato-api"),
            ("sub", "u"),
            ("scope", "platform:admin"),
        ]));
        for t in &tenant_tokens {
            let e = check(t, &identity()).unwrap_err();
            assert_eq!(e.status(), 403, "{t:?}: {e}");
        }
    }

    #[test]
    fn without_an_operator_identity_configured_nobody_is_an_operator() {
        let e = check(&operator(), &OperatorIdentity::default()).unwrap_err();
        assert_eq!(e.status(), 403);
        assert!(e.to_string().contains("STRATO_OPERATOR_AUDIENCE"), "{e}");
    }

    #[test]
    fn the_issuer_scope_and_subject_are_required() {
        let with_issuer = OperatorIdentity {
            issuer: Some("https://ops.example.com/".into()),
            ..identity()
        };
        assert!(check(&operator(), &with_issuer).is_err());
        let mut c = operator();
        c.insert("iss".into(), "https://ops.example.com/".into());
        assert!(check(&c, &with_issuer).is_ok());
        let no_scope = claims(&[("aud", AUD), ("sub", "o"), ("scope", "admin")]);
        assert!(matches!(
            check(&no_scope, &identity()),
            Err(ApiError::Forbidden {
                need: Scope::PlatformAdmin
            })
        ));
        let no_sub = claims(&[("aud", AUD), ("scope", "platform:admin")]);
        assert_eq!(check(&no_sub, &identity()).unwrap_err().status(), 401);
        // The prefix applies as for tenant scopes: a bare name is not the prefixed scope.
        assert!(
            authorize(
                &operator(),
                &identity(),
                "tenant_id",
                "scope",
                "https://api.example.com/"
            )
            .is_err()
        );
    }

    #[test]
    fn a_suspended_tenant_reads_but_cannot_change_anything() {
        let why = Some("unpaid invoice");
        assert!(suspension_allows("GET", Scope::ClustersRead, why).is_ok());
        assert!(suspension_allows("POST", Scope::ClustersRead, why).is_ok());
        for (method, need) in [
            ("POST", Scope::ClustersWrite),
            ("PATCH", Scope::ClustersWrite),
            ("DELETE", Scope::ClustersWrite),
            ("POST", Scope::OperationsApprove),
            ("PUT", Scope::Admin),
        ] {
            let e = suspension_allows(method, need, why).unwrap_err();
            assert_eq!(e.status(), 403);
            assert!(e.to_string().contains("unpaid invoice"), "{e}");
            assert!(suspension_allows(method, need, None).is_ok());
        }
    }
}

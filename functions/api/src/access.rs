//! Who may call a route, from the JWT authorizer's claims and the route's [`Access`]: the decision the
//! router's authorization layer applies to every request before anything of the route runs. Pure (claims
//! and configuration in, a caller or a refusal out), so it is tested route by route without a server.

use std::collections::HashMap;

use strato_domain::ids::TenantId;

use crate::caller::{Caller, NO_SUBJECT};
use crate::context::Config;
use crate::error::ApiError;
use crate::operator::Operator;
use crate::route::{Access, Route};

/// Who calls a route, as its access allows.
#[derive(Debug, Clone)]
pub(crate) enum Who {
    /// A public route (liveness, the OIDC documents) or the agent's (it checks its own token).
    Nobody,
    Tenant(Caller),
    Operator(Operator),
}

/// Who the claims are for `route`: a tenant route needs a token naming a valid tenant, with a subject where
/// the route changes something, granting the route's scope; an operator route needs the operator's token
/// ([`crate::operator::authorize`]).
pub(crate) fn check(
    route: &Route,
    claims: Option<&HashMap<String, String>>,
    config: &Config,
) -> Result<Who, ApiError> {
    let need = match route.access {
        Access::Public | Access::Agent => return Ok(Who::Nobody),
        Access::Platform => None,
        Access::Tenant(need) => Some(need),
    };
    let claims = claims.ok_or_else(|| ApiError::Unauthorized("the request carries no JWT claims".into()))?;
    let Some(need) = need else {
        return crate::operator::authorize(
            claims,
            &config.operator,
            &config.tenant_claim,
            &config.scope_claim,
            &config.scope_prefix,
        )
        .map(Who::Operator);
    };
    let claim = &config.tenant_claim;
    let raw = claims
        .get(claim)
        .ok_or_else(|| ApiError::Unauthorized(format!("the token has no '{claim}' claim")))?;
    let tenant = raw
        .parse::<TenantId>()
        // The platform's own audit log is no tenant's: a token naming it would read the operator's actions.
        .ok()
        .filter(|t| t.as_str() != crate::operator::PLATFORM_LOG)
        .ok_or_else(|| {
            // The raw value is not echoed: it is attacker-controlled and useless to a legitimate caller.
            ApiError::Unauthorized(format!("the token's '{claim}' claim is not a valid tenant id"))
        })?;
    let subject = claims.get("sub").filter(|s| !s.trim().is_empty()).cloned();
    if route.method != "GET" && subject.is_none() {
        return Err(ApiError::Unauthorized(NO_SUBJECT.into()));
    }
    let scopes = crate::scopes::granted(claims, &config.scope_claim, &config.scope_prefix);
    if !crate::scopes::allows(&scopes, need) {
        return Err(ApiError::Forbidden { need });
    }
    Ok(Who::Tenant(Caller {
        tenant,
        subject,
        traceparent: None,
        scopes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::test_tokens::{claims, tenant_tokens};
    use crate::routes::ROUTES;

    fn config() -> Config {
        Config::from_lookup(|k| match k {
            "STRATO_RESOURCE_PREFIX" => Some("strato-test".into()),
            "STRATO_OPERATOR_AUDIENCE" => Some("strato-operator".into()),
            _ => None,
        })
        .unwrap()
    }

    /// Every route of the table whose access is the operator's refuses every tenant token, even one that
    /// carries `platform:admin` or the operator's audience, and accepts the operator's.
    #[test]
    fn every_operator_route_refuses_every_tenant_token() {
        let c = config();
        let tenant_tokens = tenant_tokens();
        let operator = claims(&[
            ("aud", "strato-operator"),
            ("sub", "ops"),
            ("scope", "platform:admin"),
        ]);
        let mut n = 0;
        for r in ROUTES.iter().filter(|r| r.access == Access::Platform) {
            n += 1;
            for t in &tenant_tokens {
                let e = check(r, Some(t), &c).unwrap_err();
                assert_eq!(e.status(), 403, "{r:?} {t:?}: {e}");
            }
            assert!(check(r, None, &c).is_err(), "{r:?}");
            assert!(matches!(check(r, Some(&operator), &c), Ok(Who::Operator(o)) if o.subject == "ops"));
        }
        // Tenants (5), clusters, the template catalog (4).
        assert!(n >= 10, "the operator routes: {n}");
    }

    /// The platform's audit log is no tenant's: a token naming it is refused on every tenant route.
    #[test]
    fn a_tenant_token_naming_the_platform_log_is_refused() {
        let c = config();
        let t = claims(&[
            ("aud", "strato-api"),
            ("sub", "u"),
            ("tenant_id", crate::operator::PLATFORM_LOG),
            ("scope", "admin"),
        ]);
        for r in ROUTES.iter().filter(|r| matches!(r.access, Access::Tenant(_))) {
            let e = check(r, Some(&t), &c).unwrap_err();
            assert_eq!(e.status(), 401, "{r:?}: {e}");
        }
    }

    /// The operator's token names no tenant: every tenant route refuses it (401), whatever its scopes.
    #[test]
    fn every_tenant_route_refuses_the_operator_token() {
        let c = config();
        let operator = claims(&[
            ("aud", "strato-operator"),
            ("sub", "ops"),
            ("scope", "platform:admin admin clusters:write"),
        ]);
        for r in ROUTES.iter().filter(|r| matches!(r.access, Access::Tenant(_))) {
            let e = check(r, Some(&operator), &c).unwrap_err();
            assert_eq!(e.status(), 401, "{r:?}: {e}");
        }
    }
}

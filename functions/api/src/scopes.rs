//! Roles within a tenant, as OAuth scopes in the token (issue 22): every tenant route needs one, each route's
//! [`Access`](crate::routes::Access) names the one it needs, checked by the router's authorization layer
//! before anything of the route runs.
//!
//! | scope | allows |
//! |---|---|
//! | `clusters:read` | every read; WebSocket tickets (so live logs: a ticket is the only way to subscribe) |
//! | `clusters:write` | create, update, delete, retry, drift check, cancel, estimate (and reads) |
//! | `operations:approve` | approve or reject an operation awaiting approval (and reads) |
//! | `admin` | everything: also the tenant's webhook, changing its policies, restoring a state version and reading the audit log |
//! | `platform:admin` | the platform operator's `/v1/admin/…` routes only, and only from the operator's identity (see [`crate::operator`]); nothing of a tenant's |
//!
//! Scopes come from the claim `STRATO_SCOPE_CLAIM` (default `scope`, then `scp`), space- or comma-separated
//! (API Gateway passes an array claim as `[a b]`). A granted scope counts only when it is exactly
//! `STRATO_SCOPE_PREFIX` followed by the name (default prefix: none, so `admin` is `admin`). A resource
//! server's scopes (Cognito's `https://api.example.com/clusters:read`) need that prefix configured: matching
//! any scope by its last path segment would let another resource server's `…/admin` pass as Strato's.

use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    ClustersRead,
    ClustersWrite,
    OperationsApprove,
    Admin,
    /// The platform operator's scope: grants no tenant scope, and no tenant scope grants it.
    PlatformAdmin,
}

impl Scope {
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::ClustersRead => "clusters:read",
            Scope::ClustersWrite => "clusters:write",
            Scope::OperationsApprove => "operations:approve",
            Scope::Admin => "admin",
            Scope::PlatformAdmin => "platform:admin",
        }
    }

    /// The scopes that grant this one (a stronger scope includes the weaker).
    fn granted_by(self) -> &'static [Scope] {
        match self {
            Scope::ClustersRead => &[
                Scope::ClustersRead,
                Scope::ClustersWrite,
                Scope::OperationsApprove,
                Scope::Admin,
            ],
            // Approving is not writing: a writer cannot approve, an approver cannot write.
            Scope::OperationsApprove => &[Scope::OperationsApprove, Scope::Admin],
            Scope::ClustersWrite => &[Scope::ClustersWrite, Scope::Admin],
            Scope::Admin => &[Scope::Admin],
            Scope::PlatformAdmin => &[Scope::PlatformAdmin],
        }
    }
}

/// Every scope Strato knows.
const ALL: [Scope; 5] = [
    Scope::ClustersRead,
    Scope::ClustersWrite,
    Scope::OperationsApprove,
    Scope::Admin,
    Scope::PlatformAdmin,
];

/// Strato's scopes a token grants, from its claims: each granted string that is exactly `prefix` and a
/// scope's name. Anything else (`openid`, another resource server's scopes, look-alikes) grants nothing.
pub fn granted(claims: &HashMap<String, String>, claim: &str, prefix: &str) -> Vec<Scope> {
    let raw = claims
        .get(claim)
        .or_else(|| claims.get("scp"))
        .map(String::as_str)
        .unwrap_or("");
    let mut out: Vec<Scope> = raw
        .trim_matches(|c| c == '[' || c == ']')
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|s| s.trim_matches('"'))
        .filter_map(|s| s.strip_prefix(prefix))
        .filter_map(|name| ALL.into_iter().find(|scope| scope.as_str() == name))
        .collect();
    out.dedup();
    out
}

/// Whether `granted` includes `need` (or a scope that includes it).
pub fn allows(granted: &[Scope], need: Scope) -> bool {
    granted.iter().any(|g| need.granted_by().contains(g))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Endpoint::{self, *};
    use crate::routes::ROUTES;

    /// The scope the route table gives `e`.
    fn required(e: Endpoint) -> Option<Scope> {
        ROUTES.iter().find(|r| r.endpoint == e).and_then(|r| r.scope())
    }

    fn claims(scope: &str) -> HashMap<String, String> {
        HashMap::from([("scope".to_owned(), scope.to_owned())])
    }

    /// The scopes of a token whose `scope` claim is `scope`, without a prefix.
    fn granted_plain(scope: &str) -> Vec<Scope> {
        granted(&claims(scope), "scope", "")
    }

    #[test]
    fn stronger_scopes_include_weaker_ones_and_nothing_else() {
        let viewer = granted_plain("clusters:read");
        assert!(allows(&viewer, Scope::ClustersRead));
        assert!(!allows(&viewer, Scope::ClustersWrite));
        assert!(!allows(&viewer, Scope::Admin));
        let writer = granted_plain("clusters:write clusters:read");
        assert!(allows(&writer, Scope::ClustersWrite) && !allows(&writer, Scope::Admin));
        let admin = granted_plain("admin");
        assert!(
            [Scope::ClustersRead, Scope::ClustersWrite, Scope::Admin]
                .iter()
                .all(|s| allows(&admin, *s))
        );
        assert!(!allows(
            &granted(&HashMap::new(), "scope", ""),
            Scope::ClustersRead
        ));
        // Look-alikes grant nothing.
        assert!(!allows(
            &granted_plain("clusters:reader admin:no"),
            Scope::ClustersRead
        ));
    }

    #[test]
    fn approving_is_its_own_scope_neither_writers_have_nor_it_grants_writing() {
        let writer = granted_plain("clusters:write");
        assert!(!allows(&writer, Scope::OperationsApprove));
        let approver = granted_plain("operations:approve");
        assert!(allows(&approver, Scope::OperationsApprove) && allows(&approver, Scope::ClustersRead));
        assert!(!allows(&approver, Scope::ClustersWrite));
        assert!(allows(&granted_plain("admin"), Scope::OperationsApprove));
        assert_eq!(required(ApproveOperation), Some(Scope::OperationsApprove));
        assert_eq!(required(RejectOperation), Some(Scope::OperationsApprove));
    }

    #[test]
    fn claim_forms_api_gateway_and_identity_providers_use() {
        let array = granted_plain("[clusters:read admin]");
        assert_eq!(array, [Scope::ClustersRead, Scope::Admin]);
        let cognito = granted(
            &claims("openid https://api.example.com/clusters:write"),
            "scope",
            "https://api.example.com/",
        );
        assert_eq!(cognito, [Scope::ClustersWrite]);
        let scp = HashMap::from([("scp".to_owned(), "clusters:read,clusters:write".to_owned())]);
        assert!(allows(&granted(&scp, "scope", ""), Scope::ClustersWrite));
    }

    #[test]
    fn scopes_match_exactly_with_the_configured_prefix_never_by_their_last_segment() {
        // Another resource server's `admin` is not Strato's, with or without a prefix configured.
        for prefix in ["", "https://api.example.com/"] {
            let other = granted(
                &claims("https://other.example/admin https://other.example/clusters:write"),
                "scope",
                prefix,
            );
            assert!(other.is_empty(), "{prefix:?}: {other:?}");
            assert!(!allows(&other, Scope::Admin) && !allows(&other, Scope::ClustersRead));
        }
        // With a prefix, bare names and other prefixes grant nothing either.
        let prefix = "https://api.example.com/";
        assert!(granted(&claims("admin clusters:read"), "scope", prefix).is_empty());
        assert!(granted(&claims("https://api.example.com/x/admin"), "scope", prefix).is_empty());
        assert_eq!(
            granted(&claims("https://api.example.com/admin"), "scope", prefix),
            [Scope::Admin]
        );
    }

    #[test]
    fn the_platform_scope_and_the_tenant_scopes_grant_nothing_of_each_other() {
        let operator = granted_plain("platform:admin");
        assert_eq!(operator, [Scope::PlatformAdmin]);
        for s in [
            Scope::ClustersRead,
            Scope::ClustersWrite,
            Scope::OperationsApprove,
            Scope::Admin,
        ] {
            assert!(!allows(&operator, s), "{s:?}");
        }
        assert!(!allows(
            &granted_plain("admin clusters:write"),
            Scope::PlatformAdmin
        ));
        // The prefix applies to it as to the tenant scopes.
        let prefix = "https://api.example.com/";
        assert!(granted(&claims("platform:admin"), "scope", prefix).is_empty());
        assert_eq!(
            granted(&claims("https://api.example.com/platform:admin"), "scope", prefix),
            [Scope::PlatformAdmin]
        );
    }

    #[test]
    fn every_tenant_route_needs_a_scope() {
        for r in ROUTES {
            if r.access == crate::route::Access::Platform {
                assert_eq!(required(r.endpoint), Some(Scope::PlatformAdmin), "{r:?}");
                assert!(r.path.starts_with("/v1/admin/"), "{r:?}");
                continue;
            }
            assert!(!r.path.starts_with("/v1/admin"), "{r:?} is not the operator's");
            let public = matches!(
                r.endpoint,
                Health | OidcDiscovery | OidcJwks | AgentRegister | AgentHeartbeat | AgentCredential
            );
            assert_eq!(required(r.endpoint).is_none(), public, "{} {}", r.method, r.path);
            // Reads never need more than read (but the audit log, an admin's); nothing that changes a
            // cluster is open to a viewer.
            if r.endpoint == ListAudit {
                assert_eq!(required(r.endpoint), Some(Scope::Admin));
            } else if r.method == "GET" {
                assert_eq!(
                    required(r.endpoint),
                    Some(Scope::ClustersRead).filter(|_| !public)
                );
            } else if !public && r.endpoint != CreateWsTicket {
                assert_ne!(
                    required(r.endpoint),
                    Some(Scope::ClustersRead),
                    "{} {}",
                    r.method,
                    r.path
                );
            }
        }
    }
}

//! What the API's route table ([`crate::routes`]) is made of: every route written once — method, path, who may call it, how its body is
//! taken, its handler, what the audit log calls it and its documentation. The router ([`crate::router`])
//! serves exactly these routes, the authorization layer checks each one's [`Access`], and the OpenAPI
//! document ([`crate::openapi`]) is generated from the same entries.

use axum::routing::{MethodFilter, MethodRouter};

use crate::edge::AppState;
use crate::scopes::Scope;

/// A route's name: its OpenAPI `operationId`, and how tests and links refer to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    OidcDiscovery,
    OidcJwks,
    CreateCluster,
    ListClusters,
    GetCluster,
    UpdateCluster,
    DeleteCluster,
    RetryCluster,
    DriftCheck,
    GetKubeconfig,
    PlanCluster,
    ListStateVersions,
    RestoreStateVersion,
    ListClusterOperations,
    GetOperation,
    GetOperationTimeline,
    CancelOperation,
    ApproveOperation,
    RejectOperation,
    CreateEstimate,
    GetWebhook,
    PutWebhook,
    DeleteWebhook,
    ListPolicies,
    GetPolicy,
    PutPolicy,
    DeletePolicy,
    GetTargetAccess,
    ListCloudTokens,
    PutCloudToken,
    DeleteCloudToken,
    CreateWsTicket,
    ListTemplates,
    GetTemplate,
    AgentRegister,
    AgentHeartbeat,
    AgentCredential,
    ListAudit,
    AdminCreateTenant,
    AdminListTenants,
    AdminGetTenant,
    AdminUpdateTenant,
    AdminTenantAudit,
    AdminTenantPolicies,
    AdminPutTenantPolicy,
    AdminDeleteTenantPolicy,
    AdminListClusters,
    AdminListOperations,
    CreateRollout,
    ListRollouts,
    GetRollout,
    PauseRollout,
    ResumeRollout,
    AbortRollout,
    AdminCreateRollout,
    AdminListRollouts,
    AdminGetRollout,
    AdminPauseRollout,
    AdminResumeRollout,
    AdminAbortRollout,
    AdminListTemplates,
    AdminPublishTemplate,
    AdminDeprecateTemplate,
    AdminYankTemplate,
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, no token: the liveness probe.
    Public,
    /// The cluster agent, by its registration token or credential (no tenant JWT).
    Agent,
    /// A tenant's token granting this scope (or one that includes it).
    Tenant(Scope),
    /// The platform operator: a token from the operator's identity (its audience), naming no tenant, granting
    /// `platform:admin` ([`crate::operator`]). No tenant's token passes, whatever scopes it carries.
    Platform,
}

/// How a route takes its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Not read at all: the liveness probe answers without touching anything.
    Ignored,
    /// Refused over the size limit and unless declared JSON, then buffered for the handler.
    Limited,
    /// As `Limited`, and an `Idempotency-Key` replays the first answer: routes that change something.
    Keyed,
    /// As `Limited` but up to the bundle limit (a template bundle, base64 in JSON): see
    /// [`crate::router::MAX_BUNDLE_BODY_BYTES`].
    Bundle,
}

/// What one route takes and answers, for the OpenAPI document.
#[derive(Debug, Clone, Copy)]
pub struct Doc {
    pub summary: &'static str,
    /// The request body's schema, if it has one.
    pub body: Option<&'static str>,
    /// Success answers: status, schema, description.
    pub ok: &'static [(u16, &'static str, &'static str)],
    /// Problem answers beyond the ones every route but `/healthz` shares (401, 413, 500). Keyed routes add
    /// 400 (unusable key), 409 (still in progress) and 422 (key reused); every POST, PUT and PATCH adds 415
    /// (a body not declared JSON); a tenant route adds 403.
    pub errors: &'static [u16],
    pub query: &'static [(&'static str, &'static str)],
    /// How the route behaves beyond its summary, when that needs saying.
    pub description: Option<&'static str>,
}

/// One route.
#[derive(Clone, Copy)]
pub struct Route {
    pub endpoint: Endpoint,
    pub method: &'static str,
    /// Path template; `{x}` matches one non-empty segment.
    pub path: &'static str,
    pub access: Access,
    pub body: Body,
    /// The handler on the route's method (axum answers HEAD with a GET's handler).
    pub handler: fn(MethodFilter) -> MethodRouter<AppState>,
    /// The audit log's action for a call; `None` for routes that change nothing (reads, tickets,
    /// estimates) and the agent's own routes (no tenant principal).
    pub audit: Option<&'static str>,
    pub doc: Doc,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({:?})", self.method, self.path, self.endpoint)
    }
}

impl Route {
    /// The scope a tenant or operator route needs; `None` for the public and the agent's routes.
    pub const fn scope(&self) -> Option<Scope> {
        match self.access {
            Access::Tenant(s) => Some(s),
            Access::Platform => Some(Scope::PlatformAdmin),
            Access::Public | Access::Agent => None,
        }
    }
}

pub(crate) const fn doc(
    summary: &'static str,
    body: Option<&'static str>,
    ok: &'static [(u16, &'static str, &'static str)],
    errors: &'static [u16],
) -> Doc {
    Doc {
        summary,
        body,
        ok,
        errors,
        query: &[],
        description: None,
    }
}

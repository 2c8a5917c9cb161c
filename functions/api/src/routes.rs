//! The API's route table, one entry per route (the types are in [`crate::route`]), and the lookup of a
//! request's entry.

use axum::routing::on;

use crate::handlers as h;
use crate::route::{Access, Body, Doc, Endpoint, Route, doc};
use crate::scopes::Scope;

const READ: Access = Access::Tenant(Scope::ClustersRead);
const WRITE: Access = Access::Tenant(Scope::ClustersWrite);
const APPROVE: Access = Access::Tenant(Scope::OperationsApprove);
const ADMIN: Access = Access::Tenant(Scope::Admin);
mod admin;
mod agent;
mod identity;
mod rollouts;
mod state;
mod texts;
use texts::{
    APPROVE_DESCRIPTION, AUDIT_DESCRIPTION, KUBECONFIG_DESCRIPTION, NEXT, OPERATIONS_DESCRIPTION,
    PLAN_DESCRIPTION, POLICY_DESCRIPTION, QUEUED, TIMELINE_DESCRIPTION, UPDATE_DESCRIPTION,
};

/// Every route, in the order the OpenAPI document lists them.
pub const ROUTES: &[Route] = &[
    Route {
        endpoint: Endpoint::Health,
        method: "GET",
        path: "/healthz",
        access: Access::Public,
        body: Body::Ignored,
        handler: |m| on(m, h::health),
        audit: None,
        doc: doc("Liveness", None, &[(200, "Health", "Alive")], &[]),
    },
    identity::OIDC_DISCOVERY,
    identity::OIDC_JWKS,
    Route {
        endpoint: Endpoint::CreateCluster,
        method: "POST",
        path: "/v1/clusters",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::create_cluster),
        audit: Some("cluster.create"),
        doc: doc(
            "Create a cluster",
            Some("CreateClusterRequest"),
            &[(202, "Accepted", QUEUED)],
            &[400, 409, 422, 429],
        ),
    },
    Route {
        endpoint: Endpoint::ListClusters,
        method: "GET",
        path: "/v1/clusters",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::list_clusters),
        audit: None,
        doc: Doc {
            query: &[
                (
                    "state",
                    "Only clusters in this state (any case: `active` is `ACTIVE`); `DELETED` lists deleted ones",
                ),
                (
                    "name",
                    "Only the cluster of this name (how a client finds a cluster's id by its name)",
                ),
                (
                    "include_deleted",
                    "`true`: DELETED clusters too; default `false` (a listing without `state` leaves them out)",
                ),
                ("limit", "Page size, 1-100 (default 20)"),
                NEXT,
            ],
            ..doc(
                "List your clusters, newest first",
                None,
                &[(200, "ClusterPage", "A page")],
                &[400],
            )
        },
    },
    Route {
        endpoint: Endpoint::GetCluster,
        method: "GET",
        path: "/v1/clusters/{id}",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::get_cluster),
        audit: None,
        doc: doc("Read a cluster", None, &[(200, "Cluster", "The cluster")], &[404]),
    },
    Route {
        endpoint: Endpoint::UpdateCluster,
        method: "PATCH",
        path: "/v1/clusters/{id}",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::update_cluster),
        audit: Some("cluster.update"),
        doc: Doc {
            description: Some(UPDATE_DESCRIPTION),
            ..doc(
                "Change a cluster's variables, template version or drift settings",
                Some("UpdateClusterRequest"),
                &[
                    (200, "Cluster", "Settings alone changed; no operation"),
                    (202, "Accepted", QUEUED),
                ],
                &[400, 404, 409, 412, 422, 429],
            )
        },
    },
    Route {
        endpoint: Endpoint::DeleteCluster,
        method: "DELETE",
        path: "/v1/clusters/{id}",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::delete_cluster),
        audit: Some("cluster.delete"),
        doc: doc(
            "Delete a cluster",
            None,
            &[(202, "Accepted", QUEUED)],
            &[400, 404, 409, 422, 429],
        ),
    },
    Route {
        endpoint: Endpoint::RetryCluster,
        method: "POST",
        path: "/v1/clusters/{id}/retry",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::retry_cluster),
        audit: Some("cluster.retry"),
        doc: doc(
            "Retry a FAILED cluster's create",
            None,
            &[(202, "Accepted", QUEUED)],
            &[400, 404, 409, 422, 429],
        ),
    },
    Route {
        endpoint: Endpoint::DriftCheck,
        method: "POST",
        path: "/v1/clusters/{id}/drift-check",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::drift_check),
        audit: Some("cluster.drift_check"),
        doc: doc(
            "Check an ACTIVE cluster for drift now",
            None,
            &[(202, "Accepted", QUEUED)],
            &[400, 404, 409, 422, 429],
        ),
    },
    Route {
        endpoint: Endpoint::GetKubeconfig,
        method: "GET",
        path: "/v1/clusters/{id}/kubeconfig",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::get_kubeconfig),
        audit: None,
        doc: Doc {
            description: Some(KUBECONFIG_DESCRIPTION),
            query: &[
                (
                    "role_arn",
                    "The role the exec plugin assumes to sign tokens; `none`: your own AWS identity. Default: \
                     the cluster's target role, if it has one",
                ),
                ("aws_profile", "The AWS CLI profile the exec plugin runs with"),
                ("context", "The context's name (default `strato-<cluster name>`)"),
            ],
            ..doc(
                "Get a kubeconfig for the cluster's Kubernetes API",
                None,
                &[(200, "Kubeconfig", "The kubeconfig and what it is made of")],
                &[400, 404, 409],
            )
        },
    },
    Route {
        endpoint: Endpoint::PlanCluster,
        method: "POST",
        path: "/v1/clusters/{id}/plan",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::plan_cluster),
        audit: Some("cluster.plan"),
        doc: Doc {
            description: Some(PLAN_DESCRIPTION),
            ..doc(
                "Preview a change: plan an update of variables or template version, apply nothing",
                Some("UpdateClusterRequest"),
                &[(202, "Accepted", QUEUED)],
                &[400, 404, 409, 422, 429],
            )
        },
    },
    state::LIST,
    state::RESTORE,
    Route {
        endpoint: Endpoint::ListClusterOperations,
        method: "GET",
        path: "/v1/clusters/{id}/operations",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::list_cluster_operations),
        audit: None,
        doc: Doc {
            query: &[("limit", "Page size, 1-200 (default 50)"), NEXT],
            description: Some(OPERATIONS_DESCRIPTION),
            ..doc(
                "List a cluster's operations, newest first",
                None,
                &[(200, "OperationList", "A page")],
                &[400, 404],
            )
        },
    },
    Route {
        endpoint: Endpoint::GetOperation,
        method: "GET",
        path: "/v1/operations/{id}",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::get_operation),
        audit: None,
        doc: doc(
            "Read an operation",
            None,
            &[(200, "Operation", "The operation")],
            &[404],
        ),
    },
    Route {
        endpoint: Endpoint::GetOperationTimeline,
        method: "GET",
        path: "/v1/operations/{id}/timeline",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::get_operation_timeline),
        audit: None,
        doc: Doc {
            description: Some(TIMELINE_DESCRIPTION),
            ..doc(
                "Read an operation's timeline",
                None,
                &[(200, "Timeline", "Its moments, oldest first")],
                &[404],
            )
        },
    },
    Route {
        endpoint: Endpoint::CancelOperation,
        method: "POST",
        path: "/v1/operations/{id}/cancel",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::cancel_operation),
        audit: Some("operation.cancel"),
        doc: doc(
            "Cancel an operation",
            None,
            &[
                (200, "Operation", "Cancelled before it started"),
                (
                    202,
                    "Operation",
                    "Cancel requested; the runner stops at a safe point",
                ),
            ],
            &[400, 404, 409, 422],
        ),
    },
    Route {
        endpoint: Endpoint::ApproveOperation,
        method: "POST",
        path: "/v1/operations/{id}/approve",
        access: APPROVE,
        body: Body::Keyed,
        handler: |m| on(m, h::approve_operation),
        audit: Some("operation.approve"),
        doc: Doc {
            description: Some(APPROVE_DESCRIPTION),
            ..doc(
                "Approve an operation's plan",
                Some("DecisionRequest"),
                &[(202, "Operation", "Approved; a runner applies exactly that plan")],
                &[400, 403, 404, 409, 422],
            )
        },
    },
    Route {
        endpoint: Endpoint::RejectOperation,
        method: "POST",
        path: "/v1/operations/{id}/reject",
        access: APPROVE,
        body: Body::Keyed,
        handler: |m| on(m, h::reject_operation),
        audit: Some("operation.reject"),
        doc: doc(
            "Reject an operation's plan",
            Some("DecisionRequest"),
            &[(
                202,
                "Operation",
                "Rejected; the operation ends cancelled, nothing applied",
            )],
            &[400, 404, 409, 422],
        ),
    },
    Route {
        endpoint: Endpoint::CreateEstimate,
        method: "POST",
        path: "/v1/estimates",
        access: WRITE,
        body: Body::Keyed,
        handler: |m| on(m, h::create_estimate),
        audit: None,
        doc: doc(
            "Estimate a spec's monthly cost",
            Some("EstimateRequest"),
            &[(202, "EstimateAccepted", QUEUED)],
            &[400, 409, 422, 429],
        ),
    },
    Route {
        endpoint: Endpoint::GetWebhook,
        method: "GET",
        path: "/v1/webhook",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::get_webhook),
        audit: None,
        doc: doc(
            "Read your webhook",
            None,
            &[(200, "Webhook", "The webhook")],
            &[404],
        ),
    },
    Route {
        endpoint: Endpoint::PutWebhook,
        method: "PUT",
        path: "/v1/webhook",
        access: ADMIN,
        body: Body::Limited,
        handler: |m| on(m, h::put_webhook),
        audit: Some("webhook.put"),
        doc: doc(
            "Set your webhook",
            Some("WebhookRequest"),
            &[(200, "Webhook", "Set")],
            &[400, 422],
        ),
    },
    Route {
        endpoint: Endpoint::DeleteWebhook,
        method: "DELETE",
        path: "/v1/webhook",
        access: ADMIN,
        body: Body::Keyed,
        handler: |m| on(m, h::delete_webhook),
        audit: Some("webhook.delete"),
        doc: doc(
            "Remove your webhook",
            None,
            &[(200, "Deleted", "Removed")],
            &[400, 404, 409, 422],
        ),
    },
    Route {
        endpoint: Endpoint::ListPolicies,
        method: "GET",
        path: "/v1/policies",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::list_policies),
        audit: None,
        doc: doc(
            "List the policies your requests and plans are checked against (platform and yours)",
            None,
            &[(200, "PolicyList", "The policies and their version")],
            &[],
        ),
    },
    Route {
        endpoint: Endpoint::GetPolicy,
        method: "GET",
        path: "/v1/policies/{name}",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::get_policy),
        audit: None,
        doc: doc(
            "Read one of your policies",
            None,
            &[(200, "Policy", "The policy")],
            &[404],
        ),
    },
    Route {
        endpoint: Endpoint::PutPolicy,
        method: "PUT",
        path: "/v1/policies/{name}",
        access: ADMIN,
        body: Body::Limited,
        handler: |m| on(m, h::put_policy),
        audit: Some("policy.put"),
        doc: Doc {
            description: Some(POLICY_DESCRIPTION),
            ..doc(
                "Create or replace one of your policies (compile-checked)",
                Some("PolicyRequest"),
                &[(200, "Policy", "Stored")],
                &[400, 422],
            )
        },
    },
    Route {
        endpoint: Endpoint::DeletePolicy,
        method: "DELETE",
        path: "/v1/policies/{name}",
        access: ADMIN,
        body: Body::Keyed,
        handler: |m| on(m, h::delete_policy),
        audit: Some("policy.delete"),
        doc: doc(
            "Remove one of your policies",
            None,
            &[(200, "Deleted", "Removed")],
            &[400, 404, 409, 422],
        ),
    },
    identity::TARGET_ACCESS,
    identity::LIST_CLOUD_TOKENS,
    identity::PUT_CLOUD_TOKEN,
    identity::DELETE_CLOUD_TOKEN,
    // A ticket is not kept for replay: the stored answer would be a credential, and a new one is harmless.
    Route {
        endpoint: Endpoint::CreateWsTicket,
        method: "POST",
        path: "/v1/ws-tickets",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::create_ws_ticket),
        audit: None,
        doc: doc(
            "Get a WebSocket ticket",
            None,
            &[(201, "WsTicket", "A short-lived ticket")],
            &[],
        ),
    },
    Route {
        endpoint: Endpoint::ListTemplates,
        method: "GET",
        path: "/v1/templates",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::list_templates),
        audit: None,
        doc: doc(
            "List published templates",
            None,
            &[(200, "TemplateList", "Templates")],
            &[],
        ),
    },
    Route {
        endpoint: Endpoint::GetTemplate,
        method: "GET",
        path: "/v1/templates/{name}",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::get_template),
        audit: None,
        doc: Doc {
            query: &[("version", "A published version (default: the latest)")],
            ..doc(
                "Read a template's variable schema",
                None,
                &[(200, "TemplateDetail", "The template")],
                &[400, 404],
            )
        },
    },
    agent::REGISTER,
    agent::HEARTBEAT,
    agent::CREDENTIAL,
    Route {
        endpoint: Endpoint::ListAudit,
        method: "GET",
        path: "/v1/audit",
        access: ADMIN,
        body: Body::Limited,
        handler: |m| on(m, h::list_audit),
        audit: None,
        doc: Doc {
            query: &[
                ("cluster", "Only entries about this cluster"),
                (
                    "since",
                    "Only entries at or after this time: RFC 3339, or a duration back from now (15m, 24h, 7d)",
                ),
                (
                    "actor",
                    "Only entries of this principal (a token's `sub`, or `strato:<function>`)",
                ),
                ("limit", "Page size, 1-100 (default 100)"),
                NEXT,
            ],
            description: Some(AUDIT_DESCRIPTION),
            ..doc(
                "Read your tenant's audit log, newest first",
                None,
                &[(
                    200,
                    "AuditPage",
                    "A page (it may hold fewer than `limit` entries and still have a `next`)",
                )],
                &[400, 422],
            )
        },
    },
    admin::CREATE_TENANT,
    admin::LIST_TENANTS,
    admin::GET_TENANT,
    admin::UPDATE_TENANT,
    admin::TENANT_AUDIT,
    admin::TENANT_POLICIES,
    admin::PUT_TENANT_POLICY,
    admin::DELETE_TENANT_POLICY,
    admin::LIST_CLUSTERS,
    admin::LIST_OPERATIONS,
    rollouts::CREATE,
    rollouts::LIST,
    rollouts::GET,
    rollouts::PAUSE,
    rollouts::RESUME,
    rollouts::ABORT,
    rollouts::ADMIN_CREATE,
    rollouts::ADMIN_LIST,
    rollouts::ADMIN_GET,
    rollouts::ADMIN_PAUSE,
    rollouts::ADMIN_RESUME,
    rollouts::ADMIN_ABORT,
    admin::LIST_TEMPLATES,
    admin::PUBLISH_TEMPLATE,
    admin::DEPRECATE_TEMPLATE,
    admin::YANK_TEMPLATE,
];

/// The entry of [`ROUTES`] for a method and a matched path template. HEAD is GET without the body (axum
/// answers it with the GET handler), so it is GET's entry: the same scope, the same audit (none).
pub(crate) fn route_for(method: &str, matched: &str) -> Option<&'static Route> {
    let method = if method == "HEAD" { "GET" } else { method };
    ROUTES.iter().find(|r| r.path == matched && r.method == method)
}

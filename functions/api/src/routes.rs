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
const QUEUED: &str = "Accepted: the operation is queued; `Location` points at it";
const NEXT: (&str, &str) = (
    "next",
    "The `next` of the previous page; absent or empty: the first page",
);

/// What a PATCH does when operations are still open, and how clients make it conditional.
const UPDATE_DESCRIPTION: &str = "Variables merge into the newest spec requested (RFC 7396: `null` removes \
one): while an update (or the create) is still queued or running, a second PATCH builds on that operation's \
spec, not only on what was last applied, so it keeps the first one's changes; the operations run in order. \
Send `If-Match` with the cluster's `ETag` (its `version`, quoted) to change the cluster only if nobody \
changed it since you read it: another version answers 412 and nothing is written. `approval` may tighten \
what applies; lowering it (taking back the cluster's own `required`) needs the `admin` scope (403 naming \
`approval` otherwise) and is audited, and no cluster setting lowers a template's or tenant's `required` \
(422).";

/// What a preview does and does not do.
const PLAN_DESCRIPTION: &str = "The body is a PATCH's `variables` and/or `template_version` (drift, expiry \
and approval settings are refused: no plan can preview them), validated and checked against the request \
policies exactly as that PATCH; every problem answers in one 422 and nothing is queued. Accepted, it queues a \
`plan` operation whose `spec` is the proposed one, in turn with the cluster's other operations. The runner \
plans it against the cluster's current state and records on the operation its `preview`: each resource to \
create, update, delete or replace by address, the plan policies' results (a denial means the update would \
be refused; the preview itself succeeds) and the monthly cost now, after, and the difference. Nothing is \
applied: the cluster's spec, state, outputs and drift flag do not change, and no approval is asked for.";

/// Where the timeline's moments come from, so clients know which can be missing.
const TIMELINE_DESCRIPTION: &str = "Derived from the operation's record: queued (created), parked (while it \
waits), dispatched and runner_started (the latest attempt), each step's start and finish, the latest \
heartbeat while open, notes the control plane recorded, and the end with its error category. A moment that \
was not recorded (e.g. an operation cancelled before dispatch has no dispatched) is absent. Another \
tenant's operation answers 404, like a missing one.";

/// How long a cluster's history is kept.
const KUBECONFIG_DESCRIPTION: &str = "The endpoint and CA come from the cluster's outputs, as its template's \
     `[connect]` names them. No credential is in it: its exec plugin (`aws eks get-token`) signs a short-lived token \
     on your machine with your AWS identity (or the role asked for). 409 while the cluster has no endpoint yet, \
     once it is deleted, or when its template says nothing about connecting.";
const OPERATIONS_DESCRIPTION: &str = "Paged, newest first. Finished operations are kept for the deployment's retention (default 90 days) and then deleted; open ones are always listed. The audit log keeps who did what for longer.";

/// How an approval works, so approvers know what they approve.
const APPROVE_DESCRIPTION: &str = "Only for an operation in `awaiting_approval` (its `approval` shows the \
plan: resources to add, change and destroy by address, and the estimate). A new runner applies exactly the \
approved plan, verified by its SHA-256; if the cluster's state changed since the plan, it plans again and the \
operation waits for approval again. Needs the `operations:approve` scope; unless the deployment turns \
separation of duties off, the operation's requester cannot approve it (403 `self-approval`). An expired \
request answers 409. Name the plan you reviewed (`plan_sha256`, and `round` and `stage`, from the \
operation's `approval`): if another one is pending by then (a new round after a re-plan, another stage), \
nothing is decided and the answer is 409 `plan-changed` naming the pending plan's sha256, round and stage.";

/// What the audit log holds and how long.
const AUDIT_DESCRIPTION: &str = "Every mutating call (refused ones too, with their status) and every action \
Strato takes on its own (`strato:dispatcher`, `strato:scheduler`, `strato:status`), append-only: no API or function can \
change or delete an entry. Entries expire after the deployment's retention (default 365 days).";

/// What a policy is and where it applies.
const POLICY_DESCRIPTION: &str = "Rego v1, evaluated in-process. `package strato.request` policies are \
checked on every create, update and delete before anything is written (a `deny` answers 422 listing each \
message); `package strato.plan` policies are checked by the runner on the plan and its estimate before apply \
(a `deny` fails the operation at step `policy`). `warn` messages become notes. A source that does not compile \
answers 422 naming `source`.";

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
    Route {
        endpoint: Endpoint::ListStateVersions,
        method: "GET",
        path: "/v1/clusters/{id}/state-versions",
        access: READ,
        body: Body::Limited,
        handler: |m| on(m, h::list_state_versions),
        audit: None,
        doc: doc(
            "List the Terraform state versions of a cluster",
            None,
            &[(200, "StateVersions", "Versions and past restores")],
            &[404],
        ),
    },
    Route {
        endpoint: Endpoint::RestoreStateVersion,
        method: "POST",
        path: "/v1/clusters/{id}/state-versions/{version}/restore",
        access: ADMIN,
        body: Body::Keyed,
        handler: |m| on(m, h::restore_state_version),
        audit: Some("state.restore"),
        doc: doc(
            "Restore a Terraform state version",
            None,
            &[(200, "StateRestoreResult", "Restored")],
            &[400, 404, 409, 422],
        ),
    },
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
    Route {
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
    },
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
    Route {
        endpoint: Endpoint::AgentRegister,
        method: "POST",
        path: "/v1/agent/register",
        access: Access::Agent,
        body: Body::Limited,
        handler: |m| on(m, h::agent_register),
        audit: None,
        doc: doc(
            "Register a cluster's agent (agent token)",
            Some("AgentReportRequest"),
            &[(200, "AgentReport", "Registered")],
            &[400, 409, 410],
        ),
    },
    Route {
        endpoint: Endpoint::AgentHeartbeat,
        method: "POST",
        path: "/v1/agent/heartbeat",
        access: Access::Agent,
        body: Body::Limited,
        handler: |m| on(m, h::agent_heartbeat),
        audit: None,
        doc: doc(
            "A cluster agent's heartbeat (agent token)",
            Some("AgentReportRequest"),
            &[(200, "AgentReport", "Recorded")],
            &[400, 409],
        ),
    },
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
];

/// The entry of [`ROUTES`] for a method and a matched path template. HEAD is GET without the body (axum
/// answers it with the GET handler), so it is GET's entry: the same scope, the same audit (none).
pub(crate) fn route_for(method: &str, matched: &str) -> Option<&'static Route> {
    let method = if method == "HEAD" { "GET" } else { method };
    ROUTES.iter().find(|r| r.path == matched && r.method == method)
}

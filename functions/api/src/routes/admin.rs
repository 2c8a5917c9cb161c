//! The platform operator's routes (entries of [`super::ROUTES`]): `/v1/admin/…`, each
//! [`Access::Platform`] — only the operator's own tokens ([`crate::operator`]), never a tenant's. Their
//! bodies are read as the others' but without `Idempotency-Key` (its records are keyed by tenant): a
//! create is idempotent by its id, a PATCH by what it sets.

use axum::routing::on;

use super::texts::NEXT;
use crate::admin::handlers as h;
use crate::route::{Access, Body, Doc, Endpoint, Route, doc};

const OPERATOR: &str = "Only the platform operator's tokens: of the operator's audience \
(`STRATO_OPERATOR_AUDIENCE`), naming no tenant, granting `platform:admin`. Every tenant token is refused (403), \
whatever its scopes.";

const TENANT_BODY: &str = "Every member is optional (but `id` on create): one left out is left as it is, `null` \
puts it back to the platform default. The quotas, budget, approval and lifetime defaults are the tenant's own \
settings, read by every request it makes. `suspended: true` (with a `reason`) refuses the tenant's changes \
with a 403 naming the reason while its reads keep working; `false` resumes it. Every call is recorded in the \
tenant's audit log under the operator's `sub`.";

pub(super) const CREATE_TENANT: Route = Route {
    endpoint: Endpoint::AdminCreateTenant,
    method: "POST",
    path: "/v1/admin/tenants",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::create_tenant),
    audit: Some("admin.tenant.create"),
    doc: Doc {
        description: Some(TENANT_BODY),
        ..doc(
            "Register a tenant (idempotent by id) with its settings",
            Some("AdminTenantRequest"),
            &[
                (201, "AdminTenant", "Registered"),
                (
                    200,
                    "AdminTenant",
                    "Registered before; the body's settings applied",
                ),
            ],
            &[400, 422],
        )
    },
};

pub(super) const LIST_TENANTS: Route = Route {
    endpoint: Endpoint::AdminListTenants,
    method: "GET",
    path: "/v1/admin/tenants",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::list_tenants),
    audit: None,
    doc: Doc {
        description: Some(OPERATOR),
        query: &[("limit", "Page size, 1-100 (default 50)"), NEXT],
        ..doc(
            "List tenants with their settings and usage",
            None,
            &[(
                200,
                "AdminTenantPage",
                "A page (it may hold fewer than `limit` and still have a `next`)",
            )],
            &[400, 422],
        )
    },
};

pub(super) const GET_TENANT: Route = Route {
    endpoint: Endpoint::AdminGetTenant,
    method: "GET",
    path: "/v1/admin/tenants/{tenant}",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::get_tenant),
    audit: None,
    doc: doc(
        "Read a tenant's settings and usage",
        None,
        &[(200, "AdminTenant", "The tenant")],
        &[404],
    ),
};

pub(super) const UPDATE_TENANT: Route = Route {
    endpoint: Endpoint::AdminUpdateTenant,
    method: "PATCH",
    path: "/v1/admin/tenants/{tenant}",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::update_tenant),
    audit: Some("admin.tenant.update"),
    doc: Doc {
        description: Some(TENANT_BODY),
        ..doc(
            "Change a tenant's quotas, budget, defaults; suspend or resume it",
            Some("AdminTenantRequest"),
            &[(200, "AdminTenant", "Changed")],
            &[400, 404, 422],
        )
    },
};

pub(super) const TENANT_AUDIT: Route = Route {
    endpoint: Endpoint::AdminTenantAudit,
    method: "GET",
    path: "/v1/admin/tenants/{tenant}/audit",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::tenant_audit),
    audit: None,
    doc: Doc {
        query: &[
            ("cluster", "Only entries about this cluster"),
            (
                "since",
                "Only entries at or after this time: RFC 3339, or a duration back from now",
            ),
            (
                "actor",
                "Only entries of this principal (an operator's `sub` for the operator's own actions)",
            ),
            ("limit", "Page size, 1-100 (default 100)"),
            NEXT,
        ],
        ..doc(
            "Read a tenant's audit log (the operator's actions on it included), newest first",
            None,
            &[(200, "AuditPage", "A page")],
            &[400, 422],
        )
    },
};

const TENANT_POLICY: &str = "A policy the platform operator sets for one tenant: Rego v1 in `package strato.request` \
(checked on the tenant's creates, updates and deletes) or `package strato.plan` (checked on its plans, before \
apply), compile-checked here, evaluated beside the platform's and the tenant's own as `operator/<name>`. The \
tenant reads it in `GET /v1/policies` (owner `operator`) and cannot change or remove it. At most 64 KiB of \
them per tenant. Recorded in the tenant's audit log under the operator's `sub`.";

pub(super) const TENANT_POLICIES: Route = Route {
    endpoint: Endpoint::AdminTenantPolicies,
    method: "GET",
    path: "/v1/admin/tenants/{tenant}/policies",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::tenant_policies),
    audit: None,
    doc: doc(
        "Every policy a tenant is held to (the platform's, the operator's for it, its own), with owners",
        None,
        &[(200, "PolicyList", "The policies")],
        &[400, 404],
    ),
};

pub(super) const PUT_TENANT_POLICY: Route = Route {
    endpoint: Endpoint::AdminPutTenantPolicy,
    method: "PUT",
    path: "/v1/admin/tenants/{tenant}/policies/{name}",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::put_tenant_policy),
    audit: Some("admin.tenant.policy.put"),
    doc: Doc {
        description: Some(TENANT_POLICY),
        ..doc(
            "Set a platform policy for one tenant (compile-checked)",
            Some("PolicyRequest"),
            &[(200, "Policy", "Stored")],
            &[400, 404, 422],
        )
    },
};

pub(super) const DELETE_TENANT_POLICY: Route = Route {
    endpoint: Endpoint::AdminDeleteTenantPolicy,
    method: "DELETE",
    path: "/v1/admin/tenants/{tenant}/policies/{name}",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::delete_tenant_policy),
    audit: Some("admin.tenant.policy.delete"),
    doc: doc(
        "Remove a platform policy set for one tenant (never the tenant's own)",
        None,
        &[(200, "Deleted", "Removed")],
        &[400, 404],
    ),
};

pub(super) const LIST_CLUSTERS: Route = Route {
    endpoint: Endpoint::AdminListClusters,
    method: "GET",
    path: "/v1/admin/clusters",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::list_clusters),
    audit: None,
    doc: Doc {
        description: Some(
            "Read-only. Each page reads at most `limit` clusters (one tenant's partition with `tenant`, else \
             one page of a scan of every tenant's): the filters apply to what was read, so a page may hold \
             fewer than `limit`, even none, and still have a `next`.",
        ),
        query: &[
            ("tenant", "Only this tenant's clusters"),
            ("state", "Only clusters in this state (any case)"),
            ("template", "Only clusters of this template"),
            ("version", "Only clusters pinned to this template version"),
            ("limit", "Clusters read per page, 1-100 (default 50)"),
            NEXT,
        ],
        ..doc(
            "List clusters across tenants",
            None,
            &[(200, "AdminClusterPage", "A page")],
            &[400, 422],
        )
    },
};

pub(super) const LIST_OPERATIONS: Route = Route {
    endpoint: Endpoint::AdminListOperations,
    method: "GET",
    path: "/v1/admin/operations",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::list_operations),
    audit: None,
    doc: Doc {
        description: Some(
            "Read-only: each operation's tenant, cluster, kind, status, step, error and wait reason (not its \
             spec, variables, plan or outputs). Each page reads at most `limit` operations (one page of a scan \
             of every tenant's): the filters apply to what was read, so a page may hold fewer than `limit`, \
             even none, and still have a `next`.",
        ),
        query: &[
            ("tenant", "Only this tenant's operations"),
            ("cluster", "Only this cluster's operations"),
            (
                "kind",
                "Only operations of this kind (create, update, delete, plan, drift-check, restore-state, estimate)",
            ),
            (
                "status",
                "Only operations in this status (e.g. failed, awaiting_approval)",
            ),
            ("limit", "Operations read per page, 1-100 (default 50)"),
            NEXT,
        ],
        ..doc(
            "List operations across tenants",
            None,
            &[(200, "AdminOperationPage", "A page")],
            &[400, 422],
        )
    },
};

const STANDING: &str = "A deprecated version cannot be used by new clusters (a create naming it is a 422 on \
`template.version` naming the newest usable version); clusters already on it keep working and may still \
update to it. A yanked version (a `reason` is required) also refuses every update moving a cluster to it; \
clusters already on it keep running, and reading the template at that version shows the reason. A yank \
is final. Tenants' `GET /v1/templates` leaves yanked versions out and lists deprecated ones under \
`deprecated`. A standing applies at once where it was set and within 30 s everywhere. Recorded in the \
platform's audit log (`GET /v1/admin/tenants/strato-platform/audit`) under the operator's `sub`.";

pub(super) const LIST_TEMPLATES: Route = Route {
    endpoint: Endpoint::AdminListTemplates,
    method: "GET",
    path: "/v1/admin/templates",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::list_templates),
    audit: None,
    doc: Doc {
        description: Some(
            "One read of the whole catalog (a few dozen small items): every version, yanked ones included.",
        ),
        ..doc(
            "List every template, its versions and their standing",
            None,
            &[(200, "AdminTemplateList", "The catalog")],
            &[],
        )
    },
};

pub(super) const PUBLISH_TEMPLATE: Route = Route {
    endpoint: Endpoint::AdminPublishTemplate,
    method: "POST",
    path: "/v1/admin/templates/{name}/versions/{version}",
    access: Access::Platform,
    body: Body::Bundle,
    handler: |m| on(m, h::publish_template),
    audit: Some("admin.template.publish"),
    doc: Doc {
        description: Some(
            "The bundle is checked as `strato-devstack publish` checks a directory: its manifest parses and \
             names the path's template and version, every module its stages use is in it, its lock file (if \
             any) pins every provider they require, the variable schema agrees with the modules' interfaces, \
             at most 4 MiB compressed, 64 MiB and 2000 plain files unpacked. A bad bundle is a 422 on \
             `bundle` saying what is wrong. A version already published is a 409 (versions are immutable). A \
             body over 5.6 MB is a 413; API Gateway refuses one over 10 MB itself, and Lambda one over 6 MB.",
        ),
        ..doc(
            "Publish a template version from a bundle",
            Some("AdminPublishRequest"),
            &[(201, "AdminTemplateVersion", "Published, active")],
            &[400, 409, 422],
        )
    },
};

pub(super) const DEPRECATE_TEMPLATE: Route = Route {
    endpoint: Endpoint::AdminDeprecateTemplate,
    method: "POST",
    path: "/v1/admin/templates/{name}/versions/{version}/deprecate",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::deprecate_template),
    audit: Some("admin.template.deprecate"),
    doc: Doc {
        description: Some(STANDING),
        ..doc(
            "Deprecate a template version: new clusters cannot use it",
            Some("AdminStandingRequest"),
            &[(200, "AdminTemplateVersion", "Deprecated")],
            &[400, 404, 409, 422],
        )
    },
};

pub(super) const YANK_TEMPLATE: Route = Route {
    endpoint: Endpoint::AdminYankTemplate,
    method: "POST",
    path: "/v1/admin/templates/{name}/versions/{version}/yank",
    access: Access::Platform,
    body: Body::Limited,
    handler: |m| on(m, h::yank_template),
    audit: Some("admin.template.yank"),
    doc: Doc {
        description: Some(STANDING),
        ..doc(
            "Yank a template version with a reason: no cluster may start on it or move to it",
            Some("AdminStandingRequest"),
            &[(200, "AdminTemplateVersion", "Yanked")],
            &[400, 404, 409, 422],
        )
    },
};

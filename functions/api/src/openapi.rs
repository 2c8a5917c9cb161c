//! The OpenAPI 3.1 document, generated: schemas from the request and view types (`ToSchema`), one operation
//! per entry of [`ROUTES`], from the entry's [`Doc`](crate::routes::Doc).
//! `functions/api/openapi.yaml` is this document, checked in; a test fails when they differ.

use utoipa::OpenApi;
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{InfoBuilder, OpenApiBuilder, Paths, Ref, RefOr, Required};

use crate::problem::PROBLEM_JSON;
use crate::route::Endpoint::{self, *};
use crate::route::{Access, Body, Route};
use crate::routes::ROUTES;
use crate::{
    agent, policies, problem, requests, schema, state, target_access, templates, tenant, tickets, timeline,
    views,
};

#[derive(OpenApi)]
#[openapi(components(schemas(
    problem::Problem,
    problem::FieldErrorView,
    views::ClusterView,
    views::LastOperationView,
    schema::ClusterState,
    views::OperationView,
    timeline::Timeline,
    timeline::TimelineEntry,
    timeline::TimelineEvent,
    views::Accepted,
    views::EstimateAccepted,
    views::ClusterPage,
    views::OperationList,
    views::Health,
    views::Deleted,
    state::StateVersions,
    crate::connect::KubeconfigView,
    state::RestoreView,
    tenant::WebhookView,
    crate::admin::TenantView,
    crate::admin::TenantPageView,
    crate::admin::TenantBody,
    crate::admin::fleet::FleetClusterView,
    crate::admin::fleet::FleetPageView,
    crate::admin::operations::FleetOperationView,
    crate::admin::operations::FleetOperationPageView,
    crate::admin::templates::TemplateListView,
    crate::admin::templates::TemplateView,
    crate::admin::templates::VersionView,
    crate::admin::templates::PublishBody,
    crate::admin::templates::StandingBody,
    policies::PolicyView,
    policies::PolicyListView,
    policies::PolicyBody,
    target_access::TargetAccessView,
    crate::federation::Federation,
    crate::cloud_tokens::CloudTokenBody,
    crate::cloud_tokens::CloudTokenView,
    crate::cloud_tokens::CloudTokenListView,
    crate::federation::OidcDiscovery,
    crate::federation::Jwks,
    tickets::TicketView,
    templates::TemplateList,
    templates::TemplateDetail,
    agent::RegisteredView,
    agent::AckView,
    agent::RotatedView,
    crate::agent_report::AgentComponent,
    crate::agent_report::AgentWarning,
    crate::health_view::HealthView,
    crate::health_view::HealthWarningView,
    requests::SpecBody,
    requests::EstimateBody,
    requests::UpdateBody,
    requests::WebhookBody,
    requests::DecisionBody,
    crate::agent_report::AgentBody,
    crate::approval::ApprovalView,
    crate::approval::DecisionView,
    crate::approval::PlannedChangeView,
    crate::approval::PlanSummaryView,
    crate::preview_view::PreviewView,
    crate::preview_view::PreviewChangeView,
    crate::preview_view::PreviewCountsView,
    crate::preview_view::CostDifferenceView,
    crate::preview_view::PolicyResultsView,
    GatewayUnauthorized,
    crate::audit::AuditEntryView,
    crate::audit::AuditPageView,
    crate::rollouts::RolloutBody,
    crate::rollouts::ResumeBody,
    crate::rollouts::RolloutView,
    crate::rollouts::RolloutMemberView,
    crate::rollouts::RolloutListView,
    crate::rollouts::SummaryView,
)))]
struct Schemas;

/// API Gateway's JWT authorizer's own 401 body (devstack answers a `Problem` instead).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // Documents the schema; API Gateway writes this body, not Strato.
struct GatewayUnauthorized {
    /// `Unauthorized`.
    message: String,
}

/// OpenAPI links from an answer to the routes its ids lead to (name, target, path parameter, where the
/// value is), so clients and stateful fuzzers (schemathesis) can follow create → read/change/delete.
fn links(from: Endpoint, schema: &str) -> Vec<(String, Endpoint, &'static str, &'static str)> {
    const CLUSTER_ID: &str = "$response.body#/cluster/id";
    const OPERATION_ID: &str = "$response.body#/operation/id";
    let by_cluster = |id: &'static str| {
        [
            GetCluster,
            UpdateCluster,
            DeleteCluster,
            RetryCluster,
            DriftCheck,
            PlanCluster,
            ListClusterOperations,
            ListStateVersions,
            GetKubeconfig,
        ]
        .map(|t| (format!("{t:?}"), t, "id", id))
    };
    let by_operation = |id: &'static str| {
        [
            GetOperation,
            GetOperationTimeline,
            CancelOperation,
            ApproveOperation,
            RejectOperation,
        ]
        .map(|t| (format!("{t:?}"), t, "id", id))
    };
    match (from, schema) {
        (_, "Accepted") => by_cluster(CLUSTER_ID)
            .into_iter()
            .chain(by_operation(OPERATION_ID))
            .collect(),
        (_, "EstimateAccepted") => by_operation(OPERATION_ID).into_iter().collect(),
        (GetCluster, "Cluster") => by_cluster("$response.body#/id").into_iter().collect(),
        _ => Vec::new(),
    }
}

fn error_description(status: u16) -> &'static str {
    match status {
        400 => "Malformed request: not JSON, a bad query parameter or Idempotency-Key",
        401 => "No valid token (the JWT authorizer, or the agent token)",
        403 => "The token lacks the scope this route needs (`errors` names it)",
        404 => "No such resource, or not yours",
        409 => "The resource's state forbids this now; the detail says why",
        410 => "Too late: the registration deadline passed",
        412 => "`If-Match` names a version the cluster is no longer at; read it again",
        413 => "The request body is over the size limit",
        415 => {
            "The request has a body whose `Content-Type` is not JSON (or is missing): send \
                `Content-Type: application/json` (`errors` names `Content-Type`)"
        }
        422 => "The request is invalid; `errors` names every field",
        429 => "A quota is exhausted, or (agent reports) too soon after the last one: see `Retry-After`",
        _ => "Strato could not complete the request",
    }
}

fn schema_ref(schema: &str) -> ContentBuilder {
    ContentBuilder::new().schema(Some(Ref::from_schema_name(schema)))
}

/// One route's OpenAPI operation: parameters, body, every answer with its content types and headers. Long
/// because it is a straight walk over the route's table entry; split, the order of the document would scatter.
fn operation(route: &Route) -> utoipa::openapi::path::Operation {
    let d = &route.doc;
    let public = route.scope().is_none();
    let mut op = OperationBuilder::new()
        .summary(Some(d.summary))
        .description(d.description)
        .operation_id(Some(format!("{:?}", route.endpoint)));
    for seg in route.path.split('/').filter(|s| s.starts_with('{')) {
        let name = seg.trim_matches(|c| c == '{' || c == '}');
        op = op.parameter(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
        );
    }
    for (name, desc) in d.query {
        let schema: RefOr<Schema> = match *name {
            "state" => Ref::from_schema_name("ClusterState").into(),
            "include_deleted" => ObjectBuilder::new().schema_type(Type::Boolean).into(),
            "limit" => ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .maximum(Some(crate::clusters::MAX_PAGE))
                .into(),
            _ => ObjectBuilder::new().schema_type(Type::String).into(),
        };
        op = op.parameter(
            ParameterBuilder::new()
                .name(*name)
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(*desc))
                .schema(Some(schema)),
        );
    }
    if route.endpoint == UpdateCluster {
        op = op.parameter(
            ParameterBuilder::new()
                .name("If-Match")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some("The cluster's ETag as read (`\"<version>\"`), or `*`"))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
        );
    }
    let keyed = route.body == Body::Keyed;
    if keyed {
        op = op.parameter(
            ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "1-255 printable ASCII characters: a repeat with the same key and request gets the first \
                     answer again; the same key with a different request answers 422",
                ))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .max_length(Some(255))
                        .pattern(Some("^[!-~]+$")),
                )),
        );
    }
    if let Some(body) = d.body {
        op = op.request_body(Some(
            RequestBodyBuilder::new()
                .required(Some(Required::True))
                .content("application/json", schema_ref(body).build())
                .build(),
        ));
    }
    for (status, schema, desc) in d.ok {
        let mut r = ResponseBuilder::new()
            .description(*desc)
            .content("application/json", schema_ref(schema).build());
        // Every answer that carries a cluster tags it with its version, for `If-Match`.
        if matches!(route.endpoint, GetCluster | UpdateCluster) || *schema == "Accepted" {
            r = r.header(
                "ETag",
                HeaderBuilder::new()
                    .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                    .description(Some("The cluster's `version`, quoted"))
                    .build(),
            );
        }
        for (name, target, param, from) in links(route.endpoint, schema) {
            r = r.link(
                name,
                LinkBuilder::new()
                    .operation_id(format!("{target:?}"))
                    .parameter(param, from)
                    .build(),
            );
        }
        if *status == 202 {
            r = r.header(
                "Location",
                HeaderBuilder::new()
                    .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                    .description(Some("/v1/operations/{id}"))
                    .build(),
            );
        }
        op = op.response(status.to_string(), r.build());
    }
    let mut errors: Vec<u16> = d.errors.to_vec();
    if route.access != Access::Public {
        errors.extend([401, 413, 500]);
    }
    if route.scope().is_some() {
        errors.push(403);
    }
    // Every body is read as JSON only when it is declared JSON (`requests::json_media_type`).
    if matches!(route.method, "POST" | "PUT" | "PATCH") {
        errors.push(415);
    }
    if keyed {
        errors.extend([400, 409, 422]);
    }
    errors.sort_unstable();
    errors.dedup();
    for status in errors {
        let description = match status {
            422 if keyed => {
                "The request is invalid (`errors` names every field), or its `Idempotency-Key` was used \
                 before with a different request"
            }
            403 if matches!(route.endpoint, CreateCluster | UpdateCluster) => {
                "The token lacks the scope this route needs, or the `admin` scope an `approval` lowering the \
                 cluster's approval requirement needs (`errors` names the scope or `approval`)"
            }
            401 if !public && route.method != "GET" => {
                "No valid token (the JWT authorizer), or a token without a subject (`sub`): a change must \
                 name who asks for it"
            }
            409 if keyed => {
                "The resource's state forbids this now, or a request with the same `Idempotency-Key` is \
                 still in progress; the detail says which"
            }
            _ => error_description(status),
        };
        let mut r = ResponseBuilder::new()
            .description(description)
            .content(PROBLEM_JSON, schema_ref("Problem").build());
        if status == 401 && !public {
            // API Gateway's JWT authorizer answers before the function, in its own format.
            r = r.content("application/json", schema_ref("GatewayUnauthorized").build());
        }
        op = op.response(status.to_string(), r.build());
    }
    match route.access {
        // The scope this route needs (a stronger one also does: `clusters:write` and `admin` include reads).
        Access::Tenant(scope) => op = op.security(SecurityRequirement::new("jwt", [scope.as_str()])),
        // Only the operator's own tokens (its audience, no tenant claim) with `platform:admin`.
        Access::Platform => {
            op = op.security(SecurityRequirement::new(
                "jwt",
                [crate::scopes::Scope::PlatformAdmin.as_str()],
            ))
        }
        Access::Agent => op = op.security(SecurityRequirement::new("agent_token", Vec::<String>::new())),
        Access::Public => {}
    }
    op.build()
}

/// The API's OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut components = Schemas::openapi().components.unwrap_or_default();
    // Request bodies take no other members (`requests::unknown` reports each); serde's `flatten`, which
    // collects them, cannot say so itself.
    for (name, schema) in components.schemas.iter_mut() {
        if let (true, RefOr::T(Schema::Object(o))) = (name.ends_with("Request"), schema) {
            o.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
        }
    }
    let bearer = |desc: &str| {
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(desc))
                .build(),
        )
    };
    components.add_security_scheme(
        "jwt",
        bearer("The identity provider's JWT, checked by API Gateway's JWT authorizer"),
    );
    components.add_security_scheme(
        "agent_token",
        bearer(
            "The cluster agent's one-time registration token (register), then the credential registration \
             gave it (`<cluster id>.<secret>`: heartbeat, credential)",
        ),
    );
    let mut paths = Paths::new();
    for r in ROUTES {
        let method = match r.method {
            "GET" => HttpMethod::Get,
            "POST" => HttpMethod::Post,
            "PUT" => HttpMethod::Put,
            "PATCH" => HttpMethod::Patch,
            _ => HttpMethod::Delete,
        };
        paths.merge(
            Paths::builder()
                .path(r.path, PathItem::new(method, operation(r)))
                .build(),
        );
    }
    let mut doc = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Strato API")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "Kubernetes clusters from templates, per tenant. Errors are RFC 9457 problem documents.",
                ))
                .build(),
        )
        .paths(paths)
        .components(Some(components))
        .build();
    doc.openapi = utoipa::openapi::OpenApiVersion::Version31;
    doc
}

/// The document as YAML, as checked in at `functions/api/openapi.yaml`.
pub fn openapi_yaml() -> String {
    openapi().to_yaml().unwrap_or_default()
}

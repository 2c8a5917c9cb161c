//! The operator routes' axum handlers: the [`Operator`] the router established, path and query parameters,
//! a typed body; each calls the route's function in [`super`].

use axum::extract::State;

use crate::edge::{AppState, Reply};
use crate::error::ApiError;
use crate::handlers::{P, Q};
use crate::operator::Operator;
use crate::requests::JsonBody;

use super::fleet::{FleetPageView, FleetQuery};
use super::{TenantBody, TenantPageView, TenantView, TenantsQuery};

type Answer<T> = Result<Reply<T>, ApiError>;

// The operator is extracted though unused here: without the router's check having put one on the request,
// the handler refuses (401) instead of running.
pub(crate) async fn create_tenant(
    State(ctx): State<AppState>,
    _: Operator,
    JsonBody(body): JsonBody<TenantBody>,
) -> Answer<TenantView> {
    super::create(&ctx, body).await
}

pub(crate) async fn list_tenants(
    State(ctx): State<AppState>,
    _: Operator,
    Q(q): Q<TenantsQuery>,
) -> Answer<TenantPageView> {
    super::list(&ctx, &q).await
}

pub(crate) async fn get_tenant(
    State(ctx): State<AppState>,
    _: Operator,
    P(tenant): P<String>,
) -> Answer<TenantView> {
    super::get(&ctx, &tenant).await
}

pub(crate) async fn update_tenant(
    State(ctx): State<AppState>,
    _: Operator,
    P(tenant): P<String>,
    JsonBody(body): JsonBody<TenantBody>,
) -> Answer<TenantView> {
    super::update(&ctx, &tenant, body).await
}

pub(crate) async fn tenant_audit(
    State(ctx): State<AppState>,
    _: Operator,
    P(tenant): P<String>,
    Q(q): Q<crate::audit::AuditParams>,
) -> Answer<crate::audit::AuditPageView> {
    super::audit(&ctx, &tenant, &q).await
}

pub(crate) async fn list_clusters(
    State(ctx): State<AppState>,
    _: Operator,
    Q(q): Q<FleetQuery>,
) -> Answer<FleetPageView> {
    super::fleet::list(&ctx, &q).await
}

pub(crate) async fn list_operations(
    State(ctx): State<AppState>,
    _: Operator,
    Q(q): Q<super::operations::OperationsQuery>,
) -> Answer<super::operations::FleetOperationPageView> {
    super::operations::list(&ctx, &q).await
}

pub(crate) async fn list_templates(
    State(ctx): State<AppState>,
    _: Operator,
) -> Answer<super::templates::TemplateListView> {
    super::templates::list(&ctx).await
}

pub(crate) async fn publish_template(
    State(ctx): State<AppState>,
    _: Operator,
    P((name, version)): P<(String, String)>,
    JsonBody(body): JsonBody<super::templates::PublishBody>,
) -> Answer<super::templates::VersionView> {
    super::templates::publish(&ctx, &name, &version, body).await
}

pub(crate) async fn deprecate_template(
    State(ctx): State<AppState>,
    op: Operator,
    P((name, version)): P<(String, String)>,
    JsonBody(body): JsonBody<super::templates::StandingBody>,
) -> Answer<super::templates::VersionView> {
    use strato_domain::template_status::Standing;
    super::templates::set_standing(&ctx, &op, &name, &version, Standing::Deprecated, body).await
}

pub(crate) async fn yank_template(
    State(ctx): State<AppState>,
    op: Operator,
    P((name, version)): P<(String, String)>,
    JsonBody(body): JsonBody<super::templates::StandingBody>,
) -> Answer<super::templates::VersionView> {
    use strato_domain::template_status::Standing;
    super::templates::set_standing(&ctx, &op, &name, &version, Standing::Yanked, body).await
}

pub(crate) async fn tenant_policies(
    State(ctx): State<AppState>,
    _: Operator,
    P(tenant): P<String>,
) -> Answer<crate::policies::PolicyListView> {
    crate::policies::admin_list(&ctx, &tenant).await
}

pub(crate) async fn put_tenant_policy(
    State(ctx): State<AppState>,
    _: Operator,
    P((tenant, name)): P<(String, String)>,
    JsonBody(body): JsonBody<crate::policies::PolicyBody>,
) -> Answer<crate::policies::PolicyView> {
    crate::policies::admin_put(&ctx, &tenant, &name, body).await
}

pub(crate) async fn delete_tenant_policy(
    State(ctx): State<AppState>,
    _: Operator,
    P((tenant, name)): P<(String, String)>,
) -> Answer<crate::views::Deleted> {
    crate::policies::admin_delete(&ctx, &tenant, &name).await
}

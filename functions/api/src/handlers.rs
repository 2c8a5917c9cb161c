//! One axum handler per route: extract (the [`Caller`], path and query parameters, a typed [`JsonBody`]),
//! call the route's module, answer with a typed view. [`crate::openapi`] documents what each one takes and
//! answers.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use strato_domain::approval::Verdict;

use crate::audit_draft::AuditDraft;
use crate::caller::Caller;
use crate::decide::IfMatch;
use crate::edge::{AppState, Reply};
use crate::policies::TenantRead;
use crate::requests::{
    JsonBody, ListClustersQuery, PageQuery, SpecBody, TemplateQuery, UpdateBody, WebhookBody,
};
use crate::views::{
    Accepted, ClusterPage, ClusterView, Deleted, EstimateAccepted, Health, OperationList, OperationView,
};
use crate::{
    agent, cloud_tokens, clusters, error::ApiError, estimates, federation, operations, policies, state,
    target_access, templates, tenant, tickets,
};
use axum::response::Response;

type Answer<T> = Result<Reply<T>, ApiError>;

/// Path parameters; a segment that is not even UTF-8 names no resource (404).
pub(crate) struct P<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for P<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(t)| P(t))
            .map_err(|_| {
                ApiError::NotFound(format!(
                    "no resource at {}",
                    crate::requests::truncate(parts.uri.path(), 100)
                ))
            })
    }
}

/// Query parameters; a query string that cannot be read is a 400 problem.
pub(crate) struct Q<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Q<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Query::<T>::try_from_uri(&parts.uri)
            .map(|Query(t)| Q(t))
            .map_err(|e| ApiError::BadRequest {
                detail: format!("the query string cannot be read: {}", e.body_text()),
                errors: Vec::new(),
            })
    }
}

pub(crate) async fn health() -> Reply<Health> {
    Reply::ok(Health { status: "ok" })
}

pub(crate) async fn create_cluster(
    State(ctx): State<AppState>,
    caller: Caller,
    read: Option<Extension<TenantRead>>,
    audit: Option<Extension<AuditDraft>>,
    JsonBody(body): JsonBody<SpecBody>,
) -> Answer<Accepted> {
    let audit = audit.as_ref().map(|Extension(d)| d);
    clusters::create(&ctx, &caller, read.as_ref().map(|Extension(r)| r), body, audit).await
}

pub(crate) async fn list_clusters(
    State(ctx): State<AppState>,
    caller: Caller,
    Q(q): Q<ListClustersQuery>,
) -> Answer<ClusterPage> {
    clusters::list(&ctx, &caller, &q).await
}

pub(crate) async fn get_cluster(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
) -> Answer<ClusterView> {
    clusters::get(&ctx, &caller, &id).await
}

pub(crate) async fn update_cluster(
    State(ctx): State<AppState>,
    caller: Caller,
    read: Option<Extension<TenantRead>>,
    P(id): P<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<UpdateBody>,
) -> Result<Response, ApiError> {
    // A header that is not even text matches no version: the precondition fails (412).
    let if_match = headers
        .get(axum::http::header::IF_MATCH)
        .map(|v| IfMatch::parse(v.to_str().unwrap_or("\u{0}")));
    let read = read.as_ref().map(|Extension(r)| r);
    clusters::update(&ctx, &caller, read, &id, body, if_match.as_ref()).await
}

pub(crate) async fn plan_cluster(
    State(ctx): State<AppState>,
    caller: Caller,
    read: Option<Extension<TenantRead>>,
    P(id): P<String>,
    JsonBody(body): JsonBody<UpdateBody>,
) -> Answer<Accepted> {
    crate::preview::plan(&ctx, &caller, read.as_ref().map(|Extension(r)| r), &id, body).await
}

pub(crate) async fn delete_cluster(
    State(ctx): State<AppState>,
    caller: Caller,
    read: Option<Extension<TenantRead>>,
    P(id): P<String>,
) -> Answer<Accepted> {
    clusters::delete(&ctx, &caller, read.as_ref().map(|Extension(r)| r), &id).await
}

pub(crate) async fn retry_cluster(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
) -> Answer<Accepted> {
    clusters::retry(&ctx, &caller, &id).await
}

pub(crate) async fn drift_check(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
) -> Answer<Accepted> {
    clusters::drift_check(&ctx, &caller, &id).await
}

pub(crate) async fn get_kubeconfig(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
    Q(q): Q<crate::connect::KubeconfigQuery>,
) -> Answer<crate::connect::KubeconfigView> {
    crate::connect::get(&ctx, &caller, &id, &q).await
}

pub(crate) async fn list_state_versions(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
) -> Answer<state::StateVersions> {
    state::list(&ctx, &caller, &id).await
}

pub(crate) async fn restore_state_version(
    State(ctx): State<AppState>,
    caller: Caller,
    P((id, version)): P<(String, String)>,
) -> Answer<state::RestoreAnswer> {
    state::restore(&ctx, &caller, &id, &version).await
}

pub(crate) async fn list_cluster_operations(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
    Q(q): Q<PageQuery>,
) -> Answer<OperationList> {
    operations::list_for_cluster(&ctx, &caller, &id, &q).await
}

pub(crate) async fn get_operation(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
) -> Answer<OperationView> {
    operations::get(&ctx, &caller, &id).await
}

pub(crate) async fn get_operation_timeline(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
) -> Answer<crate::timeline::Timeline> {
    operations::timeline(&ctx, &caller, &id).await
}

pub(crate) async fn cancel_operation(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
) -> Answer<OperationView> {
    operations::cancel(&ctx, &caller, &id).await
}

pub(crate) async fn approve_operation(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
    body: Bytes,
) -> Answer<OperationView> {
    operations::decide(&ctx, &caller, &id, Verdict::Approved, &body).await
}

pub(crate) async fn reject_operation(
    State(ctx): State<AppState>,
    caller: Caller,
    P(id): P<String>,
    body: Bytes,
) -> Answer<OperationView> {
    operations::decide(&ctx, &caller, &id, Verdict::Rejected, &body).await
}

pub(crate) async fn create_estimate(
    State(ctx): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<SpecBody>,
) -> Answer<EstimateAccepted> {
    estimates::create(&ctx, &caller, body).await
}

pub(crate) async fn openid_configuration(State(ctx): State<AppState>) -> Answer<serde_json::Value> {
    federation::openid_configuration(&ctx).await
}

pub(crate) async fn jwks(State(ctx): State<AppState>) -> Answer<strato_domain::identity::jwk::Jwks> {
    federation::jwks(&ctx).await
}

pub(crate) async fn list_cloud_tokens(
    State(ctx): State<AppState>,
    caller: Caller,
) -> Answer<cloud_tokens::CloudTokenListView> {
    cloud_tokens::list(&ctx, &caller).await
}

pub(crate) async fn put_cloud_token(
    State(ctx): State<AppState>,
    caller: Caller,
    P(provider): P<String>,
    JsonBody(body): JsonBody<cloud_tokens::CloudTokenBody>,
) -> Answer<cloud_tokens::CloudTokenView> {
    cloud_tokens::put(&ctx, &caller, &provider, body).await
}

pub(crate) async fn delete_cloud_token(
    State(ctx): State<AppState>,
    caller: Caller,
    P(provider): P<String>,
) -> Answer<Deleted> {
    cloud_tokens::delete(&ctx, &caller, &provider).await
}

pub(crate) async fn get_target_access(
    State(ctx): State<AppState>,
    caller: Caller,
) -> Answer<target_access::TargetAccessView> {
    target_access::get(&ctx, &caller).await
}

pub(crate) async fn get_webhook(State(ctx): State<AppState>, caller: Caller) -> Answer<tenant::WebhookView> {
    tenant::get_webhook(&ctx, &caller).await
}

pub(crate) async fn put_webhook(
    State(ctx): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<WebhookBody>,
) -> Answer<tenant::WebhookView> {
    tenant::put_webhook(&ctx, &caller, body).await
}

pub(crate) async fn delete_webhook(State(ctx): State<AppState>, caller: Caller) -> Answer<Deleted> {
    tenant::delete_webhook(&ctx, &caller).await
}

pub(crate) async fn list_policies(
    State(ctx): State<AppState>,
    caller: Caller,
) -> Answer<policies::PolicyListView> {
    policies::list(&ctx, &caller).await
}

pub(crate) async fn get_policy(
    State(ctx): State<AppState>,
    caller: Caller,
    P(name): P<String>,
) -> Answer<policies::PolicyView> {
    policies::get(&ctx, &caller, &name).await
}

pub(crate) async fn put_policy(
    State(ctx): State<AppState>,
    caller: Caller,
    P(name): P<String>,
    JsonBody(body): JsonBody<policies::PolicyBody>,
) -> Answer<policies::PolicyView> {
    policies::put(&ctx, &caller, &name, body).await
}

pub(crate) async fn delete_policy(
    State(ctx): State<AppState>,
    caller: Caller,
    P(name): P<String>,
) -> Answer<Deleted> {
    policies::delete(&ctx, &caller, &name).await
}

pub(crate) async fn create_ws_ticket(
    State(ctx): State<AppState>,
    caller: Caller,
) -> Answer<tickets::TicketView> {
    tickets::create(&ctx, &caller)
}

/// The catalog is the same for every tenant, but only tenants may read it (hence the unused [`Caller`]).
pub(crate) async fn list_templates(
    State(ctx): State<AppState>,
    _tenant: Caller,
) -> Answer<templates::TemplateList> {
    templates::list(&ctx).await
}

pub(crate) async fn get_template(
    State(ctx): State<AppState>,
    _tenant: Caller,
    P(name): P<String>,
    Q(q): Q<TemplateQuery>,
) -> Answer<templates::TemplateDetail> {
    templates::get(&ctx, &name, &q).await
}

pub(crate) async fn agent_register(
    State(ctx): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer<agent::RegisteredView> {
    agent::register(&ctx, &headers, &body).await
}

pub(crate) async fn agent_heartbeat(
    State(ctx): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer<agent::AckView> {
    agent::heartbeat(&ctx, &headers, &body).await
}

pub(crate) async fn agent_credential(
    State(ctx): State<AppState>,
    headers: HeaderMap,
) -> Answer<agent::RotatedView> {
    agent::rotate(&ctx, &headers).await
}

pub(crate) async fn list_audit(
    State(ctx): State<AppState>,
    caller: Caller,
    Q(q): Q<crate::audit::AuditParams>,
) -> Answer<crate::audit::AuditPageView> {
    crate::audit::list(&ctx, &caller, &q).await
}

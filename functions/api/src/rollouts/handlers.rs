//! The rollout routes' axum handlers: the tenant's (`/v1/rollouts…`, a [`Caller`]) and the platform
//! operator's (`/v1/admin/rollouts…`, an [`Operator`]), each calling the same function of [`super`].

use axum::body::Bytes;
use axum::extract::State;

use super::{MembersQuery, ResumeBody, RolloutBody, RolloutListView, RolloutView, Viewer};
use crate::caller::Caller;
use crate::edge::{AppState, Reply};
use crate::error::ApiError;
use crate::handlers::{P, Q};
use crate::operator::Operator;
use crate::requests::JsonBody;

type Answer<T> = Result<Reply<T>, ApiError>;

/// Resume's body is optional: none is `{}`.
fn resume_body(body: &[u8]) -> Result<ResumeBody, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(ResumeBody::default());
    }
    crate::requests::read(body)
}

fn platform(o: Operator) -> Viewer {
    Viewer::Platform { subject: o.subject }
}

pub(crate) async fn start(
    State(ctx): State<AppState>,
    c: Caller,
    JsonBody(b): JsonBody<RolloutBody>,
) -> Answer<RolloutView> {
    super::start(&ctx, &Viewer::Tenant(c), b).await
}

pub(crate) async fn list(State(ctx): State<AppState>, c: Caller) -> Answer<RolloutListView> {
    super::list(&ctx, &Viewer::Tenant(c)).await
}

pub(crate) async fn get(
    State(ctx): State<AppState>,
    c: Caller,
    P(id): P<String>,
    Q(q): Q<MembersQuery>,
) -> Answer<RolloutView> {
    super::get(&ctx, &Viewer::Tenant(c), &id, &q).await
}

pub(crate) async fn pause(State(ctx): State<AppState>, c: Caller, P(id): P<String>) -> Answer<RolloutView> {
    super::pause(&ctx, &Viewer::Tenant(c), &id).await
}

pub(crate) async fn resume(
    State(ctx): State<AppState>,
    c: Caller,
    P(id): P<String>,
    body: Bytes,
) -> Answer<RolloutView> {
    let b = resume_body(&body)?;
    super::resume(&ctx, &Viewer::Tenant(c), &id, b).await
}

pub(crate) async fn abort(State(ctx): State<AppState>, c: Caller, P(id): P<String>) -> Answer<RolloutView> {
    super::abort(&ctx, &Viewer::Tenant(c), &id).await
}

pub(crate) async fn admin_start(
    State(ctx): State<AppState>,
    o: Operator,
    JsonBody(b): JsonBody<RolloutBody>,
) -> Answer<RolloutView> {
    super::start(&ctx, &platform(o), b).await
}

pub(crate) async fn admin_list(State(ctx): State<AppState>, o: Operator) -> Answer<RolloutListView> {
    super::list(&ctx, &platform(o)).await
}

pub(crate) async fn admin_get(
    State(ctx): State<AppState>,
    o: Operator,
    P(id): P<String>,
    Q(q): Q<MembersQuery>,
) -> Answer<RolloutView> {
    super::get(&ctx, &platform(o), &id, &q).await
}

pub(crate) async fn admin_pause(
    State(ctx): State<AppState>,
    o: Operator,
    P(id): P<String>,
) -> Answer<RolloutView> {
    super::pause(&ctx, &platform(o), &id).await
}

pub(crate) async fn admin_resume(
    State(ctx): State<AppState>,
    o: Operator,
    P(id): P<String>,
    body: Bytes,
) -> Answer<RolloutView> {
    let b = resume_body(&body)?;
    super::resume(&ctx, &platform(o), &id, b).await
}

pub(crate) async fn admin_abort(
    State(ctx): State<AppState>,
    o: Operator,
    P(id): P<String>,
) -> Answer<RolloutView> {
    super::abort(&ctx, &platform(o), &id).await
}

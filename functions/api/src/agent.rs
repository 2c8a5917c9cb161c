//! The cluster agent's endpoints. After apply a cluster is CONFIGURING; the agent the template installed
//! registers once with its registration token and gets its own credential, then sends heartbeats with it
//! and may rotate it. Each report records the cluster's health; a change of health status goes out as the
//! `cluster.health_changed` webhook event and a metric. When the agent reports at least as many Ready
//! nodes as the cluster asked for, an `AgentReady` event goes to the events queue and the status function
//! finishes the create (functions talk through queues, never directly). The decisions are in
//! [`crate::decide::agent`].

use axum::http::{HeaderMap, StatusCode, header};
use strato_agent_wire::Report;
use strato_domain::agent::token_hash;
use strato_domain::health::{self, HealthChange};
use strato_domain::messages::ControlEvent;
use strato_domain::model::{Cluster, ClusterState, OperationKind};
use strato_domain::ts;
use time::OffsetDateTime;

use crate::decide::agent as decide;
use crate::{context::Ctx, edge::Reply, error::ApiError};

/// The answer to a registration: the agent keeps `credential` (it is shown only here).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = AgentRegistered)]
pub(crate) struct RegisteredView {
    pub cluster_id: String,
    /// `<cluster id>.<secret>`: send it as `Authorization: Bearer …` on heartbeats and rotations.
    pub credential: String,
    /// When to report next, in seconds (the agent adds jitter).
    pub heartbeat_secs: u64,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = AgentAck)]
pub(crate) struct AckView {
    pub cluster_id: String,
    /// When to report next, in seconds (the agent adds jitter).
    pub heartbeat_secs: u64,
    /// The cluster's health as now recorded: `healthy`, `degraded` or `unknown`.
    #[schema(example = "healthy")]
    pub health: String,
}

/// A new credential; the previous one works until this one is first used.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = AgentRotated)]
pub(crate) struct RotatedView {
    pub credential: String,
}

fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "send the agent's registration token or credential as 'Authorization: Bearer <token>'".into(),
            )
        })
}

/// The cluster a credential names, opened by it (any failure is the same 401).
async fn authenticated(ctx: &Ctx, headers: &HeaderMap) -> Result<Cluster, ApiError> {
    let credential = bearer(headers)?;
    let id = strato_agent_wire::credential_cluster(credential)
        .and_then(|id| id.parse().ok())
        .ok_or_else(decide::refused)?;
    let mut c = ctx.store.find_cluster(&id).await?.ok_or_else(decide::refused)?;
    decide::authenticate(&mut c, credential)?;
    Ok(c)
}

/// Nodes the cluster asked for: the template's ready-nodes variable, from the spec or its default.
async fn requested_nodes(ctx: &Ctx, c: &Cluster) -> Result<u64, ApiError> {
    let stored = ctx
        .store
        .get_template(&c.spec.template.name, &c.spec.template.version)
        .await?
        .ok_or_else(|| ApiError::Conflict("the cluster's template version is no longer published".into()))?;
    let var = stored
        .template
        .manifest
        .agent
        .as_ref()
        .map(|a| a.ready_nodes_variable.clone())
        .unwrap_or_default();
    let value = c
        .spec
        .variables
        .get(&var)
        .or_else(|| stored.template.effective_default(c.spec.provider, &var));
    Ok(value.and_then(|v| v.as_u64()).unwrap_or(1))
}

/// What follows an accepted, saved report: the health change told, the create finished when enough nodes
/// are Ready.
async fn after_report(
    ctx: &Ctx,
    c: &Cluster,
    report: &Report,
    requested: u64,
    state: ClusterState,
    change: Option<HealthChange>,
    now: OffsetDateTime,
) -> Result<(), ApiError> {
    if let Some(change) = change {
        let webhooks = strato_aws::ports::SqsWebhooks {
            store: &ctx.store,
            sqs: &ctx.sqs,
            url: &ctx.queues.webhooks,
        };
        // The report is recorded either way; a lost notice is logged, not the agent's problem.
        if let Err(e) = health::announce(&webhooks, c, &change, now).await {
            tracing::warn!(cluster_id = %c.cluster_id, error = %e, "cluster.health_changed not queued");
        }
    }
    if u64::from(report.nodes_ready) >= requested && state == ClusterState::Configuring {
        let ops = ctx.store.open_operations_of(&c.cluster_id).await?;
        if let Some(op) = ops
            .iter()
            .rev()
            .find(|o| o.kind == OperationKind::Create && !o.status.is_terminal())
        {
            let event = ControlEvent::AgentReady {
                operation_id: op.operation_id.clone(),
                cluster_id: c.cluster_id.clone(),
                nodes_ready: report.nodes_ready,
            };
            let body = serde_json::to_string(&event).map_err(|e| ApiError::Config(e.to_string()))?;
            ctx.sqs
                .send_message()
                .queue_url(&ctx.queues.events)
                .message_body(body)
                .send()
                .await
                .map_err(|e| ApiError::Store(strato_aws::Error::aws("SendMessage", e)))?;
        }
    }
    Ok(())
}

/// `POST /v1/agent/register`: the registration token, once → 201 with the agent's credential.
pub(crate) async fn register(
    ctx: &Ctx,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Reply<RegisteredView>, ApiError> {
    let token = bearer(headers)?;
    let mut c = ctx
        .store
        .find_cluster_by_agent_token(&token_hash(token))
        .await?
        .ok_or_else(|| ApiError::Unauthorized("the agent registration token is not valid".into()))?;
    let report = crate::agent_report::read(body)?;
    let now = ts::now();
    let credential = decide::register(&mut c, now)?;
    let requested = requested_nodes(ctx, &c).await?;
    let change = decide::accept(&mut c, &report, requested, now);
    let state = c.state();
    ctx.store.save_cluster(&mut c).await?;
    after_report(ctx, &c, &report, requested, state, change, now).await?;
    tracing::info!(cluster_id = %c.cluster_id, nodes_ready = report.nodes_ready, requested, "agent registered");
    let mut reply = Reply::ok(RegisteredView {
        cluster_id: c.cluster_id.to_string(),
        credential,
        heartbeat_secs: ctx.config.agent_heartbeat_secs,
    });
    reply.status = StatusCode::CREATED;
    Ok(reply)
}

/// `POST /v1/agent/heartbeat`: the credential and a report → the health recorded.
pub(crate) async fn heartbeat(
    ctx: &Ctx,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Reply<AckView>, ApiError> {
    let mut c = authenticated(ctx, headers).await?;
    let report = crate::agent_report::read(body)?;
    let now = ts::now();
    decide::throttle(&c, now)?;
    let requested = requested_nodes(ctx, &c).await?;
    let change = decide::accept(&mut c, &report, requested, now);
    let state = c.state();
    ctx.store.save_cluster(&mut c).await?;
    after_report(ctx, &c, &report, requested, state, change, now).await?;
    let status = c.health.as_ref().map(|h| h.status).unwrap_or_default();
    tracing::info!(cluster_id = %c.cluster_id, nodes_ready = report.nodes_ready, requested, health = %status, "agent report");
    Ok(Reply::ok(AckView {
        cluster_id: c.cluster_id.to_string(),
        heartbeat_secs: ctx.config.agent_heartbeat_secs,
        health: status.to_string(),
    }))
}

/// `POST /v1/agent/credential`: the credential → a new one (the old one works until the new one is used).
pub(crate) async fn rotate(ctx: &Ctx, headers: &HeaderMap) -> Result<Reply<RotatedView>, ApiError> {
    let mut c = authenticated(ctx, headers).await?;
    let credential = decide::rotate(&mut c);
    ctx.store.save_cluster(&mut c).await?;
    tracing::info!(cluster_id = %c.cluster_id, "agent credential rotated");
    Ok(Reply::ok(RotatedView { credential }))
}

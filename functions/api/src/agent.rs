//! The cluster agent's endpoints. After apply a cluster is CONFIGURING; the agent the template installed
//! registers once with its token and then sends heartbeats. When it reports at least as many Ready nodes as
//! the cluster asked for, an `AgentReady` event goes to the events queue and the status function finishes
//! the create (functions talk through queues, never directly).

use axum::http::{HeaderMap, header};
use strato_domain::agent::token_hash;
use strato_domain::messages::ControlEvent;
use strato_domain::model::{Cluster, ClusterState, OperationKind};
use strato_domain::ts;

use crate::requests::{AgentBody, Field, unknown};
use crate::{context::Ctx, edge::Reply, error::ApiError, schema};

/// What the control plane recorded from an agent's report.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[schema(as = AgentReport)]
pub(crate) struct AgentReportView {
    pub cluster_id: String,
    #[schema(value_type = schema::ClusterState)]
    pub state: ClusterState,
    pub nodes_ready: u32,
    /// Ready nodes the cluster asked for.
    pub nodes_requested: u64,
    pub kubernetes_version: Option<String>,
}

/// A report as far as it could be read: every problem with its field, as a 400 (the agent is a program).
fn report(body: &[u8]) -> Result<(u32, Option<String>), ApiError> {
    let shape = "{\"nodes_ready\": <count>, \"kubernetes_version\": <optional string>}";
    let b: AgentBody = crate::requests::read(body)?;
    let mut errors = Vec::new();
    unknown(
        &b.other,
        "",
        "is not a field of this request",
        "nodes_ready, kubernetes_version",
        &mut errors,
    );
    let count = "a whole number of Ready nodes";
    let nodes_ready = match b.nodes_ready {
        Field::Ok(n) => Some(n),
        Field::Missing => {
            errors.push(ApiError::field("nodes_ready", "is required", count));
            None
        }
        Field::Null | Field::Bad(_) => {
            errors.push(ApiError::field("nodes_ready", "is not a whole number", count));
            None
        }
    };
    let version = b.kubernetes_version.optional(
        "kubernetes_version",
        "must be a string",
        "the cluster's Kubernetes version, e.g. v1.31.2",
        &mut errors,
    );
    match nodes_ready {
        Some(n) if errors.is_empty() => Ok((n, version)),
        _ => Err(ApiError::BadRequest {
            detail: format!("the body must be {shape}; see errors"),
            errors,
        }),
    }
}

fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::Unauthorized("send the agent token as 'Authorization: Bearer <token>'".into())
        })
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

pub(crate) async fn handle(
    ctx: &Ctx,
    headers: &HeaderMap,
    body: &[u8],
    register: bool,
) -> Result<Reply<AgentReportView>, ApiError> {
    let token = bearer(headers)?;
    let mut c = ctx
        .store
        .find_cluster_by_agent_token(&token_hash(token))
        .await?
        .ok_or_else(|| ApiError::Unauthorized("the agent token is not valid".into()))?;
    let (nodes_ready, kubernetes_version) = report(body)?;
    let now = ts::now();
    if register {
        if c.agent_registered_at.is_some() {
            return Err(ApiError::Conflict(
                "this cluster's agent is already registered; the registration token works once. \
                 Use /v1/agent/heartbeat with the same token"
                    .into(),
            ));
        }
        if c.state() != ClusterState::Configuring {
            return Err(ApiError::Conflict(format!(
                "the cluster is {}; agents register only while it is CONFIGURING",
                c.state()
            )));
        }
        if let Some(deadline) = c.configuring_deadline
            && now > deadline
        {
            return Err(ApiError::Gone(format!(
                "the registration deadline passed at {}; the cluster fails — retry it once the agent can \
                 reach the control plane",
                ts::format(deadline)
            )));
        }
        c.agent_registered_at = Some(now);
    } else if c.agent_registered_at.is_none() {
        return Err(ApiError::Conflict(
            "register the agent (POST /v1/agent/register) before heartbeats".into(),
        ));
    }
    c.agent_last_seen = Some(now);
    let state = c.state();
    ctx.store.save_cluster(&mut c).await?;
    let requested = requested_nodes(ctx, &c).await?;
    let ready = u64::from(nodes_ready) >= requested;
    if ready && state == ClusterState::Configuring {
        let ops = ctx.store.open_operations_of(&c.cluster_id).await?;
        if let Some(op) = ops
            .iter()
            .rev()
            .find(|o| o.kind == OperationKind::Create && !o.status.is_terminal())
        {
            let event = ControlEvent::AgentReady {
                operation_id: op.operation_id.clone(),
                cluster_id: c.cluster_id.clone(),
                nodes_ready,
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
    tracing::info!(cluster_id = %c.cluster_id, register, nodes_ready = nodes_ready, requested, "agent report");
    Ok(Reply::ok(AgentReportView {
        cluster_id: c.cluster_id.to_string(),
        state: c.state(),
        nodes_ready,
        nodes_requested: requested,
        kubernetes_version,
    }))
}

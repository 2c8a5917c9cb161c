//! The audit log in the API: [`record`], a route layer over the whole router, appends one entry per
//! mutating call — refused calls (403, 409, 422…) included — and `GET /v1/audit` ([`list`]) reads a
//! tenant's entries.
//!
//! A create that is accepted writes its entry in its own TransactWriteItems (the layer hands the handler an
//! [`AuditDraft`]): the entry exists exactly when the cluster does, at no extra call. Every other call's
//! entry is written by the layer after the answer, when its outcome (status) is known — a refused call wrote
//! nothing to join. Such an entry is best effort by one PutItem: a failed write must not undo (or 5xx) a
//! change the user asked for, so it is logged and counted (`AuditWriteFailures`, on the dashboard) instead.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Extensions;
use axum::middleware::Next;
use axum::response::Response;
use lambda_http::request::RequestContext;
use serde::{Deserialize, Serialize};
use strato_domain::audit::{self, AuditEntry, AuditLog, AuditQuery, MAX_PAGE, Outcome};
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use utoipa::ToSchema;

use crate::Endpoint::{self, *};
use crate::edge::{AppState, Caller, Reply};
use crate::error::Problem;
use crate::{ApiError, Ctx};

/// The action a route's call is recorded as; `None` for routes that change nothing (reads, tickets,
/// estimates) and for the agent's own routes (no tenant principal).
pub(crate) const fn action(e: Endpoint) -> Option<&'static str> {
    Some(match e {
        CreateCluster => "cluster.create",
        UpdateCluster => "cluster.update",
        DeleteCluster => "cluster.delete",
        RetryCluster => "cluster.retry",
        DriftCheck => "cluster.drift_check",
        RestoreStateVersion => "state.restore",
        CancelOperation => "operation.cancel",
        ApproveOperation => "operation.approve",
        RejectOperation => "operation.reject",
        PutWebhook => "webhook.put",
        DeleteWebhook => "webhook.delete",
        PutPolicy => "policy.put",
        DeletePolicy => "policy.delete",
        _ => return None,
    })
}

/// The JWT authorizer's claims on a request, if any.
pub(crate) fn claims(ext: &Extensions) -> Option<&HashMap<String, String>> {
    match ext.get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV2(rc)) => rc
            .authorizer
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .map(|j| &j.claims),
        _ => None,
    }
}

/// The Lambda request id (devstack and Lambda both set it), else API Gateway's.
fn request_id(ext: &Extensions) -> Option<String> {
    ext.get::<lambda_http::Context>()
        .map(|c| c.request_id.clone())
        .filter(|id| !id.is_empty())
        .or_else(|| match ext.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(rc)) => rc.request_id.clone(),
            _ => None,
        })
}

/// The cluster and operation a path names (`/v1/clusters/{id}/…`, `/v1/operations/{id}/…`).
fn path_target(path: &str) -> (Option<ClusterId>, Option<OperationId>) {
    let mut segments = path.trim_start_matches('/').split('/');
    match (segments.next(), segments.next(), segments.next()) {
        (Some("v1"), Some("clusters"), Some(id)) => (id.parse().ok(), None),
        (Some("v1"), Some("operations"), Some(id)) => (None, id.parse().ok()),
        _ => (None, None),
    }
}

/// The cluster and operation an answer names: `Accepted` (`cluster.id`, `operation.id`) or an operation
/// (`id`, `cluster_id`). This is how a create's new cluster id gets onto its entry.
fn body_target(body: &[u8]) -> (Option<ClusterId>, Option<OperationId>) {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (None, None);
    };
    let text = |p: &str| v.pointer(p).and_then(|x| x.as_str());
    let cluster = text("/cluster/id").or_else(|| text("/cluster_id"));
    let operation = text("/operation/id").or_else(|| text("/id").filter(|id| id.starts_with("op-")));
    (
        cluster.and_then(|c| c.parse().ok()),
        operation.and_then(|o| o.parse().ok()),
    )
}

/// What a handler wants on its call's audit entry (`detail`), beside the outcome: a response extension.
#[derive(Debug, Clone)]
pub(crate) struct AuditNote(pub String);

/// What the layer knows of an audited call before its handler runs: enough to write the call's entry once
/// the outcome is known. A handler whose change is written with its entry (a create) marks it
/// [written](Self::written), and the layer writes nothing more.
#[derive(Debug, Clone)]
pub struct AuditDraft {
    tenant: TenantId,
    principal: String,
    action: &'static str,
    request_id: Option<String>,
    path_cluster: Option<ClusterId>,
    path_operation: Option<OperationId>,
    written: Arc<AtomicBool>,
}

impl AuditDraft {
    /// The draft of a call by `principal` of `tenant`, recorded as `action`, with the request's id.
    pub fn new(
        tenant: TenantId,
        principal: impl Into<String>,
        action: &'static str,
        request_id: Option<String>,
    ) -> Self {
        Self {
            tenant,
            principal: principal.into(),
            action,
            request_id,
            path_cluster: None,
            path_operation: None,
            written: Arc::default(),
        }
    }

    /// The call's entry at `time`, answered with `status`: on the cluster the path names, else the answer's
    /// (`cluster`), and on the operation the answer names (`operation`), else the path's.
    pub fn entry(
        &self,
        time: time::OffsetDateTime,
        status: u16,
        cluster: Option<ClusterId>,
        operation: Option<OperationId>,
        detail: Option<String>,
    ) -> AuditEntry {
        let mut entry = AuditEntry::new(
            self.tenant.clone(),
            time,
            self.principal.clone(),
            self.action,
            Outcome::of_status(status),
        )
        .on_cluster(self.path_cluster.clone().or(cluster))
        .on_operation(operation.or_else(|| self.path_operation.clone()));
        entry.request_id = self.request_id.clone();
        entry.status = Some(status);
        entry.detail = detail;
        entry
    }

    /// The entry of a change accepted (202) with the new `operation` on `cluster`, as the layer would write
    /// it from the answer: for the change's own write.
    pub fn accepted(
        &self,
        time: time::OffsetDateTime,
        cluster: &ClusterId,
        operation: &OperationId,
    ) -> AuditEntry {
        self.entry(time, 202, Some(cluster.clone()), Some(operation.clone()), None)
    }

    /// The entry was written with the change it records.
    pub fn written(&self) {
        self.written.store(true, Ordering::Release);
    }

    /// Whether the entry was written with the change it records (the layer then writes none).
    pub fn is_written(&self) -> bool {
        self.written.load(Ordering::Acquire)
    }
}

/// Route layer: after an audited route answered, one entry with the caller, the target and the outcome —
/// unless the handler wrote it with its change ([`AuditDraft::written`]). Calls without a tenant (no or a
/// bad token: 401) have no log to go into and are not recorded.
pub(crate) async fn record(State(ctx): State<AppState>, mut req: Request, next: Next) -> Response {
    let endpoint = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| crate::edge::route_for(req.method().as_str(), m.as_str()))
        .map(|r| r.endpoint);
    let Some(action) = endpoint.and_then(action) else {
        return next.run(req).await;
    };
    let claims = claims(req.extensions());
    let tenant = claims
        .and_then(|c| c.get(&ctx.config.tenant_claim))
        .and_then(|t| t.parse::<TenantId>().ok());
    let Some(tenant) = tenant else {
        return next.run(req).await;
    };
    let principal = claims
        .and_then(|c| c.get("sub"))
        .cloned()
        .unwrap_or_else(|| "unknown".into());
    let (path_cluster, path_operation) = path_target(req.uri().path());
    let draft = AuditDraft {
        path_cluster,
        path_operation,
        ..AuditDraft::new(tenant, principal, action, request_id(req.extensions()))
    };
    req.extensions_mut().insert(draft.clone());
    let resp = next.run(req).await;
    if draft.is_written() {
        return resp;
    }
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    // Answers are small JSON documents, already in memory: reading them costs nothing.
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let (body_cluster, body_op) = if status < 300 {
        body_target(&bytes)
    } else {
        (None, None)
    };
    let detail = if let Some(p) = parts.extensions.get::<Problem>() {
        Some(crate::requests::truncate(&p.title, 200))
    } else {
        parts
            .extensions
            .get::<AuditNote>()
            .map(|AuditNote(note)| crate::requests::truncate(note, 200))
    };
    let entry = draft.entry(strato_domain::ts::now(), status, body_cluster, body_op, detail);
    audit::record(&ctx.audit, entry).await;
    Response::from_parts(parts, Body::from(bytes))
}

/// `GET /v1/audit` query parameters, read as text and checked here (422 naming each).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AuditParams {
    pub cluster: Option<String>,
    pub since: Option<String>,
    pub actor: Option<String>,
    pub limit: Option<String>,
    pub next: Option<String>,
}

/// One entry of the audit log.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AuditEntry)]
pub(crate) struct AuditEntryView {
    /// When it happened (RFC 3339, UTC).
    pub time: String,
    /// The token's `sub`, or `strato:<function>` for what Strato did on its own.
    pub actor: String,
    /// `cluster.create`, `cluster.delete`, `webhook.put`, `operation.cancel`, `operation.dispatch`,
    /// `lock.release`, `drift.reconcile`…
    pub action: String,
    pub cluster_id: Option<String>,
    pub operation_id: Option<String>,
    pub request_id: Option<String>,
    /// `accepted` (a request that queued an operation, 202: how the operation ended is its own
    /// `operation.end` entry), `succeeded`, `refused` (a 4xx), `failed`, or `cancelled` (an operation's
    /// end).
    #[schema(pattern = "^(accepted|succeeded|refused|failed|cancelled)$")]
    pub outcome: String,
    /// The HTTP status of an API call.
    pub status: Option<u16>,
    pub detail: Option<String>,
}

/// A page of audit entries, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AuditPage)]
pub(crate) struct AuditPageView {
    pub entries: Vec<AuditEntryView>,
    /// The next page's token (`?next=`), or null on the last page.
    pub next: Option<String>,
}

fn view(e: AuditEntry) -> AuditEntryView {
    AuditEntryView {
        time: strato_domain::ts::format(e.time),
        actor: e.principal,
        action: e.action,
        cluster_id: e.cluster_id.map(|c| c.to_string()),
        operation_id: e.operation_id.map(|o| o.to_string()),
        request_id: e.request_id,
        outcome: strato_domain::vitals::label(&e.outcome),
        status: e.status,
        detail: e.detail,
    }
}

/// The page token: the last entry's id, hex-encoded (opaque to clients).
fn cursor(id: &str) -> String {
    hex::encode(id)
}

/// An entry id back from a token; anything that is not one of ours is refused.
fn uncursor(token: &str) -> Option<String> {
    let id = String::from_utf8(hex::decode(token).ok()?).ok()?;
    let (time, unique) = id.split_once('#')?;
    (strato_domain::ts::parse(time).is_some()
        && unique.len() == 32
        && unique.bytes().all(|b| b.is_ascii_hexdigit()))
    .then_some(id)
}

/// The query a request's parameters ask for, or every problem with them.
pub(crate) fn parse(p: &AuditParams, now: time::OffsetDateTime) -> Result<AuditQuery, ApiError> {
    let mut errors = Vec::new();
    let cluster = p.cluster.as_deref().filter(|c| !c.is_empty()).and_then(|c| {
        c.parse::<ClusterId>()
            .map_err(|_| {
                errors.push(ApiError::field(
                    "cluster",
                    "is not a cluster id",
                    "cl- and 32 hex digits",
                ))
            })
            .ok()
    });
    let since = p.since.as_deref().filter(|s| !s.is_empty()).and_then(|s| {
        let t = audit::parse_since(s, now);
        if t.is_none() {
            errors.push(ApiError::field(
                "since",
                "is neither a time nor a duration",
                "an RFC 3339 time (2026-11-25T10:00:00Z) or a duration back from now (90s, 15m, 24h, 7d)",
            ));
        }
        t
    });
    let actor = p.actor.as_deref().filter(|a| !a.is_empty()).and_then(|a| {
        if a.len() > 256 || a.chars().any(char::is_control) {
            errors.push(ApiError::field(
                "actor",
                "is not a principal",
                "a token's sub, at most 256 characters",
            ));
            return None;
        }
        Some(a.to_owned())
    });
    let limit = crate::requests::page_limit(p.limit.as_deref(), MAX_PAGE, MAX_PAGE, &mut errors);
    let after = p.next.as_deref().filter(|n| !n.is_empty()).and_then(|n| {
        let id = uncursor(n);
        if id.is_none() {
            errors.push(ApiError::field(
                "next",
                "is not a page token",
                "the 'next' value of the previous page",
            ));
        }
        id
    });
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    Ok(AuditQuery {
        cluster,
        actor,
        since,
        limit,
        after,
    })
}

/// `GET /v1/audit`: the caller's tenant's entries only (the query is keyed by the token's tenant).
pub(crate) async fn list(
    ctx: &Ctx,
    caller: &Caller,
    p: &AuditParams,
) -> Result<Reply<AuditPageView>, ApiError> {
    let q = parse(p, strato_domain::ts::now())?;
    let page = ctx.audit.query(&caller.tenant, &q).await?;
    Ok(Reply::ok(AuditPageView {
        entries: page.entries.into_iter().map(view).collect(),
        next: page.next.as_deref().map(cursor),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn every_mutating_tenant_route_is_audited() {
        for r in crate::ROUTES {
            let tenant = crate::scopes::required(r.endpoint).is_some();
            // Tickets and estimates change nothing; they are POSTs for other reasons.
            let changes = r.method != "GET" && !matches!(r.endpoint, CreateWsTicket | CreateEstimate);
            assert_eq!(
                action(r.endpoint).is_some(),
                tenant && changes,
                "{} {}",
                r.method,
                r.path
            );
        }
    }

    #[test]
    fn targets_come_from_the_path_or_the_answer() {
        let cl = "cl-0123456789abcdef0123456789abcdef";
        let op = "op-0123456789abcdef0123456789abcdef";
        assert_eq!(
            path_target(&format!("/v1/clusters/{cl}/retry"))
                .0
                .unwrap()
                .as_str(),
            cl
        );
        assert_eq!(
            path_target(&format!("/v1/operations/{op}/cancel"))
                .1
                .unwrap()
                .as_str(),
            op
        );
        assert_eq!(path_target("/v1/clusters/nope"), (None, None));
        let accepted = serde_json::json!({"cluster": {"id": cl}, "operation": {"id": op}}).to_string();
        let (c, o) = body_target(accepted.as_bytes());
        assert_eq!((c.unwrap().as_str(), o.unwrap().as_str()), (cl, op));
        let operation = serde_json::json!({"id": op, "cluster_id": cl}).to_string();
        let (c, o) = body_target(operation.as_bytes());
        assert_eq!((c.unwrap().as_str(), o.unwrap().as_str()), (cl, op));
    }

    #[test]
    fn bad_parameters_are_named_and_tokens_round_trip() {
        let now = datetime!(2026-11-25 12:00:00 UTC);
        let bad = AuditParams {
            since: Some("last tuesday".into()),
            limit: Some("1000".into()),
            next: Some("zz".into()),
            cluster: Some("prod".into()),
            ..Default::default()
        };
        let Err(ApiError::Invalid { errors, .. }) = parse(&bad, now) else {
            panic!("422 expected")
        };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["cluster", "since", "limit", "next"]);
        let id = audit::entry_id(now);
        let ok = AuditParams {
            since: Some("1h".into()),
            next: Some(cursor(&id)),
            limit: Some("5".into()),
            ..Default::default()
        };
        let q = parse(&ok, now).unwrap();
        assert_eq!(q.after.as_deref(), Some(id.as_str()));
        assert_eq!(q.since, Some(datetime!(2026-11-25 11:00:00 UTC)));
        assert_eq!(q.limit, 5);
        assert_eq!(uncursor(&hex::encode("2026-11-25T12:00:00Z#short")), None);
    }
}

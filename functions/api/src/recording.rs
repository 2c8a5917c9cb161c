//! The audit log's recording: [`record`], a route layer over the whole router, makes one entry per mutating
//! call — refused calls (403, 409, 422…) included — with the action the route table names for the route.
//!
//! A create that is accepted writes its entry in its own TransactWriteItems (the layer hands the handler an
//! [`AuditDraft`]): the entry exists exactly when the cluster does, at no extra call. Every other call's
//! entry is written by the layer after the answer, when its outcome (status) is known — a refused call wrote
//! nothing to join. Such an entry is best effort by one PutItem: a failed write must not undo (or 5xx) a
//! change the user asked for, so it is logged and counted (`AuditWriteFailures`, on the dashboard) instead.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Extensions;
use axum::middleware::Next;
use axum::response::Response;
use lambda_http::request::RequestContext;
use strato_domain::audit;
use strato_domain::ids::{ClusterId, OperationId, TenantId};

use crate::audit::AuditNote;
use crate::audit_draft::AuditDraft;
use crate::edge::AppState;
use crate::operator::PLATFORM_LOG;
use crate::problem::Problem;

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

/// Route layer: after an audited route answered, one entry with the caller, the target and the outcome —
/// unless the handler wrote it with its change ([`AuditDraft::written`]). Calls without a tenant (no or a
/// bad token: 401) have no log to go into and are not recorded.
pub(crate) async fn record(State(ctx): State<AppState>, mut req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| crate::routes::route_for(req.method().as_str(), m.as_str()));
    let Some((action, access)) = route.and_then(|r| r.audit.map(|a| (a, r.access))) else {
        return next.run(req).await;
    };
    if access == crate::route::Access::Platform {
        return record_operator(&ctx, action, req, next).await;
    }
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
    let draft = AuditDraft::new(tenant, principal, action, request_id(req.extensions()))
        .on_path(path_cluster, path_operation);
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

/// The tenant an operator route acts on: the path's (`/v1/admin/tenants/{tenant}…`); the platform's log for
/// the template catalog's routes (`/v1/admin/templates…`) and the platform's rollouts
/// (`/v1/admin/rollouts…`: start, pause, resume, abort).
fn admin_path_tenant(path: &str) -> Option<TenantId> {
    let mut segments = path.trim_start_matches('/').split('/');
    match (segments.next(), segments.next(), segments.next(), segments.next()) {
        (Some("v1"), Some("admin"), Some("tenants"), Some(t)) => t.parse().ok(),
        (Some("v1"), Some("admin"), Some("templates" | "rollouts"), _) => PLATFORM_LOG.parse().ok(),
        _ => None,
    }
}

/// The `name@version` a catalog route's path names (`/v1/admin/templates/{name}/versions/{version}…`).
fn template_version(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/v1/admin/templates/")?;
    let mut segments = rest.split('/');
    let (name, versions, version) = (segments.next()?, segments.next()?, segments.next()?);
    (versions == "versions" && !name.is_empty() && !version.is_empty()).then(|| {
        let clean = |s: &str| crate::requests::truncate(s, 64);
        format!("{}@{}", clean(name), clean(version))
    })
}

/// An operator's call, recorded in the audit log of the tenant it acts on (the path's, or a create's new
/// tenant from the answer) under the token's `sub`: the tenant's administrators see who changed their
/// settings. A call that names no valid tenant (a create refused for its id) has no log to go into.
async fn record_operator(ctx: &AppState, action: &'static str, req: Request, next: Next) -> Response {
    let principal = claims(req.extensions())
        .and_then(|c| c.get("sub"))
        .cloned()
        .unwrap_or_else(|| "unknown".into());
    let path_tenant = admin_path_tenant(req.uri().path());
    let version = template_version(req.uri().path());
    let request_id = request_id(req.extensions());
    let resp = next.run(req).await;
    let status = resp.status().as_u16();
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    // Only a tenant's create answers with the tenant's id; a rollout's `id` names no tenant.
    let answered = || {
        if !action.starts_with("admin.tenant.") {
            return None;
        }
        serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("id").and_then(|i| i.as_str()).and_then(|i| i.parse().ok()))
    };
    let tenant = path_tenant.or_else(|| if status < 300 { answered() } else { None });
    if let Some(tenant) = tenant {
        let problem = parts
            .extensions
            .get::<Problem>()
            .map(|p| crate::requests::truncate(&p.title, 200));
        // A catalog action names the version it acted on (the platform's log holds every template's).
        let detail = match (version, problem) {
            (Some(v), Some(p)) => Some(format!("{v}: {p}")),
            (v, p) => v.or(p),
        };
        let entry = AuditDraft::new(tenant, principal, action, request_id).entry(
            strato_domain::ts::now(),
            status,
            None,
            None,
            detail,
        );
        audit::record(&ctx.audit, entry).await;
    }
    Response::from_parts(parts, Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mutating_tenant_route_is_audited() {
        use crate::route::Endpoint::{CreateEstimate, CreateWsTicket};
        for r in crate::routes::ROUTES {
            let tenant = r.scope().is_some();
            // Tickets and estimates change nothing; they are POSTs for other reasons.
            let changes = r.method != "GET" && !matches!(r.endpoint, CreateWsTicket | CreateEstimate);
            assert_eq!(r.audit.is_some(), tenant && changes, "{} {}", r.method, r.path);
        }
    }

    #[test]
    fn a_catalog_action_names_its_version() {
        assert_eq!(
            template_version("/v1/admin/templates/aws-eks-basic/versions/1.2.0/yank").as_deref(),
            Some("aws-eks-basic@1.2.0")
        );
        assert_eq!(template_version("/v1/admin/templates"), None);
        assert_eq!(template_version("/v1/admin/tenants/acme"), None);
    }

    #[test]
    fn an_operator_call_is_recorded_on_the_tenant_its_path_names() {
        assert_eq!(
            admin_path_tenant("/v1/admin/tenants/acme").unwrap().as_str(),
            "acme"
        );
        assert_eq!(
            admin_path_tenant("/v1/admin/tenants/acme/audit")
                .unwrap()
                .as_str(),
            "acme"
        );
        assert_eq!(admin_path_tenant("/v1/admin/tenants"), None);
        assert_eq!(admin_path_tenant("/v1/admin/clusters"), None);
        let platform = admin_path_tenant("/v1/admin/templates/aws-eks-basic/versions/1.2.0/yank");
        assert_eq!(platform.unwrap().as_str(), PLATFORM_LOG);
        for rollout in [
            "/v1/admin/rollouts",
            "/v1/admin/rollouts/ro-0123456789abcdef0123456789abcdef/pause",
            "/v1/admin/rollouts/ro-0123456789abcdef0123456789abcdef/abort",
        ] {
            assert_eq!(
                admin_path_tenant(rollout).unwrap().as_str(),
                PLATFORM_LOG,
                "{rollout}"
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
}

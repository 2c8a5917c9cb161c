//! The audit log in the API: `GET /v1/audit` ([`list`]) reads a tenant's entries, and [`AuditNote`] is
//! what a handler adds to its call's entry; [`crate::recording`] writes the entries.

use serde::{Deserialize, Serialize};
use strato_domain::audit::{self, AuditEntry, AuditLog, AuditQuery, MAX_PAGE};
use strato_domain::ids::ClusterId;
use utoipa::ToSchema;

use crate::caller::Caller;
use crate::edge::Reply;
use crate::{context::Ctx, error::ApiError};

/// What a handler wants on its call's audit entry (`detail`), beside the outcome: a response extension.
#[derive(Debug, Clone)]
pub(crate) struct AuditNote(pub String);

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
    list_of(ctx, &caller.tenant, p).await
}

/// A tenant's entries: its own administrators' reading, and the platform operator's.
pub(crate) async fn list_of(
    ctx: &Ctx,
    tenant: &strato_domain::ids::TenantId,
    p: &AuditParams,
) -> Result<Reply<AuditPageView>, ApiError> {
    let q = parse(p, strato_domain::ts::now())?;
    let page = ctx.audit.query(tenant, &q).await?;
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

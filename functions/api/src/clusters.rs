//! Cluster routes: create, list, get, update (PATCH), delete, retry, drift check. The decisions are
//! [`crate::decide`]'s; these answer with views.

use axum::response::{IntoResponse, Response};
use strato_aws::store::ClusterFilter;
use strato_domain::ids::{ClusterId, ClusterName};
use strato_domain::model::{Cluster, ClusterState};
use strato_domain::validate::FieldError;

use crate::audit_draft::AuditDraft;
use crate::decide::{IfMatch, Started, Updated};
use crate::policies::TenantRead;
use crate::requests::{SpecBody, UpdateBody, page_after, page_limit};
use crate::views::{self, TemplateCache, sensitive_of};
use crate::views::{Accepted, ClusterPage, ClusterView, LastOperationView};
use crate::{caller::Caller, context::Ctx, edge::Reply, error::ApiError};

pub(crate) const DEFAULT_PAGE: i32 = 20;
pub(crate) const MAX_PAGE: i32 = 100;

/// A create; `audit`, the request's entry, is written in the create's own transaction.
pub(crate) async fn create(
    ctx: &Ctx,
    caller: &Caller,
    read: Option<&TenantRead>,
    body: SpecBody,
    audit: Option<&AuditDraft>,
) -> Result<Reply<Accepted>, ApiError> {
    let governing = crate::policies::load(ctx, caller, read).await?;
    Ok(accepted(
        ctx.api_with(&governing.set, governing.rules, audit)
            .create(caller, body)
            .await?,
    ))
}

/// 202 with the cluster and its operation, and where to follow the operation.
pub(crate) fn accepted(s: Started) -> Reply<Accepted> {
    let sensitive = sensitive_of(&s.template);
    let location = format!("/v1/operations/{}", s.operation.operation_id);
    let version = s.cluster.version;
    Reply::accepted(
        Accepted {
            cluster: views::cluster(&s.cluster, Some(&sensitive), Some((&s.operation).into())),
            operation: views::operation(&s.operation, Some(&sensitive)),
        },
        location,
    )
    .with_etag(version)
}

/// The caller's cluster, or 404 for a malformed id, a missing cluster and another tenant's cluster alike.
pub(crate) async fn load(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Cluster, ApiError> {
    ctx.api().load_cluster(caller, id).await
}

pub(crate) async fn list(
    ctx: &Ctx,
    caller: &Caller,
    q: &crate::requests::ListClustersQuery,
) -> Result<Reply<ClusterPage>, ApiError> {
    let mut errors = Vec::new();
    let filter = list_filter(q, &mut errors);
    let limit = page_limit(
        q.limit.as_deref(),
        DEFAULT_PAGE as u32,
        MAX_PAGE as u32,
        &mut errors,
    ) as i32;
    let after = page_after(q.next.as_deref(), |n| n.parse::<ClusterId>().ok(), &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::BadRequest {
            detail: "the query string has invalid parameters; see errors".into(),
            errors,
        });
    }
    let (clusters, next) = ctx
        .store
        .list_clusters_matching(&caller.tenant, &filter, limit, after.as_ref())
        .await?;
    // One BatchGetItem for the page's last operations (a page is at most 100, BatchGetItem's limit).
    let ids: Vec<_> = clusters
        .iter()
        .filter_map(|c| c.pending_operation.clone())
        .collect();
    let briefs = if ids.is_empty() {
        Default::default()
    } else {
        ctx.store.operation_briefs(&ids).await?
    };
    let mut cache = TemplateCache::new(&ctx.store);
    let mut out = Vec::with_capacity(clusters.len());
    for c in &clusters {
        let sensitive = cache.sensitive(&c.spec).await?;
        let last = c.pending_operation.as_ref().and_then(|id| briefs.get(id));
        out.push(views::cluster(c, sensitive.as_ref(), last.map(Into::into)));
    }
    Ok(Reply::ok(ClusterPage {
        clusters: out,
        next: next.map(|n| n.to_string()),
    }))
}

/// The listing's filter from `?state=` (any case), `?name=` and `?include_deleted=`; a value that is none of
/// those is a field error naming it. DELETED clusters are left out unless asked for, by state or with
/// `include_deleted=true`.
pub(crate) fn list_filter(
    q: &crate::requests::ListClustersQuery,
    errors: &mut Vec<FieldError>,
) -> ClusterFilter {
    let states = ClusterState::ALL.map(|s| s.as_str()).join(", ");
    let state = q.state.as_deref().and_then(|s| {
        s.to_ascii_uppercase()
            .parse::<ClusterState>()
            .map_err(|_| errors.push(ApiError::field("state", "is not a cluster state", &states)))
            .ok()
    });
    let name = q.name.as_deref().and_then(|n| {
        n.parse::<ClusterName>()
            .map(|n| n.to_string())
            .map_err(|_| {
                errors.push(ApiError::field(
                    "name",
                    "is not a cluster name",
                    "3-40 characters of a-z, 0-9 and '-'",
                ))
            })
            .ok()
    });
    let include_deleted = match q.include_deleted.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            errors.push(ApiError::field(
                "include_deleted",
                "is not a boolean",
                "true or false",
            ));
            false
        }
    };
    ClusterFilter {
        state,
        name,
        include_deleted,
    }
}

pub(crate) async fn get(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<ClusterView>, ApiError> {
    let c = load(ctx, caller, id).await?;
    let sensitive = TemplateCache::new(&ctx.store).sensitive(&c.spec).await?;
    let last = last_operation(ctx, &c).await?;
    Ok(Reply::ok(views::cluster(&c, sensitive.as_ref(), last)).with_etag(c.version))
}

/// The cluster's newest operation, as its views show it.
async fn last_operation(ctx: &Ctx, c: &Cluster) -> Result<Option<LastOperationView>, ApiError> {
    let Some(id) = &c.pending_operation else {
        return Ok(None);
    };
    let briefs = ctx.store.operation_briefs(std::slice::from_ref(id)).await?;
    Ok(briefs.get(id).map(Into::into))
}

/// 200 with the cluster for a change of settings alone, else 202 with the update operation; `If-Match`
/// (the cluster's ETag) makes either conditional on the cluster's version (412 otherwise).
pub(crate) async fn update(
    ctx: &Ctx,
    caller: &Caller,
    read: Option<&TenantRead>,
    id: &str,
    body: UpdateBody,
    if_match: Option<&IfMatch>,
) -> Result<Response, ApiError> {
    let governing = crate::policies::load(ctx, caller, read).await?;
    let Updated {
        cluster,
        template,
        operation,
        approval_lowered,
    } = ctx
        .api_with(&governing.set, governing.rules, None)
        .update_if(caller, id, body, if_match)
        .await?;
    let mut resp = match operation {
        None => {
            let last = last_operation(ctx, &cluster).await?;
            Reply::ok(views::cluster(&cluster, Some(&sensitive_of(&template)), last))
                .with_etag(cluster.version)
                .into_response()
        }
        Some(operation) => accepted(Started {
            cluster,
            operation,
            template,
        })
        .into_response(),
    };
    // An administrator lowering the approval setting is what the audit entry of this call must show.
    if let Some(lowered) = approval_lowered {
        resp.extensions_mut()
            .insert(crate::audit::AuditNote(lowered.detail()));
    }
    Ok(resp)
}

pub(crate) async fn delete(
    ctx: &Ctx,
    caller: &Caller,
    read: Option<&TenantRead>,
    id: &str,
) -> Result<Reply<Accepted>, ApiError> {
    let governing = crate::policies::load(ctx, caller, read).await?;
    Ok(accepted(
        ctx.api_with(&governing.set, governing.rules, None)
            .delete(caller, id)
            .await?,
    ))
}

pub(crate) async fn retry(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<Accepted>, ApiError> {
    Ok(accepted(ctx.api().retry(caller, id).await?))
}

/// An on-demand drift check; asking again while one is open answers with that one.
pub(crate) async fn drift_check(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<Accepted>, ApiError> {
    Ok(accepted(ctx.api().drift_check(caller, id).await?))
}

#[cfg(test)]
mod tests {
    use crate::requests::page_limit;

    #[test]
    fn a_page_size_is_a_whole_number_in_range_and_an_empty_one_is_refused() {
        let limit = |raw: Option<&str>| {
            let mut errors = Vec::new();
            let n = page_limit(raw, 20, 100, &mut errors);
            (n, errors.iter().map(|e| e.field.clone()).collect::<Vec<_>>())
        };
        assert_eq!(limit(None), (20, vec![]));
        assert_eq!(limit(Some("7")), (7, vec![]));
        assert_eq!(limit(Some("100")), (100, vec![]));
        // The contract says integer: `?limit=` is not "no limit given" (schemathesis sent it).
        for bad in ["", "0", "101", "-1", "ten", " 5"] {
            assert_eq!(
                limit(Some(bad)).1,
                ["limit"],
                "{bad:?} is refused, naming the field"
            );
        }
    }

    #[test]
    fn a_listing_leaves_deleted_clusters_out_unless_asked_and_reads_states_in_any_case() {
        use strato_domain::model::ClusterState;

        use super::list_filter;
        use crate::requests::ListClustersQuery;
        let filter = |state: Option<&str>, name: Option<&str>, deleted: Option<&str>| {
            let q = ListClustersQuery {
                state: state.map(str::to_owned),
                name: name.map(str::to_owned),
                include_deleted: deleted.map(str::to_owned),
                ..ListClustersQuery::default()
            };
            let mut errors = Vec::new();
            let f = list_filter(&q, &mut errors);
            (f, errors.iter().map(|e| e.field.clone()).collect::<Vec<_>>())
        };
        let (f, errors) = filter(None, None, None);
        assert!(errors.is_empty() && !f.include_deleted && f.state.is_none() && f.name.is_none());
        assert!(filter(None, None, Some("true")).0.include_deleted);
        for state in ["active", "Active", "ACTIVE"] {
            assert_eq!(
                filter(Some(state), None, None).0.state,
                Some(ClusterState::Active),
                "{state}"
            );
        }
        assert_eq!(filter(None, Some("demo2"), None).0.name.as_deref(), Some("demo2"));
        for (q, field) in [
            (filter(Some("running"), None, None), "state"),
            (filter(None, Some("No Such/Name"), None), "name"),
            (filter(None, None, Some("yes")), "include_deleted"),
        ] {
            assert_eq!(q.1, [field]);
        }
    }
}

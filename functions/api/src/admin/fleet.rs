//! `GET /v1/admin/clusters`: the clusters of every tenant, read-only, filtered by tenant, state and template
//! (name, version). What it reads, bounded per request by `limit`:
//!
//! - with `tenant`: one Query of that tenant's partition of the clusters table (`limit` items, the state
//!   filtered by the read; the template filtered on the page, so a page may be short and still have a next);
//! - without: one Scan page of the clusters table reading at most `limit` items (the filters apply to the
//!   items read, so a page may be short or even empty and still have a next). Never the whole table.

use serde::{Deserialize, Serialize};
use strato_aws::store::{ClusterFilter, FleetFilter, FleetKey};
use strato_domain::ids::TenantId;
use strato_domain::model::{Cluster, ClusterState};
use utoipa::ToSchema;

use crate::edge::Reply;
use crate::views::TemplateRefView;
use crate::{context::Ctx, error::ApiError, schema};

/// `GET /v1/admin/clusters` query parameters, read as text and checked (422 naming each).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FleetQuery {
    pub tenant: Option<String>,
    pub state: Option<String>,
    pub template: Option<String>,
    pub version: Option<String>,
    pub limit: Option<String>,
    pub next: Option<String>,
}

/// A cluster as the platform operator lists it: whose, what and where — not its variables or outputs,
/// which are the tenant's.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminCluster)]
pub(crate) struct FleetClusterView {
    pub id: String,
    pub tenant: String,
    pub name: String,
    #[schema(value_type = schema::ClusterState)]
    pub state: ClusterState,
    pub template: TemplateRefView,
    pub provider: String,
    pub region: String,
    #[schema(value_type = schema::Timestamp)]
    pub created_at: String,
    #[schema(value_type = schema::Timestamp)]
    pub updated_at: String,
}

/// A page of clusters across tenants.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AdminClusterPage)]
pub(crate) struct FleetPageView {
    pub clusters: Vec<FleetClusterView>,
    /// The next page's token (`?next=`), or null when everything was read.
    pub next: Option<String>,
}

fn view(c: &Cluster) -> FleetClusterView {
    FleetClusterView {
        id: c.cluster_id.to_string(),
        tenant: c.tenant_id.to_string(),
        name: c.spec.name.to_string(),
        state: c.state(),
        template: (&c.spec.template).into(),
        provider: c.spec.provider.as_str().to_owned(),
        region: c.spec.region.clone(),
        created_at: strato_domain::ts::format(c.created_at),
        updated_at: strato_domain::ts::format(c.updated_at),
    }
}

fn cursor(k: &FleetKey) -> String {
    hex::encode(format!("{}/{}", k.tenant, k.cluster))
}

fn uncursor(token: &str) -> Option<FleetKey> {
    let text = String::from_utf8(hex::decode(token).ok()?).ok()?;
    let (tenant, cluster) = text.split_once('/')?;
    Some(FleetKey {
        tenant: tenant.parse().ok()?,
        cluster: cluster.parse().ok()?,
    })
}

/// What a request asks for, or every problem with it.
fn parse(q: &FleetQuery) -> Result<(Option<TenantId>, FleetFilter, u32, Option<FleetKey>), ApiError> {
    let mut errors = Vec::new();
    let tenant = crate::requests::query_param(
        &mut errors,
        "tenant",
        q.tenant.as_deref(),
        |t| t.parse::<TenantId>().ok(),
        "is not a tenant id",
        "letters, digits, - and _",
    );
    let states = ClusterState::ALL.map(|s| s.as_str()).join(", ");
    let state = q.state.as_deref().filter(|s| !s.is_empty()).and_then(|s| {
        s.to_ascii_uppercase()
            .parse::<ClusterState>()
            .map_err(|_| errors.push(ApiError::field("state", "is not a cluster state", &states)))
            .ok()
    });
    let mut text = |name: &str, v: &Option<String>| {
        v.as_deref().filter(|v| !v.is_empty()).and_then(|v| {
            if v.len() > 64 || !v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c)) {
                errors.push(ApiError::field(
                    name,
                    "is not a template name or version",
                    "up to 64 of a-z, 0-9, - _ . +",
                ));
                None
            } else {
                Some(v.to_owned())
            }
        })
    };
    let template = text("template", &q.template);
    let version = text("version", &q.version);
    let limit = crate::requests::page_limit(q.limit.as_deref(), 50, 100, &mut errors);
    let after = crate::requests::page_after(q.next.as_deref(), uncursor, &mut errors);
    if let (Some(t), Some(a)) = (&tenant, &after)
        && t != &a.tenant
    {
        errors.push(ApiError::field(
            "next",
            "is a page token of another tenant's listing",
            "the 'next' value of the previous page",
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    Ok((
        tenant,
        FleetFilter {
            state,
            template,
            version,
        },
        limit,
        after,
    ))
}

pub(crate) async fn list(ctx: &Ctx, q: &FleetQuery) -> Result<Reply<FleetPageView>, ApiError> {
    let (tenant, filter, limit, after) = parse(q)?;
    let (clusters, next) = match tenant {
        Some(t) => {
            let by_state = ClusterFilter {
                state: filter.state,
                name: None,
                include_deleted: true,
            };
            let (mut page, next) = ctx
                .store
                .list_clusters_matching(&t, &by_state, limit as i32, after.as_ref().map(|a| &a.cluster))
                .await?;
            page.retain(|c| {
                filter
                    .template
                    .as_ref()
                    .is_none_or(|n| &c.spec.template.name == n)
                    && filter
                        .version
                        .as_ref()
                        .is_none_or(|v| &c.spec.template.version == v)
            });
            (page, next.map(|cluster| FleetKey { tenant: t, cluster }))
        }
        None => {
            ctx.store
                .scan_fleet(&filter, limit as i32, after.as_ref())
                .await?
        }
    };
    Ok(Reply::ok(FleetPageView {
        clusters: clusters.iter().map(view).collect(),
        next: next.as_ref().map(cursor),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters_are_named_and_tokens_round_trip() {
        let q = FleetQuery {
            tenant: Some("a b".into()),
            state: Some("sleeping".into()),
            template: Some("eks;drop".into()),
            limit: Some("0".into()),
            next: Some("zz".into()),
            ..Default::default()
        };
        let Err(ApiError::Invalid { errors, .. }) = parse(&q) else {
            panic!("422 expected")
        };
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["tenant", "state", "template", "limit", "next"]);
        let key = FleetKey {
            tenant: "acme".parse().unwrap(),
            cluster: "cl-0123456789abcdef0123456789abcdef".parse().unwrap(),
        };
        assert_eq!(uncursor(&cursor(&key)), Some(key.clone()));
        let q = FleetQuery {
            state: Some("active".into()),
            template: Some("eks".into()),
            version: Some("1.2.0".into()),
            next: Some(cursor(&key)),
            ..Default::default()
        };
        let (tenant, f, limit, after) = parse(&q).unwrap();
        assert_eq!(
            (tenant, f.state, limit, after),
            (None, Some(ClusterState::Active), 50, Some(key))
        );
        assert_eq!(
            (f.template.as_deref(), f.version.as_deref()),
            (Some("eks"), Some("1.2.0"))
        );
    }
}

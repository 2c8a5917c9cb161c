//! Fleet rollouts over the API: `POST /v1/rollouts` selects the caller's fleet on a template (the platform
//! operator's, across tenants), records the rollout with its clusters claimed and starts its first runs;
//! `GET` reads it (the fleet summary, members paged) or lists them; `pause`, `resume` and `abort` feed the
//! operator's input. The decisions are `strato-rollout`'s; the runs are the api's own plan and update
//! decisions ([`crate::rollout_runs`]). What happens next is driven by the runs' ends (the status function)
//! and the clock (the scheduler).

mod body;
pub(crate) mod handlers;
mod views;

pub(crate) use body::{ResumeBody, RolloutBody};
pub(crate) use views::{MembersQuery, RolloutListView, RolloutView};
// The document's schemas name them; the handlers reach them through `RolloutView`.
#[cfg(feature = "openapi")]
pub(crate) use views::{RolloutMemberView, SummaryView};

use strato_aws::store::{ClusterFilter, FleetFilter, FleetKey};
use strato_domain::ids::TenantId;
use strato_domain::model::Cluster;
use strato_domain::ports::Templates;
use strato_rollout::effects::{Notice, Runs, carry_out};
use strato_rollout::machine::{Input, Member};
use strato_rollout::store::{Owner, Record, RolloutId, RolloutStore, apply};
use strato_rollout::{Rollout, RolloutError, select};

use crate::caller::Caller;
use crate::context::Ctx;
use crate::edge::Reply;
use crate::error::ApiError;
use crate::rollout_runs::DecideRuns;

/// Who asks: a tenant (its own fleet and rollouts) or the platform operator (every tenant's).
#[derive(Debug, Clone)]
pub(crate) enum Viewer {
    Tenant(Caller),
    Platform { subject: String },
}

impl Viewer {
    fn tenant(&self) -> Option<&TenantId> {
        match self {
            Self::Tenant(c) => Some(&c.tenant),
            Self::Platform { .. } => None,
        }
    }

    fn who(&self) -> String {
        match self {
            Self::Tenant(c) => c.principal().to_owned(),
            Self::Platform { subject } => subject.clone(),
        }
    }
}

/// How many clusters a selection reads at most (pages of 100): beyond the member cap, it only has to tell
/// "too many".
const FLEET_READ_CAP: usize = 2_000;

/// A rollout's refusal as the API answers it.
pub(crate) fn refusal(e: RolloutError) -> ApiError {
    match e {
        RolloutError::Invalid { field, reason } => ApiError::invalid(vec![ApiError::field(
            field,
            reason,
            "see the rollout request's documentation",
        )]),
        RolloutError::NothingSelected | RolloutError::TooMany { .. } => {
            ApiError::invalid(vec![ApiError::field(
                "selector",
                e.to_string(),
                "a selector that matches 1 to 200 clusters",
            )])
        }
        RolloutError::Claimed { .. } | RolloutError::Finished | RolloutError::Conflict => {
            ApiError::Conflict(e.to_string())
        }
        RolloutError::NotFound(_) | RolloutError::NotAMember(_) => ApiError::NotFound(e.to_string()),
        RolloutError::Store(m) => ApiError::Config(format!("the rollout store failed: {m}")),
    }
}

fn now() -> i64 {
    strato_domain::ts::now().unix_timestamp()
}

/// The clusters a rollout of `template` may select: the tenant's, or (operator) every tenant's on it.
async fn fleet(ctx: &Ctx, viewer: &Viewer, template: &str) -> Result<Vec<Cluster>, ApiError> {
    let mut out = Vec::new();
    match viewer.tenant() {
        Some(t) => {
            let filter = ClusterFilter::default();
            let mut after = None;
            loop {
                let (page, next) = ctx
                    .store
                    .list_clusters_matching(t, &filter, 100, after.as_ref())
                    .await?;
                out.extend(page.into_iter().filter(|c| c.spec.template.name == template));
                after = next;
                if after.is_none() || out.len() > FLEET_READ_CAP {
                    break;
                }
            }
        }
        None => {
            let filter = FleetFilter {
                template: Some(template.to_owned()),
                ..FleetFilter::default()
            };
            let mut after: Option<FleetKey> = None;
            loop {
                let (page, next) = ctx.store.scan_fleet(&filter, 100, after.as_ref()).await?;
                out.extend(page);
                after = next;
                if after.is_none() || out.len() > FLEET_READ_CAP {
                    break;
                }
            }
        }
    }
    Ok(out)
}

/// The runs of a rollout on the api's decisions, each under its member tenant's policies and rules.
pub(crate) struct CtxRuns<'a> {
    pub(crate) ctx: &'a Ctx,
}

impl CtxRuns<'_> {
    async fn as_tenant(
        &self,
        r: &Record,
        m: &Member,
        operation: &strato_domain::ids::OperationId,
        plan: bool,
    ) -> Result<(), String> {
        let caller = Caller {
            tenant: m.tenant.clone(),
            subject: Some(r.created_by.clone()),
            traceparent: None,
            scopes: Vec::new(),
        };
        let governing = crate::policies::load(self.ctx, &caller, None)
            .await
            .map_err(|e| e.to_string())?;
        let runs = DecideRuns {
            api: self.ctx.api_with(&governing.set, governing.rules, None),
        };
        // Boxed: the decisions' futures are large, and a rollout runs many of them in one request.
        if plan {
            Box::pin(runs.plan(r, m, operation)).await
        } else {
            Box::pin(runs.update(r, m, operation)).await
        }
    }
}

impl Runs for CtxRuns<'_> {
    async fn plan(
        &self,
        r: &Record,
        m: &Member,
        operation: &strato_domain::ids::OperationId,
    ) -> Result<(), String> {
        self.as_tenant(r, m, operation, true).await
    }

    async fn update(
        &self,
        r: &Record,
        m: &Member,
        operation: &strato_domain::ids::OperationId,
    ) -> Result<(), String> {
        self.as_tenant(r, m, operation, false).await
    }

    /// The `rollout.*` webhook event to each member tenant whose webhook subscribes to it
    /// ([`strato_rollout::notices`]). A notice that cannot be queued is logged: the rollout's state is
    /// saved, and `GET /v1/rollouts/{id}` shows it.
    async fn notify(&self, r: &Record, notice: Notice) {
        use strato_domain::ports::Webhooks;
        tracing::info!(rollout = %r.id, ?notice, "rollout notice");
        let ctx = self.ctx;
        let webhooks = strato_aws::ports::SqsWebhooks {
            store: &ctx.store,
            sqs: &ctx.sqs,
            url: &ctx.queues.webhooks,
        };
        let kind = strato_rollout::notices::event_type(&notice);
        let messages = match strato_rollout::notices::messages(r, &notice, strato_domain::ts::now()) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(rollout = %r.id, error = %e, "rollout notice not rendered");
                return;
            }
        };
        for m in messages {
            let sent = async {
                let wanted = webhooks
                    .webhook_of(&m.tenant_id)
                    .await?
                    .is_some_and(|h| h.wants(kind.as_str()));
                if wanted {
                    webhooks.enqueue(&m).await?;
                }
                Ok::<_, strato_domain::ports::PortError>(())
            }
            .await;
            if let Err(e) = sent {
                tracing::warn!(rollout = %r.id, tenant = %m.tenant_id, event = %kind, error = %e,
                    "rollout notice not queued");
            }
        }
    }
}

/// `POST /v1/rollouts` (and the operator's `POST /v1/admin/rollouts`).
pub(crate) async fn start(
    ctx: &Ctx,
    viewer: &Viewer,
    body: RolloutBody,
) -> Result<Reply<RolloutView>, ApiError> {
    let asked = body.check()?;
    let published = ctx.store.template(&asked.template, &asked.to_version).await?;
    if published.is_none() {
        let known = ctx.store.templates().await?;
        let field = if known.iter().any(|t| t.name() == asked.template) {
            ("to_version", "is not a published version of the template")
        } else {
            ("template", "is not a published template")
        };
        return Err(ApiError::invalid(vec![ApiError::field(
            field.0,
            field.1,
            "GET /v1/templates lists the published templates and versions",
        )]));
    }
    let fleet = Box::pin(fleet(ctx, viewer, &asked.template)).await?;
    let platform = matches!(viewer, Viewer::Platform { .. });
    let members = select(
        &asked.selector,
        &asked.template,
        &asked.to_version,
        &fleet,
        platform,
    )
    .map_err(refusal)?;
    let mut record = Record {
        id: RolloutId::generate(),
        owner: match viewer.tenant() {
            Some(t) => Owner::Tenant { tenant: t.clone() },
            None => Owner::Platform,
        },
        template: asked.template,
        to_version: asked.to_version,
        created_by: viewer.who(),
        created_at: now(),
        rollout: Rollout::new(asked.plan, members).map_err(refusal)?,
        version: 0,
    };
    let effects = record.rollout.start();
    ctx.store.create(&record).await.map_err(refusal)?;
    let record = Box::pin(carry_out(&ctx.store, &CtxRuns { ctx }, record, effects, now()))
        .await
        .map_err(refusal)?;
    let location = format!("/v1/rollouts/{}", record.id);
    Ok(Reply::accepted(
        RolloutView::of(&record, &MembersQuery::default())?,
        location,
    ))
}

/// The rollout `id` if the viewer may see it (else 404, as for one that does not exist).
async fn visible(ctx: &Ctx, viewer: &Viewer, id: &str) -> Result<Record, ApiError> {
    let not_found = || {
        ApiError::NotFound(format!(
            "no rollout '{}'",
            id.chars().take(64).collect::<String>()
        ))
    };
    let id: RolloutId = id.parse().map_err(|_| not_found())?;
    let r = ctx
        .store
        .load(&id)
        .await
        .map_err(refusal)?
        .ok_or_else(not_found)?;
    if !r.owner.visible_to(viewer.tenant()) {
        return Err(not_found());
    }
    Ok(r)
}

pub(crate) async fn get(
    ctx: &Ctx,
    viewer: &Viewer,
    id: &str,
    q: &MembersQuery,
) -> Result<Reply<RolloutView>, ApiError> {
    let r = visible(ctx, viewer, id).await?;
    Ok(Reply::ok(RolloutView::of(&r, q)?))
}

pub(crate) async fn list(ctx: &Ctx, viewer: &Viewer) -> Result<Reply<RolloutListView>, ApiError> {
    let all = ctx.store.list().await.map_err(refusal)?;
    let mine = all.iter().filter(|r| r.owner.visible_to(viewer.tenant()));
    Ok(Reply::ok(RolloutListView::of(mine)))
}

/// Feeds an operator's input to a rollout the viewer may see, carries out what it decided.
pub(crate) async fn steer(
    ctx: &Ctx,
    viewer: &Viewer,
    id: &str,
    input: Input,
) -> Result<Reply<RolloutView>, ApiError> {
    let r = visible(ctx, viewer, id).await?;
    let (saved, effects) = apply(&ctx.store, &r.id, input, now())
        .await
        .map_err(refusal)?
        .ok_or_else(|| ApiError::NotFound(format!("no rollout '{id}'")))?;
    let saved = Box::pin(carry_out(&ctx.store, &CtxRuns { ctx }, saved, effects, now()))
        .await
        .map_err(refusal)?;
    Ok(Reply::ok(RolloutView::of(&saved, &MembersQuery::default())?))
}

pub(crate) async fn pause(ctx: &Ctx, viewer: &Viewer, id: &str) -> Result<Reply<RolloutView>, ApiError> {
    steer(ctx, viewer, id, Input::Pause { by: viewer.who() }).await
}

pub(crate) async fn resume(
    ctx: &Ctx,
    viewer: &Viewer,
    id: &str,
    body: ResumeBody,
) -> Result<Reply<RolloutView>, ApiError> {
    steer(
        ctx,
        viewer,
        id,
        Input::Resume {
            skip_failed: body.skip_failed,
        },
    )
    .await
}

pub(crate) async fn abort(ctx: &Ctx, viewer: &Viewer, id: &str) -> Result<Reply<RolloutView>, ApiError> {
    steer(ctx, viewer, id, Input::Abort { by: viewer.who() }).await
}

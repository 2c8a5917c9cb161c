//! Cluster routes: create, list, get, update (PATCH), delete, retry; and the spec reading a create shares
//! with an estimate.

use axum::response::{IntoResponse, Response};
use strato_aws::queues::enqueue_job;
use strato_aws::store::CreateRejected;
use strato_domain::agent;
use strato_domain::catalog::Catalogs;
use strato_domain::ids::ClusterId;
use strato_domain::messages::JobMessage;
use strato_domain::model::{Cluster, ClusterSpec, ClusterState, Operation, OperationKind, TemplateRef};
use strato_domain::template::Template;
use strato_domain::ts;
use strato_domain::validate::{ValidatedSpec, validate};

use crate::drift::{self, DriftSettings};
use crate::requests::{SpecBody, UpdateBody, unknown};
use crate::spec::{self, SpecName, read_spec, sorted, unknown_template};
use crate::views::{self, TemplateCache, sensitive_of};
use crate::views::{Accepted, ClusterPage, ClusterView};
use crate::{ApiError, Caller, Ctx, Reply};

pub(crate) const DEFAULT_PAGE: i32 = 20;
pub(crate) const MAX_PAGE: i32 = 100;

pub(crate) async fn create(ctx: &Ctx, caller: &Caller, body: SpecBody) -> Result<Reply<Accepted>, ApiError> {
    let (validated, stored, drift) = read_spec(ctx, body, SpecName::Required).await?;
    let spec = validated.spec().clone();
    let now = ts::now();
    let cluster_id = ClusterId::generate();
    // Templates with an agent get a registration token derived from the cluster id; only its hash is kept.
    let agent_token_hash = match (&stored.template.manifest.agent, &ctx.config.agent_token_secret) {
        (None, _) => None,
        (Some(_), Some(secret)) => Some(agent::token_hash(&agent::registration_token(secret, &cluster_id))),
        (Some(_), None) => {
            return Err(ApiError::Config(
                "STRATO_AGENT_TOKEN_SECRET is not set, so templates with a cluster agent cannot be used"
                    .into(),
            ));
        }
    };
    let mut cluster = Cluster::new(caller.tenant.clone(), cluster_id, spec.clone(), now);
    cluster.agent_token_hash = agent_token_hash;
    drift.apply(&mut cluster);
    let mut op = Operation::new(
        caller.tenant.clone(),
        cluster.cluster_id.clone(),
        OperationKind::Create,
        now,
    );
    op.spec = Some(spec);
    op.requested_by = caller.subject.clone();
    let quotas = ctx.store.quotas(&caller.tenant).await?;
    match ctx.store.create_cluster(&cluster, &op, &quotas).await? {
        Ok(()) => {}
        Err(CreateRejected::NameTaken) => {
            return Err(ApiError::Conflict(format!(
                "you already have a cluster named '{}'; choose another name, or delete that cluster first",
                cluster.spec.name
            )));
        }
        Err(rejected) => return Err(quota_error(caller, rejected)),
    }
    enqueue(ctx, &op).await;
    let sensitive = sensitive_of(&stored.template);
    Ok(accepted(
        views::cluster(&cluster, Some(&sensitive)),
        &op,
        Some(&sensitive),
    ))
}

pub(crate) fn quota_error(caller: &Caller, rejected: CreateRejected) -> ApiError {
    match rejected {
        CreateRejected::ClusterQuota { max } => ApiError::Quota(format!(
            "tenant {} may have at most {max} clusters; delete one, or ask an operator for a higher quota",
            caller.tenant
        )),
        CreateRejected::OperationQuota { max } => ApiError::Quota(format!(
            "tenant {} may have at most {max} operations queued or running; wait for some to finish",
            caller.tenant
        )),
        CreateRejected::NameTaken => ApiError::Conflict("that cluster name is taken".into()),
    }
}

/// Sends the job after the operation is recorded. A failed send is not the client's problem: the
/// operation stays `queued` (open_status "queued") and the scheduler's sweeper re-enqueues queued
/// operations, so the request is still accepted (202).
pub(crate) async fn enqueue(ctx: &Ctx, op: &Operation) {
    let job = JobMessage::from(op);
    if let Err(e) = enqueue_job(&ctx.sqs, &ctx.queues.jobs, &job, "0").await {
        tracing::warn!(
            operation_id = %op.operation_id,
            error = %e,
            "job not sent; the sweeper will enqueue the queued operation"
        );
    }
}

fn accepted(
    cluster: ClusterView,
    op: &Operation,
    sensitive: Option<&std::collections::BTreeSet<String>>,
) -> Reply<Accepted> {
    Reply::accepted(
        Accepted {
            cluster,
            operation: views::operation(op, sensitive),
        },
        format!("/v1/operations/{}", op.operation_id),
    )
}

/// The caller's cluster, or 404 for a malformed id, a missing cluster and another tenant's cluster alike.
pub(crate) async fn load(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Cluster, ApiError> {
    let not_found = || {
        ApiError::NotFound(format!(
            "no cluster '{}'",
            id.chars().take(64).collect::<String>()
        ))
    };
    let id: ClusterId = id.parse().map_err(|_| not_found())?;
    ctx.store
        .get_cluster(&caller.tenant, &id)
        .await?
        .ok_or_else(not_found)
}

pub(crate) async fn list(
    ctx: &Ctx,
    caller: &Caller,
    q: &crate::handlers::ListClustersQuery,
) -> Result<Reply<ClusterPage>, ApiError> {
    let mut errors = Vec::new();
    let states = ClusterState::ALL.map(|s| s.as_str()).join(", ");
    let state = q.state.as_deref().and_then(|s| {
        s.parse::<ClusterState>()
            .map_err(|_| errors.push(ApiError::field("state", "is not a cluster state", &states)))
            .ok()
    });
    let limit = match q.limit.as_deref() {
        None => DEFAULT_PAGE,
        Some(l) => match l.parse::<i32>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => {
                errors.push(ApiError::field(
                    "limit",
                    "is not a page size",
                    format!("a whole number from 1 to {MAX_PAGE}"),
                ));
                DEFAULT_PAGE
            }
        },
    };
    let after = q.next.as_deref().and_then(|n| {
        n.parse::<ClusterId>()
            .map_err(|_| {
                errors.push(ApiError::field(
                    "next",
                    "is not a page token",
                    "the 'next' value of the previous page",
                ))
            })
            .ok()
    });
    if !errors.is_empty() {
        return Err(ApiError::BadRequest {
            detail: "the query string has invalid parameters; see errors".into(),
            errors,
        });
    }
    let (clusters, next) = ctx
        .store
        .list_clusters(&caller.tenant, state, limit, after.as_ref())
        .await?;
    let mut cache = TemplateCache::new(&ctx.store);
    let mut out = Vec::with_capacity(clusters.len());
    for c in &clusters {
        let sensitive = cache.sensitive(&c.spec).await?;
        out.push(views::cluster(c, sensitive.as_ref()));
    }
    Ok(Reply::ok(ClusterPage {
        clusters: out,
        next: next.map(|n| n.to_string()),
    }))
}

pub(crate) async fn get(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<ClusterView>, ApiError> {
    let c = load(ctx, caller, id).await?;
    let sensitive = TemplateCache::new(&ctx.store).sensitive(&c.spec).await?;
    Ok(Reply::ok(views::cluster(&c, sensitive.as_ref())))
}

/// Why a new operation cannot be queued on this cluster now, if it cannot. A cluster that is still being
/// created or updated accepts it (it will be ACTIVE or FAILED by the time the job runs); one being deleted,
/// deleted, or FAILED does not.
fn refuse_new_operation(c: &Cluster, open: &[Operation], what: &str) -> Option<String> {
    if let Some(d) = open.iter().find(|o| o.kind == OperationKind::Delete) {
        return Some(format!(
            "a delete ({}) is already {} for this cluster; it cannot be {what}",
            d.operation_id,
            views::status_name(d.status)
        ));
    }
    match c.state() {
        ClusterState::Active | ClusterState::Updating => None,
        ClusterState::Pending | ClusterState::Provisioning | ClusterState::Configuring
            if !open.is_empty() =>
        {
            None
        }
        ClusterState::Pending | ClusterState::Provisioning | ClusterState::Configuring => Some(format!(
            "the cluster is {} with no operation in progress; it cannot be {what} until it settles",
            c.state()
        )),
        ClusterState::Failed => Some(format!(
            "the cluster is FAILED; retry it (POST /v1/clusters/{}/retry) or delete it",
            c.cluster_id
        )),
        ClusterState::Deleting | ClusterState::Deleted => Some(format!("the cluster is {}", c.state())),
    }
}

async fn open_operations(ctx: &Ctx, c: &Cluster) -> Result<Vec<Operation>, ApiError> {
    Ok(ctx
        .store
        .list_operations(&c.cluster_id)
        .await?
        .into_iter()
        .filter(|o| o.tenant_id == c.tenant_id && !o.status.is_terminal())
        .collect())
}

/// The template a spec names, or a 422 naming `field`.
async fn template_for(ctx: &Ctx, r: &TemplateRef, field: &str) -> Result<Template, ApiError> {
    match ctx.store.get_template(&r.name, &r.version).await? {
        Some(t) => Ok(t.template),
        None => Err(ApiError::invalid(vec![unknown_template(ctx, field, r).await?])),
    }
}

fn check(spec: &ClusterSpec, t: &Template) -> Result<ValidatedSpec, ApiError> {
    validate(spec, t, Catalogs::builtin()).map_err(sorted)
}

/// Records `op` against the tenant's quota, queues its job and answers 202.
async fn start(
    ctx: &Ctx,
    caller: &Caller,
    c: &Cluster,
    mut op: Operation,
    t: &Template,
) -> Result<Reply<Accepted>, ApiError> {
    op.requested_by = caller.subject.clone();
    let quotas = ctx.store.quotas(&caller.tenant).await?;
    if let Err(rejected) = ctx.store.add_operation(&op, &quotas).await? {
        return Err(quota_error(caller, rejected));
    }
    enqueue(ctx, &op).await;
    let sensitive = sensitive_of(t);
    Ok(accepted(
        views::cluster(c, Some(&sensitive)),
        &op,
        Some(&sensitive),
    ))
}

/// 200 with the cluster for a change of settings alone, else 202 with the update operation.
pub(crate) async fn update(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    body: UpdateBody,
) -> Result<Response, ApiError> {
    let c = load(ctx, caller, id).await?;
    let mut errors = Vec::new();
    let known = "variables, template_version, drift";
    unknown(
        &body.other,
        "",
        "is not a field of this request",
        known,
        &mut errors,
    );
    let patch = spec::variables(body.variables, &mut errors);
    let drift = drift::parse(body.drift, &mut errors);
    let version = body.template_version.optional(
        "template_version",
        "must be a string",
        "a published version of the cluster's template",
        &mut errors,
    );
    if patch.is_empty() && version.is_none() && drift.is_empty() && errors.is_empty() {
        errors.push(ApiError::field(
            "variables",
            "the request changes nothing",
            "variables to change, a template_version and/or drift settings",
        ));
    }
    if !errors.is_empty() {
        return Err(sorted(errors));
    }
    if patch.is_empty() && version.is_none() {
        // Settings only: recorded on the cluster, nothing for Terraform to do.
        return Ok(update_settings(ctx, c, &drift).await?.into_response());
    }
    let open = open_operations(ctx, &c).await?;
    if let Some(why) = refuse_new_operation(&c, &open, "updated") {
        return Err(ApiError::Conflict(why));
    }
    let mut spec = c.spec.clone();
    // Merge-patch semantics (RFC 7396): a value replaces the current one, null removes it (back to default).
    for (k, v) in patch {
        if v.is_null() {
            spec.variables.remove(&k);
        } else {
            spec.variables.insert(k, v);
        }
    }
    if let Some(v) = version {
        spec.template.version = v;
    }
    let t = template_for(ctx, &spec.template, "template_version").await?;
    let validated = check(&spec, &t)?;
    let mut c = c;
    if drift.apply(&mut c) {
        save_settings(ctx, &mut c).await?;
    }
    let mut op = Operation::new(
        caller.tenant.clone(),
        c.cluster_id.clone(),
        OperationKind::Update,
        ts::now(),
    );
    op.spec = Some(validated.spec().clone());
    Ok(start(ctx, caller, &c, op, &t).await?.into_response())
}

/// A PATCH of drift settings alone: 200 with the cluster, no operation.
async fn update_settings(
    ctx: &Ctx,
    mut c: Cluster,
    drift: &DriftSettings,
) -> Result<Reply<ClusterView>, ApiError> {
    if c.state() == ClusterState::Deleted {
        return Err(ApiError::Conflict(format!(
            "cluster {} is deleted; its settings can no longer change",
            c.cluster_id
        )));
    }
    if drift.apply(&mut c) {
        save_settings(ctx, &mut c).await?;
    }
    let t = template_for(ctx, &c.spec.template, "template").await?;
    Ok(Reply::ok(views::cluster(&c, Some(&sensitive_of(&t)))))
}

/// Saves settings under the version read; a concurrent change (the control plane moving the cluster) is a
/// 409 the client can simply repeat.
async fn save_settings(ctx: &Ctx, c: &mut Cluster) -> Result<(), ApiError> {
    match ctx.store.save_cluster(c).await {
        Err(strato_aws::Error::Conflict(_)) => Err(ApiError::Conflict(format!(
            "cluster {} changed while its settings were saved; send the request again",
            c.cluster_id
        ))),
        other => Ok(other?),
    }
}

pub(crate) async fn delete(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<Accepted>, ApiError> {
    let c = load(ctx, caller, id).await?;
    let open = open_operations(ctx, &c).await?;
    if matches!(c.state(), ClusterState::Deleting | ClusterState::Deleted) {
        return Err(ApiError::Conflict(format!(
            "the cluster is already {}",
            c.state()
        )));
    }
    if c.state() != ClusterState::Failed
        && let Some(why) = refuse_new_operation(&c, &open, "deleted")
    {
        return Err(ApiError::Conflict(why));
    }
    if let Some(d) = open.iter().find(|o| o.kind == OperationKind::Delete) {
        return Err(ApiError::Conflict(format!(
            "a delete ({}) is already queued for this cluster",
            d.operation_id
        )));
    }
    // The runner renders only validated specs, so a spec that no longer validates could not be destroyed
    // either: say so now rather than fail in the runner.
    let t = template_for(ctx, &c.spec.template, "template").await?;
    let validated = check(&c.spec, &t)?;
    let mut op = Operation::new(
        caller.tenant.clone(),
        c.cluster_id.clone(),
        OperationKind::Delete,
        ts::now(),
    );
    op.spec = Some(validated.spec().clone());
    start(ctx, caller, &c, op, &t).await
}

pub(crate) async fn retry(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<Accepted>, ApiError> {
    let c = load(ctx, caller, id).await?;
    if c.state() != ClusterState::Failed {
        return Err(ApiError::Conflict(format!(
            "only a FAILED cluster can be retried; this one is {}",
            c.state()
        )));
    }
    let ops = ctx.store.list_operations(&c.cluster_id).await?;
    if let Some(o) = ops.iter().find(|o| !o.status.is_terminal()) {
        return Err(ApiError::Conflict(format!(
            "operation {} is already open on this cluster; wait for it or cancel it",
            o.operation_id
        )));
    }
    let t = template_for(ctx, &c.spec.template, "template").await?;
    let validated = check(&c.spec, &t)?;
    let last_attempt = ops
        .iter()
        .filter(|o| o.kind == OperationKind::Create)
        .map(|o| o.attempt)
        .max()
        .unwrap_or(0);
    let mut op = Operation::new(
        caller.tenant.clone(),
        c.cluster_id.clone(),
        OperationKind::Create,
        ts::now(),
    );
    op.attempt = last_attempt + 1;
    op.spec = Some(validated.spec().clone());
    start(ctx, caller, &c, op, &t).await
}

/// An on-demand drift check: a read-only `plan -refresh-only` of an ACTIVE cluster. One pending check is
/// enough: asking again while one is open answers with that one.
pub(crate) async fn drift_check(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Reply<Accepted>, ApiError> {
    let c = load(ctx, caller, id).await?;
    if c.state() != ClusterState::Active {
        return Err(ApiError::Conflict(format!(
            "only an ACTIVE cluster can be checked for drift; this one is {}",
            c.state()
        )));
    }
    let t = template_for(ctx, &c.spec.template, "template").await?;
    let ops = ctx.store.list_operations(&c.cluster_id).await?;
    if let Some(pending) = ops
        .iter()
        .find(|o| o.kind == OperationKind::DriftCheck && !o.status.is_terminal())
    {
        let sensitive = sensitive_of(&t);
        return Ok(accepted(
            views::cluster(&c, Some(&sensitive)),
            pending,
            Some(&sensitive),
        ));
    }
    let op = Operation::new(
        caller.tenant.clone(),
        c.cluster_id.clone(),
        OperationKind::DriftCheck,
        ts::now(),
    );
    start(ctx, caller, &c, op, &t).await
}

//! The API's decisions, written against the domain's [ports](strato_domain::ports): what a create, an update,
//! a delete, a retry, a drift check, a preview, an estimate, a cancel and a state restore may do, and what each writes
//! and sends. The handlers run them on the AWS adapters (`Ctx::api`); the fast tests (`tests/decisions.rs`)
//! on the in-memory fakes. Decisions answer with domain records; the handlers turn those into views.

pub mod agent;
mod approvals;
mod clusters;
mod customer_state;
mod operations;
mod policy;
mod preview;
mod state;

pub use approvals::ApprovalLowered;
pub use clusters::Updated;
pub use customer_state::CustomerState;
pub use operations::Cancelled;
pub use state::{RESTORE_LEASE, stage_of};

use strato_coordination::{ATTEMPTS, Attempt};
use strato_domain::approval::ApprovalMode;
use strato_domain::catalog::Catalogs;
use strato_domain::ids::{ClusterId, OperationId, TenantId};
use strato_domain::messages::JobMessage;
use strato_domain::model::{Cluster, ClusterSpec, ClusterState, Operation, OperationKind, TemplateRef};
use strato_domain::ports::{Clock, CreateRejected, Intake, JobQueue, PortError, Storage, Templates};
use strato_domain::ports::{TenantRules, TenantSettings};
use strato_domain::sealed::{self, Keys};
use strato_domain::template::{Template, is_template_name, is_template_version};
use strato_domain::validate::{ValidatedSpec, validate};

use crate::spec::{sorted, unknown_template};
use crate::{caller::Caller, error::ApiError};

/// The store ports every decision needs, under one name so that each `impl` block of [`Api`] states its
/// bounds on one line; any type with the three ports is one.
pub trait ApiStore: Storage + Intake + TenantSettings {}

impl<X: Storage + Intake + TenantSettings> ApiStore for X {}

/// The API's dependencies, as ports.
#[derive(Debug, Clone, Copy)]
pub struct Api<'a, S, T, Q, C, K> {
    /// Clusters, operations, cluster locks; new clusters and operations under the tenant's quotas.
    pub store: &'a S,
    /// The published templates specs are validated against.
    pub templates: &'a T,
    /// `jobs.fifo`, where a recorded operation's job is sent.
    pub jobs: Q,
    pub clock: C,
    /// Secret the cluster agents' registration tokens derive from; templates with an agent need it.
    pub agent_token_secret: Option<&'a [u8]>,
    /// Strato's KMS key: sensitive variables are sealed with it before any item is written.
    pub keys: &'a K,
    /// The tenant maximum of a cluster's lifetime (hours) where the tenant sets none; `None`: unlimited.
    pub default_max_ttl_hours: Option<u64>,
    /// The platform's and the tenant's policies, checked on create, update and delete; `None`: none.
    pub policies: Option<&'a strato_policy::PolicySet>,
    /// Separation of duties: the requester of an operation cannot approve it (`STRATO_APPROVAL_SEPARATION`,
    /// on unless `false`).
    pub approval_separation: bool,
    /// The tenant's rules, when they were read with its policies (one read of the tenant item); `None`:
    /// read when a decision needs them.
    pub rules: Option<TenantRules>,
    /// The request's audit entry in the making: a create writes it in its own transaction. `None`: the route
    /// layer writes every entry.
    pub audit: Option<&'a crate::audit_draft::AuditDraft>,
    /// The id the recorded operation takes when its caller chose it beforehand (a rollout's runs: the id is
    /// saved with the rollout before the run is queued, so the run's end finds its rollout). `None`: new.
    pub operation_id: Option<&'a OperationId>,
}

/// A recorded operation (new, or the open one a repeated drift check answers with), its cluster, and the
/// template whose sensitive variables the answer masks.
#[derive(Debug, Clone)]
pub struct Started {
    pub cluster: Cluster,
    pub operation: Operation,
    pub template: Template,
}

/// The 429 for a refused quota, or the 409 for a taken name.
pub(crate) fn quota_error(tenant: &TenantId, rejected: CreateRejected) -> ApiError {
    match rejected {
        CreateRejected::ClusterQuota { max } => ApiError::Quota(format!(
            "tenant {tenant} may have at most {max} clusters; delete one, or ask an operator for a higher quota"
        )),
        CreateRejected::OperationQuota { max } => ApiError::Quota(format!(
            "tenant {tenant} may have at most {max} operations queued or running; wait for some to finish"
        )),
        CreateRejected::NameTaken => ApiError::Conflict("that cluster name is taken".into()),
    }
}

/// Why a new operation cannot be queued on this cluster now, if it cannot. A cluster that is still being
/// created or updated accepts it (it will be ACTIVE or FAILED by the time the job runs); one being deleted,
/// deleted, or FAILED does not.
fn refuse_new_operation(c: &Cluster, open: &[Operation], what: &str) -> Option<String> {
    if let Some(d) = open.iter().find(|o| o.kind == OperationKind::Delete) {
        return Some(format!(
            "a delete ({}) is already {} for this cluster; it cannot be {what}",
            d.operation_id,
            d.status.as_str()
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

fn check(spec: &ClusterSpec, t: &Template) -> Result<ValidatedSpec, ApiError> {
    validate(spec, t, Catalogs::builtin()).map_err(sorted)
}

impl<S: ApiStore, T: Templates, Q: JobQueue, C: Clock, K: Keys> Api<'_, S, T, Q, C, K> {
    /// A new operation of `kind` on `cluster`, the caller's, as of now.
    fn new_operation(&self, caller: &Caller, cluster: &ClusterId, kind: OperationKind) -> Operation {
        Operation::new(caller.tenant.clone(), cluster.clone(), kind, self.clock.now())
    }

    /// The caller's cluster, or 404 for a malformed id, a missing cluster and another tenant's cluster alike.
    pub async fn load_cluster(&self, caller: &Caller, id: &str) -> Result<Cluster, ApiError> {
        let not_found = || {
            ApiError::NotFound(format!(
                "no cluster '{}'",
                id.chars().take(64).collect::<String>()
            ))
        };
        let id: ClusterId = id.parse().map_err(|_| not_found())?;
        self.store
            .load_cluster(&caller.tenant, &id)
            .await?
            .ok_or_else(not_found)
    }

    /// The caller's operation, or 404 for a malformed id, a missing operation and another tenant's alike.
    pub async fn load_operation(&self, caller: &Caller, id: &str) -> Result<Operation, ApiError> {
        let not_found = || {
            ApiError::NotFound(format!(
                "no operation '{}'",
                id.chars().take(64).collect::<String>()
            ))
        };
        let id: OperationId = id.parse().map_err(|_| not_found())?;
        match self.store.load_operation(&id).await? {
            Some(op) if op.tenant_id == caller.tenant => Ok(op),
            _ => Err(not_found()),
        }
    }

    /// The cluster's open operations: those the cluster index lists, and the operation the cluster itself
    /// names as pending (read consistently: the index may not list an operation queued a moment ago).
    async fn open_operations(&self, c: &Cluster) -> Result<Vec<Operation>, ApiError> {
        let mut open: Vec<Operation> = self
            .store
            .open_cluster_operations(&c.cluster_id)
            .await?
            .into_iter()
            .filter(|o| o.tenant_id == c.tenant_id && !o.status.is_terminal())
            .collect();
        if let Some(id) = &c.pending_operation
            && !open.iter().any(|o| &o.operation_id == id)
            && let Some(op) = self.store.load_operation(id).await?
            && op.tenant_id == c.tenant_id
            && !op.status.is_terminal()
        {
            open.push(op);
            open.sort_by_key(|o| o.created_at);
        }
        Ok(open)
    }

    /// The template a spec names, or a 422 naming `field`.
    async fn template_for(&self, r: &TemplateRef, field: &str) -> Result<Template, ApiError> {
        // A reference no manifest could have names nothing, and is never made into a key (an empty or
        // oversized DynamoDB key is a 500, not an answer).
        let possible = is_template_name(&r.name) && is_template_version(&r.version);
        let found = if possible {
            self.templates.template(&r.name, &r.version).await?
        } else {
            None
        };
        match found {
            Some(t) => Ok(t),
            None => Err(ApiError::invalid(vec![
                unknown_template(self.templates, field, r).await?,
            ])),
        }
    }

    /// Sends the job, carrying the operation as just recorded, after it is recorded. A failed send is not the client's problem: the
    /// operation stays `queued` and the scheduler's sweeper re-enqueues queued operations, so the request is
    /// still accepted (202).
    async fn enqueue(&self, op: &Operation) {
        let job = JobMessage::carrying(op);
        if let Err(e) = self.jobs.enqueue(&job, "0").await {
            tracing::warn!(
                operation_id = %op.operation_id,
                error = %e,
                "job not sent; the sweeper will enqueue the queued operation"
            );
        }
    }

    /// Seals, in place, the spec's sensitive variables that are not sealed yet, bound to `tenant` and
    /// `cluster`: nothing sensitive reaches an item in the clear, and unchanged values keep their ciphertext.
    async fn seal(
        &self,
        tenant: &TenantId,
        cluster: &ClusterId,
        t: &Template,
        spec: &mut ClusterSpec,
    ) -> Result<(), ApiError> {
        let sensitive = |k: &str| t.manifest.variables.get(k).is_some_and(|d| d.sensitive);
        Ok(sealed::seal_variables(self.keys, tenant, cluster, sensitive, &mut spec.variables).await?)
    }

    /// The tenant's rules: those read with its policies, else one read now.
    async fn tenant_rules(&self, tenant: &TenantId) -> Result<TenantRules, ApiError> {
        match self.rules {
            Some(rules) => Ok(rules),
            None => Ok(self.store.tenant_rules(tenant).await?),
        }
    }

    /// Whether `c`'s creates and updates wait for approval: the strictest of its own mode, `t`'s and the
    /// tenant's default (the tenant item is read only when neither of the first two requires it).
    async fn approval_required(&self, caller: &Caller, c: &Cluster, t: &Template) -> Result<bool, ApiError> {
        if ApprovalMode::resolve(c.approval, t.manifest.approval, None) == ApprovalMode::Required {
            return Ok(true);
        }
        let tenant = self.tenant_rules(&caller.tenant).await?.approval;
        Ok(ApprovalMode::resolve(c.approval, t.manifest.approval, tenant) == ApprovalMode::Required)
    }

    /// Records `op` on `c` against the tenant's quota, marking it the cluster's pending operation in the
    /// same write (conditioned on the cluster's version as read), and queues its job. `Conflict` when the
    /// cluster changed since it was read: the caller decides again on a fresh read. A create's (retry's)
    /// approval mode is resolved here; an update's by its caller, which resolved it for the policies.
    async fn start(
        &self,
        caller: &Caller,
        mut c: Cluster,
        mut op: Operation,
        template: Template,
    ) -> Result<Attempt<Started>, ApiError> {
        if let Some(id) = self.operation_id {
            op.operation_id = id.clone();
        }
        op.requested_by = Some(caller.requester()?.to_owned());
        if op.kind == OperationKind::Create {
            op.approval_required = self.approval_required(caller, &c, &template).await?;
        }
        caller.joins(&mut op);
        match self.store.add_operation_on(&mut c, &op).await {
            Ok(Ok(())) => {}
            Ok(Err(rejected)) => return Err(quota_error(&caller.tenant, rejected)),
            Err(PortError::Conflict(_)) => return Ok(Attempt::Conflict),
            Err(e) => return Err(e.into()),
        }
        self.enqueue(&op).await;
        Ok(Attempt::Done(Started {
            cluster: c,
            operation: op,
            template,
        }))
    }
}

/// What a decision answers once the cluster kept changing under it.
pub(crate) fn kept_changing(id: &str) -> ApiError {
    ApiError::KeptChanging(format!(
        "cluster {id} kept changing; gave up after {ATTEMPTS} attempts"
    ))
}

/// `If-Match` on a cluster: the entity tags the client accepts. A cluster's tag is its `version` in quotes
/// (`"7"`, also accepted weak: `W/"7"`); `*` matches any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfMatch(Vec<String>);

impl IfMatch {
    /// The header's comma-separated tags.
    pub fn parse(header: &str) -> Self {
        Self(
            header
                .split(',')
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect(),
        )
    }

    /// Whether a cluster at `version` is one the client accepts.
    pub fn matches(&self, version: u64) -> bool {
        let tag = etag(version);
        self.0
            .iter()
            .any(|t| t == "*" || *t == tag || t.strip_prefix("W/") == Some(tag.as_str()))
    }

    /// The 412 for a cluster at `version`.
    pub(crate) fn refused(&self, version: u64) -> ApiError {
        ApiError::PreconditionFailed(format!(
            "the cluster is at version {version} ({}), not the one If-Match names ({}); GET the cluster, \
             apply your change to what it holds now, and send it again with the new ETag",
            etag(version),
            self.0.join(", ")
        ))
    }
}

/// A cluster's entity tag: its `version`, quoted.
pub fn etag(version: u64) -> String {
    format!("\"{version}\"")
}

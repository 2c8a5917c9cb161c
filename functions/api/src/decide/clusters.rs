//! Decisions on clusters: create, update (PATCH), delete, retry, drift check; and an estimate, which reads
//! its spec as a create does.

use strato_domain::agent;
use strato_domain::approval::ApprovalMode;
use strato_domain::expiry::ExpiryChange;
use strato_domain::ids::ClusterId;
use strato_domain::model::{Cluster, ClusterState, Operation, OperationKind};
use strato_domain::ports::{Clock, CreateRejected, JobQueue, PortError, Templates};
use strato_domain::sealed::Keys;
use strato_domain::template::Template;
use strato_domain::template_status::Use;
use strato_domain::validate::ValidatedSpec;

use strato_coordination::{ATTEMPTS, Attempt, optimistic};

use super::approvals::{ApprovalLowered, judge_setting};
use super::policy::ApprovalInput;
use super::{Api, ApiStore, IfMatch, Started, check, kept_changing, quota_error, refuse_new_operation};
use crate::commands::{CreateCluster, DriftSettings, Estimate, UpdateCluster};
use crate::spec::{check_spec, sorted};
use crate::{caller::Caller, error::ApiError};

/// What a PATCH did: the cluster and its template, and the update operation a new spec recorded and queued
/// (202); `None` when drift settings alone changed, on the cluster only (200).
#[derive(Debug, Clone)]
pub struct Updated {
    pub cluster: Cluster,
    pub template: Template,
    pub operation: Option<Operation>,
    /// An administrator lowered the cluster's approval setting: the audit entry says so.
    pub approval_lowered: Option<ApprovalLowered>,
}

/// What a PATCH asks to change, read and checked once and applied on every try.
struct Change<'a> {
    patch: &'a std::collections::BTreeMap<String, serde_json::Value>,
    version: Option<&'a str>,
    drift: &'a DriftSettings,
    expiry: ExpiryChange,
    /// `Some(None)`: back to the template's or tenant's default.
    approval: Option<Option<ApprovalMode>>,
}

/// Applies an approval-mode change; true when something changed.
fn apply_approval(c: &mut Cluster, change: Option<Option<ApprovalMode>>) -> bool {
    match change {
        Some(m) if c.approval != m => {
            c.approval = m;
            true
        }
        _ => false,
    }
}

/// How many of a cluster's newest operations a retry reads to count its attempt on.
const RECENT_OPERATIONS: u32 = 100;

impl<S: ApiStore, T: Templates, Q: JobQueue, C: Clock, K: Keys> Api<'_, S, T, Q, C, K> {
    /// A new cluster: the spec is validated before anything is written; then the cluster, its create
    /// operation, its name reservation and the tenant's counters are written together, and the job is sent.
    pub async fn create(&self, caller: &Caller, cmd: impl Into<CreateCluster>) -> Result<Started, ApiError> {
        let CreateCluster {
            spec: draft,
            expiry,
            approval,
            problems,
        } = cmd.into();
        let requester = caller.requester()?.to_owned();
        // Every problem at once: the request's and the template's.
        let (validated, template, drift) = check_spec(self.templates, draft, problems).await?;
        let now = self.clock.now();
        // One read of the tenant item for both its lifetime maximum and its approval default.
        let rules = self.tenant_rules(&caller.tenant).await?;
        let max = rules.max_ttl_hours.or(self.default_max_ttl_hours);
        let expiry = crate::expiry::change(expiry, now, max, true)?;
        let template_mode = template.manifest.approval;
        judge_setting(caller, None, approval, template_mode, rules.approval)?;
        let applies = ApprovalMode::resolve(approval, template_mode, rules.approval);
        let mut spec = validated.spec().clone();
        let approval_input = ApprovalInput {
            applies: Some(applies),
            setting: approval,
        };
        let allowed = self.check_policies(caller, "create", None, &spec, &template, approval_input)?;
        let cluster_id = ClusterId::generate();
        self.seal(&caller.tenant, &cluster_id, &template, &mut spec)
            .await?;
        // Templates with an agent get a registration token derived from the cluster id; only its hash is kept.
        let agent_token_hash = match (&template.manifest.agent, self.agent_token_secret) {
            (None, _) => None,
            (Some(_), Some(secret)) => {
                Some(agent::token_hash(&agent::registration_token(secret, &cluster_id)))
            }
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
        expiry.apply(&mut cluster);
        cluster.approval = approval;
        let mut op = Operation::new(
            caller.tenant.clone(),
            cluster.cluster_id.clone(),
            OperationKind::Create,
            now,
        );
        cluster.pending_operation = Some(op.operation_id.clone());
        op.spec = Some(spec);
        op.requested_by = Some(requester);
        op.approval_required = applies == ApprovalMode::Required;
        allowed.record(&mut op);
        caller.joins(&mut op);
        let entry = self
            .audit
            .map(|d| d.accepted(now, &cluster.cluster_id, &op.operation_id));
        match self.store.create_cluster(&cluster, &op, entry.as_ref()).await? {
            Ok(()) => {
                if let Some(d) = self.audit {
                    d.written();
                }
            }
            Err(CreateRejected::NameTaken) => {
                return Err(ApiError::Conflict(format!(
                    "you already have a cluster named '{}'; choose another name, or delete that cluster first",
                    cluster.spec.name
                )));
            }
            Err(rejected) => return Err(quota_error(&caller.tenant, rejected)),
        }
        self.enqueue(&op).await;
        Ok(Started {
            cluster,
            operation: op,
            template,
        })
    }

    /// A PATCH without `If-Match`; see [`update_if`](Self::update_if).
    pub async fn update(
        &self,
        caller: &Caller,
        id: &str,
        cmd: impl Into<UpdateCluster>,
    ) -> Result<Updated, ApiError> {
        self.update_if(caller, id, cmd, None).await
    }

    /// A PATCH: drift settings alone change the cluster and no operation; new variables or a template
    /// version make an update operation, if the cluster's state allows one. The new spec is built on the
    /// newest one requested — the spec of an update (or create) still open on the cluster, else the
    /// cluster's — so a second PATCH sent before the first ran keeps the first's changes instead of
    /// reverting them. With `if_match`, a cluster at another version is a 412 and nothing is written.
    pub async fn update_if(
        &self,
        caller: &Caller,
        id: &str,
        cmd: impl Into<UpdateCluster>,
        if_match: Option<&IfMatch>,
    ) -> Result<Updated, ApiError> {
        let UpdateCluster {
            patch,
            version,
            drift,
            expiry,
            approval,
            problems,
        } = cmd.into();
        let c = self.load_cluster(caller, id).await?;
        if !problems.is_empty() {
            return Err(sorted(problems));
        }
        let asked_expiry = crate::expiry::asked(&expiry);
        let expiry = if asked_expiry {
            let max = self.max_ttl_hours(caller).await?;
            crate::expiry::change(expiry, self.clock.now(), max, false)?
        } else {
            ExpiryChange::Keep
        };
        let change = Change {
            patch: &patch,
            version: version.as_deref(),
            drift: &drift,
            expiry,
            approval,
        };
        let change = &change;
        let mut first = Some(c);
        optimistic(
            ATTEMPTS,
            || kept_changing(id),
            || {
                let read = first.take();
                async move {
                    let c = match read {
                        Some(c) => c,
                        None => self.load_cluster(caller, id).await?,
                    };
                    if let Some(m) = if_match
                        && !m.matches(c.version)
                    {
                        return Err(m.refused(c.version));
                    }
                    self.try_update(caller, c, change).await
                }
            },
        )
        .await
    }

    /// One try of an update on `c` as just read.
    async fn try_update(
        &self,
        caller: &Caller,
        c: Cluster,
        change: &Change<'_>,
    ) -> Result<Attempt<Updated>, ApiError> {
        if change.patch.is_empty() && change.version.is_none() {
            // Settings only: recorded on the cluster, nothing for Terraform to do.
            return self.update_settings(caller, c, change).await;
        }
        let open = self.open_operations(&c).await?;
        if let Some(why) = refuse_new_operation(&c, &open, "updated") {
            return Err(ApiError::Conflict(why));
        }
        let (validated, t) = self
            .proposed_spec(&c, &open, change.patch, change.version)
            .await?;
        let (approval, lowered) = self.approval_change(caller, &c, &t, change).await?;
        let allowed = self.check_policies(
            caller,
            "update",
            Some(&c.cluster_id),
            validated.spec(),
            &t,
            approval,
        )?;
        let mut c = c;
        let changed = change.drift.apply(&mut c)
            | change.expiry.apply(&mut c)
            | apply_approval(&mut c, change.approval);
        if changed && self.save_settings(&mut c).await?.is_none() {
            return Ok(Attempt::Conflict);
        }
        let mut op = self.new_operation(caller, &c.cluster_id, OperationKind::Update);
        let mut spec = validated.spec().clone();
        self.seal(&caller.tenant, &c.cluster_id, &t, &mut spec).await?;
        op.spec = Some(spec);
        op.approval_required = approval.applies == Some(ApprovalMode::Required);
        allowed.record(&mut op);
        Ok(match self.start(caller, c, op, t).await? {
            Attempt::Done(s) => Attempt::Done(Updated {
                cluster: s.cluster,
                template: s.template,
                operation: Some(s.operation),
                approval_lowered: lowered,
            }),
            Attempt::Conflict => Attempt::Conflict,
        })
    }

    /// The spec a PATCH of `patch` and `version` proposes for `c`, validated, and its template. It builds on
    /// the newest spec requested — the last open create or update's (they run in order), else the
    /// cluster's — so a change sent before the previous one ran keeps that one's changes.
    pub(super) async fn proposed_spec(
        &self,
        c: &Cluster,
        open: &[Operation],
        patch: &std::collections::BTreeMap<String, serde_json::Value>,
        version: Option<&str>,
    ) -> Result<(ValidatedSpec, Template), ApiError> {
        let mut spec = open
            .iter()
            .rev()
            .filter(|o| matches!(o.kind, OperationKind::Create | OperationKind::Update))
            .find_map(|o| o.spec.clone())
            .unwrap_or_else(|| c.spec.clone());
        // Merge-patch semantics (RFC 7396): a value replaces the current one, null removes it (back to default).
        for (k, v) in patch {
            if v.is_null() {
                spec.variables.remove(k);
            } else {
                spec.variables.insert(k.clone(), v.clone());
            }
        }
        if let Some(v) = version {
            spec.template.version = v.to_owned();
        }
        let t = self.template_for(&spec.template, "template_version").await?;
        // A move to another version is refused if that version is yanked; staying on one is never refused
        // (clusters on a deprecated or yanked version keep working).
        if spec.template.version != c.spec.template.version
            && let Some(refused) =
                crate::spec::standing_refusal(self.templates, &spec.template, Use::MoveTo, "template_version")
                    .await?
        {
            return Err(ApiError::invalid(vec![refused]));
        }
        let validated = check(&spec, &t)?;
        Ok((validated, t))
    }

    /// A PATCH of settings alone (drift, expiry, approval): the cluster, no operation. A change of the
    /// approval setting is checked against the request policies like an update: they may refuse it.
    async fn update_settings(
        &self,
        caller: &Caller,
        mut c: Cluster,
        change: &Change<'_>,
    ) -> Result<Attempt<Updated>, ApiError> {
        if c.state() == ClusterState::Deleted {
            return Err(ApiError::Conflict(format!(
                "cluster {} is deleted; its settings can no longer change",
                c.cluster_id
            )));
        }
        let template = self.template_for(&c.spec.template, "template").await?;
        let mut lowered = None;
        if change.approval.is_some() {
            let (approval, l) = self.approval_change(caller, &c, &template, change).await?;
            lowered = l;
            self.check_policies(
                caller,
                "update",
                Some(&c.cluster_id),
                &c.spec,
                &template,
                approval,
            )?;
        }
        let changed = change.drift.apply(&mut c)
            | change.expiry.apply(&mut c)
            | apply_approval(&mut c, change.approval);
        if changed && self.save_settings(&mut c).await?.is_none() {
            return Ok(Attempt::Conflict);
        }
        Ok(Attempt::Done(Updated {
            cluster: c,
            template,
            operation: None,
            approval_lowered: lowered,
        }))
    }

    /// What a PATCH does to approvals on `c` with template `t`: whether the caller may change the
    /// cluster's setting as asked (see [`judge_setting`]; a lowering is returned, to be audited) and what
    /// the request policies see. The tenant item is read only when the cluster and template do not already
    /// require approval.
    async fn approval_change(
        &self,
        caller: &Caller,
        c: &Cluster,
        t: &Template,
        change: &Change<'_>,
    ) -> Result<(ApprovalInput, Option<ApprovalLowered>), ApiError> {
        let setting = change.approval.unwrap_or(c.approval);
        let template = t.manifest.approval;
        let known = [c.approval, setting, template];
        let tenant = if known.contains(&Some(ApprovalMode::Required)) && change.approval.is_none() {
            None
        } else {
            self.tenant_rules(&caller.tenant).await?.approval
        };
        let lowered = match change.approval {
            Some(new) => judge_setting(caller, c.approval, new, template, tenant)?,
            None => None,
        };
        let input = ApprovalInput {
            applies: Some(ApprovalMode::resolve(setting, template, tenant)),
            setting,
        };
        Ok((input, lowered))
    }

    /// The caller's tenant maximum cluster lifetime (hours): its own, else the platform default.
    async fn max_ttl_hours(&self, caller: &Caller) -> Result<Option<u64>, ApiError> {
        let own = self.tenant_rules(&caller.tenant).await?.max_ttl_hours;
        Ok(own.or(self.default_max_ttl_hours))
    }

    /// Saves settings under the version read; `None` when the cluster changed meanwhile (the control plane
    /// moving it): the caller reads it again and retries.
    async fn save_settings(&self, c: &mut Cluster) -> Result<Option<()>, ApiError> {
        match self.store.store_cluster(c).await {
            Err(PortError::Conflict(_)) => Ok(None),
            other => Ok(Some(other?)),
        }
    }

    pub async fn delete(&self, caller: &Caller, id: &str) -> Result<Started, ApiError> {
        optimistic(
            ATTEMPTS,
            || kept_changing(id),
            || async move {
                let c = self.load_cluster(caller, id).await?;
                let open = self.open_operations(&c).await?;
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
                // The runner renders only validated specs, so a spec that no longer validates could not be
                // destroyed either: say so now rather than fail in the runner.
                let t = self.template_for(&c.spec.template, "template").await?;
                let validated = check(&c.spec, &t)?;
                // A delete never waits for an approver; the policies see the cluster's own setting.
                let approval = ApprovalInput {
                    applies: None,
                    setting: c.approval,
                };
                let allowed = self.check_policies(
                    caller,
                    "delete",
                    Some(&c.cluster_id),
                    validated.spec(),
                    &t,
                    approval,
                )?;
                let mut op = self.new_operation(caller, &c.cluster_id, OperationKind::Delete);
                op.spec = Some(validated.spec().clone());
                allowed.record(&mut op);
                self.start(caller, c, op, t).await
            },
        )
        .await
    }

    /// A FAILED cluster is created again (the next attempt); any other state is a 409. Two retries at once
    /// cannot both queue: the second loses the conditional write on the cluster and, reading it again, finds
    /// the first's operation open.
    pub async fn retry(&self, caller: &Caller, id: &str) -> Result<Started, ApiError> {
        optimistic(
            ATTEMPTS,
            || kept_changing(id),
            || async move {
                let c = self.load_cluster(caller, id).await?;
                if c.state() != ClusterState::Failed {
                    return Err(ApiError::Conflict(format!(
                        "only a FAILED cluster can be retried; this one is {}",
                        c.state()
                    )));
                }
                // The attempt counts on from the newest creates (older ones expire with the history).
                let ops = self
                    .store
                    .recent_cluster_operations(&c.cluster_id, RECENT_OPERATIONS)
                    .await?;
                if let Some(o) = self.open_operations(&c).await?.first() {
                    return Err(ApiError::Conflict(format!(
                        "operation {} is already open on this cluster; wait for it or cancel it",
                        o.operation_id
                    )));
                }
                let t = self.template_for(&c.spec.template, "template").await?;
                let validated = check(&c.spec, &t)?;
                let last_attempt = ops
                    .iter()
                    .filter(|o| o.kind == OperationKind::Create)
                    .map(|o| o.attempt)
                    .max()
                    .unwrap_or(0);
                let mut op = self.new_operation(caller, &c.cluster_id, OperationKind::Create);
                op.attempt = last_attempt + 1;
                op.spec = Some(validated.spec().clone());
                self.start(caller, c, op, t).await
            },
        )
        .await
    }

    /// An on-demand drift check: a read-only `plan -refresh-only` of an ACTIVE cluster. One pending check is
    /// enough: asking again while one is open answers with that one — also when two requests arrive at
    /// once, since only one of them wins the conditional write on the cluster.
    pub async fn drift_check(&self, caller: &Caller, id: &str) -> Result<Started, ApiError> {
        optimistic(
            ATTEMPTS,
            || kept_changing(id),
            || async move {
                let c = self.load_cluster(caller, id).await?;
                if c.state() != ClusterState::Active {
                    return Err(ApiError::Conflict(format!(
                        "only an ACTIVE cluster can be checked for drift; this one is {}",
                        c.state()
                    )));
                }
                let t = self.template_for(&c.spec.template, "template").await?;
                if let Some(pending) = self
                    .open_operations(&c)
                    .await?
                    .into_iter()
                    .find(|o| o.kind == OperationKind::DriftCheck)
                {
                    return Ok(Attempt::Done(Started {
                        cluster: c,
                        operation: pending,
                        template: t,
                    }));
                }
                let op = self.new_operation(caller, &c.cluster_id, OperationKind::DriftCheck);
                self.start(caller, c, op, t).await
            },
        )
        .await
    }

    /// An estimate: validated as a create is, recorded as an operation on a fresh, synthetic cluster id (no
    /// cluster is written) against the tenant's open-operation quota, and queued.
    pub async fn estimate(
        &self,
        caller: &Caller,
        cmd: impl Into<Estimate>,
    ) -> Result<(Operation, Template), ApiError> {
        let Estimate { spec, problems } = cmd.into();
        let requester = caller.requester()?.to_owned();
        let (validated, template, _) = check_spec(self.templates, spec, problems).await?;
        let mut op = self.new_operation(caller, &ClusterId::generate(), OperationKind::Estimate);
        let mut spec = validated.spec().clone();
        self.seal(&caller.tenant, &op.cluster_id, &template, &mut spec)
            .await?;
        op.spec = Some(spec);
        op.requested_by = Some(requester);
        caller.joins(&mut op);
        // Estimates count against the tenant's open operations like any other run.
        if let Err(rejected) = self.store.add_operation(&op).await? {
            return Err(quota_error(&caller.tenant, rejected));
        }
        self.enqueue(&op).await;
        Ok((op, template))
    }
}

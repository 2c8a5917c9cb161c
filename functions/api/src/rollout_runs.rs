//! A rollout's runs as the api's own decisions ([`strato_rollout::effects::Runs`]): a member's plan is the
//! plan-only operation `POST /v1/clusters/{id}/plan` queues (the rollout's `to_version`, no variable
//! changed), its update the ordinary update a PATCH of `template_version` records — validated, governed by
//! the policies, held for an approver where approvals are required, queued behind the cluster's other
//! operations. Each takes the operation id the rollout saved before it was started; one that exists
//! already is not started again (an effect carried out twice starts one run).

use std::collections::BTreeMap;

use strato_domain::ids::OperationId;
use strato_domain::ports::{Clock, Intake, JobQueue, Storage, Templates, TenantSettings};
use strato_domain::sealed::Keys;
use strato_rollout::effects::{Notice, Runs};
use strato_rollout::machine::Member;
use strato_rollout::store::Record;

use crate::caller::Caller;
use crate::commands::UpdateCluster;
use crate::decide::Api;
use crate::error::ApiError;

/// The decisions a rollout's runs are started with. `api.policies` and `api.rules` are the member
/// tenant's (a platform rollout builds one per tenant); `api.operation_id` is set per run.
pub struct DecideRuns<'a, S, T, Q, C, K> {
    pub api: Api<'a, S, T, Q, C, K>,
}

/// A refusal as the member's failure reason: the problem's detail and each field it names.
fn reason(e: ApiError) -> String {
    let (p, _) = e.problem();
    let mut out = p.detail;
    for f in p.errors {
        out.push_str(&format!("; {}: {}", f.field, f.problem));
    }
    out
}

impl<'a, S, T, Q, C, K> DecideRuns<'a, S, T, Q, C, K>
where
    S: Storage + Intake + TenantSettings,
    T: Templates,
    Q: JobQueue + Clone,
    C: Clock + Clone,
    K: Keys,
{
    /// The decisions recording `operation` under its chosen id.
    fn with_id<'b>(&'b self, operation: &'b OperationId) -> Api<'b, S, T, Q, C, K> {
        let a = &self.api;
        Api {
            store: a.store,
            templates: a.templates,
            jobs: a.jobs.clone(),
            clock: a.clock.clone(),
            agent_token_secret: a.agent_token_secret,
            keys: a.keys,
            default_max_ttl_hours: a.default_max_ttl_hours,
            policies: a.policies,
            approval_separation: a.approval_separation,
            rules: a.rules,
            audit: None,
            operation_id: Some(operation),
        }
    }

    /// The member's tenant, asking as the person who started the rollout (so separation of duties keeps
    /// them from approving its updates).
    fn caller(r: &Record, m: &Member) -> Caller {
        Caller {
            tenant: m.tenant.clone(),
            subject: Some(r.created_by.clone()),
            traceparent: None,
            scopes: Vec::new(),
        }
    }

    fn to_version(r: &Record) -> UpdateCluster {
        UpdateCluster {
            patch: BTreeMap::new(),
            version: Some(r.to_version.clone()),
            drift: Default::default(),
            expiry: Default::default(),
            approval: None,
            problems: Vec::new(),
        }
    }

    async fn exists(&self, operation: &OperationId) -> Result<bool, String> {
        let found = self.api.store.load_operation(operation).await;
        found.map(|o| o.is_some()).map_err(|e| e.to_string())
    }
}

impl<S, T, Q, C, K> Runs for DecideRuns<'_, S, T, Q, C, K>
where
    S: Storage + Intake + TenantSettings,
    T: Templates,
    Q: JobQueue + Clone,
    C: Clock + Clone,
    K: Keys,
{
    async fn plan(&self, r: &Record, m: &Member, operation: &OperationId) -> Result<(), String> {
        if self.exists(operation).await? {
            return Ok(());
        }
        let api = self.with_id(operation);
        let caller = Self::caller(r, m);
        api.plan(&caller, m.cluster.as_str(), Self::to_version(r))
            .await
            .map(drop)
            .map_err(reason)
    }

    async fn update(&self, r: &Record, m: &Member, operation: &OperationId) -> Result<(), String> {
        if self.exists(operation).await? {
            return Ok(());
        }
        let api = self.with_id(operation);
        let caller = Self::caller(r, m);
        api.update(&caller, m.cluster.as_str(), Self::to_version(r))
            .await
            .map(drop)
            .map_err(reason)
    }

    async fn notify(&self, r: &Record, notice: Notice) {
        // The webhooks (`rollout.paused`, `rollout.completed`) are sent by the caller's adapter; the
        // decisions alone only say it.
        tracing::info!(rollout = %r.id, ?notice, "rollout notice");
    }
}

//! A preview of an update (`POST /v1/clusters/{id}/plan`): the PATCH body's variables and template version,
//! validated and checked against the request policies exactly as an update, queued as a `plan` operation
//! whose spec is the proposed one. The runner plans it against the cluster's current state and applies
//! nothing; the cluster's spec, state and drift flag stay as they are (the status function leaves the
//! cluster untouched when a plan ends). It queues behind the cluster's other operations like any of them.

use std::collections::BTreeMap;

use serde_json::Value;
use strato_coordination::{ATTEMPTS, Attempt, optimistic};
use strato_domain::approval::ApprovalMode;
use strato_domain::model::{Cluster, OperationKind};
use strato_domain::ports::{Clock, JobQueue, Templates};
use strato_domain::sealed::Keys;
use strato_domain::validate::FieldError;

use super::policy::ApprovalInput;
use super::{Api, ApiStore, Started, kept_changing, refuse_new_operation};
use crate::commands::UpdateCluster;
use crate::spec::sorted;
use crate::{caller::Caller, error::ApiError};

/// What a preview plans: a merge patch of the variables and/or a template version.
struct Proposal {
    patch: BTreeMap<String, Value>,
    version: Option<String>,
}

/// The request's problems, and what it proposes. A PATCH's settings (drift, expiry, approval) change no
/// resource, so there is nothing to plan for them: each one given is a problem naming it.
fn proposal(cmd: UpdateCluster) -> Result<Proposal, ApiError> {
    let UpdateCluster {
        patch,
        version,
        drift,
        expiry,
        approval,
        mut problems,
    } = cmd;
    let setting = |field: &str| {
        ApiError::field(
            field,
            "is a setting, which no plan can preview",
            "leave it out of the preview; change it with PATCH /v1/clusters/{id}",
        )
    };
    if drift.policy.is_some() {
        problems.push(setting("drift.policy"));
    }
    if drift.interval_secs.is_some() {
        problems.push(setting("drift.interval_hours"));
    }
    if crate::expiry::asked(&expiry) {
        problems.push(setting("expires_at"));
    }
    if approval.is_some() {
        problems.push(setting("approval"));
    }
    let nothing = patch.is_empty() && version.is_none();
    if nothing && !problems.iter().any(|p: &FieldError| p.field == "variables") {
        problems.push(ApiError::field(
            "variables",
            "the request proposes no change to plan",
            "variables to change and/or a template_version",
        ));
    }
    if !problems.is_empty() {
        return Err(sorted(problems));
    }
    Ok(Proposal { patch, version })
}

impl<S: ApiStore, T: Templates, Q: JobQueue, C: Clock, K: Keys> Api<'_, S, T, Q, C, K> {
    /// Queues a preview of the update `cmd` describes: refused as that update would be (404, every field
    /// problem in one 422, 409 for a cluster that cannot be updated now, a request policy's deny, 429 over
    /// the quota), else a `plan` operation with the proposed spec (sealed) is recorded and its job sent.
    pub async fn plan(
        &self,
        caller: &Caller,
        id: &str,
        cmd: impl Into<UpdateCluster>,
    ) -> Result<Started, ApiError> {
        // A missing cluster is a 404 before the body's problems, as for a PATCH. The cluster read for it is
        // the first attempt's; only a retry (a lost conditional write) reads it again.
        let first = std::sync::Mutex::new(Some(self.load_cluster(caller, id).await?));
        let proposal = proposal(cmd.into())?;
        let (proposal, first) = (&proposal, &first);
        optimistic(
            ATTEMPTS,
            || kept_changing(id),
            || async move {
                let read = first.lock().unwrap_or_else(|e| e.into_inner()).take();
                let c = match read {
                    Some(c) => c,
                    None => self.load_cluster(caller, id).await?,
                };
                self.try_plan(caller, c, proposal).await
            },
        )
        .await
    }

    async fn try_plan(
        &self,
        caller: &Caller,
        c: Cluster,
        proposal: &Proposal,
    ) -> Result<Attempt<Started>, ApiError> {
        let open = self.open_operations(&c).await?;
        if let Some(why) = refuse_new_operation(&c, &open, "previewed") {
            return Err(ApiError::Conflict(why));
        }
        let (validated, t) = self
            .proposed_spec(&c, &open, &proposal.patch, proposal.version.as_deref())
            .await?;
        // The policies see what the update would: the approval mode that would apply to it.
        let tenant = self.tenant_rules(&caller.tenant).await?.approval;
        let approval = ApprovalInput {
            applies: Some(ApprovalMode::resolve(c.approval, t.manifest.approval, tenant)),
            setting: c.approval,
        };
        let allowed = self.check_policies(
            caller,
            "update",
            Some(&c.cluster_id),
            validated.spec(),
            &t,
            approval,
        )?;
        let mut op = self.new_operation(caller, &c.cluster_id, OperationKind::Plan);
        let mut spec = validated.spec().clone();
        self.seal(&caller.tenant, &c.cluster_id, &t, &mut spec).await?;
        op.spec = Some(spec);
        // Nothing is applied, so nothing waits for an approver.
        op.approval_required = false;
        allowed.record(&mut op);
        self.start(caller, c, op, t).await
    }
}

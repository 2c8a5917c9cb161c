//! What a plan costs and says: its summary and estimate reported (`PlanReady`), and the tenant's budget
//! checked before anything is applied, and so are the plan policies (policy as code).

use serde_json::Value;
use strato_domain::ErrorCategory;
use strato_domain::cost::CostEstimate;
use strato_domain::messages::{PlanSummary, RunnerEvent};
use strato_domain::model::OperationKind;
use strato_policy::{PlanInput, Policy, PolicySet, Stage, Verdict, input};

use super::PreparedRun;
use super::failure::Failure;
use super::plan::{estimate_plan, plan_summary};
use crate::ports::{Ports, RunStore};

impl<P: Ports> PreparedRun<'_, P> {
    /// The plan's summary and estimate: noted, merged into the run's estimate, sent as `PlanReady`.
    pub(super) fn report_plan(&mut self, stage: &str, plan: &Value) {
        let summary = plan_summary(plan);
        let estimate = estimate_plan(plan, &self.ctx.cluster.spec.region);
        self.estimate.merge_stage(stage, &estimate);
        self.note(
            &self.step(stage, "plan"),
            &format!(
                "plan: {} to add, {} to change, {} to destroy",
                summary.add, summary.change, summary.destroy
            ),
        );
        self.plan_ready(stage, summary, estimate);
    }

    pub(super) fn plan_ready(&self, stage: &str, summary: PlanSummary, estimate: CostEstimate) {
        self.ctx.progress.send(RunnerEvent::PlanReady {
            operation_id: self.ctx.op.operation_id.clone(),
            fencing_token: self.ctx.cfg.fencing_token,
            stage: stage.to_owned(),
            summary,
            estimate: Some(estimate),
            at: strato_domain::ts::now(),
        });
    }

    /// A create or update whose stages planned so far cost more than the tenant's monthly budget fails
    /// before anything is applied.
    pub(super) fn check_budget(&self, stage: &str) -> Result<(), Failure> {
        let Some(budget) = self.ctx.budget else {
            return Ok(());
        };
        let over = matches!(self.ctx.op.kind, OperationKind::Create | OperationKind::Update)
            && self.estimate.total_monthly > budget;
        if !over {
            return Ok(());
        }
        let mut f = Failure::new(
            &self.step(stage, "plan"),
            ErrorCategory::Quota,
            format!(
                "the plan's estimated cost is {:.2} USD/month, over the tenant's monthly budget of {budget:.2} USD; \
                 nothing was applied",
                self.estimate.total_monthly
            ),
        );
        f.fix = "Choose smaller or fewer instances (PATCH the cluster's variables), or raise the tenant's \
                 monthly budget, then retry."
            .into();
        Err(f)
    }
}

/// The platform's policies, those the operator set for the tenant and the tenant's own, read where the api keeps them (the tenant item). A set that
/// does not compile (a stored policy a newer Rego engine refuses) fails the run at step `policy`, before
/// anything is applied.
pub(super) async fn load_policies(
    store: &impl RunStore,
    op: &strato_domain::model::Operation,
) -> Result<Result<PolicySet, String>, crate::RunnerError> {
    let stored = store.tenant_policies(&op.tenant_id).await?;
    let tenant = Policy::stored(&stored.operator, &stored.tenant);
    Ok(PolicySet::with_platform(&tenant).map_err(|e| e.to_string()))
}

impl<P: Ports> PreparedRun<'_, P> {
    /// Whether apply must wait for the plan JSON: a budget to compare its price with, or plan policies.
    pub(super) fn plan_gates_apply(&self) -> bool {
        self.ctx.budget.is_some() || self.ctx.policies.as_ref().map_or(true, |p| p.has(Stage::Plan))
    }

    /// The plan policies on a create's or update's plan and the estimate so far: a deny fails the run at
    /// step `policy` with every rule's message, before anything of the stage is applied; warnings are noted.
    pub(super) fn check_policies(&self, stage: &str, plan: &Value) -> Result<(), Failure> {
        if !matches!(self.ctx.op.kind, OperationKind::Create | OperationKind::Update) {
            return Ok(());
        }
        let step = self.step(stage, "policy");
        self.ctx.event_step(&step, None);
        let verdict = self.evaluate_policies(&step, plan)?;
        for w in &verdict.warn {
            self.note(&step, &format!("policy warning: {w}"));
        }
        // The operation's notes also hold the request policies' warnings (the api checked them when the
        // operation was asked for): the summary counts and says them too, so the log and the operation agree.
        let requested = request_warnings(&self.ctx.op);
        for w in &requested {
            self.note(&step, &format!("policy warning (request): {w}"));
        }
        self.note(&step, &policy_summary(&verdict, requested.len()));
        self.ctx.event_step(&step, Some(!verdict.denied()));
        if !verdict.denied() {
            self.ctx.progress.send(RunnerEvent::PolicyChecked {
                operation_id: self.ctx.op.operation_id.clone(),
                fencing_token: self.ctx.cfg.fencing_token,
                stage: stage.to_owned(),
                version: verdict.version.clone(),
                warnings: verdict.warn.iter().map(ToString::to_string).collect(),
                at: strato_domain::ts::now(),
            });
            return Ok(());
        }
        let rules: Vec<String> = verdict.deny.iter().map(ToString::to_string).collect();
        let mut f = Failure::new(
            &step,
            ErrorCategory::InvalidConfiguration,
            format!(
                "the plan is denied by {} policy rule(s) (policy version {}); nothing was applied: {}",
                rules.len(),
                verdict.version,
                rules.join("; ")
            ),
        );
        f.fix =
            "Change the cluster's variables so the plan complies (PATCH the cluster), or ask your tenant's \
                 administrator about the policy (GET /v1/policies names each rule's owner: an `operator/` rule is the \
                 platform operator's); then retry."
                .into();
        Err(f)
    }

    /// The plan policies' verdict on `plan` and the estimate so far, as an update's (a preview is judged as
    /// the update it previews), messages redacted. A set that does not compile fails `step`.
    pub(super) fn evaluate_policies(&self, step: &str, plan: &Value) -> Result<Verdict, Failure> {
        let redactor = &self.ctx.logs.redactor;
        let mut verdict = match &self.ctx.policies {
            Ok(set) => {
                let c = &self.ctx.cluster;
                // Policies are tenants' code and their messages reach every viewer: they see no sensitive
                // value, neither one the plan marks (sensitive variables and what derives from them) nor one
                // the run knows (sensitive inputs, the agent token, credentials).
                let mut plan = plan.clone();
                input::redact_plan(&mut plan);
                redactor.redact_json(&mut plan);
                let input = PlanInput {
                    action: if self.ctx.op.kind == OperationKind::Create {
                        "create"
                    } else {
                        "update"
                    }
                    .into(),
                    tenant: c.tenant_id.to_string(),
                    cluster: input::ClusterRef {
                        id: Some(c.cluster_id.to_string()),
                        name: c.spec.name.to_string(),
                    },
                    template: input::TemplateRef {
                        name: c.spec.template.name.clone(),
                        version: c.spec.template.version.clone(),
                    },
                    region: c.spec.region.clone(),
                    plan,
                    estimate: serde_json::to_value(&self.estimate).ok(),
                };
                set.evaluate(Stage::Plan, &input.to_value())
            }
            Err(why) => {
                self.ctx.event_step(step, Some(false));
                let mut f = Failure::new(step, ErrorCategory::InvalidConfiguration, why.clone());
                f.fix = "Correct or delete the policy named (PUT or DELETE /v1/policies/{name}), then retry."
                    .into();
                return Err(f);
            }
        };
        verdict.redact_messages(|m| redactor.redact(m));
        Ok(verdict)
    }
}

/// The policy step's summary line: denials and warnings, the request's counted too.
pub(super) fn policy_summary(verdict: &Verdict, requested: usize) -> String {
    let warnings = if requested == 0 {
        format!("{} warning(s)", verdict.warn.len())
    } else {
        format!(
            "{} warning(s) ({} on the plan, {requested} on the request)",
            verdict.warn.len() + requested,
            verdict.warn.len(),
        )
    };
    format!(
        "policy {}: {} denied, {warnings}",
        verdict.version,
        verdict.deny.len(),
    )
}

/// How the api notes a request policy's warning on the operation (`functions/api/src/decide/policy.rs`).
const REQUEST_WARNING_NOTE: &str = "policy warning: ";

/// The request policies' warnings the operation was asked with, from its notes.
pub(super) fn request_warnings(op: &strato_domain::model::Operation) -> Vec<&str> {
    op.notes
        .iter()
        .filter_map(|n| n.strip_prefix(REQUEST_WARNING_NOTE))
        .collect()
}

//! What a plan costs and says: its summary and estimate reported (`PlanReady`), and the tenant's budget
//! checked before anything is applied.

use serde_json::Value;
use strato_domain::ErrorCategory;
use strato_domain::cost::CostEstimate;
use strato_domain::messages::{PlanSummary, RunnerEvent};
use strato_domain::model::OperationKind;

use super::PreparedRun;
use super::failure::Failure;
use super::plan::{estimate_plan, plan_summary};

impl PreparedRun<'_> {
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

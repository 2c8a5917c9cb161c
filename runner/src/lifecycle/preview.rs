//! A preview (`plan` operation): the proposed spec planned against the cluster's current state, nothing
//! applied. Each stage's plan gives the changes by address, the plan policies' verdict (recorded, not
//! enforced: a preview says the update would be refused, it does not fail) and both sides of the monthly
//! cost: each resource's `before` (the state now) and `after`, priced with the same table, so one plan
//! gives the difference.

use serde_json::Value;
use strato_domain::cost::CostEstimate;
use strato_domain::preview::{CostDifference, PolicyResults, Preview, PreviewCounts};

use super::PreparedRun;
use super::failure::Failure;
use super::plan::planned_changes;
use super::priced::{policy_summary, request_warnings};
use crate::ports::Ports;

/// What the stages planned so far add up to.
pub(super) struct PreviewBuild {
    preview: Preview,
    current: CostEstimate,
    proposed: CostEstimate,
}

impl PreviewBuild {
    pub(super) fn new() -> Self {
        Self {
            preview: Preview {
                changes: Vec::new(),
                counts: PreviewCounts::default(),
                cost: CostDifference::between(&CostEstimate::empty(), &CostEstimate::empty()),
                policy: PolicyResults::default(),
            },
            current: CostEstimate::empty(),
            proposed: CostEstimate::empty(),
        }
    }
}

impl<P: Ports> PreparedRun<'_, P> {
    /// Adds one stage's plan to the preview: its changes, both sides of its cost, the policies' verdict.
    pub(super) fn preview_stage(
        &self,
        stage: &str,
        plan: &Value,
        build: &mut PreviewBuild,
    ) -> Result<(), Failure> {
        build.preview.add_changes(stage, &planned_changes(plan));
        let region = &self.ctx.cluster.spec.region;
        build
            .current
            .merge_stage(stage, &strato_terraform::cost::estimate_current(plan, region));
        build
            .proposed
            .merge_stage(stage, &strato_terraform::cost::estimate(plan, region));
        let step = self.step(stage, "policy");
        self.ctx.event_step(&step, None);
        let verdict = self.evaluate_policies(&step, plan)?;
        for d in &verdict.deny {
            self.note(
                &step,
                &format!("policy denial (the update would be refused): {d}"),
            );
        }
        for w in &verdict.warn {
            self.note(&step, &format!("policy warning: {w}"));
        }
        let policy = &mut build.preview.policy;
        policy.version.clone_from(&verdict.version);
        policy.denied.extend(verdict.deny.iter().map(ToString::to_string));
        policy
            .warnings
            .extend(verdict.warn.iter().map(ToString::to_string));
        let requested = request_warnings(&self.ctx.op).len();
        self.note(&step, &policy_summary(&verdict, requested));
        // The step ran; what it found is the preview's result, not the run's failure.
        self.ctx.event_step(&step, Some(true));
        Ok(())
    }

    /// The preview of every stage planned: the request's warnings added, the cost difference computed, and
    /// one line that says it all.
    pub(super) fn finish_preview(&self, build: PreviewBuild) -> Preview {
        let PreviewBuild {
            mut preview,
            current,
            proposed,
        } = build;
        preview.policy.warnings.extend(
            request_warnings(&self.ctx.op)
                .into_iter()
                .map(|w| format!("{w} (request)")),
        );
        preview.cost = CostDifference::between(&current, &proposed);
        let c = &preview.cost;
        let unpriced = if c.not_estimated.is_empty() {
            String::new()
        } else {
            format!(" ({} resource(s) not priced)", c.not_estimated.len())
        };
        self.note(
            "preview",
            &format!(
                "preview: {} ({} to add, {} to change, {} to destroy, {} to replace); monthly cost \
                 {:.2} -> {:.2} {} ({}){unpriced}; policy: {} denied, {} warning(s); nothing was applied",
                preview.counts_text(),
                preview.counts.add,
                preview.counts.change,
                preview.counts.destroy,
                preview.counts.replace,
                c.current_monthly,
                c.proposed_monthly,
                c.currency,
                c.difference_text(),
                preview.policy.denied.len(),
                preview.policy.warnings.len(),
            ),
        );
        for ch in &preview.changes {
            self.note(
                "preview",
                &format!("{} {} ({})", ch.action.marker(), ch.address, ch.action.as_str()),
            );
        }
        preview
    }
}

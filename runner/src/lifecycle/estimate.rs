//! An estimate's stages: each planned (and priced) with local state, nothing applied or stored.

use serde_json::Map;
use strato_domain::messages::PlanSummary;

use super::PreparedRun;
use super::failure::Failure;
use super::stages::ExecOutcome;
use crate::ports::Ports;

impl<P: Ports> PreparedRun<'_, P> {
    /// An estimate: each stage is planned (and priced) with local state; nothing is applied or stored. A
    /// later stage whose inputs are earlier stages' outputs cannot be planned (those outputs exist only after
    /// an apply): it is reported as one "not estimated" entry naming those inputs, never as zero.
    pub(super) async fn estimate_only(&mut self) -> Result<ExecOutcome, Failure> {
        let stages = self.ws.stages.clone();
        for (i, stage) in stages.iter().enumerate() {
            let from_earlier: Vec<String> = stage
                .variables
                .keys()
                .filter(|v| !self.rendered.contains_key(*v))
                .filter(|v| stages[..i].iter().any(|s| s.outputs.contains_key(*v)))
                .cloned()
                .collect();
            if from_earlier.is_empty() {
                self.write_tfvars(stage, &Map::new())?;
                self.init(&stage.stage).await?;
                self.plan(&stage.stage, false).await?;
            } else {
                self.not_estimated(&stage.stage, &from_earlier);
            }
        }
        Ok(ExecOutcome::nothing())
    }

    /// Reports a stage the estimate could not plan, and why.
    fn not_estimated(&mut self, stage: &str, from_earlier: &[String]) {
        let why = format!(
            "stage {stage} was not planned: its inputs {} are outputs of earlier stages, which exist only after \
             those are applied",
            from_earlier.join(", ")
        );
        self.note(&self.step(stage, "plan"), &why);
        let skipped = strato_terraform::cost::not_planned(&format!("stage.{stage}"), &why);
        self.estimate.merge_stage(stage, &skipped);
        self.plan_ready(stage, PlanSummary::default(), skipped);
    }
}

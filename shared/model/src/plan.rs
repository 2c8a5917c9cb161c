//! What a plan says, as the records that carry it: its counts ([`PlanSummary`]) and each planned change by
//! address ([`ResourceChange`]). Below the model, the approvals and the messages, which all hold them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Counts of planned resource actions (a replace counts as one add and one destroy, as Terraform says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PlanSummary {
    pub add: u32,
    pub change: u32,
    pub destroy: u32,
}

/// One resource a plan changes: its address and Terraform's actions (`create`, `update`, `delete`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub address: String,
    pub actions: Vec<String>,
}

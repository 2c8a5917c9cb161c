//! The documents policies see as `input`: stable, documented shapes built by the api and the runner, so a
//! policy does not depend on internal types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `input` of `package strato.request`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestInput {
    /// `create`, `update` or `delete`.
    pub action: String,
    pub tenant: String,
    /// The JWT subject, when the token has one.
    pub principal: Option<String>,
    /// The cluster's name (and id, once it exists).
    pub cluster: ClusterRef,
    pub template: TemplateRef,
    pub provider: String,
    pub region: String,
    /// The effective variables: the request's merged over the cluster's (defaults not applied).
    pub variables: BTreeMap<String, Value>,
    /// The `tags` variable when it is an object of strings, else empty.
    pub tags: BTreeMap<String, String>,
    /// The `node_count` variable, when set.
    pub node_count: Option<i64>,
    /// The approval mode that applies to the create or update this request asks for (`auto` or
    /// `required`: the strictest of the cluster's own setting, its template's and the tenant's default);
    /// null for a delete, which never waits for an approver.
    pub approval: Option<String>,
    /// The cluster's own approval setting as the request leaves it (`auto`, `required`, or null: none), so
    /// a policy can refuse a request that sets it.
    pub approval_setting: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterRef {
    pub id: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateRef {
    pub name: String,
    pub version: String,
}

impl RequestInput {
    /// Fills the fields derived from the variables (`tags`, `node_count`).
    pub fn derive(mut self) -> Self {
        self.tags = match self.variables.get("tags") {
            Some(Value::Object(m)) => m
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect(),
            _ => BTreeMap::new(),
        };
        self.node_count = self.variables.get("node_count").and_then(Value::as_i64);
        self
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What a value the plan marks sensitive reads as in a policy's input (as in the run's log).
pub const REDACTED: &str = "(sensitive value)";

/// Masks, in place, every value `terraform show -json` marks sensitive, so plan policies never see one: root
/// variables declared `sensitive` (`variables`, from `configuration.root_module.variables`), resource
/// attributes under `after_sensitive` / `before_sensitive` (`resource_changes`) and `sensitive_values`
/// (`planned_values`, `prior_state`), and sensitive outputs. The engine prints all of them in the clear.
pub fn redact_plan(plan: &mut Value) {
    let declared: Vec<String> = plan
        .pointer("/configuration/root_module/variables")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(_, v)| v["sensitive"] == Value::Bool(true))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    if let Some(vars) = plan.get_mut("variables").and_then(Value::as_object_mut) {
        for name in &declared {
            if let Some(v) = vars.get_mut(name) {
                v["value"] = Value::from(REDACTED);
            }
        }
    }
    if let Some(changes) = plan.get_mut("resource_changes").and_then(Value::as_array_mut) {
        for rc in changes {
            let change = &mut rc["change"];
            for (value, marks) in [("after", "after_sensitive"), ("before", "before_sensitive")] {
                let marks = change[marks].clone();
                mask(&mut change[value], &marks);
            }
        }
    }
    if let Some(changes) = plan.get_mut("output_changes").and_then(Value::as_object_mut) {
        for change in changes.values_mut() {
            for (value, marks) in [("after", "after_sensitive"), ("before", "before_sensitive")] {
                let marks = change[marks].clone();
                mask(&mut change[value], &marks);
            }
        }
    }
    for values in ["/planned_values", "/prior_state/values"] {
        if let Some(v) = plan.pointer_mut(values) {
            redact_module_values(v);
        }
    }
}

/// `planned_values` / `prior_state.values`: sensitive outputs, and each resource's `sensitive_values`, in
/// the root module and every child module.
fn redact_module_values(values: &mut Value) {
    if let Some(outputs) = values.get_mut("outputs").and_then(Value::as_object_mut) {
        for o in outputs.values_mut() {
            if o["sensitive"] == Value::Bool(true) {
                o["value"] = Value::from(REDACTED);
            }
        }
    }
    if let Some(root) = values.get_mut("root_module") {
        redact_module(root);
    }
}

fn redact_module(module: &mut Value) {
    if let Some(resources) = module.get_mut("resources").and_then(Value::as_array_mut) {
        for r in resources {
            let marks = r["sensitive_values"].clone();
            mask(&mut r["values"], &marks);
        }
    }
    if let Some(children) = module.get_mut("child_modules").and_then(Value::as_array_mut) {
        children.iter_mut().for_each(redact_module);
    }
}

/// Replaces what `marks` (Terraform's sensitivity shape: `true`, or an object / array of marks mirroring
/// the value) marks sensitive in `value`.
fn mask(value: &mut Value, marks: &Value) {
    match marks {
        Value::Bool(true) if !value.is_null() => *value = Value::from(REDACTED),
        Value::Object(m) => {
            for (k, mk) in m {
                if let Some(v) = value.get_mut(k) {
                    mask(v, mk);
                }
            }
        }
        Value::Array(a) => {
            for (i, mk) in a.iter().enumerate() {
                if let Some(v) = value.get_mut(i) {
                    mask(v, mk);
                }
            }
        }
        _ => {}
    }
}

/// `input` of `package strato.plan`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanInput {
    pub action: String,
    pub tenant: String,
    pub cluster: ClusterRef,
    pub template: TemplateRef,
    pub region: String,
    /// The plan as `terraform show -json` prints it (`resource_changes[]`, `planned_values`, …).
    pub plan: Value,
    /// The cost estimate, when one was made: `{"currency": "USD", "total_monthly": …, "resources": […]}`.
    pub estimate: Option<Value>,
}

impl PlanInput {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

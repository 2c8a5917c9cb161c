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

//! Pure readers of the engine's JSON: plan summaries, drift, cost estimates and outputs.

use serde_json::{Map, Value};
use strato_domain::cost::CostEstimate;
use strato_domain::messages::PlanSummary;
use strato_domain::model::ResourceChange;

pub(super) fn estimate_plan(plan_json: &Value, region: &str) -> CostEstimate {
    strato_terraform::cost::estimate(plan_json, region)
}

/// Counts of planned actions from `show -json` (a replace is one add and one destroy).
pub fn plan_summary(plan: &Value) -> PlanSummary {
    let mut s = PlanSummary::default();
    for rc in plan["resource_changes"].as_array().into_iter().flatten() {
        let actions: Vec<&str> = rc["change"]["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for a in actions {
            match a {
                "create" => s.add += 1,
                "update" => s.change += 1,
                "delete" => s.destroy += 1,
                _ => {}
            }
        }
    }
    s
}

/// Changed resources of a (drift) plan: `resource_drift` when the engine reports it (refresh-only plans),
/// else `resource_changes` with an action other than no-op/read.
pub fn drift_changes(plan: &Value) -> Vec<ResourceChange> {
    let list = plan
        .get("resource_drift")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .or_else(|| plan["resource_changes"].as_array());
    changed_resources(list.into_iter().flatten())
}

/// The resources a plan adds, changes or destroys (no-ops and reads left out), by address: what an
/// approver is shown.
pub(super) fn planned_changes(plan: &Value) -> Vec<ResourceChange> {
    changed_resources(plan["resource_changes"].as_array().into_iter().flatten())
}

/// Entries of `resource_changes` / `resource_drift` whose actions change something, by address.
fn changed_resources<'a>(list: impl Iterator<Item = &'a Value>) -> Vec<ResourceChange> {
    list.filter_map(|rc| {
        let actions: Vec<String> = rc["change"]["actions"]
            .as_array()?
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        let changed = actions.iter().any(|a| a != "no-op" && a != "read");
        changed.then(|| ResourceChange {
            address: rc["address"].as_str().unwrap_or_default().to_owned(),
            actions,
        })
    })
    .collect()
}

/// Output name → value.
pub type Outputs = Map<String, Value>;

/// Parses `output -json` into (non-sensitive, sensitive) maps.
pub fn split_outputs(text: &str) -> Result<(Outputs, Outputs), String> {
    let v: Value = serde_json::from_str(strato_terraform::render::strip_write_prefix(text.trim()))
        .map_err(|e| format!("output -json is not JSON: {e}"))?;
    let mut plain = Map::new();
    let mut sensitive = Map::new();
    for (k, o) in v.as_object().into_iter().flatten() {
        let value = o.get("value").cloned().unwrap_or(Value::Null);
        if o.get("sensitive").and_then(Value::as_bool).unwrap_or(false) {
            sensitive.insert(k.clone(), value);
        } else {
            plain.insert(k.clone(), value);
        }
    }
    Ok((plain, sensitive))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plan_summary_counts_replace_as_add_and_destroy() {
        let plan = json!({"resource_changes": [
            {"address": "a", "change": {"actions": ["create"]}},
            {"address": "b", "change": {"actions": ["delete", "create"]}},
            {"address": "c", "change": {"actions": ["update"]}},
            {"address": "d", "change": {"actions": ["no-op"]}},
        ]});
        assert_eq!(
            plan_summary(&plan),
            PlanSummary {
                add: 2,
                change: 1,
                destroy: 1
            }
        );
        let d = drift_changes(&plan);
        assert_eq!(
            d.iter().map(|c| c.address.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        let refresh = json!({"resource_drift": [{"address": "x", "change": {"actions": ["update"]}}],
            "resource_changes": []});
        assert_eq!(drift_changes(&refresh)[0].address, "x");
    }

    #[test]
    fn outputs_split_by_sensitivity() {
        let (p, s) = split_outputs(
            r#"{"vpc_id":{"sensitive":false,"type":"string","value":"vpc-1"},"kc":{"sensitive":true,"type":"string","value":"secret"}}"#,
        )
        .unwrap();
        assert_eq!(p["vpc_id"], "vpc-1");
        assert_eq!(s["kc"], "secret");
        assert!(!p.contains_key("kc"));
    }
}

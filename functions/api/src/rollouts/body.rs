//! `POST /v1/rollouts`'s body, read member by member so each problem is a 422 naming its field.

use serde::Deserialize;
use serde_json::Value;
use strato_rollout::spec::{DEFAULT_PARALLEL, Mode, Plan, StopRules, WaveSize};
use strato_rollout::{RolloutError, Selector};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::spec::sorted;
use strato_domain::validate::FieldError;

/// A rollout of a template version to a fleet: `preview` plans every selected cluster on `to_version` and
/// applies nothing; `apply` upgrades them in waves, each cluster planned and checked against `stop` first.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = RolloutRequest)]
pub(crate) struct RolloutBody {
    /// The template's name.
    #[serde(default)]
    pub template: Option<String>,
    /// The published version to go to.
    #[serde(default)]
    pub to_version: Option<String>,
    /// Which clusters: `from_versions`, `clusters` (ids or names), `states`, and — the platform operator
    /// only — `tenants`; all absent: the template's whole fleet (not on `to_version` already).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub selector: Option<Value>,
    /// `preview` or `apply`.
    #[serde(default)]
    pub mode: Option<String>,
    /// Apply only: e.g. `[{"clusters": 1}, {"percent": 25}, {"percent": 100}]` (percents are of the whole
    /// fleet, cumulative; the last must be `{"percent": 100}`).
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub waves: Option<Value>,
    /// Apply only: seconds to wait after a wave before the next (at most 7 days).
    #[serde(default)]
    pub soak_seconds: Option<u64>,
    /// What may pass without pausing: `allow_replace` (addresses or prefixes), `allow_destroy`,
    /// `max_monthly_delta` (the most a cluster's monthly cost may rise).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub stop: Option<Value>,
    /// Runs in flight at once (default 5, at most 50).
    #[serde(default)]
    pub max_parallel: Option<u32>,
}

/// `POST /v1/rollouts/{id}/resume`'s optional body.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RolloutResumeRequest)]
pub(crate) struct ResumeBody {
    /// Leave the current wave's failed and held clusters out (default: plan them again).
    #[serde(default)]
    pub skip_failed: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StopBody {
    #[serde(default)]
    allow_replace: Vec<String>,
    #[serde(default)]
    allow_destroy: bool,
    #[serde(default)]
    max_monthly_delta: Option<f64>,
}

/// What the body asks for, checked.
pub(crate) struct Asked {
    pub template: String,
    pub to_version: String,
    pub selector: Selector,
    pub plan: Plan,
}

fn required(v: &Option<String>, field: &str, allowed: &str, problems: &mut Vec<FieldError>) -> String {
    match v.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => {
            problems.push(ApiError::field(field, "is required", allowed));
            String::new()
        }
    }
}

fn shape<T: serde::de::DeserializeOwned>(
    v: &Option<Value>,
    field: &str,
    allowed: &str,
    problems: &mut Vec<FieldError>,
) -> Option<T> {
    let v = v.as_ref().filter(|v| !v.is_null())?;
    match serde_json::from_value(v.clone()) {
        Ok(t) => Some(t),
        Err(e) => {
            problems.push(ApiError::field(field, e.to_string(), allowed));
            None
        }
    }
}

impl RolloutBody {
    /// Every problem of the body at once (422), or what it asks.
    pub(crate) fn check(&self) -> Result<Asked, ApiError> {
        let mut problems = Vec::new();
        let template = required(
            &self.template,
            "template",
            "a published template's name",
            &mut problems,
        );
        let to_version = required(
            &self.to_version,
            "to_version",
            "a published version of the template",
            &mut problems,
        );
        let mode = match self.mode.as_deref() {
            Some("preview") => Some(Mode::Preview),
            Some("apply") => Some(Mode::Apply),
            _ => {
                problems.push(ApiError::field(
                    "mode",
                    "must be preview or apply",
                    "preview, apply",
                ));
                None
            }
        };
        let selector: Selector = shape(
            &self.selector,
            "selector",
            "an object of from_versions, clusters, states, tenants (lists of strings)",
            &mut problems,
        )
        .unwrap_or_default();
        let waves: Vec<WaveSize> = shape(
            &self.waves,
            "waves",
            "a list like [{\"clusters\": 1}, {\"percent\": 25}, {\"percent\": 100}]",
            &mut problems,
        )
        .unwrap_or_default();
        let stop: Option<StopBody> = shape(
            &self.stop,
            "stop",
            "an object of allow_replace (list of addresses), allow_destroy (boolean), max_monthly_delta (number)",
            &mut problems,
        );
        let stop = stop
            .map(|s| StopRules {
                allow_replace: s.allow_replace,
                allow_destroy: s.allow_destroy,
                max_monthly_increase: s.max_monthly_delta,
            })
            .unwrap_or_default();
        let (Some(mode), true) = (mode, problems.is_empty()) else {
            return Err(sorted(problems));
        };
        let plan = Plan {
            mode,
            waves,
            soak_secs: self.soak_seconds.unwrap_or(0),
            stop,
            max_parallel: self.max_parallel.unwrap_or(DEFAULT_PARALLEL),
        };
        plan.check().map_err(|e| match e {
            // The machine's names for what the request calls otherwise.
            RolloutError::Invalid { field, reason } => super::refusal(RolloutError::Invalid {
                field: match field {
                    "stop.max_monthly_increase" => "stop.max_monthly_delta",
                    "soak_secs" => "soak_seconds",
                    f => f,
                },
                reason: reason
                    .replace("max_monthly_increase", "max_monthly_delta")
                    .replace("soak_secs", "soak_seconds"),
            }),
            e => super::refusal(e),
        })?;
        Ok(Asked {
            template,
            to_version,
            selector,
            plan,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The fields a refused body's 422 names.
    fn fields(v: serde_json::Value) -> Vec<String> {
        let body: RolloutBody = serde_json::from_value(v).unwrap();
        let e = body.check().err().expect("refused");
        assert_eq!(e.status().as_u16(), 422, "{e}");
        let (p, _) = e.problem();
        p.errors.into_iter().map(|f| f.field).collect()
    }

    #[test]
    fn every_missing_or_malformed_member_is_named_at_once() {
        assert_eq!(fields(json!({})), ["mode", "template", "to_version"]);
        assert_eq!(
            fields(json!({"template": "eks", "to_version": "2.0.0", "mode": "apply",
                "waves": [{"clusters": "one"}], "selector": {"colour": "red"}, "stop": {"allow_destroy": "yes"}})),
            ["selector", "stop", "waves"]
        );
    }

    #[test]
    fn waves_soak_and_stop_bounds_are_named_as_the_request_calls_them() {
        let base = |extra: serde_json::Value| {
            let mut v = json!({"template": "eks", "to_version": "2.0.0", "mode": "apply"});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            v
        };
        assert_eq!(fields(base(json!({"waves": [{"percent": 50}]}))), ["waves"]);
        assert_eq!(fields(base(json!({}))), ["waves"], "an apply needs waves");
        assert_eq!(
            fields(base(
                json!({"waves": [{"percent": 100}], "soak_seconds": 99_999_999})
            )),
            ["soak_seconds"]
        );
        assert_eq!(
            fields(base(
                json!({"waves": [{"percent": 100}], "stop": {"max_monthly_delta": -1}})
            )),
            ["stop.max_monthly_delta"]
        );
        let preview =
            json!({"template": "eks", "to_version": "2.0.0", "mode": "preview", "waves": [{"percent": 100}]});
        assert_eq!(fields(preview), ["waves"]);
    }

    #[test]
    fn a_good_body_is_read_into_the_plan() {
        let body: RolloutBody = serde_json::from_value(json!({"template": "eks", "to_version": "2.0.0",
            "mode": "apply", "waves": [{"clusters": 1}, {"percent": 100}], "soak_seconds": 600,
            "stop": {"allow_replace": ["aws_eks_node_group.this"], "max_monthly_delta": 50},
            "selector": {"from_versions": ["1.0.0"]}}))
        .unwrap();
        let a = body.check().unwrap();
        assert_eq!((a.template.as_str(), a.to_version.as_str()), ("eks", "2.0.0"));
        assert_eq!(a.plan.mode, Mode::Apply);
        assert_eq!(a.plan.waves, [WaveSize::Clusters(1), WaveSize::Percent(100)]);
        assert_eq!(a.plan.soak_secs, 600);
        assert_eq!(a.plan.stop.max_monthly_increase, Some(50.0));
        assert!(a.plan.stop.replace_allowed("aws_eks_node_group.this"));
        assert_eq!(a.selector.from_versions, ["1.0.0"]);
        assert_eq!(a.plan.max_parallel, DEFAULT_PARALLEL);
    }
}

//! A cluster's drift settings in requests and views: `"drift": {"policy": "notify" | "reconcile",
//! "interval_hours": 1..=168 | null}`. Given on create, changed with PATCH (no Terraform run for that alone).

use serde_json::Value;
use strato_domain::validate::FieldError;

use crate::commands::DriftSettings;
use crate::error::ApiError;
use crate::requests::{DriftBody, Field, unknown};

/// A week: a cluster checked less often than that is not being watched.
const MAX_INTERVAL_HOURS: u64 = 168;
const POLICIES: &str = "notify, reconcile";

/// Reads the `drift` field; every problem goes to `errors` with its path.
pub(crate) fn parse(value: Field<DriftBody>, errors: &mut Vec<FieldError>) -> DriftSettings {
    let shape = "{\"policy\": \"notify\" | \"reconcile\", \"interval_hours\": 1-168 or null}";
    let body = match value {
        Field::Missing | Field::Null => return DriftSettings::default(),
        Field::Ok(b) => b,
        Field::Bad(_) => {
            errors.push(ApiError::field("drift", "must be an object", shape));
            return DriftSettings::default();
        }
    };
    let mut out = DriftSettings::default();
    unknown(
        &body.other,
        "drift.",
        "is not a drift setting",
        "policy, interval_hours",
        errors,
    );
    match body.policy {
        Field::Missing | Field::Null => {}
        Field::Ok(p) => out.policy = Some(p),
        Field::Bad(v) => errors.push(ApiError::field(
            "drift.policy",
            format!("{} is not a drift policy", short(&v)),
            POLICIES,
        )),
    }
    let bad_hours = |v: &Value| {
        ApiError::field(
            "drift.interval_hours",
            format!(
                "{} is not a whole number of hours from 1 to {MAX_INTERVAL_HOURS}",
                short(v)
            ),
            "1-168, or null for the default (6)",
        )
    };
    match body.interval_hours {
        Field::Missing => {}
        Field::Null => out.interval_secs = Some(None),
        Field::Ok(h) if (1..=MAX_INTERVAL_HOURS).contains(&h) => out.interval_secs = Some(Some(h * 3600)),
        Field::Ok(h) => errors.push(bad_hours(&Value::from(h))),
        Field::Bad(v) => errors.push(bad_hours(&v)),
    }
    out
}

fn short(v: &Value) -> String {
    v.to_string().chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strato_domain::model::DriftPolicy;

    fn read(v: Value) -> (DriftSettings, Vec<String>) {
        let mut errors = Vec::new();
        let s = parse(serde_json::from_value(v).unwrap(), &mut errors);
        (s, errors.into_iter().map(|e| e.field).collect())
    }

    #[test]
    fn settings_are_read_and_every_bad_part_is_named() {
        let (s, e) = read(json!({"policy": "reconcile", "interval_hours": 12}));
        assert!(e.is_empty());
        assert_eq!(s.policy, Some(DriftPolicy::Reconcile));
        assert_eq!(s.interval_secs, Some(Some(12 * 3600)));

        let (s, e) = read(json!({"interval_hours": null}));
        assert!(e.is_empty());
        assert_eq!((s.policy, s.interval_secs), (None, Some(None)));

        let (_, e) = read(json!({"policy": "fix-it", "interval_hours": 0, "every": 3}));
        assert_eq!(e, ["drift.every", "drift.policy", "drift.interval_hours"]);
        let (_, e) = read(json!({"interval_hours": 169}));
        assert_eq!(e, ["drift.interval_hours"]);
        let (_, e) = read(json!({"interval_hours": 1.5}));
        assert_eq!(e, ["drift.interval_hours"]);
        let (_, e) = read(json!("reconcile"));
        assert_eq!(e, ["drift"]);
    }
}

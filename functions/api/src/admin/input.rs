//! The operator's tenant requests, read leniently and checked field by field (422 naming each field and
//! what it allows), and the changes they ask for.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use strato_aws::store::Quotas;
use strato_domain::approval::ApprovalMode;
use strato_domain::ids::TenantId;
use strato_domain::ports::TenantRules;
use strato_domain::validate::FieldError;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::requests::{Field, unknown};

const KNOWN: &str = "id (create only), max_clusters, max_open_operations, max_concurrent_operations, \
                     monthly_budget, approval, max_ttl_hours, suspended, reason";
const COUNT: &str = "a whole number from 1 to 100000";

/// `POST /v1/admin/tenants` and `PATCH /v1/admin/tenants/{tenant}`: every member optional but `id` on
/// create; a member left out is left as it is, `null` puts it back to the platform default.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = AdminTenantRequest)]
pub(crate) struct TenantBody {
    /// The tenant id its tokens carry (create only): letters, digits, `-` and `_`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Field<String>,
    #[serde(default)]
    #[schema(value_type = Option<u32>, minimum = 1)]
    pub max_clusters: Field<u64>,
    #[serde(default)]
    #[schema(value_type = Option<u32>, minimum = 1)]
    pub max_open_operations: Field<u64>,
    #[serde(default)]
    #[schema(value_type = Option<u32>, minimum = 1)]
    pub max_concurrent_operations: Field<u64>,
    /// USD per month, more than 0; null removes it.
    #[serde(default)]
    #[schema(value_type = Option<f64>)]
    pub monthly_budget: Field<f64>,
    /// `auto` or `required`; null: auto.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub approval: Field<String>,
    /// The longest a cluster may live, in hours; null: the platform default.
    #[serde(default)]
    #[schema(value_type = Option<u64>, minimum = 1)]
    pub max_ttl_hours: Field<u64>,
    /// `true` suspends the tenant (its changes are refused, reads still work; `reason` required), `false`
    /// resumes it.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub suspended: Field<bool>,
    /// Why the tenant is suspended: shown to its users in every refusal.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub reason: Field<String>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}

/// `GET /v1/admin/tenants` query parameters.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TenantsQuery {
    pub limit: Option<String>,
    pub next: Option<String>,
}

/// What a request changes: `None` leaves a setting as it is, `Some(None)` puts it back to the default.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Change {
    pub max_clusters: Option<u32>,
    pub max_open_operations: Option<u32>,
    pub max_concurrent_operations: Option<u32>,
    pub monthly_budget: Option<Option<f64>>,
    pub approval: Option<Option<ApprovalMode>>,
    pub max_ttl_hours: Option<Option<u64>>,
    /// `Some(Some(reason))` suspends, `Some(None)` resumes.
    pub suspended: Option<Option<String>>,
}

impl Change {
    pub fn quotas_changed(&self) -> bool {
        self.max_clusters.is_some()
            || self.max_open_operations.is_some()
            || self.max_concurrent_operations.is_some()
    }

    /// The quotas `now` with this change's applied.
    pub fn quotas(&self, now: Quotas) -> Quotas {
        Quotas {
            max_clusters: self.max_clusters.unwrap_or(now.max_clusters),
            max_open_operations: self.max_open_operations.unwrap_or(now.max_open_operations),
            max_concurrent_operations: self
                .max_concurrent_operations
                .unwrap_or(now.max_concurrent_operations),
        }
    }

    pub fn rules_changed(&self) -> bool {
        self.approval.is_some() || self.max_ttl_hours.is_some()
    }

    /// The rules `now` with this change's applied.
    pub fn rules(&self, now: TenantRules) -> TenantRules {
        TenantRules {
            approval: self.approval.unwrap_or(now.approval),
            max_ttl_hours: self.max_ttl_hours.unwrap_or(now.max_ttl_hours),
        }
    }
}

/// A quota: a whole number from 1 to 100 000 (null: the platform default's value, as quotas are stored
/// whole).
fn count(f: Field<u64>, name: &str, dflt: u32, errors: &mut Vec<FieldError>) -> Option<u32> {
    match f {
        Field::Missing => None,
        Field::Null => Some(dflt),
        Field::Ok(n) if (1..=100_000).contains(&n) => Some(n as u32),
        _ => {
            errors.push(ApiError::field(name, "is not a quota", COUNT));
            None
        }
    }
}

fn change(body: TenantBody, errors: &mut Vec<FieldError>) -> Change {
    let d = Quotas::default();
    let monthly_budget = match body.monthly_budget {
        Field::Missing => None,
        Field::Null => Some(None),
        Field::Ok(v) if v.is_finite() && v > 0.0 && v <= 1e9 => Some(Some(v)),
        _ => {
            errors.push(ApiError::field(
                "monthly_budget",
                "is not a budget",
                "USD per month: a number above 0 (null removes the budget)",
            ));
            None
        }
    };
    let approval = match body.approval {
        Field::Missing => None,
        Field::Null => Some(None),
        Field::Ok(a) if a == "auto" => Some(Some(ApprovalMode::Auto)),
        Field::Ok(a) if a == "required" => Some(Some(ApprovalMode::Required)),
        _ => {
            errors.push(ApiError::field(
                "approval",
                "is not an approval mode",
                "auto, required or null",
            ));
            None
        }
    };
    let max_ttl_hours = match body.max_ttl_hours {
        Field::Missing => None,
        Field::Null => Some(None),
        Field::Ok(h) if (1..=24 * 366 * 10).contains(&h) => Some(Some(h)),
        _ => {
            errors.push(ApiError::field(
                "max_ttl_hours",
                "is not a lifetime",
                "hours, a whole number from 1 to 87840 (null: the platform default)",
            ));
            None
        }
    };
    let reason = body
        .reason
        .optional("reason", "must be a string", "why, in a sentence", errors);
    let reason = reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    if reason
        .as_ref()
        .is_some_and(|r| r.chars().count() > 200 || r.chars().any(char::is_control))
    {
        errors.push(ApiError::field(
            "reason",
            "is too long or has control characters",
            "at most 200 characters",
        ));
    }
    let suspended = match body.suspended {
        Field::Missing | Field::Null => None,
        Field::Ok(true) => {
            if reason.is_none() {
                errors.push(ApiError::field(
                    "reason",
                    "is required to suspend a tenant",
                    "why, in a sentence: its users see it in every refusal",
                ));
            }
            Some(reason.clone())
        }
        Field::Ok(false) => Some(None),
        Field::Bad(_) => {
            errors.push(ApiError::field(
                "suspended",
                "must be true or false",
                "true (with reason) or false",
            ));
            None
        }
    };
    Change {
        max_clusters: count(body.max_clusters, "max_clusters", d.max_clusters, errors),
        max_open_operations: count(
            body.max_open_operations,
            "max_open_operations",
            d.max_open_operations,
            errors,
        ),
        max_concurrent_operations: count(
            body.max_concurrent_operations,
            "max_concurrent_operations",
            d.max_concurrent_operations,
            errors,
        ),
        monthly_budget,
        approval,
        max_ttl_hours,
        suspended,
    }
}

/// A create's tenant id and the settings it starts with.
pub(crate) fn create(mut body: TenantBody) -> Result<(TenantId, Change), ApiError> {
    let mut errors = Vec::new();
    unknown(
        &body.other,
        "",
        "is not a field of this request",
        KNOWN,
        &mut errors,
    );
    let id = std::mem::take(&mut body.id)
        .required(
            "id",
            "the tenant id its tokens carry: letters, digits, - and _",
            &mut errors,
        )
        .and_then(|raw| match raw.parse::<TenantId>() {
            Ok(id) if id.as_str() == crate::operator::PLATFORM_LOG => {
                errors.push(ApiError::field(
                    "id",
                    "is reserved for the platform's own audit log",
                    "any other tenant id",
                ));
                None
            }
            Ok(id) => Some(id),
            Err(e) => {
                errors.push(ApiError::field("id", e.to_string(), "letters, digits, - and _"));
                None
            }
        });
    let change = change(body, &mut errors);
    match id {
        Some(id) if errors.is_empty() => Ok((id, change)),
        _ => Err(ApiError::invalid(errors)),
    }
}

/// An update's change; `id` cannot be changed.
pub(crate) fn update(mut body: TenantBody) -> Result<Change, ApiError> {
    let mut errors = Vec::new();
    unknown(
        &body.other,
        "",
        "is not a field of this request",
        KNOWN,
        &mut errors,
    );
    if !matches!(std::mem::take(&mut body.id), Field::Missing) {
        errors.push(ApiError::field("id", "cannot be changed", "leave it out"));
    }
    let change = change(body, &mut errors);
    if errors.is_empty() {
        Ok(change)
    } else {
        Err(ApiError::invalid(errors))
    }
}

/// A listing's page size (1-100, default 50) and where it resumes.
pub(crate) fn page(q: &TenantsQuery) -> Result<(u32, Option<TenantId>), ApiError> {
    let mut errors = Vec::new();
    let limit = crate::requests::page_limit(q.limit.as_deref(), 50, 100, &mut errors);
    let after = crate::requests::page_after(q.next.as_deref(), |n| n.parse::<TenantId>().ok(), &mut errors);
    if errors.is_empty() {
        Ok((limit, after))
    } else {
        Err(ApiError::invalid(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> TenantBody {
        serde_json::from_value(v).unwrap()
    }

    fn fields(e: ApiError) -> Vec<String> {
        match e {
            ApiError::Invalid { errors, .. } => errors.into_iter().map(|e| e.field).collect(),
            other => panic!("422 expected, got {other}"),
        }
    }

    #[test]
    fn every_bad_field_is_named() {
        let e = create(body(json!({
            "id": "no spaces please",
            "max_clusters": 0,
            "monthly_budget": -5,
            "approval": "sometimes",
            "max_ttl_hours": "forever",
            "suspended": true,
            "colour": "blue"
        })))
        .unwrap_err();
        assert_eq!(
            fields(e),
            [
                "colour",
                "id",
                "monthly_budget",
                "approval",
                "max_ttl_hours",
                "reason",
                "max_clusters"
            ]
        );
        assert_eq!(fields(create(body(json!({}))).unwrap_err()), ["id"]);
        assert_eq!(fields(update(body(json!({"id": "other"}))).unwrap_err()), ["id"]);
    }

    #[test]
    fn members_left_out_are_kept_and_null_goes_back_to_the_default() {
        let (id, c) = create(body(
            json!({"id": "acme", "max_clusters": 3, "monthly_budget": 250.5}),
        ))
        .unwrap();
        assert_eq!(id.as_str(), "acme");
        assert!(c.quotas_changed() && !c.rules_changed() && c.suspended.is_none());
        let now = Quotas {
            max_clusters: 20,
            max_open_operations: 7,
            max_concurrent_operations: 2,
        };
        assert_eq!(
            c.quotas(now),
            Quotas {
                max_clusters: 3,
                ..now
            }
        );
        assert_eq!(c.monthly_budget, Some(Some(250.5)));
        let c = update(body(
            json!({"monthly_budget": null, "approval": "required", "max_ttl_hours": null}),
        ))
        .unwrap();
        assert_eq!(c.monthly_budget, Some(None));
        let before = TenantRules {
            max_ttl_hours: Some(5),
            approval: None,
        };
        assert_eq!(
            c.rules(before),
            TenantRules {
                max_ttl_hours: None,
                approval: Some(ApprovalMode::Required)
            }
        );
        let c = update(body(json!({"suspended": true, "reason": " unpaid "}))).unwrap();
        assert_eq!(c.suspended, Some(Some("unpaid".into())));
        assert_eq!(
            update(body(json!({"suspended": false}))).unwrap().suspended,
            Some(None)
        );
    }
}

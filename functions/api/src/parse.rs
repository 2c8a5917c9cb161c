//! The HTTP edge's reading of request bodies into commands ([`crate::commands`]): every field checked
//! for shape, every problem kept with its path, so the decision reports them together with the template's.

use std::collections::BTreeMap;

use serde_json::Value;
use strato_domain::model::{CloudProvider, TemplateRef};
use strato_domain::template::{is_template_name, is_template_version};
use strato_domain::validate::FieldError;

use crate::commands::{CreateCluster, DriftSettings, ESTIMATE_NAME, Estimate, SpecDraft, UpdateCluster};
use crate::error::ApiError;
use crate::requests::{Field, SpecBody, TemplateRefBody, UpdateBody, unknown};
use crate::{approval, drift, expiry, target};

impl From<SpecBody> for CreateCluster {
    /// A create's body: the spec, its expiry and approval mode.
    fn from(mut body: SpecBody) -> Self {
        let mut problems = Vec::new();
        let expires_at = std::mem::take(&mut body.expires_at);
        let expiry = expiry::parse(expires_at, std::mem::take(&mut body.ttl_hours), &mut problems);
        let approval = approval::parse(std::mem::take(&mut body.approval), &mut problems).flatten();
        let spec = parse_spec(body, SpecName::Required, &mut problems);
        CreateCluster {
            spec,
            expiry,
            approval,
            problems,
        }
    }
}

impl From<SpecBody> for Estimate {
    /// An estimate's body: a create's whose name may be left out.
    fn from(body: SpecBody) -> Self {
        let mut problems = Vec::new();
        let spec = parse_spec(body, SpecName::Optional(ESTIMATE_NAME), &mut problems);
        Estimate { spec, problems }
    }
}

impl From<UpdateBody> for UpdateCluster {
    /// A PATCH's body: at least one of its members, each read for shape.
    fn from(body: UpdateBody) -> Self {
        let mut problems = Vec::new();
        let known = "variables, template_version, drift, expires_at, ttl_hours, approval";
        unknown(
            &body.other,
            "",
            "is not a field of this request",
            known,
            &mut problems,
        );
        let patch = variables(body.variables, &mut problems);
        let drift = drift::parse(body.drift, &mut problems);
        let expiry = expiry::parse(body.expires_at, body.ttl_hours, &mut problems);
        let approval = approval::parse(body.approval, &mut problems);
        let version = body
            .template_version
            .optional(
                "template_version",
                "must be a string",
                "a published version of the cluster's template",
                &mut problems,
            )
            .and_then(|v| {
                checked(
                    v,
                    "template_version",
                    is_template_version,
                    TEMPLATE_VERSION,
                    &mut problems,
                )
            });
        let nothing = patch.is_empty() && version.is_none() && drift.is_empty() && approval.is_none();
        if nothing && !expiry::asked(&expiry) && problems.is_empty() {
            problems.push(ApiError::field(
                "variables",
                "the request changes nothing",
                "variables to change, a template_version, drift settings, an expiry and/or an approval mode",
            ));
        }
        UpdateCluster {
            patch,
            version,
            drift,
            expiry,
            approval,
            problems,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpecName {
    /// A create: the name is the cluster's.
    Required,
    /// An estimate: nothing is named after it; this stands in when it is left out.
    Optional(&'static str),
}

const SPEC_FIELDS: &str = "name, template, provider, region, variables, target";
const CREATE_FIELDS: &str =
    "name, template, provider, region, variables, target, drift, expires_at, ttl_hours, approval";
const TEMPLATE_SHAPE: &str = "{\"name\": …, \"version\": …}";

/// `variables`: absent or null is none; anything but an object is reported.
pub(crate) fn variables(
    v: Field<BTreeMap<String, Value>>,
    errors: &mut Vec<FieldError>,
) -> BTreeMap<String, Value> {
    match v {
        Field::Ok(m) => {
            // Only Strato writes sealed values (bound to their item): one sent in a request is refused, so a
            // ciphertext copied from somewhere cannot be slipped into a spec.
            for (k, _) in m.iter().filter(|(_, v)| strato_domain::sealed::looks_sealed(v)) {
                errors.push(ApiError::field(
                    &format!("variables.{}", k.chars().take(64).collect::<String>()),
                    "is shaped like a sealed value, which only Strato writes",
                    "the value itself",
                ));
            }
            m
        }
        Field::Missing | Field::Null => BTreeMap::new(),
        Field::Bad(_) => {
            errors.push(ApiError::field(
                "variables",
                "must be an object",
                "an object of variable name to value",
            ));
            BTreeMap::new()
        }
    }
}

fn template(v: Field<TemplateRefBody>, errors: &mut Vec<FieldError>) -> Option<TemplateRef> {
    let t = match v {
        Field::Ok(t) => t,
        Field::Missing => {
            errors.push(ApiError::field("template", "is required", TEMPLATE_SHAPE));
            return None;
        }
        Field::Null | Field::Bad(_) => {
            errors.push(ApiError::field("template", "must be an object", TEMPLATE_SHAPE));
            return None;
        }
    };
    unknown(
        &t.other,
        "template.",
        "is not a field of template",
        "name, version",
        errors,
    );
    let n = t
        .name
        .required("template.name", TEMPLATE_NAME, errors)
        .and_then(|n| checked(n, "template.name", is_template_name, TEMPLATE_NAME, errors));
    let v = t
        .version
        .required("template.version", TEMPLATE_VERSION, errors)
        .and_then(|v| {
            checked(
                v,
                "template.version",
                is_template_version,
                TEMPLATE_VERSION,
                errors,
            )
        });
    n.zip(v).map(|(name, version)| TemplateRef { name, version })
}

pub(crate) const TEMPLATE_NAME: &str =
    "a published template name: 1-64 lowercase letters, digits and '-', starting with a letter";
pub(crate) const TEMPLATE_VERSION: &str = "a published version, MAJOR.MINOR.PATCH such as 1.0.0";

/// `value` when `ok`; else a field error (an empty or odd string names nothing published, and must not
/// reach a key: DynamoDB refuses empty keys and keys over 2 KB).
pub(crate) fn checked(
    value: String,
    path: &str,
    ok: fn(&str) -> bool,
    allowed: &str,
    errors: &mut Vec<FieldError>,
) -> Option<String> {
    if ok(&value) {
        return Some(value);
    }
    let problem = if value.is_empty() {
        "is empty".to_owned()
    } else {
        // Control characters would make the message itself hard to read; 64 characters say enough.
        let s: String = value.chars().filter(|c| !c.is_control()).take(64).collect();
        format!("'{s}' is not of the allowed form")
    };
    errors.push(ApiError::field(path, problem, allowed));
    None
}

fn provider(v: Field<CloudProvider>, errors: &mut Vec<FieldError>) -> Option<CloudProvider> {
    let providers = CloudProvider::ALL.map(|p| p.as_str()).join(", ");
    match v {
        Field::Ok(p) => Some(p),
        Field::Bad(Value::String(p)) => match p.parse::<CloudProvider>() {
            Ok(p) => Some(p),
            Err(_) => {
                let shown: String = p.chars().take(64).collect();
                errors.push(ApiError::field(
                    "provider",
                    format!("'{shown}' is not a provider Strato supports"),
                    &providers,
                ));
                None
            }
        },
        other => other.required("provider", &providers, errors),
    }
}

fn parse_spec(body: SpecBody, name: SpecName, errors: &mut Vec<FieldError>) -> SpecDraft {
    let is_create = name == SpecName::Required;
    let known = if is_create { CREATE_FIELDS } else { SPEC_FIELDS };
    unknown(&body.other, "", "is not a field of this request", known, errors);
    if !is_create && !matches!(body.drift, Field::Missing) {
        errors.push(ApiError::field("drift", "is not a field of this request", known));
    }
    // A create's expiry (it needs the tenant's maximum) and approval mode are read by the create itself.
    for (name, absent) in [
        ("expires_at", matches!(body.expires_at, Field::Missing)),
        ("ttl_hours", matches!(body.ttl_hours, Field::Missing)),
        ("approval", matches!(body.approval, Field::Missing)),
    ] {
        if !is_create && !absent {
            errors.push(ApiError::field(name, "is not a field of this request", known));
        }
    }
    let name_rule = "3-40 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'";
    let name = match (name, body.name) {
        (SpecName::Optional(default), Field::Missing | Field::Null) => default.parse().ok(),
        (_, n) => n
            .required("name", name_rule, errors)
            .and_then(|s| match s.parse() {
                Ok(n) => Some(n),
                Err(e) => {
                    errors.push(ApiError::field("name", format!("{e}"), name_rule));
                    None
                }
            }),
    };
    let template = template(body.template, errors);
    let provider = provider(body.provider, errors);
    let region = body.region.required("region", "a region of the provider", errors);
    let target = target::parse(body.target, provider, errors);
    SpecDraft {
        name,
        template,
        provider,
        region,
        variables: variables(body.variables, errors),
        target,
        drift: if is_create {
            drift::parse(body.drift, errors)
        } else {
            DriftSettings::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> SpecBody {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_an_estimate_may_leave_the_name_out_and_a_given_name_is_still_checked() {
        let obj = json!({"template": {"name": "t", "version": "1.0.0"}, "provider": "aws", "region": "r"});
        let mut errors = Vec::new();
        let d = parse_spec(body(obj.clone()), SpecName::Optional("estimate"), &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(d.name.unwrap().as_str(), "estimate");
        let d = parse_spec(body(obj.clone()), SpecName::Required, &mut errors);
        assert!(d.name.is_none());
        assert_eq!(errors[0].field, "name");
        let mut named = obj.clone();
        named["name"] = json!("Bad_Name");
        let mut errors = Vec::new();
        parse_spec(body(named), SpecName::Optional("estimate"), &mut errors);
        assert_eq!(errors[0].field, "name");
    }

    #[test]
    fn create_draft_reports_every_structural_problem() {
        let obj = json!({"name": "Bad_Name", "template": {"name": 1, "size": 2}, "provider": "ibm",
            "variables": [1], "drift": {"policy": 3}, "extra": true});
        let mut errors = Vec::new();
        let d = parse_spec(body(obj), SpecName::Required, &mut errors);
        assert!(d.name.is_none() && d.template.is_none() && d.provider.is_none() && d.region.is_none());
        let mut fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "drift.policy",
                "extra",
                "name",
                "provider",
                "region",
                "template.name",
                "template.size",
                "template.version",
                "variables"
            ]
        );
        let mut errors = Vec::new();
        let wrong_types = json!({"name": 7, "template": "t", "provider": 1, "region": null, "target": 2});
        parse_spec(body(wrong_types), SpecName::Required, &mut errors);
        let problems: Vec<(&str, &str)> = errors
            .iter()
            .map(|e| (e.field.as_str(), e.problem.as_str()))
            .collect();
        assert_eq!(
            problems,
            [
                ("name", "must be a string"),
                ("template", "must be an object"),
                ("provider", "must be a string"),
                ("region", "must be a string"),
                ("target", "must be an object"),
            ]
        );
    }
}

//! Validation of a [`ClusterSpec`] against a [`Template`]: every problem at once, each naming the field, what
//! is wrong and what is allowed. Success yields a [`ValidatedSpec`], the only input rendering accepts.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::catalog::{Catalogs, Kind, ProviderCatalog, explain};
use crate::model::ClusterSpec;
use crate::template::{
    CatalogRef, DEFAULT_STRING_LEN, MAX_COLLECTION_ITEMS, MAX_STRING_LEN, Template, VarType, VariableDef,
};

pub use crate::error::FieldError;

/// A spec that passed validation, with defaults filled in. Only [`validate`] constructs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedSpec {
    spec: ClusterSpec,
    /// User values merged over defaults, for every non-managed variable that has a value.
    variables: BTreeMap<String, Value>,
    sensitive: BTreeSet<String>,
    managed: BTreeSet<String>,
}

impl ValidatedSpec {
    pub fn spec(&self) -> &ClusterSpec {
        &self.spec
    }

    pub fn variables(&self) -> &BTreeMap<String, Value> {
        &self.variables
    }

    pub fn is_sensitive(&self, var: &str) -> bool {
        self.sensitive.contains(var)
    }

    /// Variables Strato supplies at render time (cluster name, region, agent token…).
    pub fn managed(&self) -> &BTreeSet<String> {
        &self.managed
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

impl Template {
    /// Checks one value against its variable definition, pushing every problem found.
    /// `catalog` is the provider catalog used for `catalog = …` variables (skipped when `None`).
    ///
    /// One arm per variable type; long because the types are many, each arm is short.
    pub(crate) fn check_value(
        &self,
        name: &str,
        def: &VariableDef,
        value: &Value,
        catalog: Option<&ProviderCatalog>,
        out: &mut Vec<FieldError>,
    ) {
        let field = format!("variables.{name}");
        let mut push = |field: String, problem: String, allowed: String| {
            out.push(FieldError {
                field,
                problem,
                allowed,
            });
        };
        // Sensitive values are never echoed back.
        let shown = |v: &Value| {
            if def.sensitive {
                "(sensitive value)".to_owned()
            } else {
                short(v)
            }
        };
        match (def.ty, value) {
            (VarType::String, Value::String(s)) => {
                self.check_string(name, def, s, catalog, &field, &mut push);
            }
            (VarType::Bool, Value::Bool(_)) => {}
            (VarType::Integer | VarType::Number, Value::Number(n)) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                if def.ty == VarType::Integer && !(n.is_i64() || n.is_u64()) {
                    push(
                        field.clone(),
                        format!("{} is not a whole number", shown(value)),
                        "an integer".into(),
                    );
                }
                let out_of_range = def.min.is_some_and(|lo| x < lo) || def.max.is_some_and(|hi| x > hi);
                if out_of_range {
                    push(field, format!("{} is out of range", shown(value)), range(def));
                }
            }
            (VarType::ListOfString, Value::Array(items)) => {
                if items.len() > MAX_COLLECTION_ITEMS {
                    push(
                        field.clone(),
                        format!("has {} items", items.len()),
                        format!("at most {MAX_COLLECTION_ITEMS}"),
                    );
                }
                for (i, item) in items.iter().enumerate().take(MAX_COLLECTION_ITEMS) {
                    let f = format!("{field}[{i}]");
                    match item {
                        Value::String(s) => self.check_string(name, def, s, catalog, &f, &mut push),
                        other => push(f, format!("is {}", describe(other)), "a string".into()),
                    }
                }
            }
            (VarType::MapOfString, Value::Object(map)) => {
                if map.len() > MAX_COLLECTION_ITEMS {
                    push(
                        field.clone(),
                        format!("has {} entries", map.len()),
                        format!("at most {MAX_COLLECTION_ITEMS}"),
                    );
                }
                for (k, v) in map.iter().take(MAX_COLLECTION_ITEMS) {
                    let key_ok = !k.is_empty()
                        && k.len() <= 128
                        && k.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c));
                    let f = format!("{field}.{}", short_str(k));
                    if !key_ok {
                        push(
                            f.clone(),
                            "key has characters that are not allowed".into(),
                            "keys of 1-128 characters from A-Z a-z 0-9 - _ . / :".into(),
                        );
                    }
                    match v {
                        Value::String(s) => self.check_string(name, def, s, catalog, &f, &mut push),
                        other => push(f, format!("is {}", describe(other)), "a string".into()),
                    }
                }
            }
            (ty, other) => push(
                field,
                format!("is {}", describe(other)),
                format!("a value of type {ty}"),
            ),
        }
        if let Some(allowed) = &def.allowed
            && !allowed.contains(value)
        {
            let list: Vec<String> = allowed.iter().map(short).collect();
            out.push(FieldError {
                field: format!("variables.{name}"),
                problem: format!("{} is not one of the allowed values", shown(value)),
                allowed: list.join(", "),
            });
        }
    }

    fn check_string(
        &self,
        name: &str,
        def: &VariableDef,
        s: &str,
        catalog: Option<&ProviderCatalog>,
        field: &str,
        push: &mut impl FnMut(String, String, String),
    ) {
        let limit = def.max_length.unwrap_or(DEFAULT_STRING_LEN).min(MAX_STRING_LEN);
        let len = s.chars().count();
        if len > limit {
            push(
                field.to_owned(),
                format!("is {len} characters long"),
                format!("at most {limit} characters"),
            );
            return; // Pattern and catalog messages about a truncated giant value help nobody.
        }
        if s.chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        {
            push(
                field.to_owned(),
                "contains control characters".into(),
                "printable text".into(),
            );
        }
        if let Some(re) = self.pattern(name)
            && !re.is_match(s)
        {
            let shown = if def.sensitive {
                "the value".to_owned()
            } else {
                format!("'{}'", short_str(s))
            };
            let pattern = def.pattern.as_deref().unwrap_or_default();
            push(
                field.to_owned(),
                format!("{shown} does not match the required pattern"),
                format!("text matching {pattern}"),
            );
        }
        if let Some(f) = def.format {
            let shown = if def.sensitive {
                "the value".to_owned()
            } else {
                format!("'{}'", short_str(s))
            };
            if let Err((what, fix)) = format::check(f, s, &shown) {
                push(field.to_owned(), what, fix);
            }
        }
        if let (Some(kind), Some(cat)) = (def.catalog, catalog) {
            let kind = match kind {
                CatalogRef::InstanceType => Kind::InstanceType,
                CatalogRef::Zone => Kind::Zone,
                CatalogRef::KubernetesVersion => Kind::KubernetesVersion,
            };
            // The problem names the cloud the value belongs to and the nearest one of this cloud; `allowed`
            // stays the whole list.
            if let Some(problem) = explain(Catalogs::builtin(), cat.provider, kind, s) {
                push(field.to_owned(), problem, kind.values(cat).join(", "));
            }
        }
    }
}

fn range(def: &VariableDef) -> String {
    match (def.min, def.max) {
        (Some(lo), Some(hi)) => format!("{lo} to {hi}"),
        (Some(lo), None) => format!("at least {lo}"),
        (None, Some(hi)) => format!("at most {hi}"),
        (None, None) => "any number".into(),
    }
}

fn short_str(s: &str) -> String {
    if s.chars().count() <= 64 {
        s.to_owned()
    } else {
        s.chars().take(64).collect::<String>() + "…"
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", short_str(s)),
        other => short_str(&other.to_string()),
    }
}

/// Validates `spec` against `template` and the provider catalogs. Returns every problem, sorted by field.
///
/// Long because it walks the request's fields in a fixed order (name, template, provider, region, variables,
/// rules), collecting every problem; splitting it would scatter that order.
pub fn validate(
    spec: &ClusterSpec,
    template: &Template,
    catalogs: &Catalogs,
) -> Result<ValidatedSpec, Vec<FieldError>> {
    let m = &template.manifest;
    let mut errors = Vec::new();
    if spec.template.name != m.name || spec.template.version != m.version {
        errors.push(FieldError {
            field: "template".into(),
            problem: format!(
                "validated against {}@{} but the spec names {}@{}",
                m.name,
                m.version,
                short_str(&spec.template.name),
                short_str(&spec.template.version)
            ),
            allowed: format!("{}@{}", m.name, m.version),
        });
    }
    let provider_ok = m.providers.contains(&spec.provider);
    if !provider_ok {
        let allowed: Vec<&str> = m.providers.iter().map(|p| p.as_str()).collect();
        errors.push(FieldError {
            field: "provider".into(),
            problem: format!("template {} does not support {}", m.name, spec.provider),
            allowed: allowed.join(", "),
        });
    }
    let catalog = catalogs.get(spec.provider);
    if let Some(problem) = explain(catalogs, spec.provider, Kind::Region, &spec.region) {
        errors.push(FieldError {
            field: "region".into(),
            problem,
            allowed: Kind::Region.values(catalog).join(", "),
        });
    }
    let settable: Vec<&str> = m
        .variables
        .iter()
        .filter(|(_, d)| !d.managed)
        .map(|(n, _)| n.as_str())
        .collect();
    for (name, value) in &spec.variables {
        match m.variables.get(name) {
            None => errors.push(FieldError {
                field: format!("variables.{}", short_str(name)),
                problem: "is not a variable of this template".into(),
                allowed: settable.join(", "),
            }),
            Some(def) if def.managed => errors.push(FieldError {
                field: format!("variables.{name}"),
                problem: "is set by Strato and cannot be supplied".into(),
                allowed: "remove it from the request".into(),
            }),
            // Sealed at rest (see `crate::sealed`): it was checked before it was sealed, and is checked
            // again in the clear where it is opened.
            Some(def) if def.sensitive && crate::sealed::as_sealed(value).is_some() => {}
            Some(def) => template.check_value(name, def, value, Some(catalog), &mut errors),
        }
    }
    let mut effective = BTreeMap::new();
    for (name, def) in m.variables.iter().filter(|(_, d)| !d.managed) {
        match spec
            .variables
            .get(name)
            .or_else(|| template.effective_default(spec.provider, name))
        {
            Some(v) => {
                effective.insert(name.clone(), v.clone());
            }
            None if def.required => errors.push(FieldError {
                field: format!("variables.{name}"),
                problem: "is required".into(),
                allowed: if def.description.is_empty() {
                    format!("a {}", def.ty)
                } else {
                    format!("a {}: {}", def.ty, def.description)
                },
            }),
            None => {}
        }
    }
    // A rule whose operand is missing or already wrong would only repeat that problem.
    let already: BTreeSet<String> = errors.iter().map(|e| e.field.clone()).collect();
    for rule in &m.rules {
        let num = |n: &str| {
            let ok = !already.contains(&format!("variables.{n}"));
            effective.get(n).and_then(Value::as_f64).filter(|_| ok)
        };
        if let (Some(l), Some(r)) = (num(&rule.left), num(&rule.right))
            && !rule.op.holds(l, r)
        {
            errors.push(FieldError {
                field: format!("variables.{}", rule.left),
                problem: rule.message.clone().unwrap_or_else(|| {
                    format!(
                        "{} ({l}) must be {} {} ({r})",
                        rule.left,
                        rule.op.as_str(),
                        rule.right
                    )
                }),
                allowed: format!("{} {} {}", rule.left, rule.op.as_str(), rule.right),
            });
        }
    }
    if !errors.is_empty() {
        errors.sort_by(|a, b| a.field.cmp(&b.field).then_with(|| a.problem.cmp(&b.problem)));
        errors.dedup();
        return Err(errors);
    }
    let sensitive = m
        .variables
        .iter()
        .filter(|(_, d)| d.sensitive)
        .map(|(n, _)| n.clone())
        .collect();
    let managed = m
        .variables
        .iter()
        .filter(|(_, d)| d.managed)
        .map(|(n, _)| n.clone())
        .collect();
    Ok(ValidatedSpec {
        spec: spec.clone(),
        variables: effective,
        sensitive,
        managed,
    })
}

pub mod format;
#[cfg(test)]
mod tests;

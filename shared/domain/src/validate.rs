//! Validation of a [`ClusterSpec`] against a [`Template`]: every problem at once, each naming the field, what
//! is wrong and what is allowed. Success yields a [`ValidatedSpec`], the only input rendering accepts.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Catalogs, ProviderCatalog};
use crate::model::ClusterSpec;
use crate::template::{
    CatalogRef, DEFAULT_STRING_LEN, MAX_COLLECTION_ITEMS, MAX_STRING_LEN, Template, VarType, VariableDef,
};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// JSON-path-like location in the request, e.g. `variables.node_count` or `variables.tags.env`.
    pub field: String,
    pub problem: String,
    pub allowed: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} (allowed: {})", self.field, self.problem, self.allowed)
    }
}

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
        if let (Some(kind), Some(cat)) = (def.catalog, catalog) {
            let (known, what): (Vec<&str>, &str) = match kind {
                CatalogRef::InstanceType => (
                    cat.instance_types.iter().map(|i| i.name.as_str()).collect(),
                    "instance type",
                ),
                CatalogRef::Zone => (
                    cat.regions
                        .iter()
                        .flat_map(|r| r.zones.iter().map(String::as_str))
                        .collect(),
                    "zone",
                ),
            };
            if !known.contains(&s) {
                push(
                    field.to_owned(),
                    format!(
                        "'{}' is not a {} {what} Strato offers",
                        short_str(s),
                        cat.provider
                    ),
                    known.join(", "),
                );
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
    if catalog.region(&spec.region).is_none() {
        let allowed: Vec<&str> = catalog.regions.iter().map(|r| r.id.as_str()).collect();
        errors.push(FieldError {
            field: "region".into(),
            problem: format!(
                "'{}' is not a {} region Strato offers",
                short_str(&spec.region),
                spec.provider
            ),
            allowed: allowed.join(", "),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CloudProvider, TemplateRef};
    use crate::template::tests::eks;
    use serde_json::json;

    fn spec(vars: Value) -> ClusterSpec {
        ClusterSpec {
            name: "prod-eu".parse().unwrap(),
            template: TemplateRef {
                name: "aws-eks-basic".into(),
                version: "1.2.0".into(),
            },
            provider: CloudProvider::Aws,
            region: "eu-west-1".into(),
            variables: serde_json::from_value(vars).unwrap(),
            target: None,
        }
    }

    fn problems(vars: Value) -> Vec<FieldError> {
        validate(&spec(vars), &eks(), Catalogs::builtin()).unwrap_err()
    }

    fn fields(errs: &[FieldError]) -> Vec<&str> {
        errs.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn valid_spec_gets_defaults_and_provider_defaults() {
        let v = validate(
            &spec(json!({"owner_email": "ops@example.com", "node_count": 3})),
            &eks(),
            Catalogs::builtin(),
        )
        .unwrap();
        assert_eq!(v.variables()["node_count"], 3);
        assert_eq!(
            v.variables()["node_instance_type"],
            "t3.medium",
            "provider default wins over variable default"
        );
        assert_eq!(v.variables()["kubernetes_version"], "1.30");
        assert!(
            !v.variables().contains_key("cluster_name"),
            "managed variables are rendered, not defaulted"
        );
        assert!(
            !v.variables().contains_key("db_password"),
            "optional without default stays unset"
        );
        assert!(v.is_sensitive("db_password"));
        assert!(v.managed().contains("cluster_name"));
    }

    #[test]
    fn every_problem_is_reported_at_once_and_deterministically() {
        let vars = json!({
            "node_count": 0, "kubernetes_version": "1.20", "node_instance_type": "t9.mega",
            "vpc_cidr": "192.168.0.0/16", "spot": "yes", "ghost": 1, "cluster_name": "x",
            "admin_cidrs": ["10.0.0.0/8", 5], "tags": {"env": "prod", "bad key": "x", "n": 1}
        });
        let errs = problems(vars.clone());
        assert_eq!(
            fields(&errs),
            [
                "variables.admin_cidrs[1]",
                "variables.cluster_name",
                "variables.ghost",
                "variables.kubernetes_version",
                "variables.node_count",
                "variables.node_instance_type",
                "variables.owner_email",
                "variables.spot",
                "variables.tags.bad key",
                "variables.tags.n",
                "variables.vpc_cidr",
            ]
        );
        assert_eq!(problems(vars), errs, "same spec, same answer");
        let by = |f: &str| errs.iter().find(|e| e.field == f).unwrap();
        assert!(by("variables.node_count").allowed.contains("1 to 50"));
        assert!(by("variables.kubernetes_version").allowed.contains("'1.31'"));
        assert!(by("variables.node_instance_type").allowed.contains("t3.medium"));
        assert!(by("variables.ghost").allowed.contains("node_count"));
        assert!(
            !by("variables.ghost").allowed.contains("cluster_name"),
            "managed vars are not offered"
        );
        assert!(by("variables.cluster_name").problem.contains("set by Strato"));
        assert!(by("variables.owner_email").problem.contains("required"));
        assert!(
            by("variables.spot").problem.contains("a string")
                && by("variables.spot").allowed.contains("bool")
        );
        assert!(by("variables.vpc_cidr").problem.contains("pattern"));
    }

    #[test]
    fn template_provider_and_region_are_checked() {
        let mut s = spec(json!({"owner_email": "a@b"}));
        s.region = "mars-1".into();
        s.provider = CloudProvider::Gcp;
        s.template.version = "9.9.9".into();
        let errs = validate(&s, &eks(), Catalogs::builtin()).unwrap_err();
        assert_eq!(fields(&errs), ["provider", "region", "template"]);
        assert!(
            errs[1].allowed.contains("us-central1"),
            "region list is the spec provider's"
        );
        assert_eq!(errs[0].allowed, "aws");
    }

    #[test]
    fn numbers_integers_and_ranges() {
        let base = || json!({"owner_email": "a@b"});
        let with = |k: &str, v: Value| {
            let mut b = base();
            b[k] = v;
            b
        };
        assert_eq!(
            fields(&problems(with("node_count", json!(2.5)))),
            ["variables.node_count"]
        );
        assert!(
            problems(with("node_count", json!(2.5)))[0]
                .problem
                .contains("whole number")
        );
        assert_eq!(
            fields(&problems(with("node_count", json!(51)))),
            ["variables.node_count"]
        );
        assert!(
            validate(&spec(with("node_count", json!(50))), &eks(), Catalogs::builtin()).is_err(),
            "> max_nodes"
        );
        assert!(
            validate(&spec(with("disk_ratio", json!(1))), &eks(), Catalogs::builtin()).is_ok(),
            "integer is a number"
        );
        assert_eq!(
            fields(&problems(with("disk_ratio", json!(0.05)))),
            ["variables.disk_ratio"]
        );
        assert_eq!(
            fields(&problems(with("node_count", json!("3")))),
            ["variables.node_count"]
        );
        assert_eq!(
            fields(&problems(with("node_count", Value::Null))),
            ["variables.node_count"]
        );
    }

    #[test]
    fn cross_field_rules() {
        let errs = problems(json!({"owner_email": "a@b", "min_nodes": 4, "max_nodes": 3, "node_count": 3}));
        assert_eq!(fields(&errs), ["variables.max_nodes"]);
        assert!(
            errs[0].problem.contains("max_nodes (3) must be >= min_nodes (4)"),
            "{}",
            errs[0].problem
        );
        // Rule against a default: node_count 6 > default max_nodes 5, custom message used.
        let errs = problems(json!({"owner_email": "a@b", "node_count": 6}));
        assert_eq!(errs[0].problem, "node_count cannot exceed max_nodes");
        assert_eq!(errs[0].allowed, "node_count <= max_nodes");
        // A mistyped operand is reported once, not as a rule failure too.
        let errs = problems(json!({"owner_email": "a@b", "max_nodes": "many"}));
        assert_eq!(fields(&errs), ["variables.max_nodes"]);
    }

    #[test]
    fn strings_are_length_limited_and_sensitive_values_are_not_echoed() {
        let errs = problems(json!({"owner_email": format!("{}@x", "a".repeat(200))}));
        assert!(errs[0].problem.contains("202 characters") && errs[0].allowed.contains("128"));
        let huge = "p".repeat(1_000_000);
        let errs =
            problems(json!({"owner_email": "a@b", "db_password": huge, "tags": {"k": "v".repeat(300)}}));
        assert_eq!(fields(&errs), ["variables.db_password", "variables.tags.k"]);
        assert!(
            errs.iter().all(|e| e.problem.len() < 200),
            "huge values are not echoed"
        );
        let errs = problems(json!({"owner_email": "a@b", "db_password": "hunter2", "node_count": "hunter3"}));
        assert!(!format!("{errs:?}").contains("hunter2"));
        assert!(
            problems(json!({"owner_email": "a@b\u{0007}"}))[0]
                .problem
                .contains("control")
        );
    }

    #[test]
    fn zone_catalog_values() {
        let manifest = crate::template::tests::EKS_MANIFEST.replace(
            "[variables.spot]",
            "[variables.zones]\ntype = \"list(string)\"\ncatalog = \"zone\"\ndefault = []\n\n[variables.spot]",
        );
        let t = Template::from_toml(&manifest).unwrap();
        let ok = spec(json!({"owner_email": "a@b", "zones": ["eu-west-1a", "eu-west-1b"]}));
        assert!(validate(&ok, &t, Catalogs::builtin()).is_ok());
        let bad = spec(json!({"owner_email": "a@b", "zones": ["eu-west-1a", "moon-1z"]}));
        let errs = validate(&bad, &t, Catalogs::builtin()).unwrap_err();
        assert_eq!(fields(&errs), ["variables.zones[1]"]);
        assert!(errs[0].allowed.contains("us-east-1a"));
    }

    #[test]
    fn collections_are_bounded() {
        let many: Vec<String> = (0..150).map(|i| format!("10.0.{i}.0/24")).collect();
        let errs = problems(json!({"owner_email": "a@b", "admin_cidrs": many}));
        assert_eq!(fields(&errs), ["variables.admin_cidrs"]);
        assert!(errs[0].allowed.contains("100"));
    }

    #[test]
    fn hostile_strings_that_fit_the_schema_are_accepted_verbatim() {
        // Rendering is JSON-only, so these are data, not code. They must survive unchanged.
        let hostile = json!({"owner_email": "a@b", "tags": {"x": "\"${file(\"/etc/passwd\")}\"\n}\nresource", "u": "ünï©ødé ✓"}});
        let v = validate(&spec(hostile.clone()), &eks(), Catalogs::builtin()).unwrap();
        assert_eq!(v.variables()["tags"], hostile["tags"]);
    }
}

//! Template manifests (TOML). A manifest names its stages and modules in dependency order, per-provider
//! defaults, the variable schema and cross-field rules. Parsing a manifest yields a [`Template`] whose
//! schema has been checked for internal consistency (patterns compile, defaults obey their own rules, rules
//! name numeric variables), so validation never meets a broken schema.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::model::CloudProvider;

/// Hard cap on any string a user sends, whatever the manifest says.
pub const MAX_STRING_LEN: usize = 4096;
pub const DEFAULT_STRING_LEN: usize = 256;
pub const MAX_COLLECTION_ITEMS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum VarType {
    #[serde(rename = "string")]
    String,
    #[serde(rename = "number")]
    Number,
    #[serde(rename = "integer")]
    Integer,
    #[serde(rename = "bool")]
    Bool,
    #[serde(rename = "list(string)")]
    ListOfString,
    #[serde(rename = "map(string)")]
    MapOfString,
}

impl VarType {
    pub fn as_str(self) -> &'static str {
        match self {
            VarType::String => "string",
            VarType::Number => "number",
            VarType::Integer => "integer",
            VarType::Bool => "bool",
            VarType::ListOfString => "list(string)",
            VarType::MapOfString => "map(string)",
        }
    }

    pub fn is_numeric(self) -> bool {
        matches!(self, VarType::Number | VarType::Integer)
    }
}

impl fmt::Display for VarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string variable whose value must come from the provider catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatalogRef {
    InstanceType,
    Zone,
    /// A Kubernetes minor version the cloud's managed Kubernetes offers (`kubernetes_versions` of its catalog).
    KubernetesVersion,
}

/// What a string variable's value must be, checked by parsing it (`validate::format`), not by a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StringFormat {
    /// An IPv4 or IPv6 network in CIDR notation, host bits clear (`10.0.0.0/16`).
    Cidr,
    /// An IPv4 or IPv6 address.
    Ip,
    /// A DNS name (RFC 1123).
    Hostname,
    /// Whole units of d, h, m, s, largest first (`1h30m`).
    Duration,
}

impl StringFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            StringFormat::Cidr => "cidr",
            StringFormat::Ip => "ip",
            StringFormat::Hostname => "hostname",
            StringFormat::Duration => "duration",
        }
    }
}

/// One variable as written in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariableDef {
    #[serde(rename = "type")]
    pub ty: VarType,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub required: bool,
    pub default: Option<Value>,
    #[serde(rename = "enum")]
    pub allowed: Option<Vec<Value>>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub pattern: Option<String>,
    /// Checked by parsing each value (of a string, each item or map value): see [`StringFormat`]. Left out
    /// of the stored manifest when unset, so a runner or function of the release before reads it still
    /// (their manifests deny unknown fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    pub max_length: Option<usize>,
    #[serde(default)]
    pub sensitive: bool,
    pub catalog: Option<CatalogRef>,
    /// The form section the variable is shown in (e.g. "Network"); forms group variables by it. Left out of
    /// the stored manifest when unset, like `format`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// What a form calls the variable (e.g. "Number of nodes"); its name otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Set by Strato itself (cluster name, region, agent token…); users may not send it.
    #[serde(default)]
    pub managed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RuleOp {
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
}

impl RuleOp {
    pub fn holds(self, l: f64, r: f64) -> bool {
        match self {
            RuleOp::Ge => l >= r,
            RuleOp::Gt => l > r,
            RuleOp::Le => l <= r,
            RuleOp::Lt => l < r,
            RuleOp::Eq => l == r,
            RuleOp::Ne => l != r,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RuleOp::Ge => ">=",
            RuleOp::Gt => ">",
            RuleOp::Le => "<=",
            RuleOp::Lt => "<",
            RuleOp::Eq => "==",
            RuleOp::Ne => "!=",
        }
    }
}

/// A cross-field rule between two numeric variables, e.g. `max_nodes >= min_nodes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub left: String,
    pub op: RuleOp,
    pub right: String,
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    pub name: String,
    /// Modules in dependency order (each may use the outputs of the ones before it).
    pub modules: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderDefaults {
    pub region: Option<String>,
    #[serde(default)]
    pub variables: BTreeMap<String, Value>,
}

/// The manifest file as written (`template.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    pub providers: Vec<CloudProvider>,
    /// False for templates whose providers cannot be installed offline (shown in the catalog listing).
    #[serde(default = "yes")]
    pub verified_offline: bool,
    pub stages: Vec<Stage>,
    #[serde(default)]
    pub defaults: BTreeMap<CloudProvider, ProviderDefaults>,
    pub variables: BTreeMap<String, VariableDef>,
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The template installs the cluster agent: the cluster is ACTIVE only once the agent registers and
    /// reports enough Ready nodes.
    pub agent: Option<AgentSpec>,
    /// Outputs that must be present after apply for a template without an agent to count as ready.
    #[serde(default)]
    pub required_outputs: Vec<String>,
    /// Whether clusters of this template wait for an approver after each plan (`"required"`), unless a
    /// cluster says otherwise; absent: the tenant's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<crate::approval::ApprovalMode>,
    /// Which outputs make a kubeconfig for the cluster (`GET /v1/clusters/{id}/kubeconfig`); absent: the
    /// template says nothing about reaching it. Left out of the stored manifest when unset, so a function of
    /// the release before reads it still.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<crate::connect::ConnectSpec>,
    /// Resources the runner may import after a false failure (see [`adopt`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopt: Vec<adopt::AdoptRule>,
}

fn yes() -> bool {
    true
}

/// A checked manifest with compiled patterns.
#[derive(Debug, Clone)]
pub struct Template {
    pub manifest: Manifest,
    /// Shared by clones: a cloned `Regex` starts with an empty cache, so each request's copy of a cached
    /// template rebuilt its matcher's lazy DFA before checking a value (issue 19).
    patterns: Arc<BTreeMap<String, Regex>>,
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.len() <= 64
}

/// Whether `s` can name a template (what a manifest's `name` must be): anything else names nothing
/// published, and is refused before it reaches a key.
pub fn is_template_name(s: &str) -> bool {
    s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Whether `s` can be a template version (`MAJOR.MINOR.PATCH`, as a manifest's `version` must be).
pub fn is_template_version(s: &str) -> bool {
    is_semver(s)
}

fn is_semver(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 6 && p.chars().all(|c| c.is_ascii_digit()))
}

impl Template {
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| Error::Manifest {
            name: "?".into(),
            reason: e.to_string(),
        })?;
        Self::from_manifest(manifest)
    }

    /// Checks a parsed manifest: patterns, bounds, rules, stages, defaults against their own schema and the
    /// provider catalog. Long because it is a list of independent checks, each a few lines, in manifest order.
    pub fn from_manifest(manifest: Manifest) -> Result<Self, Error> {
        let fail = |reason: String| Error::Manifest {
            name: manifest.name.clone(),
            reason,
        };
        if !is_template_name(&manifest.name) {
            return Err(fail("name must be lowercase letters, digits and '-'".into()));
        }
        if !is_semver(&manifest.version) {
            return Err(fail(format!(
                "version '{}' is not MAJOR.MINOR.PATCH",
                manifest.version
            )));
        }
        if manifest.providers.is_empty() {
            return Err(fail("lists no providers".into()));
        }
        if manifest.stages.is_empty() || manifest.stages.iter().any(|s| s.modules.is_empty()) {
            return Err(fail(
                "needs at least one stage, each with at least one module".into(),
            ));
        }
        let mut stage_names = BTreeSet::new();
        for s in &manifest.stages {
            if !is_identifier(&s.name) || !stage_names.insert(&s.name) {
                return Err(fail(format!(
                    "stage name '{}' is not a unique identifier",
                    s.name
                )));
            }
        }
        if let Some(c) = &manifest.connect {
            for (key, output) in [
                ("endpoint", &c.endpoint),
                ("certificate_authority", &c.certificate_authority),
            ] {
                if !is_identifier(output) {
                    return Err(fail(format!(
                        "connect.{key} '{output}' must name an output (a lowercase identifier)"
                    )));
                }
            }
        }
        let declared: BTreeMap<String, bool> = manifest
            .variables
            .iter()
            .map(|(n, d)| (n.clone(), d.managed))
            .collect();
        if let Some(p) = manifest.adopt.iter().find_map(|r| r.problem(&declared)) {
            return Err(fail(p));
        }
        let mut patterns = BTreeMap::new();
        for (name, def) in &manifest.variables {
            if !is_identifier(name) {
                return Err(fail(format!(
                    "variable name '{name}' must be a lowercase identifier"
                )));
            }
            let vfail = |reason: &str| fail(format!("variable '{name}': {reason}"));
            if def.required && def.default.is_some() {
                return Err(vfail("is required and also has a default; pick one"));
            }
            if def.managed && (def.required || def.default.is_some()) {
                return Err(vfail("is managed by Strato and cannot be required or defaulted"));
            }
            if (def.min.is_some() || def.max.is_some()) && !def.ty.is_numeric() {
                return Err(vfail("min/max apply to numeric variables (number, integer) only"));
            }
            if let (Some(lo), Some(hi)) = (def.min, def.max)
                && lo > hi
            {
                return Err(vfail("min is greater than max"));
            }
            if (def.pattern.is_some()
                || def.format.is_some()
                || def.max_length.is_some()
                || def.catalog.is_some())
                && !matches!(
                    def.ty,
                    VarType::String | VarType::ListOfString | VarType::MapOfString
                )
            {
                return Err(vfail(
                    "pattern/format/max_length/catalog apply to string variables only",
                ));
            }
            if def.max_length.is_some_and(|n| n == 0 || n > MAX_STRING_LEN) {
                return Err(vfail(&format!("max_length must be 1..={MAX_STRING_LEN}")));
            }
            if let Some(p) = &def.pattern {
                // Anchored so a pattern can never match just part of a value.
                let re =
                    Regex::new(&format!("^(?:{p})$")).map_err(|e| vfail(&format!("bad pattern: {e}")))?;
                patterns.insert(name.clone(), re);
            }
        }
        for rule in &manifest.rules {
            for side in [&rule.left, &rule.right] {
                match manifest.variables.get(side) {
                    Some(def) if def.ty.is_numeric() => {}
                    _ => {
                        return Err(fail(format!(
                            "rule names '{side}', which is not a numeric variable"
                        )));
                    }
                }
            }
        }
        for (provider, defaults) in &manifest.defaults {
            if !manifest.providers.contains(provider) {
                return Err(fail(format!(
                    "has defaults for {provider}, which it does not list in providers"
                )));
            }
            for var in defaults.variables.keys() {
                if !manifest.variables.contains_key(var) {
                    return Err(fail(format!("{provider} defaults set unknown variable '{var}'")));
                }
            }
        }
        if let Some(p) = manifest.agent.as_ref().and_then(|a| a.problem(&manifest)) {
            return Err(fail(p));
        }
        let template = Template {
            manifest,
            patterns: Arc::new(patterns),
        };
        // Defaults must satisfy their own schema (catalog included), or every request relying on them fails.
        let catalogs = crate::catalog::Catalogs::builtin();
        let m = &template.manifest;
        let variable_defaults = m
            .variables
            .iter()
            .filter_map(|(n, d)| d.default.as_ref().map(|v| (n, v)));
        for provider in &m.providers {
            let provider_defaults = m
                .defaults
                .get(provider)
                .into_iter()
                .flat_map(|d| d.variables.iter());
            for (name, value) in variable_defaults.clone().chain(provider_defaults) {
                let mut problems = Vec::new();
                template.check_value(
                    name,
                    &m.variables[name],
                    value,
                    Some(catalogs.get(*provider)),
                    &mut problems,
                );
                if let Some(p) = problems.first() {
                    return Err(Error::Manifest {
                        name: m.name.clone(),
                        reason: format!(
                            "default of '{name}' for {provider} violates its schema: {}",
                            p.problem
                        ),
                    });
                }
            }
            if let Some(region) = m.defaults.get(provider).and_then(|d| d.region.as_deref())
                && catalogs.get(*provider).region(region).is_none()
            {
                return Err(Error::Manifest {
                    name: m.name.clone(),
                    reason: format!("default region '{region}' is not in the {provider} catalog"),
                });
            }
        }
        Ok(template)
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    pub fn version(&self) -> &str {
        &self.manifest.version
    }

    pub(crate) fn pattern(&self, var: &str) -> Option<&Regex> {
        self.patterns.get(var)
    }

    /// All variables a user may set, with their effective default for `provider`.
    pub fn effective_default(&self, provider: CloudProvider, var: &str) -> Option<&Value> {
        self.manifest
            .defaults
            .get(&provider)
            .and_then(|d| d.variables.get(var))
            .or_else(|| self.manifest.variables.get(var).and_then(|d| d.default.as_ref()))
    }
}

pub mod adopt;
mod agent;
pub use agent::{AgentInstall, AgentSpec};
#[cfg(any(test, feature = "fakes"))]
pub mod sample;
#[cfg(test)]
mod tests;

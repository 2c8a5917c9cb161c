//! Template catalog routes: what can be asked for, and each template's variable schema.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use strato_aws::store::StoredTemplate;
use strato_domain::model::CloudProvider;
use strato_domain::template::{CatalogRef, Rule, StringFormat, Template, VarType};
use strato_domain::template_status::{Standing, TemplateStatus};
use utoipa::ToSchema;

use crate::views::MASK;
use crate::{context::Ctx, edge::Reply, error::ApiError, schema};

/// A published template, at its latest version.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct TemplateSummary {
    pub name: String,
    pub version: String,
    /// Every published version a tenant may see, oldest first (yanked ones are left out).
    pub versions: Vec<String>,
    /// Those of `versions` that are deprecated: clusters on them keep working, new clusters cannot use them.
    pub deprecated: Vec<String>,
    pub description: String,
    #[schema(value_type = Vec<schema::CloudProvider>)]
    pub providers: Vec<CloudProvider>,
    /// Whether the template is verified against emulators.
    pub verified_offline: bool,
}

/// The published templates.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct TemplateList {
    pub templates: Vec<TemplateSummary>,
}

/// One variable a request may set.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct VariableView {
    #[serde(rename = "type")]
    #[schema(rename = "type", value_type = String)]
    pub ty: VarType,
    pub description: String,
    pub required: bool,
    /// Sensitive defaults are `(sensitive)`.
    #[schema(value_type = Option<Value>)]
    pub default: Option<Value>,
    #[serde(rename = "enum")]
    #[schema(rename = "enum", value_type = Option<Vec<Value>>)]
    pub allowed: Option<Vec<Value>>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub pattern: Option<String>,
    /// Checked by parsing the value (each item of a list): `cidr` (a network, host bits clear), `ip`,
    /// `hostname` or `duration` (whole units of d, h, m, s, e.g. `1h30m`).
    #[schema(value_type = Option<String>)]
    pub format: Option<StringFormat>,
    /// What a value must look like, in words (from `format`): for forms and error messages.
    pub expected: Option<String>,
    pub max_length: Option<usize>,
    pub sensitive: bool,
    /// A provider catalog the value must come from.
    #[schema(value_type = Option<String>)]
    pub catalog: Option<CatalogRef>,
    /// The form section the template puts the variable in (e.g. `Network`), if it names one.
    pub section: Option<String>,
    /// What a form calls the variable (e.g. `Number of nodes`), if the template names it.
    pub label: Option<String>,
}

/// A provider's defaults.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct ProviderDefaultsView {
    pub region: Option<String>,
    #[schema(value_type = Object)]
    pub variables: serde_json::Map<String, Value>,
}

/// A template's variable schema: what a create can send.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct TemplateDetail {
    pub name: String,
    pub version: String,
    pub versions: Vec<String>,
    pub description: String,
    #[schema(value_type = Vec<schema::CloudProvider>)]
    pub providers: Vec<CloudProvider>,
    pub verified_offline: bool,
    pub variables: BTreeMap<String, VariableView>,
    /// Cross-variable rules (`left op right`).
    #[schema(value_type = Vec<Object>)]
    pub rules: Vec<Rule>,
    /// Per provider.
    pub defaults: BTreeMap<String, ProviderDefaultsView>,
    /// `active`, `deprecated` (new clusters cannot use it) or `yanked` (no cluster may move to it; clusters
    /// on it keep running).
    pub standing: String,
    /// Why the operator deprecated or yanked it, if they said.
    pub standing_reason: Option<String>,
}

/// The schema a client needs to fill a request: managed variables are left out (they cannot be sent)
/// and sensitive defaults are masked.
fn detail(t: &Template, versions: &[String]) -> TemplateDetail {
    let m = &t.manifest;
    let mask = |sensitive: bool, v: &Value| if sensitive { Value::from(MASK) } else { v.clone() };
    let variables = m
        .variables
        .iter()
        .filter(|(_, d)| !d.managed)
        .map(|(name, d)| {
            let v = VariableView {
                ty: d.ty,
                description: d.description.clone(),
                required: d.required,
                default: d.default.as_ref().map(|v| mask(d.sensitive, v)),
                allowed: d.allowed.clone(),
                min: d.min,
                max: d.max,
                pattern: d.pattern.clone(),
                format: d.format,
                expected: d.format.map(strato_domain::validate::format::expected),
                max_length: d.max_length,
                sensitive: d.sensitive,
                catalog: d.catalog,
                section: d.section.clone(),
                label: d.label.clone(),
            };
            (name.clone(), v)
        })
        .collect();
    let defaults = m
        .defaults
        .iter()
        .map(|(p, d)| {
            let variables = d
                .variables
                .iter()
                .map(|(k, v)| {
                    let sensitive = m.variables.get(k).is_some_and(|d| d.sensitive);
                    (k.clone(), mask(sensitive, v))
                })
                .collect();
            let view = ProviderDefaultsView {
                region: d.region.clone(),
                variables,
            };
            (p.to_string(), view)
        })
        .collect();
    TemplateDetail {
        name: m.name.clone(),
        version: m.version.clone(),
        versions: versions.to_vec(),
        description: m.description.clone(),
        providers: m.providers.clone(),
        verified_offline: m.verified_offline,
        variables,
        rules: m.rules.clone(),
        defaults,
        standing: "active".into(),
        standing_reason: None,
    }
}

type Listed = (StoredTemplate, TemplateStatus);

/// Published templates grouped by name; `catalog` sorts by name, then version (oldest first).
pub(crate) fn grouped(all: &[Listed]) -> Vec<(&str, Vec<&Listed>)> {
    let mut out: Vec<(&str, Vec<&Listed>)> = Vec::new();
    for t in all {
        match out.last_mut() {
            Some((name, versions)) if *name == t.0.template.name() => versions.push(t),
            _ => out.push((t.0.template.name(), vec![t])),
        }
    }
    out
}

/// What a tenant sees of the catalog: yanked versions left out (a template with only yanked versions too),
/// deprecated ones marked, `version` the newest a new cluster may use (else the newest shown).
pub(crate) fn tenant_view(all: &[Listed]) -> Vec<TemplateSummary> {
    grouped(all)
        .into_iter()
        .filter_map(|(name, versions)| {
            let shown: Vec<&Listed> = versions
                .into_iter()
                .filter(|(_, s)| s.standing != Standing::Yanked)
                .collect();
            let usable = shown.iter().rev().find(|(_, s)| s.standing == Standing::Active);
            let latest = &usable.or(shown.last())?.0.template.manifest;
            Some(TemplateSummary {
                name: name.to_owned(),
                version: latest.version.clone(),
                versions: shown.iter().map(|v| v.0.template.version().to_owned()).collect(),
                deprecated: shown
                    .iter()
                    .filter(|(_, s)| s.standing == Standing::Deprecated)
                    .map(|v| v.0.template.version().to_owned())
                    .collect(),
                description: latest.description.clone(),
                providers: latest.providers.clone(),
                verified_offline: latest.verified_offline,
            })
        })
        .collect()
}

pub(crate) async fn list(ctx: &Ctx) -> Result<Reply<TemplateList>, ApiError> {
    let all = ctx.store.catalog().await?;
    Ok(Reply::ok(TemplateList {
        templates: tenant_view(&all),
    }))
}

/// The latest version of a template, or `?version=` a given one, with its variable schema.
pub(crate) async fn get(
    ctx: &Ctx,
    name: &str,
    q: &crate::requests::TemplateQuery,
) -> Result<Reply<TemplateDetail>, ApiError> {
    let all = ctx.store.catalog().await?;
    let shown = |s: &str| s.chars().take(64).collect::<String>();
    let versions: Vec<&Listed> = all.iter().filter(|t| t.0.template.name() == name).collect();
    // Yanked versions are not listed, but one asked for by name is shown (with its reason): clusters
    // still on it read their schema.
    let names: Vec<String> = versions
        .iter()
        .filter(|(_, s)| s.standing != Standing::Yanked)
        .map(|t| t.0.template.version().to_owned())
        .collect();
    let chosen = match q.version.as_deref() {
        None => versions
            .iter()
            .rev()
            .find(|(_, s)| s.standing == Standing::Active)
            .or_else(|| {
                versions
                    .iter()
                    .rev()
                    .find(|(_, s)| s.standing != Standing::Yanked)
            }),
        Some(v) => versions.iter().find(|t| t.0.template.version() == v),
    };
    match chosen {
        Some((t, status)) => {
            let mut d = detail(&t.template, &names);
            d.standing = status.standing.as_str().to_owned();
            d.standing_reason = status.reason.clone().filter(|r| !r.is_empty());
            Ok(Reply::ok(d))
        }
        None if names.is_empty() && q.version.is_none() || versions.is_empty() => {
            Err(ApiError::NotFound(format!("no template named '{}'", shown(name))))
        }
        None => Err(ApiError::NotFound(format!(
            "{name} has no version '{}'; published: {}",
            shown(q.version.as_deref().unwrap_or_default()),
            names.join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped basic template with a section and label on one variable (the catalog's templates get
    /// theirs with their next version: a published version's content cannot change).
    #[test]
    fn the_schema_carries_each_variables_form_section_and_label() {
        let catalog = include_str!("../../../templates/catalog/aws-eks-basic/template.toml");
        let d = detail(&Template::from_toml(catalog).unwrap(), &["1.1.0".into()]);
        let n = &d.variables["node_count"];
        assert_eq!(n.section.as_deref(), Some("Nodes"));
        assert_eq!(n.label.as_deref(), Some("Number of nodes"));
        // Without them, a form falls back to its own grouping and the name.
        let bare = catalog.replacen("section = \"Network\"\nlabel = \"VPC CIDR\"\n", "", 1);
        assert_ne!(bare, catalog);
        let d = detail(&Template::from_toml(&bare).unwrap(), &["1.1.0".into()]);
        assert_eq!(d.variables["vpc_cidr"].section, None);
        assert_eq!(d.variables["vpc_cidr"].label, None);
    }
}

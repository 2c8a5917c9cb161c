//! A spec (a create's, an estimate's), as the edge read it, validated against its template: every problem
//! reported at once.

use strato_domain::catalog::Catalogs;
use strato_domain::ids::ClusterName;
use strato_domain::model::{ClusterSpec, TemplateRef};
use strato_domain::ports::Templates;
use strato_domain::template::Template;
use strato_domain::template_status::{Standing, Use, newest_usable};
use strato_domain::validate::{FieldError, ValidatedSpec, validate};

use crate::commands::{DriftSettings, SpecDraft};
use crate::error::ApiError;

/// Validates a spec as far as the edge could read it against its template, as a create does: every problem
/// at once — the ones found reading the request (`errors`) and the template's — as a 422 naming each field,
/// or the validated spec, its template and the create's drift settings.
pub(crate) async fn check_spec(
    templates: &impl Templates,
    draft: SpecDraft,
    mut errors: Vec<FieldError>,
) -> Result<(ValidatedSpec, Template, DriftSettings), ApiError> {
    let mut checked: Option<(ValidatedSpec, Template)> = None;
    if let (Some(tref), Some(provider), Some(region)) = (&draft.template, draft.provider, &draft.region) {
        match templates.template(&tref.name, &tref.version).await? {
            None => errors.push(unknown_template(templates, "template", tref).await?),
            Some(stored) => {
                if let Some(refused) =
                    standing_refusal(templates, tref, Use::Create, "template.version").await?
                {
                    errors.push(refused);
                }
                // A bad name is already reported; validate the rest anyway so the client sees every problem.
                let placeholder = || "placeholder".parse::<ClusterName>();
                let spec = ClusterSpec {
                    name: draft
                        .name
                        .clone()
                        .map_or_else(placeholder, Ok)
                        .map_err(|e| ApiError::Config(format!("the placeholder name: {e}")))?,
                    template: tref.clone(),
                    provider,
                    region: region.clone(),
                    variables: draft.variables.clone(),
                    target: draft.target.clone(),
                };
                match validate(&spec, &stored, Catalogs::builtin()) {
                    Ok(v) => checked = Some((v, stored)),
                    Err(e) => errors.extend(e),
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(sorted(errors));
    }
    checked.map(|(v, t)| (v, t, draft.drift)).ok_or_else(|| {
        // Unreachable in practice: every missing part above pushed an error.
        ApiError::invalid(vec![ApiError::field(
            "template",
            "could not be checked",
            "a published template",
        )])
    })
}

/// The field error for a template reference that names nothing published.
pub(crate) async fn unknown_template(
    templates: &impl Templates,
    field: &str,
    r: &TemplateRef,
) -> Result<FieldError, ApiError> {
    let all = templates.templates().await?;
    let versions: Vec<&str> = all
        .iter()
        .filter(|t| t.name() == r.name)
        .map(|t| t.version())
        .collect();
    let shown = |s: &str| s.chars().take(64).collect::<String>();
    Ok(if versions.is_empty() {
        let mut names: Vec<&str> = all.iter().map(|t| t.name()).collect();
        names.dedup();
        ApiError::field(
            field,
            format!("no template named '{}' is published", shown(&r.name)),
            names.join(", "),
        )
    } else {
        ApiError::field(
            field,
            format!("{} has no published version '{}'", r.name, shown(&r.version)),
            versions.join(", "),
        )
    })
}

/// The field error for a use of a version its standing refuses (a new cluster on a deprecated or yanked
/// version, a move to a yanked one), naming the newest version a new cluster may use; `None` when allowed.
pub(crate) async fn standing_refusal(
    templates: &impl Templates,
    r: &TemplateRef,
    use_: Use,
    field: &str,
) -> Result<Option<FieldError>, ApiError> {
    let Err(refused) = templates.status(&r.name, &r.version).await?.allows(use_) else {
        return Ok(None);
    };
    let all = templates.statuses(&r.name).await?;
    let newest = newest_usable(all.iter().map(|(v, s)| (v.as_str(), s)));
    let why = match (refused.standing, refused.reason.as_deref()) {
        (Standing::Yanked, Some(reason)) if !reason.is_empty() => format!("is yanked: {reason}"),
        (Standing::Yanked, _) => "is yanked".to_owned(),
        _ => "is deprecated: new clusters cannot use it".to_owned(),
    };
    Ok(Some(ApiError::field(
        field,
        format!("{}@{} {why}", r.name, r.version),
        match newest {
            Some(v) => format!("a usable version; the newest is {v}"),
            None => format!("a usable version; {} has none", r.name),
        },
    )))
}

/// Every problem, in field order, once.
pub(crate) fn sorted(mut errors: Vec<FieldError>) -> ApiError {
    errors.sort_by(|a, b| a.field.cmp(&b.field).then_with(|| a.problem.cmp(&b.problem)));
    errors.dedup();
    ApiError::invalid(errors)
}

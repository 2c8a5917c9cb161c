//! Template catalog routes: what can be asked for, and each template's variable schema.

use serde_json::json;
use strato_shared::store::StoredTemplate;

use crate::views;
use crate::{ApiError, Ctx, JsonReply, Reply};

/// Published templates grouped by name; `list_templates` sorts by name, then version (oldest first).
fn grouped(all: &[StoredTemplate]) -> Vec<(&str, Vec<&StoredTemplate>)> {
    let mut out: Vec<(&str, Vec<&StoredTemplate>)> = Vec::new();
    for t in all {
        match out.last_mut() {
            Some((name, versions)) if *name == t.template.name() => versions.push(t),
            _ => out.push((t.template.name(), vec![t])),
        }
    }
    out
}

pub(crate) async fn list(ctx: &Ctx) -> Result<JsonReply, ApiError> {
    let all = ctx.store.list_templates().await?;
    let templates: Vec<_> = grouped(&all)
        .into_iter()
        .filter_map(|(name, versions)| {
            let latest = &versions.last()?.template.manifest;
            Some(json!({
                "name": name,
                "version": latest.version,
                "versions": versions.iter().map(|v| v.template.version()).collect::<Vec<_>>(),
                "description": latest.description,
                "providers": latest.providers,
                "verified_offline": latest.verified_offline,
            }))
        })
        .collect();
    Ok(Reply::ok(json!({"templates": templates})))
}

/// The latest version of a template, or `?version=` a given one, with its variable schema.
pub(crate) async fn get(
    ctx: &Ctx,
    name: &str,
    q: &crate::handlers::TemplateQuery,
) -> Result<JsonReply, ApiError> {
    let all = ctx.store.list_templates().await?;
    let shown = |s: &str| s.chars().take(64).collect::<String>();
    let versions: Vec<&StoredTemplate> = all.iter().filter(|t| t.template.name() == name).collect();
    let names: Vec<String> = versions.iter().map(|t| t.template.version().to_owned()).collect();
    let chosen = match q.version.as_deref() {
        None => versions.last(),
        Some(v) => versions.iter().find(|t| t.template.version() == v),
    };
    match chosen {
        Some(t) => Ok(Reply::ok(views::template_detail(&t.template, &names))),
        None if versions.is_empty() => {
            Err(ApiError::NotFound(format!("no template named '{}'", shown(name))))
        }
        None => Err(ApiError::NotFound(format!(
            "{name} has no version '{}'; published: {}",
            shown(q.version.as_deref().unwrap_or_default()),
            names.join(", ")
        ))),
    }
}

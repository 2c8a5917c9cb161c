//! Template versions in the catalog table. A version is immutable once published.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::write::conditional;
use super::{Item, Store, fetch, from_item, s, to_item};
use crate::error::Error;
use strato_domain::ports::TEMPLATE_STATUS_MAX_AGE;
use strato_domain::recent::Recent;
use strato_domain::template::{Manifest, Template};
use strato_domain::template_status::{Standing, TemplateStatus};

/// Published versions by `(name, version)`. Unbounded: the catalog holds a few dozen versions.
pub(super) type TemplateCache = Arc<Mutex<HashMap<(String, String), StoredTemplate>>>;
/// Standings by `(name, version)`: a standing changes, so it is reused only for [`TEMPLATE_STATUS_MAX_AGE`]
/// (a create costs no extra read while it is fresh). The catalog holds a few dozen versions; the bound only
/// guards against a flood of unknown names.
pub(super) type StatusCache = Recent<(String, String), TemplateStatus>;

pub(super) fn status_cache() -> StatusCache {
    Recent::new(TEMPLATE_STATUS_MAX_AGE, 10_000)
}

/// A published template version as the catalog table holds it.
#[derive(Debug, Clone)]
pub struct StoredTemplate {
    pub template: Template,
    pub sha256: String,
    pub bundle_key: String,
}

/// The catalog table's item; the manifest is stored as JSON text. Missing attributes read as empty.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct TemplateItem {
    name: String,
    version: String,
    manifest: String,
    sha256: String,
    bundle_key: String,
    /// The standing (`active`, `deprecated`, `yanked`); absent on versions never deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    standing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_at: Option<String>,
}

/// The standing attributes of an item (the rest ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StatusItem {
    version: String,
    standing: Option<String>,
    status_reason: Option<String>,
    status_by: Option<String>,
    status_at: Option<String>,
}

impl StatusItem {
    fn status(self) -> TemplateStatus {
        TemplateStatus {
            standing: Standing::parse(self.standing.as_deref().unwrap_or_default()),
            reason: self.status_reason,
            by: self.status_by,
            at: self.status_at,
        }
    }
}

const STATUS_ATTRS: &str = "version, standing, status_reason, status_by, status_at";

impl StoredTemplate {
    fn from_item(item: Item) -> Result<Self, Error> {
        let item: TemplateItem = from_item("template", item)?;
        let manifest: Manifest = serde_json::from_str(&item.manifest).map_err(|e| Error::Corrupt {
            what: format!("template {}", item.name),
            reason: e.to_string(),
        })?;
        Ok(Self {
            template: Template::from_manifest(manifest)?,
            sha256: item.sha256,
            bundle_key: item.bundle_key,
        })
    }

    fn version_key(&self) -> Vec<u64> {
        strato_domain::template_status::version_key(self.template.version())
    }
}

impl Store {
    /// Records a template version. Versions are immutable: a second put of the same version is refused
    /// unless the content hash matches (then it is a no-op, the version's standing kept).
    pub async fn put_template(
        &self,
        manifest: &Manifest,
        content_sha256: &str,
        bundle_key: &str,
    ) -> Result<(), Error> {
        let json = serde_json::to_string(manifest).map_err(|source| Error::Render {
            what: "manifest",
            source,
        })?;
        let item = TemplateItem {
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            manifest: json,
            sha256: content_sha256.to_owned(),
            bundle_key: bundle_key.to_owned(),
            ..Default::default()
        };
        // Only a new version is written: rewriting the same content would clear a deprecation or yank.
        let put = self
            .ddb
            .put_item()
            .table_name(&self.templates)
            .set_item(Some(to_item("template", &item)?))
            .condition_expression("attribute_not_exists(#n)")
            .expression_attribute_names("#n", "name")
            .send();
        match conditional("PutItem", put).await? {
            Ok(_) => Ok(()),
            Err(lost) => {
                let same = self
                    .get_template(&manifest.name, &manifest.version)
                    .await?
                    .is_some_and(|t| t.sha256 == content_sha256);
                if same {
                    Ok(())
                } else {
                    Err(lost.conflict(format!(
                        "{}@{} is already published with different content",
                        manifest.name, manifest.version
                    )))
                }
            }
        }
    }

    /// A version's standing: this process's answer while younger than [`TEMPLATE_STATUS_MAX_AGE`], else one
    /// GetItem of its standing attributes. An unpublished version reads as active (the caller has already
    /// found it, or refuses it as unknown).
    pub async fn template_status(&self, name: &str, version: &str) -> Result<TemplateStatus, Error> {
        let key = (name.to_owned(), version.to_owned());
        let now = Instant::now();
        if let Some(st) = self.status_cache.get(&key, now) {
            return Ok(st);
        }
        let get = self
            .get(&self.templates, &[("name", s(name)), ("version", s(version))])
            .projection_expression(STATUS_ATTRS)
            .consistent_read(true);
        let status = match fetch(get).await? {
            Some(item) => from_item::<StatusItem>("template status", item)?.status(),
            None => TemplateStatus::active(),
        };
        self.status_cache.put(key, status.clone(), now);
        Ok(status)
    }

    /// Every version of `name` with its standing: one consistent Query of the standing attributes.
    pub async fn template_statuses(&self, name: &str) -> Result<Vec<(String, TemplateStatus)>, Error> {
        let q = self
            .ddb
            .query()
            .table_name(&self.templates)
            .key_condition_expression("#n = :n")
            .expression_attribute_names("#n", "name")
            .expression_attribute_values(":n", s(name))
            .projection_expression(STATUS_ATTRS)
            .consistent_read(true);
        let items: Vec<StatusItem> = super::query_all("template status", q).await?;
        Ok(items
            .into_iter()
            .map(|i| (i.version.clone(), i.status()))
            .collect())
    }

    /// Sets a published version's standing, if it is still `expected` (read by the caller, who decided the
    /// change was allowed from it): a concurrent change loses with `Error::Conflict`; an unpublished version
    /// is `Error::NotFound`-like `Conflict` too (the caller read it first).
    pub async fn set_template_status(
        &self,
        name: &str,
        version: &str,
        expected: Standing,
        status: &TemplateStatus,
    ) -> Result<(), Error> {
        let opt = |v: &Option<String>| s(v.clone().unwrap_or_default());
        let mut update = self
            .ddb
            .update_item()
            .table_name(&self.templates)
            .key("name", s(name))
            .key("version", s(version))
            .update_expression("SET standing = :st, status_reason = :r, status_by = :b, status_at = :a")
            .expression_attribute_names("#n", "name")
            .expression_attribute_values(":st", s(status.standing.as_str()))
            .expression_attribute_values(":r", opt(&status.reason))
            .expression_attribute_values(":b", opt(&status.by))
            .expression_attribute_values(":a", opt(&status.at))
            .expression_attribute_values(":old", s(expected.as_str()));
        update = if expected == Standing::Active {
            update.condition_expression(
                "attribute_exists(#n) AND (attribute_not_exists(standing) OR standing = :old)",
            )
        } else {
            update.condition_expression("attribute_exists(#n) AND standing = :old")
        };
        conditional("UpdateItem", update.send()).await?.map_err(|lost| {
            lost.conflict(format!(
                "{name}@{version} changed standing meanwhile; read it again and retry"
            ))
        })?;
        self.status_cache.put(
            (name.to_owned(), version.to_owned()),
            status.clone(),
            Instant::now(),
        );
        Ok(())
    }

    /// The published version, read from the table once per process: versions are immutable, so a cached
    /// copy is never stale. An unpublished version is not cached (it may be published next).
    pub async fn get_template(&self, name: &str, version: &str) -> Result<Option<StoredTemplate>, Error> {
        let key = (name.to_owned(), version.to_owned());
        let cache = |c: &TemplateCache| c.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        if let Some(hit) = cache(&self.template_cache) {
            return Ok(Some(hit));
        }
        let get = self.get(&self.templates, &[("name", s(name)), ("version", s(version))]);
        let found = fetch(get).await?.map(StoredTemplate::from_item).transpose()?;
        if let Some(t) = &found {
            self.template_cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, t.clone());
        }
        Ok(found)
    }

    /// All versions of every template (the catalog is small; a Query per name would need a name list).
    pub async fn list_templates(&self) -> Result<Vec<StoredTemplate>, Error> {
        Ok(self.catalog().await?.into_iter().map(|(t, _)| t).collect())
    }

    /// All versions of every template with their standings, by name then version: one Scan of the catalog
    /// table (a few dozen small items).
    pub async fn catalog(&self) -> Result<Vec<(StoredTemplate, TemplateStatus)>, Error> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .ddb
                .scan()
                .table_name(&self.templates)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| Error::aws("Scan", e))?;
            for item in page.items.unwrap_or_default() {
                let status = from_item::<StatusItem>("template status", item.clone())?.status();
                out.push((StoredTemplate::from_item(item)?, status));
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        out.sort_by(|(a, _), (b, _)| {
            a.template
                .name()
                .cmp(b.template.name())
                .then_with(|| a.version_key().cmp(&b.version_key()))
        });
        Ok(out)
    }
}

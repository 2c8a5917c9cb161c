//! Template versions in the catalog table. A version is immutable once published.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::write::conditional;
use super::{Item, Store, fetch, from_item, s, to_item};
use crate::error::Error;
use strato_domain::template::{Manifest, Template};

/// Published versions by `(name, version)`. Unbounded: the catalog holds a few dozen versions.
pub(super) type TemplateCache = Arc<Mutex<HashMap<(String, String), StoredTemplate>>>;

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
}

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
        self.template
            .version()
            .split('.')
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    }
}

impl Store {
    /// Records a template version. Versions are immutable: a second put of the same version is refused
    /// unless the content hash matches (then it is a no-op).
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
        };
        let put = self
            .ddb
            .put_item()
            .table_name(&self.templates)
            .set_item(Some(to_item("template", &item)?))
            .condition_expression("attribute_not_exists(#n) OR sha256 = :sha")
            .expression_attribute_names("#n", "name")
            .expression_attribute_values(":sha", s(content_sha256))
            .send();
        conditional("PutItem", put).await?.map(drop).map_err(|lost| {
            lost.conflict(format!(
                "{}@{} is already published with different content",
                manifest.name, manifest.version
            ))
        })
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
                out.push(StoredTemplate::from_item(item)?);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        out.sort_by(|a, b| {
            a.template
                .name()
                .cmp(b.template.name())
                .then_with(|| a.version_key().cmp(&b.version_key()))
        });
        Ok(out)
    }
}

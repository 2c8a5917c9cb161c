//! Provider catalogs: the regions and instance types Strato offers per cloud (data files in `catalog/providers`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::model::CloudProvider;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Region {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub zones: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceType {
    pub name: String,
    pub vcpu: u32,
    pub memory_gib: f64,
    pub family: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderCatalog {
    pub provider: CloudProvider,
    pub display_name: String,
    pub source: String,
    /// Kubernetes minor versions ("1.31") the cloud's managed Kubernetes offers; `catalog = "kubernetes_version"`
    /// variables take one of these.
    #[serde(default)]
    pub kubernetes_versions: Vec<String>,
    pub regions: Vec<Region>,
    pub instance_types: Vec<InstanceType>,
}

impl ProviderCatalog {
    pub fn from_toml(text: &str) -> Result<Self, Error> {
        let cat: ProviderCatalog = toml::from_str(text).map_err(|e| Error::Catalog {
            provider: "?".into(),
            reason: e.to_string(),
        })?;
        let fail = |reason: String| Error::Catalog {
            provider: cat.provider.to_string(),
            reason,
        };
        if cat.regions.is_empty() || cat.instance_types.is_empty() || cat.kubernetes_versions.is_empty() {
            return Err(fail(
                "needs at least one region, one instance type and one Kubernetes version".into(),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for id in cat
            .regions
            .iter()
            .map(|r| &r.id)
            .chain(cat.instance_types.iter().map(|i| &i.name))
            .chain(cat.kubernetes_versions.iter())
        {
            if !seen.insert(id.as_str()) {
                return Err(fail(format!("'{id}' is listed twice")));
            }
        }
        Ok(cat)
    }

    pub fn region(&self, id: &str) -> Option<&Region> {
        self.regions.iter().find(|r| r.id == id)
    }

    pub fn instance_type(&self, name: &str) -> Option<&InstanceType> {
        self.instance_types.iter().find(|i| i.name == name)
    }

    pub fn has_kubernetes_version(&self, version: &str) -> bool {
        self.kubernetes_versions.iter().any(|v| v == version)
    }
}

#[derive(Debug, Clone)]
pub struct Catalogs(BTreeMap<CloudProvider, ProviderCatalog>);

impl Catalogs {
    /// The catalogs shipped in the repository, parsed once per process.
    pub fn builtin() -> &'static Catalogs {
        static CATALOGS: OnceLock<Catalogs> = OnceLock::new();
        CATALOGS.get_or_init(|| {
            let files = [
                include_str!("../catalog/providers/aws.toml"),
                include_str!("../catalog/providers/gcp.toml"),
                include_str!("../catalog/providers/azure.toml"),
                include_str!("../catalog/providers/digitalocean.toml"),
                include_str!("../catalog/providers/linode.toml"),
            ];
            let map = files
                .into_iter()
                .map(|text| {
                    // The files are part of the build and covered by tests; a broken one is a build defect.
                    let cat = ProviderCatalog::from_toml(text).expect("shipped provider catalog is valid");
                    (cat.provider, cat)
                })
                .collect();
            Catalogs(map)
        })
    }

    pub fn get(&self, provider: CloudProvider) -> &ProviderCatalog {
        // Every provider has a shipped catalog; `builtin_catalogs_cover_every_provider` proves it.
        &self.0[&provider]
    }

    pub fn all(&self) -> impl Iterator<Item = &ProviderCatalog> {
        self.0.values()
    }
}

mod suggest;
pub use suggest::{Kind, explain};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalogs_cover_every_provider() {
        let cats = Catalogs::builtin();
        for p in CloudProvider::ALL {
            let c = cats.get(p);
            assert_eq!(c.provider, p);
            assert!(c.regions.len() >= 6, "{p}: {} regions", c.regions.len());
            assert!(
                c.instance_types.len() >= 10,
                "{p}: {} instance types",
                c.instance_types.len()
            );
            assert!(!c.source.is_empty());
            assert!(!c.kubernetes_versions.is_empty(), "{p}: no Kubernetes versions");
            for it in &c.instance_types {
                assert!(it.vcpu > 0 && it.memory_gib > 0.0, "{p}: {}", it.name);
            }
        }
        let aws = cats.get(CloudProvider::Aws);
        assert_eq!(aws.instance_type("t3.medium").unwrap().vcpu, 2);
        assert!(aws.region("us-east-1").unwrap().zones.len() >= 2);
        assert!(aws.region("atlantis-1").is_none());
    }

    #[test]
    fn duplicate_entries_are_refused() {
        let text = r#"
            provider = "aws"
            display_name = "x"
            source = "x"
            [[regions]]
            id = "us-east-1"
            name = "a"
            [[regions]]
            id = "us-east-1"
            name = "b"
            [[instance_types]]
            name = "t3.small"
            vcpu = 2
            memory_gib = 2.0
            family = "burstable"
        "#;
        let text = format!("kubernetes_versions = [\"1.31\"]\n{text}");
        let text = text.as_str();
        let err = ProviderCatalog::from_toml(text).unwrap_err();
        assert!(err.to_string().contains("listed twice"), "{err}");
    }
}

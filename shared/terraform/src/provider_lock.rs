//! A template's provider lock file: `.terraform.lock.hcl` beside its `template.toml`, written by
//! `terraform providers lock` (or `tofu providers lock`) for the platforms the runner uses. It pins every
//! provider the template's modules require to one version and the checksums of its packages, so a
//! template version installs the same provider code on every run. The bundle carries it (its sha256 covers
//! it), publishing refuses one that does not cover the modules' providers, and the runner initializes
//! every stage with it read-only (`init -lockfile=readonly`): a package that does not match fails `init`.

use std::collections::BTreeSet;

use hcl::Body;

/// The lock file's name, in a template's directory, at a bundle's root and in every stage's root.
pub const LOCK_FILE: &str = ".terraform.lock.hcl";

/// One `provider` block of a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedProvider {
    /// As written: `registry.terraform.io/hashicorp/aws` (Terraform) or `registry.opentofu.org/...`.
    pub source: String,
    pub version: String,
    pub hashes: Vec<String>,
}

impl LockedProvider {
    /// `namespace/type` (`hashicorp/aws`): what a module's `source` names, whichever registry serves it.
    pub fn short_source(&self) -> String {
        short_source(&self.source)
    }
}

/// `hashicorp/aws` for `hashicorp/aws`, `registry.terraform.io/hashicorp/aws` or any other host; a bare
/// type (`aws`, the pre-0.13 form) means `hashicorp/aws`.
pub fn short_source(source: &str) -> String {
    let parts: Vec<&str> = source.trim().split('/').collect();
    match parts.as_slice() {
        [ty] => format!("hashicorp/{}", ty.to_ascii_lowercase()),
        [.., ns, ty] => format!("{}/{}", ns.to_ascii_lowercase(), ty.to_ascii_lowercase()),
        [] => String::new(),
    }
}

/// Parses a lock file; every provider must name its version and at least one hash.
pub fn parse(text: &str) -> Result<Vec<LockedProvider>, String> {
    let body: Body = hcl::from_str(text).map_err(|e| format!("{LOCK_FILE} is not valid HCL: {e}"))?;
    let mut out = Vec::new();
    for block in body.blocks().filter(|b| b.identifier() == "provider") {
        let source = block
            .labels()
            .first()
            .map(|l| l.as_str().to_owned())
            .ok_or_else(|| format!("{LOCK_FILE}: a provider block without its source"))?;
        let attr = |k: &str| {
            block
                .body()
                .attributes()
                .find(|a| a.key() == k)
                .map(|a| a.expr().clone())
        };
        let version = match attr("version") {
            Some(hcl::Expression::String(v)) if !v.trim().is_empty() => v,
            _ => return Err(format!("{LOCK_FILE}: provider \"{source}\" has no version")),
        };
        let hashes: Vec<String> = match attr("hashes") {
            Some(hcl::Expression::Array(items)) => items
                .into_iter()
                .filter_map(|e| match e {
                    hcl::Expression::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if hashes.is_empty() {
            return Err(format!(
                "{LOCK_FILE}: provider \"{source}\" has no hashes; regenerate it with \
                 `terraform providers lock -platform=linux_amd64 -platform=linux_arm64`"
            ));
        }
        out.push(LockedProvider {
            source,
            version,
            hashes,
        });
    }
    Ok(out)
}

/// What keeps `locked` from pinning every provider in `required` (short sources, `hashicorp/aws`): each
/// missing provider, named with the fix.
pub fn missing(locked: &[LockedProvider], required: &BTreeSet<String>) -> Vec<String> {
    let have: BTreeSet<String> = locked.iter().map(LockedProvider::short_source).collect();
    required
        .iter()
        .filter(|r| !have.contains(*r))
        .map(|r| {
            format!(
                "the modules require provider \"{r}\" but {LOCK_FILE} does not lock it; run \
                 `terraform providers lock` again with every module of the template"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"
# This file is maintained automatically by "terraform init".
provider "registry.terraform.io/hashicorp/aws" {
  version     = "3.39.0"
  constraints = "3.39.0"
  hashes = [
    "h1:goOMfGE4SjLps+hpxJFEM/pZFiNgvi6BMG8/w86+f6k=",
    "zh:0123",
  ]
}
"#;

    #[test]
    fn a_lock_file_reads_as_its_providers() {
        let p = parse(LOCK).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].source, "registry.terraform.io/hashicorp/aws");
        assert_eq!(p[0].short_source(), "hashicorp/aws");
        assert_eq!(p[0].version, "3.39.0");
        assert_eq!(p[0].hashes.len(), 2);
    }

    #[test]
    fn a_provider_without_hashes_or_version_is_refused() {
        let no_hashes = "provider \"registry.terraform.io/hashicorp/aws\" {\n  version = \"3.39.0\"\n}\n";
        assert!(parse(no_hashes).unwrap_err().contains("no hashes"));
        let no_version = "provider \"registry.terraform.io/hashicorp/aws\" {\n  hashes = [\"h1:x\"]\n}\n";
        assert!(parse(no_version).unwrap_err().contains("no version"));
        assert!(parse("provider {").unwrap_err().contains("not valid HCL"));
    }

    #[test]
    fn every_required_provider_must_be_locked_from_any_registry() {
        let p = parse(LOCK).unwrap();
        let need: BTreeSet<String> = ["hashicorp/aws".to_owned()].into();
        assert!(missing(&p, &need).is_empty());
        // OpenTofu's registry serves the same provider.
        let tofu = vec![LockedProvider {
            source: "registry.opentofu.org/hashicorp/aws".into(),
            ..p[0].clone()
        }];
        assert!(missing(&tofu, &need).is_empty());
        let need: BTreeSet<String> = ["hashicorp/aws".to_owned(), "hashicorp/null".to_owned()].into();
        let m = missing(&p, &need);
        assert_eq!(m.len(), 1);
        assert!(m[0].contains("hashicorp/null"), "{m:?}");
        assert_eq!(short_source("aws"), "hashicorp/aws");
        assert_eq!(short_source("HashiCorp/AWS"), "hashicorp/aws");
    }
}

//! A module's resources checked against its provider's published schema, without the provider: the
//! providers of the other clouds cannot be installed where Strato's tests run, so `terraform validate` cannot
//! catch a misspelt argument, a block that is not one, or a required argument left out. The schema facts
//! (what each resource type takes, read from the provider's source at the version the module pins) are test
//! data; this reads a module's `.tf` files with hcl-rs and compares.

use std::collections::BTreeMap;
use std::path::Path;

use hcl::{Block, Body};
use serde::Deserialize;

/// One provider's facts: where they were read and, per resource type (`data.<type>` for data sources),
/// what it takes.
#[derive(Debug, Clone, Deserialize)]
pub struct ProviderFacts {
    /// `namespace/type`, as `required_providers` names it (`hashicorp/google`).
    pub provider: String,
    pub version: String,
    pub repository: String,
    pub tag: String,
    pub resources: BTreeMap<String, BlockFacts>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgMode {
    Required,
    Optional,
}

/// A resource's (or a nested block's) schema: arguments, computed-only attributes and nested blocks.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BlockFacts {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub arguments: BTreeMap<String, ArgMode>,
    #[serde(default)]
    pub attributes: Vec<String>,
    #[serde(default)]
    pub blocks: BTreeMap<String, BlockFacts>,
    /// The block must appear (Required or MinItems > 0 in the schema).
    #[serde(default)]
    pub required: bool,
    /// `SchemaConfigModeAttr`: may be written as a block or as an argument.
    #[serde(default)]
    pub attribute_or_block: bool,
}

impl ProviderFacts {
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

/// Arguments and blocks every resource takes whatever its schema (Terraform's, not the provider's).
const META_ARGUMENTS: &[&str] = &["count", "for_each", "depends_on", "provider"];
const META_BLOCKS: &[&str] = &["lifecycle", "provisioner", "connection", "timeouts"];

/// Every disagreement between the module in `dir` and the facts, each naming the file, the resource and what
/// to fix. Empty = every resource type, argument and block is in the schema, every required one is there, and
/// each provider is pinned to the version the facts were read at.
pub fn check_module(dir: &Path, facts: &[ProviderFacts]) -> Result<Vec<String>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tf"))
        .collect();
    files.sort();
    let mut problems = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        problems.extend(check_source(&name, &text, facts)?);
    }
    Ok(problems)
}

/// [`check_module`] for one file's text.
pub fn check_source(file: &str, text: &str, facts: &[ProviderFacts]) -> Result<Vec<String>, String> {
    let body: Body = hcl::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    let mut problems = Vec::new();
    for block in body.blocks() {
        let labels: Vec<&str> = block.labels().iter().map(|l| l.as_str()).collect();
        match (block.identifier(), labels.as_slice()) {
            (kind @ ("resource" | "data"), [ty, name]) => {
                let key = if kind == "data" {
                    format!("data.{ty}")
                } else {
                    (*ty).to_owned()
                };
                let what = format!("{file}: {kind} \"{ty}\" \"{name}\"");
                match find(facts, &key) {
                    Some((p, schema)) => check_body(&what, block.body(), schema, &p.version, &mut problems),
                    None => problems.push(format!(
                        "{what}: no schema facts for {kind} type '{ty}' (a misspelt type, or one whose schema \
                         was not recorded in tests/fixtures/provider-schemas)"
                    )),
                }
            }
            ("terraform", _) => check_pins(file, block, facts, &mut problems),
            _ => {}
        }
    }
    Ok(problems)
}

fn find<'a>(facts: &'a [ProviderFacts], key: &str) -> Option<(&'a ProviderFacts, &'a BlockFacts)> {
    facts.iter().find_map(|p| p.resources.get(key).map(|r| (p, r)))
}

fn check_body(what: &str, body: &Body, schema: &BlockFacts, version: &str, out: &mut Vec<String>) {
    let mut present: Vec<String> = Vec::new();
    for attr in body.attributes() {
        let k = attr.key();
        present.push(k.to_owned());
        let known = schema.arguments.contains_key(k)
            || META_ARGUMENTS.contains(&k)
            || schema.blocks.get(k).is_some_and(|b| b.attribute_or_block);
        if !known {
            let hint = if schema.attributes.iter().any(|a| a == k) {
                " (it is computed: it can be read, not set)"
            } else if schema.blocks.contains_key(k) {
                " (it is a block: write it as `{k} { ... }`)"
            } else {
                ""
            };
            out.push(format!(
                "{what}: argument '{k}' is not in the schema of version {version}{hint}"
            ));
        }
    }
    for nested in body.blocks() {
        let (name, inner) = match nested.identifier() {
            // `dynamic "x" { content { ... } }` writes blocks named x with content's body.
            "dynamic" => {
                let Some(label) = nested.labels().first() else {
                    out.push(format!("{what}: a dynamic block without a name"));
                    continue;
                };
                let content = nested.body().blocks().find(|b| b.identifier() == "content");
                (label.as_str().to_owned(), content.map(Block::body))
            }
            other => (other.to_owned(), Some(nested.body())),
        };
        present.push(name.clone());
        if META_BLOCKS.contains(&name.as_str()) && !schema.blocks.contains_key(&name) {
            continue;
        }
        match schema.blocks.get(&name) {
            Some(facts) => {
                if let Some(inner) = inner {
                    check_body(&format!("{what} > {name}"), inner, facts, version, out);
                }
            }
            None => {
                let hint = if schema.arguments.contains_key(&name) {
                    format!(" (it is an argument: write `{name} = ...`)")
                } else {
                    String::new()
                };
                out.push(format!(
                    "{what}: block '{name}' is not in the schema of version {version}{hint}"
                ));
            }
        }
    }
    for (k, mode) in &schema.arguments {
        if *mode == ArgMode::Required && !present.contains(k) {
            out.push(format!("{what}: required argument '{k}' is missing"));
        }
    }
    for (k, b) in &schema.blocks {
        if b.required && !present.contains(k) {
            out.push(format!("{what}: required block '{k}' is missing"));
        }
    }
}

/// Each provider the module requires and the facts know is pinned to exactly the facts' version.
fn check_pins(file: &str, terraform: &Block, facts: &[ProviderFacts], out: &mut Vec<String>) {
    for req in terraform
        .body()
        .blocks()
        .filter(|b| b.identifier() == "required_providers")
    {
        for a in req.body().attributes() {
            let hcl::Expression::Object(o) = a.expr() else {
                continue;
            };
            let get = |key: &str| {
                o.iter()
                    .find(|(k, _)| k.to_string().trim_matches('"') == key)
                    .and_then(|(_, v)| match v {
                        hcl::Expression::String(s) => Some(s.clone()),
                        _ => None,
                    })
            };
            let Some(source) = get("source") else { continue };
            let Some(p) = facts.iter().find(|p| p.provider == source) else {
                continue;
            };
            if get("version").as_deref() != Some(p.version.as_str()) {
                out.push(format!(
                    "{file}: provider {source} must be pinned to version = \"{}\", the version its schema facts \
                     were read at ({} {})",
                    p.version, p.repository, p.tag
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Vec<ProviderFacts> {
        vec![
            ProviderFacts::from_json(
                r#"{"provider": "example/cloud", "version": "1.2.3", "repository": "r", "tag": "v1.2.3",
                "resources": {
                  "cloud_net": {"arguments": {"name": "required", "cidr": "optional"}, "attributes": ["id"],
                    "blocks": {"rule": {"arguments": {"port": "required"}, "required": true},
                               "legacy": {"arguments": {"x": "optional"}, "attribute_or_block": true}}},
                  "data.cloud_zones": {"arguments": {"region": "optional"}, "attributes": ["names"]}
                }}"#,
            )
            .unwrap(),
        ]
    }

    fn problems(text: &str) -> Vec<String> {
        check_source("main.tf", text, &facts()).unwrap()
    }

    #[test]
    fn a_module_within_the_schema_passes() {
        let p = problems(
            r#"
            terraform {
              required_providers {
                cloud = { source = "example/cloud", version = "1.2.3" }
              }
            }
            data "cloud_zones" "z" {}
            resource "cloud_net" "n" {
              count = 1
              name  = "a"
              legacy = []
              dynamic "rule" {
                for_each = [1]
                content {
                  port = rule.value
                }
              }
              lifecycle {
                ignore_changes = [cidr]
              }
            }
            "#,
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn every_kind_of_disagreement_is_named() {
        let p = problems(
            r#"
            terraform {
              required_providers {
                cloud = { source = "example/cloud", version = ">= 1.0" }
              }
            }
            resource "cloud_nett" "typo" {}
            data "cloud_net" "not_a_data_source" {}
            resource "cloud_net" "n" {
              cidr = "x"
              id   = "y"
              zone = "z"
              rule {
                port  = 1
                proto = "tcp"
              }
              name {
              }
              other {}
            }
            resource "cloud_net" "m" {
              name = "b"
              rule = []
            }
            "#,
        );
        for expected in [
            "provider example/cloud must be pinned to version = \"1.2.3\"",
            "resource \"cloud_nett\" \"typo\": no schema facts for resource type 'cloud_nett'",
            "data \"cloud_net\" \"not_a_data_source\": no schema facts for data type 'cloud_net'",
            "resource \"cloud_net\" \"n\": argument 'id' is not in the schema of version 1.2.3 (it is computed",
            "resource \"cloud_net\" \"n\": argument 'zone' is not in the schema",
            "resource \"cloud_net\" \"n\" > rule: argument 'proto' is not in the schema",
            "resource \"cloud_net\" \"n\": block 'name' is not in the schema of version 1.2.3 (it is an argument",
            "resource \"cloud_net\" \"n\": block 'other' is not in the schema",
            "resource \"cloud_net\" \"m\": argument 'rule' is not in the schema of version 1.2.3 (it is a block",
        ] {
            assert!(
                p.iter().any(|x| x.contains(expected)),
                "missing {expected:?} in {p:#?}"
            );
        }
        // `name { }` counts as present for the required check (it is reported as a wrong block instead), and
        // `rule = []` for the required block: one problem each, not two.
        assert!(!p.iter().any(|x| x.contains("required")), "{p:#?}");
        assert_eq!(p.len(), 9, "{p:#?}");
        let p = problems(r#"resource "cloud_net" "bare" {}"#);
        assert_eq!(
            p,
            [
                "main.tf: resource \"cloud_net\" \"bare\": required argument 'name' is missing",
                "main.tf: resource \"cloud_net\" \"bare\": required block 'rule' is missing"
            ]
        );
    }
}

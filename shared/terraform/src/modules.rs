//! Terraform module interfaces read from their `.tf` files with hcl-rs: which variables a module takes
//! and which outputs it gives. The template manifest's schema is checked against these (so the two cannot
//! disagree) and the runner wires modules and stages together by these names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hcl::{Block, Body, Expression};

use strato_domain::error::Error;

#[derive(Debug, Clone, PartialEq)]
pub struct ModuleVariable {
    /// The type constraint as written (`string`, `number`, `list(string)`, ...); `None` = any.
    pub type_expr: Option<String>,
    pub default: Option<serde_json::Value>,
    pub sensitive: bool,
    pub description: Option<String>,
    /// Number of `validation` blocks.
    pub validations: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModuleOutput {
    pub sensitive: bool,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModuleInterface {
    pub variables: BTreeMap<String, ModuleVariable>,
    pub outputs: BTreeMap<String, ModuleOutput>,
    /// The providers its `terraform { required_providers { ... } }` names, as `namespace/type`
    /// (`hashicorp/aws`): what a template's lock file must pin.
    pub required_providers: BTreeSet<String>,
}

impl ModuleInterface {
    /// Reads every `*.tf` file of a module directory (not recursively).
    pub fn read_dir(dir: &Path) -> Result<Self, Error> {
        let fail = |reason: String| Error::Manifest {
            name: dir.display().to_string(),
            reason,
        };
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| fail(format!("cannot read module directory: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "tf"))
            .collect();
        entries.sort();
        let mut iface = ModuleInterface::default();
        for path in entries {
            let text =
                std::fs::read_to_string(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
            iface
                .add_source(&text)
                .map_err(|reason| fail(format!("{}: {reason}", path.display())))?;
        }
        Ok(iface)
    }

    /// Parses one file's text and adds its variables and outputs.
    pub fn add_source(&mut self, text: &str) -> Result<(), String> {
        let body: Body = hcl::from_str(text).map_err(|e| e.to_string())?;
        for block in body.blocks() {
            let label = || {
                block
                    .labels()
                    .first()
                    .map(|l| l.as_str().to_string())
                    .ok_or_else(|| format!("{} block without a name", block.identifier()))
            };
            match block.identifier() {
                "variable" => {
                    let name = label()?;
                    let v = ModuleVariable {
                        type_expr: attr(block, "type").map(type_string),
                        default: attr(block, "default").map(expr_json).transpose()?,
                        sensitive: attr(block, "sensitive").is_some_and(|e| *e == Expression::Bool(true)),
                        description: attr(block, "description").and_then(expr_str),
                        validations: block
                            .body()
                            .blocks()
                            .filter(|b| b.identifier() == "validation")
                            .count(),
                    };
                    if self.variables.insert(name.clone(), v).is_some() {
                        return Err(format!("variable '{name}' is declared twice"));
                    }
                }
                "output" => {
                    let name = label()?;
                    let o = ModuleOutput {
                        sensitive: attr(block, "sensitive").is_some_and(|e| *e == Expression::Bool(true)),
                        description: attr(block, "description").and_then(expr_str),
                    };
                    if self.outputs.insert(name.clone(), o).is_some() {
                        return Err(format!("output '{name}' is declared twice"));
                    }
                }
                "terraform" => {
                    for req in block
                        .body()
                        .blocks()
                        .filter(|b| b.identifier() == "required_providers")
                    {
                        for a in req.body().attributes() {
                            // `aws = { source = "hashicorp/aws", version = ... }`, or the old `aws = "~> 3"`.
                            let source = match a.expr() {
                                Expression::Object(o) => o
                                    .iter()
                                    .find(|(k, _)| k.to_string().trim_matches('"') == "source")
                                    .and_then(|(_, v)| expr_str(v)),
                                _ => None,
                            };
                            let source = source.unwrap_or_else(|| a.key().to_owned());
                            self.required_providers
                                .insert(crate::provider_lock::short_source(&source));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn attr<'a>(block: &'a Block, key: &str) -> Option<&'a Expression> {
    block
        .body()
        .attributes()
        .find(|a| a.key() == key)
        .map(|a| a.expr())
}

fn expr_str(e: &Expression) -> Option<String> {
    match e {
        Expression::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// `string`, `list(string)`, `map(number)` ... as written, without whitespace.
fn type_string(e: &Expression) -> String {
    e.to_string().split_whitespace().collect()
}

/// Terraform only allows literal defaults, so the conversion is exact.
fn expr_json(e: &Expression) -> Result<serde_json::Value, String> {
    serde_json::to_value(hcl::Value::from(e.clone())).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_variables_and_outputs() {
        let mut m = ModuleInterface::default();
        m.add_source(
            r#"
variable "node_count" {
  type        = number
  default     = 3
  description = "Nodes in the group"
  validation {
    condition     = var.node_count >= 1
    error_message = "At least one node."
  }
}
variable "tags" {
  type    = map(string)
  default = { team = "a" }
}
variable "token" {
  type      = string
  sensitive = true
}
output "endpoint" { value = "x" }
output "kubeconfig" {
  value     = "y"
  sensitive = true
}
"#,
        )
        .unwrap();
        let n = &m.variables["node_count"];
        assert_eq!(n.type_expr.as_deref(), Some("number"));
        assert_eq!(n.default, Some(serde_json::json!(3)));
        assert_eq!(n.validations, 1);
        assert_eq!(m.variables["tags"].type_expr.as_deref(), Some("map(string)"));
        assert_eq!(
            m.variables["tags"].default,
            Some(serde_json::json!({"team": "a"}))
        );
        assert!(m.variables["token"].sensitive && m.variables["token"].default.is_none());
        assert!(!m.outputs["endpoint"].sensitive && m.outputs["kubeconfig"].sensitive);
        assert!(
            m.add_source("variable \"token\" {}")
                .unwrap_err()
                .contains("twice")
        );
    }

    #[test]
    fn reads_the_providers_a_module_requires() {
        let mut m = ModuleInterface::default();
        m.add_source(
            r#"
terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 3.39.0"
    }
    tls = "~> 4.0"
  }
}
"#,
        )
        .unwrap();
        let want: BTreeSet<String> = ["hashicorp/aws".to_owned(), "hashicorp/tls".to_owned()].into();
        assert_eq!(m.required_providers, want);
    }
}

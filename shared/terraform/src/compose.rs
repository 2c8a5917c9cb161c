//! Stage composition: turns a template's stages into generated root modules (`main.tf.json`) that
//! instantiate the stage's modules and wire them together by name, so module authors never write glue.
//!
//! Wiring rule for a module variable `v` (first match wins):
//! 1. output `v` of an earlier module in the same stage → `module.<m>.v`;
//! 2. a root variable `v` (declared in the generated root, fed by `terraform.tfvars.json`) when `v` is a
//!    template variable (managed ones included) or an output of an earlier stage;
//! 3. otherwise the module's own default; a variable without a default that nothing provides is an error.
//!
//! Every module output becomes a root output of the same name (sensitive if the module's is); two modules of
//! a stage exposing the same output name is an error. Pure functions: the runner and the catalog both use them.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::modules::ModuleInterface;
use strato_domain::error::Error;
use strato_domain::template::Template;

/// A root variable of a generated stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootVariable {
    pub sensitive: bool,
}

/// Where a root output comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootOutput {
    pub module: String,
    pub sensitive: bool,
}

/// One generated root module.
#[derive(Debug, Clone, PartialEq)]
pub struct ComposedStage {
    pub stage: String,
    /// The `main.tf.json` document.
    pub main_tf_json: Value,
    /// Root variables the stage declares; its tfvars must hold exactly these (those with a value).
    pub variables: BTreeMap<String, RootVariable>,
    pub outputs: BTreeMap<String, RootOutput>,
}

impl ComposedStage {
    pub fn main_tf_json_text(&self) -> Result<String, Error> {
        serde_json::to_string_pretty(&self.main_tf_json).map_err(|source| Error::Render {
            what: "stage main.tf.json",
            source,
        })
    }
}

fn compose_error(template: &str, reason: String) -> Error {
    Error::Manifest {
        name: template.to_owned(),
        reason,
    }
}

/// Composes one stage. `modules` are the stage's modules in manifest order with their interfaces;
/// `available` are the names (with sensitivity) that can be root variables; `source_of` gives the module
/// source path relative to the stage directory (e.g. `../../modules/net`).
pub fn compose_stage(
    template: &str,
    stage: &str,
    modules: &[(String, &ModuleInterface)],
    available: &BTreeMap<String, bool>,
    source_of: &dyn Fn(&str) -> String,
) -> Result<ComposedStage, Error> {
    let mut module_blocks = Map::new();
    let mut variables: BTreeMap<String, RootVariable> = BTreeMap::new();
    let mut outputs: BTreeMap<String, RootOutput> = BTreeMap::new();
    for (name, iface) in modules {
        let mut block = Map::new();
        block.insert("source".into(), json!(source_of(name)));
        for (var, def) in &iface.variables {
            if let Some(out) = outputs.get(var) {
                block.insert(var.clone(), json!(format!("${{module.{}.{var}}}", out.module)));
            } else if let Some(&sensitive) = available.get(var) {
                let entry = variables.entry(var.clone()).or_insert(RootVariable { sensitive });
                entry.sensitive |= sensitive || def.sensitive;
                block.insert(var.clone(), json!(format!("${{var.{var}}}")));
            } else if def.default.is_none() {
                return Err(compose_error(
                    template,
                    format!(
                        "stage '{stage}': module '{name}' needs variable '{var}' (no default), but no earlier \
                         module output, template variable or earlier stage output has that name; declare \
                         '{var}' in the template or give it a default in the module"
                    ),
                ));
            }
        }
        for (out, def) in &iface.outputs {
            if let Some(prev) = outputs.get(out) {
                return Err(compose_error(
                    template,
                    format!(
                        "stage '{stage}': output '{out}' is exposed by both module '{}' and module '{name}'; \
                         rename one of them",
                        prev.module
                    ),
                ));
            }
            outputs.insert(
                out.clone(),
                RootOutput {
                    module: name.clone(),
                    sensitive: def.sensitive,
                },
            );
        }
        module_blocks.insert(name.clone(), Value::Object(block));
    }
    let mut doc = Map::new();
    if !variables.is_empty() {
        let vars: Map<String, Value> = variables
            .iter()
            .map(|(k, v)| {
                let body = if v.sensitive {
                    json!({"sensitive": true})
                } else {
                    json!({})
                };
                (k.clone(), body)
            })
            .collect();
        doc.insert("variable".into(), Value::Object(vars));
    }
    if !module_blocks.is_empty() {
        doc.insert("module".into(), Value::Object(module_blocks));
    }
    if !outputs.is_empty() {
        let outs: Map<String, Value> = outputs
            .iter()
            .map(|(k, o)| {
                let mut body = json!({"value": format!("${{module.{}.{k}}}", o.module)});
                if o.sensitive {
                    body["sensitive"] = json!(true);
                }
                (k.clone(), body)
            })
            .collect();
        doc.insert("output".into(), Value::Object(outs));
    }
    Ok(ComposedStage {
        stage: stage.to_owned(),
        main_tf_json: Value::Object(doc),
        variables,
        outputs,
    })
}

/// Composes every stage of `template` in order; `interfaces` holds each module's interface. Outputs of a
/// stage are available as root variables to every later stage.
pub fn compose_template(
    template: &Template,
    interfaces: &BTreeMap<String, ModuleInterface>,
    source_of: &dyn Fn(&str) -> String,
) -> Result<Vec<ComposedStage>, Error> {
    let m = &template.manifest;
    let mut available: BTreeMap<String, bool> = m
        .variables
        .iter()
        .map(|(k, d)| (k.clone(), d.sensitive))
        .collect();
    let mut out = Vec::new();
    for stage in &m.stages {
        let mut mods = Vec::new();
        for name in &stage.modules {
            let iface = interfaces.get(name).ok_or_else(|| {
                compose_error(
                    &m.name,
                    format!("stage '{}': module '{name}' has no interface", stage.name),
                )
            })?;
            mods.push((name.clone(), iface));
        }
        let composed = compose_stage(&m.name, &stage.name, &mods, &available, source_of)?;
        for (k, o) in &composed.outputs {
            let e = available.entry(k.clone()).or_insert(false);
            *e |= o.sensitive;
        }
        out.push(composed);
    }
    Ok(out)
}

/// Step names: `plan` for a single-stage template, `<stage>/plan` for a multi-stage one.
pub fn step_name(stage_count: usize, stage: &str, step: &str) -> String {
    if stage_count > 1 {
        format!("{stage}/{step}")
    } else {
        step.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(src: &str) -> ModuleInterface {
        let mut m = ModuleInterface::default();
        m.add_source(src).unwrap();
        m
    }

    fn src(m: &str) -> String {
        format!("../../modules/{m}")
    }

    #[test]
    fn wires_by_name_with_module_outputs_first() {
        let net = iface(
            r#"
variable "region" { type = string }
variable "cidr" { default = "10.0.0.0/16" }
output "vpc_id" { value = "x" }
output "region" { value = "y" }
"#,
        );
        let k8s = iface(
            r#"
variable "vpc_id" {}
variable "region" {}
variable "token" {}
variable "unused" { default = 1 }
output "endpoint" { value = "e" }
output "kubeconfig" {
  value     = "k"
  sensitive = true
}
"#,
        );
        let available: BTreeMap<String, bool> =
            [("region".to_owned(), false), ("token".to_owned(), true)].into();
        let c = compose_stage(
            "t",
            "main",
            &[("net".into(), &net), ("k8s".into(), &k8s)],
            &available,
            &src,
        )
        .unwrap();
        let doc = &c.main_tf_json;
        assert_eq!(doc["module"]["net"]["source"], "../../modules/net");
        assert_eq!(doc["module"]["net"]["region"], "${var.region}");
        assert!(doc["module"]["net"].get("cidr").is_none(), "left to the default");
        // An earlier module's output wins over a root variable of the same name.
        assert_eq!(doc["module"]["k8s"]["region"], "${module.net.region}");
        assert_eq!(doc["module"]["k8s"]["vpc_id"], "${module.net.vpc_id}");
        assert_eq!(doc["module"]["k8s"]["token"], "${var.token}");
        assert!(doc["module"]["k8s"].get("unused").is_none());
        assert_eq!(doc["variable"]["token"]["sensitive"], true);
        assert_eq!(doc["variable"]["region"], json!({}));
        assert_eq!(doc["output"]["kubeconfig"]["sensitive"], true);
        assert_eq!(doc["output"]["kubeconfig"]["value"], "${module.k8s.kubeconfig}");
        assert!(doc["output"]["endpoint"].get("sensitive").is_none());
        assert_eq!(c.variables.keys().collect::<Vec<_>>(), ["region", "token"]);
        assert_eq!(c.outputs.len(), 4);
    }

    #[test]
    fn duplicate_outputs_and_unprovided_variables_are_errors() {
        let a = iface("output \"id\" { value = 1 }");
        let b = iface("output \"id\" { value = 2 }");
        let err = compose_stage(
            "t",
            "s",
            &[("a".into(), &a), ("b".into(), &b)],
            &BTreeMap::new(),
            &src,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("'id'") && err.contains("'a'") && err.contains("'b'"),
            "{err}"
        );
        let c = iface("variable \"needed\" {}");
        let err = compose_stage("t", "s", &[("c".into(), &c)], &BTreeMap::new(), &src)
            .unwrap_err()
            .to_string();
        assert!(err.contains("needed") && err.contains("module 'c'"), "{err}");
    }

    #[test]
    fn later_stages_get_earlier_outputs_as_root_variables() {
        let toml = r#"
name = "two"
version = "1.0.0"
providers = ["aws"]
stages = [{ name = "network", modules = ["net"] }, { name = "apps", modules = ["app"] }]
[variables.region]
type = "string"
managed = true
"#;
        let template = Template::from_toml(toml).unwrap();
        let interfaces: BTreeMap<String, ModuleInterface> = [
            (
                "net".to_owned(),
                iface(
                    "variable \"region\" {}\noutput \"vpc_id\" { value = 1 }\noutput \"secret\" {\n value = 2\n sensitive = true\n}",
                ),
            ),
            (
                "app".to_owned(),
                iface("variable \"vpc_id\" {}\nvariable \"secret\" {}\nvariable \"region\" {}"),
            ),
        ]
        .into();
        let stages = compose_template(&template, &interfaces, &src).unwrap();
        assert_eq!(stages.len(), 2);
        let apps = &stages[1];
        assert_eq!(apps.stage, "apps");
        assert_eq!(apps.main_tf_json["module"]["app"]["vpc_id"], "${var.vpc_id}");
        assert_eq!(apps.variables["secret"], RootVariable { sensitive: true });
        assert_eq!(apps.variables["vpc_id"], RootVariable { sensitive: false });
        assert!(apps.variables.contains_key("region"));
        assert_eq!(step_name(2, "apps", "plan"), "apps/plan");
        assert_eq!(step_name(1, "main", "plan"), "plan");
    }
}

//! The template catalog: checking each manifest's variable schema against its modules' `variables.tf` /
//! `outputs.tf` (so the schema the API exposes and what Terraform accepts cannot disagree), and publishing
//! every template under `templates/catalog` as an immutable bundle.
//!
//! Source layout: `<root>/catalog/<template>/template.toml` and `<root>/modules/<module>/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::bundle::MANIFEST_FILE;
use crate::modules::ModuleInterface;
use strato_domain::error::Error;
use strato_domain::template::{Template, VarType};

/// Managed variables the generated stage root consumes itself (the `provider "aws"` block's region), so no
/// module has to declare them.
pub const ROOT_MANAGED_VARIABLES: &[&str] = &["region"];

/// Terraform type constraints a manifest type may map to. `integer` has no Terraform counterpart: it is a
/// `number` the manifest restricts to whole values.
fn compatible_tf_types(ty: VarType) -> &'static [&'static str] {
    match ty {
        VarType::String => &["string"],
        VarType::Number | VarType::Integer => &["number"],
        VarType::Bool => &["bool"],
        VarType::ListOfString => &["list(string)", "set(string)"],
        VarType::MapOfString => &["map(string)"],
    }
}

/// Reads the interface of every module the template's stages name.
pub fn read_interfaces(
    template: &Template,
    modules_dir: &Path,
) -> Result<BTreeMap<String, ModuleInterface>, Error> {
    let mut out = BTreeMap::new();
    for m in template.manifest.stages.iter().flat_map(|s| &s.modules) {
        if !out.contains_key(m) {
            out.insert(m.clone(), ModuleInterface::read_dir(&modules_dir.join(m))?);
        }
    }
    Ok(out)
}

/// Every disagreement between a manifest and its modules, each naming the variable, the module and the
/// fix. Empty = consistent. The rules mirror how the runner wires a stage's root module by name: a module
/// variable `v` gets the output `v` of an earlier module of the same stage, else root variable `v` (a
/// template variable, a managed variable, or an output of an earlier stage), else its own default.
///
/// Long because it is one rule per kind of disagreement, each a few lines.
pub fn schema_problems(template: &Template, modules: &BTreeMap<String, ModuleInterface>) -> Vec<String> {
    let m = &template.manifest;
    let mut problems = Vec::new();
    let iface = |name: &str| modules.get(name);
    for stage in &m.stages {
        for module in &stage.modules {
            if iface(module).is_none() {
                problems.push(format!(
                    "stage '{}' names module '{module}', which was not found; add templates/modules/{module}",
                    stage.name
                ));
            }
        }
    }

    // 1. Each manifest variable reaches a module with the same type and sensitivity.
    for (name, def) in &m.variables {
        let takers: Vec<(&String, &crate::modules::ModuleVariable)> = m
            .stages
            .iter()
            .flat_map(|s| &s.modules)
            .filter_map(|mname| {
                iface(mname)
                    .and_then(|i| i.variables.get(name))
                    .map(|v| (mname, v))
            })
            .collect();
        if takers.is_empty() {
            if !(def.managed && ROOT_MANAGED_VARIABLES.contains(&name.as_str())) {
                problems.push(format!(
                    "variable '{name}' is in the manifest but no module of the template declares it; \
                     remove it from the manifest or add `variable \"{name}\"` to a module"
                ));
            }
            continue;
        }
        for (mname, var) in takers {
            match var.type_expr.as_deref() {
                Some(t) if compatible_tf_types(def.ty).contains(&t) => {}
                other => problems.push(format!(
                    "variable '{name}' is {} in the manifest but {} in module '{mname}'; make the module's \
                     type one of {:?}",
                    def.ty,
                    other.map_or("untyped (any)".to_owned(), |t| format!("`{t}`")),
                    compatible_tf_types(def.ty)
                )),
            }
            if var.sensitive != def.sensitive {
                problems.push(format!(
                    "variable '{name}' is {}sensitive in the manifest but {}sensitive in module '{mname}'; \
                     mark both the same",
                    if def.sensitive { "" } else { "not " },
                    if var.sensitive { "" } else { "not " },
                ));
            }
        }
    }

    // 2. Every module variable without a default is fed, and a manifest variable feeding it always has a
    //    value (required, defaulted or managed).
    let mut earlier_stage_outputs: BTreeSet<&str> = BTreeSet::new();
    let mut output_owner: BTreeMap<&str, &str> = BTreeMap::new();
    for stage in &m.stages {
        let mut stage_outputs: BTreeSet<&str> = BTreeSet::new();
        for mname in &stage.modules {
            let Some(i) = iface(mname) else { continue };
            for (vname, var) in &i.variables {
                if var.default.is_some() || stage_outputs.contains(vname.as_str()) {
                    continue;
                }
                match m.variables.get(vname) {
                    Some(def) if !earlier_stage_outputs.contains(vname.as_str()) => {
                        let has_default = m
                            .providers
                            .iter()
                            .all(|p| template.effective_default(*p, vname).is_some());
                        if !(def.required || def.managed || has_default) {
                            problems.push(format!(
                                "module '{mname}' needs variable '{vname}' (no default), but the manifest \
                                 lets it be unset; make it required or give it a default"
                            ));
                        }
                    }
                    Some(_) => {}
                    None if earlier_stage_outputs.contains(vname.as_str()) => {}
                    None => problems.push(format!(
                        "module '{mname}' in stage '{}' needs variable '{vname}' (no default) and nothing \
                         feeds it: add it to the manifest, output it from an earlier module or stage, or \
                         give it a default",
                        stage.name
                    )),
                }
            }
            for out in i.outputs.keys() {
                if let Some(prev) = output_owner.insert(out, mname) {
                    problems.push(format!(
                        "output '{out}' is declared by modules '{prev}' and '{mname}'; root outputs are named \
                         after module outputs, so rename one"
                    ));
                }
                stage_outputs.insert(out);
            }
        }
        earlier_stage_outputs.extend(stage_outputs);
    }

    // 3. Outputs the manifest relies on exist: the ones readiness needs and the ones a kubeconfig is made of.
    for out in &m.required_outputs {
        if !output_owner.contains_key(out.as_str()) {
            problems.push(format!(
                "required output '{out}' is not an output of any module of the template"
            ));
        }
    }
    if let Some(c) = &m.connect {
        for out in [&c.endpoint, &c.certificate_authority] {
            if !output_owner.contains_key(out.as_str()) {
                problems.push(format!(
                    "connect names output '{out}', which no module of the template declares"
                ));
            }
        }
    }
    // The runner installs the agent from these outputs: each must exist, and a bearer token must never be
    // an output that events and logs carry in the clear.
    for (key, out) in m.agent.iter().flat_map(|a| a.runner_outputs()) {
        match modules.values().find_map(|i| i.outputs.get(out)) {
            None => problems.push(format!(
                "agent.{key} names output '{out}', which no module of the template declares"
            )),
            Some(o) if key == "token_output" && !o.sensitive => problems.push(format!(
                "agent.token_output names output '{out}', which is not sensitive; mark it `sensitive = true` \
                 (a token must not reach events or logs)"
            )),
            Some(_) => {}
        }
    }
    problems
}

/// Checks a template against the modules in `modules_dir`; the error lists every problem.
pub fn check_template(template: &Template, modules_dir: &Path) -> Result<(), Error> {
    let interfaces = read_interfaces(template, modules_dir)?;
    let problems = schema_problems(template, &interfaces);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Manifest {
            name: template.name().into(),
            reason: format!("schema disagrees with its modules: {}", problems.join("; ")),
        })
    }
}

/// Template directories under `<templates_root>/catalog`, sorted by name.
pub fn template_dirs(templates_root: &Path) -> Result<Vec<std::path::PathBuf>, Error> {
    let dir = templates_root.join("catalog");
    let io = |source| Error::Io {
        what: dir.display().to_string(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.join(MANIFEST_FILE).is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Parses and checks every template of the catalog (no AWS calls).
pub fn check_catalog(templates_root: &Path) -> Result<Vec<Template>, Error> {
    let modules_dir = templates_root.join("modules");
    template_dirs(templates_root)?
        .into_iter()
        .map(|dir| {
            let path = dir.join(MANIFEST_FILE);
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                what: path.display().to_string(),
                source,
            })?;
            let template = Template::from_toml(&text)?;
            check_template(&template, &modules_dir)?;
            Ok(template)
        })
        .collect()
}

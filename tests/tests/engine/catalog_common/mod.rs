//! Helpers for the catalog tests that run the real engine: a moto server with AWS-managed IAM policies
//! loaded, and a stage root that instantiates catalog modules wired by name the way the runner does.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value, json};
use strato_terraform::modules::ModuleInterface;
use strato_terraform::render::{ProviderDialect, aws_provider_tf_json, strip_write_prefix};
use strato_testbed::{TestEngine, Tools, tools};

pub fn templates_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates")
}

/// The process's moto (the test bed starts it with `MOTO_IAM_LOAD_MANAGED_POLICIES=true`, which the k8s
/// module's AWS-managed policy attachments need).
pub fn moto_endpoint() -> &'static str {
    strato_testbed::shared_moto().endpoint.as_str()
}

pub fn bed() -> &'static Tools {
    tools().unwrap_or_else(|e| panic!("installing the test bed failed: {e}"))
}

/// Runs the engine in `dir`; returns the output whatever the exit code.
pub fn tf_raw(dir: &Path, args: &[&str]) -> Output {
    run_engine(&bed().terraform, bed().engine_env(), dir, args)
}

/// [`tf_raw`] with one engine of the matrix.
pub fn tf_raw_on(engine: &TestEngine, dir: &Path, args: &[&str]) -> Output {
    run_engine(&engine.terraform, engine.engine_env(), dir, args)
}

/// [`tf`] with one engine of the matrix.
pub fn tf_on(engine: &TestEngine, dir: &Path, args: &[&str]) -> Output {
    let out = tf_raw_on(engine, dir, args);
    assert!(
        out.status.success(),
        "terraform {args:?} ({}) failed:\n{}",
        engine.name,
        errors(&out)
    );
    out
}

/// Warnings and deprecations in an engine's output (stdout and stderr), each with the lines saying what it
/// is about, except the one every `init` from a filesystem mirror prints (its lock file lists only this
/// platform's checksums).
pub fn warnings(out: &Output) -> Vec<String> {
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("Warning:") || l.contains("Deprecated"))
        .map(|(i, _)| lines[i..(i + 8).min(lines.len())].join("\n"))
        .filter(|w| !w.contains("Incomplete lock file information for providers"))
        .collect()
}

fn run_engine(terraform: &Path, env: Vec<(String, String)>, dir: &Path, args: &[&str]) -> Output {
    Command::new(terraform)
        .args(args)
        .current_dir(dir)
        .envs(env)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("running the engine")
}

/// The engine's error lines (its debug log is on stderr too).
pub fn errors(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with('[') && !l.starts_with("  ") && !l.trim().is_empty())
        .collect();
    format!("{}\n{}", String::from_utf8_lossy(&out.stdout), lines.join("\n"))
}

pub fn tf(dir: &Path, args: &[&str]) -> Output {
    let out = tf_raw(dir, args);
    assert!(
        out.status.success(),
        "terraform {args:?} failed:\n{}",
        errors(&out)
    );
    out
}

pub fn stdout_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(strip_write_prefix(text.trim())).expect("engine printed JSON")
}

/// A stage root in a temp dir: one `module` block per catalog module, in order, each variable wired by
/// name (an earlier module's output of the same name, else a root variable from `vars`, else the module
/// default) — the runner's composition rule. Local state; the AWS provider points at moto.
pub struct StageRoot {
    pub dir: tempfile::TempDir,
    /// The engine of the matrix (`None`: the bed's, [`tf_raw`]).
    pub engine: Option<TestEngine>,
}

impl StageRoot {
    pub fn new(modules: &[&str], vars: &Value) -> Self {
        Self::build(None, modules, vars)
    }

    /// A stage root run with `engine`, its provider settings in that engine's provider dialect.
    pub fn with_engine(engine: TestEngine, modules: &[&str], vars: &Value) -> Self {
        Self::build(Some(engine), modules, vars)
    }

    fn build(engine: Option<TestEngine>, modules: &[&str], vars: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let vars = vars.as_object().expect("vars is an object");
        let mut module_blocks = Map::new();
        let mut outputs: BTreeMap<String, String> = BTreeMap::new();
        for m in modules {
            let src = templates_root().join("modules").join(m);
            let iface = ModuleInterface::read_dir(&src).unwrap();
            let mut block = Map::new();
            block.insert(
                "source".into(),
                json!(src.canonicalize().unwrap().display().to_string()),
            );
            for name in iface.variables.keys() {
                if let Some(from) = outputs.get(name) {
                    block.insert(name.clone(), json!(format!("${{module.{from}.{name}}}")));
                } else if vars.contains_key(name) {
                    block.insert(name.clone(), json!(format!("${{var.{name}}}")));
                }
            }
            module_blocks.insert((*m).to_owned(), Value::Object(block));
            for out in iface.outputs.keys() {
                outputs.insert(out.clone(), (*m).to_owned());
            }
        }
        let root_vars: Map<String, Value> = vars.keys().map(|k| (k.clone(), json!({}))).collect();
        let root_outputs: Map<String, Value> = outputs
            .iter()
            .map(|(o, m)| (o.clone(), json!({ "value": format!("${{module.{m}.{o}}}") })))
            .collect();
        let mut main = json!({
            "provider": { "aws": { "region": "us-east-1" } },
            "module": module_blocks,
            "output": root_outputs,
        });
        if !root_vars.is_empty() {
            main["variable"] = Value::Object(root_vars);
        }
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        write("main.tf.json", serde_json::to_string_pretty(&main).unwrap());
        write(
            "terraform.tfvars.json",
            serde_json::to_string_pretty(vars).unwrap(),
        );
        let dialect = engine
            .as_ref()
            .and_then(|e| ProviderDialect::for_version(&e.provider_version))
            .unwrap_or(ProviderDialect::Legacy);
        write(
            "strato_provider_override.tf.json",
            aws_provider_tf_json(moto_endpoint(), dialect).unwrap(),
        );
        Self { dir, engine }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs the stage root's engine; returns the output whatever the exit code.
    pub fn run_raw(&self, args: &[&str]) -> Output {
        match &self.engine {
            Some(e) => tf_raw_on(e, self.path(), args),
            None => tf_raw(self.path(), args),
        }
    }

    /// Runs the stage root's engine; panics on failure.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.run_raw(args);
        assert!(
            out.status.success(),
            "terraform {args:?} failed:\n{}",
            errors(&out)
        );
        out
    }

    pub fn init(&self) -> Output {
        self.run(&["init", "-input=false", "-no-color"])
    }

    /// `plan -out` then `show -json` of the saved plan, as the runner does before apply.
    pub fn plan_json(&self) -> Value {
        self.run(&["plan", "-input=false", "-no-color", "-out=strato.tfplan"]);
        stdout_json(&self.run(&["show", "-json", "strato.tfplan"]))
    }
}

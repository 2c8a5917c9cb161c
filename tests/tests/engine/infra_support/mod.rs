//! Support for the infra tests: the example root copied beside the modules, the modern engine run on it, and
//! the APPLIED state (`terraform show -json`) read back as a list of resources with their real values, on
//! which `checks` compares infra/ with the code and `iam` evaluates the policies against each function's
//! AWS_CALLS list.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use strato_testbed::ModernEngine;

pub mod checks;
pub mod console;
pub mod data_checks;
pub mod iam;
pub mod issuer;
pub mod observability;
pub mod permissions_checks;
pub mod runner_checks;
pub mod sessions;

pub const PREFIX: &str = "strato-check";
pub const REGION: &str = "eu-west-1";
/// moto's account.
pub const ACCOUNT: &str = "123456789012";
/// The functions, by their logical names (`{prefix}-{logical}`; zips in `strato-{logical}/bootstrap.zip`).
pub const FUNCTIONS: [&str; 7] = [
    "api",
    "dispatcher",
    "status",
    "ws",
    "log-fanout",
    "scheduler",
    "webhooks",
];

/// Where runners start: subnets and security groups that exist in the emulator (moto's RunTask checks them).
pub struct Network {
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
}

/// Values for the example root's variables without a default (a new required variable needs one here).
pub fn sample_variables(lambda_zip_dir: &Path, network: &Network) -> Value {
    json!({
        "prefix": PREFIX,
        "region": REGION,
        "jwt_issuer": "https://issuer.example.com/",
        "jwt_audience": ["strato"],
        "ws_jwt_secret": "ws-secret-0123456789abcdef-0123456789",
        "run_proof_secret": "0123456789abcdef0123456789abcdef",
        "agent_token_secret": "agent-secret",
        "runner_subnets": network.subnets,
        "runner_security_groups": network.security_groups,
        "target_role_arns": ["arn:aws:iam::*:role/strato-target"],
        "disposable": true,
        "lambda_zip_dir": lambda_zip_dir.display().to_string(),
    })
}

pub fn infra_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .join("infra")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        // The engine's working files of someone's local run are not part of the configuration.
        if name.to_string_lossy().starts_with(".terraform") || name.to_string_lossy().ends_with(".tfstate") {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(&name));
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// A copy of infra/ (modules and example root) in a temporary directory; the engine runs in `<copy>/example`.
pub fn infra_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&infra_dir(), dir.path());
    dir
}

/// Runs the engine in `dir`; panics with its error lines unless the exit code is one of `ok_codes`.
pub fn tf(
    engine: &ModernEngine,
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    ok_codes: &[i32],
) -> Output {
    let started = std::time::Instant::now();
    let out = Command::new(&engine.terraform)
        .args(args)
        .current_dir(dir)
        .envs(engine.engine_env())
        .envs(env.iter().copied())
        .output()
        .expect("running the engine");
    // Where an engine test's minutes go, command by command (CI's slowest-tests list names only the test).
    eprintln!(
        "terraform {} took {:.1?}",
        args.first().unwrap_or(&""),
        started.elapsed()
    );
    if !ok_codes.contains(&out.status.code().unwrap_or(-1)) {
        panic!(
            "terraform {args:?} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// One resource instance of the applied state.
#[derive(Debug, Clone)]
pub struct StateRes {
    pub address: String,
    pub kind: String,
    /// The `for_each` key or `count` index, as a string ("" for none).
    pub key: String,
    pub values: Value,
}

impl StateRes {
    pub fn s(&self, attr: &str) -> &str {
        self.values[attr].as_str().unwrap_or("")
    }
    /// The first element of a nested block (`block[0]`), `Null` when absent.
    pub fn block(&self, name: &str) -> &Value {
        first(&self.values[name])
    }
}

pub fn first(v: &Value) -> &Value {
    v.as_array().and_then(|a| a.first()).unwrap_or(&Value::Null)
}

/// The managed resources of `terraform show -json` output, from every module.
pub struct State {
    pub resources: Vec<StateRes>,
}

impl State {
    /// From `terraform show -json` of a state (`values`) or a saved plan (`planned_values`).
    pub fn parse(show_json: &[u8], root: &str) -> Self {
        let doc: Value = serde_json::from_slice(show_json).expect("terraform show -json prints JSON");
        Self::from_module(&doc[root]["root_module"])
    }

    pub fn from_module(root: &Value) -> Self {
        let mut resources = Vec::new();
        fn walk(m: &Value, out: &mut Vec<StateRes>) {
            for r in m["resources"].as_array().into_iter().flatten() {
                if r["mode"] != "managed" {
                    continue;
                }
                let key = match &r["index"] {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => String::new(),
                };
                out.push(StateRes {
                    address: r["address"].as_str().unwrap().to_owned(),
                    kind: r["type"].as_str().unwrap().to_owned(),
                    key,
                    values: r["values"].clone(),
                });
            }
            for c in m["child_modules"].as_array().into_iter().flatten() {
                walk(c, out);
            }
        }
        walk(root, &mut resources);
        Self { resources }
    }

    pub fn all<'a>(&'a self, kind: &str) -> impl Iterator<Item = &'a StateRes> + use<'a> {
        let kind = kind.to_owned();
        self.resources.iter().filter(move |r| r.kind == kind)
    }

    /// The one resource of `kind` whose attribute `attr` is `value`.
    pub fn by(&self, kind: &str, attr: &str, value: &str) -> &StateRes {
        let found: Vec<&StateRes> = self.all(kind).filter(|r| r.s(attr) == value).collect();
        assert_eq!(
            found.len(),
            1,
            "one {kind} with {attr} = {value:?}, found {}",
            found.len()
        );
        found[0]
    }

    pub fn arn_of(&self, kind: &str, attr: &str, value: &str) -> String {
        self.by(kind, attr, value).s("arn").to_owned()
    }
}

/// A JSON document held in a string attribute (policies, patterns, container definitions).
pub fn json_attr(r: &StateRes, attr: &str) -> Value {
    serde_json::from_str(r.s(attr)).unwrap_or_else(|e| panic!("{}.{attr} is not JSON: {e}", r.address))
}

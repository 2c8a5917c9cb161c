//! A small evaluator for `infra/*.tf` (used by infra_check.rs): hcl-rs parses the files; `var` holds sample
//! values or defaults, `local` and `for_each` keys are evaluated until nothing more resolves, and every
//! resource attribute evaluates to a `<type.label.attr>` placeholder. The few Terraform functions the checked
//! expressions use are implemented on hcl values — enough for this configuration, not a general Terraform.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub mod iam;

use hcl::eval::{Context, Evaluate, FuncArgs, FuncDef, ParamType};
use hcl::{Block, Body, Expression, Value};

pub const PREFIX: &str = "strato-check";

/// Values for the variables without a default (a new required variable needs one here).
pub fn sample_variables() -> BTreeMap<&'static str, serde_json::Value> {
    use serde_json::json;
    BTreeMap::from([
        ("prefix", json!(PREFIX)),
        ("region", json!("eu-west-1")),
        ("jwt_issuer", json!("https://issuer.example.com/")),
        ("jwt_audience", json!(["strato"])),
        ("ws_jwt_secret", json!("ws-secret-0123456789abcdef-0123456789")),
        ("run_proof_secret", json!("0123456789abcdef0123456789abcdef")),
        ("agent_token_secret", json!("agent-secret")),
        (
            "runner_image",
            json!("123456789012.dkr.ecr.eu-west-1.amazonaws.com/strato-runner:1"),
        ),
        ("runner_subnets", json!(["subnet-1", "subnet-2"])),
        ("runner_security_groups", json!(["sg-1"])),
        ("target_role_arns", json!(["arn:aws:iam::*:role/strato-target"])),
    ])
}

pub fn infra_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .join("infra")
}

pub fn tf_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(infra_dir())
        .expect("infra/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tf"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .tf files in infra/");
    files
}

// ---- a small evaluator for the configuration ------------------------------------------------------------

/// A `resource` or `data` block.
pub struct Res {
    pub data: bool,
    pub kind: String,
    pub label: String,
    pub body: Body,
}

impl Res {
    pub fn attr(&self, key: &str) -> Option<&Expression> {
        attr(&self.body, key)
    }

    pub fn addr(&self) -> String {
        let data = if self.data { "data." } else { "" };
        format!("{data}{}.{}", self.kind, self.label)
    }
}

pub fn attr<'a>(body: &'a Body, key: &str) -> Option<&'a Expression> {
    body.attributes().find(|a| a.key() == key).map(|a| a.expr())
}

pub fn blocks<'a>(body: &'a Body, ident: &'a str) -> impl Iterator<Item = &'a Block> + 'a {
    body.blocks().filter(move |b| b.identifier() == ident)
}

/// Attributes a resource reference may use; each evaluates to a placeholder naming the resource.
pub const PLACEHOLDER_ATTRS: &[&str] = &[
    "arn",
    "id",
    "name",
    "url",
    "bucket",
    "family",
    "function_name",
    "invoke_arn",
    "execution_arn",
    "api_endpoint",
    "account_id",
    "partition",
];

pub fn placeholders(addr: &str) -> Value {
    Value::Object(
        PLACEHOLDER_ATTRS
            .iter()
            .map(|a| ((*a).to_owned(), Value::String(format!("<{addr}.{a}>"))))
            .collect(),
    )
}

/// The configuration with `var`, `local`, `data` and every resource declared, as far as they evaluate.
pub struct Config {
    pub resources: Vec<Res>,
    pub ctx: Context<'static>,
    /// Locals that did not evaluate (they use functions or attributes the evaluator does not provide).
    pub unresolved_locals: Vec<String>,
}

impl Config {
    pub fn load() -> Self {
        let mut resources = Vec::new();
        let mut variables = hcl::Map::new();
        let mut locals: Vec<(String, Expression)> = Vec::new();
        let samples = sample_variables();
        for file in tf_files() {
            let text = std::fs::read_to_string(&file).unwrap();
            let body = hcl::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for block in body.blocks() {
                let labels: Vec<String> = block.labels().iter().map(|l| l.as_str().to_owned()).collect();
                match block.identifier() {
                    "resource" | "data" => resources.push(Res {
                        data: block.identifier() == "data",
                        kind: labels[0].clone(),
                        label: labels[1].clone(),
                        body: block.body().clone(),
                    }),
                    "variable" => {
                        let name = labels[0].clone();
                        let value = match (samples.get(name.as_str()), attr(block.body(), "default")) {
                            (Some(sample), _) => hcl::to_value(sample).unwrap(),
                            (None, Some(default)) => default
                                .evaluate(&Context::new())
                                .unwrap_or_else(|e| panic!("variable {name}: default: {e}")),
                            (None, None) => panic!(
                                "variable '{name}' has no default: add a sample value to sample_variables()"
                            ),
                        };
                        variables.insert(name, value);
                    }
                    "locals" => locals.extend(
                        block
                            .body()
                            .attributes()
                            .map(|a| (a.key().to_owned(), a.expr().clone())),
                    ),
                    _ => {}
                }
            }
        }
        for name in samples.keys() {
            assert!(
                variables.contains_key(*name),
                "sample for undeclared variable {name}"
            );
        }

        // Locals and for_each keys may depend on each other: evaluate until nothing more resolves.
        let mut local_values = hcl::Map::new();
        let mut resolved: BTreeMap<String, Value> = BTreeMap::new(); // resource address → value
        loop {
            let ctx = context(&variables, &local_values, &resources, &resolved);
            let mut progress = false;
            for (name, expr) in &locals {
                if !local_values.contains_key(name)
                    && let Ok(v) = expr.evaluate(&ctx)
                {
                    local_values.insert(name.clone(), v);
                    progress = true;
                }
            }
            for r in &resources {
                if resolved.contains_key(&r.addr()) {
                    continue;
                }
                let value = if let Some(for_each) = r.attr("for_each") {
                    for_each.evaluate(&ctx).ok().map(|keys| {
                        Value::Object(
                            instance_keys(&keys)
                                .into_iter()
                                .map(|k| {
                                    let ph = placeholders(&format!("{}[{k}]", r.addr()));
                                    (k, ph)
                                })
                                .collect(),
                        )
                    })
                } else if let Some(count) = r.attr("count") {
                    count.evaluate(&ctx).ok().map(|n| {
                        let n = n.as_u64().unwrap_or_else(|| panic!("{}: count {n:?}", r.addr()));
                        Value::Array(
                            (0..n)
                                .map(|i| placeholders(&format!("{}[{i}]", r.addr())))
                                .collect(),
                        )
                    })
                } else {
                    Some(placeholders(&r.addr()))
                };
                if let Some(v) = value {
                    resolved.insert(r.addr(), v);
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        let unresolved_locals = locals
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| !local_values.contains_key(n))
            .collect();
        let ctx = context(&variables, &local_values, &resources, &resolved);
        Self {
            resources,
            ctx,
            unresolved_locals,
        }
    }

    pub fn all<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Res> + 'a {
        self.resources.iter().filter(move |r| !r.data && r.kind == kind)
    }

    pub fn get(&self, kind: &str, label: &str) -> &Res {
        self.resources
            .iter()
            .find(|r| !r.data && r.kind == kind && r.label == label)
            .unwrap_or_else(|| panic!("infra/ declares no {kind}.{label}"))
    }

    pub fn eval(&self, r: &Res, what: &str, expr: &Expression) -> Value {
        expr.evaluate(&self.ctx)
            .unwrap_or_else(|e| panic!("{}.{what}: cannot evaluate {expr}: {e}", r.addr()))
    }

    pub fn eval_attr(&self, r: &Res, key: &str) -> Value {
        let expr = r.attr(key).unwrap_or_else(|| panic!("{} has no {key}", r.addr()));
        self.eval(r, key, expr)
    }

    /// One context per `for_each` instance: `each.key` / `each.value` declared.
    pub fn instances(&self, r: &Res) -> Vec<(String, Context<'static>)> {
        let for_each = r
            .attr("for_each")
            .unwrap_or_else(|| panic!("{} has no for_each", r.addr()));
        let keys = self.eval(r, "for_each", for_each);
        let entries: Vec<(String, Value)> = match &keys {
            Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Value::Array(a) => a.iter().map(|v| (as_string(v), v.clone())).collect(),
            other => panic!("{}: for_each is {other:?}", r.addr()),
        };
        entries
            .into_iter()
            .map(|(k, v)| {
                let mut ctx = self.ctx.clone();
                let mut each = hcl::Map::new();
                each.insert("key".to_owned(), Value::String(k.clone()));
                each.insert("value".to_owned(), v);
                ctx.declare_var("each", Value::Object(each));
                (k, ctx)
            })
            .collect()
    }
}

pub fn instance_keys(v: &Value) -> Vec<String> {
    match v {
        Value::Object(m) => m.keys().cloned().collect(),
        Value::Array(a) => a.iter().map(as_string).collect(),
        other => panic!("for_each is {other:?}"),
    }
}

pub fn context(
    variables: &hcl::Map<String, Value>,
    locals: &hcl::Map<String, Value>,
    resources: &[Res],
    resolved: &BTreeMap<String, Value>,
) -> Context<'static> {
    let mut ctx = Context::new();
    ctx.declare_var("var", Value::Object(variables.clone()));
    ctx.declare_var("local", Value::Object(locals.clone()));
    let mut by_kind: BTreeMap<(bool, &str), hcl::Map<String, Value>> = BTreeMap::new();
    for r in resources {
        if let Some(v) = resolved.get(&r.addr()) {
            by_kind
                .entry((r.data, &r.kind))
                .or_default()
                .insert(r.label.clone(), v.clone());
        }
    }
    let mut data = hcl::Map::new();
    for ((is_data, kind), labels) in by_kind {
        if is_data {
            data.insert(kind.to_owned(), Value::Object(labels));
        } else {
            ctx.declare_var(kind, Value::Object(labels));
        }
    }
    ctx.declare_var("data", Value::Object(data));
    let variadic = |f| FuncDef::builder().variadic_param(ParamType::Any).build(f);
    ctx.declare_func("jsonencode", variadic(jsonencode));
    ctx.declare_func("join", variadic(join));
    ctx.declare_func("merge", variadic(merge));
    ctx.declare_func("concat", variadic(concat));
    ctx.declare_func("flatten", variadic(flatten));
    ctx.declare_func("title", variadic(title));
    ctx.declare_func("toset", variadic(toset));
    ctx.declare_func("nonsensitive", variadic(identity));
    ctx.declare_func("tostring", variadic(tostring));
    ctx.declare_func("length", variadic(length));
    ctx
}

// Terraform functions the checked expressions use, on hcl values (enough for this configuration, not a
// general implementation).

pub fn one(args: &FuncArgs) -> Result<&Value, String> {
    match args.as_slice() {
        [v] => Ok(v),
        _ => Err(format!("expected one argument, got {}", args.len())),
    }
}

pub fn jsonencode(args: FuncArgs) -> Result<Value, String> {
    serde_json::to_string(one(&args)?)
        .map(Value::String)
        .map_err(|e| e.to_string())
}

pub fn join(args: FuncArgs) -> Result<Value, String> {
    match args.as_slice() {
        [Value::String(sep), Value::Array(items)] => Ok(Value::String(
            items.iter().map(as_string).collect::<Vec<_>>().join(sep),
        )),
        other => Err(format!("join({other:?})")),
    }
}

pub fn merge(args: FuncArgs) -> Result<Value, String> {
    let mut out = hcl::Map::new();
    for a in args.iter() {
        match a {
            Value::Object(m) => out.extend(m.clone()),
            other => return Err(format!("merge of {other:?}")),
        }
    }
    Ok(Value::Object(out))
}

pub fn concat(args: FuncArgs) -> Result<Value, String> {
    let mut out = Vec::new();
    for a in args.iter() {
        match a {
            Value::Array(items) => out.extend(items.iter().cloned()),
            other => return Err(format!("concat of {other:?}")),
        }
    }
    Ok(Value::Array(out))
}

pub fn flatten(args: FuncArgs) -> Result<Value, String> {
    pub fn walk(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            other => out.push(other.clone()),
        }
    }
    let mut out = Vec::new();
    walk(one(&args)?, &mut out);
    Ok(Value::Array(out))
}

pub fn title(args: FuncArgs) -> Result<Value, String> {
    let s = as_string(one(&args)?);
    let mut out = String::new();
    let mut start = true;
    for c in s.chars() {
        out.extend(if start {
            c.to_uppercase().collect::<Vec<_>>()
        } else {
            vec![c]
        });
        start = !c.is_alphanumeric();
    }
    Ok(Value::String(out))
}

pub fn toset(args: FuncArgs) -> Result<Value, String> {
    match one(&args)? {
        Value::Array(items) => {
            let set: BTreeSet<String> = items.iter().map(as_string).collect();
            Ok(Value::Array(set.into_iter().map(Value::String).collect()))
        }
        other => Err(format!("toset({other:?})")),
    }
}

pub fn tostring(args: FuncArgs) -> Result<Value, String> {
    Ok(Value::String(as_string(one(&args)?)))
}

pub fn length(args: FuncArgs) -> Result<Value, String> {
    match one(&args)? {
        Value::Array(a) => Ok(Value::from(a.len() as u64)),
        Value::Object(m) => Ok(Value::from(m.len() as u64)),
        Value::String(s) => Ok(Value::from(s.chars().count() as u64)),
        other => Err(format!("length({other:?})")),
    }
}

pub fn identity(args: FuncArgs) -> Result<Value, String> {
    one(&args).cloned()
}

/// A primitive as Terraform converts it to a string (environment values, keys).
pub fn as_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => panic!("{other:?} is not a primitive"),
    }
}

pub fn string_map(v: &Value) -> BTreeMap<String, String> {
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), as_string(v))).collect(),
        other => panic!("{other:?} is not a map"),
    }
}

pub fn json(v: &Value) -> serde_json::Value {
    serde_json::from_str(&as_string(v)).unwrap_or_else(|e| panic!("{v:?} is not JSON: {e}"))
}

pub fn nested<'a>(r: &'a Res, ident: &'a str) -> Vec<&'a Body> {
    blocks(&r.body, ident).map(|b| b.body()).collect()
}

/// `<aws_sqs_queue.jobs_dlq.arn>` → `jobs_dlq`: the resource a placeholder names (`kind` checked).
pub fn placeholder_label(kind: &str, placeholder: &str, attr: &str) -> String {
    placeholder
        .strip_prefix(&format!("<{kind}."))
        .and_then(|s| s.strip_suffix(&format!(".{attr}>")))
        .unwrap_or_else(|| panic!("{placeholder:?} is not a reference to a {kind}'s {attr}"))
        .to_owned()
}

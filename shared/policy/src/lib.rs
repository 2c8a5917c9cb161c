//! Policy as code (issue 22): Rego v1 policies evaluated in-process with `regorus`, no OPA server.
//!
//! A policy is one Rego module in one of two packages:
//! - `strato.request`: evaluated by the api on create / update / delete, before anything is written; its input
//!   is a [`request`](RequestInput) document (action, tenant, principal, template, region, variables, tags…);
//! - `strato.plan`: evaluated by the runner after plan and estimate, before apply; its input is
//!   `{"plan": <terraform show -json>, "estimate": <the cost estimate>, …}`.
//!
//! Each defines `deny contains msg if {…}` and/or `warn contains msg if {…}`. A deny stops the request (422) or
//! the operation (a user error at step `policy`); a warn becomes a note. Every message names its policy. The
//! policy set's [version](PolicySet::version) (a hash of every name and source) is recorded on the operation.
//!
//! Platform policies ship with the catalog (`templates/policies/*.rego`, compiled in: see [`platform`]);
//! tenants add theirs through the API (`PUT /v1/policies/{name}`), compile-checked with [`check`].

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use regorus::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub mod input;
pub use input::{PlanInput, RequestInput};

/// The largest accepted policy source: policies are a few rules; more is a mistake.
pub const MAX_SOURCE_BYTES: usize = 32 * 1024;
/// The most policies a tenant may have (every request evaluates them all).
pub const MAX_TENANT_POLICIES: usize = 50;
/// How long one policy may run on one input: a runaway comprehension must not hold a Lambda.
const EVAL_LIMIT: Duration = Duration::from_millis(500);

/// Compiled policy sets a process keeps ([`PolicySet::cached_with_platform`]).
pub const CACHED_SETS: usize = 256;

/// Stack of the thread policies are evaluated on (reserved address space; only what is used is committed).
pub const EVAL_STACK: usize = 64 * 1024 * 1024;

/// Where a policy applies, from its package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Request,
    Plan,
}

impl Stage {
    pub const fn package(self) -> &'static str {
        match self {
            Stage::Request => "strato.request",
            Stage::Plan => "strato.plan",
        }
    }

    fn from_package(data_path: &str) -> Option<Self> {
        match data_path.strip_prefix("data.")? {
            "strato.request" => Some(Stage::Request),
            "strato.plan" => Some(Stage::Plan),
            _ => None,
        }
    }
}

/// One policy's source, as stored or shipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// `platform/<file stem>` for the shipped ones, `operator/<name>` for those the platform operator set
    /// for one tenant, `tenant/<name>` for a tenant's own.
    pub name: String,
    pub source: String,
}

impl Policy {
    pub fn tenant(name: &str, source: impl Into<String>) -> Self {
        Self {
            name: format!("tenant/{name}"),
            source: source.into(),
        }
    }

    /// One the platform operator set for a tenant (the tenant cannot change it).
    pub fn operator(name: &str, source: impl Into<String>) -> Self {
        Self {
            name: format!("operator/{name}"),
            source: source.into(),
        }
    }

    /// A tenant's stored policies — the operator's for it, then its own — as they are evaluated.
    pub fn stored<'a>(
        operator: impl IntoIterator<Item = (&'a String, &'a String)>,
        tenant: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Vec<Self> {
        let operator = operator.into_iter().map(|(n, s)| Self::operator(n, s.clone()));
        operator
            .chain(tenant.into_iter().map(|(n, s)| Self::tenant(n, s.clone())))
            .collect()
    }
}

/// One message of one rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The policy's name (`platform/regions`, `tenant/tags`).
    pub policy: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.policy, self.message)
    }
}

/// The outcome of evaluating a policy set on one input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub deny: Vec<Finding>,
    pub warn: Vec<Finding>,
    /// The [`PolicySet::version`] that decided.
    pub version: String,
}

impl Verdict {
    pub fn denied(&self) -> bool {
        !self.deny.is_empty()
    }

    /// Passes every message through `redact` (the caller's redactor of sensitive values): a policy's message
    /// becomes an error, a note or an event any viewer of the cluster reads, and a policy may try to print
    /// what it saw.
    pub fn redact_messages(&mut self, redact: impl Fn(&str) -> String) {
        for f in self.deny.iter_mut().chain(self.warn.iter_mut()) {
            f.message = redact(&f.message);
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("policy name '{0}' is invalid: use 1-63 characters a-z, 0-9 and '-', starting with a letter")]
    Name(String),
    #[error("policy '{name}' is {size} bytes; at most {MAX_SOURCE_BYTES} are accepted")]
    TooLarge { name: String, size: usize },
    #[error("policy '{name}' does not compile: {reason}")]
    Compile { name: String, reason: String },
    #[error(
        "policy '{name}' declares package '{package}'; use `package strato.request` (checked on create, update and \
         delete) or `package strato.plan` (checked on the plan, before apply)"
    )]
    Package { name: String, package: String },
}

/// Checks a tenant policy name (the `{name}` of `/v1/policies/{name}`).
pub fn check_name(name: &str) -> Result<(), PolicyError> {
    let ok = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(PolicyError::Name(name.to_owned()))
    }
}

/// Compile-checks one policy (size, syntax, package, and a trial evaluation on an empty input, which is where
/// regorus reports unknown references and builtins); the stage it applies to.
pub fn check(policy: &Policy) -> Result<Stage, PolicyError> {
    let compiled = Compiled::new(policy)?;
    let mut engine = compiled.engine.clone();
    engine.set_input(regorus::Value::new_object());
    for rule in ["deny", "warn"] {
        query(&mut engine, compiled.stage, rule).map_err(|reason| PolicyError::Compile {
            name: policy.name.clone(),
            reason,
        })?;
    }
    Ok(compiled.stage)
}

/// The platform's policies, shipped with the catalog in `templates/policies` and compiled into this crate so
/// the api and the runner always agree on them.
pub fn platform() -> Vec<Policy> {
    PLATFORM
        .iter()
        .map(|(name, source)| Policy {
            name: format!("platform/{name}"),
            source: (*source).to_owned(),
        })
        .collect()
}

const PLATFORM: &[(&str, &str)] = &[
    (
        "regions",
        include_str!("../../../templates/policies/regions.rego"),
    ),
    (
        "node-limits",
        include_str!("../../../templates/policies/node-limits.rego"),
    ),
    ("tags", include_str!("../../../templates/policies/tags.rego")),
    (
        "public-buckets",
        include_str!("../../../templates/policies/public-buckets.rego"),
    ),
    (
        "instance-families",
        include_str!("../../../templates/policies/instance-families.rego"),
    ),
    (
        "monthly-cost",
        include_str!("../../../templates/policies/monthly-cost.rego"),
    ),
];

struct Compiled {
    name: String,
    stage: Stage,
    engine: Engine,
}

impl Compiled {
    fn new(policy: &Policy) -> Result<Self, PolicyError> {
        if policy.source.len() > MAX_SOURCE_BYTES {
            return Err(PolicyError::TooLarge {
                name: policy.name.clone(),
                size: policy.source.len(),
            });
        }
        let mut engine = Engine::new();
        engine.set_execution_timer_config(regorus::utils::limits::ExecutionTimerConfig {
            limit: EVAL_LIMIT,
            check_interval: NonZeroU32::new(64).expect("non-zero"),
        });
        let package = engine
            .add_policy(format!("{}.rego", policy.name), policy.source.clone())
            .map_err(|e| PolicyError::Compile {
                name: policy.name.clone(),
                reason: e.to_string(),
            })?;
        let stage = Stage::from_package(&package).ok_or_else(|| PolicyError::Package {
            name: policy.name.clone(),
            package: package.trim_start_matches("data.").to_owned(),
        })?;
        // regorus prepares an engine (analysis, rule gathering, loop hoisting) on its first query, and a
        // clone of an unprepared engine prepares again: every evaluation, which clones, did it anew — most of
        // the api's CPU per create. A trivial query prepares it once here, and the clones share the result.
        // A policy that fails to prepare is left unprepared: its evaluation reports the error, as before.
        let _ = engine.eval_query("true".to_owned(), false);
        Ok(Self {
            name: policy.name.clone(),
            stage,
            engine,
        })
    }
}

/// A compiled set of policies (the platform's and a tenant's), evaluated per stage.
pub struct PolicySet {
    policies: Vec<Compiled>,
    version: String,
}

impl std::fmt::Debug for PolicySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicySet")
            .field(
                "policies",
                &self.policies.iter().map(|p| &p.name).collect::<Vec<_>>(),
            )
            .field("version", &self.version)
            .finish()
    }
}

impl PolicySet {
    /// Compiles `policies`; the first that does not compile is the error (a stored tenant policy was checked
    /// on PUT, so this is a regorus upgrade or a shipped policy broken — both caught by tests).
    pub fn compile(policies: &[Policy]) -> Result<Self, PolicyError> {
        let compiled = policies
            .iter()
            .map(Compiled::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            policies: compiled,
            version: version(policies),
        })
    }

    /// The platform's policies and the tenant's.
    pub fn with_platform(tenant: &[Policy]) -> Result<Self, PolicyError> {
        let mut all = platform();
        all.extend_from_slice(tenant);
        Self::compile(&all)
    }

    /// [`with_platform`](Self::with_platform), compiled once per process for each distinct set (keyed by its
    /// version, a hash of every name and source): a warm api compiles a tenant's policies on the first request
    /// after they change, not on every request. At most [`CACHED_SETS`] are kept; past that it starts afresh.
    pub fn cached_with_platform(tenant: &[Policy]) -> Result<Arc<Self>, PolicyError> {
        static CACHE: OnceLock<Mutex<HashMap<String, Arc<PolicySet>>>> = OnceLock::new();
        let mut all = platform();
        all.extend_from_slice(tenant);
        let key = version(&all);
        let cache = CACHE.get_or_init(Default::default);
        if let Some(set) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Ok(set);
        }
        let set = Arc::new(Self::compile(&all)?);
        if let Ok(mut c) = cache.lock() {
            if c.len() >= CACHED_SETS {
                c.clear();
            }
            c.insert(key, set.clone());
        }
        Ok(set)
    }

    /// `sha256:` and 16 hex digits of a hash of every policy's name and source, in name order: the same set
    /// gives the same version wherever it is evaluated.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether any policy applies at `stage`.
    pub fn has(&self, stage: Stage) -> bool {
        self.policies.iter().any(|p| p.stage == stage)
    }

    /// Evaluates every policy of `stage` on `input`. A policy that fails to evaluate (a runtime error, over its
    /// time limit) denies: a broken guard must not let everything through.
    ///
    /// The interpreter recurses with the depth of the input (a plan's JSON is deep): it runs on a thread of
    /// its own with [`EVAL_STACK`] bytes of stack, as async runtimes' worker threads have 2 MiB and an
    /// overflow is an abort, not an error.
    pub fn evaluate(&self, stage: Stage, input: &serde_json::Value) -> Verdict {
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("strato-policy".into())
                .stack_size(EVAL_STACK)
                .spawn_scoped(s, || self.evaluate_here(stage, input))
                .map_err(|e| e.to_string())
                .and_then(|h| h.join().map_err(|_| "the evaluator panicked".to_owned()))
        })
        .unwrap_or_else(|e| Verdict {
            version: self.version.clone(),
            deny: vec![Finding {
                policy: "strato".into(),
                message: format!("the policies could not be evaluated: {e}"),
            }],
            ..Verdict::default()
        })
    }

    fn evaluate_here(&self, stage: Stage, input: &serde_json::Value) -> Verdict {
        let mut verdict = Verdict {
            version: self.version.clone(),
            ..Verdict::default()
        };
        let value = match regorus::Value::from_json_str(&input.to_string()) {
            Ok(v) => v,
            Err(e) => {
                verdict.deny.push(Finding {
                    policy: "strato".into(),
                    message: format!("the policy input could not be read: {e}"),
                });
                return verdict;
            }
        };
        for policy in self.policies.iter().filter(|p| p.stage == stage) {
            let mut engine = policy.engine.clone();
            engine.set_input(value.clone());
            for rule in ["deny", "warn"] {
                match query(&mut engine, stage, rule) {
                    Ok(messages) => {
                        let out = if rule == "deny" {
                            &mut verdict.deny
                        } else {
                            &mut verdict.warn
                        };
                        out.extend(messages.into_iter().map(|message| Finding {
                            policy: policy.name.clone(),
                            message,
                        }))
                    }
                    Err(e) => verdict.deny.push(Finding {
                        policy: policy.name.clone(),
                        message: format!("the policy failed to evaluate its `{rule}` rules: {e}"),
                    }),
                }
            }
        }
        verdict
    }
}

/// The messages of `data.<package>.<rule>` (a set of strings, or of objects with a `msg`), sorted.
fn query(engine: &mut Engine, stage: Stage, rule: &str) -> Result<Vec<String>, String> {
    let results = engine
        .eval_query(format!("data.{}.{rule}", stage.package()), false)
        .map_err(|e| e.to_string())?;
    let Some(value) = results
        .result
        .first()
        .and_then(|r| r.expressions.first())
        .map(|e| e.value.clone())
    else {
        return Ok(Vec::new());
    };
    let items: Vec<regorus::Value> = match &value {
        regorus::Value::Undefined | regorus::Value::Null => return Ok(Vec::new()),
        regorus::Value::Set(s) => s.iter().cloned().collect(),
        regorus::Value::Array(a) => a.iter().cloned().collect(),
        other => {
            return Err(format!(
                "`{rule}` must be a set of messages (`{rule} contains msg if {{...}}`), not {other}"
            ));
        }
    };
    let mut messages: Vec<String> = items.iter().map(message).collect();
    messages.sort();
    Ok(messages)
}

fn message(v: &regorus::Value) -> String {
    if let Ok(s) = v.as_string() {
        return s.to_string();
    }
    if let regorus::Value::Object(o) = v
        && let Some(m) = o.get(&regorus::Value::from("msg"))
        && let Ok(s) = m.as_string()
    {
        return s.to_string();
    }
    v.to_json_str().unwrap_or_else(|_| format!("{v}"))
}

fn version(policies: &[Policy]) -> String {
    let mut sorted: Vec<&Policy> = policies.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut h = Sha256::new();
    for p in sorted {
        h.update(p.name.as_bytes());
        h.update([0]);
        h.update(p.source.as_bytes());
        h.update([0]);
    }
    format!("sha256:{}", &hex::encode(h.finalize())[..16])
}

#[cfg(test)]
mod tests;

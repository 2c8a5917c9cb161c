//! What clients see of clusters, operations and templates. Views are built field by field so internal
//! attributes (fencing tokens, task ARNs, agent token hashes, index keys) never leak, and sensitive
//! variable values and a target account's external id are masked.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};
use strato_aws::store::Store;
use strato_domain::model::{
    Cluster, ClusterSpec, DEFAULT_DRIFT_INTERVAL_SECS, Operation, OperationStatus, TemplateRef,
};
use strato_domain::template::Template;
use strato_domain::ts;

use crate::{ApiError, target};

pub const MASK: &str = "(sensitive)";

/// The wire name of a status (`queued`, `running`…), for messages.
pub(crate) fn status_name(s: OperationStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{s:?}"))
}

/// Templates read during one request, so a listing loads each version once.
pub(crate) struct TemplateCache<'a> {
    store: &'a Store,
    loaded: HashMap<(String, String), Option<Template>>,
}

impl<'a> TemplateCache<'a> {
    pub fn new(store: &'a Store) -> Self {
        Self {
            store,
            loaded: HashMap::new(),
        }
    }

    pub async fn get(&mut self, r: &TemplateRef) -> Result<Option<&Template>, ApiError> {
        let key = (r.name.clone(), r.version.clone());
        if !self.loaded.contains_key(&key) {
            let t = self
                .store
                .get_template(&r.name, &r.version)
                .await?
                .map(|s| s.template);
            self.loaded.insert(key.clone(), t);
        }
        Ok(self.loaded.get(&key).and_then(Option::as_ref))
    }

    /// Names of the sensitive variables of the spec's template; `None` if the template is gone, in which
    /// case every value is masked (fail closed).
    pub async fn sensitive(&mut self, spec: &ClusterSpec) -> Result<Option<BTreeSet<String>>, ApiError> {
        Ok(self.get(&spec.template).await?.map(sensitive_of))
    }
}

pub(crate) fn sensitive_of(t: &Template) -> BTreeSet<String> {
    t.manifest
        .variables
        .iter()
        .filter(|(_, d)| d.sensitive)
        .map(|(n, _)| n.clone())
        .collect()
}

pub(crate) fn masked_variables(
    vars: &BTreeMap<String, Value>,
    sensitive: Option<&BTreeSet<String>>,
) -> serde_json::Map<String, Value> {
    vars.iter()
        .map(|(k, v)| {
            let hide = sensitive.is_none_or(|s| s.contains(k));
            (k.clone(), if hide { json!(MASK) } else { v.clone() })
        })
        .collect()
}

fn spec_view(spec: &ClusterSpec, sensitive: Option<&BTreeSet<String>>) -> Value {
    json!({
        "name": spec.name,
        "template": {"name": spec.template.name, "version": spec.template.version},
        "provider": spec.provider,
        "region": spec.region,
        "variables": masked_variables(&spec.variables, sensitive),
        "target": spec.target.as_ref().map(target::view),
    })
}

pub(crate) fn cluster(c: &Cluster, sensitive: Option<&BTreeSet<String>>) -> Value {
    json!({
        "id": c.cluster_id,
        "name": c.spec.name,
        "state": c.state,
        "template": {"name": c.spec.template.name, "version": c.spec.template.version},
        "provider": c.spec.provider,
        "region": c.spec.region,
        "variables": masked_variables(&c.spec.variables, sensitive),
        "target": c.spec.target.as_ref().map(target::view),
        "outputs": c.outputs,
        "drift": {
            "drifted": c.drift.drifted,
            "checked_at": c.drift.checked_at.map(ts::format),
            "changed_resources": c.drift.changed_resources,
            "policy": c.drift_policy,
            "interval_hours": c.drift_interval_secs.unwrap_or(DEFAULT_DRIFT_INTERVAL_SECS) / 3600,
        },
        "last_error": c.last_error,
        "version": c.version,
        "created_at": ts::format(c.created_at),
        "updated_at": ts::format(c.updated_at),
    })
}

pub(crate) fn operation(op: &Operation, sensitive: Option<&BTreeSet<String>>) -> Value {
    let steps: Vec<Value> = op
        .steps
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "started_at": ts::format(s.started_at),
                "finished_at": s.finished_at.map(ts::format),
                "ok": s.ok,
            })
        })
        .collect();
    json!({
        "id": op.operation_id,
        // An estimate's id is synthetic (no cluster to look up): not shown.
        "cluster_id": op.kind.has_cluster().then_some(&op.cluster_id),
        "kind": op.kind,
        "status": op.status,
        "attempt": op.attempt,
        "current_step": op.current_step().map(|s| s.name.clone()),
        "steps": steps,
        "error": op.error,
        "estimate": op.estimate,
        "cancel_requested": op.cancel_requested,
        "wait_reason": op.wait_reason,
        "requested_by": op.requested_by,
        "notes": op.notes,
        "spec": op.spec.as_ref().map(|s| spec_view(s, sensitive)),
        "created_at": ts::format(op.created_at),
        "updated_at": ts::format(op.updated_at),
    })
}

/// The schema a client needs to fill a request: managed variables are left out (they cannot be sent)
/// and sensitive defaults are masked.
pub(crate) fn template_detail(t: &Template, versions: &[String]) -> Value {
    let m = &t.manifest;
    let variables: serde_json::Map<String, Value> = m
        .variables
        .iter()
        .filter(|(_, d)| !d.managed)
        .map(|(name, d)| {
            let default = d
                .default
                .as_ref()
                .map(|v| if d.sensitive { json!(MASK) } else { v.clone() });
            let v = json!({
                "type": d.ty,
                "description": d.description,
                "required": d.required,
                "default": default,
                "enum": d.allowed,
                "min": d.min,
                "max": d.max,
                "pattern": d.pattern,
                "max_length": d.max_length,
                "sensitive": d.sensitive,
                "catalog": d.catalog,
            });
            (name.clone(), v)
        })
        .collect();
    let defaults: serde_json::Map<String, Value> = m
        .defaults
        .iter()
        .map(|(p, d)| {
            let vars = d
                .variables
                .iter()
                .map(|(k, v)| {
                    let sensitive = m.variables.get(k).is_some_and(|d| d.sensitive);
                    (k.clone(), if sensitive { json!(MASK) } else { v.clone() })
                })
                .collect::<serde_json::Map<_, _>>();
            (p.to_string(), json!({"region": d.region, "variables": vars}))
        })
        .collect();
    json!({
        "name": m.name,
        "version": m.version,
        "versions": versions,
        "description": m.description,
        "providers": m.providers,
        "verified_offline": m.verified_offline,
        "variables": variables,
        "rules": m.rules,
        "defaults": defaults,
    })
}

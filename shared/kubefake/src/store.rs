//! The objects, their resource versions and managers, and the history a watch replays.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use base64::Engine;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::fields::{self, Path};
use crate::resources::ResourceType;

/// How many changes a watch can resume from; older resource versions are "too old" (410), as after the
/// real server's etcd compaction.
const HISTORY: usize = 10_000;

/// One manager's fields in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Managed {
    pub paths: BTreeSet<Path>,
    /// `Apply` or `Update`, as in `managedFields`.
    pub operation: &'static str,
    pub api_version: String,
}

#[derive(Debug, Clone)]
struct Stored {
    object: Value,
    managers: BTreeMap<String, Managed>,
}

/// Group, resource, namespace (`""` cluster-wide), name.
pub type Key = (&'static str, &'static str, String, String);

/// A change, as a watch sends it.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub namespace: String,
    pub object: Value,
}

/// A field another manager owns with another value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub manager: String,
    pub field: String,
}

pub struct Store {
    objects: BTreeMap<Key, Stored>,
    rv: u64,
    history: VecDeque<Arc<Change>>,
    /// Changes up to this resource version are gone from the history.
    compacted: u64,
    pub changes: broadcast::Sender<Arc<Change>>,
}

pub fn key(rt: &ResourceType, namespace: Option<&str>, name: &str) -> Key {
    (
        rt.group,
        rt.resource,
        namespace.unwrap_or_default().to_string(),
        name.to_string(),
    )
}

fn now() -> String {
    let t = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("0 is a valid nanosecond");
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats")
}

/// A Secret's `stringData` is written into `data` (base64), as the real server does on every write.
fn normalize(rt: &ResourceType, object: &mut Value) {
    if rt.kind != "Secret" {
        return;
    }
    let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    let data = object["data"]
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut data = data;
    for (k, v) in strings {
        let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        data.insert(
            k,
            Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
    object["data"] = Value::Object(data);
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    pub fn new() -> Self {
        Store {
            objects: BTreeMap::new(),
            rv: 1,
            history: VecDeque::new(),
            compacted: 1,
            changes: broadcast::channel(4096).0,
        }
    }

    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Forgets the history: a watch from any resource version older than now is answered 410.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }

    /// The changes after `rv`, or `None` when they are no longer kept.
    pub fn changes_since(&self, rv: u64) -> Option<Vec<Arc<Change>>> {
        if rv < self.compacted {
            return None;
        }
        Some(self.history.iter().filter(|c| c.rv > rv).cloned().collect())
    }

    pub fn get(&self, rt: &ResourceType, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.objects
            .get(&key(rt, namespace, name))
            .map(|s| s.object.clone())
    }

    pub fn managers(
        &self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> BTreeMap<String, Managed> {
        self.objects
            .get(&key(rt, namespace, name))
            .map(|s| s.managers.clone())
            .unwrap_or_default()
    }

    /// The objects of a collection (`namespace` none: every namespace), ordered by namespace and name.
    pub fn list(&self, rt: &ResourceType, namespace: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|((g, r, ns, _), _)| {
                *g == rt.group && *r == rt.resource && namespace.is_none_or(|n| n == ns)
            })
            .map(|(_, s)| s.object.clone())
            .collect()
    }

    fn record(&mut self, rt: &ResourceType, kind: &'static str, namespace: &str, object: Value) {
        let change = Arc::new(Change {
            rv: self.rv,
            kind,
            group: rt.group,
            resource: rt.resource,
            namespace: namespace.to_string(),
            object,
        });
        self.history.push_back(change.clone());
        while self.history.len() > HISTORY {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        // No watcher is not an error.
        let _ = self.changes.send(change);
    }

    /// Stores `object` under `key` with a new resource version and its managers rendered into
    /// `metadata.managedFields`; records the change.
    fn write(
        &mut self,
        rt: &ResourceType,
        key: Key,
        mut object: Value,
        managers: BTreeMap<String, Managed>,
    ) -> Value {
        let existed = self.objects.get(&key);
        let created_meta = existed.map(|s| s.object["metadata"].clone());
        self.rv += 1;
        object["apiVersion"] = json!(rt.api_version());
        object["kind"] = json!(rt.kind);
        if !object["metadata"].is_object() {
            object["metadata"] = json!({});
        }
        let meta = &mut object["metadata"];
        meta["name"] = json!(key.3);
        if rt.namespaced {
            meta["namespace"] = json!(key.2);
        }
        let (uid, created) = match &created_meta {
            Some(m) => (m["uid"].clone(), m["creationTimestamp"].clone()),
            None => (
                json!(format!("00000000-0000-4000-8000-{:012}", self.rv)),
                json!(now()),
            ),
        };
        meta["uid"] = uid;
        meta["creationTimestamp"] = created;
        meta["resourceVersion"] = json!(self.rv.to_string());
        let entries: Vec<Value> = managers
            .iter()
            .filter(|(_, m)| !m.paths.is_empty())
            .map(|(name, m)| {
                json!({"manager": name, "operation": m.operation, "apiVersion": m.api_version,
                    "time": now(), "fieldsType": "FieldsV1", "fieldsV1": fields::fields_v1(&m.paths)})
            })
            .collect();
        if entries.is_empty() {
            if let Some(m) = meta.as_object_mut() {
                m.remove("managedFields");
            }
        } else {
            meta["managedFields"] = Value::Array(entries);
        }
        let kind = if created_meta.is_some() {
            "MODIFIED"
        } else {
            "ADDED"
        };
        let namespace = key.2.clone();
        self.objects.insert(
            key,
            Stored {
                object: object.clone(),
                managers,
            },
        );
        self.record(rt, kind, &namespace, object.clone());
        object
    }

    /// Creates or replaces an object as a test sets it (keeps its managers); `metadata.name` and, when
    /// namespaced, `metadata.namespace` name it.
    pub fn put(&mut self, rt: &ResourceType, mut object: Value) -> Value {
        normalize(rt, &mut object);
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let ns = object["metadata"]["namespace"].as_str().map(str::to_string);
        let key = key(rt, ns.as_deref().filter(|_| rt.namespaced), &name);
        let managers = self
            .objects
            .get(&key)
            .map(|s| s.managers.clone())
            .unwrap_or_default();
        self.write(rt, key, object, managers)
    }

    pub fn delete(&mut self, rt: &ResourceType, namespace: Option<&str>, name: &str) -> Option<Value> {
        let key = key(rt, namespace, name);
        let mut stored = self.objects.remove(&key)?;
        self.rv += 1;
        stored.object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.record(rt, "DELETED", &key.2, stored.object.clone());
        Some(stored.object)
    }

    /// Server-side apply of `applied` by `manager`. Returns the stored object and whether it was created.
    pub fn apply(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        mut applied: Value,
        manager: &str,
        force: bool,
    ) -> Result<(Value, bool), Vec<Conflict>> {
        normalize(rt, &mut applied);
        let key = key(rt, namespace, name);
        let (current, mut managers) = match self.objects.get(&key) {
            Some(s) => (Some(s.object.clone()), s.managers.clone()),
            None => (None, BTreeMap::new()),
        };
        let wanted = fields::leaves(&applied);
        let mut conflicts = Vec::new();
        for (other, owned) in managers.iter().filter(|(m, _)| *m != manager) {
            for (path, value) in &wanted {
                let now = current.as_ref().and_then(|c| fields::value_at(c, path));
                if owned.paths.contains(path) && now != Some(value) {
                    conflicts.push(Conflict {
                        manager: other.clone(),
                        field: fields::display(path),
                    });
                }
            }
        }
        if !conflicts.is_empty() && !force {
            return Err(conflicts);
        }
        for owned in managers.values_mut() {
            owned.paths.retain(|p| !wanted.contains_key(p));
        }
        let mut object = current.clone().unwrap_or_else(|| json!({}));
        // What this manager applied before and leaves out now is removed, unless another manager owns it.
        if let Some(before) = managers.get(manager) {
            for path in &before.paths {
                if !wanted.contains_key(path)
                    && !managers
                        .iter()
                        .any(|(m, o)| m != manager && o.paths.contains(path))
                {
                    fields::remove_at(&mut object, path);
                }
            }
        }
        for (path, value) in &wanted {
            fields::set_at(&mut object, path, value.clone());
        }
        let api_version = applied["apiVersion"]
            .as_str()
            .unwrap_or(&rt.api_version())
            .to_string();
        managers.insert(
            manager.to_string(),
            Managed {
                paths: wanted.into_keys().collect(),
                operation: "Apply",
                api_version,
            },
        );
        managers.retain(|_, m| !m.paths.is_empty());
        if let Some(current) = &current
            && self.objects.get(&key).is_some_and(|s| s.managers == managers)
            && same_content(current, &object)
        {
            // A no-op apply changes nothing, not even the resource version.
            return Ok((current.clone(), false));
        }
        let created = current.is_none();
        Ok((self.write(rt, key, object, managers), created))
    }

    /// A JSON merge patch of an existing object; with a manager, it takes the patched fields (an update
    /// never conflicts). `None` when the object does not exist.
    pub fn merge(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        mut patch: Value,
        manager: Option<&str>,
    ) -> Option<Value> {
        normalize(rt, &mut patch);
        let key = key(rt, namespace, name);
        let stored = self.objects.get(&key)?;
        let mut object = stored.object.clone();
        let mut managers = stored.managers.clone();
        fields::merge_patch(&mut object, &patch);
        if let Some(manager) = manager {
            let touched: BTreeSet<Path> = fields::leaves(&patch)
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(p, _)| p)
                .collect();
            for owned in managers.values_mut() {
                owned.paths.retain(|p| !touched.contains(p));
            }
            let entry = managers.entry(manager.to_string()).or_insert_with(|| Managed {
                paths: BTreeSet::new(),
                operation: "Update",
                api_version: rt.api_version(),
            });
            entry.paths.extend(touched);
            managers.retain(|_, m| !m.paths.is_empty());
        }
        Some(self.write(rt, key, object, managers))
    }
}

fn same_content(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v["metadata"].as_object_mut() {
            m.remove("managedFields");
            m.remove("resourceVersion");
        }
        v
    };
    strip(a) == strip(b)
}

/// Whether an object matches a label selector (`a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-joined) and a
/// field selector (`path=value`, `path!=value` on dotted paths such as `metadata.name` or `type`).
pub fn selected(object: &Value, labels: Option<&str>, fields_sel: Option<&str>) -> bool {
    let empty = Map::new();
    let obj_labels = object["metadata"]["labels"].as_object().unwrap_or(&empty);
    let label_ok = labels
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .all(|term| {
            if let Some((k, v)) = term.split_once("!=") {
                obj_labels.get(k.trim()).and_then(Value::as_str) != Some(v.trim())
            } else if let Some((k, v)) = term.split_once('=') {
                let v = v.trim_start_matches('=');
                obj_labels.get(k.trim()).and_then(Value::as_str) == Some(v.trim())
            } else if let Some(k) = term.strip_prefix('!') {
                !obj_labels.contains_key(k.trim())
            } else {
                obj_labels.contains_key(term.trim())
            }
        });
    let field_ok = fields_sel
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .all(|term| {
            let (path, want, equal) = match term.split_once("!=") {
                Some((p, v)) => (p, v, false),
                None => match term.split_once('=') {
                    Some((p, v)) => (p, v.trim_start_matches('='), true),
                    None => return false,
                },
            };
            let got = path
                .split('.')
                .try_fold(object, |v, k| v.get(k))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
            (got.as_deref().unwrap_or_default() == want) == equal
        });
    label_ok && field_ok
}

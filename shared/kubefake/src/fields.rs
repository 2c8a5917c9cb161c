//! Field ownership for server-side apply, reduced to leaf paths: a manager owns the scalar leaves, lists and
//! empty maps it applied. Lists are atomic (one leaf), unlike the real server's merge keys for e.g.
//! `containers`; that is enough for conflicts between the runner's and the agent's managers.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// A field's path from the object's root, one map key a segment.
pub type Path = Vec<String>;

/// The fields the server owns itself: never a manager's, never part of a conflict.
fn server_owned(path: &[String]) -> bool {
    match path {
        [top] => top == "apiVersion" || top == "kind",
        [top, ..] if top == "status" => true,
        [meta, field, ..] if meta == "metadata" => matches!(
            field.as_str(),
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "managedFields"
                | "creationTimestamp"
                | "generation"
                | "deletionTimestamp"
        ),
        _ => false,
    }
}

/// The leaf paths of an object that a manager can own.
pub fn leaves(object: &Value) -> BTreeMap<Path, Value> {
    let mut out = BTreeMap::new();
    walk(object, &mut Vec::new(), &mut out);
    out
}

fn walk(value: &Value, path: &mut Path, out: &mut BTreeMap<Path, Value>) {
    if server_owned(path) {
        return;
    }
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                path.push(k.clone());
                walk(v, path, out);
                path.pop();
            }
        }
        _ if !path.is_empty() => {
            out.insert(path.clone(), value.clone());
        }
        _ => {}
    }
}

pub fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |v, k| v.get(k))
}

pub fn set_at(object: &mut Value, path: &[String], value: Value) {
    let mut cur = object;
    for k in &path[..path.len() - 1] {
        if !cur.get(k).is_some_and(Value::is_object) {
            cur[k.as_str()] = Value::Object(Map::new());
        }
        cur = &mut cur[k.as_str()];
    }
    cur[path[path.len() - 1].as_str()] = value;
}

pub fn remove_at(object: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = object;
    for k in parents {
        match cur.get_mut(k) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(map) = cur.as_object_mut() {
        map.remove(last);
    }
}

/// Shown as the real server does in a conflict's cause: `.data.credential`.
pub fn display(path: &[String]) -> String {
    path.iter().map(|k| format!(".{k}")).collect()
}

/// The `fieldsV1` form of a set of paths: `{"f:data": {"f:credential": {}}}`.
pub fn fields_v1(paths: &BTreeSet<Path>) -> Value {
    let mut root = Value::Object(Map::new());
    for p in paths {
        let keyed: Path = p.iter().map(|k| format!("f:{k}")).collect();
        if value_at(&root, &keyed).is_none() {
            set_at(&mut root, &keyed, Value::Object(Map::new()));
        }
    }
    root
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let map = target.as_object_mut().expect("made an object above");
    for (k, v) in patch {
        if v.is_null() {
            map.remove(k);
        } else {
            merge_patch(map.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p(s: &str) -> Path {
        s.split('.').map(String::from).collect()
    }

    #[test]
    fn leaves_skip_what_the_server_owns_and_keep_lists_whole() {
        let obj = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "labels": {"a": "1"}}, "data": {"k": "dg=="},
            "spec": {"list": [1, 2], "empty": {}}, "status": {"x": 1}});
        let got: Vec<Path> = leaves(&obj).into_keys().collect();
        assert_eq!(
            got,
            vec![
                p("data.k"),
                p("metadata.labels.a"),
                p("spec.empty"),
                p("spec.list")
            ]
        );
    }

    #[test]
    fn fields_v1_nests_the_paths_with_their_prefix() {
        let set = BTreeSet::from([p("data.credential"), p("metadata.labels.a")]);
        assert_eq!(
            fields_v1(&set),
            json!({"f:data": {"f:credential": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
        );
    }

    #[test]
    fn merge_patch_sets_and_removes() {
        let mut t = json!({"a": 1, "b": {"c": 2, "d": 3}});
        merge_patch(&mut t, &json!({"a": null, "b": {"c": 5}, "e": [1]}));
        assert_eq!(t, json!({"b": {"c": 5, "d": 3}, "e": [1]}));
    }
}

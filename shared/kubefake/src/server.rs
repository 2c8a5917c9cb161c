//! The HTTP side: authentication, discovery, authorization, and the verbs on resource paths.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::rbac::Attributes;
use crate::resources::{self, RESOURCES, ResourceType, Target};
use crate::store::{self, Change};
use crate::{RequestRecord, Shared};

type Params = HashMap<String, String>;

pub async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    Query(params): Query<Params>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let identity = token.and_then(|t| (shared.validator)(t));
    let response = match &identity {
        None => status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized", None),
        Some(id) => route(&shared, id, &method, uri.path(), &params, &headers, body),
    };
    shared.log.lock().expect("log lock").push(RequestRecord {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or_default().to_string(),
        identity,
        status: response.status().as_u16(),
    });
    response
}

/// A `Status` object, the body of every error the real server sends.
pub fn status(code: StatusCode, reason: &str, message: &str, details: Option<Value>) -> Response {
    let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    if let Some(d) = details {
        body["details"] = d;
    }
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn json_response(code: StatusCode, body: &Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn discovery(shared: &Shared, path: &str) -> Option<Value> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let resource_list = |group: &str, version: &str| {
        let list: Vec<Value> = RESOURCES
            .iter()
            .filter(|r| r.group == group && r.version == version)
            .map(|r| {
                json!({"name": r.resource, "singularName": r.kind.to_lowercase(), "namespaced": r.namespaced,
                    "kind": r.kind, "verbs": ["create", "delete", "get", "list", "patch", "watch"]})
            })
            .collect();
        let gv = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        (!list.is_empty()).then(
            || json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
        )
    };
    match segs.as_slice() {
        ["version"] => Some(
            json!({"major": "1", "minor": shared.minor, "gitVersion": shared.git_version,
            "platform": "linux/amd64"}),
        ),
        ["api"] => Some(json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})),
        ["apis"] => {
            let mut groups: Vec<&str> = RESOURCES
                .iter()
                .map(|r| r.group)
                .filter(|g| !g.is_empty())
                .collect();
            groups.dedup();
            let groups: Vec<Value> = groups
                .iter()
                .map(|g| {
                    let gv = json!({"groupVersion": format!("{g}/v1"), "version": "v1"});
                    json!({"name": g, "versions": [gv], "preferredVersion": gv})
                })
                .collect();
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["api", v] => resource_list("", v),
        ["apis", g, v] => resource_list(g, v),
        _ => None,
    }
}

fn verb(method: &Method, target: &Target, params: &Params) -> Option<&'static str> {
    let watching = params.get("watch").is_some_and(|w| w == "true" || w == "1");
    Some(match (method.as_str(), target.name.is_some()) {
        ("GET", true) => "get",
        ("GET", false) if watching => "watch",
        ("GET", false) => "list",
        ("PATCH", true) => "patch",
        ("POST", false) => "create",
        ("DELETE", true) => "delete",
        _ => return None,
    })
}

fn route(
    shared: &Arc<Shared>,
    identity: &str,
    method: &Method,
    path: &str,
    params: &Params,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::GET
        && let Some(doc) = discovery(shared, path)
    {
        return json_response(StatusCode::OK, &doc);
    }
    let Ok(target) = resources::parse(path) else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
            None,
        );
    };
    let Some(verb) = verb(method, &target, params) else {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method",
            None,
        );
    };
    let rt = target.rt;
    let ns = target.namespace.as_deref();
    let name = target.name.as_deref();
    if let Some(rbac) = &shared.rbac {
        let attrs = Attributes {
            verb,
            group: rt.group,
            resource: rt.resource,
            namespace: ns,
            name,
        };
        if !rbac.allows(identity, &attrs) {
            let what = match name {
                Some(n) => format!("{} \"{n}\"", rt.resource),
                None => rt.resource.to_string(),
            };
            let scope = match ns {
                Some(n) => format!(" in the namespace \"{n}\""),
                None => " at the cluster scope".to_string(),
            };
            let message = format!(
                "{what} is forbidden: User \"{identity}\" cannot {verb} resource \"{}\" in API group \"{}\"{scope}",
                rt.resource, rt.group
            );
            let details = json!({"name": name.unwrap_or_default(), "group": rt.group, "kind": rt.resource});
            return status(StatusCode::FORBIDDEN, "Forbidden", &message, Some(details));
        }
    }
    let not_found = |n: &str| {
        status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("{} \"{n}\" not found", rt.resource),
            Some(json!({"name": n, "group": rt.group, "kind": rt.resource})),
        )
    };
    let mut store = shared.store.lock().expect("store lock");
    match verb {
        "get" => {
            let n = name.unwrap_or_default();
            match store.get(&rt, ns, n) {
                Some(obj) => json_response(StatusCode::OK, &obj),
                None => not_found(n),
            }
        }
        "list" => {
            let items: Vec<Value> = store
                .list(&rt, ns)
                .into_iter()
                .filter(|o| {
                    store::selected(
                        o,
                        params.get("labelSelector").map(String::as_str),
                        params.get("fieldSelector").map(String::as_str),
                    )
                })
                .collect();
            let list = json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(),
                "metadata": {"resourceVersion": store.resource_version().to_string()}, "items": items});
            json_response(StatusCode::OK, &list)
        }
        "watch" => {
            drop(store);
            watch(shared, rt, target.namespace.clone(), params)
        }
        "delete" => {
            let n = name.unwrap_or_default();
            match store.delete(&rt, ns, n) {
                Some(obj) => json_response(StatusCode::OK, &obj),
                None => not_found(n),
            }
        }
        "create" => {
            let Ok(obj) = serde_json::from_slice::<Value>(&body) else {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    "the body is not a JSON object",
                    None,
                );
            };
            let n = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
            if n.is_empty() {
                return status(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    "metadata.name: Required value",
                    None,
                );
            }
            if let Some(missing) = missing_namespace(&store, &rt, ns) {
                return missing;
            }
            if store.get(&rt, ns, &n).is_some() {
                let message = format!("{} \"{n}\" already exists", rt.resource);
                return status(StatusCode::CONFLICT, "AlreadyExists", &message, None);
            }
            let mut obj = obj;
            if let Some(ns) = ns {
                obj["metadata"]["namespace"] = json!(ns);
            }
            json_response(StatusCode::CREATED, &store.put(&rt, obj))
        }
        _ => patch(
            &mut store,
            rt,
            ns,
            name.unwrap_or_default(),
            params,
            headers,
            &body,
        ),
    }
}

fn missing_namespace(store: &store::Store, rt: &ResourceType, ns: Option<&str>) -> Option<Response> {
    let ns = ns.filter(|_| rt.namespaced)?;
    let namespaces = resources::by_path("", "v1", "namespaces").expect("namespaces are served");
    store.get(&namespaces, None, ns).is_none().then(|| {
        status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("namespaces \"{ns}\" not found"),
            Some(json!({"name": ns, "kind": "namespaces"})),
        )
    })
}

fn patch(
    store: &mut store::Store,
    rt: ResourceType,
    ns: Option<&str>,
    name: &str,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let manager = params
        .get("fieldManager")
        .map(String::as_str)
        .filter(|m| !m.is_empty());
    match content_type.split(';').next().unwrap_or_default().trim() {
        "application/apply-patch+yaml" => {
            let Some(manager) = manager else {
                return status(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    "PATCH with apply requires the fieldManager query parameter",
                    None,
                );
            };
            let text = String::from_utf8_lossy(body);
            let applied: Value = match serde_norway::from_str(&text) {
                Ok(v @ Value::Object(_)) => v,
                Ok(_) => {
                    return status(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        "the applied document is not an object",
                        None,
                    );
                }
                Err(e) => {
                    return status(
                        StatusCode::BAD_REQUEST,
                        "BadRequest",
                        &format!("invalid YAML: {e}"),
                        None,
                    );
                }
            };
            if applied["apiVersion"] != rt.api_version() || applied["kind"] != rt.kind {
                let message = format!(
                    "the applied object must have apiVersion {} and kind {}",
                    rt.api_version(),
                    rt.kind
                );
                return status(StatusCode::BAD_REQUEST, "BadRequest", &message, None);
            }
            if applied["metadata"]["name"].as_str() != Some(name) {
                let message = format!(
                    "the name of the object ({}) does not match the name on the URL ({name})",
                    applied["metadata"]["name"].as_str().unwrap_or_default()
                );
                return status(StatusCode::BAD_REQUEST, "BadRequest", &message, None);
            }
            if let Some(missing) = missing_namespace(store, &rt, ns) {
                return missing;
            }
            let force = params.get("force").is_some_and(|f| f == "true");
            match store.apply(&rt, ns, name, applied, manager, force) {
                Ok((obj, created)) => json_response(
                    if created {
                        StatusCode::CREATED
                    } else {
                        StatusCode::OK
                    },
                    &obj,
                ),
                Err(conflicts) => {
                    let causes: Vec<Value> = conflicts
                        .iter()
                        .map(|c| {
                            json!({"type": "FieldManagerConflict", "field": c.field,
                                "message": format!("conflict with \"{}\"", c.manager)})
                        })
                        .collect();
                    let list: Vec<String> = conflicts
                        .iter()
                        .map(|c| format!("conflict with \"{}\": {}", c.manager, c.field))
                        .collect();
                    let plural = if conflicts.len() == 1 { "" } else { "s" };
                    let message = format!(
                        "Apply failed with {} conflict{plural}: {}",
                        conflicts.len(),
                        list.join(", ")
                    );
                    let details =
                        json!({"name": name, "group": rt.group, "kind": rt.resource, "causes": causes});
                    status(StatusCode::CONFLICT, "Conflict", &message, Some(details))
                }
            }
        }
        "application/merge-patch+json" => {
            let Ok(patch) = serde_json::from_slice::<Value>(body) else {
                return status(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    "the merge patch is not JSON",
                    None,
                );
            };
            match store.merge(&rt, ns, name, patch, manager) {
                Some(obj) => json_response(StatusCode::OK, &obj),
                None => status(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    &format!("{} \"{name}\" not found", rt.resource),
                    None,
                ),
            }
        }
        other => status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            &format!(
                "the body of the request was in an unknown format - accepted media types include: application/apply-patch+yaml, application/merge-patch+json (got {other:?})"
            ),
            None,
        ),
    }
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

fn expired(rv: &str) -> Bytes {
    let st = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("too old resource version: {rv}"), "reason": "Expired", "code": 410});
    event_line("ERROR", &st)
}

/// A watch: the changes after the given resource version (or the current objects as ADDED when there is
/// none or it is `0`), then every matching change, bookmarks when asked, until `timeoutSeconds`.
fn watch(shared: &Arc<Shared>, rt: ResourceType, namespace: Option<String>, params: &Params) -> Response {
    let labels = params.get("labelSelector").cloned();
    let fields_sel = params.get("fieldSelector").cloned();
    let bookmarks = params.get("allowWatchBookmarks").is_some_and(|b| b == "true");
    let timeout = params
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs);
    let from = params.get("resourceVersion").cloned().unwrap_or_default();
    let matches = move |c: &Change| {
        c.group == rt.group
            && c.resource == rt.resource
            && namespace.as_deref().is_none_or(|n| n == c.namespace)
            && store::selected(&c.object, labels.as_deref(), fields_sel.as_deref())
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let (mut sub, initial, mut seen) = {
        let store = shared.store.lock().expect("store lock");
        let sub = store.changes.subscribe();
        let initial: Option<Vec<Bytes>> = if from.is_empty() || from == "0" {
            Some(
                store
                    .list(&rt, None)
                    .into_iter()
                    .map(|o| Change {
                        rv: 0,
                        kind: "ADDED",
                        group: rt.group,
                        resource: rt.resource,
                        namespace: o["metadata"]["namespace"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        object: o,
                    })
                    .filter(&matches)
                    .map(|c| event_line(c.kind, &c.object))
                    .collect(),
            )
        } else {
            // Not a number, or older than the kept history: too old, as the real server says.
            from.parse::<u64>()
                .ok()
                .and_then(|rv| store.changes_since(rv))
                .map(|changes| {
                    changes
                        .iter()
                        .filter(|c| matches(c))
                        .map(|c| event_line(c.kind, &c.object))
                        .collect()
                })
        };
        (sub, initial, store.resource_version())
    };
    let kind = rt.kind;
    let api_version = rt.api_version();
    let interval = shared.bookmark_interval;
    tokio::spawn(async move {
        let Some(initial) = initial else {
            let _ = tx.send(expired(&from)).await;
            return;
        };
        for line in initial {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout.unwrap_or(Duration::from_secs(3600)));
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                change = sub.recv() => match change {
                    Ok(c) => {
                        seen = seen.max(c.rv);
                        if matches(&c) && tx.send(event_line(c.kind, &c.object)).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(expired(&seen.to_string())).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = ticker.tick(), if bookmarks => {
                    // Every change up to the bookmark's version must have been sent before it.
                    while let Ok(c) = sub.try_recv() {
                        seen = seen.max(c.rv);
                        if matches(&c) && tx.send(event_line(c.kind, &c.object)).await.is_err() {
                            return;
                        }
                    }
                    let bookmark = json!({"kind": kind, "apiVersion": api_version,
                        "metadata": {"resourceVersion": seen.to_string()}});
                    if tx.send(event_line("BOOKMARK", &bookmark)).await.is_err() {
                        return;
                    }
                }
                _ = &mut deadline => return,
                _ = tx.closed() => return,
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<Bytes, Infallible>(b), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .expect("a valid response")
}

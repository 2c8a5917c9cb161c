//! The fake's behaviour over HTTP, as a plain client sees it.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;

const ADMIN: &str = "admin-token";
const AGENT: &str = "agent-token";
const AGENT_ID: &str = "system:serviceaccount:strato-system:strato-agent";

async fn fake() -> KubeFake {
    KubeFake::builder()
        .token(ADMIN, "admin")
        .token(AGENT, AGENT_ID)
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .unwrap()
}

async fn get(k: &KubeFake, token: &str, path: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .get(format!("{}{path}", k.url()))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

async fn apply(k: &KubeFake, token: &str, path: &str, query: &str, body: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .patch(format!("{}{path}?{query}", k.url()))
        .bearer_auth(token)
        .header("content-type", "application/apply-patch+yaml")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

/// Reads watch events until `until` holds for one (or 5 s pass), returning all read.
async fn watch_until(mut r: reqwest::Response, until: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut buf = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let chunk = tokio::time::timeout_at(deadline, r.chunk()).await;
        let Ok(Ok(Some(chunk))) = chunk else { return events };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(i) = buf.find('\n') {
            let line: String = buf.drain(..=i).collect();
            let ev: Value = serde_json::from_str(line.trim()).unwrap();
            let done = until(&ev);
            events.push(ev);
            if done {
                return events;
            }
        }
    }
}

async fn open_watch(k: &KubeFake, path: &str) -> reqwest::Response {
    let r = reqwest::Client::new()
        .get(format!("{}{path}", k.url()))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r
}

#[tokio::test]
async fn a_list_carries_its_resource_version_and_a_watch_from_it_sees_later_changes_then_bookmarks() {
    let k = fake().await;
    k.put_node("n1", true);
    k.put_node("n2", true);
    let (code, list) = get(&k, ADMIN, "/api/v1/nodes").await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "NodeList");
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    let r = open_watch(
        &k,
        &format!("/api/v1/nodes?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"),
    )
    .await;
    k.put_node("n2", false);
    let events = watch_until(r, |e| e["type"] == "BOOKMARK").await;
    assert_eq!(
        events.len(),
        2,
        "the change then a bookmark, not the nodes listed before: {events:?}"
    );
    assert_eq!(events[0]["type"], "MODIFIED");
    assert_eq!(events[0]["object"]["metadata"]["name"], "n2");
    assert_eq!(events[0]["object"]["status"]["conditions"][0]["status"], "False");
    let modified: u64 = events[0]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let bookmark: u64 = events[1]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        modified > rv && bookmark >= modified,
        "{rv} < {modified} <= {bookmark}"
    );
    assert_eq!(events[1]["object"]["kind"], "Node");
}

#[tokio::test]
async fn a_watch_without_a_version_starts_with_every_object_added_and_sees_deletions() {
    let k = fake().await;
    k.put_node("n1", true);
    let r = open_watch(&k, "/api/v1/nodes?watch=1").await;
    k.delete("v1", "Node", None, "n1");
    let events = watch_until(r, |e| e["type"] == "DELETED").await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "DELETED"]);
}

#[tokio::test]
async fn a_watch_from_a_compacted_version_gets_a_410_expired_error_event() {
    let k = fake().await;
    k.put_node("n1", true);
    let (_, list) = get(&k, ADMIN, "/api/v1/nodes").await;
    let old = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    k.put_node("n1", false);
    k.compact();
    let r = open_watch(&k, &format!("/api/v1/nodes?watch=true&resourceVersion={old}")).await;
    let events = watch_until(r, |e| e["type"] == "ERROR").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["object"]["kind"], "Status");
    assert_eq!(events[0]["object"]["code"], 410);
    assert_eq!(events[0]["object"]["reason"], "Expired");
}

#[tokio::test]
async fn lists_filter_by_namespace_and_field_selector() {
    let k = fake().await;
    k.add_warning(
        "kube-system",
        "Pod",
        "coredns-1",
        "BackOff",
        "Back-off restarting",
        3,
    );
    k.add_warning("default", "Pod", "web", "Failed", "no", 1);
    k.put(
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "n", "namespace": "kube-system"},
        "type": "Normal", "reason": "Pulled"}),
    )
    .unwrap();
    let (_, list) = get(
        &k,
        ADMIN,
        "/api/v1/namespaces/kube-system/events?fieldSelector=type%3DWarning",
    )
    .await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["reason"], "BackOff");
    let (_, all) = get(&k, ADMIN, "/api/v1/events").await;
    assert_eq!(all["items"].as_array().unwrap().len(), 3);
}

const RUNNER_SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: ns\nstringData:\n  registration-token: one\n";
const SECRET_PATH: &str = "/api/v1/namespaces/ns/secrets/s";

#[tokio::test]
async fn server_side_apply_creates_updates_tracks_managers_and_conflicts_unless_forced() {
    let k = fake().await;
    let (code, st) = apply(&k, ADMIN, SECRET_PATH, "fieldManager=runner", RUNNER_SECRET).await;
    assert_eq!(
        (code, st["reason"].as_str()),
        (404, Some("NotFound")),
        "no namespace yet: {st}"
    );
    k.put_namespace("ns");

    let (code, obj) = apply(&k, ADMIN, SECRET_PATH, "fieldManager=runner", RUNNER_SECRET).await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(
        obj["data"]["registration-token"], "b25l",
        "stringData is stored as base64 data"
    );
    assert!(obj.get("stringData").is_none());
    let credential = r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": {"credential": "Yy5z"}}"#;
    let (code, obj) = apply(&k, ADMIN, SECRET_PATH, "fieldManager=agent", credential).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(
        obj["data"]["registration-token"], "b25l",
        "another manager's field stays"
    );
    assert_eq!(obj["metadata"]["managedFields"].as_array().unwrap().len(), 2);
    let managers = k.managers("v1", "Secret", Some("ns"), "s");
    assert_eq!(managers["runner"], [".data.registration-token"]);
    assert_eq!(managers["agent"], [".data.credential"]);

    // Re-applying the same document changes nothing, not even the resource version.
    let rv = obj["metadata"]["resourceVersion"].clone();
    let (code, again) = apply(&k, ADMIN, SECRET_PATH, "fieldManager=agent", credential).await;
    assert_eq!((code, &again["metadata"]["resourceVersion"]), (200, &rv));

    let steal = RUNNER_SECRET.replace("one", "two");
    let (code, st) = apply(&k, ADMIN, SECRET_PATH, "fieldManager=agent", &steal).await;
    assert_eq!(code, 409, "{st}");
    assert_eq!(st["reason"], "Conflict");
    assert_eq!(st["details"]["causes"][0]["field"], ".data.registration-token");
    assert!(
        st["details"]["causes"][0]["message"]
            .as_str()
            .unwrap()
            .contains("\"runner\""),
        "{st}"
    );

    let (code, obj) = apply(&k, ADMIN, SECRET_PATH, "fieldManager=agent&force=true", &steal).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(obj["data"]["registration-token"], "dHdv");
    let managers = k.managers("v1", "Secret", Some("ns"), "s");
    assert!(
        !managers.contains_key("runner"),
        "force took the runner's only field: {managers:?}"
    );
    assert_eq!(
        managers["agent"],
        [".data.registration-token"],
        "the agent's last apply is all it owns"
    );
    assert!(
        k.get("v1", "Secret", Some("ns"), "s").unwrap()["data"]
            .get("credential")
            .is_none(),
        "a field its manager no longer applies is removed"
    );
}

#[tokio::test]
async fn apply_needs_a_field_manager_a_matching_name_and_a_known_media_type() {
    let k = fake().await;
    k.put_namespace("ns");
    let (code, st) = apply(&k, ADMIN, SECRET_PATH, "", RUNNER_SECRET).await;
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")), "{st}");
    let (code, _) = apply(
        &k,
        ADMIN,
        "/api/v1/namespaces/ns/secrets/other",
        "fieldManager=m",
        RUNNER_SECRET,
    )
    .await;
    assert_eq!(code, 400);
    let r = reqwest::Client::new()
        .patch(format!("{}{SECRET_PATH}", k.url()))
        .bearer_auth(ADMIN)
        .header("content-type", "application/json-patch+json")
        .body("[]")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
}

#[tokio::test]
async fn a_merge_patch_updates_an_existing_object_and_takes_its_fields() {
    let k = fake().await;
    k.put_namespace("ns");
    apply(&k, ADMIN, SECRET_PATH, "fieldManager=runner", RUNNER_SECRET).await;
    let r = reqwest::Client::new()
        .patch(format!("{}{SECRET_PATH}?fieldManager=agent", k.url()))
        .bearer_auth(ADMIN)
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"data": {"credential": "Yy5z"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let obj = k.get("v1", "Secret", Some("ns"), "s").unwrap();
    assert_eq!(
        (
            obj["data"]["credential"].as_str(),
            obj["data"]["registration-token"].as_str()
        ),
        (Some("Yy5z"), Some("b25l"))
    );
    assert_eq!(
        k.managers("v1", "Secret", Some("ns"), "s")["agent"],
        [".data.credential"]
    );
}

#[tokio::test]
async fn a_missing_or_unknown_token_is_401_and_rbac_from_the_agents_manifest_is_403_outside_its_rules() {
    let manifest = include_str!("../../../agent/deploy/agent.yaml");
    let rbac = Rbac::from_manifests(manifest).unwrap().superuser("admin");
    let k = KubeFake::builder()
        .token(ADMIN, "admin")
        .token(AGENT, AGENT_ID)
        .rbac(rbac)
        .start()
        .await
        .unwrap();
    let (code, st) = get(&k, "nope", "/api/v1/nodes").await;
    assert_eq!((code, st["reason"].as_str()), (401, Some("Unauthorized")));
    let r = reqwest::Client::new()
        .get(format!("{}/version", k.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    assert_eq!(get(&k, AGENT, "/version").await.0, 200);
    assert_eq!(get(&k, AGENT, "/api/v1/nodes").await.0, 200);
    assert_eq!(
        get(&k, AGENT, "/apis/apps/v1/namespaces/kube-system/daemonsets")
            .await
            .0,
        200
    );
    assert_eq!(
        get(&k, AGENT, "/api/v1/namespaces/strato-system/secrets/strato-agent")
            .await
            .0,
        404
    );
    let (code, st) = get(&k, AGENT, "/api/v1/namespaces/kube-system/secrets").await;
    assert_eq!((code, st["reason"].as_str()), (403, Some("Forbidden")), "{st}");
    assert!(st["message"].as_str().unwrap().contains(AGENT_ID), "{st}");
    assert_eq!(
        get(&k, AGENT, "/api/v1/namespaces/strato-system/secrets/other")
            .await
            .0,
        403
    );
    assert_eq!(
        get(&k, AGENT, "/apis/apps/v1/namespaces/default/deployments")
            .await
            .0,
        403
    );
    assert_eq!(
        get(&k, ADMIN, "/apis/apps/v1/namespaces/default/deployments")
            .await
            .0,
        200
    );

    let log = k.requests();
    let denied = log.iter().find(|r| r.status == 403).unwrap();
    assert_eq!(
        (denied.identity.as_deref(), denied.method.as_str()),
        (Some(AGENT_ID), "GET")
    );
    assert!(log.iter().any(|r| r.identity.is_none() && r.status == 401));
}

#[tokio::test]
async fn discovery_names_the_served_groups_and_version() {
    let k = fake().await;
    let (_, v) = get(&k, ADMIN, "/version").await;
    assert_eq!(v["gitVersion"], "v1.33.1");
    let (_, groups) = get(&k, ADMIN, "/apis").await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["apps", "rbac.authorization.k8s.io"]);
    let (_, core) = get(&k, ADMIN, "/api/v1").await;
    assert!(
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "nodes" && r["namespaced"] == false)
    );
}

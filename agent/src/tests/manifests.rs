//! agent/deploy/agent.yaml against the Kubernetes API's schema for the version the agent is built for: each
//! document is read into k8s-openapi's type for its kind (generated from the API server's published OpenAPI
//! document, `v1_33`) and written back. A required field missing or a value of the wrong type fails the read;
//! a field the schema does not have (a typo, a wrong level) is dropped by the read, and a required field left
//! out comes back (k8s-openapi reads it as its default and always writes it), so the written-back document
//! differs from the original and the test names the difference.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

fn filled() -> String {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/agent.yaml"))
            .expect("agent/deploy/agent.yaml");
    text.replace("{{image}}", "ghcr.io/strato-dev/strato-agent:0.1.0")
        .replace("{{api_url}}", "https://api.strato.example")
        .replace("{{cluster_id}}", "cl-0123456789abcdef")
        .replace("{{registration_token}}", "0".repeat(64).as_str())
}

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(doc.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(typed).map_err(|e| e.to_string())
}

/// Paths present in `original` but missing or different in `back`.
fn differences(original: &Value, back: &Value, path: &str, out: &mut Vec<String>) {
    match (original, back) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => differences(v, w, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k} is not in the schema")),
                }
            }
            // k8s-openapi writes every required field (they are not `Option`s) and no unset optional one:
            // a field the write-back has and the original lacks is a required one the manifest left out.
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}.{k} is required"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                differences(v, w, &format!("{path}[{i}]"), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: {a} read back as {b}")),
    }
}

fn check(doc: &Value) -> Result<(), String> {
    let kind = doc["kind"].as_str().unwrap_or_default();
    let back = match kind {
        "Namespace" => round_trip::<Namespace>(doc),
        "ServiceAccount" => round_trip::<ServiceAccount>(doc),
        "Secret" => round_trip::<Secret>(doc),
        "ClusterRole" => round_trip::<ClusterRole>(doc),
        "ClusterRoleBinding" => round_trip::<ClusterRoleBinding>(doc),
        "Role" => round_trip::<Role>(doc),
        "RoleBinding" => round_trip::<RoleBinding>(doc),
        "Deployment" => round_trip::<Deployment>(doc),
        other => Err(format!("kind {other:?} has no check here: add its type")),
    }
    .map_err(|e| format!("{kind}: {e}"))?;
    let mut diffs = Vec::new();
    differences(doc, &back, kind, &mut diffs);
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("\n"))
    }
}

fn documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

#[test]
fn every_manifest_matches_the_kubernetes_schema_of_its_kind() {
    let docs = documents(&filled());
    assert_eq!(
        docs.len(),
        10,
        "Namespace, ServiceAccount, Secret, 2 × RBAC pairs + 2, Deployment"
    );
    for doc in &docs {
        check(doc).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn the_check_catches_a_misplaced_field_a_wrong_type_and_a_missing_required_one() {
    let docs = documents(&filled());
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();

    let mut misplaced = deployment.clone();
    misplaced["spec"]["template"]["spec"]["runAsNonRoot"] = Value::Bool(true);
    let err = check(&misplaced).unwrap_err();
    assert!(
        err.contains("spec.template.spec.runAsNonRoot is not in the schema"),
        "{err}"
    );

    let mut wrong_type = deployment.clone();
    wrong_type["spec"]["replicas"] = Value::String("one".into());
    assert!(check(&wrong_type).is_err());

    let mut missing = deployment.clone();
    missing["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("name");
    let err = check(&missing).unwrap_err();
    assert!(err.contains("containers[0].name is required"), "{err}");
}

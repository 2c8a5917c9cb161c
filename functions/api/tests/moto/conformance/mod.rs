//! Checking an answer against the generated OpenAPI document (shared by contract.rs and hardening.rs).

use serde_json::{Value, json};

use crate::common::Resp;

/// The spec as JSON, parsed from the generated YAML (what is checked in).
pub fn spec() -> Value {
    serde_norway::from_str(&strato_api::openapi_yaml()).unwrap()
}

/// Checks one answer against the document; returns the (method, path template) it covered.
pub fn conforms(spec: &Value, method: &str, template: &str, r: &Resp) -> (String, String) {
    let what = format!("{method} {template} answered {}: {}", r.status, r.text);
    // The router's own 404 and 405 would pass for some routes; they mean the route is not served.
    assert!(
        r.status != 405 && !r.text.contains("no resource at"),
        "{what}: not routed"
    );
    let op = &spec["paths"][template][method.to_lowercase()];
    assert!(op.is_object(), "{what}: route not in the document");
    let answer = &op["responses"][r.status.as_str()];
    assert!(answer.is_object(), "{what}: status not documented");
    let content_type = r.headers["content-type"].to_str().unwrap();
    let schema = &answer["content"][content_type]["schema"];
    assert!(
        schema.is_object(),
        "{what}: content type {content_type} not documented"
    );
    for (name, _) in answer["headers"].as_object().into_iter().flatten() {
        assert!(r.headers.contains_key(name.as_str()), "{what}: no {name} header");
    }
    let mut root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": spec["components"],
    });
    for (k, v) in schema.as_object().unwrap() {
        root[k] = v.clone();
    }
    let validator = jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{what}: bad schema: {e}"));
    let problems: Vec<String> = validator
        .iter_errors(&r.body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{what}: {problems:#?}");
    (method.to_owned(), template.to_owned())
}

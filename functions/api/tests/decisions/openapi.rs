//! `openapi.yaml` is the document generated from the API's types and route table, checked in; it documents
//! exactly the router's routes. Regenerate it with `STRATO_BLESS=1 cargo test -p strato-api --test decisions openapi`.

use std::collections::BTreeSet;

use serde_norway::Value;
use strato_api::routes::ROUTES;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml");

#[test]
fn the_checked_in_document_is_the_generated_one() {
    let generated = strato_api::openapi_yaml();
    if std::env::var_os("STRATO_BLESS").is_some() {
        std::fs::write(PATH, &generated).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        checked_in == generated,
        "functions/api/openapi.yaml is not the document the code generates; regenerate it with\n  \
         STRATO_BLESS=1 cargo test -p strato-api --test decisions openapi\nand review the diff"
    );
}

#[test]
fn openapi_documents_exactly_the_routes() {
    let doc: Value = serde_norway::from_str(&strato_api::openapi_yaml()).unwrap();
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")));
    let paths = doc["paths"].as_mapping().expect("paths");
    let mut documented = BTreeSet::new();
    for (p, item) in paths {
        let p = p.as_str().unwrap();
        let item = item.as_mapping().unwrap();
        for (k, op) in item {
            let k = k.as_str().unwrap();
            if METHODS.contains(&k) {
                assert!(
                    op["responses"].as_mapping().is_some_and(|r| !r.is_empty()),
                    "{k} {p}"
                );
                documented.insert((k.to_uppercase(), p.to_owned()));
            }
        }
    }
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    assert_eq!(routed.len(), ROUTES.len(), "a route is listed twice");
    assert_eq!(documented, routed);
}

#[test]
fn every_reference_resolves() {
    let doc: Value = serde_norway::from_str(&strato_api::openapi_yaml()).unwrap();
    fn walk(v: &Value, refs: &mut Vec<String>) {
        match v {
            Value::Mapping(m) => {
                for (k, v) in m {
                    if k.as_str() == Some("$ref") {
                        refs.push(v.as_str().unwrap().to_owned());
                    }
                    walk(v, refs);
                }
            }
            Value::Sequence(s) => s.iter().for_each(|v| walk(v, refs)),
            _ => {}
        }
    }
    let mut refs = Vec::new();
    walk(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let mut node = &doc;
        for part in r.trim_start_matches("#/").split('/') {
            node = &node[part];
        }
        assert!(!node.is_null(), "{r} does not resolve");
    }
}

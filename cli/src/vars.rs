//! Variables from the command line: `--var-file` (a JSON object, `.tfvars.json` included; `-` is stdin),
//! then `--var k=v` on top, each typed by the template's schema (`GET /v1/templates/{name}`). A value that
//! does not parse as its type is sent as the string typed, so the API's validation names the field and
//! what it allows — the API stays the one judge of what is valid.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::CliError;

/// The variables of one request. `schema` is the template's `variables` object (may be empty when the
/// template is not known, e.g. for `update` before the cluster is read).
pub fn collect(files: &[String], pairs: &[String], schema: &Value) -> Result<Map<String, Value>, CliError> {
    let mut vars = Map::new();
    for f in files {
        let text = if f == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| CliError::io(Path::new("(stdin)"), e))?;
            s
        } else {
            std::fs::read_to_string(f).map_err(|e| CliError::io(Path::new(f), e))?
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => vars.extend(m),
            Ok(_) => {
                return Err(CliError::Usage(format!(
                    "--var-file {f}: must be a JSON object of variables"
                )));
            }
            Err(e) => return Err(CliError::Usage(format!("--var-file {f}: not JSON ({e})"))),
        }
    }
    for p in pairs {
        let Some((k, v)) = p.split_once('=') else {
            return Err(CliError::Usage(format!("--var {p}: expected NAME=VALUE")));
        };
        let ty = schema[k]["type"].as_str().unwrap_or("string");
        vars.insert(k.trim().to_owned(), typed(ty, v));
    }
    Ok(vars)
}

/// `raw` as a value of the template type `ty` (`string`, `number`, `integer`, `bool`, `list(string)`,
/// `map(string)`), or the string itself when it is not one.
pub fn typed(ty: &str, raw: &str) -> Value {
    let s = || Value::String(raw.to_owned());
    match ty {
        "integer" => raw.trim().parse::<i64>().map(Value::from).unwrap_or_else(|_| s()),
        "number" => raw
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(s),
        "bool" => match raw.trim() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => s(),
        },
        t if t.starts_with("list") => {
            if raw.trim_start().starts_with('[') {
                serde_json::from_str(raw).unwrap_or_else(|_| s())
            } else if raw.is_empty() {
                Value::Array(Vec::new())
            } else {
                Value::Array(
                    raw.split(',')
                        .map(|x| Value::String(x.trim().to_owned()))
                        .collect(),
                )
            }
        }
        t if t.starts_with("map") => {
            if raw.trim_start().starts_with('{') {
                return serde_json::from_str(raw).unwrap_or_else(|_| s());
            }
            let mut m = BTreeMap::new();
            for kv in raw.split(',').filter(|x| !x.trim().is_empty()) {
                match kv.split_once('=') {
                    Some((k, v)) => m.insert(k.trim().to_owned(), Value::String(v.trim().to_owned())),
                    None => return s(),
                };
            }
            Value::Object(m.into_iter().collect())
        }
        _ => s(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_take_their_schema_type() {
        assert_eq!(typed("integer", "3"), json!(3));
        assert_eq!(
            typed("integer", "three"),
            json!("three"),
            "left for the API to refuse"
        );
        assert_eq!(typed("number", "2.5"), json!(2.5));
        assert_eq!(typed("bool", "true"), json!(true));
        assert_eq!(typed("list(string)", "a, b"), json!(["a", "b"]));
        assert_eq!(typed("list(string)", "[\"x\"]"), json!(["x"]));
        assert_eq!(
            typed("map(string)", "env=dev,team=core"),
            json!({"env": "dev", "team": "core"})
        );
        assert_eq!(typed("string", "007"), json!("007"));
    }

    #[test]
    fn flags_override_the_file_and_unknown_names_stay_strings() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("v.tfvars.json");
        std::fs::write(&f, r#"{"node_count": 2, "tags": {"a": "b"}}"#).unwrap();
        let schema = json!({"node_count": {"type": "integer"}});
        let vars = collect(
            &[f.display().to_string()],
            &["node_count=5".into(), "mystery=1".into()],
            &schema,
        )
        .unwrap();
        assert_eq!(
            Value::Object(vars),
            json!({"node_count": 5, "tags": {"a": "b"}, "mystery": "1"})
        );
        assert!(collect(&[], &["novalue".into()], &schema).is_err());
    }
}

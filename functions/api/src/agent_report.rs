//! The cluster agent's report as the API reads it: every problem with its field as one 400 (the agent is a
//! program, and its author should see all of them at once), within the bounds of `strato-agent-wire`.
//! The body's size is checked before it is read (413).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use strato_agent_wire::{
    Component, MAX_COMPONENTS, MAX_REPORT_BYTES, MAX_TEXT, MAX_WARNINGS, Report, Warning,
};
use strato_domain::validate::FieldError;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::requests::{Field, unknown};

/// `POST /v1/agent/register` and `/v1/agent/heartbeat`: what the agent saw in its cluster.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = AgentReportRequest)]
pub(crate) struct AgentBody {
    /// Nodes whose `Ready` condition is `True`.
    #[serde(default)]
    #[schema(value_type = u32, required = true)]
    pub nodes_ready: Field<u32>,
    /// All nodes the API server lists.
    #[serde(default)]
    #[schema(value_type = Option<u32>)]
    pub nodes_total: Field<u32>,
    /// The API server's `gitVersion`, e.g. `v1.31.2-eks-1234`.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 256)]
    pub kubernetes_version: Field<String>,
    /// Core components in `kube-system`, at most 32.
    #[serde(default)]
    #[schema(value_type = Option<Vec<AgentComponent>>, max_items = 32)]
    pub components: Field<Vec<Value>>,
    /// Recent `Warning` events, newest first, at most 20.
    #[serde(default)]
    #[schema(value_type = Option<Vec<AgentWarning>>, max_items = 20)]
    pub warnings: Field<Vec<Value>>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 256)]
    pub agent_version: Field<String>,
    /// Reports the agent could not deliver since its last delivered one.
    #[serde(default)]
    #[schema(value_type = Option<u32>)]
    pub missed_reports: Field<u32>,
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: BTreeMap<String, Value>,
}

/// A workload the cluster needs (`strato_agent_wire::Component`).
#[derive(Debug, Clone, ToSchema)]
#[allow(dead_code)] // Documents the wire shape; the report reads it as `strato_agent_wire::Component`.
pub(crate) struct AgentComponent {
    /// `dns`, `proxy` or `cni`.
    #[schema(max_length = 256)]
    pub role: String,
    #[schema(max_length = 256)]
    pub name: String,
    /// `Deployment` or `DaemonSet`.
    pub kind: String,
    pub ready: u32,
    pub desired: u32,
}

/// A recent `Warning` event (`strato_agent_wire::Warning`).
#[derive(Debug, Clone, ToSchema)]
#[allow(dead_code)] // Documents the wire shape; the report reads it as `strato_agent_wire::Warning`.
pub(crate) struct AgentWarning {
    #[schema(max_length = 256)]
    pub reason: String,
    /// `kind/namespace/name` of the object the event is about.
    #[schema(max_length = 256)]
    pub object: String,
    #[schema(max_length = 256)]
    pub message: String,
    pub count: u32,
    /// RFC 3339.
    pub last_seen: String,
}

const FIELDS: &str = "nodes_ready, nodes_total, kubernetes_version, components, warnings, agent_version, \
                      missed_reports";
const COMPONENT: &str =
    "{\"role\", \"name\", \"kind\": \"Deployment\"|\"DaemonSet\", \"ready\", \"desired\"}";
const WARNING: &str = "{\"reason\", \"object\", \"message\", \"count\", \"last_seen\"}";

fn text_fits(path: &str, value: &str, errors: &mut Vec<FieldError>) {
    let n = value.chars().count();
    if n > MAX_TEXT {
        errors.push(ApiError::field(
            path,
            format!("is {n} characters long"),
            format!("at most {MAX_TEXT} characters (the agent cuts longer text)"),
        ));
    }
}

fn count(field: Field<u32>, path: &str, required: bool, errors: &mut Vec<FieldError>) -> Option<u32> {
    let allowed = "a whole number from 0 to 4294967295";
    match field {
        Field::Ok(n) => Some(n),
        Field::Missing if required => {
            errors.push(ApiError::field(path, "is required", allowed));
            None
        }
        Field::Missing => Some(0),
        Field::Null | Field::Bad(_) => {
            errors.push(ApiError::field(path, "is not a whole number", allowed));
            None
        }
    }
}

/// A list member of at most `max` items, each read as `T` and checked by `check`.
fn list<T: serde::de::DeserializeOwned>(
    field: Field<Vec<Value>>,
    path: &str,
    max: usize,
    shape: &str,
    check: impl Fn(&str, &T, &mut Vec<FieldError>),
    errors: &mut Vec<FieldError>,
) -> Vec<T> {
    let items = match field {
        Field::Ok(v) => v,
        Field::Missing | Field::Null => return Vec::new(),
        Field::Bad(_) => {
            errors.push(ApiError::field(
                path,
                "must be a list",
                format!("a list of {shape}"),
            ));
            return Vec::new();
        }
    };
    if items.len() > max {
        errors.push(ApiError::field(
            path,
            format!("has {} items", items.len()),
            format!("at most {max} (the agent keeps the most relevant)"),
        ));
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, v) in items.into_iter().enumerate() {
        let at = format!("{path}[{i}]");
        match serde_json::from_value::<T>(v) {
            Ok(t) => {
                check(&at, &t, errors);
                out.push(t);
            }
            Err(e) => errors.push(ApiError::field(
                &at,
                format!("does not have the expected shape: {e}"),
                shape,
            )),
        }
    }
    out
}

/// Reads a report; a body over [`MAX_REPORT_BYTES`] is a 413 before anything reads it.
pub(crate) fn read(body: &[u8]) -> Result<Report, ApiError> {
    if body.len() > MAX_REPORT_BYTES {
        return Err(ApiError::PayloadTooLarge {
            size: body.len(),
            limit: MAX_REPORT_BYTES,
        });
    }
    let b: AgentBody = crate::requests::read(body)?;
    let mut errors = Vec::new();
    unknown(&b.other, "", "is not a field of a report", FIELDS, &mut errors);
    let nodes_ready = count(b.nodes_ready, "nodes_ready", true, &mut errors);
    let nodes_total = count(b.nodes_total, "nodes_total", false, &mut errors);
    let missed_reports = count(b.missed_reports, "missed_reports", false, &mut errors);
    let kubernetes_version = b.kubernetes_version.optional(
        "kubernetes_version",
        "must be a string",
        "the cluster's Kubernetes version, e.g. v1.31.2",
        &mut errors,
    );
    let agent_version = b.agent_version.optional(
        "agent_version",
        "must be a string",
        "the agent's version, e.g. 0.1.0",
        &mut errors,
    );
    for (path, v) in [
        ("kubernetes_version", &kubernetes_version),
        ("agent_version", &agent_version),
    ] {
        if let Some(v) = v {
            text_fits(path, v, &mut errors);
        }
    }
    let components = list::<Component>(
        b.components,
        "components",
        MAX_COMPONENTS,
        COMPONENT,
        |at, c, errors| {
            text_fits(&format!("{at}.role"), &c.role, errors);
            text_fits(&format!("{at}.name"), &c.name, errors);
        },
        &mut errors,
    );
    let warnings = list::<Warning>(
        b.warnings,
        "warnings",
        MAX_WARNINGS,
        WARNING,
        |at, w, errors| {
            text_fits(&format!("{at}.reason"), &w.reason, errors);
            text_fits(&format!("{at}.object"), &w.object, errors);
            text_fits(&format!("{at}.message"), &w.message, errors);
            text_fits(&format!("{at}.last_seen"), &w.last_seen, errors);
        },
        &mut errors,
    );
    match (nodes_ready, nodes_total, missed_reports) {
        (Some(nodes_ready), Some(nodes_total), Some(missed_reports)) if errors.is_empty() => Ok(Report {
            nodes_ready,
            nodes_total,
            kubernetes_version,
            components,
            warnings,
            agent_version,
            missed_reports,
        }),
        _ => Err(ApiError::BadRequest {
            detail: "the body must be an agent report ({\"nodes_ready\": <count>, ...}); see errors".into(),
            errors,
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(body: Value) -> Vec<String> {
        match read(body.to_string().as_bytes()) {
            Err(ApiError::BadRequest { errors, .. }) => errors.into_iter().map(|e| e.field).collect(),
            other => panic!("expected a 400: {other:?}"),
        }
    }

    #[test]
    fn a_full_report_reads() {
        let r = read(
            json!({"nodes_ready": 2, "nodes_total": 3, "kubernetes_version": "v1.31.2",
                "components": [{"role": "dns", "name": "coredns", "kind": "Deployment", "ready": 1, "desired": 2}],
                "warnings": [{"reason": "BackOff", "object": "Pod/kube-system/x", "message": "m", "count": 3,
                    "last_seen": "2026-11-30T10:00:00Z"}],
                "agent_version": "0.1.0", "missed_reports": 1})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        assert_eq!((r.nodes_ready, r.nodes_total, r.missed_reports), (2, 3, 1));
        assert_eq!(r.components[0].name, "coredns");
        assert_eq!(r.warnings[0].count, 3);
    }

    #[test]
    fn every_problem_names_its_field() {
        let long = "x".repeat(MAX_TEXT + 1);
        let got = fields(
            json!({"nodes_total": -1, "kubernetes_version": long, "agent_version": 3,
            "components": [{"role": "dns", "name": long, "kind": "Deployment", "ready": 1, "desired": 1},
                {"name": "x"}],
            "warnings": "none", "extra": 1}),
        );
        for f in [
            "nodes_ready",
            "nodes_total",
            "kubernetes_version",
            "agent_version",
            "components[0].name",
            "components[1]",
            "warnings",
            "extra",
        ] {
            assert!(got.iter().any(|g| g == f), "{f} missing from {got:?}");
        }
        let many: Vec<Value> = (0..=MAX_WARNINGS)
            .map(|_| json!({"reason": "r", "object": "o", "message": "m", "count": 1, "last_seen": "t"}))
            .collect();
        assert_eq!(
            fields(json!({"nodes_ready": 1, "warnings": many})),
            vec!["warnings"]
        );
    }

    #[test]
    fn an_oversized_body_is_413() {
        let body = format!(
            "{{\"nodes_ready\": 1, \"pad\": \"{}\"}}",
            "x".repeat(MAX_REPORT_BYTES)
        );
        assert!(matches!(
            read(body.as_bytes()),
            Err(ApiError::PayloadTooLarge { .. })
        ));
    }
}

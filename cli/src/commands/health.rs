//! A cluster's health as the CLI shows it: the detail's health lines (status, nodes Ready of requested,
//! Kubernetes version, unhealthy components, last report, reasons) and the list's degraded marker. The
//! values are the server's: every one goes through `cell`/`plain`, so none can carry a control sequence.

use serde_json::Value;

use crate::render::{Out, cell, plain, when};

/// The status, coloured by what it means.
fn status(out: &Out, h: &Value) -> String {
    let s = h["status"].as_str().unwrap_or("unknown");
    let style = match s {
        "healthy" => crate::error::GREEN,
        "degraded" => crate::error::YELLOW,
        _ => crate::error::DIM,
    };
    out.paint(&plain(s), style)
}

/// The list's marker after a cluster's state: ` degraded` when its agent reports it so, else nothing.
pub(crate) fn marker(out: &Out, h: &Value) -> String {
    if h["status"] == "degraded" {
        format!(" {}", out.paint("degraded", crate::error::YELLOW))
    } else {
        String::new()
    }
}

/// The detail's health lines.
pub(crate) fn lines(out: &Out, h: &Value) -> Vec<String> {
    let label = out.dim("health");
    if h["status"].as_str().unwrap_or("unknown") == "unknown" {
        return vec![format!("{label}  {} (no agent report yet)", status(out, h))];
    }
    let mut first = format!(
        "{label}  {} since {}: {}/{} nodes Ready",
        status(out, h),
        when(&h["since"]),
        cell(&h["nodes_ready"]),
        cell(&h["nodes_requested"]),
    );
    if let Some(v) = h["kubernetes_version"].as_str() {
        first.push_str(&format!(", Kubernetes {}", plain(v)));
    }
    first.push_str(&format!(", last report {}", when(&h["last_seen"])));
    let mut out_lines = vec![first];
    let unhealthy: Vec<String> = h["unhealthy_components"]
        .as_array()
        .into_iter()
        .flatten()
        .map(cell)
        .collect();
    if !unhealthy.is_empty() {
        out_lines.push(format!("  unhealthy components: {}", unhealthy.join(", ")));
    }
    for r in h["reasons"].as_array().into_iter().flatten() {
        out_lines.push(format!("  - {}", cell(r)));
    }
    for w in h["warnings"].as_array().into_iter().flatten() {
        out_lines.push(format!(
            "  warning {} {}: {}",
            cell(&w["reason"]),
            cell(&w["object"]),
            cell(&w["message"])
        ));
    }
    out_lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::render::Format;

    fn out() -> Out {
        Out {
            format: Format::Table,
            color: false,
            interactive: false,
        }
    }

    #[test]
    fn a_degraded_cluster_shows_why_and_its_marker() {
        let h = json!({"status": "degraded", "since": "2026-11-30T10:00:00.000000Z", "nodes_ready": 1,
            "nodes_requested": 3, "kubernetes_version": "v1.31.2", "last_seen": "2026-11-30T10:05:00.000000Z",
            "unhealthy_components": ["coredns"], "reasons": ["1 of 3 requested nodes are Ready"],
            "warnings": [{"reason": "BackOff", "object": "Pod/kube-system/coredns-1", "message": "restarting"}]});
        let text = lines(&out(), &h).join("\n");
        for part in [
            "degraded since 2026-11-30 10:00:00",
            "1/3 nodes Ready",
            "Kubernetes v1.31.2",
            "last report 2026-11-30 10:05:00",
            "unhealthy components: coredns",
            "- 1 of 3 requested nodes are Ready",
            "warning BackOff Pod/kube-system/coredns-1: restarting",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        assert_eq!(marker(&out(), &h), " degraded");
    }

    #[test]
    fn healthy_and_unknown_read_plainly_without_a_marker() {
        let healthy = json!({"status": "healthy", "since": "2026-11-30T10:00:00Z", "nodes_ready": 3,
            "nodes_requested": 3, "last_seen": "2026-11-30T10:00:00Z"});
        assert_eq!(lines(&out(), &healthy).len(), 1);
        assert_eq!(marker(&out(), &healthy), "");
        let unknown = json!({"status": "unknown"});
        assert!(lines(&out(), &unknown)[0].contains("no agent report yet"));
        assert_eq!(marker(&out(), &json!(null)), "");
        let hostile = json!({"status": "degraded\u{1b}[2J", "reasons": ["x\u{1b}]0;t\u{7}"]});
        assert!(!lines(&out(), &hostile).join("").contains('\u{1b}'));
    }
}

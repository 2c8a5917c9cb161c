//! What can go wrong, how it is shown, and the exit code scripts can branch on.

use std::path::Path;

use serde::Deserialize;
use strato_domain::validate::FieldError;

use crate::text::plain;

/// Exit codes (cli/README.md, Usage; `strato --help` repeats them).
pub mod exit {
    pub const OK: u8 = 0;
    /// Anything not classified below (a local file unreadable, a broken terminal).
    pub const OTHER: u8 = 1;
    /// Bad flags or arguments (clap's own code), no endpoint, an unknown profile.
    pub const USAGE: u8 = 2;
    /// 401/403: no token, an expired or wrong one.
    pub const AUTH: u8 = 3;
    /// 404: no such cluster, operation or template (another tenant's ids look the same).
    pub const NOT_FOUND: u8 = 4;
    /// 409/412: the cluster is busy, in the wrong state, or changed since it was read.
    pub const CONFLICT: u8 = 5;
    /// 400/413/415/422: the request was refused; every field's problem is printed.
    pub const VALIDATION: u8 = 6;
    /// 429, 5xx, or Strato could not be reached.
    pub const SERVER: u8 = 7;
    /// `--wait`, `watch`, `logs -f`: the operation ended failed or cancelled.
    pub const OPERATION_FAILED: u8 = 8;
    /// `--wait`, `watch`, `logs -f`: the operation waits for an approver (`strato operations approve`).
    pub const AWAITING_APPROVAL: u8 = 9;
    /// A destructive command was not confirmed: declined at its question, or no terminal to ask on and
    /// no `--yes`.
    pub const NOT_CONFIRMED: u8 = 10;
}

/// An RFC 9457 problem document, as Strato's API answers every 4xx/5xx (`Problem` in its OpenAPI).
#[derive(Debug, Clone, Deserialize)]
pub struct Problem {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub status: u16,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub errors: Vec<FieldError>,
    #[serde(default)]
    pub request_id: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{method} {url}: could not reach Strato: {source}")]
    Unreachable {
        method: String,
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The API answered with a problem (or a non-JSON error body, kept as `detail`).
    #[error("{}", render_problem(.0, false))]
    Api(Box<Problem>),
    #[error("{method} {path}: unexpected answer ({status}): {body}")]
    Unexpected {
        method: String,
        path: String,
        status: u16,
        body: String,
    },
    #[error("live logs: {0}")]
    Stream(String),
    /// The followed operation ended without succeeding; its own error was already printed.
    #[error("operation {id} ended {status}")]
    OperationFailed { id: String, status: String },
    /// The followed operation stopped after its plan to wait for an approver.
    #[error("operation {0} awaits approval: strato operations approve {0} (or reject)")]
    AwaitingApproval(String),
    /// A destructive command was not confirmed; the message says how to confirm it.
    #[error("{0}")]
    NotConfirmed(String),
    /// A cluster name that names none of the tenant's clusters (exit 4, as a 404).
    #[error("{0}")]
    NotFound(String),
}

impl CliError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => exit::USAGE,
            Self::Io { .. } => exit::OTHER,
            Self::Unreachable { .. } | Self::Unexpected { .. } | Self::Stream(_) => exit::SERVER,
            Self::Api(p) => match p.status {
                401 | 403 => exit::AUTH,
                404 => exit::NOT_FOUND,
                409 | 412 | 428 => exit::CONFLICT,
                400 | 405 | 413 | 415 | 422 => exit::VALIDATION,
                _ => exit::SERVER,
            },
            Self::OperationFailed { .. } => exit::OPERATION_FAILED,
            Self::AwaitingApproval(_) => exit::AWAITING_APPROVAL,
            Self::NotConfirmed(_) => exit::NOT_CONFIRMED,
            Self::NotFound(_) => exit::NOT_FOUND,
        }
    }

    /// How it is printed on a terminal (colour when `color`).
    pub fn render(&self, color: bool) -> String {
        match self {
            Self::Api(p) => render_problem(p, color),
            // Messages quote the server (bodies, WebSocket errors): no control sequence of theirs is printed.
            other => format!("{} {}", paint("error:", RED, color), plain(&other.to_string())),
        }
    }
}

pub(crate) const RED: &str = "31";
pub(crate) const YELLOW: &str = "33";
pub(crate) const GREEN: &str = "32";
pub(crate) const DIM: &str = "2";
pub(crate) const BOLD: &str = "1";

/// `text` in an ANSI style when `on`.
pub(crate) fn paint(text: &str, style: &str, on: bool) -> String {
    if on {
        format!("\x1b[{style}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// What went wrong, each field with its problem and what is allowed, and the request id to quote.
pub fn render_problem(p: &Problem, color: bool) -> String {
    let mut out = format!(
        "{} {} ({})",
        paint("error:", RED, color),
        if p.title.is_empty() {
            "request refused".to_owned()
        } else {
            plain(&p.title)
        },
        p.status
    );
    if !p.detail.is_empty() {
        out.push_str(&format!("\n  {}", plain(&p.detail)));
    }
    for e in &p.errors {
        out.push_str(&format!(
            "\n  {} {}\n      allowed: {}",
            paint(&format!("{}:", plain(&e.field)), BOLD, color),
            plain(&e.problem),
            plain(&e.allowed)
        ));
    }
    if let Some(id) = &p.request_id {
        out.push_str(&format!(
            "\n  {}",
            paint(&format!("request id: {}", plain(id)), DIM, color)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(status: u16) -> CliError {
        CliError::Api(Box::new(
            serde_json::from_value(serde_json::json!({
                "type": "urn:strato:problem:validation", "title": "Invalid request", "status": status,
                "detail": "2 fields are invalid",
                "errors": [
                    {"field": "variables.node_count", "problem": "must be at most 50", "allowed": "1..=50"},
                    {"field": "region", "problem": "unknown region", "allowed": "a region of aws"}
                ],
                "request_id": "req-1"
            }))
            .unwrap(),
        ))
    }

    #[test]
    fn a_problem_shows_every_field_with_what_is_allowed_and_the_request_id() {
        let text = problem(422).render(false);
        for needle in [
            "Invalid request (422)",
            "2 fields are invalid",
            "variables.node_count: must be at most 50",
            "allowed: 1..=50",
            "region: unknown region",
            "request id: req-1",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
        }
        assert!(!text.contains('\x1b'), "no colour unless asked");
    }

    #[test]
    fn statuses_map_to_the_documented_exit_codes() {
        let codes: Vec<u8> = [401, 403, 404, 409, 412, 400, 422, 429, 500, 503]
            .into_iter()
            .map(|s| problem(s).exit_code())
            .collect();
        assert_eq!(codes, [3, 3, 4, 5, 5, 6, 6, 7, 7, 7]);
        let failed = CliError::OperationFailed {
            id: "op-1".into(),
            status: "failed".into(),
        };
        assert_eq!(failed.exit_code(), exit::OPERATION_FAILED);
    }
}

//! Output: human tables by default, `-o json|yaml` for scripts (the API's own answer, unchanged), colour
//! only on a terminal and never with `NO_COLOR`/`--no-color`.

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{ContentArrangement, Table};
use serde_json::Value;

use crate::error::{BOLD, CliError, DIM, GREEN, RED, YELLOW, paint};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Yaml,
}

#[derive(Debug, Clone, Copy)]
pub struct Out {
    pub format: Format,
    /// ANSI colour on stdout.
    pub color: bool,
    /// stderr is a terminal: progress spinners are allowed.
    pub interactive: bool,
}

impl Out {
    pub fn machine(&self) -> bool {
        self.format != Format::Table
    }

    /// The API's answer as JSON or YAML; `false` when the format is a table (the caller draws it).
    pub fn raw(&self, v: &Value) -> Result<bool, CliError> {
        match self.format {
            Format::Table => Ok(false),
            Format::Json => {
                println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
                Ok(true)
            }
            Format::Yaml => {
                let y = serde_norway::to_string(v)
                    .map_err(|e| CliError::Usage(format!("cannot write YAML: {e}")))?;
                print!("{y}");
                Ok(true)
            }
        }
    }

    pub fn paint(&self, text: &str, style: &str) -> String {
        paint(text, style, self.color)
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint(text, BOLD)
    }

    pub fn dim(&self, text: &str) -> String {
        self.paint(text, DIM)
    }

    /// A cluster state or operation status, coloured by what it means.
    pub fn state(&self, s: &str) -> String {
        let style = match s {
            "ACTIVE" | "succeeded" | "DELETED" => GREEN,
            "FAILED" | "failed" => RED,
            "cancelled" => DIM,
            _ => YELLOW,
        };
        self.paint(&plain(s), style)
    }

    pub fn table(&self, header: &[&str]) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_BORDERS_ONLY)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_header(header.iter().map(|h| self.bold(h)));
        t
    }

    /// `key  value` lines, keys aligned.
    pub fn fields(&self, rows: &[(&str, String)]) {
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in rows {
            println!("{}  {v}", self.dim(&format!("{k:<width$}")));
        }
    }
}

pub use crate::text::plain;

/// A JSON value as one table cell: strings bare (control sequences removed: [`plain`]), null as `-`, the
/// rest as compact JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => plain(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        // JSON escapes C0 characters in strings but not C1 ones.
        other => plain(&other.to_string()),
    }
}

/// A value for a table or summary line, cut to `max` characters (certificates and kubeconfigs are long;
/// `-o json` has them whole).
pub fn clipped(v: &Value, max: usize) -> String {
    let s = cell(v);
    let n = s.chars().count();
    if n <= max {
        return s;
    }
    let head: String = s.chars().take(max.saturating_sub(20)).collect();
    format!("{head}… ({n} chars; -o json shows all)")
}

/// `2026-11-25T08:01:02.123Z` → `2026-11-25 08:01:02`, for tables.
pub fn when(v: &Value) -> String {
    match v.as_str() {
        Some(s) if s.len() >= 19 && s.is_char_boundary(19) => plain(&s[..19]).replace('T', " "),
        _ => cell(v),
    }
}

/// An operation's error `{what, step, fix}` as the lines a user acts on.
pub fn user_error(out: &Out, e: &Value) -> Vec<String> {
    if e.is_null() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "{} {}",
        out.paint("failed:", RED),
        plain(e["what"].as_str().unwrap_or("(no description)"))
    )];
    if let Some(step) = e["step"].as_str() {
        lines.push(format!("  at step: {}", plain(step)));
    }
    if let Some(fix) = e["fix"].as_str() {
        lines.push(format!("  fix:     {}", plain(fix)));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells_and_times_read_plainly() {
        assert_eq!(cell(&json!(null)), "-");
        assert_eq!(cell(&json!("x")), "x");
        assert_eq!(cell(&json!([1, 2])), "[1,2]");
        let long = json!("x".repeat(500));
        let c = clipped(&long, 80);
        assert!(c.chars().count() < 120 && c.contains("500 chars"), "{c}");
        assert_eq!(clipped(&json!("short"), 80), "short");
        assert_eq!(when(&json!("2026-11-25T08:01:02.123Z")), "2026-11-25 08:01:02");
    }

    #[test]
    fn server_values_in_cells_and_errors_carry_no_control_sequence() {
        let out = Out {
            format: Format::Table,
            color: true,
            interactive: false,
        };
        assert_eq!(cell(&json!("a\x1b]0;t\x07b")), "ab");
        assert_eq!(cell(&json!(["\u{9b}2J"])), r#"[""]"#);
        assert_eq!(when(&json!("2026-11-25T08:01\x1b[2J")), "2026-11-25 08:01");
        let lines = user_error(
            &out,
            &json!({"what": "bad\x1b]52;c;eA==\x07", "step": "apply\r", "fix": "\u{9b}1Aretry"}),
        )
        .join("\n");
        assert!(lines.contains("bad") && lines.contains("retry"), "{lines:?}");
        // Only the CLI's own colour (`failed:` in red) remains.
        assert_eq!(lines.matches('\x1b').count(), 2, "{lines:?}");
        for c in ['\x07', '\r', '\u{9b}'] {
            assert!(!lines.contains(c), "{lines:?}");
        }
        assert_eq!(out.state("X\x1b[8m"), "\x1b[33mX\x1b[0m");
    }

    #[test]
    fn no_colour_means_no_escape_codes() {
        let out = Out {
            format: Format::Table,
            color: false,
            interactive: false,
        };
        assert_eq!(out.state("FAILED"), "FAILED");
        let mut t = out.table(&["A"]);
        t.add_row(vec!["b"]);
        assert!(!t.to_string().contains('\x1b'));
    }
}

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

/// Server text made safe for a terminal: every control sequence and control character removed — CSI
/// (`ESC [` and C1 `0x9B`), OSC (`ESC ]`, `0x9D`: titles, hyperlinks, clipboard writes), DCS / SOS / PM /
/// APC strings, other two-character escapes, the rest of C1 and every C0 but `\n` and `\t` (`\r` and
/// backspace rewrite what is already on screen). Log lines, notes, comments and problem texts are written
/// by tenants' modules, users and the API; only the CLI's own colours (added after this) reach the
/// terminal as escapes.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\x1b' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // `ESC` + intermediates (0x20–0x2F) + one final byte, e.g. `ESC ( 0` (line drawing), `ESC c`.
                Some(' '..='/') => {
                    while chars.next_if(|c| (' '..='/').contains(c)).is_some() {}
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The parameters and final byte of a CSI sequence (its introducer already read).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            break;
        }
    }
}

/// The body of an OSC / DCS / SOS / PM / APC string, up to its terminator: BEL, `ESC \\` or C1 ST. An
/// unterminated one swallows the rest (a terminal would too).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\x07' | '\u{9c}' => break,
            '\x1b' => {
                chars.next_if_eq(&'\\');
                break;
            }
            _ => {}
        }
    }
}

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
    fn every_control_sequence_is_removed_and_the_text_kept() {
        for (raw, shown) in [
            ("\x1b[1m\x1b[32mApply complete!\x1b[0m ok", "Apply complete! ok"),
            ("\x1b[2J\x1b[Hcleared", "cleared"),
            // OSC: window title (BEL), hyperlink and clipboard write (ST), C1 OSC.
            ("a\x1b]0;pwned\x07b", "ab"),
            ("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\", "link"),
            ("x\x1b]52;c;ZXZpbA==\x1b\\y", "xy"),
            ("x\u{9d}0;title\u{9c}y", "xy"),
            // C1 CSI, DCS, APC, and stray C1 characters.
            ("x\u{9b}31my", "xy"),
            ("x\x1bPq#0;2;0;0;0\x1b\\y", "xy"),
            ("x\x1b_payload\x1b\\y", "xy"),
            ("x\u{85}\u{8d}y", "xy"),
            // Two-character escapes and character-set switches.
            ("x\x1bcy", "xy"),
            ("x\x1b(0qqq\x1b(By", "xqqqy"),
            // C0 beyond \n and \t: carriage return, backspace, bell, DEL.
            ("approved\rrejected\x08\x07\x7f!", "approvedrejected!"),
            ("two\n\tlines", "two\n\tlines"),
            ("plain [x] ünïcode ✓", "plain [x] ünïcode ✓"),
            // Unterminated strings end the text, as a terminal would read them.
            ("ok\x1b]0;never ends", "ok"),
            ("ends with\x1b", "ends with"),
        ] {
            assert_eq!(plain(raw), shown, "{raw:?}");
        }
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

//! Text from elsewhere made safe for a terminal. Both the renderer and the error messages use it, so it sits
//! below both.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

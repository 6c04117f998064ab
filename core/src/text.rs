//! The one sanitiser for text that came from a client (a report's message, a node name, a value
//! echoed back in a finding) before it is shown in `launchguard status`, written to a log or printed
//! on a terminal.
//!
//! Such text may carry characters that make a line lie about itself: a newline or carriage return
//! (a forged second log line), terminal escape sequences (`ESC [ …`), and Unicode's invisible
//! *format* characters — the bidirectional overrides and isolates U+202A–U+202E and U+2066–U+2069
//! that reorder what a reader sees (the "Trojan Source" trick, CVE-2021-42574), zero-width spaces
//! and joiners U+200B–U+200F, the line and paragraph separators U+2028/U+2029, the byte order mark
//! U+FEFF and the other characters of Unicode's general category `Cf`. [`printable`] turns line
//! breaks and tabs into spaces and every other control character (ESC, BEL, DEL, the C1 controls
//! such as CSI U+009B) and the invisible ones into a visible `<U+001B>`, `<U+202E>`, then clips the
//! result; so an OSC 52 clipboard write, a screen clear or a colour change arrives as text.
//! [`printable_lines`] does the same line by line for a whole report, and [`csv_text`] adds
//! CSV-injection care for a spreadsheet cell.

/// Whether `c` is invisible when printed but changes how the text around it reads: Unicode's
/// general category `Cf` (format; Unicode 15.1), the line/paragraph separators `Zl`/`Zp`, and the
/// variation selectors. Control characters (`Cc`) are not included: see [`printable`].
pub fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xE0100..=0xE01EF
    )
}

/// `s` made safe to show on one line: a newline, carriage return or tab becomes a space, every
/// other control character (C0 such as ESC and BEL, DEL, C1 such as U+009B CSI) and every invisible
/// format character ([`is_invisible`]) becomes a visible `<U+XXXX>`, and at most `max` characters of
/// `s` are kept (`…` marks a cut). Printable text, accents and scripts are kept as they are.
pub fn printable(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)));
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if matches!(c, '\n' | '\r' | '\t') {
            out.push(' ');
        } else if c.is_control() || is_invisible(c) {
            out.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A whole multi-line report made safe for a terminal: each line by [`printable`] (unclipped), the
/// line breaks kept. For text built from parts that came from input; a part that could itself hold
/// a newline (a file name, a JSON string) must be cleaned on its own first, or it forges a line.
pub fn printable_lines(s: &str) -> String {
    if !s
        .chars()
        .any(|c| (c.is_control() && c != '\n') || is_invisible(c))
    {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&printable(line, usize::MAX));
    }
    out
}

/// A CSV cell's text: [`printable`] (unclipped), and a cell that a spreadsheet would read as a
/// formula (it starts with `=`, `+`, `-`, `@`, a tab or a carriage return; OWASP "CSV Injection")
/// gets a leading `'`. For text cells only: a negative number stays a number.
pub fn csv_text(s: &str) -> String {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let clean = printable(s, usize::MAX);
    if formula {
        format!("'{clean}")
    } else {
        clean
    }
}

/// Whether [`printable`] would change `s` (apart from clipping).
pub fn needs_cleaning(s: &str) -> bool {
    s.chars().any(|c| c.is_control() || is_invisible(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_zero_width_and_controls_are_neutralised() {
        assert_eq!(
            printable("ok\u{202E}gnp.exe\u{202C}", 100),
            "ok<U+202E>gnp.exe<U+202C>"
        );
        assert_eq!(
            printable("a\u{200B}b\u{2066}c\u{2069}", 100),
            "a<U+200B>b<U+2066>c<U+2069>"
        );
        assert_eq!(
            printable("x\ny\u{1b}[31mz\u{85}\t\u{7f}", 100),
            "x y<U+001B>[31mz<U+0085> <U+007F>"
        );
        // OSC 52 (writes the clipboard), a screen clear, a C1 CSI: shown, not obeyed
        assert_eq!(
            printable("\u{1b}]52;c;SGk=\u{7}\u{1b}[2J\u{9b}31m", 100),
            "<U+001B>]52;c;SGk=<U+0007><U+001B>[2J<U+009B>31m"
        );
        assert_eq!(printable("a\u{2028}b\u{FEFF}", 100), "a<U+2028>b<U+FEFF>");
        assert_eq!(printable("grüße 東京 ok", 100), "grüße 東京 ok");
        assert_eq!(printable("abcdef", 3), "abc…");
        assert!(needs_cleaning("\u{202E}") && !needs_cleaning("plain é"));
    }

    #[test]
    fn reports_keep_their_lines_and_csv_cells_are_not_formulas() {
        assert_eq!(printable_lines("a\n\u{1b}[2Jb\n"), "a\n<U+001B>[2Jb\n");
        assert_eq!(printable_lines("plain\nlines\n"), "plain\nlines\n");
        for (cell, want) in [
            ("=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"),
            ("+1", "'+1"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "' x"),
            ("\rx", "' x"),
            ("gpu-1", "gpu-1"),
            ("a\u{202E}b", "a<U+202E>b"),
        ] {
            assert_eq!(csv_text(cell), want, "{cell:?}");
        }
    }

    #[test]
    fn output_never_holds_a_control_or_invisible_character() {
        // every code point up to the supplementary planes' tags, in one string
        let all: String = (0..0xE0200u32).filter_map(char::from_u32).collect();
        let out = printable(&all, usize::MAX);
        assert!(!needs_cleaning(&out));
        assert!(!out.contains('\n'));
    }
}

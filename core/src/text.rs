//! The one sanitiser for text that came from a client (a report's message, a node name, a value
//! echoed back in a finding) before it is shown in `launchguard status`, written to a log or printed
//! on a terminal.
//!
//! Such text may carry characters that make a line lie about itself: a newline or carriage return
//! (a forged second log line), terminal escape sequences (`ESC [ …`), and Unicode's invisible
//! *format* characters — the bidirectional overrides and isolates U+202A–U+202E and U+2066–U+2069
//! that reorder what a reader sees (the "Trojan Source" trick, CVE-2021-42574), zero-width spaces
//! and joiners U+200B–U+200F, the line and paragraph separators U+2028/U+2029, the byte order mark
//! U+FEFF and the other characters of Unicode's general category `Cf`. [`printable`] turns control
//! characters into spaces and the invisible ones into a visible `<U+202E>`, then clips the result.

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

/// `s` made safe to show on one line: control characters (newline, ESC, DEL, C1) become a space,
/// invisible format characters ([`is_invisible`]) become `<U+XXXX>`, and at most `max` characters of
/// `s` are kept (`…` marks a cut). Printable text, accents and scripts are kept as they are.
pub fn printable(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)));
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push(' ');
        } else if is_invisible(c) {
            out.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            out.push(c);
        }
    }
    out
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
        assert_eq!(printable("x\ny\u{1b}[31mz\u{85}", 100), "x y [31mz ");
        assert_eq!(printable("a\u{2028}b\u{FEFF}", 100), "a<U+2028>b<U+FEFF>");
        assert_eq!(printable("grüße 東京 ok", 100), "grüße 東京 ok");
        assert_eq!(printable("abcdef", 3), "abc…");
        assert!(needs_cleaning("\u{202E}") && !needs_cleaning("plain é"));
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

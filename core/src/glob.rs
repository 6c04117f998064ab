//! Matching of one path component against a glob(3) pattern, as Slurm's `include` lines in
//! plugstack.conf expand them: `glob(pattern, 0, NULL, &gl)` (spank(8); `_spank_conf_include` in
//! Slurm's src/common/plugstack.c, src/common/spank.c from 23.02). With flags 0 (POSIX glob(3),
//! fnmatch(3) and glibc's glob(3) page):
//! - `*` matches any run of characters, `?` one character, `[…]` one of a set (`[!…]` or `[^…]`
//!   negated, `a-z` ranges, a `]` first in the set is literal);
//! - a leading `.` of a name is matched only by a literal `.` in the pattern (no `GLOB_PERIOD`), so
//!   `*` never matches vim's `.pyxis.conf.swp`, while `*` does match `pyxis.conf~` and
//!   `pyxis.conf.rpmsave`;
//! - `\` quotes the next character (no `GLOB_NOESCAPE`);
//! - no `{a,b}` braces and no `~` expansion (no `GLOB_BRACE`, `GLOB_TILDE`).
//!
//! Directory walking lives with the callers (the agent); this is the pure part.

/// Whether `s` holds an unquoted `*`, `?` or `[`, i.e. glob(3) must read a directory for it.
pub fn has_magic(s: &str) -> bool {
    let mut esc = false;
    for c in s.chars() {
        match c {
            _ if esc => esc = false,
            '\\' => esc = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// A pattern component without magic, its `\` quotes removed (the literal name glob(3) looks for).
pub fn unquote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut esc = false;
    for c in s.chars() {
        if !esc && c == '\\' {
            esc = true;
            continue;
        }
        esc = false;
        out.push(c);
    }
    out
}

/// Whether the file name `name` (one component, no `/`) matches the pattern component `pat` as
/// glob(3) with flags 0 matches it. `.` and `..` never match a pattern with magic.
pub fn matches(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if n.first() == Some(&'.') && p.first() != Some(&'.') {
        // A leading period must be matched by a literal one (a quoted `\.` counts too).
        if !(p.first() == Some(&'\\') && p.get(1) == Some(&'.')) {
            return false;
        }
    }
    if (name == "." || name == "..") && has_magic(pat) {
        return false;
    }
    match_from(&p, &n)
}

/// Classic backtracking match: `*` remembers where it can resume.
fn match_from(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi + 1, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') => match bracket(p, pi, n[ni]) {
                Some((true, next)) => Some(next),
                Some((false, _)) => None,
                // An unclosed `[` is a literal `[`.
                None => (n[ni] == '[').then_some(pi + 1),
            },
            Some('\\') if pi + 1 < p.len() => (p[pi + 1] == n[ni]).then_some(pi + 2),
            Some(c) => (*c == n[ni]).then_some(pi + 1),
            None => None,
        };
        match step {
            Some(next) => {
                pi = next;
                ni += 1;
            }
            None => match star {
                // Let the last `*` swallow one more character and retry.
                Some((sp, sn)) => {
                    pi = sp;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Matches `c` against the set that opens at `p[open]` (`[`): `Some((matched, index after ']'))`,
/// or `None` when the set is not closed.
fn bracket(p: &[char], open: usize, c: char) -> Option<(bool, usize)> {
    let mut i = open + 1;
    let negate = matches!(p.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        let lo = if lo == '\\' {
            i += 1;
            *p.get(i)?
        } else {
            lo
        };
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|h| *h != ']') {
            let hi = p[i + 2];
            hit |= lo <= c && c <= hi;
            i += 3;
        } else {
            hit |= lo == c;
            i += 1;
        }
    }
}

/// What kind of leftover a file name is, when it is the name of an editor's backup or swap file or
/// of a package manager's saved copy of an edited configuration file: `pyxis.conf~` (Emacs, vim's
/// `backup`), `.pyxis.conf.swp`/`.swo` (vim), `#pyxis.conf#` (Emacs auto-save), `.bak`/`.orig`/
/// `.old`/`.save`, `.rpmsave`/`.rpmnew`/`.rpmorig` (rpm(8)), `.dpkg-old`/`.dpkg-dist`/`.dpkg-new`/
/// `.dpkg-bak`/`.ucf-old`/`.ucf-dist` (dpkg(1), ucf(1)). `None` for any other name.
pub fn leftover_kind(name: &str) -> Option<&'static str> {
    const PACKAGE: &[&str] = &[
        ".rpmsave",
        ".rpmnew",
        ".rpmorig",
        ".dpkg-old",
        ".dpkg-dist",
        ".dpkg-new",
        ".dpkg-bak",
        ".dpkg-tmp",
        ".ucf-old",
        ".ucf-dist",
        ".ucf-new",
    ];
    const EDITOR: &[&str] = &[
        ".swp", ".swo", ".swx", ".bak", ".orig", ".old", ".save", ".tmp",
    ];
    if PACKAGE.iter().any(|s| name.ends_with(s)) {
        return Some("a package manager's saved copy");
    }
    if name.ends_with('~')
        || (name.starts_with('#') && name.ends_with('#') && name.len() > 1)
        || EDITOR.iter().any(|s| name.ends_with(s))
    {
        return Some("an editor's backup or swap file");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_question_and_sets_match_as_glob_does() {
        assert!(matches("*.conf", "pyxis.conf"));
        assert!(!matches("*.conf", "pyxis.conf~"));
        assert!(!matches("*.conf", "pyxis.conf.rpmsave"));
        assert!(matches("*", "pyxis.conf~"));
        assert!(matches("*", "pyxis.conf.dpkg-old"));
        assert!(matches("*conf*", "pyxis.conf.rpmsave"));
        assert!(matches("??-*.conf", "50-x.conf"));
        assert!(!matches("??-*.conf", "5-x.conf"));
        assert!(matches("[0-9]*", "50-x.conf"));
        assert!(!matches("[!0-9]*", "50-x.conf"));
        assert!(matches("[^0-9]*", "zz-launchguard.conf"));
        assert!(matches("[]]x", "]x"));
        assert!(matches("a[", "a["));
        assert!(matches("\\*", "*"));
        assert!(!matches("\\*", "x"));
        assert!(matches("*a*b*c", "xxaxxbxxc"));
        assert!(!matches("*a*b*c", "xxaxxcxxb"));
        assert!(matches("", ""));
        assert!(!matches("", "x"));
    }

    /// glob(3) without GLOB_PERIOD: a leading dot is never matched by a wildcard, so vim's swap
    /// file beside `pyxis.conf` is not read through `*`, but is through `.*`.
    #[test]
    fn a_leading_dot_needs_a_literal_dot() {
        assert!(!matches("*", ".pyxis.conf.swp"));
        assert!(!matches("?pyxis.conf.swp", ".pyxis.conf.swp"));
        assert!(!matches("[.]pyxis.conf.swp", ".pyxis.conf.swp"));
        assert!(matches(".*", ".pyxis.conf.swp"));
        assert!(!matches(".*", "."));
        assert!(!matches(".*", ".."));
        assert!(matches("\\.*", ".x"));
    }

    #[test]
    fn magic_and_quotes() {
        assert!(has_magic("*.conf"));
        assert!(has_magic("a[bc]"));
        assert!(!has_magic("plugstack.conf"));
        assert!(!has_magic("a\\*b"));
        assert_eq!(unquote("a\\*b"), "a*b");
    }

    #[test]
    fn leftovers_are_named() {
        for n in [
            "pyxis.conf~",
            ".pyxis.conf.swp",
            "#pyxis.conf#",
            "pyxis.conf.bak",
            "pyxis.conf.orig",
        ] {
            assert_eq!(
                leftover_kind(n),
                Some("an editor's backup or swap file"),
                "{n}"
            );
        }
        for n in [
            "pyxis.conf.rpmsave",
            "pyxis.conf.rpmnew",
            "pyxis.conf.dpkg-old",
            "pyxis.conf.dpkg-dist",
            "pyxis.conf.ucf-old",
        ] {
            assert_eq!(
                leftover_kind(n),
                Some("a package manager's saved copy"),
                "{n}"
            );
        }
        for n in ["pyxis.conf", "zz-launchguard.conf", "#", "oldies.conf"] {
            assert_eq!(leftover_kind(n), None, "{n}");
        }
    }
}

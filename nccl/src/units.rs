//! Sizes as nccl-tests spells them on its command line (`-e 16G`: K/M/G/T are powers of 1024).

/// Parses `17179869184`, `16G`, `16GB`, `512M`, `1k` into bytes. `None` on anything else or overflow.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s
        .strip_suffix(['B', 'b'])
        .filter(|r| r.ends_with(|c: char| c.is_ascii_alphabetic()))
        .unwrap_or(s);
    let (digits, mult) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        b't' | b'T' => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// `1073741824` -> `1 GiB`, `1048576` -> `1 MiB`, `1000` -> `1000 B` (exact multiples only).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for (m, u) in UNITS {
        if bytes >= m && bytes % m == 0 {
            return format!("{} {u}", bytes / m);
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("16G"), Some(17179869184));
        assert_eq!(parse_size("16GB"), Some(17179869184));
        assert_eq!(parse_size("8"), Some(8));
        assert_eq!(parse_size("1k"), Some(1024));
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("99999999999T"), None);
        assert_eq!(human_size(1073741824), "1 GiB");
        assert_eq!(human_size(1000), "1000 B");
    }
}

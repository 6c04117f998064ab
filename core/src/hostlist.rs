//! Slurm's bracket expressions, as used by `NodeName=gpu-[01-16]` and `File=/dev/nvidia[0-7]` in
//! slurm.conf and gres.conf (slurm.conf(5) "hostlist expressions"; gres.conf(5) `File`).
//!
//! Written here rather than taken from `hostlist-parser` because that crate's grammar accepts host
//! names only (letters, digits, `-`, `.`), and gres.conf's `File=` values are paths.

/// Most names one expression may expand to (a guard against `[0-999999999]`).
pub const MAX_NAMES: usize = 65_536;

/// Expands `gpu-[01-03,07],login1` into `gpu-01 gpu-02 gpu-03 gpu-07 login1` (zero padding kept, several
/// bracket groups multiply). `None` for malformed expressions (unbalanced brackets, bad ranges) or more
/// than [`MAX_NAMES`] names.
pub fn expand(expr: &str) -> Option<Vec<String>> {
    let mut out = vec![];
    for item in split_top(expr)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        out.extend(expand_one(item)?);
        if out.len() > MAX_NAMES {
            return None;
        }
    }
    Some(out)
}

/// Whether `name` is in the expression, without expanding ranges (a 2,000-node `NodeName=` line on
/// every gres.conf line stays cheap). Items with several bracket groups are expanded (bounded).
pub fn contains(expr: &str, name: &str) -> bool {
    let Some(items) = split_top(expr) else {
        return false;
    };
    items.into_iter().map(str::trim).any(|item| {
        let Some(open) = item.find('[') else {
            return item == name;
        };
        let Some(close) = item[open..].find(']').map(|c| open + c) else {
            return false;
        };
        let (prefix, ranges, suffix) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
        if suffix.contains('[') {
            return expand_one(item).is_some_and(|v| v.iter().any(|n| n == name));
        }
        let Some(mid) = name
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(suffix))
        else {
            return false;
        };
        let Ok(n) = mid.parse::<u64>() else {
            return false;
        };
        ranges.split(',').any(|r| {
            let r = r.trim();
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(lo), Ok(hi)) => {
                    (lo..=hi).contains(&n) && (a.len() <= 1 || mid.len() == a.len())
                }
                _ => false,
            }
        })
    })
}

/// Splits at commas outside brackets.
fn split_top(expr: &str) -> Option<Vec<&str>> {
    let mut parts = vec![];
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in expr.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return None;
        }
    }
    (depth == 0).then_some(())?;
    parts.push(&expr[start..]);
    Some(parts)
}

fn expand_one(item: &str) -> Option<Vec<String>> {
    let Some(open) = item.find('[') else {
        return Some(vec![item.to_string()]);
    };
    let close = open + item[open..].find(']')?;
    let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let tails = expand_one(rest)?;
    let mut out = vec![];
    for r in ranges.split(',') {
        let r = r.trim();
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        let width = a.len();
        let (lo, hi): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
        if hi < lo || hi - lo > MAX_NAMES as u64 {
            return None;
        }
        for n in lo..=hi {
            for t in &tails {
                out.push(format!("{prefix}{n:0width$}{t}"));
                if out.len() > MAX_NAMES {
                    return None;
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_ranges_lists_padding_and_paths() {
        assert_eq!(
            expand("gpu-[01-03,07],login1").unwrap(),
            vec!["gpu-01", "gpu-02", "gpu-03", "gpu-07", "login1"]
        );
        assert_eq!(
            expand("/dev/nvidia[0-1]").unwrap(),
            vec!["/dev/nvidia0", "/dev/nvidia1"]
        );
        assert_eq!(
            expand("r[1-2]n[1-2]").unwrap(),
            vec!["r1n1", "r1n2", "r2n1", "r2n2"]
        );
        assert_eq!(expand("vm").unwrap(), vec!["vm"]);
    }

    #[test]
    fn membership_without_expansion() {
        assert!(contains("gpu-[0001-2000]", "gpu-1999"));
        assert!(!contains("gpu-[0001-2000]", "gpu-2001"));
        assert!(!contains("gpu-[0001-2000]", "gpu-19"));
        assert!(contains("a[1-3]b,login1", "a2b"));
        assert!(contains("a[1-3]b,login1", "login1"));
        assert!(contains("r[1-2]n[1-2]", "r2n1"));
        assert!(!contains("vm[", "vm"));
        assert!(contains("vm", "vm"));
    }

    #[test]
    fn malformed_expressions_are_refused() {
        for bad in ["a[1-", "a]1[", "a[3-1]", "a[x]", "a[0-99999999]", "a[[1]]"] {
            assert_eq!(expand(bad), None, "{bad}");
        }
    }
}

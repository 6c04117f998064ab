//! Baseline busbw/algbw per instance type or SKU, for `launchguard nccl check --baseline/--sku`.
//!
//! File format (whitespace-separated, `#` comments), one row per SKU, collective and size:
//! `sku collective size_bytes busbw_GB/s algbw_GB/s|- source…`. The built-in table
//! (`nccl/baselines/seeds.tsv`) carries reference figures gathered while the project was designed:
//! P6-B200 (2 nodes, 16 GiB), p4d/p5/p6e (2 GB all-reduce, in line with the figures AWS publishes
//! for those instance types), GB300 and H100 on InfiniBand (16 GiB). Reference values, not
//! guarantees: record your own cluster's figures and pass them with `--baseline FILE`.

use launchguard_core::text::printable;
use serde::Serialize;

/// The built-in reference figures, compiled in.
pub const SEEDS: &str = include_str!("../baselines/seeds.tsv");

/// One baseline row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineEntry {
    /// Instance type or SKU name (`p5.48xlarge`, `hopper`).
    pub sku: String,
    /// nccl-tests collective without `_perf` (`all_reduce`, `alltoall`).
    pub collective: String,
    /// Message size the figures hold at, in bytes.
    pub size: u64,
    /// Expected bus bandwidth, GB/s.
    pub busbw: f64,
    /// Expected algorithm bandwidth, GB/s, when the source gives one.
    pub algbw: Option<f64>,
    /// Where the figure comes from (free text).
    pub source: String,
}

/// Largest baseline file read, in bytes (1 MiB: the built-in table is a few KiB).
pub const MAX_FILE: u64 = 1 << 20;

/// Parses a baseline file; errors name the line and quote at most 80 characters of it.
pub fn parse(text: &str) -> Result<Vec<BaselineEntry>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let t: Vec<&str> = line.split_ascii_whitespace().collect();
        // The line is quoted as a short excerpt with its control characters made visible: the
        // file may be anything (a 1 GB line, terminal escapes).
        let bad = |what: &str| format!("line {}: {what}: '{}'", i + 1, printable(line, 80));
        if t.len() < 4 {
            return Err(bad(
                "expected: sku collective size_bytes busbw [algbw] [source]",
            ));
        }
        let size = crate::units::parse_size(t[2]).ok_or_else(|| bad("size is not a byte count"))?;
        let busbw: f64 = t[3].parse().map_err(|_| bad("busbw is not a number"))?;
        let algbw = match t.get(4) {
            None | Some(&"-") => None,
            Some(a) => Some(a.parse().map_err(|_| bad("algbw is not a number or -"))?),
        };
        out.push(BaselineEntry {
            sku: t[0].to_string(),
            collective: t[1].trim_end_matches("_perf").to_string(),
            size,
            busbw,
            algbw,
            source: t.get(5..).map(|s| s.join(" ")).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The entries for one SKU (case-insensitive); error lists the SKUs the file has.
pub fn for_sku(entries: &[BaselineEntry], sku: &str) -> Result<Vec<BaselineEntry>, String> {
    let hits: Vec<BaselineEntry> = entries
        .iter()
        .filter(|e| e.sku.eq_ignore_ascii_case(sku))
        .cloned()
        .collect();
    if hits.is_empty() {
        let mut skus: Vec<&str> = entries.iter().map(|e| e.sku.as_str()).collect();
        skus.sort_unstable();
        skus.dedup();
        let mut known: Vec<String> = skus.iter().take(20).map(|s| printable(s, 40)).collect();
        if skus.len() > 20 {
            known.push(format!("and {} more", skus.len() - 20));
        }
        return Err(format!(
            "no baseline for '{}'; known: {}",
            printable(sku, 40),
            known.join(", ")
        ));
    }
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_table_parses_and_has_the_p6_b200_figures() {
        let all = parse(SEEDS).unwrap();
        let p6 = for_sku(&all, "P6-B200.48xlarge").unwrap();
        assert_eq!(p6.len(), 2);
        assert_eq!(p6[0].collective, "all_reduce");
        assert_eq!(p6[0].size, 17179869184);
        assert_eq!((p6[0].busbw, p6[0].algbw), (702.0, Some(374.0)));
        assert!(for_sku(&all, "nope").unwrap_err().contains("hopper"));
    }

    #[test]
    fn bad_line_is_named() {
        let e = parse("x all_reduce 16G fast").unwrap_err();
        assert!(e.starts_with("line 1: busbw"), "{e}");
    }
}

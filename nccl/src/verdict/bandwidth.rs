//! One table's correctness (`#wrong`, `Out of bounds values`) and bandwidth (busbw/algbw at the target
//! size against `--min-busbw`/`--min-algbw` and the baseline); nccl-tests `doc/PERFORMANCE.md`.

use super::{CheckOptions, Finding, Severity, TableSummary};
use crate::baseline::BaselineEntry;
use crate::parse::Parsed;
use crate::table::{Placement, Table};
use crate::units::human_size;

fn collective_label(t: &Table) -> String {
    t.collective.clone().unwrap_or_else(|| "results".into())
}

pub(super) fn check_table(
    q: &str,
    p: &Parsed,
    t: &Table,
    opts: &CheckOptions,
    f: &mut Vec<Finding>,
) -> TableSummary {
    let name = collective_label(t);
    let mut wrong_total = 0u64;
    let mut wrong_sizes = Vec::new();
    for r in &t.rows {
        for (half, m) in [
            (Placement::OutOfPlace, &r.out_of_place),
            (Placement::InPlace, &r.in_place),
        ] {
            if let Some(n) = m.as_ref().and_then(|m| m.wrong()).filter(|n| *n > 0) {
                wrong_total += n;
                wrong_sizes.push((r.size, half));
            }
        }
    }
    if let Some((size, half)) = wrong_sizes.first() {
        f.push(Finding {
            id: "nccl.wrong",
            severity: Severity::NoGo,
            what: format!(
                "{q}: {name}: #wrong is {wrong_total} over {} row halves (first at {size} B {})",
                wrong_sizes.len(),
                half.label()
            ),
            why: super::WHY_CORRUPT.into(),
            fix: super::fix_corrupt(p),
        });
    }
    let footer = t.footer.as_ref();
    let oob = footer.and_then(|x| x.out_of_bounds);
    if let Some(n) = oob.filter(|n| *n > 0) {
        f.push(Finding {
            id: "nccl.out_of_bounds",
            severity: Severity::NoGo,
            what: format!("{q}: {name}: Out of bounds values is {n} (FAILED)"),
            why: super::WHY_CORRUPT.into(),
            fix: super::fix_corrupt(p),
        });
    }
    if footer.and_then(|x| x.avg_busbw_check_ok) == Some(false) {
        f.push(Finding {
            id: "nccl.avg_busbw_check",
            severity: Severity::NoGo,
            what: format!("{q}: {name}: nccl-tests' own -G average busbw check says FAILED"),
            why: "the average busbw is below 90% of the value given to -G".into(),
            fix: "find the slow node with 'launchguard nccl outliers' over pairwise runs".into(),
        });
    }
    let footer_expected = t.layout != crate::table::Layout::Torch;
    if footer_expected && !t.rows.is_empty() && (footer.is_none() || p.json_truncated) {
        let last = t.rows.last().map(|r| r.size).unwrap_or(0);
        f.push(Finding {
            id: "nccl.no_footer",
            severity: Severity::Warning,
            what: format!("{q}: {name}: the table ends without its footer after {last} B (line {})", t.rows.last().map(|r| r.line).unwrap_or(0)),
            why: "the run was cut off (killed, timed out or crashed), so larger sizes and the out-of-bounds count are missing".into(),
            fix: "check the job's state with sacct and rerun it to completion".into(),
        });
    }
    if !t.malformed_rows.is_empty() {
        f.push(Finding {
            id: "nccl.malformed_rows",
            severity: Severity::Warning,
            what: format!(
                "{q}: {name}: {} row(s) could not be read (first at line {})",
                t.malformed_rows.len(),
                t.malformed_rows[0]
            ),
            why: "a garbled or cut row may hide a failure".into(),
            fix: "rerun and keep the unedited output".into(),
        });
    }

    let target = opts.size.or_else(|| t.max_size());
    let at = |size: u64| {
        t.rows_at(size)
            .find_map(|r| r.half(opts.placement).copied())
    };
    let m = target.and_then(at);
    let first_at =
        |size: u64, pl: Placement| t.rows_at(size).find_map(|r| r.half(pl).map(|m| m.busbw));
    if let (Some(size), None) = (target, m) {
        if !t.rows.is_empty() && (opts.min_busbw.is_some() || opts.min_algbw.is_some()) {
            f.push(size_missing(q, &name, size, opts.placement, t));
        }
    }
    if let (Some(size), Some(m)) = (target, m) {
        if let Some(min) = opts.min_busbw.filter(|min| m.busbw < *min) {
            f.push(below(
                "nccl.busbw_low",
                q,
                &name,
                "busbw",
                m.busbw,
                min,
                size,
                opts.placement,
                "--min-busbw",
            ));
        }
        if let Some(min) = opts.min_algbw.filter(|min| m.algbw < *min) {
            f.push(below(
                "nccl.algbw_low",
                q,
                &name,
                "algbw",
                m.algbw,
                min,
                size,
                opts.placement,
                "--min-algbw",
            ));
        }
    }
    if !t.rows.is_empty() {
        let coll = t.collective_base().unwrap_or("all_reduce");
        for b in opts.baseline.iter().filter(|b| b.collective == coll) {
            match at(b.size) {
                None => f.push(size_missing(q, &name, b.size, opts.placement, t)),
                Some(m) => {
                    let floor = |x: f64| x * (1.0 - opts.tolerance);
                    if m.busbw < floor(b.busbw) {
                        f.push(below_baseline(q, &name, "busbw", m.busbw, b.busbw, b, opts));
                    }
                    if let Some(a) = b.algbw.filter(|a| m.algbw < floor(*a)) {
                        f.push(below_baseline(q, &name, "algbw", m.algbw, a, b, opts));
                    }
                }
            }
        }
    }
    TableSummary {
        collective: t.collective.clone(),
        rows: t.rows.len(),
        min_size: t.rows.iter().map(|r| r.size).min(),
        max_size: t.max_size(),
        target_size: target,
        busbw_out_of_place: target.and_then(|s| first_at(s, Placement::OutOfPlace)),
        busbw_in_place: target.and_then(|s| first_at(s, Placement::InPlace)),
        algbw: m.map(|m| m.algbw),
        wrong_total,
        out_of_bounds: oob,
        avg_busbw: footer.and_then(|x| x.avg_busbw),
        complete: !footer_expected || (footer.is_some() && !p.json_truncated),
    }
}

fn size_missing(q: &str, name: &str, size: u64, pl: Placement, t: &Table) -> Finding {
    Finding {
        id: "nccl.size_missing",
        severity: Severity::Warning,
        what: format!(
            "{q}: {name}: no {} row at {size} B ({}); the table goes up to {} B",
            pl.label(),
            human_size(size),
            t.max_size().unwrap_or(0)
        ),
        why: "the bandwidth gate cannot be judged at a size the run did not measure".into(),
        fix: format!(
            "rerun nccl-tests with -e {} (or pass --size with a measured size)",
            human_size(size).replace(' ', "").replace("iB", "")
        ),
    }
}

#[allow(clippy::too_many_arguments)]
fn below(
    id: &'static str,
    q: &str,
    name: &str,
    what: &str,
    got: f64,
    min: f64,
    size: u64,
    pl: Placement,
    flag: &str,
) -> Finding {
    Finding {
        id,
        severity: Severity::NoGo,
        what: format!(
            "{q}: {name}: {} {what} is {got:.2} GB/s at {size} B ({}), below {flag} {min} GB/s ({:.0}%)",
            pl.label(),
            human_size(size),
            100.0 * got / min
        ),
        why: slow_why(got / min),
        fix: slow_fix(),
    }
}

fn below_baseline(
    q: &str,
    name: &str,
    what: &str,
    got: f64,
    want: f64,
    b: &BaselineEntry,
    opts: &CheckOptions,
) -> Finding {
    Finding {
        id: if what == "busbw" { "nccl.busbw_below_baseline" } else { "nccl.algbw_below_baseline" },
        severity: Severity::NoGo,
        what: format!(
            "{q}: {name}: {} {what} is {got:.2} GB/s at {} B ({}), {:.0}% of the {} baseline {want} GB/s (tolerance {:.0}%; {})",
            opts.placement.label(),
            b.size,
            human_size(b.size),
            100.0 * got / want,
            b.sku,
            opts.tolerance * 100.0,
            b.source
        ),
        why: slow_why(got / want),
        fix: slow_fix(),
    }
}

fn slow_why(ratio: f64) -> String {
    if ratio <= 0.25 {
        "a quarter to a tenth of the expected bandwidth is the signature of 1 CPU per rank or a TCP fallback".into()
    } else if ratio < 0.5 {
        "below half the expected bandwidth usually means a bad node is dragging the collective down"
            .into()
    } else {
        "the network would bottleneck training below its designed speed".into()
    }
}

fn slow_fix() -> String {
    "check --cpus-per-task (vCPUs / GPUs) and the network lines above, then find a slow node with pairwise (2-node) runs and 'launchguard nccl outliers'".into()
}

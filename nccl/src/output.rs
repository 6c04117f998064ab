//! Rendering: the readable report, CSV (one row per size per file, a `nccl_to_csv` job)
//! and JSON, for `check` and `outliers`. Pure string building; the CLI decides where it goes.

use std::fmt::Write;

use serde::Serialize;

use crate::model::{Severity, Verdict};
use crate::outliers::{self, OutlierReport};
use crate::units::human_size;
use crate::verdict::FileReport;

/// Combined verdict of several file reports.
pub fn overall(reports: &[FileReport]) -> Verdict {
    reports
        .iter()
        .map(|r| r.verdict)
        .fold(Verdict::Go, Verdict::worst)
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

/// A bandwidth with nccl-tests' two decimals, `-` when absent.
fn bw(v: &Option<f64>) -> String {
    v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into())
}

/// The readable `check` report: per file a verdict line, the environment, a line per table, then
/// one line per finding; a summary line last.
pub fn check_text(reports: &[FileReport]) -> String {
    let mut o = String::new();
    for r in reports {
        let _ = writeln!(o, "== '{}': {}", r.file, r.verdict.label());
        if let Some(p) = &r.parsed {
            let f = &p.facts;
            let provider = f
                .providers
                .first()
                .map(|x| {
                    format!(
                        "{}{}",
                        x.provider,
                        x.fabric
                            .as_ref()
                            .map(|fb| format!("/{fb}"))
                            .unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| "-".into());
            let nics = match (f.min_nics(), f.max_nics()) {
                (Some((min, _)), Some(max)) if min != max => format!("{min}..{max}"),
                (Some((min, _)), _) => min.to_string(),
                _ => "-".into(),
            };
            let hosts = p.hosts();
            let _ = writeln!(
                o,
                "   nccl-tests {} | NCCL {} | aws-ofi-nccl {} | network {} | provider {} | NICs {} | GDRDMA {}/{} | ranks {} | hosts {}{}",
                opt(&f.nccl_tests_version),
                opt(&f.nccl_version),
                opt(&f.ofi_version),
                f.network().unwrap_or_else(|| "-".into()),
                provider,
                nics,
                f.gdrdma_connections,
                f.net_connections,
                opt(&f.rank_count()),
                hosts.len(),
                if hosts.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", hosts.iter().take(8).cloned().collect::<Vec<_>>().join(", "))
                }
            );
        }
        for t in &r.tables {
            let range = match (t.min_size, t.max_size) {
                (Some(a), Some(b)) => format!("{} .. {}", human_size(a), human_size(b)),
                _ => "no rows".into(),
            };
            let _ = writeln!(
                o,
                "   {}: {} rows, {} | at {} B: busbw {} GB/s out-of-place, {} GB/s in-place, algbw {} GB/s | #wrong {} | out of bounds {} | avg busbw {}{}",
                t.collective.as_deref().unwrap_or("results"),
                t.rows,
                range,
                opt(&t.target_size),
                bw(&t.busbw_out_of_place),
                bw(&t.busbw_in_place),
                bw(&t.algbw),
                t.wrong_total,
                opt(&t.out_of_bounds),
                opt(&t.avg_busbw),
                if t.complete { "" } else { " | NO FOOTER" }
            );
        }
        for f in &r.findings {
            let _ = writeln!(o, "{f}");
        }
    }
    let count = |v: Verdict| reports.iter().filter(|r| r.verdict == v).count();
    let all = overall(reports);
    let _ = writeln!(
        o,
        "launchguard nccl check: {} file(s): {} go, {} warn, {} no-go, {} unreadable; verdict {} (exit {})",
        reports.len(),
        count(Verdict::Go),
        count(Verdict::Warn),
        count(Verdict::NoGo),
        count(Verdict::Unreadable),
        all.label(),
        all.exit_code()
    );
    o
}

/// Quotes a CSV field when it needs it (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `check --csv`: one row per size per table per file; bandwidths in GB/s, times in us.
pub fn check_csv(reports: &[FileReport]) -> String {
    let mut o = String::from(
        "file,table,collective,size_bytes,count,type,redop,root,oop_time_us,oop_algbw_gbps,oop_busbw_gbps,oop_wrong,ip_time_us,ip_algbw_gbps,ip_busbw_gbps,ip_wrong\n",
    );
    for r in reports {
        let Some(p) = &r.parsed else { continue };
        for (ti, t) in p.tables.iter().enumerate() {
            for row in &t.rows {
                let half = |m: &Option<crate::table::Measurement>| match m {
                    None => ",,,".to_string(),
                    Some(m) => format!(
                        "{},{},{},{}",
                        m.time_us,
                        m.algbw,
                        m.busbw,
                        match m.correctness {
                            crate::table::Correctness::Wrong(n) => n.to_string(),
                            crate::table::Correctness::MaxError(e) => format!("{e:e}"),
                            crate::table::Correctness::NotChecked => "N/A".into(),
                        }
                    ),
                };
                let _ = writeln!(
                    o,
                    "{},{},{},{},{},{},{},{},{},{}",
                    csv_field(&r.file),
                    ti + 1,
                    csv_field(t.collective.as_deref().unwrap_or("")),
                    row.size,
                    row.count,
                    csv_field(&row.dtype),
                    csv_field(row.redop.as_deref().unwrap_or("")),
                    row.root.map(|x| x.to_string()).unwrap_or_default(),
                    half(&row.out_of_place),
                    half(&row.in_place),
                );
            }
        }
    }
    o
}

#[derive(Serialize)]
struct CheckJson<'a> {
    verdict: Verdict,
    exit_code: u8,
    files: &'a [FileReport],
}

/// `check --json`: `{verdict, exit_code, files: [{file, verdict, findings, error, tables, parsed}]}`.
pub fn check_json(reports: &[FileReport]) -> String {
    let v = overall(reports);
    serde_json::to_string_pretty(&CheckJson {
        verdict: v,
        exit_code: v.exit_code(),
        files: reports,
    })
    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// The readable `outliers` report (the reference outlier script's layout, plus failures and nodes).
/// `all`: list every file, not only outliers.
pub fn outliers_text(r: &OutlierReport, all: bool) -> String {
    let mut o = String::new();
    let size = r
        .size
        .map(|s| format!("{s} B ({})", human_size(s)))
        .unwrap_or_else(|| "? (no file has result rows)".into());
    let _ = writeln!(
        o,
        "launchguard nccl outliers: busbw {} at {size}, threshold +/- {:.1}% from mean",
        r.placement.label(),
        r.threshold * 100.0
    );
    for g in &r.groups {
        let _ = writeln!(
            o,
            "{}: {} file(s), mean {:.4} GB/s, std dev {:.4} GB/s, median {:.2} GB/s, {} outlier(s)",
            g.collective.as_deref().unwrap_or("results"),
            g.samples.len(),
            g.mean,
            g.stddev,
            g.median,
            g.outliers
        );
        for s in g.samples.iter().filter(|s| all || s.outlier) {
            let ids = if s.outlier && !s.instance_ids.is_empty() {
                format!(
                    " ({})",
                    s.instance_ids
                        .iter()
                        .map(|(h, i)| format!("{h}: {i}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "  {:<8} {:+7.2}%  {:>8.2} GB/s  '{}'{}  hosts {}{}{}",
                if s.outlier { "OUTLIER" } else { "OK" },
                s.deviation * 100.0,
                s.busbw,
                s.file,
                if s.table > 1 {
                    format!(" table {}", s.table)
                } else {
                    String::new()
                },
                if s.hosts.is_empty() {
                    "-".to_string()
                } else {
                    s.hosts.join(", ")
                },
                ids,
                if s.notes.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", s.notes.join("; "))
                }
            );
        }
    }
    let mut findings = outliers::findings(r);
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    for f in findings.iter().filter(|f| f.severity >= Severity::Info) {
        let _ = writeln!(o, "{f}");
    }
    let n: usize = r.groups.iter().map(|g| g.samples.len()).sum();
    let out: usize = r.groups.iter().map(|g| g.outliers).sum();
    let bad: Vec<&str> = r
        .nodes
        .iter()
        .filter(|n| n.verdict == outliers::NodeVerdict::Bad)
        .map(|n| n.host.as_str())
        .collect();
    let _ = writeln!(
        o,
        "RESULT: {out} outlier(s) out of {n} file(s), {} skipped; bad node(s): {}; verdict {} (exit {})",
        r.skipped.len(),
        if bad.is_empty() { "none".to_string() } else { bad.join(", ") },
        r.verdict.label(),
        r.verdict.exit_code()
    );
    o
}

/// `outliers --csv`: `file,table,collective,busbw_gbps,deviation_pct,status,hosts` (hosts joined
/// with `;`); skipped files get status `skipped:<reason>`.
pub fn outliers_csv(r: &OutlierReport) -> String {
    let mut o = String::from("file,table,collective,busbw_gbps,deviation_pct,status,hosts\n");
    for g in &r.groups {
        for s in &g.samples {
            let _ = writeln!(
                o,
                "{},{},{},{},{:.4},{},{}",
                csv_field(&s.file),
                s.table,
                csv_field(g.collective.as_deref().unwrap_or("")),
                s.busbw,
                s.deviation * 100.0,
                if s.outlier { "OUTLIER" } else { "OK" },
                csv_field(&s.hosts.join(";"))
            );
        }
    }
    for s in &r.skipped {
        let reason = serde_json::to_value(&s.reason)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "{},,,,,skipped:{reason},{}",
            csv_field(&s.file),
            csv_field(&s.hosts.join(";"))
        );
    }
    o
}

#[derive(Serialize)]
struct OutliersJson<'a> {
    #[serde(flatten)]
    report: &'a OutlierReport,
    exit_code: u8,
    findings: Vec<String>,
}

/// `outliers --json`: the whole report plus `exit_code` and the finding lines.
pub fn outliers_json(r: &OutlierReport) -> String {
    serde_json::to_string_pretty(&OutliersJson {
        report: r,
        exit_code: r.verdict.exit_code(),
        findings: outliers::findings(r)
            .iter()
            .map(|f| f.to_string())
            .collect(),
    })
    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

//! Rendering: the readable report, CSV (one row per size per file, a `nccl_to_csv` job)
//! and JSON, for `check` and `outliers`. Pure string building; the CLI decides where it goes.

use std::fmt::Write;

use serde::Serialize;

use launchguard_core::text::{csv_text, printable, printable_lines};

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

/// Text that came from input (a file name, a host, a JSON string) as one printable piece: line
/// breaks, terminal escapes and bidi overrides are shown, never obeyed ([`printable`]).
fn shown(s: &str) -> String {
    printable(s, 256)
}

/// The readable `check` report: per file a verdict line, the environment, a line per table, then
/// one line per finding; a summary line last. Everything that came from input is shown printable
/// ([`shown`] per field, [`printable_lines`] over the whole report).
pub fn check_text(reports: &[FileReport]) -> String {
    printable_lines(&check_text_raw(reports))
}

fn check_text_raw(reports: &[FileReport]) -> String {
    let mut o = String::new();
    for r in reports {
        let _ = writeln!(o, "== '{}': {}", shown(&r.file), r.verdict.label());
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
                    format!(" ({})", hosts.iter().take(8).map(|h| shown(h)).collect::<Vec<_>>().join(", "))
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
                shown(t.collective.as_deref().unwrap_or("results")),
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

/// Writes CSV records (RFC 4180 quoting by the `csv` crate) into a string.
struct Csv(csv::Writer<Vec<u8>>);

impl Csv {
    fn new(header: &[&str]) -> Csv {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        let _ = w.write_record(header);
        Csv(w)
    }

    fn row(&mut self, cells: &[String]) {
        let _ = self.0.write_record(cells);
    }

    fn finish(self) -> String {
        let bytes = self.0.into_inner().unwrap_or_default();
        String::from_utf8(bytes).unwrap_or_default()
    }
}

/// `check --csv`: one row per size per table per file; bandwidths in GB/s, times in us. Text cells
/// are [`csv_text`] (printable, never read as a formula).
pub fn check_csv(reports: &[FileReport]) -> String {
    let mut o = Csv::new(&[
        "file",
        "table",
        "collective",
        "size_bytes",
        "count",
        "type",
        "redop",
        "root",
        "oop_time_us",
        "oop_algbw_gbps",
        "oop_busbw_gbps",
        "oop_wrong",
        "ip_time_us",
        "ip_algbw_gbps",
        "ip_busbw_gbps",
        "ip_wrong",
    ]);
    for r in reports {
        let Some(p) = &r.parsed else { continue };
        for (ti, t) in p.tables.iter().enumerate() {
            for row in &t.rows {
                let half = |m: &Option<crate::table::Measurement>| match m {
                    None => vec![String::new(); 4],
                    Some(m) => vec![
                        m.time_us.to_string(),
                        m.algbw.to_string(),
                        m.busbw.to_string(),
                        match m.correctness {
                            crate::table::Correctness::Wrong(n) => n.to_string(),
                            crate::table::Correctness::MaxError(e) => format!("{e:e}"),
                            crate::table::Correctness::NotChecked => "N/A".into(),
                        },
                    ],
                };
                let mut cells = vec![
                    csv_text(&r.file),
                    (ti + 1).to_string(),
                    csv_text(t.collective.as_deref().unwrap_or("")),
                    row.size.to_string(),
                    row.count.to_string(),
                    csv_text(&row.dtype),
                    csv_text(row.redop.as_deref().unwrap_or("")),
                    row.root.map(|x| x.to_string()).unwrap_or_default(),
                ];
                cells.extend(half(&row.out_of_place));
                cells.extend(half(&row.in_place));
                o.row(&cells);
            }
        }
    }
    o.finish()
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
/// `all`: list every file, not only outliers. Text from input is shown printable, as in
/// [`check_text`].
pub fn outliers_text(r: &OutlierReport, all: bool) -> String {
    printable_lines(&outliers_text_raw(r, all))
}

fn outliers_text_raw(r: &OutlierReport, all: bool) -> String {
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
            shown(g.collective.as_deref().unwrap_or("results")),
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
                        .map(|(h, i)| format!("{}: {}", shown(h), shown(i)))
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
                shown(&s.file),
                if s.table > 1 {
                    format!(" table {}", s.table)
                } else {
                    String::new()
                },
                if s.hosts.is_empty() {
                    "-".to_string()
                } else {
                    s.hosts
                        .iter()
                        .map(|h| shown(h))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                ids,
                if s.notes.is_empty() {
                    String::new()
                } else {
                    format!(
                        " [{}]",
                        s.notes
                            .iter()
                            .map(|n| shown(n))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
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
    let bad: Vec<String> = r
        .nodes
        .iter()
        .filter(|n| n.verdict == outliers::NodeVerdict::Bad)
        .map(|n| shown(&n.host))
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
/// with `;`); skipped files get status `skipped:<reason>`. Text cells are [`csv_text`].
pub fn outliers_csv(r: &OutlierReport) -> String {
    let mut o = Csv::new(&[
        "file",
        "table",
        "collective",
        "busbw_gbps",
        "deviation_pct",
        "status",
        "hosts",
    ]);
    for g in &r.groups {
        for s in &g.samples {
            o.row(&[
                csv_text(&s.file),
                s.table.to_string(),
                csv_text(g.collective.as_deref().unwrap_or("")),
                s.busbw.to_string(),
                format!("{:.4}", s.deviation * 100.0),
                if s.outlier { "OUTLIER" } else { "OK" }.into(),
                csv_text(&s.hosts.join(";")),
            ]);
        }
    }
    for s in &r.skipped {
        let reason = serde_json::to_value(&s.reason)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
            .unwrap_or_default();
        o.row(&[
            csv_text(&s.file),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            format!("skipped:{reason}"),
            csv_text(&s.hosts.join(";")),
        ]);
    }
    o.finish()
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

//! Go / no-go for one parsed file, with one finding per reason.
//!
//! Rules and where they come from:
//! - `#wrong` != 0 or `Out of bounds values` != 0 is no-go regardless of bandwidth: nccl-tests
//!   checks every result with `-c 1` and counts the elements outside tolerance (nccl-tests README,
//!   "Arguments"; `doc/PERFORMANCE.md`).
//! - An EFA run must show `Using network Libfabric` (or the older `AWS Libfabric`) and provider
//!   `efa`, else it fell back to TCP (AWS EFA user guide, "Get started with EFA and NCCL";
//!   aws-ofi-nccl README).
//! - `found N nics` below `--expect-nics`: not every network card is used (aws-ofi-nccl logs one
//!   `found N nics` per process: 4 on p4d, 32 on p5, 8 on p5en/p6).
//! - busbw/algbw at the target size below `--min-busbw`/`--min-algbw` or below a baseline; the
//!   target size is the largest by default, because "Avg bus bandwidth" averages in the small,
//!   latency-bound sizes (nccl-tests `doc/PERFORMANCE.md` explains algbw and busbw).
//! - A network plugin that failed ([`crate::plugin`]), Socket interfaces that cannot reach other
//!   nodes ([`crate::interfaces`]) and NCCL_* overrides ([`crate::env_rules`]).
//! - Warnings: Socket (TCP) with no fabric expected, connections through the network without
//!   `/GDRDMA` on EFA/IB (NCCL marks GPUDirect RDMA connections `/GDRDMA`), no result rows, a table
//!   cut before its footer, NCCL WARN lines, skipped long or binary lines.

use std::fmt;

use serde::Serialize;

use crate::baseline::BaselineEntry;
use crate::parse::{ParseError, Parsed};
use crate::table::{Placement, Table};
use crate::units::human_size;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Context worth a line; never changes the verdict.
    Info,
    /// Not proven good: look before training (exit 1).
    Warning,
    /// Do not start training on this (exit 2).
    NoGo,
}

/// The overall answer for a file or a set of files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Everything the gate asks for is proven (exit 0).
    Go,
    /// Nothing failed, but something is unproven or odd (exit 1).
    Warn,
    /// The file could not be read or parsed (exit 3).
    Unreadable,
    /// A gate rule failed (exit 2).
    NoGo,
}

impl Verdict {
    /// Monitoring-plugin exit code: 0 go, 1 warnings, 2 no-go, 3 could not read/parse.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Go => 0,
            Verdict::Warn => 1,
            Verdict::NoGo => 2,
            Verdict::Unreadable => 3,
        }
    }

    /// `GO`, `WARN`, `NO-GO`, `UNREADABLE`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Go => "GO",
            Verdict::Warn => "WARN",
            Verdict::NoGo => "NO-GO",
            Verdict::Unreadable => "UNREADABLE",
        }
    }

    /// Combines verdicts of several files: no-go outranks unreadable, which outranks a warning.
    pub fn worst(a: Verdict, b: Verdict) -> Verdict {
        a.max(b)
    }
}

/// One problem, rendered as one line: `launchguard: <id>: <what>; <why>; <fix>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable ID (`nccl.wrong`, `nccl.not_efa`, …).
    pub id: &'static str,
    /// How serious it is.
    pub severity: Severity,
    /// What is wrong, naming the file.
    pub what: String,
    /// Why it matters.
    pub why: String,
    /// The exact fix.
    pub fix: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "launchguard: {}: {}; {}; {}",
            self.id, self.what, self.why, self.fix
        )
    }
}

/// The network fabric the run is expected to use (`--fabric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fabric {
    /// AWS EFA through aws-ofi-nccl: `Using network Libfabric`, provider `efa`.
    Efa,
    /// InfiniBand/RoCE through NCCL's IB transport: `Using network IB`.
    Ib,
}

/// What `check` compares against.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOptions {
    /// `--expect-nics N`: NICs each host must report (`found N nics`, IB HCAs).
    pub expect_nics: Option<u32>,
    /// `--size`: target message size in bytes; default the largest in each table.
    pub size: Option<u64>,
    /// `--min-busbw`: floor for busbw at the target size, GB/s.
    pub min_busbw: Option<f64>,
    /// `--min-algbw`: floor for algbw at the target size, GB/s.
    pub min_algbw: Option<f64>,
    /// Baseline rows that apply (already narrowed to one SKU).
    pub baseline: Vec<BaselineEntry>,
    /// Fraction below a baseline still accepted (0.10 = 10%, nccl-tests' own `-G` check margin).
    pub tolerance: f64,
    /// `--fabric`: the fabric the run must have used.
    pub fabric: Option<Fabric>,
    /// Which half of the table the bandwidth rules read.
    pub placement: Placement,
    /// `--expect-nccl-version`: prefix the logged NCCL version must start with.
    pub expect_nccl_version: Option<String>,
    /// `--expect-ofi-version`: prefix the logged aws-ofi-nccl version must start with.
    pub expect_ofi_version: Option<String>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            expect_nics: None,
            size: None,
            min_busbw: None,
            min_algbw: None,
            baseline: Vec::new(),
            tolerance: 0.10,
            fabric: None,
            placement: Placement::OutOfPlace,
            expect_nccl_version: None,
            expect_ofi_version: None,
        }
    }
}

/// Bandwidth of one table at its target size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableSummary {
    /// Collective (`all_reduce_perf`) if the file names it.
    pub collective: Option<String>,
    /// Rows read.
    pub rows: usize,
    /// Smallest and largest size, bytes.
    pub min_size: Option<u64>,
    /// Largest size, bytes.
    pub max_size: Option<u64>,
    /// Size the bandwidth figures are taken at, bytes.
    pub target_size: Option<u64>,
    /// Out-of-place busbw at the target size, GB/s.
    pub busbw_out_of_place: Option<f64>,
    /// In-place busbw at the target size, GB/s.
    pub busbw_in_place: Option<f64>,
    /// algbw of the checked half at the target size, GB/s.
    pub algbw: Option<f64>,
    /// Sum of `#wrong` over every row and half.
    pub wrong_total: u64,
    /// Footer out-of-bounds count.
    pub out_of_bounds: Option<u64>,
    /// Footer average busbw, GB/s.
    pub avg_busbw: Option<f64>,
    /// Whether the footer was there.
    pub complete: bool,
}

/// The result of checking one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileReport {
    /// Path as given.
    pub file: String,
    /// Verdict for this file.
    pub verdict: Verdict,
    /// Every finding, worst first.
    pub findings: Vec<Finding>,
    /// Why the file could not be read, when it could not.
    pub error: Option<ParseError>,
    /// One summary per table.
    pub tables: Vec<TableSummary>,
    /// Everything parsed (absent when unreadable).
    pub parsed: Option<Parsed>,
}

/// Builds the report for a file that could not be parsed.
pub fn unreadable(file: &str, err: ParseError) -> FileReport {
    let fix = match err {
        ParseError::Io(_) => "check the path and permissions".to_string(),
        ParseError::Json(_) => "pass the .json file nccl-tests wrote with -J, or the text output".into(),
        ParseError::NotRegular(_) => "pass a regular file, or feed a stream through standard input: <command> | launchguard nccl check -".into(),
        ParseError::TooLarge(_) => "pass the text output of the same run instead (it holds the same table)".into(),
        _ => "pass the job's stdout/stderr file (slurm-<jobid>.out) of nccl-tests or the NCCL_DEBUG=INFO log".into(),
    };
    FileReport {
        file: file.to_string(),
        verdict: Verdict::Unreadable,
        findings: vec![Finding {
            id: "nccl.unreadable",
            severity: Severity::NoGo,
            what: format!("'{file}': {err}"),
            why: "nothing in it can prove the network".into(),
            fix,
        }],
        error: Some(err),
        tables: Vec::new(),
        parsed: None,
    }
}

/// Checks one parsed file against the gate.
pub fn check(file: &str, p: &Parsed, opts: &CheckOptions) -> FileReport {
    let mut f = Vec::new();
    let q = format!("'{file}'");
    let plugin_explains_socket = crate::plugin::check(&q, p, &mut f);
    check_failures(&q, p, plugin_explains_socket, &mut f);
    let mut tables = Vec::new();
    for t in &p.tables {
        tables.push(check_table(&q, p, t, opts, &mut f));
    }
    if let Some(n) = p.stray_out_of_bounds.filter(|n| *n > 0) {
        f.push(Finding {
            id: "nccl.out_of_bounds",
            severity: Severity::NoGo,
            what: format!("{q}: Out of bounds values is {n} (FAILED), outside any table this reader found"),
            why: "nccl-tests found results outside tolerance: a correctness failure regardless of bandwidth (nccl-tests README, -c)".into(),
            fix: format!(
                "take {} out of service and check GPU/NIC/memory (dmesg Xid, nvidia-smi -q -d ECC) before rerunning",
                hosts_phrase(p)
            ),
        });
    }
    if p.tables.iter().all(|t| t.rows.is_empty())
        && p.facts.test_failures.is_empty()
        && p.stray_out_of_bounds.is_none()
    {
        f.push(Finding {
            id: "nccl.no_results",
            severity: Severity::Warning,
            what: format!(
                "{q}: no nccl-tests result rows ({} NCCL log lines)",
                p.facts.nccl_lines
            ),
            why: "without a results table the run proves nothing about bandwidth or correctness"
                .into(),
            fix: "pass the nccl-tests output that holds the table, or rerun the test to completion"
                .into(),
        });
    }
    check_network(&q, p, opts, plugin_explains_socket, &mut f);
    crate::interfaces::check(&q, p, &mut f);
    crate::env_rules::check(&q, p, opts, &mut f);
    check_versions(&q, p, opts, &mut f);
    if p.long_lines > 0 {
        f.push(Finding {
            id: "nccl.long_lines",
            severity: Severity::Warning,
            what: format!(
                "{q}: {} line(s) longer than {} MiB were skipped",
                p.long_lines,
                crate::parse::MAX_LINE >> 20
            ),
            why: "NCCL and nccl-tests lines are far shorter, so the file holds something else, and what was skipped may hide a failure".into(),
            fix: "pass the job's own output file, not a concatenation with binary or one-line data".into(),
        });
    }
    if p.binary_lines > 0 {
        f.push(Finding {
            id: "nccl.binary_lines",
            severity: Severity::Warning,
            what: format!(
                "{q}: {} lines are not text and were skipped",
                p.binary_lines
            ),
            why: "the file is partly corrupted, so rows may be missing".into(),
            fix: "rerun, or read the job's original output instead of a copy".into(),
        });
    }
    f.sort_by_key(|x| std::cmp::Reverse(x.severity));
    let verdict = match f.iter().map(|x| x.severity).max() {
        Some(Severity::NoGo) => Verdict::NoGo,
        Some(Severity::Warning) => Verdict::Warn,
        _ => Verdict::Go,
    };
    FileReport {
        file: file.to_string(),
        verdict,
        findings: f,
        error: None,
        tables,
        parsed: Some(p.clone()),
    }
}

fn check_failures(q: &str, p: &Parsed, plugin_reported: bool, f: &mut Vec<Finding>) {
    let facts = &p.facts;
    let net_init_failed = facts
        .warns
        .iter()
        .any(|w| w.contains("Failed to initialize any NET plugin"));
    if net_init_failed {
        let tried = if facts.net_plugin_failures.is_empty() {
            String::new()
        } else {
            format!(" (failed: {})", facts.net_plugin_failures.join(", "))
        };
        let ib = if facts.ib_no_device {
            "; NET/IB found no device"
        } else {
            ""
        };
        f.push(Finding {
            id: "nccl.net_init_failed",
            severity: Severity::NoGo,
            what: format!("{q}: NCCL could not initialise any network plugin{tried}{ib}"),
            why: "a forced network the hosts lack (NCCL_NET=IB on EFA or on hosts without HCAs) fails NCCL init instead of falling back".into(),
            fix: "remove NCCL_NET and NCCL_IB_* from the job environment and keep NCCL_NET_PLUGIN at the image default (ofi on EFA) (NCCL docs: NCCL_NET, NCCL_NET_PLUGIN)".into(),
        });
    }
    if let Some(first) = facts.test_failures.first() {
        f.push(Finding {
            id: "nccl.test_failed",
            severity: Severity::NoGo,
            what: format!("{q}: nccl-tests failed: {first}"),
            why: "the collective did not complete, so the run proves neither bandwidth nor correctness".into(),
            fix: "fix the first NCCL WARN in the log (rerun with NCCL_DEBUG=INFO if there is none), then rerun the test".into(),
        });
    } else if facts.warn_count > 0 && !net_init_failed && !plugin_reported {
        warn_finding(q, facts, f);
    }
    if let Some(first) = facts.torch_check_failures.first() {
        f.push(Finding {
            id: "nccl.wrong",
            severity: Severity::NoGo,
            what: format!("{q}: the PyTorch correctness check failed: {first}"),
            why: "the collective returned wrong data: a failure regardless of bandwidth".into(),
            fix: format!(
                "take {} out of service and check GPU/NIC/memory before rerunning",
                hosts_phrase(p)
            ),
        });
    }
}

fn warn_finding(q: &str, facts: &crate::log::LogFacts, f: &mut Vec<Finding>) {
    f.push(Finding {
            id: "nccl.warn",
            severity: Severity::Warning,
            what: format!(
                "{q}: {} NCCL WARN line(s), first: {}",
                facts.warn_count,
                facts.warns.first().map(String::as_str).unwrap_or("")
            ),
            why: "NCCL warns about fabric or setup problems that can slow or break training (NCCL docs, Troubleshooting)".into(),
            fix: "read the WARN lines in the log and fix their cause before training".into(),
        });
}

fn collective_label(t: &Table) -> String {
    t.collective.clone().unwrap_or_else(|| "results".into())
}

fn check_table(
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
            why: "data was corrupted in flight: a failure regardless of bandwidth (nccl-tests README, -c)".into(),
            fix: format!(
                "take {} out of service and check GPU/NIC/memory (dmesg Xid, nvidia-smi -q -d ECC) before rerunning",
                hosts_phrase(p)
            ),
        });
    }
    let footer = t.footer.as_ref();
    let oob = footer.and_then(|x| x.out_of_bounds);
    if let Some(n) = oob.filter(|n| *n > 0) {
        f.push(Finding {
            id: "nccl.out_of_bounds",
            severity: Severity::NoGo,
            what: format!("{q}: {name}: Out of bounds values is {n} (FAILED)"),
            why: "nccl-tests found results outside tolerance: a correctness failure regardless of bandwidth (nccl-tests README, -c)".into(),
            fix: format!(
                "take {} out of service and check GPU/NIC/memory before rerunning",
                hosts_phrase(p)
            ),
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

fn hosts_phrase(p: &Parsed) -> String {
    let hosts = p.hosts();
    if hosts.is_empty() {
        "the nodes of this run".into()
    } else {
        format!("the nodes of this run ({})", hosts.join(", "))
    }
}

fn is_libfabric(net: &str) -> bool {
    net.eq_ignore_ascii_case("Libfabric") || net.eq_ignore_ascii_case("AWS Libfabric")
}

fn is_ib(net: &str) -> bool {
    net == "IB" || net.starts_with("IBext")
}

fn check_network(
    q: &str,
    p: &Parsed,
    opts: &CheckOptions,
    plugin_explains_socket: bool,
    f: &mut Vec<Finding>,
) {
    let facts = &p.facts;
    let efa_evidence = facts.ofi_version.is_some()
        || facts.providers.iter().any(|x| x.provider == "efa")
        || facts.networks.iter().any(|n| is_libfabric(n));
    let expect = opts.fabric.or(if efa_evidence {
        Some(Fabric::Efa)
    } else {
        None
    });
    let nets = &facts.networks;
    let net_list = nets.join(", ");
    match expect {
        Some(fabric) if nets.is_empty() => {
            f.push(Finding {
                id: "nccl.network_unknown",
                severity: Severity::Warning,
                what: format!(
                    "{q}: no 'Using network' line, so the {} path is not proven",
                    fabric_name(fabric)
                ),
                why: "only NCCL_DEBUG=INFO logs show which network NCCL picked (NCCL docs: NCCL_DEBUG)".into(),
                fix: "rerun with NCCL_DEBUG=INFO (srun --export=ALL,NCCL_DEBUG=INFO)".into(),
            });
        }
        Some(Fabric::Efa) => {
            if let Some(bad) = nets
                .iter()
                .find(|n| !is_libfabric(n))
                .filter(|n| !(plugin_explains_socket && *n == "Socket"))
            {
                f.push(Finding {
                    id: "nccl.not_efa",
                    severity: Severity::NoGo,
                    what: format!("{q}: NCCL used network {bad} (all: {net_list}), not Libfabric"),
                    why: if bad == "Socket" {
                        "the EFA plugin was not loaded and traffic fell back to TCP: bandwidth drops to a fraction (AWS EFA user guide, \"Get started with EFA and NCCL\")".into()
                    } else {
                        "an EFA cluster must run NCCL over aws-ofi-nccl (Libfabric); anything else departs from the EFA path".into()
                    },
                    fix: "keep NCCL_NET_PLUGIN=ofi (the image default), remove NCCL_NET and NCCL_IB_* from the job environment, and rerun with NCCL_DEBUG=INFO".into(),
                });
            }
            if let Some(bad) = facts.providers.iter().find(|x| x.provider != "efa") {
                f.push(Finding {
                    id: "nccl.provider_not_efa",
                    severity: Severity::NoGo,
                    what: format!(
                        "{q}: aws-ofi-nccl selected provider {}{}",
                        bad.provider,
                        bad.host.as_ref().map(|h| format!(" on {h}")).unwrap_or_default()
                    ),
                    why: "only the efa provider uses the EFA devices; others (tcp, sockets) are far slower (aws-ofi-nccl README)".into(),
                    fix: "unset FI_PROVIDER or set FI_PROVIDER=efa, and check that /dev/infiniband is visible in the job".into(),
                });
            }
            if facts.providers.is_empty() && nets.iter().all(|n| is_libfabric(n)) {
                f.push(Finding {
                    id: "nccl.provider_unknown",
                    severity: Severity::Warning,
                    what: format!("{q}: Libfabric in use but no 'Selected provider is' line"),
                    why: "the provider and NIC count prove all EFA devices are used (aws-ofi-nccl logs them at NCCL_DEBUG=INFO)".into(),
                    fix: "keep the whole NCCL_DEBUG=INFO output of every rank (NCCL_DEBUG_SUBSYS must include INIT,NET)".into(),
                });
            }
            for e in facts
                .env
                .iter()
                .filter(|e| e.name == "NCCL_NET" || e.name.starts_with("NCCL_IB_"))
            {
                f.push(Finding {
                    id: "nccl.ib_env_on_efa",
                    severity: Severity::Warning,
                    what: format!("{q}: {} is set to {} on an EFA run", e.name, e.value),
                    why: "IB settings carried over from another cluster drop EFA to TCP or fail init (NCCL docs: NCCL_NET, NCCL_IB_HCA)".into(),
                    fix: format!("remove {} from the job environment", e.name),
                });
            }
        }
        Some(Fabric::Ib) => {
            if let Some(bad) = nets.iter().find(|n| !is_ib(n)) {
                f.push(Finding {
                    id: "nccl.not_ib",
                    severity: Severity::NoGo,
                    what: format!("{q}: NCCL used network {bad} (all: {net_list}), not IB"),
                    why: "the run did not use the InfiniBand fabric, so it says nothing about it and will be far slower".into(),
                    fix: "check ibstat on every node, NCCL_IB_HCA, and that /dev/infiniband is visible in the job".into(),
                });
            }
        }
        None => {
            if nets.iter().any(|n| n == "Socket") {
                if facts.inter_node() == Some(false) {
                    f.push(Finding {
                        id: "nccl.single_node",
                        severity: Severity::Info,
                        what: format!(
                            "{q}: one node (nNodes 1): no traffic between nodes; inside the node: {}",
                            intra_node_transports(facts)
                        ),
                        why: "a single-node run checks the GPUs, the driver and NCCL, not the network between nodes".into(),
                        fix: "run 2 or more nodes to validate the fabric".into(),
                    });
                } else if opts.expect_nics.is_none() && !plugin_explains_socket {
                    let plugin = if facts.net_plugin_absent {
                        " (no external network plugin on these hosts: NCCL used its own TCP transport)"
                    } else {
                        ""
                    };
                    f.push(Finding {
                        id: "nccl.socket",
                        severity: Severity::Warning,
                        what: format!("{q}: NCCL used network Socket (TCP){}{plugin}", if facts.net_connections > 0 { format!(", {} connections through NET/Socket", facts.net_connections) } else { String::new() }),
                        why: "inter-node traffic over TCP runs at a fraction of EFA/IB bandwidth".into(),
                        fix: "if the nodes have EFA or IB, check NCCL_NET_PLUGIN and leftover NCCL_NET/NCCL_IB_* settings; pass --fabric efa|ib to make this a no-go".into(),
                    });
                }
            }
        }
    }
    if !plugin_explains_socket {
        check_nics(q, p, opts, expect, f);
    }
    // GPUDirect RDMA: expected on EFA/IB when connections went through the network.
    let rdma_net = expect.is_some() || nets.iter().any(|n| is_libfabric(n) || is_ib(n));
    if rdma_net && facts.net_connections > 0 && facts.gdrdma_connections < facts.net_connections {
        f.push(Finding {
            id: "nccl.no_gdrdma",
            severity: Severity::Warning,
            what: format!(
                "{q}: {} of {} network connections use GPUDirect RDMA (/GDRDMA)",
                facts.gdrdma_connections, facts.net_connections
            ),
            why: "without GPUDirect RDMA every transfer is staged through host memory and busbw drops".into(),
            fix: "check that /dev/gdrdrv and nvidia_peermem (or dma-buf) are available inside the job, and that FI_EFA_USE_DEVICE_RDMA is not 0".into(),
        });
    }
}

/// `48 P2P connections`, `8 SHM connections`, `8 connections through the network transport`, or
/// `no connection lines logged`.
fn intra_node_transports(facts: &crate::log::LogFacts) -> String {
    let mut parts = Vec::new();
    if facts.p2p_connections > 0 {
        parts.push(format!("{} P2P connections", facts.p2p_connections));
    }
    if facts.shm_connections > 0 {
        parts.push(format!("{} SHM connections", facts.shm_connections));
    }
    if facts.net_connections > 0 {
        parts.push(format!(
            "{} connections through the network transport ({})",
            facts.net_connections,
            facts.net_transports.join(", ")
        ));
    }
    if parts.is_empty() {
        "no connection lines logged".into()
    } else {
        parts.join(", ")
    }
}

fn fabric_name(f: Fabric) -> &'static str {
    match f {
        Fabric::Efa => "EFA",
        Fabric::Ib => "IB",
    }
}

fn check_nics(
    q: &str,
    p: &Parsed,
    opts: &CheckOptions,
    expect: Option<Fabric>,
    f: &mut Vec<Finding>,
) {
    let Some(want) = opts.expect_nics else {
        return;
    };
    let facts = &p.facts;
    let fix = "check that every EFA/IB device is visible in the job (/dev/infiniband, cgroup ConstrainDevices, ENROOT_RESTRICT_DEV n) and healthy (fi_info -p efa, ibstat), then rerun".to_string();
    let why = "fewer NICs means a fraction of the node's network bandwidth (aws-ofi-nccl logs `found N nics` for every NIC it uses)".to_string();
    let uses_ib = facts.networks.iter().any(|n| is_ib(n)) || expect == Some(Fabric::Ib);
    if let Some((min, hosts)) = facts.min_nics() {
        if min < want {
            let on = if hosts.is_empty() {
                String::new()
            } else {
                format!(" on {}", hosts.join(", "))
            };
            f.push(Finding {
                id: "nccl.nics",
                severity: Severity::NoGo,
                what: format!("{q}: aws-ofi-nccl found {min} NICs{on}, expected {want}"),
                why,
                fix,
            });
        }
    } else if uses_ib && facts.ib_nics.is_some() {
        let n = facts.ib_nics.unwrap_or(0);
        if n < want {
            f.push(Finding {
                id: "nccl.nics",
                severity: Severity::NoGo,
                what: format!("{q}: NET/IB uses {n} HCAs, expected {want}"),
                why,
                fix,
            });
        }
    } else if facts.networks.iter().any(|n| n == "Socket") {
        f.push(Finding {
            id: "nccl.nics",
            severity: Severity::NoGo,
            what: format!(
                "{q}: NCCL fell back to Socket ({} interface{}), expected {want} NICs",
                facts.socket_nics.unwrap_or(0),
                if facts.socket_nics == Some(1) { "" } else { "s" }
            ),
            why: "TCP over the host interface uses none of the high-speed NICs".into(),
            fix: "keep NCCL_NET_PLUGIN=ofi (EFA) or check the IB HCAs, remove leftover NCCL_NET/NCCL_IB_* settings, and rerun".into(),
        });
    } else {
        f.push(Finding {
            id: "nccl.nics_unknown",
            severity: Severity::Warning,
            what: format!("{q}: no NIC count in the file, expected {want}"),
            why: "only the NCCL_DEBUG=INFO 'found N nics' line proves every NIC is used".into(),
            fix: "rerun with NCCL_DEBUG=INFO".into(),
        });
    }
}

fn check_versions(q: &str, p: &Parsed, opts: &CheckOptions, f: &mut Vec<Finding>) {
    let pairs = [
        ("NCCL", &opts.expect_nccl_version, &p.facts.nccl_version),
        (
            "aws-ofi-nccl",
            &opts.expect_ofi_version,
            &p.facts.ofi_version,
        ),
    ];
    for (what, want, got) in pairs {
        let Some(want) = want else { continue };
        if got.as_deref().is_some_and(|g| g.starts_with(want.as_str())) {
            continue;
        }
        f.push(Finding {
            id: "nccl.version",
            severity: Severity::NoGo,
            what: format!(
                "{q}: {what} version is {}, expected {want}",
                got.as_deref().unwrap_or("not logged")
            ),
            why: "the run did not test the library version training will use".into(),
            fix: format!("point LD_LIBRARY_PATH (or the container image) at {what} {want}, rerun with NCCL_DEBUG=INFO"),
        });
    }
}

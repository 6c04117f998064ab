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
//!
//! One file per rule family: [`failures`] (test failures, NCCL WARN), [`bandwidth`] (per-table
//! correctness and bandwidth), [`network`] (fabric, GPUDirect RDMA, NIC count) and [`versions`]
//! (NCCL and aws-ofi-nccl versions); this file runs them in order and builds the report.

mod bandwidth;
mod failures;
mod network;
mod versions;

use serde::Serialize;

pub use crate::model::{CheckOptions, Fabric, Finding, Severity, Verdict};
use crate::parse::{ParseError, Parsed};

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
    failures::check_failures(&q, p, plugin_explains_socket, &mut f);
    let mut tables = Vec::new();
    for t in &p.tables {
        tables.push(bandwidth::check_table(&q, p, t, opts, &mut f));
    }
    if let Some(n) = p.stray_out_of_bounds.filter(|n| *n > 0) {
        f.push(Finding {
            id: "nccl.out_of_bounds",
            severity: Severity::NoGo,
            what: format!(
                "{q}: Out of bounds values is {n} (FAILED), outside any table this reader found"
            ),
            why: WHY_CORRUPT.into(),
            fix: fix_corrupt(p),
        });
    }
    if p.tables.iter().all(|t| t.rows.is_empty())
        && p.facts.test_failures.is_empty()
        && p.stray_out_of_bounds.is_none()
    {
        // A benchmark (nccl-tests' header or table, a PyTorch bench table) that printed no row is
        // unproven; an application's NCCL log never has a table, and is no benchmark at all.
        let benchmark = p.facts.nccl_tests_version.is_some()
            || !p.tables.is_empty()
            || !p.facts.ranks.is_empty();
        f.push(if benchmark {
            Finding {
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
            }
        } else {
            Finding {
                id: "nccl.no_results",
                severity: Severity::Info,
                what: format!(
                    "{q}: an application's NCCL log ({} NCCL lines), no benchmark table",
                    p.facts.nccl_lines
                ),
                why: "it shows how NCCL set up (network, transports, variables) but not what bandwidth it reached".into(),
                fix: "for bandwidth, run nccl-tests (all_reduce_perf -b 8 -e 8G -f 2 -g 1 under srun) and pass its output to `launchguard nccl check`".into(),
            }
        });
    }
    network::check_network(&q, p, opts, plugin_explains_socket, &mut f);
    crate::interfaces::check(&q, p, &mut f);
    crate::env_rules::check(&q, p, opts, &mut f);
    versions::check_versions(&q, p, opts, &mut f);
    failures::check_job_failure(&q, p, &mut f);
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

/// Why wrong results (`#wrong`, `Out of bounds values : N FAILED`) matter: nccl-tests compares every
/// result with the expected one when run with `-c` (its README), so these are corrupted data, not
/// slow data.
pub(super) const WHY_CORRUPT: &str = "nccl-tests checked the results (-c) and found wrong values: the data was corrupted in flight, on the wire (a NIC, cable or switch port) or by a GPU or its memory; a correctness failure regardless of bandwidth, not a tuning problem (nccl-tests README, -c)";

/// The fix for wrong results: one rerun on the same nodes (a transient error passes it), then drain
/// them for the admin, with the exact commands for the run's nodes when the output names them.
pub(super) fn fix_corrupt(p: &Parsed) -> String {
    let hosts = p.hosts();
    let (nodes, rerun) = if hosts.is_empty() {
        (
            "<the run's nodes>".to_string(),
            "srun -w <the run's nodes, from sacct -j JOBID -X -o NodeList> …".to_string(),
        )
    } else {
        let n = hosts.join(",");
        (n.clone(), format!("srun -w {n} …"))
    };
    format!(
        "rerun the same command once on the same nodes ({rerun}); if it fails again, take them out: scontrol update nodename={nodes} state=drain reason=\"nccl-tests wrong results\", then check each (dmesg for Xid and NIC link errors, nvidia-smi -q -d ECC) before resuming it"
    )
}

pub(super) fn hosts_phrase(p: &Parsed) -> String {
    let hosts = p.hosts();
    if hosts.is_empty() {
        "the nodes of this run".into()
    } else {
        format!("the nodes of this run ({})", hosts.join(", "))
    }
}

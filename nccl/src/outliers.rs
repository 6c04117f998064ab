//! busbw outliers across many result files, and the bad-node ranking from pairwise runs.
//!
//! The usual bad-node job (the bash/awk `validate_performance.sh`, kept verbatim as
//! `nccl/tests/fixtures/reference/validate_performance.sh` to compare against): take the out-of-place busbw at one message size from
//! every file, compute the mean and the population standard deviation, and mark a file whose
//! `|busbw - mean| / mean` exceeds the threshold (default 5%). The arithmetic follows the script to
//! the digit so both give the same verdicts: the mean is rounded to 4 decimals (`printf "%.4f"`)
//! before deviations are taken, and each deviation to 6 decimals before the strict `>` comparison.
//!
//! Where the script goes wrong, this does not: a file without the size (the script exits 1 with no
//! report under `set -euo pipefail`), a size present in several tables of one file (the script
//! feeds a multi-line value to awk and miscounts), the same path given twice, failed runs (no table:
//! listed as failures, with their hosts, instead of silently skipped), several collectives (one
//! group each, never one mean over all_reduce and alltoall together).
//!
//! Bad nodes: the usual method runs pairwise jobs (`sbatch -N 2 --array=…`) and then for testing a
//! suspected node against a known-good one. Here: a node is good once it has one run within the
//! threshold; a node with no good run and at least two slow or failed runs alongside good nodes is
//! named bad; any other node left in a slow or failed run that no bad node explains is a suspect.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::model::{Finding, Severity, Verdict};
use crate::parse::{ParseError, Parsed};
use crate::table::Placement;
use crate::units::human_size;

/// What `outliers` compares.
#[derive(Debug, Clone, PartialEq)]
pub struct OutlierOptions {
    /// Message size in bytes; `None`: the largest size measured by most files.
    pub size: Option<u64>,
    /// Which half of the table (the common outlier script reads out-of-place, column 8).
    pub placement: Placement,
    /// Allowed deviation from the mean, as a fraction (0.05 = 5%, the common default).
    pub threshold: f64,
    /// Only tables of this collective (`all_reduce` or `all_reduce_perf`).
    pub collective: Option<String>,
}

impl Default for OutlierOptions {
    fn default() -> Self {
        OutlierOptions {
            size: None,
            placement: Placement::OutOfPlace,
            threshold: 0.05,
            collective: None,
        }
    }
}

/// One busbw figure that entered the statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// File as given.
    pub file: String,
    /// 1-based table number within the file (files may hold several runs).
    pub table: usize,
    /// busbw at the size, GB/s.
    pub busbw: f64,
    /// `(busbw - mean) / mean`, rounded to 6 decimals as the reference bash/awk script does.
    pub deviation: f64,
    /// `|deviation| > threshold`.
    pub outlier: bool,
    /// Hosts of the run.
    pub hosts: Vec<String>,
    /// `host: i-…` lines from the file.
    pub instance_ids: Vec<(String, String)>,
    /// The same file also failed a correctness rule (`#wrong`, out of bounds): counted as failed for
    /// the node ranking, kept in the statistics as the reference script keeps it.
    pub failed: Option<String>,
    /// Anything odd about this figure (duplicate size rows, table cut before its footer).
    pub notes: Vec<String>,
}

/// One collective's statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// Collective (`all_reduce_perf`), `None` when the files do not name it.
    pub collective: Option<String>,
    /// Samples in input order.
    pub samples: Vec<Sample>,
    /// Mean busbw, GB/s, rounded to 4 decimals (as the reference script prints it).
    pub mean: f64,
    /// Population standard deviation, GB/s, rounded to 4 decimals (as the reference script prints it).
    pub stddev: f64,
    /// Median busbw, GB/s.
    pub median: f64,
    /// Number of outliers.
    pub outliers: usize,
}

/// Why a file gave no figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkipReason {
    /// Could not be read or parsed.
    Unreadable {
        /// The parse error.
        error: ParseError,
    },
    /// The run failed (nccl-tests failure line, or no result rows).
    Failed {
        /// What failed.
        detail: String,
    },
    /// No result rows and no failure line (an INFO-only log, another rank's output).
    NoResults,
    /// Tables present but none at the size (with the chosen placement).
    SizeMissing {
        /// Largest size the file has, bytes.
        largest: Option<u64>,
    },
    /// Same path given earlier.
    Duplicate,
    /// Tables present but none of the requested collective.
    OtherCollective,
}

/// A file that gave no figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// File as given.
    pub file: String,
    /// Why.
    pub reason: SkipReason,
    /// Hosts of the run, when known.
    pub hosts: Vec<String>,
}

/// Bad or suspect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeVerdict {
    /// No good run, and slow or failed at least twice alongside nodes that are good elsewhere.
    Bad,
    /// In a slow or failed run that no bad node explains.
    Suspect,
}

/// One node in the ranking, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRank {
    /// Host name.
    pub host: String,
    /// Bad or suspect.
    pub verdict: NodeVerdict,
    /// Runs (samples and failed files) the node was in.
    pub runs: usize,
    /// Of those, slow outliers.
    pub slow: usize,
    /// Of those, failed runs.
    pub failed: usize,
    /// Of those, runs within the threshold (or faster).
    pub ok: usize,
    /// Mean deviation over its slow runs, fraction.
    pub mean_slow_deviation: Option<f64>,
    /// Partners in its slow/failed runs that have a good run elsewhere.
    pub good_partners: Vec<String>,
    /// Files of its slow/failed runs (first few).
    pub files: Vec<String>,
}

/// Everything `outliers` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlierReport {
    /// Size compared, bytes.
    pub size: Option<u64>,
    /// Half compared.
    pub placement: Placement,
    /// Threshold, fraction.
    pub threshold: f64,
    /// One group per collective.
    pub groups: Vec<Group>,
    /// Files without a figure.
    pub skipped: Vec<Skipped>,
    /// Bad nodes first, then suspects.
    pub nodes: Vec<NodeRank>,
    /// Overall verdict: no-go on slow outliers or failed runs, warn on fast outliers or skipped
    /// files, unreadable when no figure at all.
    pub verdict: Verdict,
}

/// Rounds as C's `printf("%.Nf")` does, then reads the text back (as the reference script's awk pipeline does).
fn printf_round(v: f64, decimals: usize) -> f64 {
    format!("{v:.decimals$}").parse().unwrap_or(v)
}

/// Picks the default size: the largest size measured by more than half of the files with tables,
/// else the size measured by the most files (largest on ties).
fn default_size(files: &[(String, Result<Parsed, ParseError>)], pl: Placement) -> Option<u64> {
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    let mut n = 0;
    for (_, p) in files {
        let Ok(p) = p else { continue };
        let mut sizes: Vec<u64> = p
            .tables
            .iter()
            .flat_map(|t| t.rows.iter())
            .filter(|r| r.half(pl).is_some())
            .map(|r| r.size)
            .collect();
        if sizes.is_empty() {
            continue;
        }
        n += 1;
        sizes.sort_unstable();
        sizes.dedup();
        for s in sizes {
            *counts.entry(s).or_default() += 1;
        }
    }
    if let Some((s, _)) = counts.iter().rev().find(|(_, c)| **c * 2 > n) {
        return Some(*s);
    }
    counts
        .iter()
        .max_by_key(|(s, c)| (**c, **s))
        .map(|(s, _)| *s)
}

fn collective_matches(want: &Option<String>, got: &Option<String>) -> bool {
    let Some(w) = want else { return true };
    let base = |s: &str| s.strip_suffix("_perf").unwrap_or(s).to_string();
    got.as_deref().map(base) == Some(base(w))
}

/// Runs the analysis over parsed files (in the order given).
pub fn analyse(
    files: &[(String, Result<Parsed, ParseError>)],
    opts: &OutlierOptions,
) -> OutlierReport {
    let size = opts.size.or_else(|| default_size(files, opts.placement));
    let mut skipped = Vec::new();
    let mut groups: Vec<(Option<String>, Vec<Sample>)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (file, parsed) in files {
        if seen.contains(&file.as_str()) {
            skipped.push(Skipped {
                file: file.clone(),
                reason: SkipReason::Duplicate,
                hosts: Vec::new(),
            });
            continue;
        }
        seen.push(file);
        let p = match parsed {
            Ok(p) => p,
            Err(e) => {
                skipped.push(Skipped {
                    file: file.clone(),
                    reason: SkipReason::Unreadable { error: e.clone() },
                    hosts: Vec::new(),
                });
                continue;
            }
        };
        let hosts = p.hosts();
        let has_rows = p.tables.iter().any(|t| !t.rows.is_empty());
        if !p.facts.test_failures.is_empty() || !has_rows {
            let detail = p
                .facts
                .test_failures
                .first()
                .cloned()
                .or_else(|| p.facts.warns.first().map(|w| format!("NCCL WARN {w}")))
                .unwrap_or_else(|| "no result rows".into());
            if !has_rows {
                let failed = !p.facts.test_failures.is_empty() || p.facts.warn_count > 0;
                skipped.push(Skipped {
                    file: file.clone(),
                    reason: if failed {
                        SkipReason::Failed { detail }
                    } else {
                        SkipReason::NoResults
                    },
                    hosts,
                });
                continue;
            }
        }
        let tables: Vec<(usize, &crate::table::Table)> = p
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| collective_matches(&opts.collective, &t.collective))
            .collect();
        if tables.is_empty() {
            skipped.push(Skipped {
                file: file.clone(),
                reason: SkipReason::OtherCollective,
                hosts,
            });
            continue;
        }
        let mut found = false;
        for (ti, t) in tables {
            let Some(size) = size else { break };
            let mut rows = t.rows_at(size).filter(|r| r.half(opts.placement).is_some());
            let Some(row) = rows.next() else { continue };
            let m = row
                .half(opts.placement)
                .copied()
                .unwrap_or_else(unreachable_measurement);
            let mut notes = Vec::new();
            let extra = rows.count();
            if extra > 0 {
                notes.push(format!(
                    "size appears in {} rows of this table; used the first ({} {})",
                    extra + 1,
                    row.dtype,
                    row.redop.as_deref().unwrap_or("")
                ));
            }
            if t.footer.is_none() || p.json_truncated {
                notes.push("table ends without its footer (run cut off)".into());
            }
            let wrong: u64 = t
                .rows
                .iter()
                .flat_map(|r| [r.out_of_place, r.in_place])
                .flatten()
                .filter_map(|m| m.wrong())
                .sum();
            let oob = t.footer.as_ref().and_then(|f| f.out_of_bounds).unwrap_or(0);
            let failed = if wrong > 0 {
                Some(format!("#wrong {wrong}"))
            } else if oob > 0 {
                Some(format!("out of bounds {oob}"))
            } else {
                p.facts.test_failures.first().cloned()
            };
            let sample = Sample {
                file: file.clone(),
                table: ti + 1,
                busbw: m.busbw,
                deviation: 0.0,
                outlier: false,
                hosts: hosts.clone(),
                instance_ids: p.facts.instance_ids.clone(),
                failed,
                notes,
            };
            match groups.iter_mut().find(|(c, _)| *c == t.collective) {
                Some((_, g)) => g.push(sample),
                None => groups.push((t.collective.clone(), vec![sample])),
            }
            found = true;
        }
        if !found {
            skipped.push(Skipped {
                file: file.clone(),
                reason: SkipReason::SizeMissing {
                    largest: p.tables.iter().filter_map(|t| t.max_size()).max(),
                },
                hosts,
            });
        }
    }
    let groups: Vec<Group> = groups
        .into_iter()
        .map(|(collective, samples)| stats(collective, samples, opts.threshold))
        .collect();
    let nodes = rank_nodes(&groups, &skipped);
    let any_slow = groups
        .iter()
        .flat_map(|g| &g.samples)
        .any(|s| s.outlier && s.deviation < 0.0);
    let any_failed = groups
        .iter()
        .flat_map(|g| &g.samples)
        .any(|s| s.failed.is_some())
        || skipped
            .iter()
            .any(|s| matches!(s.reason, SkipReason::Failed { .. }));
    let any_fast = groups.iter().any(|g| g.outliers > 0);
    let any_unreadable = skipped
        .iter()
        .any(|s| matches!(s.reason, SkipReason::Unreadable { .. }));
    let verdict = if any_slow || any_failed {
        Verdict::NoGo
    } else if groups.is_empty() || any_unreadable {
        Verdict::Unreadable
    } else if any_fast || !skipped.is_empty() {
        Verdict::Warn
    } else {
        Verdict::Go
    };
    OutlierReport {
        size,
        placement: opts.placement,
        threshold: opts.threshold,
        groups,
        skipped,
        nodes,
        verdict,
    }
}

fn unreachable_measurement() -> crate::table::Measurement {
    crate::table::Measurement {
        time_us: 0.0,
        algbw: 0.0,
        busbw: 0.0,
        correctness: crate::table::Correctness::NotChecked,
    }
}

fn stats(collective: Option<String>, mut samples: Vec<Sample>, threshold: f64) -> Group {
    let n = samples.len() as f64;
    let sum: f64 = samples.iter().map(|s| s.busbw).sum();
    let mean = printf_round(sum / n, 4);
    let sumsq: f64 = samples.iter().map(|s| (s.busbw - mean).powi(2)).sum();
    let stddev = printf_round((sumsq / n).sqrt(), 4);
    let mut outliers = 0;
    for s in &mut samples {
        if mean != 0.0 {
            s.deviation = printf_round((s.busbw - mean) / mean, 6);
            s.outlier = printf_round((s.busbw - mean).abs() / mean, 6) > threshold;
        }
        outliers += usize::from(s.outlier);
    }
    let mut sorted: Vec<f64> = samples.iter().map(|s| s.busbw).collect();
    sorted.sort_by(f64::total_cmp);
    let median = match sorted.len() {
        0 => 0.0,
        l if l % 2 == 1 => sorted[l / 2],
        l => (sorted[l / 2 - 1] + sorted[l / 2]) / 2.0,
    };
    Group {
        collective,
        samples,
        mean,
        stddev,
        median,
        outliers,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Slow,
    Failed,
}

fn rank_nodes(groups: &[Group], skipped: &[Skipped]) -> Vec<NodeRank> {
    // (hosts, outcome, deviation, file)
    let mut runs: Vec<(&[String], Outcome, f64, &str)> = Vec::new();
    for s in groups.iter().flat_map(|g| &g.samples) {
        let o = if s.failed.is_some() {
            Outcome::Failed
        } else if s.outlier && s.deviation < 0.0 {
            Outcome::Slow
        } else {
            Outcome::Ok
        };
        runs.push((&s.hosts, o, s.deviation, &s.file));
    }
    for s in skipped {
        if matches!(s.reason, SkipReason::Failed { .. }) {
            runs.push((&s.hosts, Outcome::Failed, 0.0, &s.file));
        }
    }
    let mut ok: HashMap<&str, usize> = HashMap::new();
    let mut bad_runs: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut total: HashMap<&str, usize> = HashMap::new();
    for (i, (hosts, o, _, _)) in runs.iter().enumerate() {
        for h in hosts.iter() {
            *total.entry(h).or_default() += 1;
            if *o == Outcome::Ok {
                *ok.entry(h).or_default() += 1;
            } else {
                bad_runs.entry(h).or_default().push(i);
            }
        }
    }
    let good = |h: &str| ok.get(h).copied().unwrap_or(0) > 0;
    let good_partners = |h: &str, idx: &[usize]| -> Vec<String> {
        let mut v: Vec<String> = idx
            .iter()
            .flat_map(|&i| runs[i].0.iter())
            .filter(|p| p.as_str() != h && good(p))
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let mut bad: Vec<&str> = bad_runs
        .iter()
        .filter(|(h, idx)| {
            !good(h)
                && idx
                    .iter()
                    .filter(|&&i| runs[i].0.iter().any(|p| p != *h && good(p)))
                    .count()
                    >= 2
        })
        .map(|(h, _)| *h)
        .collect();
    bad.sort_unstable();
    let explained = |i: usize| runs[i].0.iter().any(|p| bad.contains(&p.as_str()));
    let mut out = Vec::new();
    for (h, idx) in &bad_runs {
        let is_bad = bad.contains(h);
        let counted: Vec<usize> = if is_bad {
            idx.clone()
        } else {
            idx.iter().copied().filter(|&i| !explained(i)).collect()
        };
        if counted.is_empty() {
            continue;
        }
        let slow: Vec<f64> = counted
            .iter()
            .filter(|&&i| runs[i].1 == Outcome::Slow)
            .map(|&i| runs[i].2)
            .collect();
        out.push(NodeRank {
            host: h.to_string(),
            verdict: if is_bad {
                NodeVerdict::Bad
            } else {
                NodeVerdict::Suspect
            },
            runs: total.get(h).copied().unwrap_or(0),
            slow: slow.len(),
            failed: counted.len() - slow.len(),
            ok: ok.get(h).copied().unwrap_or(0),
            mean_slow_deviation: (!slow.is_empty())
                .then(|| slow.iter().sum::<f64>() / slow.len() as f64),
            good_partners: good_partners(h, &counted),
            files: counted
                .iter()
                .take(5)
                .map(|&i| runs[i].3.to_string())
                .collect(),
        });
    }
    out.sort_by(|a, b| {
        a.verdict
            .cmp(&b.verdict)
            .then((b.slow + b.failed).cmp(&(a.slow + a.failed)))
            .then(a.ok.cmp(&b.ok))
            .then(a.host.cmp(&b.host))
    });
    out
}

/// One-line findings for the report: slow outliers, failed/skipped files, bad and suspect nodes.
pub fn findings(r: &OutlierReport) -> Vec<Finding> {
    let mut f = Vec::new();
    let size = r
        .size
        .map(|s| format!("{s} B ({})", human_size(s)))
        .unwrap_or_else(|| "?".into());
    for n in &r.nodes {
        let dev = n
            .mean_slow_deviation
            .map(|d| format!(", mean {:+.2}%", d * 100.0))
            .unwrap_or_default();
        let partners = if n.good_partners.is_empty() {
            "no partner proven good elsewhere".to_string()
        } else {
            format!("partners good elsewhere: {}", list(&n.good_partners, 4))
        };
        let evidence = format!(
            "slow in {} and failed in {} of {} runs{dev}; {partners}; files: {}",
            n.slow,
            n.failed,
            n.runs,
            list(&n.files, 3)
        );
        match n.verdict {
            NodeVerdict::Bad => f.push(Finding {
                id: "nccl.bad_node",
                severity: Severity::NoGo,
                what: format!("node '{}' is bad: {evidence}", n.host),
                why: "one slow node drags every collective it joins down to its speed".into(),
                fix: format!(
                    "drain it (scontrol update nodename={} state=drain reason=\"launchguard: nccl busbw\"), replace or repair it, then retest it against a good node",
                    n.host
                ),
            }),
            NodeVerdict::Suspect => {
                let partner = n
                    .good_partners
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "<known-good-node>".into());
                f.push(Finding {
                    id: "nccl.suspect_node",
                    severity: Severity::Warning,
                    what: format!("node '{}' is suspect: {evidence}", n.host),
                    why: "its slow runs are not explained by a proven bad node".into(),
                    fix: format!(
                        "retest it against a known-good node: sbatch -N 2 -w {},{partner} nccl-tests.sbatch",
                        n.host
                    ),
                })
            }
        }
    }
    for s in &r.skipped {
        let hosts = if s.hosts.is_empty() {
            String::new()
        } else {
            format!(" (hosts {})", list(&s.hosts, 4))
        };
        let (id, sev, what, why, fix) = match &s.reason {
            SkipReason::Unreadable { error } => (
                "nccl.unreadable",
                Severity::Warning,
                format!("'{}': {error}", s.file),
                "it gives no figure and was left out of the statistics".to_string(),
                "pass the job's nccl-tests output file".to_string(),
            ),
            SkipReason::Failed { detail } => (
                "nccl.run_failed",
                Severity::NoGo,
                format!("'{}': run failed{hosts}: {detail}", s.file),
                "a failed run is the strongest sign of a bad node or fabric, not a file to skip".to_string(),
                "check the job with sacct and the first NCCL WARN in the file; retest its nodes pairwise".to_string(),
            ),
            SkipReason::SizeMissing { largest } => (
                "nccl.size_missing",
                Severity::Warning,
                format!(
                    "'{}': no {} row at {size}{}",
                    s.file,
                    r.placement.label(),
                    largest.map(|l| format!("; largest size is {l} B")).unwrap_or_default()
                ),
                "it was left out of the mean (the common bash/awk outlier script stops the whole run here)".to_string(),
                "rerun with the same -b/-e as the other files, or pass --size with a size every file has".to_string(),
            ),
            SkipReason::NoResults => (
                "nccl.no_results",
                Severity::Warning,
                format!("'{}': no result rows{hosts}", s.file),
                "it gives no figure and was left out of the statistics".to_string(),
                "pass the output of the rank that prints the table (rank 0), or rerun the test to completion".to_string(),
            ),
            SkipReason::Duplicate => (
                "nccl.duplicate",
                Severity::Info,
                format!("'{}' was given more than once", s.file),
                "counting it twice would bias the mean".to_string(),
                "none needed: it was counted once".to_string(),
            ),
            SkipReason::OtherCollective => (
                "nccl.other_collective",
                Severity::Info,
                format!("'{}' has no table of the requested collective", s.file),
                "mixing collectives makes the mean meaningless".to_string(),
                "none needed: it was left out".to_string(),
            ),
        };
        f.push(Finding {
            id,
            severity: sev,
            what,
            why,
            fix,
        });
    }
    for g in &r.groups {
        for s in g.samples.iter().filter(|s| s.failed.is_some()) {
            f.push(Finding {
                id: "nccl.run_failed",
                severity: Severity::NoGo,
                what: format!(
                    "'{}': {} (hosts {})",
                    s.file,
                    s.failed.as_deref().unwrap_or(""),
                    list(&s.hosts, 4)
                ),
                why: "data was corrupted in flight: a failure regardless of bandwidth (nccl-tests README, -c)"
                    .into(),
                fix: "take these nodes out of service and retest them pairwise against good nodes"
                    .into(),
            });
        }
    }
    f
}

fn list(v: &[String], max: usize) -> String {
    if v.len() <= max {
        v.join(", ")
    } else {
        format!("{} (+{} more)", v[..max].join(", "), v.len() - max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_rounding_matches_c() {
        assert_eq!(printf_round(365.19995, 4), 365.2);
        assert_eq!(printf_round(0.0500004, 6), 0.05);
    }
}

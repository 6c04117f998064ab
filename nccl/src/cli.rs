//! `launchguard nccl …`: argument definitions and entry point (wired into the `launchguard` binary,
//! run by an admin or a CI job on a login node; reads files, never the cluster).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::baseline;
use crate::file;
use crate::generate::{self, PairwisePlan};
use crate::outliers::{self, OutlierOptions};
use crate::output;
use crate::parse::{ParseError, Parsed};
use crate::table::Placement;
use crate::units::parse_size;
use crate::verdict::{self, CheckOptions, Fabric};
use launchguard_core::host::files;

const EXIT_CODES: &str = "Exit codes (monitoring-plugin convention):\n  \
0  go: every rule passed\n  \
1  warnings: nothing failed, something is unproven (no table, no footer, Socket, no GDRDMA, ...)\n  \
2  no-go: a gate rule failed (#wrong, out of bounds, not EFA, too few NICs, busbw below baseline,\n     \
slow outlier, bad node, failed run); no-go outranks 3 when files differ\n  \
3  a file could not be read or parsed (the others are still analysed)";

// `launchguard nccl` subcommands.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Subcommand)]
// Arguments built deferred, as `Command`'s in node-agent/src/lib.rs.
#[command(defer = true)]
pub enum NcclCommand {
    /// Read nccl-tests results and NCCL_DEBUG=INFO logs and give a go/no-go verdict per file.
    ///
    /// Rules (nccl-tests README and doc/PERFORMANCE.md, NCCL documentation "Environment Variables"
    /// and "Troubleshooting", the aws-ofi-nccl README): no-go on #wrong != 0 or out-of-bounds != 0,
    /// an EFA run not on Libfabric/efa, a network plugin that failed and left traffic between nodes
    /// on Socket, fewer NICs than --expect-nics, busbw or algbw at the target size below
    /// --min-busbw/--min-algbw or the --sku baseline; warnings on Socket (TCP), Socket interfaces
    /// that cannot reach other nodes (bridges, veth, loopback, link-local), NCCL_* overrides such as
    /// NCCL_P2P_DISABLE=1, missing GDRDMA, no result rows, a table cut before its footer, NCCL WARN
    /// lines. NCCL lines are read under any prefix (srun --label, [rankN]:, timestamps, Python
    /// logging) or none. Limits: lines over 1 MiB are skipped, -J JSON over 64 MiB and a baseline
    /// over 1 MiB are refused, and paths must be regular files (read pipes and devices through `-`).
    #[command(after_help = EXIT_CODES)]
    Check {
        /// nccl-tests output (text or -J JSON) or NCCL_DEBUG=INFO log files; `-` reads stdin.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print JSON (verdict, findings, parsed tables and facts) instead of the readable report.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print CSV: one row per size per table per file (times in us, bandwidths in GB/s).
        #[arg(long)]
        csv: bool,
        /// NICs every host must report (aws-ofi-nccl `found N nics`, NET/IB HCAs), e.g. 8 on
        /// p5en/p6-b200, 32 on p5.48xlarge, 4 on p4d.
        #[arg(long, value_name = "N")]
        expect_nics: Option<u32>,
        /// Target message size for the bandwidth rules, bytes or 16G/512M (default: the largest).
        #[arg(long, value_parser = size_arg)]
        size: Option<u64>,
        /// Minimum busbw at the target size, GB/s.
        #[arg(long, value_name = "GB/S")]
        min_busbw: Option<f64>,
        /// Minimum algbw at the target size, GB/s.
        #[arg(long, value_name = "GB/S")]
        min_algbw: Option<f64>,
        /// Baseline file (`sku collective size_bytes busbw algbw|- source…`, a regular file of at
        /// most 1 MiB, or `-` for stdin); needs --sku.
        #[arg(long, value_name = "FILE", requires = "sku")]
        baseline: Option<PathBuf>,
        /// Instance type or SKU whose baseline applies (built-in reference table when no --baseline):
        /// p6-b200.48xlarge, p4d.24xlarge, p5.48xlarge, p6e.48xlarge, graceblackwell-mnnvl,
        /// graceblackwell-ib, hopper.
        #[arg(long, value_name = "NAME")]
        sku: Option<String>,
        /// Accepted shortfall below a baseline, percent.
        #[arg(long, value_name = "PCT", default_value = "10")]
        tolerance: f64,
        /// Fabric the run must have used (efa: Libfabric + provider efa; ib: network IB).
        #[arg(long, value_parser = fabric_parser())]
        fabric: Option<Fabric>,
        /// Judge the in-place half instead of out-of-place.
        #[arg(long)]
        in_place: bool,
        /// NCCL version the log must show (prefix, e.g. 2.28.9).
        #[arg(long, value_name = "VERSION")]
        expect_nccl_version: Option<String>,
        /// aws-ofi-nccl version the log must show (prefix, e.g. 1.21.1).
        #[arg(long, value_name = "VERSION")]
        expect_ofi_version: Option<String>,
        /// Also write a self-contained HTML report with charts (node x node heat map of the
        /// pairwise runs, busbw per node, busbw against message size and the --sku reference).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// busbw outliers at one size across many result files, and the bad nodes behind them.
    ///
    /// Mean and standard deviation of busbw at one size, files outside +/- threshold marked with
    /// their hosts, then from pairwise (2-node) runs a ranking of bad and suspect nodes with the
    /// evidence. Same verdicts as the common bash/awk outlier script on the files it handles; files
    /// without the size, failed runs and duplicates are reported instead of ending the run. Same
    /// input limits as `check`.
    #[command(after_help = EXIT_CODES)]
    Outliers {
        /// nccl-tests output files (one per run).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Message size, bytes or 16G (default: the largest size most files measured).
        #[arg(short, long, value_parser = size_arg)]
        size: Option<u64>,
        /// Use in-place busbw instead of out-of-place.
        #[arg(long)]
        in_place: bool,
        /// Allowed deviation from the mean: `5%`, `5` (percent) or `0.05` (fraction).
        #[arg(short, long, default_value = "5%", value_parser = threshold_arg)]
        threshold: f64,
        /// Only tables of this collective (all_reduce, alltoall, …).
        #[arg(long)]
        collective: Option<String>,
        /// List every file, not only the outliers.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print CSV (file,table,collective,busbw_gbps,deviation_pct,status,hosts).
        #[arg(long)]
        csv: bool,
    },
    /// Write synthetic pairwise nccl-tests files with known busbw (marked GENERATED), for tests and
    /// benchmarks.
    #[command(hide = true)]
    Generate {
        /// Directory to write `nccl-NNNN.out` files into (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// Number of files (2-node runs).
        #[arg(long, default_value_t = 1000)]
        files: u32,
        /// Number of nodes (`p5en-dy-gpu-1` …).
        #[arg(long, default_value_t = 64)]
        nodes: u32,
        /// 1-based index of a slow node (repeatable).
        #[arg(long = "bad-node")]
        bad_nodes: Vec<u32>,
        /// busbw of runs with a slow node, as a fraction of normal.
        #[arg(long, default_value_t = 0.8)]
        slow_factor: f64,
        /// Normal busbw at the largest size, GB/s.
        #[arg(long, default_value_t = 374.0)]
        busbw: f64,
        /// Uniform jitter, fraction.
        #[arg(long, default_value_t = 0.015)]
        jitter: f64,
        /// Largest size, bytes or 16G.
        #[arg(long, default_value = "16G", value_parser = size_arg)]
        max_size: u64,
        /// Leave out the NCCL_DEBUG=INFO block.
        #[arg(long)]
        no_info: bool,
        /// Random seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// clap value parser for a size in bytes (`17179869184`, `16G`); shared with `launchguard sweep nccl`.
pub fn size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).ok_or_else(|| format!("'{s}' is not a size in bytes (e.g. 17179869184 or 16G)"))
}

/// `5%` and `5` are percent, `0.05` is a fraction; any non-negative value.
/// Shared with `launchguard sweep nccl`, which narrows the range.
pub fn threshold_arg(s: &str) -> Result<f64, String> {
    let (num, pct) = match s.strip_suffix('%') {
        Some(n) => (n, true),
        None => (s, false),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a threshold (5%, 5 or 0.05)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("'{s}' must be a positive threshold"));
    }
    Ok(if pct || v >= 1.0 { v / 100.0 } else { v })
}

/// Reads every file, several at a time on rayon's threads; results in the order given.
fn parse_all(files: &[PathBuf]) -> Vec<(String, Result<Parsed, ParseError>)> {
    use rayon::prelude::*;
    files
        .par_iter()
        .map(|p| (p.display().to_string(), file::parse_path(p)))
        .collect()
}

/// Runs one `launchguard nccl` subcommand and returns the process exit code.
pub fn run(cmd: NcclCommand) -> ExitCode {
    match cmd {
        NcclCommand::Check {
            files,
            json,
            csv,
            expect_nics,
            size,
            min_busbw,
            min_algbw,
            baseline: baseline_file,
            sku,
            tolerance,
            fabric,
            in_place,
            expect_nccl_version,
            expect_ofi_version,
            html,
        } => {
            let entries = match load_baseline(baseline_file.as_deref(), sku.as_deref()) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("launchguard: nccl.baseline: {e}; no file was checked; fix --baseline/--sku");
                    return ExitCode::from(3);
                }
            };
            let opts = CheckOptions {
                expect_nics,
                size,
                min_busbw,
                min_algbw,
                baseline: entries,
                tolerance: tolerance / 100.0,
                fabric,
                placement: placement(in_place),
                expect_nccl_version,
                expect_ofi_version,
            };
            let parsed = parse_all(&files);
            let mut html_failed = false;
            let reports: Vec<_> = parsed
                .iter()
                .map(|(name, p)| match p {
                    Ok(p) => verdict::check(name, p, &opts),
                    Err(e) => verdict::unreadable(name, e.clone()),
                })
                .collect();
            if let Some(path) = &html {
                let analysis = outliers::analyse(
                    &parsed,
                    &OutlierOptions {
                        size: opts.size,
                        placement: opts.placement,
                        ..OutlierOptions::default()
                    },
                );
                let ok: Vec<(String, Parsed)> = parsed
                    .into_iter()
                    .filter_map(|(n, p)| Some((n, p.ok()?)))
                    .collect();
                let page = crate::html::render(&crate::html::Input {
                    title: "launchguard nccl check",
                    text: &format!(
                        "{}\n{}",
                        output::check_text(&reports),
                        output::outliers_text(&analysis, false)
                    ),
                    files: &ok,
                    report: Some(&analysis),
                    baseline: &opts.baseline,
                    placement: opts.placement,
                });
                if let Err(e) = crate::html::write(path, &page) {
                    eprintln!("launchguard: nccl.html: {e}; the report on standard output is complete, only the HTML file is missing; pass --html a writable path");
                    html_failed = true;
                }
            }
            let text = if json {
                output::check_json(&reports)
            } else if csv {
                output::check_csv(&reports)
            } else {
                output::check_text(&reports)
            };
            print_out(&text);
            if html_failed {
                return ExitCode::from(3);
            }
            ExitCode::from(output::overall(&reports).exit_code())
        }
        NcclCommand::Outliers {
            files,
            size,
            in_place,
            threshold,
            collective,
            all,
            json,
            csv,
        } => {
            let opts = OutlierOptions {
                size,
                placement: placement(in_place),
                threshold,
                collective,
            };
            let report = outliers::analyse(&parse_all(&files), &opts);
            let text = if json {
                output::outliers_json(&report)
            } else if csv {
                output::outliers_csv(&report)
            } else {
                output::outliers_text(&report, all)
            };
            print_out(&text);
            ExitCode::from(report.verdict.exit_code())
        }
        NcclCommand::Generate {
            out,
            files,
            nodes,
            bad_nodes,
            slow_factor,
            busbw,
            jitter,
            max_size,
            no_info,
            seed,
        } => {
            let plan = PairwisePlan {
                nodes,
                files,
                bad_nodes,
                slow_factor,
                busbw,
                jitter,
                max_size,
                info: !no_info,
                seed,
                ..PairwisePlan::default()
            };
            match write_generated(&out, &plan) {
                Ok(n) => {
                    eprintln!(
                        "launchguard nccl generate: wrote {n} GENERATED files to '{}'",
                        out.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("launchguard: nccl.generate: cannot write to '{}': {e}; check the path and permissions", out.display());
                    ExitCode::from(3)
                }
            }
        }
    }
}

fn placement(in_place: bool) -> Placement {
    if in_place {
        Placement::InPlace
    } else {
        Placement::OutOfPlace
    }
}

fn load_baseline(
    file: Option<&Path>,
    sku: Option<&str>,
) -> Result<Vec<baseline::BaselineEntry>, String> {
    let Some(sku) = sku else {
        return Ok(Vec::new());
    };
    let text = match file {
        Some(f) => {
            let shown = files::shown_path(f);
            let bytes = files::read_input(f, baseline::MAX_FILE)
                .map_err(|e| format!("cannot read baseline '{shown}': {e}"))?;
            String::from_utf8(bytes)
                .map_err(|_| format!("cannot read baseline '{shown}': it is not UTF-8 text"))?
        }
        None => baseline::SEEDS.to_string(),
    };
    let all = baseline::parse(&text)?;
    baseline::for_sku(&all, sku)
}

/// Writes the files of a pairwise plan; returns how many.
pub fn write_generated(dir: &Path, plan: &PairwisePlan) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let runs = generate::pairwise(plan);
    for (i, run) in runs.iter().enumerate() {
        std::fs::write(
            dir.join(format!("nccl-{:04}.out", i + 1)),
            generate::render(run),
        )?;
    }
    Ok(runs.len())
}

/// Writes to stdout. A closed pipe (`| head -c1`) ends the process quietly with 141 (128 + SIGPIPE,
/// what a shell reports for a tool killed by SIGPIPE), like every other `launchguard` subcommand,
/// rather than a panic or an exit status that hides the lost output.
fn print_out(s: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("launchguard: nccl: cannot write the report to standard output: {e}");
    }
}

/// `--fabric efa|ib`, with the help line of each value.
fn fabric_parser() -> impl clap::builder::TypedValueParser<Value = Fabric> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Fabric::ALL.map(|f| {
        PossibleValue::new(f.as_str()).help(match f {
            Fabric::Efa => {
                "AWS EFA through aws-ofi-nccl: `Using network Libfabric`, provider `efa`"
            }
            Fabric::Ib => "InfiniBand/RoCE through NCCL's IB transport: `Using network IB`",
        })
    }))
    // The parser lets only the names above through, so the fallback is never taken.
    .map(|s| {
        Fabric::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .unwrap_or(Fabric::Efa)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(threshold_arg("5%"), Ok(0.05));
        assert_eq!(threshold_arg("5"), Ok(0.05));
        assert_eq!(threshold_arg("0.10"), Ok(0.10));
        assert!(threshold_arg("-1").is_err());
        assert!(threshold_arg("x").is_err());
    }
}

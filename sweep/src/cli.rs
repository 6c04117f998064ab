//! `launchguard sweep …`: argument definitions and entry point (wired into the `launchguard`
//! binary; run by an admin on a login node, as root for the node checks).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use launchguard_nccl::outliers::OutlierOptions;
use launchguard_nccl::table::Placement;

use crate::check_sweep::{self, SweepOptions};
use crate::nccl_sweep::{self, NcclOptions};

const EXIT_CODES: &str = "Exit codes (by the worst finding):\n  \
0  every node answered, nothing differs\n  \
1  warnings (a drained node, a differing launchguard/enroot/NCCL-env value, a suspect node)\n  \
2  critical (an unreachable node, a differing munge key/slurm.conf/plugstack/Slurm version, a failing node check, a bad node)\n  \
3  unknown (a node ran the step but gave no check report, or was still completing a job and not judged)";

// `launchguard sweep`: node checks on every node through Slurm, compared across nodes.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, after_help = EXIT_CODES)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub cmd: Option<SweepCommand>,
    #[command(flatten)]
    pub check: CheckArgs,
}

// Sweeps other than the node checks.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Subcommand)]
// Arguments built deferred, as `Command`'s in node-agent/src/lib.rs.
#[command(defer = true)]
pub enum SweepCommand {
    /// Pairwise NCCL runs through sbatch to find the bad node: disjoint pairs, then
    /// suspects re-paired with known-good nodes; judged by `launchguard nccl outliers`' analysis.
    #[command(after_help = EXIT_CODES)]
    Nccl(NcclArgs),
}

// Options of the node-check sweep.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Partition to sweep (default: the default partition's nodes, the one sinfo marks with `*`).
    #[arg(short, long)]
    pub partition: Option<String>,
    /// Node list to sweep (`gpu-[001-128]`).
    #[arg(short = 'w', long)]
    pub nodes: Option<String>,
    /// Deadline for the whole sweep, seconds; nodes that have not answered by then are reported.
    #[arg(long, default_value = "60", value_name = "SECONDS")]
    pub timeout: u64,
    /// launchguard binary on the nodes (default: this binary's path).
    #[arg(long, value_name = "PATH")]
    pub launchguard: Option<PathBuf>,
    /// Command each node runs instead of `<launchguard> check --json` (through sh -c).
    #[arg(long, value_name = "CMD", conflicts_with = "launchguard")]
    pub check_command: Option<String>,
    /// Extra argument for `launchguard check` on the nodes (repeatable), e.g.
    /// --check-arg=--config=/etc/launchguard/sweep.toml.
    #[arg(
        long = "check-arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        conflicts_with = "check_command"
    )]
    pub check_args: Vec<String>,
    /// Extra srun argument (repeatable), e.g. --srun-arg=--reservation=maint.
    #[arg(long = "srun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub srun_args: Vec<String>,
    /// Most per-node retry steps at once.
    #[arg(long, default_value = "16")]
    pub parallel: usize,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

// Options of the NCCL sweep.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
pub struct NcclArgs {
    /// Partition to sweep.
    #[arg(short, long)]
    pub partition: Option<String>,
    /// Node list to sweep.
    #[arg(short = 'w', long)]
    pub nodes: Option<String>,
    /// Command each pair runs under srun, e.g. '/opt/nccl-tests/build/all_reduce_perf -b 8 -e 16G -f 2 -g 1'.
    #[arg(long, value_name = "CMD")]
    pub command: String,
    /// Run the command in this image through Pyxis (srun --container-image).
    #[arg(long, value_name = "IMAGE")]
    pub container_image: Option<String>,
    /// Extra srun argument inside each pair job (repeatable), e.g. --srun-arg=--mpi=pmix.
    #[arg(long = "srun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub srun_args: Vec<String>,
    /// Extra sbatch argument (repeatable), e.g. --sbatch-arg=--account=ops.
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_args: Vec<String>,
    /// Tasks (ranks) per node.
    #[arg(long, default_value = "1")]
    pub ntasks_per_node: u32,
    /// Most rounds (round 1 pairs everyone; later rounds re-pair suspects with good nodes).
    #[arg(long, default_value = "3")]
    pub rounds: usize,
    /// Deadline per round, seconds (jobs still queued or running then are cancelled).
    #[arg(long, default_value = "600", value_name = "SECONDS")]
    pub round_timeout: u64,
    /// Directory for the pair outputs (shared with the nodes).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Message size compared (bytes or 16G; default: the largest most runs measured).
    #[arg(short, long, value_parser = launchguard_nccl::cli::size_arg)]
    pub size: Option<u64>,
    /// Allowed busbw deviation from the mean (5%, 5 or 0.05).
    #[arg(short, long, default_value = "5%", value_parser = threshold_arg)]
    pub threshold: f64,
    /// Compare the in-place half.
    #[arg(long)]
    pub in_place: bool,
    /// Only tables of this collective.
    #[arg(long)]
    pub collective: Option<String>,
    /// Print JSON instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report with charts (node x node heat map of the pairs'
    /// busbw, busbw per node, busbw against message size).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    /// How pairs reach Slurm: `jobs`, one sbatch job per pair; `steps`, one allocation over every
    /// node and one `srun --jobid … -w a,b` step per pair inside it (default: measured faster, docs/sweep.md).
    #[arg(long, value_enum, default_value = "steps")]
    pub launch: nccl_sweep::Launch,
}

/// `launchguard nccl outliers`' threshold syntax, narrowed to a usable fraction (0, 1): a pairwise
/// sweep at 0% or 100% would accuse every node or none.
fn threshold_arg(s: &str) -> Result<f64, String> {
    let v = launchguard_nccl::cli::threshold_arg(s)?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("'{s}' is not a threshold between 0 and 100%"))
    }
}

fn print_json<T: serde::Serialize>(v: &T) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("launchguard: sweep: cannot write JSON: {e}"),
    }
}

/// Entry point.
pub fn run(args: SweepArgs) -> ExitCode {
    match args.cmd {
        Some(SweepCommand::Nccl(a)) => run_nccl(a),
        None => run_check(args.check),
    }
}

fn run_check(a: CheckArgs) -> ExitCode {
    let command = match a.check_command {
        Some(c) => c,
        None => {
            let bin = a
                .launchguard
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| "launchguard".into());
            let mut c = format!(
                "{} check --json",
                check_sweep::sh_quote(&bin.display().to_string())
            );
            for arg in &a.check_args {
                c.push(' ');
                c.push_str(&check_sweep::sh_quote(arg));
            }
            c
        }
    };
    let opts = SweepOptions {
        partition: a.partition,
        nodes: a.nodes,
        timeout: Duration::from_secs(a.timeout.max(1)),
        check_command: command,
        srun_args: a.srun_args,
        parallel: a.parallel,
    };
    match check_sweep::sweep(&opts) {
        Ok(r) => {
            if a.json {
                print_json(&r);
            } else {
                print!(
                    "{}",
                    launchguard_core::text::printable_lines(&check_sweep::render(&r))
                );
            }
            ExitCode::from(r.exit_code)
        }
        Err(e) => {
            eprintln!("launchguard: sweep: {e}");
            ExitCode::from(3)
        }
    }
}

fn run_nccl(a: NcclArgs) -> ExitCode {
    let out = a.out.unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from(format!("lg-sweep-nccl-{t}"))
    });
    let out = std::path::absolute(&out).unwrap_or(out);
    let opts = NcclOptions {
        partition: a.partition,
        nodes: a.nodes,
        command: a.command,
        container_image: a.container_image,
        srun_args: a.srun_args,
        sbatch_args: a.sbatch_args,
        ntasks_per_node: a.ntasks_per_node.max(1),
        rounds: a.rounds.max(1),
        round_timeout: Duration::from_secs(a.round_timeout.max(1)),
        out_dir: out,
        outliers: OutlierOptions {
            size: a.size,
            placement: if a.in_place {
                Placement::InPlace
            } else {
                Placement::OutOfPlace
            },
            threshold: a.threshold,
            collective: a.collective,
        },
        progress: !a.quiet,
        launch: a.launch,
    };
    match nccl_sweep::sweep(&opts) {
        Ok(r) => {
            if a.json {
                print_json(&r);
            } else {
                print!(
                    "{}",
                    launchguard_core::text::printable_lines(&nccl_sweep::render(&r))
                );
            }
            if let Some(path) = &a.html {
                let page = nccl_sweep::html(&r, opts.outliers.placement);
                if let Err(e) = launchguard_nccl::html::write(path, &page) {
                    eprintln!("launchguard: sweep nccl: {e}; the report above is complete, only the HTML file is missing; pass --html a writable path");
                    // Critical outranks unknown, as in the report's own exit code.
                    return ExitCode::from(if r.exit_code == 2 { 2 } else { 3 });
                }
            }
            ExitCode::from(r.exit_code)
        }
        Err(e) => {
            eprintln!("launchguard: sweep nccl: {e}");
            ExitCode::from(3)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_read_like_nccl_outliers() {
        assert_eq!(threshold_arg("5%"), Ok(0.05));
        assert_eq!(threshold_arg("5"), Ok(0.05));
        assert_eq!(threshold_arg("0.10"), Ok(0.10));
        assert!(threshold_arg("0").is_err());
    }
}

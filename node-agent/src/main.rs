//! `launchguard`: the admin CLI (and, later, the per-node agent).

mod check_args;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// launchguard catches Slurm/Pyxis/NCCL launch mistakes before they cost GPU-hours.
#[derive(Debug, Parser)]
#[command(name = "launchguard", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate plugstack arguments the way spank_launchguard.so parses them and print the
    /// effective policy. Exit codes: 0 valid, 2 a problem (the plugin would log it and use the
    /// safe default for that argument).
    CheckArgs(check_args::Args),
    /// Read nccl-tests results and NCCL logs: verdicts, outliers, bad nodes.
    Nccl {
        #[command(subcommand)]
        cmd: launchguard_nccl::cli::NcclCommand,
    },
    /// Run the node checks on every node through Slurm and compare them across nodes; `sweep nccl`:
    /// pairwise NCCL runs to find the bad node.
    Sweep(launchguard_sweep::cli::SweepArgs),
}

fn main() -> ExitCode {
    match Cli::parse().cmd {
        Command::CheckArgs(a) => check_args::run(&a),
        Command::Nccl { cmd } => launchguard_nccl::cli::run(cmd),
        Command::Sweep(a) => launchguard_sweep::cli::run(a),
    }
}

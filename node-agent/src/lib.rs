//! `launchguard`: the per-node agent (`launchguard agent`) and the admin CLI, as a library so that
//! fuzz targets and benchmarks reach the parsers; `main.rs` only calls [`run_cli`].
//! No `unsafe` (denied) but in `gather::nvml_fabric`, the one NVML call nvml-wrapper does not wrap;
//! otherwise the agent reaches the system through std, nix, nvml-wrapper and tokio.
#![deny(unsafe_code)]

pub mod agent;
pub mod check_args;
pub mod check_cmd;
pub mod config;
pub mod docs;
pub mod explain;
pub mod gather;
pub mod gpu_cmd;
pub mod health;
pub mod logging;
pub mod metrics;
pub mod protocol;
pub mod reference;
pub mod registry;
pub mod reports;
pub mod server;
pub mod status_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// launchguard catches Slurm/Pyxis/NCCL launch mistakes before they cost GPU-hours.
#[derive(Debug, Parser)]
#[command(name = "launchguard", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
// Each subcommand's arguments are built only when it is the one invoked (clap's `defer`): a
// `launchguard check` does not build the whole command tree on every start. With `defer`, a
// newtype variant's `Args` struct applies its own doc comment after the variant's, so it would
// become that subcommand's help text: those structs carry plain comments instead
// (`cli_tests::deferred_subcommands_keep_their_help_text` catches one that does not).
#[command(defer = true)]
enum Command {
    /// Explain a failed job's output (slurm-JOBID.out, slurmd.log, a pasted terminal; `-` reads
    /// stdin): finding ID, cause and fix for every known symptom line. Exit codes: 0 nothing known,
    /// 1 WARNING, 2 CRITICAL, 3 unreadable input.
    Explain(explain::Args),
    /// Run the node agent (systemd: launchguard-agent.service): node checks every interval, the
    /// plugin's launch reports on /run/launchguard/agent.sock, a Prometheus textfile.
    Agent(agent::Args),
    /// Run the node checks once, here, and print a table (or --json). Exit codes: 0 OK, 1 WARNING,
    /// 2 CRITICAL, 3 UNKNOWN.
    Check(check_cmd::CheckArgs),
    /// Show what NVML says about this node's GPUs: driver and CUDA versions, each GPU's PCI bus
    /// ID and NVLink fabric registration, and whether the node is in a multi-node NVLink domain.
    /// Exit codes: 0 answered (or no NVIDIA GPU), 3 NVML unusable or hung.
    Gpu(gpu_cmd::Args),
    /// Ask the running agent for its last check results and recent launch reports (root).
    Status(status_cmd::Args),
    /// List every check ID with a description and whether it is enabled.
    ListChecks(check_cmd::ListArgs),
    /// Slurm's HealthCheckProgram: run the checks; drain this node on a CRITICAL finding, resume it
    /// when the finding clears (only if launchguard drained it).
    Health(health::Args),
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
    /// Write man pages and shell completions (for packaging).
    #[command(hide = true)]
    GenerateDocs(docs::Args),
}

/// Parses the command line and runs the subcommand.
pub fn run_cli() -> ExitCode {
    match Cli::parse().cmd {
        Command::Agent(a) => agent::run(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Check(a) => check_cmd::check(&a),
        Command::Status(a) => status_cmd::run(&a),
        Command::Gpu(a) => gpu_cmd::run(&a),
        Command::ListChecks(a) => check_cmd::list(&a),
        Command::Health(a) => health::run(&a),
        Command::CheckArgs(a) => check_args::run(&a),
        Command::Nccl { cmd } => launchguard_nccl::cli::run(cmd),
        Command::Sweep(a) => launchguard_sweep::cli::run(a),
        Command::GenerateDocs(a) => docs::run(&a),
    }
}

#[cfg(test)]
mod cli_tests {
    use clap::CommandFactory;

    /// Every subcommand's help (about and long about) after its deferred arguments are built is the
    /// text its place in the tree gives it, at every depth: what `launchguard SUB --help` shows is
    /// what `launchguard --help` lists (a documented `Args` struct would replace it otherwise).
    #[test]
    fn deferred_subcommands_keep_their_help_text() {
        fn walk(cmd: &clap::Command, path: &str, seen: &mut usize) {
            for sub in cmd.get_subcommands() {
                let name = format!("{path} {}", sub.get_name());
                let listed = (
                    sub.get_about().map(|s| s.to_string()),
                    sub.get_long_about().map(|s| s.to_string()),
                );
                let mut built = sub.clone();
                built.build();
                let shown = (
                    built.get_about().map(|s| s.to_string()),
                    built.get_long_about().map(|s| s.to_string()),
                );
                assert_eq!(
                    listed, shown,
                    "`{name} --help` shows other text than the list"
                );
                assert!(listed.0.is_some(), "`{name}` has no help text");
                *seen += 1;
                walk(&built, &name, seen);
            }
        }
        let mut seen = 0;
        walk(&crate::Cli::command(), "launchguard", &mut seen);
        assert!(seen >= 14, "only {seen} subcommands walked");
        crate::Cli::command().debug_assert();
    }

    /// `agent --help` ends with the journal fields and MESSAGE_IDs (built with the deferred
    /// arguments, so only when `agent` is asked for), and the root command does not build them.
    #[test]
    fn agent_help_lists_the_journal_fields() {
        let root = crate::Cli::command();
        let mut agent = root
            .find_subcommand("agent")
            .expect("an agent subcommand")
            .clone();
        assert!(agent.get_after_long_help().is_none());
        agent.build();
        let help = agent.render_long_help().to_string();
        assert!(help.contains("MESSAGE_IDs:"), "{help}");
        assert!(help.contains("LAUNCHGUARD_PHASE (LAUNCH)"), "{help}");
    }
}

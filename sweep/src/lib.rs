//! `launchguard sweep`: run the node checks on every node of a partition through Slurm and compare
//! them across nodes; plan, submit and judge pairwise NCCL runs to find the bad node.
//!
//! Runs on a login or admin node, as root for the node checks. Slurm is the only transport: the checks
//! fan out through one `srun` step (one task per node), the NCCL pairs through `sbatch`; nothing here
//! opens a socket. Every Slurm command runs under a deadline and is killed (and its job cancelled)
//! when it passes it, so a bad node never hangs a sweep.
//!
//! Modules, one concern each:
//! - [`finding`]: severities and the one-line findings (`launchguard: <id>: what; why; fix`);
//! - [`report`]: reading `launchguard check --json` output, as `srun --label` delivers it;
//! - [`compare`]: values that must be identical cluster-wide, majority vs. the nodes that differ;
//! - [`slurm`]: running Slurm commands with deadlines, `sinfo` node states, node lists;
//! - [`cleanup`]: the jobs a sweep owns (by ID) and cancelling them on every exit, signals included;
//! - [`check_sweep`]: `launchguard sweep` itself and its table;
//! - [`diagnose`]: the likeliest cause of an unreachable node, from what Slurm already knows;
//! - [`pairs`]: pairwise planning (disjoint pairs, suspects re-paired with known-good nodes);
//! - [`nccl_sweep`]: `launchguard sweep nccl`: submission, waiting, collection, analysis
//!   (the analysis is `launchguard_nccl::outliers`);
//! - [`cli`]: clap definitions and the entry point the `launchguard` binary calls.
#![forbid(unsafe_code)]

pub mod check_sweep;
pub mod children;
pub mod cleanup;
pub mod cli;
pub mod compare;
pub mod diagnose;
pub mod finding;
pub mod nccl_sweep;
pub mod pairs;
pub mod report;
pub mod slurm;

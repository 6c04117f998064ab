//! srun, before allocation (`init_post_opt`, local context): judges srun's own argv and environment.
//!
//! A rejection here stops srun before any allocation with exit code 1 and Slurm's own line
//! `Plugin stack post-option processing failed` after ours (spank-facts.md, "Rejecting and warning").

use crate::ffi::{self, Spank};
use crate::gather;
use launchguard_core::argv::{self, Tool};
use launchguard_core::checks::marker::{self, CpusMark, SrunMarker};
use launchguard_core::checks::{cpus_per_task, export, judge};
use launchguard_core::{CheckKind, Mode};

/// The line after the findings of a launch that enforce mode stops, so that Slurm's own error lines
/// that follow (`init_post_opt() failed`, `Plugin stack post-option processing failed`) are not read
/// as a crash.
pub const STOPPED: &str =
    "launchguard: this launch was stopped by the site's policy (enforce mode); fix what the line above says and run it again";

/// Runs the srun-side checks; `false` stops the launch.
pub fn init_post_opt(sp: &Spank) -> bool {
    let Some(policy) = gather::client_policy(sp) else {
        return true;
    };
    let argv = gather::own_argv();
    let parsed = argv::parse(Tool::Srun, &argv);
    let env = |n: &str| std::env::var(n).ok();
    let release = gather::release(sp);

    let mut findings = vec![];
    let mut cpus = CpusMark::Unjudged;
    if policy.mode_for(CheckKind::CpusPerTask) != Mode::Off {
        let (f, mark) =
            cpus_per_task::check_srun(release, &parsed, &env, gather::srun_node_facts, &policy);
        findings.extend(f);
        cpus = mark;
    }
    findings.extend(export::check_srun(&parsed, &env));
    let verdict = judge(findings, &policy);
    for f in &verdict.shown {
        ffi::log_user(&f.to_string());
    }
    let m = SrunMarker {
        cpus,
        container: export::uses_container(&parsed, &env),
        overlap: parsed.has("overlap"),
        reported: verdict.shown.iter().map(|f| f.id().to_string()).collect(),
    };
    ffi::set_srun_env(marker::VAR, &m.encode());
    // slurmstepd trusts only what Slurm acts on, never the marker: pass --overlap and --cpus-per-gpu
    // on as the variables srun itself reads for them (24.11's srun already sets SLURM_CPUS_PER_GPU).
    if parsed.has("overlap") && env("SLURM_OVERLAP").is_none() {
        ffi::set_srun_env("SLURM_OVERLAP", "1");
    }
    if let Some(n) = parsed.value("cpus-per-gpu") {
        if env("SLURM_CPUS_PER_GPU").is_none() && n.bytes().all(|b| b.is_ascii_digit()) {
            ffi::set_srun_env("SLURM_CPUS_PER_GPU", n);
        }
    }
    if verdict.reject {
        ffi::log_user(STOPPED);
    }
    if !verdict.shown.is_empty() {
        // Before allocation there is no job yet; slurmstepd reports the steps that run.
        crate::agent_client::report(
            &policy,
            &crate::agent_client::Verdict {
                phase: "srun",
                job: None,
                step: None,
                uid: crate::agent_client::euid(),
                shown: &verdict.shown,
                reject: verdict.reject,
            },
        );
    }
    !verdict.reject
}

//! slurmstepd (remote context): judges the step as Slurm built it.
//!
//! `user_init` (once per step on each node, before the tasks fork) gathers the step's facts:
//! `S_STEP_CPUS_PER_TASK` (the truth about CPUs per task), the step's GPUs and `PATH` from the job's
//! environment, and what srun's plugin already reported (`SLURM_LAUNCHGUARD_SRUN`). Warnings are
//! printed there, on node 0 only, so a multi-node step shows each finding once.
//!
//! A rejection happens in `task_init_privileged`, the first remote callback whose failure reaches srun's
//! exit code (exit 1) — a failing `user_init` only gives `task 0 launch failed` and exit 0 on 22.05
//! (spank-facts.md). Every task fails; task 0 prints the reason.

use crate::ffi::{self, NumItem, Spank};
use crate::gather;
use launchguard_core::checks::cpus_per_task::{self, StepCpus};
use launchguard_core::checks::export::{self, StepEnv};
use launchguard_core::checks::gpus::step_gpu_count;
use launchguard_core::checks::marker::{self, SrunMarker};
use launchguard_core::checks::{judge, NodeFacts, Verdict};
use launchguard_core::policy::parse_args;
use launchguard_core::{CheckKind, Mode};
use std::sync::OnceLock;

/// Step ids from here up are Slurm's special steps (batch, extern, interactive, pending…); their
/// environment is the allocation's, not a launch's.
const FIRST_SPECIAL_STEP: u64 = 0xffff_fff0;

/// The step's verdict, made in `user_init` and inherited by the forked task children.
static VERDICT: OnceLock<Verdict> = OnceLock::new();

/// Judges the step; prints warnings (node 0). Always lets `user_init` succeed.
pub fn user_init(sp: &Spank) -> bool {
    let (policy, problems) = parse_args(sp.args());
    let job = sp.get_number(NumItem::JobId).unwrap_or(0);
    let step = sp.get_number(NumItem::StepId).unwrap_or(0);
    let uid = sp.get_number(NumItem::Uid).unwrap_or(u64::MAX);
    for p in &problems {
        ffi::log_error(&format!("{p} (job {job}.{step})"));
    }
    if policy.all_off() || step >= FIRST_SPECIAL_STEP {
        return true;
    }
    let env = |n: &str| sp.getenv(n);
    let release = gather::release(sp);
    let srun_marker = sp.getenv(marker::VAR).and_then(|v| SrunMarker::decode(&v));

    let mut findings = vec![];
    if policy.mode_for(CheckKind::CpusPerTask) != Mode::Off {
        let gpus = step_gpu_count(&env);
        let facts = StepCpus {
            cpus_per_task: sp
                .get_number(NumItem::StepCpusPerTask)
                .and_then(|n| u32::try_from(n).ok()),
            gpus,
            job_cpus_per_task: sp.getenv("SLURM_CPUS_PER_TASK"),
            overcommit: sp.getenv("SLURM_OVERCOMMIT").is_some_and(|v| v == "1"),
        };
        let node = step_node_facts(sp, gpus);
        findings.extend(cpus_per_task::check_step(
            release,
            &facts,
            srun_marker.as_ref(),
            &node,
            &policy,
        ));
    }
    let step_env = StepEnv {
        has_path: sp.getenv("PATH").is_some(),
        argv0: sp.job_argv0(),
    };
    let already = srun_marker
        .as_ref()
        .is_some_and(|m| m.reported(CheckKind::ExportAll.id()));
    findings.extend(export::check_step(&step_env, already));

    let verdict = judge(findings, &policy);
    for f in &verdict.shown {
        ffi::log_info(&format!("{f} (job {job}.{step} uid {uid})"));
    }
    let node_id = sp.get_number(NumItem::NodeId).unwrap_or(0);
    if !verdict.reject && node_id == 0 {
        for f in &verdict.shown {
            ffi::log_user(&f.to_string());
        }
    }
    let _ = VERDICT.set(verdict);
    true
}

/// Stops every task of a rejected step; task 0 prints the reasons.
pub fn task_init_privileged(sp: &Spank) -> bool {
    let Some(v) = VERDICT.get() else {
        return true;
    };
    if !v.reject {
        return true;
    }
    if sp.get_number(NumItem::TaskGlobalId) == Some(0) {
        for f in &v.shown {
            ffi::log_user(&f.to_string());
        }
    }
    false
}

/// The node's CPUs per GPU for advice: this machine's CPUs and NVIDIA GPU files; without GPU files
/// (containers, fake devices), the allocation on this node (`S_JOB_NCPUS`, `SLURM_GPUS_ON_NODE`).
fn step_node_facts(sp: &Spank, step_gpus: u32) -> NodeFacts {
    let files = gather::node_gpu_files();
    if files > 0 {
        return NodeFacts {
            cpus: gather::node_cpus(),
            gpus: Some(files),
        };
    }
    let gpus = sp
        .getenv("SLURM_GPUS_ON_NODE")
        .and_then(|v| launchguard_core::checks::env::parse_count(&v))
        .or((step_gpus > 0).then_some(step_gpus));
    NodeFacts {
        cpus: sp
            .get_number(NumItem::JobNcpus)
            .and_then(|n| u32::try_from(n).ok()),
        gpus,
    }
}

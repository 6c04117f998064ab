//! srun, before allocation (`init_post_opt`, local context): judges srun's own argv and environment.
//!
//! A rejection here stops srun before any allocation with exit code 1 and Slurm's own line
//! `Plugin stack post-option processing failed` after ours.

use crate::ffi::{self, Spank};
use crate::gather;
use launchguard_core::argv::{self, ParsedArgv, Tool};
use launchguard_core::checks::cpus_per_task::CpusSource;
use launchguard_core::checks::gpus::srun_gpu_request;
use launchguard_core::checks::marker::{self, CpusMark, SrunMarker};
use launchguard_core::checks::{cpus_per_task, export, gpu_options, judge, nccl_env, pmix};
use launchguard_core::{CheckKind, Finding, Mode, Policy, SlurmRelease};

/// Name of the variable srun's plugin sets (to `file`) when the step's output goes to a file
/// (`-o`/`-e`, `SLURM_STDOUTMODE`/`SLURM_STDERRMODE`), so that nothing slurmstepd prints reaches the
/// user's terminal. srun copies `SLURM_*` variables into every step's environment. It only chooses how a
/// rejection is delivered, never whether there is one. slurmstepd cannot tell by itself: the task's and
/// its own stderr are pipes to its I/O thread even when that thread writes a file (measured on 22.05).
pub const OUTPUT_VAR: &str = "SLURM_LAUNCHGUARD_OUTPUT";

/// The line after the findings of a launch that enforce mode stops, so that Slurm's own error lines
/// that follow (`init_post_opt() failed`, `Plugin stack post-option processing failed`) are not read
/// as a crash.
pub const STOPPED: &str =
    "launchguard: this launch was stopped by the site's policy (enforce mode); fix what the line above says and run it again";

/// srun's (or sbatch's) own environment, which can also list its variables' names (to say what
/// `--export` without `ALL` leaves behind).
pub struct ProcessEnv;

impl launchguard_core::checks::env::Env for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn names(&self) -> Vec<String> {
        std::env::vars_os()
            .take(65_536)
            .filter_map(|(k, _)| k.into_string().ok())
            .collect()
    }
}

/// `launch.pmix` for an srun that may load a pmix plugin: slurm.conf (PluginDir, MpiDefault) is
/// read only then.
fn pmix_findings(policy: &Policy, parsed: &ParsedArgv, release: SlurmRelease) -> Vec<Finding> {
    if policy.mode_for(CheckKind::Pmix) == Mode::Off {
        return vec![];
    }
    let explicit = parsed
        .value("mpi")
        .map(str::to_string)
        .or_else(|| std::env::var("SLURM_MPI_TYPE").ok());
    if let Some(t) = explicit.as_deref() {
        if !t.trim().starts_with("pmix") {
            return vec![];
        }
    }
    let conf = crate::mpi::slurm_conf(release);
    let default = conf.as_ref().and_then(|c| c.get("MpiDefault"));
    let Some(req) = pmix::requested(parsed, &ProcessEnv, default) else {
        return vec![];
    };
    let local = crate::mpi::local(&req, conf.as_ref());
    // No MPI plugin at all where we looked: PluginDir is elsewhere (configless): unjudged.
    if local.offered.is_empty() {
        return vec![];
    }
    pmix::check_srun(&req, &local)
}

/// srun's `slurm_spank_init` (local context), on releases whose srun loads its MPI plugin before
/// `init_post_opt` ([`launchguard_core::SlurmRelease::srun_loads_mpi_after_post_opt`]): judges
/// `launch.pmix` from srun's own argv (read from /proc, since options are not parsed yet), so the
/// line comes before Slurm's failed load. Plugstack argument problems are left to `init_post_opt`.
pub fn init(sp: &Spank) -> bool {
    let release = gather::release(sp);
    if release.srun_loads_mpi_after_post_opt() {
        return true;
    }
    let (policy, _) = launchguard_core::policy::parse_args(sp.args());
    if policy.all_off() {
        return true;
    }
    let argv = gather::own_argv();
    let parsed = argv::parse(Tool::Srun, &argv);
    let verdict = judge(pmix_findings(&policy, &parsed, release), &policy);
    crate::user_lines::show(verdict.shown.iter().map(|f| f.to_string()), "");
    if verdict.reject {
        ffi::log_user(STOPPED);
    }
    report_srun(&policy, &verdict.shown, verdict.reject);
    !verdict.reject
}

/// Runs the srun-side checks; `false` stops the launch.
pub fn init_post_opt(sp: &Spank) -> bool {
    let Some(policy) = gather::client_policy(sp) else {
        return true;
    };
    let argv = gather::own_argv();
    let parsed = argv::parse(Tool::Srun, &argv);
    let env = ProcessEnv;
    let release = gather::release(sp);

    let mut findings = vec![];
    let mut cpus = CpusMark::Unjudged;
    if policy.mode_for(CheckKind::CpusPerTask) != Mode::Off {
        // A launch without any CPU count gets a finding: worth asking the partition for its node
        // size (sinfo, bounded) when this machine has no GPUs to tell.
        let no_count =
            cpus_per_task::srun_cpus_source(release, &parsed, &env) == CpusSource::Default;
        let node = || {
            let local = gather::srun_node_facts();
            if local.gpus.is_none() && no_count {
                let part = parsed
                    .value("partition")
                    .map(str::to_string)
                    .or_else(|| std::env::var("SLURM_PARTITION").ok());
                gather::partition_node_facts(part.as_deref())
            } else {
                local
            }
        };
        let (f, mark) = cpus_per_task::check_srun(release, &parsed, &env, node, &policy);
        findings.extend(f);
        cpus = mark;
    }
    findings.extend(export::check_srun(&parsed, &env));
    if policy.mode_for(CheckKind::GpuOptions) != Mode::Off {
        // Inside an allocation srun's -n spreads over the job's nodes unless -N says otherwise.
        let nodes = std::env::var("SLURM_JOB_NUM_NODES")
            .ok()
            .and_then(|n| n.trim().parse().ok());
        findings.extend(gpu_options::check_gpus_per_task(&parsed, None, nodes));
    }
    if policy.mode_for(CheckKind::NcclEnv) != Mode::Off {
        let vars: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| nccl_env::VAR_PREFIXES.iter().any(|p| k.starts_with(p)))
            .take(512)
            .collect();
        if !vars.is_empty() {
            let (rules, _) = gather::nccl_rules(&policy);
            findings.extend(nccl_env::check_srun(
                &parsed,
                std::env::var("SLURM_EXPORT_ENV").ok().as_deref(),
                &vars,
                gather::configured_fabric(&policy),
                policy.gpu_steps_only,
                srun_gpu_request(&parsed, &env).is_gpu(),
                policy.profile.as_deref(),
                &rules,
            ));
        }
    }
    if release.srun_loads_mpi_after_post_opt() {
        findings.extend(pmix_findings(&policy, &parsed, release));
    }
    let verdict = judge(findings, &policy);
    crate::user_lines::show(verdict.shown.iter().map(|f| f.to_string()), "");
    let m = SrunMarker {
        cpus,
        container: export::uses_container(&parsed, &env),
        overlap: parsed.has("overlap"),
        reported: verdict.shown.iter().map(|f| f.id().to_string()).collect(),
    };
    ffi::set_srun_env(marker::VAR, &m.encode());
    // slurmstepd trusts only what Slurm acts on, never the marker: pass --overlap and --cpus-per-gpu
    // on as the variables srun itself reads for them (24.11's srun already sets SLURM_CPUS_PER_GPU).
    if parsed.has("overlap") && std::env::var_os("SLURM_OVERLAP").is_none() {
        ffi::set_srun_env("SLURM_OVERLAP", "1");
    }
    if let Some(n) = parsed.value("cpus-per-gpu") {
        if std::env::var_os("SLURM_CPUS_PER_GPU").is_none() && n.bytes().all(|b| b.is_ascii_digit())
        {
            ffi::set_srun_env("SLURM_CPUS_PER_GPU", n);
        }
    }
    let to_file = parsed.value("output").is_some()
        || parsed.value("error").is_some()
        || std::env::var_os("SLURM_STDOUTMODE").is_some()
        || std::env::var_os("SLURM_STDERRMODE").is_some();
    if to_file {
        ffi::set_srun_env(OUTPUT_VAR, "file");
    }
    if verdict.reject {
        ffi::log_user(STOPPED);
    }
    // The agent refuses an srun report naming a check that srun does not run (CheckKind::in_srun,
    // the one list both sides read): every check called above must be one of them.
    debug_assert!(verdict.shown.iter().all(|f| f.check.in_srun()));
    report_srun(&policy, &verdict.shown, verdict.reject);
    !verdict.reject
}

/// Reports srun's findings to the node agent (phase `srun`): only checks srun runs
/// ([`launchguard_core::finding::CheckKind::in_srun`], the list the agent accepts), nothing when
/// none was shown. Before allocation there is no job yet; slurmstepd reports the steps that run.
fn report_srun(policy: &Policy, shown: &[Finding], reject: bool) {
    let reported: Vec<_> = shown
        .iter()
        .filter(|f| f.check.in_srun())
        .cloned()
        .collect();
    if reported.is_empty() {
        return;
    }
    crate::agent_client::report(
        policy,
        &crate::agent_client::Verdict {
            phase: "srun",
            job: None,
            step: None,
            uid: crate::agent_client::euid(),
            shown: &reported,
            reject,
        },
    );
}

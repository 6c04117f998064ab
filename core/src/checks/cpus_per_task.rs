//! `launch.cpus_per_task`: a GPU step with one CPU per task.
//!
//! Seed 000 ("Always specify --cpus-per-task"; troubleshooting table): without `--cpus-per-task` each
//! rank gets one core and NCCL over EFA drops to 1/4–1/10 of its bandwidth with no error (8 GiB
//! all-reduce algbw 92 → 368 GB/s once fixed). The number to use is the node's CPUs ÷ GPUs
//! (192 / 8 = 24).
//!
//! Release rules (srun(1), Slurm 23.11 release notes, spank-facts.md): 22.05 and 23.02 srun read only
//! `SRUN_CPUS_PER_TASK`, so `#SBATCH -c 2` followed by a plain `srun` gives the step 1 CPU per task
//! while `SLURM_CPUS_PER_TASK=2` sits in its environment; 23.11+ srun read `SLURM_CPUS_PER_TASK` again
//! and ignore `SRUN_CPUS_PER_TASK`.

use super::env::{parse_count, Env};
use super::gpus::srun_gpu_request;
use super::marker::SrunMarker;
use super::NodeFacts;
use crate::argv::ParsedArgv;
use crate::finding::{CheckKind, Finding, Severity};
use crate::policy::{MinCpus, Policy};
use crate::release::SlurmRelease;

const WHY_ONE: &str =
    "NCCL and data-loader threads of each rank share one core, so NCCL bandwidth drops to 1/4-1/10 with no error";
const WHY_FEW: &str =
    "NCCL proxy and data-loader threads compete for too few cores, which costs bandwidth and step time";

/// The CPUs-per-task floor for GPU steps and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinSource {
    /// `min_cpus_per_task=N` in plugstack.
    Admin(u32),
    /// The node's CPUs ÷ its GPUs.
    Node { per_gpu: u32, cpus: u32, gpus: u32 },
}

impl MinSource {
    /// The number of CPUs per task.
    pub fn value(self) -> u32 {
        match self {
            MinSource::Admin(n) => n,
            MinSource::Node { per_gpu, .. } => per_gpu,
        }
    }

    fn basis(self) -> String {
        match self {
            MinSource::Admin(n) => format!(" (min_cpus_per_task={n} set by the admin)"),
            MinSource::Node { cpus, gpus, .. } => format!(" ({cpus} CPUs / {gpus} GPUs)"),
        }
    }
}

/// `min_cpus_per_task`, resolved: the admin's number, or the node's CPUs ÷ GPUs when both are known
/// and the quotient is at least 2.
pub fn min_cpus(policy: &Policy, node: &NodeFacts) -> Option<MinSource> {
    match policy.min_cpus_per_task {
        MinCpus::Fixed(n) => Some(MinSource::Admin(n)),
        MinCpus::Auto => {
            let (cpus, gpus) = (node.cpus?, node.gpus?);
            // Fewer than 2 CPUs per GPU gives no useful advice (the finding is about 1 CPU per task).
            (gpus > 0 && cpus / gpus >= 2).then_some(MinSource::Node {
                per_gpu: cpus / gpus,
                cpus,
                gpus,
            })
        }
    }
}

/// Where srun takes its CPUs per task from, as predicted before the launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpusSource {
    /// `-c N` / `--cpus-per-task=N` on the command line.
    Option(u32),
    /// The environment variable this release's srun reads (`SRUN_CPUS_PER_TASK` or `SLURM_CPUS_PER_TASK`).
    Env(&'static str, u32),
    /// `--cpus-per-gpu` (option or `SLURM_CPUS_PER_GPU`): CPUs follow the GPUs; not judged here.
    PerGpu,
    /// Nothing: srun's default of 1 CPU per task.
    Default,
    /// A value srun will refuse or that makes no sense (`-c abc`, `SRUN_CPUS_PER_TASK=0`): not judged.
    Unusable,
}

/// Predicts where srun's CPUs per task come from, following the running release's rules.
pub fn srun_cpus_source(
    release: SlurmRelease,
    argv: &ParsedArgv,
    env: &(impl Env + ?Sized),
) -> CpusSource {
    if let Some(v) = argv.value("cpus-per-task") {
        return parse_count(v).map_or(CpusSource::Unusable, CpusSource::Option);
    }
    if argv.value("cpus-per-gpu").is_some() || env.get("SLURM_CPUS_PER_GPU").is_some() {
        return CpusSource::PerGpu;
    }
    let var = release.srun_cpus_env_var();
    if let Some(v) = env.get(var) {
        return parse_count(&v).map_or(CpusSource::Unusable, |n| CpusSource::Env(var, n));
    }
    CpusSource::Default
}

/// The fix for a step with too few CPUs per task, in this release's terms.
fn fix_text(release: SlurmRelease, n: Option<u32>, basis: &str, trap: bool) -> String {
    let num = n.map_or_else(|| "N".to_string(), |n| n.to_string());
    let basis = if n.is_none() {
        " (N = the node's CPUs / GPUs, e.g. 192/8 = 24)".to_string()
    } else {
        basis.to_string()
    };
    if release.srun_reads_slurm_cpus_per_task() {
        format!(
            "add --cpus-per-task={num} to srun{basis}, or set it once with #SBATCH --cpus-per-task={num} (srun {release} inherits SLURM_CPUS_PER_TASK)"
        )
    } else if trap {
        format!(
            "add -c {num} to srun{basis}, or export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK in the job script before srun"
        )
    } else {
        format!(
            "add --cpus-per-task={num} to srun{basis}, or export SRUN_CPUS_PER_TASK={num} before srun"
        )
    }
}

/// Judges an srun launch before allocation (srun, local context). Returns the findings and the CPUs
/// per task it predicts (for [`SrunMarker::cpus_per_task`]); the prediction is `None` when the check
/// does not apply.
pub fn check_srun(
    release: SlurmRelease,
    argv: &ParsedArgv,
    env: &(impl Env + ?Sized),
    node: &NodeFacts,
    policy: &Policy,
) -> (Vec<Finding>, Option<u32>) {
    let gpu = srun_gpu_request(argv, env);
    if policy.gpu_steps_only && !gpu.is_gpu() {
        return (vec![], None);
    }
    let step = if gpu.is_gpu() { "GPU step" } else { "step" };
    let min = min_cpus(policy, node);
    let source = srun_cpus_source(release, argv, env);
    let (cpt, explicit) = match source {
        CpusSource::Option(n) | CpusSource::Env(_, n) => (n, true),
        CpusSource::Default => (1, false),
        CpusSource::PerGpu | CpusSource::Unusable => return (vec![], None),
    };
    let mut out = vec![];
    if !explicit {
        let inherited = env.get("SLURM_CPUS_PER_TASK").and_then(|v| parse_count(&v));
        let ignored_srun_var = env.get("SRUN_CPUS_PER_TASK").and_then(|v| parse_count(&v));
        let (what, n, trap) = match (inherited, ignored_srun_var) {
            (Some(n), _) if n > 1 && !release.srun_reads_slurm_cpus_per_task() => (
                format!(
                    "this {step} gets 1 CPU per task: srun {release} does not read SLURM_CPUS_PER_TASK={n} from the allocation (sbatch/salloc -c {n})"
                ),
                Some(n),
                true,
            ),
            (_, Some(n)) if release.srun_reads_slurm_cpus_per_task() => (
                format!(
                    "this {step} gets 1 CPU per task: srun {release} no longer reads SRUN_CPUS_PER_TASK={n}"
                ),
                Some(n),
                false,
            ),
            _ => (
                format!("this {step} gets 1 CPU per task: srun has no -c/--cpus-per-task"),
                min.map(MinSource::value),
                false,
            ),
        };
        let basis = if trap {
            String::new()
        } else {
            min.map(MinSource::basis).unwrap_or_default()
        };
        out.push(Finding {
            check: CheckKind::CpusPerTask,
            severity: Severity::Error,
            what,
            why: WHY_ONE.into(),
            fix: fix_text(release, n, &basis, trap),
        });
    } else if let Some(min) = min.filter(|m| cpt < m.value()) {
        out.push(few_finding(step, cpt, min));
    }
    (out, Some(cpt))
}

fn few_finding(step: &str, cpt: u32, min: MinSource) -> Finding {
    let per = match min {
        MinSource::Admin(_) => "the site's minimum".to_string(),
        MinSource::Node { .. } => "the node's CPUs per GPU".to_string(),
    };
    Finding {
        check: CheckKind::CpusPerTask,
        severity: Severity::Warning,
        what: format!(
            "this {step} asks for {cpt} CPU{} per task, fewer than {per} ({})",
            if cpt == 1 { "" } else { "s" },
            min.value()
        ),
        why: WHY_FEW.into(),
        fix: format!("use --cpus-per-task={}{}", min.value(), min.basis()),
    }
}

/// Facts of a running step on one node, gathered by slurmstepd's plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepCpus {
    /// `S_STEP_CPUS_PER_TASK`.
    pub cpus_per_task: Option<u32>,
    /// GPUs of the step on this node (`SLURM_STEP_GPUS` / `CUDA_VISIBLE_DEVICES`).
    pub gpus: u32,
    /// `SLURM_CPUS_PER_TASK` in the job's environment (from sbatch/salloc `-c`), raw.
    pub job_cpus_per_task: Option<String>,
    /// `SLURM_OVERCOMMIT` in the job's environment: `S_STEP_CPUS_PER_TASK` is 1 by design then.
    pub overcommit: bool,
}

/// Judges a running step (slurmstepd, remote context) from `S_STEP_CPUS_PER_TASK`, the truth.
/// Silent when srun's plugin predicted the same value (it judged with more context: the command line).
pub fn check_step(
    release: SlurmRelease,
    step: &StepCpus,
    marker: Option<&SrunMarker>,
    node: &NodeFacts,
    policy: &Policy,
) -> Vec<Finding> {
    let Some(cpt) = step.cpus_per_task.filter(|n| *n > 0) else {
        return vec![];
    };
    if (policy.gpu_steps_only && step.gpus == 0) || step.overcommit {
        return vec![];
    }
    if let Some(m) = marker {
        if m.cpus_per_task == Some(cpt) || m.reported(CheckKind::CpusPerTask.id()) {
            return vec![];
        }
    }
    let what_step = if step.gpus > 0 {
        format!(
            "GPU step ({} GPU{} on this node)",
            step.gpus,
            if step.gpus == 1 { "" } else { "s" }
        )
    } else {
        "step".to_string()
    };
    let min = min_cpus(policy, node);
    if cpt == 1 {
        let inherited = step
            .job_cpus_per_task
            .as_deref()
            .and_then(parse_count)
            .filter(|n| *n > 1);
        let (what, n, trap) = match inherited {
            Some(n) if !release.srun_reads_slurm_cpus_per_task() => (
                format!(
                    "this {what_step} runs with 1 CPU per task although SLURM_CPUS_PER_TASK={n}: srun {release} does not read it"
                ),
                Some(n),
                true,
            ),
            _ => (
                format!("this {what_step} runs with 1 CPU per task"),
                min.map(MinSource::value),
                false,
            ),
        };
        let basis = if trap {
            String::new()
        } else {
            min.map(MinSource::basis).unwrap_or_default()
        };
        return vec![Finding {
            check: CheckKind::CpusPerTask,
            severity: Severity::Error,
            what,
            why: WHY_ONE.into(),
            fix: fix_text(release, n, &basis, trap),
        }];
    }
    match min.filter(|m| cpt < m.value()) {
        Some(min) => vec![few_finding("step", cpt, min)],
        None => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::{parse, Tool};
    use crate::policy::parse_args;

    const R2205: SlurmRelease = SlurmRelease::new(22, 5);
    const R2311: SlurmRelease = SlurmRelease::new(23, 11);
    const R2411: SlurmRelease = SlurmRelease::new(24, 11);

    fn run(
        rel: SlurmRelease,
        argv: &[&str],
        env: &[(&str, &str)],
        args: &[&str],
    ) -> (Vec<Finding>, Option<u32>) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let (p, probs) = parse_args(args);
        assert!(probs.is_empty());
        let node = NodeFacts {
            cpus: Some(192),
            gpus: Some(8),
        };
        check_srun(rel, &parse(Tool::Srun, &argv), env, &node, &p)
    }

    #[test]
    fn srun_prediction_follows_the_release() {
        // (release, argv, env, expected finding severity, predicted cpt)
        type Row<'a> = (
            SlurmRelease,
            &'a [&'a str],
            &'a [(&'a str, &'a str)],
            Option<Severity>,
            Option<u32>,
        );
        let g = "--gres=gpu:8";
        let table: &[Row] = &[
            (
                R2205,
                &["srun", g, "x"],
                &[],
                Some(Severity::Error),
                Some(1),
            ),
            (R2205, &["srun", g, "-c", "24", "x"], &[], None, Some(24)),
            (R2205, &["srun", g, "-c24", "x"], &[], None, Some(24)),
            (
                R2205,
                &["srun", g, "--cpus-per-task=24", "x"],
                &[],
                None,
                Some(24),
            ),
            (
                R2205,
                &["srun", g, "-c", "4", "x"],
                &[],
                Some(Severity::Warning),
                Some(4),
            ),
            (
                R2205,
                &["srun", g, "-c", "1", "x"],
                &[],
                Some(Severity::Warning),
                Some(1),
            ),
            // the 22.05 trap: inherited SLURM_CPUS_PER_TASK is ignored
            (
                R2205,
                &["srun", g, "x"],
                &[("SLURM_CPUS_PER_TASK", "24")],
                Some(Severity::Error),
                Some(1),
            ),
            (
                R2205,
                &["srun", g, "x"],
                &[("SRUN_CPUS_PER_TASK", "24")],
                None,
                Some(24),
            ),
            // 23.11+: SLURM_CPUS_PER_TASK is read, SRUN_CPUS_PER_TASK is not
            (
                R2311,
                &["srun", g, "x"],
                &[("SLURM_CPUS_PER_TASK", "24")],
                None,
                Some(24),
            ),
            (
                R2411,
                &["srun", g, "x"],
                &[("SRUN_CPUS_PER_TASK", "24")],
                Some(Severity::Error),
                Some(1),
            ),
            // cpus-per-gpu and garbage are not judged
            (
                R2205,
                &["srun", g, "--cpus-per-gpu=24", "x"],
                &[],
                None,
                None,
            ),
            (R2205, &["srun", g, "-c", "abc", "x"], &[], None, None),
            (
                R2205,
                &["srun", g, "x"],
                &[("SRUN_CPUS_PER_TASK", "-1")],
                None,
                None,
            ),
            (
                R2205,
                &["srun", g, "x"],
                &[("SRUN_CPUS_PER_TASK", "0")],
                None,
                None,
            ),
            // not a GPU step
            (R2205, &["srun", "x"], &[], None, None),
            // inherited GPUs make it a GPU step
            (
                R2205,
                &["srun", "x"],
                &[("SLURM_JOB_GPUS", "0,1")],
                Some(Severity::Error),
                Some(1),
            ),
            // the command's own -c is not srun's
            (
                R2205,
                &["srun", g, "python", "-c", "24"],
                &[],
                Some(Severity::Error),
                Some(1),
            ),
        ];
        for (rel, argv, env, sev, cpt) in table {
            let (f, got) = run(*rel, argv, env, &[]);
            assert_eq!(
                f.first().map(|f| f.severity),
                *sev,
                "{rel} {argv:?} {env:?}: {f:?}"
            );
            assert!(f.len() <= 1);
            assert_eq!(got, *cpt, "{rel} {argv:?} {env:?}");
        }
    }

    #[test]
    fn advice_names_the_release_variable_and_the_number() {
        let (f, _) = run(R2205, &["srun", "--gpus=8", "x"], &[], &[]);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.cpus_per_task: this GPU step gets 1 CPU per task: srun has no -c/--cpus-per-task; \
             NCCL and data-loader threads of each rank share one core, so NCCL bandwidth drops to 1/4-1/10 with no error; \
             add --cpus-per-task=24 to srun (192 CPUs / 8 GPUs), or export SRUN_CPUS_PER_TASK=24 before srun"
        );
        let (f, _) = run(R2411, &["srun", "--gpus=8", "x"], &[], &[]);
        assert!(!f[0].fix.contains("SRUN_CPUS_PER_TASK"), "{}", f[0].fix);
        assert!(
            f[0].fix.contains("#SBATCH --cpus-per-task=24"),
            "{}",
            f[0].fix
        );
        let (f, _) = run(
            R2205,
            &["srun", "--gpus=8", "x"],
            &[("SLURM_CPUS_PER_TASK", "2")],
            &[],
        );
        assert!(
            f[0].what.contains("does not read SLURM_CPUS_PER_TASK=2"),
            "{}",
            f[0].what
        );
        assert!(f[0].fix.contains("add -c 2 to srun"), "{}", f[0].fix);
        assert!(
            f[0].fix.contains("SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK"),
            "{}",
            f[0].fix
        );
    }

    #[test]
    fn non_gpu_steps_are_judged_when_gpu_steps_only_is_no() {
        let (f, _) = run(R2205, &["srun", "x"], &[], &["gpu_steps_only=no"]);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].what.starts_with("this step gets 1 CPU"),
            "{}",
            f[0].what
        );
    }

    #[test]
    fn unknown_node_size_gives_a_formula_not_a_number() {
        let argv: Vec<String> = ["srun", "--gpus=1", "x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (f, _) = check_srun(
            R2205,
            &parse(Tool::Srun, &argv),
            &[][..],
            &NodeFacts::default(),
            &Policy::default(),
        );
        assert!(
            f[0].fix
                .contains("--cpus-per-task=N to srun (N = the node's CPUs / GPUs"),
            "{}",
            f[0].fix
        );
    }

    #[test]
    fn step_truth_is_judged_unless_srun_predicted_it() {
        let p = Policy::default();
        let node = NodeFacts {
            cpus: Some(2),
            gpus: Some(2),
        };
        let trap = StepCpus {
            cpus_per_task: Some(1),
            gpus: 2,
            job_cpus_per_task: Some("2".into()),
            overcommit: false,
        };
        let f = check_step(R2205, &trap, None, &node, &p);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].what.contains("although SLURM_CPUS_PER_TASK=2"),
            "{}",
            f[0].what
        );
        assert_eq!(f[0].severity, Severity::Error);
        // srun already predicted 1 and spoke: silence
        let m = SrunMarker {
            cpus_per_task: Some(1),
            reported: vec![],
        };
        assert!(check_step(R2205, &trap, Some(&m), &node, &p).is_empty());
        // srun predicted 2 but the step got 1: speak
        let m = SrunMarker {
            cpus_per_task: Some(2),
            reported: vec![],
        };
        assert_eq!(check_step(R2205, &trap, Some(&m), &node, &p).len(), 1);
        // no GPUs, overcommit, garbage: silence
        let mut s = trap.clone();
        s.gpus = 0;
        assert!(check_step(R2205, &s, None, &node, &p).is_empty());
        let mut s = trap.clone();
        s.overcommit = true;
        assert!(check_step(R2205, &s, None, &node, &p).is_empty());
        let mut s = trap.clone();
        s.cpus_per_task = None;
        assert!(check_step(R2205, &s, None, &node, &p).is_empty());
        // 24.11 never advises SRUN_CPUS_PER_TASK
        let f = check_step(R2411, &trap, None, &node, &p);
        assert!(!f[0].to_string().contains("SRUN_CPUS_PER_TASK"), "{}", f[0]);
    }

    #[test]
    fn min_cpus_auto_needs_both_numbers() {
        let p = Policy::default();
        assert_eq!(
            min_cpus(
                &p,
                &NodeFacts {
                    cpus: Some(192),
                    gpus: Some(8)
                }
            )
            .map(MinSource::value),
            Some(24)
        );
        assert_eq!(
            min_cpus(
                &p,
                &NodeFacts {
                    cpus: Some(192),
                    gpus: None
                }
            ),
            None
        );
        assert_eq!(
            min_cpus(
                &p,
                &NodeFacts {
                    cpus: Some(4),
                    gpus: Some(8)
                }
            ),
            None
        );
        let (p, _) = parse_args(&["min_cpus_per_task=12"]);
        assert_eq!(
            min_cpus(&p, &NodeFacts::default()),
            Some(MinSource::Admin(12))
        );
    }
}

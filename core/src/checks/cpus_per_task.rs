//! `launch.cpus_per_task`: a GPU step with one CPU per task.
//!
//! `docs/field-rules.md`, "`--cpus-per-task` on GPU steps" (srun(1) `--cpus-per-task`): without `--cpus-per-task` each
//! rank gets one core and NCCL over EFA drops to 1/4–1/10 of its bandwidth with no error (8 GiB
//! all-reduce algbw 92 → 368 GB/s once fixed). The number to use is the node's CPUs ÷ GPUs
//! (192 / 8 = 24).
//!
//! Release rules (srun(1), Slurm 23.11 release notes, docs/spank.md): 22.05 and 23.02 srun read only
//! `SRUN_CPUS_PER_TASK`, so `#SBATCH -c 2` followed by a plain `srun` of several tasks per node gives each task 1 CPU
//! while `SLURM_CPUS_PER_TASK=2` sits in its environment; 23.11+ srun read `SLURM_CPUS_PER_TASK` again
//! and ignore `SRUN_CPUS_PER_TASK`.
//!
//! One task per node is not that trap (srun(1) `--exact`: without it a step inside an allocation
//! holds all of the job's CPUs on each node, and the lone task is bound to all of them): srun leaves
//! it to slurmstepd ([`srun_tasks_per_node`], [`in_allocation`]), which judges the lone task on the
//! CPUs the step holds on its node ([`StepCpus::lone_task_cpus`]).

use super::env::{parse_count, Env};
use super::gpus::srun_gpu_request;
use super::marker::{CpusMark, SrunMarker};
use super::{judge, NodeFacts, Verdict};
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
    /// The node's CPUs ÷ its GPUs, times the GPUs each task drives.
    Node {
        per_gpu: u32,
        cpus: u32,
        gpus: u32,
        gpus_per_task: u32,
    },
}

impl MinSource {
    /// The number of CPUs per task.
    pub fn value(self) -> u32 {
        match self {
            MinSource::Admin(n) => n,
            MinSource::Node {
                per_gpu,
                gpus_per_task,
                ..
            } => per_gpu.saturating_mul(gpus_per_task),
        }
    }

    /// The same floor for tasks that each drive `gpus_per_task` GPUs (the admin's number is per task
    /// already).
    pub fn per_task(self, gpus_per_task: u32) -> MinSource {
        match self {
            MinSource::Node {
                per_gpu,
                cpus,
                gpus,
                ..
            } => MinSource::Node {
                per_gpu,
                cpus,
                gpus,
                gpus_per_task: gpus_per_task.max(1),
            },
            admin => admin,
        }
    }

    /// The advice's basis, or nothing for the inherited-`-c` trap (whose fix names the job's own `-c`).
    fn basis_unless_trap(min: Option<MinSource>, trap: bool) -> String {
        if trap {
            String::new()
        } else {
            min.map(MinSource::basis).unwrap_or_default()
        }
    }

    fn basis(self) -> String {
        match self {
            MinSource::Admin(n) => format!(" (min_cpus_per_task={n} set by the admin)"),
            MinSource::Node {
                cpus,
                gpus,
                gpus_per_task: 1,
                ..
            } => format!(" ({cpus} CPUs / {gpus} GPUs)"),
            MinSource::Node {
                cpus,
                gpus,
                gpus_per_task,
                ..
            } => format!(" ({cpus} CPUs / {gpus} GPUs x {gpus_per_task} GPUs per task)"),
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
                gpus_per_task: 1,
            })
        }
    }
}

/// [`min_cpus`], asking for the node's facts only when `min_cpus_per_task=auto` needs them (gathering
/// them costs a readdir of `/dev` in the plugin).
fn resolve_min(policy: &Policy, node: impl FnOnce() -> NodeFacts) -> Option<MinSource> {
    match policy.min_cpus_per_task {
        MinCpus::Fixed(_) => min_cpus(policy, &NodeFacts::default()),
        MinCpus::Auto => min_cpus(policy, &node()),
    }
}

/// Where srun takes its CPUs per task from, as predicted before the launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpusSource {
    /// `-c N` / `--cpus-per-task=N` on the command line.
    Option(u32),
    /// The environment variable this release's srun reads (`SRUN_CPUS_PER_TASK` or `SLURM_CPUS_PER_TASK`).
    Env(&'static str, u32),
    /// `--tres-per-task=cpu:N` (option, or `SLURM_TRES_PER_TASK` on 23.11+): how 23.11+ also spell `-c`.
    Tres(u32),
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
    // The command line first (it overrides inherited variables), then the environment.
    if let Some(v) = argv.value("cpus-per-task") {
        return parse_count(v).map_or(CpusSource::Unusable, CpusSource::Option);
    }
    if let Some(n) = argv.value("tres-per-task").and_then(cpus_in_tres) {
        return CpusSource::Tres(n);
    }
    if argv.value("cpus-per-gpu").is_some() {
        return CpusSource::PerGpu;
    }
    let var = release.srun_cpus_env_var();
    if let Some(v) = env.get(var) {
        return parse_count(&v).map_or(CpusSource::Unusable, |n| CpusSource::Env(var, n));
    }
    if env.get("SLURM_CPUS_PER_GPU").is_some() {
        return CpusSource::PerGpu;
    }
    let tres_env = release
        .srun_reads_slurm_cpus_per_task()
        .then(|| env.get("SLURM_TRES_PER_TASK"))
        .flatten();
    if let Some(n) = tres_env.as_deref().and_then(cpus_in_tres) {
        return CpusSource::Tres(n);
    }
    CpusSource::Default
}

/// CPUs in a TRES-per-task list such as `cpu:24`, `cpu=24,gres/gpu:1`.
fn cpus_in_tres(spec: &str) -> Option<u32> {
    spec.split(',').find_map(|item| {
        let item = item.trim();
        let rest = item.strip_prefix("cpu")?;
        let n = rest.strip_prefix(':').or_else(|| rest.strip_prefix('='))?;
        parse_count(n)
    })
}

/// Whether srun starts its step inside an existing allocation (`sbatch`/`salloc` set `SLURM_JOB_ID`;
/// `--jobid` names one): the step then holds all of the job's CPUs on each node unless `--exact`
/// (srun(1) `--exact`, `--overlap`).
pub fn in_allocation(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> bool {
    argv.value("jobid").is_some()
        || env.get("SLURM_JOB_ID").is_some()
        || env.get("SLURM_JOBID").is_some()
}

/// Whether srun gives the step only the CPUs its tasks ask for (`--exact`, or `SLURM_EXACT`, which
/// srun reads as `--exact`; srun(1) "INPUT ENVIRONMENT VARIABLES").
fn exact(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> bool {
    argv.has("exact") || env.get("SLURM_EXACT").is_some()
}

/// srun's tasks per node, estimated the way srun counts them (srun(1) `-n`, `-N`,
/// `--ntasks-per-node` and "INPUT ENVIRONMENT VARIABLES": srun reads `SLURM_NTASKS_PER_NODE`,
/// `SLURM_NTASKS` and `SLURM_JOB_NUM_NODES` from the allocation as those options; the command line
/// wins): `--ntasks-per-node`, else `-n` spread over `-N` nodes (rounded up), else srun's default of
/// one task per node. `None` when something it does not follow decides the count
/// (`--ntasks-per-gpu/-socket/-core/-tres`, `-m arbitrary`, `-N min-max`, `-n` without a node count,
/// options launchguard does not know).
pub fn srun_tasks_per_node(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> Option<u32> {
    if argv.uncertain
        || [
            "ntasks-per-gpu",
            "ntasks-per-socket",
            "ntasks-per-core",
            "ntasks-per-tres",
        ]
        .iter()
        .any(|o| argv.has(o))
        || argv
            .value("distribution")
            .is_some_and(|d| d.starts_with("arbitrary"))
        || ["SLURM_NTASKS_PER_GPU", "SLURM_NTASKS_PER_TRES"]
            .iter()
            .any(|v| env.get(v).is_some())
    {
        return None;
    }
    let opt = |name: &str| argv.value(name).map(str::to_string);
    let var = |name: &str| env.get(name);
    if let Some(v) = opt("ntasks-per-node") {
        return parse_count(&v);
    }
    let ntasks = opt("ntasks");
    if ntasks.is_none() {
        if let Some(v) = var("SLURM_NTASKS_PER_NODE") {
            return parse_count(&v);
        }
    }
    let Some(ntasks) = ntasks.or_else(|| var("SLURM_NTASKS").or_else(|| var("SLURM_NPROCS")))
    else {
        return Some(1);
    };
    let ntasks = parse_count(&ntasks)?;
    let nodes = parse_count(&opt("nodes").or_else(|| var("SLURM_JOB_NUM_NODES"))?)?;
    let nodes = nodes.min(ntasks).max(1);
    Some(ntasks.div_ceil(nodes))
}

/// The fix when the tasks on a node, each with the job's `-c n`, need more CPUs than the job holds
/// there (`cpus`): `srun -n 2` in an `sbatch -c 2` job. Adding `-c n` alone would make srun refuse the
/// step (`More processors requested than permitted`).
fn crowded_fix(n: u32, tasks: u32, cpus: u32) -> String {
    let fit = (cpus / n.max(1)).max(1);
    format!(
        "the job holds {cpus} CPUs on this node, too few for {tasks} tasks x {n} CPUs: run {fit} task{} per node with -c {n} (srun --ntasks-per-node={fit} -c {n}), or submit the job with --ntasks-per-node={tasks} -c {n}",
        if fit == 1 { "" } else { "s" }
    )
}

/// Why an srun launch is not judged on CPUs per task at all: helper steps whose tasks are not pinned
/// (`--cpu-bind=none`: MPI daemons such as Open MPI's/PRRTE's `orted`/`prted` launched through srun),
/// interactive shells (`--pty`, `--interactive`).
fn exempt(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> bool {
    let unbound = argv
        .value("cpu-bind")
        .map(str::to_string)
        .or_else(|| env.get("SLURM_CPU_BIND"))
        .is_some_and(|v| cpu_bind_is_none(&v));
    unbound || argv.has("pty") || argv.has("interactive")
}

/// Whether a `--cpu-bind` / `SLURM_CPU_BIND` value leaves tasks unpinned (`none`, `quiet,none`).
pub fn cpu_bind_is_none(value: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case("none"))
}

/// GPUs per task, when the options say: `--gpus-per-task=K` (or `SLURM_GPUS_PER_TASK`), or GPUs per
/// node (`--gpus-per-node`, `--gres=gpu:G`) divided by `--ntasks-per-node`.
fn gpus_per_task(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> Option<u32> {
    let count = |v: &str| v.rsplit(':').next().and_then(parse_count);
    if let Some(k) = argv
        .value("gpus-per-task")
        .map(str::to_string)
        .or_else(|| env.get("SLURM_GPUS_PER_TASK"))
        .as_deref()
        .and_then(count)
    {
        return Some(k);
    }
    let per_node = argv.value("gpus-per-node").and_then(count).or_else(|| {
        argv.value("gres").and_then(|g| {
            g.split(',')
                .find(|x| x.starts_with("gpu") || x.starts_with("gres/gpu"))
                .and_then(count)
        })
    })?;
    let tasks = argv.value("ntasks-per-node").and_then(parse_count)?;
    (per_node >= tasks && per_node % tasks == 0).then_some(per_node / tasks)
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

/// Judges an srun launch before allocation (srun, local context). Returns the findings and srun's
/// verdict for slurmstepd ([`SrunMarker::cpus`]).
///
/// Never rejects what it could not read: with options it does not know ([`ParsedArgv::uncertain`]) it
/// leaves the judgement to slurmstepd, which sees `S_STEP_CPUS_PER_TASK`. `--overlap` steps (monitoring
/// inside a running job) only get a warning; `--cpu-bind=none` helper steps and interactive shells
/// none. `node` is called only when `min_cpus_per_task=auto` needs the node's CPUs and GPUs.
pub fn check_srun(
    release: SlurmRelease,
    argv: &ParsedArgv,
    env: &(impl Env + ?Sized),
    node: impl FnOnce() -> NodeFacts,
    policy: &Policy,
) -> (Vec<Finding>, CpusMark) {
    // srun's verdict for slurmstepd does not depend on whether srun saw GPUs: inside `salloc`, srun
    // inherits no GPU variables, yet the step gets the allocation's GPUs.
    if exempt(argv, env) {
        return (vec![], CpusMark::Exempt);
    }
    let source = srun_cpus_source(release, argv, env);
    // Inside an allocation a step without --exact holds all of the job's CPUs on each node, and
    // the one task of a one-task-per-node launch (torchrun, accelerate) is bound to all of them:
    // only slurmstepd, which sees the tasks on its node and the CPUs the step holds, can tell.
    let tasks_per_node = srun_tasks_per_node(argv, env);
    let one_task_in_job = in_allocation(argv, env)
        && !exact(argv, env)
        && !matches!(tasks_per_node, Some(t) if t >= 2);
    let (cpt, explicit) = match source {
        CpusSource::Option(n) | CpusSource::Env(_, n) | CpusSource::Tres(n) => (n, true),
        CpusSource::Default if argv.uncertain || one_task_in_job => {
            return (vec![], CpusMark::Unjudged)
        }
        CpusSource::Default => (1, false),
        CpusSource::PerGpu => return (vec![], CpusMark::Exempt),
        CpusSource::Unusable => return (vec![], CpusMark::Unjudged),
    };
    let gpu = srun_gpu_request(argv, env);
    if policy.gpu_steps_only && !gpu.is_gpu() {
        // An explicit CPU count is the user's choice: slurmstepd stays silent if the step gets it.
        // Without one, slurmstepd judges the real step (it may get GPUs srun could not see).
        let mark = if explicit {
            CpusMark::Predicted(cpt)
        } else {
            CpusMark::Unjudged
        };
        return (vec![], mark);
    }
    let step = if gpu.is_gpu() { "GPU step" } else { "step" };
    let gpt = gpus_per_task(argv, env).unwrap_or(1);
    let min = resolve_min(policy, node).map(|m| m.per_task(gpt));
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
        let basis = MinSource::basis_unless_trap(min, trap);
        // An --overlap step shares a running job's CPUs (monitoring, debugging): say it, never stop it.
        let severity = if argv.has("overlap") {
            Severity::Warning
        } else {
            Severity::Error
        };
        let job_cpus = env.get("SLURM_CPUS_ON_NODE").and_then(|v| parse_count(&v));
        let fix = match (n, tasks_per_node, job_cpus) {
            (Some(n), Some(t), Some(c)) if trap && t.saturating_mul(n) > c => crowded_fix(n, t, c),
            _ => fix_text(release, n, &basis, trap),
        };
        out.push(Finding {
            check: CheckKind::CpusPerTask,
            severity,
            what,
            why: WHY_ONE.into(),
            fix,
        });
    } else if let Some(min) = min.filter(|m| cpt < m.value()) {
        out.push(few_finding(step, cpt, min));
    }
    (out, CpusMark::Predicted(cpt))
}

/// The fix for a lone task that holds the one CPU its step has on the node: inside a job that CPU is
/// all the job holds there (a step without `--exact` takes all of them), so the CPUs must be asked
/// for where the job is made.
fn lone_fix(n: Option<u32>, basis: &str) -> String {
    let (num, basis) = match n {
        Some(n) => (n.to_string(), basis.to_string()),
        None => (
            "N".to_string(),
            " (N = the node's CPUs / GPUs, e.g. 192/8 = 24)".to_string(),
        ),
    };
    format!(
        "ask for the CPUs where the job is made: srun --cpus-per-task={num}{basis} for an srun outside a job, #SBATCH --cpus-per-task={num} or salloc -c {num} for one inside (its one task per node then holds them all)"
    )
}

/// The one task of a node holds all the step's CPUs there (`held`), fewer than the floor.
fn lone_task_finding(what_step: &str, held: u32, min: MinSource) -> Finding {
    let per = match min {
        MinSource::Admin(_) => "the site's minimum".to_string(),
        MinSource::Node { .. } => "the node's CPUs per GPU times its GPUs".to_string(),
    };
    Finding {
        check: CheckKind::CpusPerTask,
        severity: Severity::Warning,
        what: format!(
            "the one task of this {what_step} holds the step's {held} CPU{} here, fewer than {per} ({})",
            if held == 1 { "" } else { "s" },
            min.value()
        ),
        why: WHY_FEW.into(),
        fix: format!(
            "ask the job for more CPUs on the node (#SBATCH --cpus-per-task={}){}",
            min.value(),
            min.basis()
        ),
    }
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
    /// Tasks not pinned (`SLURM_CPU_BIND` contains `none`), an interactive step (`SLURM_PTY_PORT`) or
    /// CPUs that follow the GPUs (`SLURM_CPUS_PER_GPU`): helper steps or `S_STEP_CPUS_PER_TASK` of 1 by
    /// design, not judged.
    pub exempt: bool,
    /// `SLURM_OVERLAP` in the step's environment (srun reads it as `--overlap`; launchguard's srun
    /// plugin sets it for an `--overlap` on the command line): a rejection becomes a warning.
    pub overlap: bool,
    /// The step's tasks on this node (`S_JOB_LOCAL_TASK_COUNT`).
    pub local_tasks: Option<u32>,
    /// The CPUs the step holds on this node (`S_JOB_NCPUS` in slurmstepd: the step's cores from its
    /// credential; all of the job's CPUs on the node for a step without `--exact`).
    pub node_cpus: Option<u32>,
    /// `SLURM_CPU_BIND` binds each task to CPUs of its own (`cores`, `threads`, `sockets`, `map_cpu:…`,
    /// `mask_cpu:…`, `rank`, `ldoms`; [`cpu_bind_binds`]): a lone task then gets its own CPUs, not all
    /// the step's.
    pub bound: bool,
}

/// Whether a `--cpu-bind` / `SLURM_CPU_BIND` value binds tasks to CPUs of their own (srun(1)
/// `--cpu-bind`): anything but `none`, `quiet`, `verbose` (and an empty value).
pub fn cpu_bind_binds(value: &str) -> bool {
    !cpu_bind_is_none(value)
        && value.split(',').any(|t| {
            let t = t.trim().to_ascii_lowercase();
            !(t.is_empty() || t == "quiet" || t == "q" || t == "verbose" || t == "v")
        })
}

impl StepCpus {
    /// The CPUs the one task of this node holds when it is alone here and not bound by an option:
    /// all of the step's CPUs on the node (task/affinity binds a lone task to them, task/cgroup
    /// confines it to the step's cpuset; `nproc` in the task prints this number).
    pub fn lone_task_cpus(&self) -> Option<u32> {
        if self.local_tasks != Some(1) || self.bound {
            return None;
        }
        self.node_cpus.filter(|c| *c > 0)
    }
}

/// slurmstepd's verdict on CPUs per task: judged from the step's own facts ([`check_step`]); srun's
/// marker only keeps slurmstepd from printing a line srun's plugin already showed, and never lifts a
/// rejection: the marker is an environment variable any user can set, so a forged
/// `cpt=*;reported=launch.cpus_per_task` stops nothing. Returns the verdict and whether its lines
/// must stay off the terminal: a launch that goes on loses the findings srun already judged (as
/// before); a rejected one keeps them for slurmd's log and the agent, and is quiet on the terminal
/// only when srun's plugin showed the same finding (an `optional` plugin, whose rejection Slurm
/// ignores, or a forged marker, which then only hides the reason).
pub fn step_verdict(
    release: SlurmRelease,
    step: &StepCpus,
    marker: Option<&SrunMarker>,
    node: impl FnOnce() -> NodeFacts,
    policy: &Policy,
) -> (Verdict, bool) {
    let mut v = judge(check_step(release, step, node, policy), policy);
    let Some(m) = marker else {
        return (v, false);
    };
    if v.reject {
        let quiet = m.reported(CheckKind::CpusPerTask.id());
        return (v, quiet);
    }
    if srun_showed(m, step.cpus_per_task) {
        v.shown.clear();
    }
    (v, false)
}

/// Whether srun's plugin already spoke about this step's CPUs per task: it predicted the value the
/// step got, exempted the step, or showed a `launch.cpus_per_task` line.
pub fn srun_showed(m: &SrunMarker, cpus_per_task: Option<u32>) -> bool {
    cpus_per_task.is_some_and(|c| m.cpus == CpusMark::Predicted(c))
        || m.cpus == CpusMark::Exempt
        || m.reported(CheckKind::CpusPerTask.id())
}

/// Judges a running step (slurmstepd, remote context) from `S_STEP_CPUS_PER_TASK`, the truth, and
/// the `SLURM_*` variables srun itself acts on (so that setting one by hand changes the launch
/// exactly as the option would). A count the user asked for (`srun -c N` sets
/// `SLURM_CPUS_PER_TASK=N` for the step) is judged as srun's plugin judges an explicit `-c`.
/// `node` is called only when `min_cpus_per_task=auto` needs the node's CPUs and GPUs.
pub fn check_step(
    release: SlurmRelease,
    step: &StepCpus,
    node: impl FnOnce() -> NodeFacts,
    policy: &Policy,
) -> Vec<Finding> {
    let Some(cpt) = step.cpus_per_task.filter(|n| *n > 0) else {
        return vec![];
    };
    if (policy.gpu_steps_only && step.gpus == 0) || step.overcommit || step.exempt {
        return vec![];
    }
    let overlap = step.overlap;
    // srun -c N sets SLURM_CPUS_PER_TASK=N for the step (23.11+ also read an inherited one).
    let asked = step.job_cpus_per_task.as_deref().and_then(parse_count) == Some(cpt);
    let what_step = if step.gpus > 0 {
        format!(
            "GPU step ({} GPU{} on this node)",
            step.gpus,
            if step.gpus == 1 { "" } else { "s" }
        )
    } else {
        "step".to_string()
    };
    let min = resolve_min(policy, node);
    if let Some(held) = step.lone_task_cpus().filter(|c| *c > cpt) {
        // One task holds every CPU the step has on this node: judge those, never "1 CPU per task".
        let min = min.map(|m| m.per_task(step.gpus));
        return match min.filter(|m| held < m.value()) {
            Some(min) => vec![lone_task_finding(&what_step, held, min)],
            None => vec![],
        };
    }
    if cpt == 1 && !asked {
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
        let basis = MinSource::basis_unless_trap(min, trap);
        let fix = match (n, step.local_tasks, step.node_cpus) {
            (Some(n), Some(t), Some(c)) if trap && t.saturating_mul(n) > c => crowded_fix(n, t, c),
            // A lone task holding the step's single CPU: the job holds no more here, so `-c` on
            // an srun inside it would be refused; the job must ask.
            _ if step.lone_task_cpus() == Some(1) => lone_fix(n, &basis),
            _ => fix_text(release, n, &basis, trap),
        };
        return vec![Finding {
            check: CheckKind::CpusPerTask,
            severity: if overlap {
                Severity::Warning
            } else {
                Severity::Error
            },
            what,
            why: WHY_ONE.into(),
            fix,
        }];
    }
    match min.filter(|m| cpt < m.value()) {
        Some(min) => vec![few_finding("step", cpt, min)],
        None => vec![],
    }
}

/// `sbatch --container-image` (Pyxis) runs the batch script itself inside the container as the batch
/// step, which gets the job's CPUs on its first node (sbatch(1), "--cpus-per-task"): one task and no
/// `-c`, `--cpus-per-gpu`, `--mincpus` or `--exclusive` give it a single CPU (`SLURM_CPUS_ON_NODE=1`
/// inside), so the GPU program the script starts shares one core with its data loaders and NCCL's
/// threads. `argv` is sbatch's command line, `script` its `#SBATCH` lines; `env` sbatch's
/// environment (`SBATCH_*` inputs, sbatch(1) "INPUT ENVIRONMENT VARIABLES"). A warning: sbatch never
/// rejects.
pub fn check_batch_container(
    argv: &ParsedArgv,
    script: Option<&ParsedArgv>,
    env: &(impl Env + ?Sized),
) -> Option<Finding> {
    let either = |name: &str| argv.has(name) || script.is_some_and(|s| s.has(name));
    if !(either("container-image") || either("container-name")) {
        return None;
    }
    // GPUs: the command line wins over the script (sbatch(1)).
    let gpus = [Some(argv), script]
        .into_iter()
        .flatten()
        .any(|a| super::gpus::srun_gpu_request(a, &|_: &str| None::<String>).is_gpu())
        || [
            "SBATCH_GPUS",
            "SBATCH_GPUS_PER_NODE",
            "SBATCH_GPUS_PER_TASK",
            "SBATCH_GRES",
        ]
        .iter()
        .any(|v| {
            env.get(v)
                .is_some_and(|x| !x.is_empty() && !x.starts_with("none"))
        });
    if !gpus {
        return None;
    }
    let more_cpus = [
        "cpus-per-task",
        "cpus-per-gpu",
        "mincpus",
        "exclusive",
        "ntasks",
        "ntasks-per-node",
        "ntasks-per-gpu",
        "tres-per-task",
    ]
    .iter()
    .any(|o| either(o))
        || [
            "SBATCH_CPUS_PER_TASK",
            "SBATCH_CPUS_PER_GPU",
            "SBATCH_EXCLUSIVE",
        ]
        .iter()
        .any(|v| env.get(v).is_some())
        || argv.uncertain
        || script.is_some_and(|s| s.uncertain);
    if more_cpus {
        return None;
    }
    Some(Finding {
        check: CheckKind::CpusPerTask,
        severity: Severity::Warning,
        what: "sbatch --container-image runs the batch script in the container as the batch step, which gets 1 CPU here (one task, no -c): SLURM_CPUS_ON_NODE=1".into(),
        why: "the GPU program the script starts shares that one core with its data loaders and NCCL's threads, so it runs several times slower with no error".into(),
        fix: "add #SBATCH --cpus-per-task=N (N = the node's CPUs / GPUs, times the GPUs you ask for) or #SBATCH --cpus-per-gpu=N".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_batch_script_with_gpus_and_no_cpus_is_told_its_one_cpu() {
        use crate::argv::{parse, Tool};
        let p = |a: &[&str]| {
            parse(
                Tool::Sbatch,
                &a.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            )
        };
        let none: &[(&str, &str)] = &[];
        let script = p(&["sbatch", "--container-image=img.sqsh", "--gres=gpu:1"]);
        let f = check_batch_container(&p(&["sbatch", "job.sh"]), Some(&script), none).unwrap();
        assert_eq!(f.id(), "launch.cpus_per_task");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.what.contains("SLURM_CPUS_ON_NODE=1"), "{}", f.what);
        // -c on the command line or in the script, --cpus-per-gpu, -n, SBATCH_CPUS_PER_TASK: fine
        for extra in [
            &["sbatch", "-c", "8", "job.sh"][..],
            &["sbatch", "--cpus-per-gpu=8", "job.sh"],
            &["sbatch", "-n", "4", "job.sh"],
        ] {
            assert!(
                check_batch_container(&p(extra), Some(&script), none).is_none(),
                "{extra:?}"
            );
        }
        assert!(check_batch_container(
            &p(&["sbatch", "job.sh"]),
            Some(&script),
            &[("SBATCH_CPUS_PER_TASK", "8")][..]
        )
        .is_none());
        // no container, or no GPUs: not this check's business
        let plain = p(&["sbatch", "--gres=gpu:1"]);
        assert!(check_batch_container(&p(&["sbatch", "job.sh"]), Some(&plain), none).is_none());
        let cpu_only = p(&["sbatch", "--container-image=img.sqsh"]);
        assert!(check_batch_container(&p(&["sbatch", "job.sh"]), Some(&cpu_only), none).is_none());
        // GPUs and the image on the command line
        assert!(check_batch_container(
            &p(&["sbatch", "--container-image=i.sqsh", "-G", "1", "job.sh"]),
            None,
            none
        )
        .is_some());
    }
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
    ) -> (Vec<Finding>, CpusMark) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let (p, probs) = parse_args(args);
        assert!(probs.is_empty());
        let node = NodeFacts {
            cpus: Some(192),
            gpus: Some(8),
        };
        check_srun(rel, &parse(Tool::Srun, &argv), env, || node, &p)
    }

    /// Inside a job (sbatch/salloc set SLURM_JOB_ID).
    const JOB: (&str, &str) = ("SLURM_JOB_ID", "7");

    #[test]
    #[rustfmt::skip]
    fn srun_prediction_follows_the_release() {
        // (release, argv, env, expected finding severity, srun's verdict for slurmstepd)
        type Row<'a> = (SlurmRelease, &'a [&'a str], &'a [(&'a str, &'a str)], Option<Severity>, CpusMark);
        use CpusMark::{Exempt as X, Predicted as P, Unjudged as U};
        let g = "--gres=gpu:8";
        let table: &[Row] = &[
            (R2205, &["srun", g, "x"], &[], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "-c", "24", "x"], &[], None, P(24)),
            (R2205, &["srun", g, "-c24", "x"], &[], None, P(24)),
            (R2205, &["srun", g, "--cpus-per-task=24", "x"], &[], None, P(24)),
            (R2205, &["srun", g, "-c", "4", "x"], &[], Some(Severity::Warning), P(4)),
            (R2205, &["srun", g, "-c", "1", "x"], &[], Some(Severity::Warning), P(1)),
            // the 22.05 trap: inherited SLURM_CPUS_PER_TASK is ignored
            (R2205, &["srun", g, "x"], &[("SLURM_CPUS_PER_TASK", "24")], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "x"], &[("SRUN_CPUS_PER_TASK", "24")], None, P(24)),
            // 23.11+: SLURM_CPUS_PER_TASK is read, SRUN_CPUS_PER_TASK is not
            (R2311, &["srun", g, "x"], &[("SLURM_CPUS_PER_TASK", "24")], None, P(24)),
            (R2411, &["srun", g, "x"], &[("SRUN_CPUS_PER_TASK", "24")], Some(Severity::Error), P(1)),
            // 23.11+ also spell -c as --tres-per-task=cpu:N
            (R2411, &["srun", g, "--tres-per-task=cpu:24", "x"], &[], None, P(24)),
            (R2411, &["srun", g, "x"], &[("SLURM_TRES_PER_TASK", "cpu=24")], None, P(24)),
            // cpus-per-gpu is exempt (slurmstepd sees 1 by design); garbage is not judged
            (R2205, &["srun", g, "--cpus-per-gpu=24", "x"], &[], None, X),
            // the command line beats inherited variables (inside salloc -c2 on 24.11)
            (R2411, &["srun", "--cpus-per-gpu=1", "x"], &[("SLURM_CPUS_PER_TASK", "2"), ("SLURM_TRES_PER_TASK", "cpu=2")], None, X),
            (R2205, &["srun", g, "-c", "abc", "x"], &[], None, U),
            (R2205, &["srun", g, "x"], &[("SRUN_CPUS_PER_TASK", "-1")], None, U),
            (R2205, &["srun", g, "x"], &[("SRUN_CPUS_PER_TASK", "0")], None, U),
            // helper and interactive steps are exempt; --overlap only warns
            (R2205, &["srun", g, "--cpu-bind=none", "orted"], &[], None, X),
            (R2205, &["srun", g, "prted"], &[("SLURM_CPU_BIND", "quiet,none")], None, X),
            (R2205, &["srun", g, "--pty", "bash"], &[], None, X),
            (R2205, &["srun", "--overlap", "--jobid=5", "-N1", "-n", "2", "nvidia-smi"], &[("SLURM_JOB_GPUS", "0")], Some(Severity::Warning), P(1)),
            // one task per node inside an allocation holds all the job's CPUs there: slurmstepd judges
            (R2205, &["srun", "--overlap", "--jobid=5", "nvidia-smi"], &[("SLURM_JOB_GPUS", "0")], None, U),
            // options launchguard does not know: never reject on absence, leave it to slurmstepd
            (R2205, &["srun", g, "--some-site-option", "x"], &[], None, U),
            (R2205, &["srun", g, "--prefer", "h100", "-c", "24", "x"], &[], None, P(24)),
            // not a GPU step as far as srun sees (inside salloc srun inherits no GPU variables):
            // an explicit count is passed on so that slurmstepd respects it
            (R2205, &["srun", "x"], &[], None, U),
            (R2205, &["srun", "-c1", "x"], &[], None, P(1)),
            (R2205, &["srun", "--overlap", "x"], &[], None, U),
            (R2205, &["srun", "--cpus-per-gpu=1", "x"], &[], None, X),
            // inherited GPUs make it a GPU step
            (R2205, &["srun", "x"], &[("SLURM_JOB_GPUS", "0,1")], Some(Severity::Error), P(1)),
            // the command's own -c is not srun's
            (R2205, &["srun", g, "python", "-c", "24"], &[], Some(Severity::Error), P(1)),
            // the one-task trap: inside sbatch -c 24, one task per node gets all the job's CPUs there
            (R2205, &["srun", g, "x"], &[JOB, ("SLURM_CPUS_PER_TASK", "24")], None, U),
            (R2205, &["srun", g, "--ntasks-per-node=1", "torchrun"], &[JOB, ("SLURM_NTASKS_PER_NODE", "8")], None, U),
            (R2205, &["srun", g, "x"], &[JOB, ("SLURM_NTASKS", "1"), ("SLURM_JOB_NUM_NODES", "1")], None, U),
            (R2205, &["srun", g, "-N", "2", "-n", "2", "x"], &[JOB], None, U),
            (R2411, &["srun", g, "-n", "1", "x"], &[JOB, ("SLURM_NTASKS", "8"), ("SLURM_JOB_NUM_NODES", "1")], None, U),
            // ...but several tasks per node, --exact, or no allocation really get 1 CPU per task
            (R2205, &["srun", g, "-n", "2", "x"], &[JOB, ("SLURM_CPUS_PER_TASK", "24"), ("SLURM_JOB_NUM_NODES", "1")], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "x"], &[JOB, ("SLURM_NTASKS", "3"), ("SLURM_JOB_NUM_NODES", "2")], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "x"], &[JOB, ("SLURM_NTASKS_PER_NODE", "8")], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "-n", "8", "x"], &[JOB, ("SLURM_NTASKS_PER_NODE", "1"), ("SLURM_JOB_NUM_NODES", "1")], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "--exact", "x"], &[JOB], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "x"], &[JOB, ("SLURM_EXACT", "1")], Some(Severity::Error), P(1)),
            (R2205, &["srun", g, "-n", "1", "x"], &[], Some(Severity::Error), P(1)),
            // counts launchguard cannot follow: slurmstepd judges
            (R2205, &["srun", g, "--ntasks-per-gpu=1", "x"], &[JOB], None, U),
            (R2205, &["srun", g, "-N", "1-2", "-n", "4", "x"], &[JOB], None, U),
        ];
        for (rel, argv, env, sev, mark) in table {
            let (f, got) = run(*rel, argv, env, &[]);
            assert_eq!(f.first().map(|f| f.severity), *sev, "{rel} {argv:?} {env:?}: {f:?}");
            assert!(f.len() <= 1);
            assert_eq!(got, *mark, "{rel} {argv:?} {env:?}");
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

    /// `srun -n 2` in an `sbatch -c 2` job on 22.05: each task gets 1 CPU, and `-c 2` alone would ask
    /// for 4 CPUs the job does not hold on the node, so the advice says what fits.
    #[test]
    fn several_tasks_in_a_job_too_small_for_them_are_told_what_fits() {
        let env = [
            JOB,
            ("SLURM_CPUS_PER_TASK", "2"),
            ("SLURM_CPUS_ON_NODE", "2"),
            ("SLURM_JOB_NUM_NODES", "1"),
        ];
        let (f, mark) = run(R2205, &["srun", "--gpus=2", "-n", "2", "x"], &env, &[]);
        assert_eq!(mark, CpusMark::Predicted(1));
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.cpus_per_task: this GPU step gets 1 CPU per task: srun 22.05 does not read SLURM_CPUS_PER_TASK=2 \
             from the allocation (sbatch/salloc -c 2); {WHY_ONE}; the job holds 2 CPUs on this node, too few for 2 tasks x 2 CPUs: \
             run 1 task per node with -c 2 (srun --ntasks-per-node=1 -c 2), or submit the job with --ntasks-per-node=2 -c 2"
                .replace("{WHY_ONE}", WHY_ONE)
        );
        // a job with room for both keeps the release's advice
        let mut roomy = env;
        roomy[2] = ("SLURM_CPUS_ON_NODE", "4");
        let (f, _) = run(R2205, &["srun", "--gpus=2", "-n", "2", "x"], &roomy, &[]);
        assert!(f[0].fix.starts_with("add -c 2 to srun"), "{}", f[0].fix);
    }

    #[test]
    fn advice_scales_with_gpus_per_task() {
        let (f, _) = run(
            R2205,
            &[
                "srun",
                "--ntasks-per-node=1",
                "--gpus-per-node=8",
                "torchrun",
            ],
            &[],
            &[],
        );
        assert!(
            f[0].fix.starts_with(
                "add --cpus-per-task=192 to srun (192 CPUs / 8 GPUs x 8 GPUs per task)"
            ),
            "{}",
            f[0].fix
        );
        let (f, _) = run(
            R2205,
            &["srun", "--gpus-per-task=2", "-c", "24", "x"],
            &[],
            &[],
        );
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].fix.starts_with("use --cpus-per-task=48"),
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
            NodeFacts::default,
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
    fn step_truth_is_judged_and_the_marker_only_saves_a_second_line() {
        let p = Policy::default();
        let enforce = parse_args(&["mode=enforce"]).0;
        let node = NodeFacts {
            cpus: Some(2),
            gpus: Some(2),
        };
        let trap = StepCpus {
            cpus_per_task: Some(1),
            gpus: 2,
            job_cpus_per_task: Some("2".into()),
            overcommit: false,
            exempt: false,
            overlap: false,
            local_tasks: None,
            node_cpus: None,
            bound: false,
        };
        let f = check_step(R2205, &trap, || node, &p);
        assert_eq!(f.len(), 1);
        assert!(
            f[0].what.contains("although SLURM_CPUS_PER_TASK=2"),
            "{}",
            f[0].what
        );
        assert_eq!(f[0].severity, Severity::Error);
        let mark = |cpus| SrunMarker {
            cpus,
            ..Default::default()
        };
        // warn mode: srun already predicted 1 (and spoke) or exempted it: not printed twice
        for m in [mark(CpusMark::Predicted(1)), mark(CpusMark::Exempt)] {
            let (v, _) = step_verdict(R2205, &trap, Some(&m), || node, &p);
            assert!(v.shown.is_empty() && !v.reject, "{m:?}");
        }
        // srun predicted 2 but the step got 1, or srun did not judge: speak
        for m in [mark(CpusMark::Predicted(2)), mark(CpusMark::Unjudged)] {
            assert_eq!(
                step_verdict(R2205, &trap, Some(&m), || node, &p)
                    .0
                    .shown
                    .len(),
                1
            );
        }
        // enforce mode: no marker lifts a rejection (issue: a forged SLURM_LAUNCHGUARD_SRUN)
        let plain = StepCpus {
            job_cpus_per_task: None,
            ..trap.clone()
        };
        let forged = SrunMarker::decode(
            "v1;cpt=*;ctr=0;ovl=0;reported=launch.cpus_per_task+launch.export_all",
        )
        .unwrap();
        for step in [&trap, &plain] {
            for m in [
                forged.clone(),
                mark(CpusMark::Predicted(1)),
                mark(CpusMark::Exempt),
                SrunMarker {
                    overlap: true,
                    ..forged.clone()
                },
            ] {
                let (v, quiet) = step_verdict(R2205, step, Some(&m), || node, &enforce);
                assert!(v.reject, "{m:?} lifted the rejection of {step:?}");
                assert_eq!(
                    v.shown.len(),
                    1,
                    "slurmd's log and the agent get the reason"
                );
                // only a claim that srun printed the line keeps it off the terminal
                assert_eq!(quiet, m.reported(CheckKind::CpusPerTask.id()), "{m:?}");
            }
        }
        // facts Slurm acts on exempt or soften it, as the options would
        let mut s = trap.clone();
        s.exempt = true;
        assert!(check_step(R2205, &s, || node, &p).is_empty());
        let mut s = trap.clone();
        s.overlap = true;
        let (v, _) = step_verdict(R2205, &s, None, || node, &enforce);
        assert!(!v.reject && v.shown[0].severity == Severity::Warning);
        // srun -c 1 (SLURM_CPUS_PER_TASK=1 in the step): the user's choice, judged like srun's -c 1
        let asked = StepCpus {
            job_cpus_per_task: Some("1".into()),
            ..trap.clone()
        };
        assert!(check_step(R2205, &asked, || node, &enforce).is_empty());
        let min2 = parse_args(&["mode=enforce", "min_cpus_per_task=2"]).0;
        let (v, _) = step_verdict(R2205, &asked, None, || node, &min2);
        assert!(
            !v.reject && v.shown[0].severity == Severity::Warning,
            "{v:?}"
        );
        // no GPUs, overcommit, garbage: silence
        let mut s = trap.clone();
        s.gpus = 0;
        assert!(check_step(R2205, &s, || node, &p).is_empty());
        let mut s = trap.clone();
        s.overcommit = true;
        assert!(check_step(R2205, &s, || node, &p).is_empty());
        let mut s = trap.clone();
        s.cpus_per_task = None;
        assert!(check_step(R2205, &s, || node, &p).is_empty());
        // 24.11 never advises SRUN_CPUS_PER_TASK
        let f = check_step(R2411, &trap, || node, &p);
        assert!(!f[0].to_string().contains("SRUN_CPUS_PER_TASK"), "{}", f[0]);
    }

    /// The one-task trap: inside `sbatch -c 2`, `srun` with one task per node (torchrun, accelerate)
    /// gets all of the job's CPUs on the node although `S_STEP_CPUS_PER_TASK` is 1.
    #[test]
    fn a_lone_task_holding_the_steps_cpus_is_never_one_cpu_per_task() {
        let enforce = parse_args(&["mode=enforce"]).0;
        let node = || NodeFacts {
            cpus: Some(2),
            gpus: Some(2),
        };
        let lone = StepCpus {
            cpus_per_task: Some(1),
            gpus: 2,
            job_cpus_per_task: Some("2".into()),
            local_tasks: Some(1),
            node_cpus: Some(2),
            ..Default::default()
        };
        assert!(check_step(R2205, &lone, node, &enforce).is_empty());
        let unjudged = SrunMarker::default();
        let (v, _) = step_verdict(R2205, &lone, Some(&unjudged), node, &enforce);
        assert!(!v.reject && v.shown.is_empty(), "{v:?}");
        // without -c in the job as well (sbatch -n 2; srun -n 1), on any release
        let plain = StepCpus {
            job_cpus_per_task: None,
            ..lone.clone()
        };
        assert!(check_step(R2411, &plain, node, &enforce).is_empty());
        // the lone task really has 1 CPU: --exact (the step holds 1), --cpu-bind=cores, no count
        for s in [
            StepCpus {
                node_cpus: Some(1),
                ..lone.clone()
            },
            StepCpus {
                bound: true,
                ..lone.clone()
            },
            StepCpus {
                node_cpus: None,
                ..lone.clone()
            },
        ] {
            let f = check_step(R2205, &s, node, &enforce);
            assert_eq!(f.len(), 1, "{s:?}");
            assert_eq!(f[0].severity, Severity::Error, "{s:?}");
        }
        // a lone task in a job of 1 CPU on the node: the job must ask for more
        let one = StepCpus {
            job_cpus_per_task: None,
            node_cpus: Some(1),
            ..lone.clone()
        };
        let f = check_step(R2205, &one, node, &parse_args(&["min_cpus_per_task=4"]).0);
        assert!(
            f[0].fix.starts_with(
                "ask for the CPUs where the job is made: srun --cpus-per-task=4 (min_cpus_per_task=4 set by the admin) for an srun outside a job, #SBATCH --cpus-per-task=4"
            ),
            "{}",
            f[0].fix
        );
        // two tasks share the job's 2 CPUs: 1 each, and -c 2 alone would not fit
        let two = StepCpus {
            local_tasks: Some(2),
            ..lone.clone()
        };
        let f = check_step(R2205, &two, node, &enforce);
        assert_eq!(f.len(), 1);
        assert!(f[0].what.contains("runs with 1 CPU per task"), "{}", f[0]);
        assert_eq!(
            f[0].fix,
            "the job holds 2 CPUs on this node, too few for 2 tasks x 2 CPUs: run 1 task per node with -c 2 \
             (srun --ntasks-per-node=1 -c 2), or submit the job with --ntasks-per-node=2 -c 2"
        );
        // a roomy job keeps the release's advice
        let roomy = StepCpus {
            node_cpus: Some(4),
            ..two.clone()
        };
        let f = check_step(R2205, &roomy, node, &enforce);
        assert!(f[0].fix.starts_with("add -c 2 to srun"), "{}", f[0].fix);
        // torchrun on an 8-GPU node: one task with the node's 192 CPUs is fine, with 16 it is told
        // the floor for a task driving 8 GPUs (192 / 8 x 8)
        let big = || NodeFacts {
            cpus: Some(192),
            gpus: Some(8),
        };
        let torchrun = StepCpus {
            cpus_per_task: Some(1),
            gpus: 8,
            local_tasks: Some(1),
            node_cpus: Some(192),
            ..Default::default()
        };
        assert!(check_step(R2205, &torchrun, big, &Policy::default()).is_empty());
        let small = StepCpus {
            node_cpus: Some(16),
            ..torchrun
        };
        let f = check_step(R2205, &small, big, &enforce);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].what.starts_with(
                "the one task of this GPU step (8 GPUs on this node) holds the step's 16 CPUs here"
            ),
            "{}",
            f[0].what
        );
        assert!(f[0].fix.contains("--cpus-per-task=192"), "{}", f[0].fix);
    }

    #[test]
    fn cpu_bind_values_that_bind_each_task() {
        for v in [
            "cores",
            "quiet,cores",
            "map_cpu:0,1",
            "verbose,threads",
            "rank",
        ] {
            assert!(cpu_bind_binds(v), "{v}");
        }
        for v in ["none", "quiet,none", "quiet", "verbose", "", "v"] {
            assert!(!cpu_bind_binds(v), "{v}");
        }
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

    /// A Grace Blackwell (GB300) compute tray as NCCL tests are run on it: 4 GPUs, 4 tasks per node,
    /// 24 CPUs per task (96 CPUs / 4 GPUs; the Grace CPUs are aarch64, nothing here depends on it).
    #[test]
    fn grace_blackwell_nodes_are_advised_24_cpus_per_task() {
        let gb300 = || NodeFacts {
            cpus: Some(96),
            gpus: Some(4),
        };
        let argv = |extra: &[&str]| -> Vec<String> {
            [
                "srun",
                "-N",
                "18",
                "--ntasks-per-node=4",
                "--gpus-per-node=4",
            ]
            .iter()
            .chain(extra)
            .chain(["all_reduce_perf"].iter())
            .map(|s| s.to_string())
            .collect()
        };
        let (f, _) = check_srun(
            R2205,
            &parse(Tool::Srun, &argv(&[])),
            &[][..],
            gb300,
            &Policy::default(),
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].fix.contains("--cpus-per-task=24"), "{}", f[0].fix);
        assert!(f[0].to_string().contains("96 CPUs / 4 GPUs"), "{}", f[0]);
        let (f, _) = check_srun(
            R2205,
            &parse(Tool::Srun, &argv(&["--cpus-per-task=24"])),
            &[][..],
            gb300,
            &Policy::default(),
        );
        assert!(f.is_empty(), "{f:?}");
        let (f, _) = check_srun(
            R2205,
            &parse(Tool::Srun, &argv(&["-c", "12"])),
            &[][..],
            gb300,
            &Policy::default(),
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].to_string().contains("24"), "{}", f[0]);
        // In slurmstepd: a task driving 1 of the node's 4 GPUs with 1 CPU.
        let step = StepCpus {
            cpus_per_task: Some(1),
            gpus: 4,
            job_cpus_per_task: None,
            overcommit: false,
            exempt: false,
            overlap: false,
            local_tasks: None,
            node_cpus: None,
            bound: false,
        };
        let f = check_step(R2205, &step, gb300, &Policy::default());
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].fix.contains("24"), "{}", f[0].fix);
    }
}

//! Findings: what launchguard tells a user or an admin.
//!
//! Every finding renders as exactly one line, `launchguard: <id>: <what>; <why>; <fix>`, the shape the
//! design card gives (lower-case, no trailing period). The ID is stable: users read it on their terminal,
//! admins in the slurmd log and, later, in journald and drain reasons.

use std::fmt;

/// A family of checks that the admin can switch with one plugstack key (`<key>=enforce|warn|off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckKind {
    /// `launch.cpus_per_task`: a GPU step that runs with one CPU per task (or fewer than the node's
    /// CPUs per GPU). `docs/field-rules.md`; srun(1) `--cpus-per-task`.
    CpusPerTask,
    /// `launch.export_all`: `--export` (or an inherited `SLURM_EXPORT_ENV`) without `ALL`, or a step
    /// environment without `PATH`. `docs/field-rules.md`; srun(1) `--export`.
    ExportAll,
    /// `launch.export_split`: an `--export` value that Slurm cuts at a comma or whose quotes are kept
    /// literally. `docs/field-rules.md`; srun(1) `--export`.
    ExportSplit,
    /// `launch.enroot_runtime`: enroot's runtime directory missing or not 1777 root before Pyxis runs.
    /// `docs/field-rules.md`, "`/run/enroot` after a reboot"; `docs/spank.md`.
    EnrootRuntime,
    /// `launch.devices`: allocated GPUs, RDMA verbs devices or admin-listed devices not visible or not
    /// usable inside the step. `docs/field-rules.md`; cgroup.conf(5) `ConstrainDevices`.
    Devices,
    /// `launch.nccl_env`: NCCL/libfabric variables wrong for the node's fabric. `docs/field-rules.md`, "NCCL variables for the fabric".
    NcclEnv,
    /// `launch.imex_channel`: a GPU step that uses multi-node NVLink (GB200/GB300) on a node whose
    /// driver offers IMEX channels, but sees no usable `/dev/nvidia-caps-imex-channels/channelN`.
    /// NVIDIA's IMEX guide, "IMEX Channels".
    ImexChannel,
    /// `launch.memlock`: a multi-node GPU step on an RDMA node whose tasks may lock too little memory
    /// (`RLIMIT_MEMLOCK`) for NCCL/UCX/libfabric to register buffers. NVIDIA's MLNX_OFED/DOCA user
    /// manual and AWS's EFA user guide ("unlimited"); slurm.conf(5) `PropagateResourceLimits`.
    Memlock,
    /// `launch.gpu_options`: GPU task options on sbatch/salloc that make every later srun of the job
    /// fail on the running release (`--ntasks-per-gpu` with `--cpus-per-task` on Slurm 23.11.7 to
    /// 25.05.0). srun(1)/sbatch(1) `--ntasks-per-gpu`; Slurm's changelog for 25.05.1.
    GpuOptions,
    /// `launch.pmix`: an srun that uses Slurm's `mpi/pmix` (`--mpi=pmix*`, `SLURM_MPI_TYPE`,
    /// slurm.conf's `MpiDefault`) on a node without that plugin or without the PMIx library it
    /// opens, and (in the task) PMIx's server rendezvous the rank cannot reach. srun(1) `--mpi`;
    /// Slurm's MPI guide; `_libpmix_open` in Slurm's `mpi_pmix.c`; OpenPMIx `PMIx_server_setup_fork`.
    Pmix,
}

impl CheckKind {
    /// Every check, in the order they are documented.
    pub const ALL: [CheckKind; 10] = [
        CheckKind::CpusPerTask,
        CheckKind::ExportAll,
        CheckKind::ExportSplit,
        CheckKind::EnrootRuntime,
        CheckKind::Devices,
        CheckKind::NcclEnv,
        CheckKind::ImexChannel,
        CheckKind::Memlock,
        CheckKind::GpuOptions,
        CheckKind::Pmix,
    ];

    /// The plugstack key that sets this check's mode, e.g. `cpus_per_task`.
    pub fn key(self) -> &'static str {
        match self {
            CheckKind::CpusPerTask => "cpus_per_task",
            CheckKind::ExportAll => "export_all",
            CheckKind::ExportSplit => "export_split",
            CheckKind::EnrootRuntime => "enroot_runtime",
            CheckKind::Devices => "devices",
            CheckKind::NcclEnv => "nccl_env",
            CheckKind::ImexChannel => "imex_channel",
            CheckKind::Memlock => "memlock",
            CheckKind::GpuOptions => "gpu_options",
            CheckKind::Pmix => "pmix",
        }
    }

    /// The stable finding ID, e.g. `launch.cpus_per_task`.
    pub fn id(self) -> &'static str {
        match self {
            CheckKind::CpusPerTask => "launch.cpus_per_task",
            CheckKind::ExportAll => "launch.export_all",
            CheckKind::ExportSplit => "launch.export_split",
            CheckKind::EnrootRuntime => "launch.enroot_runtime",
            CheckKind::Devices => "launch.devices",
            CheckKind::NcclEnv => "launch.nccl_env",
            CheckKind::ImexChannel => "launch.imex_channel",
            CheckKind::Memlock => "launch.memlock",
            CheckKind::GpuOptions => "launch.gpu_options",
            CheckKind::Pmix => "launch.pmix",
        }
    }

    /// One-line description, for `--help`-style listings and the checks tables of docs/.
    pub fn describe(self) -> &'static str {
        match self {
            CheckKind::CpusPerTask => {
                "GPU step with 1 CPU per task (or fewer than the node's CPUs per GPU)"
            }
            CheckKind::ExportAll => "--export or SLURM_EXPORT_ENV without ALL; step without PATH",
            CheckKind::ExportSplit => "--export value cut at a comma or carrying literal quotes",
            CheckKind::EnrootRuntime => {
                "enroot's runtime directory (/run/enroot) missing or not 1777 root before Pyxis"
            }
            CheckKind::Devices => {
                "allocated GPUs, RDMA verbs devices or admin-listed devices hidden in the step"
            }
            CheckKind::NcclEnv => "NCCL/libfabric variables wrong for the node's fabric (EFA/IB)",
            CheckKind::ImexChannel => {
                "multi-node NVLink step without a usable IMEX channel (/dev/nvidia-caps-imex-channels)"
            }
            CheckKind::Memlock => {
                "multi-node GPU step on an RDMA node whose tasks' locked-memory limit is finite"
            }
            CheckKind::GpuOptions => {
                "GPU task options that make the job's sruns fail on this release, or --gpus-per-task with several tasks per node (each task sees its GPU as device 0)"
            }
            CheckKind::Pmix => {
                "srun --mpi=pmix (or MpiDefault=pmix) where Slurm's pmix plugin or its PMIx library is missing; a rank that cannot reach the PMIx server's directory"
            }
        }
    }

    /// What enforce mode does with it: which of its findings are errors (rejected) and which
    /// warnings (never rejected), for the generated reference (`docs/reference/launch-checks.md`).
    pub fn severities(self) -> &'static str {
        match self {
            CheckKind::CpusPerTask => "error: 1 CPU per task; warning: fewer than min_cpus_per_task, or an --overlap step",
            CheckKind::ExportAll => "error: the step would have no PATH for a command found through PATH; warning: sbatch/salloc, or a container step",
            CheckKind::ExportSplit => "warning",
            CheckKind::EnrootRuntime => "error: a container step whose runtime directory could not be repaired",
            CheckKind::Devices => "error: fewer usable GPU device files than GPUs given, no usable fabric verbs device, an admin-listed device missing; warning: some fabric devices missing, /dev/gdrdrv, extra non-EFA RDMA devices on an EFA node",
            CheckKind::NcclEnv => "per rule (docs/reference/nccl-env-rules.md)",
            CheckKind::ImexChannel => "error",
            CheckKind::Memlock => "error: a finite hard locked-memory limit (slurmd's); warning: a finite soft limit (PropagateResourceLimits)",
            CheckKind::GpuOptions => "warning (sbatch/salloc; --gpus-per-task also at srun)",
            CheckKind::Pmix => "error: the mpi/pmix plugin or its PMIx library is missing where srun runs, or the task cannot see the PMIx server's directory (PMIX_SERVER_TMPDIR)",
        }
    }

    /// The public documents the check follows, by name.
    pub fn source(self) -> &'static str {
        match self {
            CheckKind::CpusPerTask => "srun(1) --cpus-per-task, SRUN_CPUS_PER_TASK; docs/field-rules.md",
            CheckKind::ExportAll | CheckKind::ExportSplit => "srun(1) --export; docs/field-rules.md",
            CheckKind::EnrootRuntime => "enroot documentation (ENROOT_RUNTIME_PATH); tmpfiles.d(5); docs/field-rules.md",
            CheckKind::Devices => "cgroup.conf(5) ConstrainDevices; gres.conf(5) File=; AWS EFA user guide",
            CheckKind::NcclEnv => "NCCL documentation, Environment Variables; AWS EFA user guide; aws-ofi-nccl documentation",
            CheckKind::ImexChannel => "NVIDIA IMEX Service for NVLink Networks User's Guide, \"IMEX Channels\"",
            CheckKind::Memlock => "NVIDIA MLNX_OFED/DOCA user manual; AWS EFA user guide; slurm.conf(5) PropagateResourceLimits",
            CheckKind::GpuOptions => "srun(1)/sbatch(1) --ntasks-per-gpu and --gpus-per-task (implied --gpu-bind=per_task); Slurm's changelog for 25.05.1",
            CheckKind::Pmix => "srun(1) --mpi and SLURM_MPI_TYPE; slurm.conf(5) MpiDefault; Slurm's MPI guide (mpi_pmix.c _libpmix_open); OpenPMIx PMIx_server_setup_fork",
        }
    }

    /// Whether srun's own plugin judges this check (`init_post_opt` in srun, before allocation: the
    /// `srun` phase of the report protocol, [`crate::protocol`]). The plugin's srun side reports only
    /// these, and the agent refuses an srun-phase report naming any other ID: srun runs as the user,
    /// so such a report can only be forged. The other checks need the step (its cgroup, devices,
    /// container) and run in slurmstepd.
    pub const fn in_srun(self) -> bool {
        match self {
            CheckKind::CpusPerTask
            | CheckKind::ExportAll
            | CheckKind::ExportSplit
            | CheckKind::NcclEnv
            | CheckKind::GpuOptions
            | CheckKind::Pmix => true,
            CheckKind::EnrootRuntime
            | CheckKind::Devices
            | CheckKind::ImexChannel
            | CheckKind::Memlock => false,
        }
    }

    /// The finding IDs an srun-phase report may carry ([`CheckKind::in_srun`]).
    pub fn srun_ids() -> impl Iterator<Item = &'static str> {
        CheckKind::ALL
            .into_iter()
            .filter(|c| c.in_srun())
            .map(CheckKind::id)
    }

    /// Looks a check up by its plugstack key or its finding ID.
    pub fn from_key(key: &str) -> Option<CheckKind> {
        CheckKind::ALL
            .into_iter()
            .find(|c| c.key() == key || c.id() == key)
    }
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth a line; never a reason to stop a launch, even in enforce mode.
    Warning,
    /// The launch will fail or run far below its speed; enforce mode rejects it.
    Error,
}

/// One problem with a launch, with everything the user needs to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Which check produced it; gives the ID and the policy key.
    pub check: CheckKind,
    /// [`Severity::Error`] findings are rejected in enforce mode; warnings only ever print.
    pub severity: Severity,
    /// What is wrong, e.g. `this GPU step gets 1 CPU per task`.
    pub what: String,
    /// Why it matters, e.g. the bandwidth it costs.
    pub why: String,
    /// The exact fix, e.g. `add --cpus-per-task=24 to srun`.
    pub fix: String,
}

impl Finding {
    /// The finding's stable ID (`launch.cpus_per_task`, …).
    pub fn id(&self) -> &'static str {
        self.check.id()
    }
}

impl fmt::Display for Finding {
    /// The finding's one line, by [`Line`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Line::new(self.id(), &self.what, &self.why, &self.fix).fmt(f)
    }
}

/// The one renderer of a finding line, `launchguard: <id>: <what>; <why>; <fix>`, used by every kind
/// of finding (launch [`Finding`]s, node check [`crate::node::Outcome`]s, `launchguard nccl` verdicts,
/// sweep findings, the plugin's log lines). Control and invisible characters inside the parts (which
/// could only come from values echoed back: a node name, an environment value, a log line) are
/// neutralised by [`crate::text::printable`], so a finding stays one honest line in a terminal, in
/// slurmd's log and in journald. The ID is printed as given.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    id: &'a str,
    what: &'a str,
    why: &'a str,
    fix: &'a str,
}

impl<'a> Line<'a> {
    /// A line from its ID and three parts.
    pub fn new(id: &'a str, what: &'a str, why: &'a str, fix: &'a str) -> Line<'a> {
        Line { id, what, why, fix }
    }
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "launchguard: {}: {}; {}; {}",
            self.id,
            one_line(self.what),
            one_line(self.why),
            one_line(self.fix)
        )
    }
}

/// [`Line`] as a `String`: `launchguard: <id>: <what>; <why>; <fix>`.
pub fn render_line(id: &str, what: &str, why: &str, fix: &str) -> String {
    Line::new(id, what, why, fix).to_string()
}

fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if crate::text::needs_cleaning(s) {
        std::borrow::Cow::Owned(crate::text::printable(s, usize::MAX))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// Shortens a user-supplied value for echoing it back in a message (at most `max` chars, `…` after)
/// and escapes `;` as `\;`, so the value cannot break a finding's `what; why; fix` shape. For a
/// whole rendered line (whose `;`s are the shape itself) use [`shorten`].
pub fn clip(s: &str, max: usize) -> String {
    shorten(s, max).replace(';', "\\;")
}

/// At most `max` characters of `s`, `…` after a cut; nothing escaped (a finding's rendered line
/// in a report: its values were escaped by [`clip`] once, when the line was made).
pub fn shorten(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_renders_as_one_line_with_id_what_why_fix() {
        let f = Finding {
            check: CheckKind::ExportAll,
            severity: Severity::Error,
            what: "a\nb".into(),
            why: "c".into(),
            fix: "d".into(),
        };
        assert_eq!(f.to_string(), "launchguard: launch.export_all: a b; c; d");
    }

    #[test]
    fn the_renderer_keeps_every_part_on_one_line() {
        assert_eq!(
            render_line("nccl.x", "a\r\nb", "c\u{202e}", "d\te"),
            "launchguard: nccl.x: a  b; c<U+202E>; d e"
        );
        assert_eq!(render_line("i", "w", "y", "f"), "launchguard: i: w; y; f");
    }

    #[test]
    fn check_lookup_accepts_key_and_id() {
        assert_eq!(
            CheckKind::from_key("cpus_per_task"),
            Some(CheckKind::CpusPerTask)
        );
        assert_eq!(
            CheckKind::from_key("launch.export_all"),
            Some(CheckKind::ExportAll)
        );
        assert_eq!(CheckKind::from_key("nope"), None);
    }

    #[test]
    fn clip_shortens_long_values() {
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("a;b", 9), "a\\;b");
        assert_eq!(shorten("a;b", 9), "a;b");
        assert_eq!(shorten("a;bc", 3), "a;b…");
    }
}

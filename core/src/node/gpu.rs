//! `node.gpu.*`: what the NVIDIA driver says about the node's GPUs, read through NVML (the NVIDIA
//! Management Library, `libnvidia-ml.so.1`) by the agent and the CLI, never by the plugin (NVML's
//! start-up cost has no place in srun). Gathering: `node-agent/src/gather/gpu.rs`; this file judges
//! canned facts.
//!
//! Sources:
//! - NVIDIA, *NVML API Reference Guide*: `nvmlDeviceGetCount_v2`, `nvmlSystemGetDriverVersion`,
//!   `nvmlSystemGetCudaDriverVersion_v2`, and `nvmlDeviceGetGpuFabricInfo` with its
//!   `nvmlGpuFabricInfo_t` (`state`: not supported / not started / in progress / completed;
//!   `status`, meaningful once completed; `clusterUuid` and `cliqueId`, the NVLink domain).
//! - NVIDIA, *Fabric Manager for NVIDIA NVSwitch Systems User Guide*: on NVSwitch systems the GPUs
//!   must finish their fabric registration before CUDA can use them (CUDA initialisation fails
//!   meanwhile), and Fabric Manager (`nvidia-fabricmanager`) drives it.
//! - NCCL's multi-node NVLink set-up (NCCL source, `mnnvl.cc`) uses a GPU's fabric clique only when
//!   its registration is completed and its cluster UUID is not all zeros: a zero UUID means the GPU
//!   is in no multi-node NVLink domain. [`mnnvl`] follows the same rule.
//! - NVIDIA, *NVML API Reference Guide*: `nvmlDeviceGetNvLinkState` (per link, `0..NVML_NVLINK_MAX_LINKS`;
//!   a link the GPU does not have answers `NOT_SUPPORTED`), `nvmlDeviceGetRemappedRows`
//!   (`isPending`, `failureOccurred`), `nvmlDeviceGetRetiredPagesPendingStatus`,
//!   `nvmlDeviceGetPersistenceMode`.
//! - NVIDIA, *GPU Memory Error Management* (A100 and later): a row remap takes effect at the next
//!   GPU reset, so a pending remap needs a reset; a remapping failure means the GPU should be
//!   serviced. NVIDIA, *Dynamic Page Retirement* (earlier GPUs): pages pending retirement are retired
//!   at the next driver load (reset or reboot).
//! - NVIDIA, *Driver Persistence*: without persistence the driver tears a GPU's state down when its
//!   last client exits and initialises it again at the next open (seconds per job start on large
//!   GPUs); `nvidia-persistenced` is NVIDIA's recommended way to keep it, `nvidia-smi -pm 1` the
//!   legacy one.
//! - The PCI IDs: vendor `0x10de` (NVIDIA), class `0x0300` (VGA) or `0x0302` (3D controller), as
//!   `lspci` shows them; `/proc/driver/nvidia/gpus/<bus id>/` has one directory per GPU the driver
//!   has bound.

use super::{Outcome, Status};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.gpu.nvml",
        "where NVIDIA GPUs are present, NVML (libnvidia-ml.so.1) loads and lists them",
    ),
    (
        "node.gpu.count",
        "the driver (NVML) has every NVIDIA GPU that is on the PCI bus",
    ),
    (
        "node.gpu.gres",
        "Slurm's view of the GPUs holds: slurm.conf's Gres=gpu:N is not above what the driver lists, and gres.conf's AutoDetect=nvml has the gpu_nvml.so plugin and NVML it needs",
    ),
    (
        "node.gpu.ecc",
        "no GPU has uncorrectable ECC memory errors since the driver loaded",
    ),
    (
        "node.gpu.pcie",
        "every GPU's PCIe link runs at its full width",
    ),
    (
        "node.gpu.xid",
        "the kernel log since boot has no Xid of the kinds NVIDIA classes as a GPU or node fault (warning: the live checks above give the verdict)",
    ),
    (
        "node.gpu.fabric",
        "on NVSwitch and multi-node NVLink systems, every GPU finished its NVLink fabric registration",
    ),
    (
        "node.gpu.nvlink",
        "every GPU has as many active NVLink links as the node's best-connected GPU (not judged where no GPU has an active link: PCIe cards, a lone GPU)",
    ),
    (
        "node.gpu.row_remap",
        "no GPU has a row remap pending (it needs a GPU reset) or a row remapping failure",
    ),
    (
        "node.gpu.retired_pages",
        "no GPU has memory pages pending retirement (they need a GPU reset or reboot)",
    ),
    (
        "node.gpu.persistence",
        "every GPU is kept initialised between jobs (persistence mode, nvidia-persistenced)",
    ),
];

/// A GPU's NVLink links as NVML reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NvLinks {
    /// Links the GPU has: those `nvmlDeviceGetNvLinkState` answers for (18 on an H100/H200 SXM).
    pub links: u32,
    /// The link numbers NVML reports inactive.
    pub down: Vec<u32>,
}

impl NvLinks {
    /// Active links.
    pub fn active(&self) -> u32 {
        self.links.saturating_sub(self.down.len() as u32)
    }
}

/// `nvmlDeviceGetRemappedRows` of one GPU (A100 and later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RowRemap {
    /// Rows remapped for correctable errors.
    pub correctable: u32,
    /// Rows remapped for uncorrectable errors.
    pub uncorrectable: u32,
    /// A remap waits for the next GPU reset.
    pub pending: bool,
    /// A remap failed (no spare row left in the bank).
    pub failed: bool,
}

/// A GPU's NVLink fabric registration (`nvmlGpuFabricState_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum FabricState {
    /// The GPU is on no NVLink fabric (PCIe cards, H100/H200 without NVSwitch, older GPUs).
    NotSupported,
    /// Registration has not started (Fabric Manager or the NVLink fabric is not up).
    NotStarted,
    /// Registration is under way (seconds after boot or a driver load).
    InProgress,
    /// Registration ended; [`FabricInfo::status`] says how.
    Completed,
}

impl FabricState {
    /// `not supported`, `not started`, `in progress`, `completed`.
    pub fn name(self) -> &'static str {
        match self {
            FabricState::NotSupported => "not supported",
            FabricState::NotStarted => "not started",
            FabricState::InProgress => "in progress",
            FabricState::Completed => "completed",
        }
    }
}

/// `nvmlGpuFabricInfo_t` of one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FabricInfo {
    /// The registration state.
    pub state: FabricState,
    /// `None` until [`FabricState::Completed`]; then `Ok(())` for `NVML_SUCCESS`, else the NVML
    /// error's text (e.g. `Unknown Error`).
    pub status: Option<Result<(), String>>,
    /// The NVLink domain's cluster UUID as 32 lower-case hex digits (`000…0`: no multi-node domain).
    pub cluster_uuid: String,
    /// The fabric clique (a partition of the domain) this GPU belongs to.
    pub clique_id: u32,
}

impl FabricInfo {
    /// Whether the cluster UUID names a multi-node NVLink domain (not all zeros).
    pub fn in_domain(&self) -> bool {
        self.cluster_uuid.bytes().any(|b| b != b'0')
    }

    /// `<cluster uuid>/<clique id>`: the NVLink domain and clique, equal on every node of one clique.
    pub fn domain(&self) -> String {
        format!("{}/{}", self.cluster_uuid, self.clique_id)
    }
}

/// One GPU as NVML lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Gpu {
    /// NVML index (0-based; the order of `nvidia-smi`).
    pub index: u32,
    /// Product name, e.g. `NVIDIA H200`.
    pub name: String,
    /// `GPU-…` UUID.
    pub uuid: String,
    /// PCI bus ID as NVML writes it (`00000000:18:00.0`).
    pub pci_bus_id: String,
    /// Fabric information; `Err` when NVML could not answer (the text says why: an old driver
    /// without the call, an error).
    pub fabric: Result<FabricInfo, String>,
    /// Uncorrectable ECC errors since the driver loaded (`nvmlDeviceGetTotalEccErrors`, volatile
    /// counter); `None` where ECC is off or not supported.
    #[cfg_attr(feature = "serde", serde(default))]
    pub ecc_uncorrected: Option<u64>,
    /// PCIe link width `(current, max)` in lanes (`nvmlDeviceGetCurrPcieLinkWidth`,
    /// `nvmlDeviceGetMaxPcieLinkWidth`); `None` when NVML does not say.
    #[cfg_attr(feature = "serde", serde(default))]
    pub pcie_width: Option<(u32, u32)>,
    /// Whether MIG mode is on (`nvmlDeviceGetMigMode`, current); `None` where MIG is not supported.
    #[cfg_attr(feature = "serde", serde(default))]
    pub mig: Option<bool>,
    /// NVLink links; `None` where the GPU has none NVML answers for (PCIe cards, older drivers).
    #[cfg_attr(feature = "serde", serde(default))]
    pub nvlink: Option<NvLinks>,
    /// Row remapping; `None` where not supported (before A100) or NVML did not answer.
    #[cfg_attr(feature = "serde", serde(default))]
    pub row_remap: Option<RowRemap>,
    /// Pages pending retirement (`nvmlDeviceGetRetiredPagesPendingStatus`); `None` where not
    /// supported (GPUs with row remapping answer `NOT_SUPPORTED` on some drivers).
    #[cfg_attr(feature = "serde", serde(default))]
    pub retired_pages_pending: Option<bool>,
    /// Persistence mode (`nvmlDeviceGetPersistenceMode`; on while `nvidia-persistenced` runs in its
    /// default mode); `None` when NVML does not say.
    #[cfg_attr(feature = "serde", serde(default))]
    pub persistence: Option<bool>,
}

/// What NVML said on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Nvml {
    /// NVML was not asked (a node without NVIDIA GPUs on the PCI bus and no NVIDIA driver).
    NotAsked,
    /// `libnvidia-ml.so.1` could not be loaded or initialised: the text says why.
    Unavailable(String),
    /// NVML did not answer within the deadline (seconds): a wedged GPU or driver.
    TimedOut(u64),
    /// NVML was not asked because an earlier call has not returned (the text says whose: this
    /// process's, or another launchguard process holding the NVML lock).
    Stuck(String),
    /// NVML answered.
    Read {
        /// `nvmlSystemGetDriverVersion`, e.g. `580.159.03`.
        driver_version: String,
        /// `nvmlSystemGetCudaDriverVersion_v2` as `major.minor`, e.g. `13.0`.
        cuda_driver_version: Option<String>,
        /// Every GPU NVML lists.
        gpus: Vec<Gpu>,
    },
}

/// What Slurm is told about this node's GPUs (slurm.conf, gres.conf, the plugins in PluginDir).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SlurmGpus {
    /// The node's NodeName.
    pub node: String,
    /// `Gres=gpu:N` of the node's slurm.conf line (0: none).
    pub gres_gpus: u32,
    /// The node's GPU GRES types name MIG profiles (`gpu:1g.10gb:7`): Slurm then counts MIG
    /// instances, not GPUs.
    #[cfg_attr(feature = "serde", serde(default))]
    pub mig_types: bool,
    /// gres.conf's `AutoDetect=` for the node (lower-case), if any.
    pub autodetect: Option<String>,
    /// The PluginDir searched for `gpu_nvml.so`.
    pub plugin_dir: String,
    /// Whether `gpu_nvml.so` is in it (Slurm built `--with-nvml`).
    pub gpu_nvml_plugin: bool,
}

/// One `NVRM: Xid (PCI:<bus>): <code>, …` record of the kernel log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct XidEvent {
    /// Microseconds since boot (the record's timestamp).
    pub usec: u64,
    /// The PCI address as the driver writes it (`0000:3b:00`).
    pub bus: String,
    /// The Xid code.
    pub code: u32,
    /// The rest of the record after the code, clipped.
    pub text: String,
}

/// What the kernel log (`/dev/kmsg`, this boot) says of the NVIDIA driver.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum KernelLog {
    /// Not read (no NVIDIA GPU here).
    #[default]
    NotAsked,
    /// Not readable (the text says why: not root, or the agent's unit's `ProtectKernelLogs=`).
    Unreadable(String),
    /// Read: seconds since boot, and the Xid records (the first 256).
    Read {
        /// `/proc/uptime`, seconds.
        uptime_s: u64,
        /// Xid records, oldest first.
        xids: Vec<XidEvent>,
    },
}

/// Reads one kernel log record (`/dev/kmsg`: `prio,seq,usec,flags;message`) into an Xid event when
/// it is one (`NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus.`).
pub fn parse_xid_record(record: &str) -> Option<XidEvent> {
    let (head, msg) = record.split_once(';')?;
    let usec = head.split(',').nth(2)?.trim().parse().ok()?;
    let rest = msg.split_once("NVRM: Xid (")?.1;
    let (bus, rest) = rest.split_once("):")?;
    let bus = bus.trim().trim_start_matches("PCI:").to_string();
    let rest = rest.trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let code = digits.parse().ok()?;
    let text = rest[digits.len()..].trim_start_matches(',').trim();
    Some(XidEvent {
        usec,
        bus,
        code,
        text: crate::finding::clip(text, 120),
    })
}

/// NVIDIA's *Xid Errors* document's class of a code, for the kinds that point at the GPU, its
/// memory, its links or its firmware rather than at the application: `(what it is, what to do)`.
/// Application Xids (13, 31, 43, 45…) and unknown codes give `None`.
pub fn xid_fault(code: u32) -> Option<(&'static str, &'static str)> {
    Some(match code {
        79 => (
            "the GPU fell off the bus",
            "reboot; service the GPU if it recurs",
        ),
        48 => (
            "a double-bit ECC memory error",
            "reset the GPU; service it if it recurs",
        ),
        63 => (
            "an ECC page retirement or row remap is pending",
            "reset the GPU to apply it",
        ),
        64 => (
            "an ECC page retirement or row remap failed",
            "service the GPU",
        ),
        92 => (
            "a high single-bit ECC error rate",
            "watch it; service the GPU if it grows",
        ),
        94 => (
            "a contained ECC error (the application was stopped)",
            "reset the GPU when idle",
        ),
        95 => ("an uncontained ECC error", "reset the GPU"),
        140 => ("an unrecovered ECC error", "reset the GPU"),
        74 => (
            "an NVLink error",
            "reset the GPU; check the NVLink links and cabling",
        ),
        61 | 62 => ("an internal micro-controller error", "reset the GPU"),
        119 | 120 => (
            "a GPU System Processor (GSP) error or timeout",
            "reset the GPU or reboot",
        ),
        _ => return None,
    })
}

/// Everything the GPU family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GpuFacts {
    /// What NVML said.
    pub nvml: Nvml,
    /// PCI addresses (`0000:18:00.0`) of NVIDIA display/3D controllers bound to the `nvidia`
    /// driver, as listed in `/sys/bus/pci/drivers/nvidia/`. A GPU given to `vfio-pci`, left unbound
    /// or excluded with `NVreg_ExcludedGpus` is not the driver's to lose.
    pub pci: Vec<String>,
    /// Entries of `/proc/driver/nvidia/gpus/` (`None`: the directory is absent, no NVIDIA driver
    /// loaded, or a sandbox that hides it).
    pub proc_gpus: Option<Vec<String>>,
    /// Slurm's view, when slurm.conf names this node (absent in `launchguard gpu`'s facts).
    #[cfg_attr(feature = "serde", serde(default))]
    pub slurm: Option<SlurmGpus>,
    /// The kernel log's Xid records (read only where NVIDIA GPUs are).
    #[cfg_attr(feature = "serde", serde(default))]
    pub kernel: KernelLog,
    /// The check runs inside a Slurm job step (`SLURM_JOB_ID` set: `launchguard sweep`'s step):
    /// with `ConstrainDevices=yes` NVML then sees only the step's GPUs, so NVML's count is not the
    /// node's and the count comparisons are not made.
    #[cfg_attr(feature = "serde", serde(default))]
    pub in_step: bool,
}

/// Whether this node is part of a multi-node NVLink (MNNVL) domain, as NVML tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mnnvl {
    /// At least one GPU completed its fabric registration into a domain: `<cluster uuid>/<clique>`.
    Member(String),
    /// A GPU is on an NVLink fabric whose registration has not completed (state named): the node
    /// may be an MNNVL node that is not up yet.
    Pending(&'static str),
    /// No GPU is in a multi-node domain: the reason, for the report.
    No(String),
    /// NVML could not say (the reason).
    Unknown(String),
}

/// Reads [`Mnnvl`] from the facts with NCCL's rule (completed registration, non-zero cluster UUID).
pub fn mnnvl(f: &GpuFacts) -> Mnnvl {
    let gpus = match &f.nvml {
        Nvml::Read { gpus, .. } => gpus,
        Nvml::NotAsked => return Mnnvl::No("no NVIDIA GPU on this node".into()),
        Nvml::Unavailable(e) => return Mnnvl::Unknown(format!("NVML unavailable: {e}")),
        Nvml::TimedOut(s) => return Mnnvl::Unknown(format!("NVML did not answer within {s} s")),
        Nvml::Stuck(e) => return Mnnvl::Unknown(format!("NVML not asked: {e}")),
    };
    if gpus.is_empty() {
        return Mnnvl::No("NVML lists no GPU".into());
    }
    let infos: Vec<&FabricInfo> = gpus.iter().filter_map(|g| g.fabric.as_ref().ok()).collect();
    if let Some(i) = infos
        .iter()
        .find(|i| i.state == FabricState::Completed && i.in_domain())
    {
        return Mnnvl::Member(i.domain());
    }
    if let Some(i) = infos
        .iter()
        .find(|i| matches!(i.state, FabricState::NotStarted | FabricState::InProgress))
    {
        return Mnnvl::Pending(i.state.name());
    }
    if infos.is_empty() {
        let e = gpus
            .iter()
            .find_map(|g| g.fabric.as_ref().err())
            .cloned()
            .unwrap_or_default();
        return Mnnvl::Unknown(format!("NVML gave no fabric information ({e})"));
    }
    if infos.iter().all(|i| i.state == FabricState::NotSupported) {
        Mnnvl::No(format!(
            "GPU fabric not supported on {} of {} GPU(s) ({})",
            infos.len(),
            gpus.len(),
            gpus[0].name
        ))
    } else {
        Mnnvl::No("NVLink fabric registered with a zero cluster UUID (single-node NVSwitch)".into())
    }
}

/// The sweep facts of this family: `(name, value)` pairs every node publishes so that `launchguard
/// sweep` can compare them (driver and CUDA versions, GPU count and model, NVLink domain).
pub fn facts(f: &GpuFacts) -> Vec<(&'static str, String)> {
    let mut v = nvml_facts(f);
    match &f.kernel {
        KernelLog::NotAsked => {}
        // Said, not hidden: a process that cannot read the kernel log (no CAP_SYSLOG under
        // kernel.dmesg_restrict=1, or a unit with ProtectKernelLogs=yes) has not looked.
        KernelLog::Unreadable(e) => v.push(("gpu_kernel_log", format!("not read: {e}"))),
        KernelLog::Read { xids, .. } => v.push((
            "gpu_kernel_log",
            format!("read: {} Xid record(s) this boot", xids.len()),
        )),
    }
    v
}

fn nvml_facts(f: &GpuFacts) -> Vec<(&'static str, String)> {
    match &f.nvml {
        Nvml::Read {
            driver_version,
            cuda_driver_version,
            gpus,
        } => {
            let mut names: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
            names.dedup();
            vec![
                ("gpu_driver_version", driver_version.clone()),
                (
                    "gpu_cuda_driver_version",
                    cuda_driver_version
                        .clone()
                        .unwrap_or_else(|| "unknown".into()),
                ),
                ("gpu_count", format!("{} {}", gpus.len(), names.join("+"))),
                ("gpu_nvlink", nvlink_summary(gpus)),
                (
                    "gpu_nvlink_domain",
                    match mnnvl(f) {
                        Mnnvl::Member(d) => d,
                        Mnnvl::Pending(s) => format!("pending ({s})"),
                        Mnnvl::No(_) => "none".into(),
                        Mnnvl::Unknown(e) => format!("unknown: {e}"),
                    },
                ),
            ]
        }
        Nvml::NotAsked => vec![("gpu_count", "0".into())],
        Nvml::Unavailable(e) => vec![("gpu_count", format!("unknown: {e}"))],
        Nvml::TimedOut(s) => vec![("gpu_count", format!("unknown: NVML timed out after {s} s"))],
        Nvml::Stuck(e) => vec![("gpu_count", format!("unknown: NVML not asked: {e}"))],
    }
}

/// The bus ID NVML writes (`00000000:18:00.0`, 8-digit domain, upper case) in sysfs's form
/// (`0000:18:00.0`, lower case).
pub fn sysfs_bus_id(nvml: &str) -> String {
    let s = nvml.to_ascii_lowercase();
    match s.split_once(':') {
        Some((dom, rest)) if dom.len() > 4 => format!("{}:{rest}", &dom[dom.len() - 4..]),
        _ => s,
    }
}

/// Judges the GPU family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &GpuFacts) -> Vec<Outcome> {
    let driver_there = f.proc_gpus.is_some() || !f.pci.is_empty();
    let nvml = match &f.nvml {
        Nvml::Unavailable(e) if driver_there => Outcome::new(
            "node.gpu.nvml",
            Status::Warning,
            format!(
                "this node has {} NVIDIA GPU(s) but NVML cannot be used: {e}",
                f.pci.len().max(f.proc_gpus.as_ref().map_or(0, Vec::len))
            ),
            "Slurm's AutoDetect=nvml, nvidia-smi, DCGM and launchguard's GPU checks read the GPUs through NVML, so slurmd may register no GPUs and GPU faults go unseen",
            "install the NVIDIA driver's NVML library matching the loaded kernel module (libnvidia-ml.so.1; Debian: libnvidia-ml1, RHEL: nvidia-driver-NVML), then run nvidia-smi to check",
        ),
        Nvml::TimedOut(s) => Outcome::unknown(
            "node.gpu.nvml",
            format!("NVML did not answer within {s} s (a GPU or the driver may be wedged; look for Xid lines in dmesg)"),
        ),
        Nvml::Stuck(e) => Outcome::unknown(
            "node.gpu.nvml",
            format!("NVML not asked: {e} (a GPU or the driver may be wedged; look for Xid lines in dmesg)"),
        ),
        _ => Outcome::ok("node.gpu.nvml"),
    };
    let count = match &f.nvml {
        Nvml::Read { .. } if f.in_step => Outcome::ok("node.gpu.count"),
        Nvml::Read { gpus, .. } => {
            let seen: Vec<String> = gpus.iter().map(|g| sysfs_bus_id(&g.pci_bus_id)).collect();
            let lost: Vec<&String> = if gpus.iter().any(|g| g.pci_bus_id.is_empty()) {
                // NVML did not give every bus ID: compare counts only.
                f.pci.iter().skip(gpus.len()).collect()
            } else {
                f.pci.iter().filter(|p| !seen.contains(p)).collect()
            };
            if lost.is_empty() {
                Outcome::ok("node.gpu.count")
            } else {
                Outcome::new(
                    "node.gpu.count",
                    Status::Critical,
                    format!(
                        "{} NVIDIA GPU(s) on the PCI bus but the driver lists {}: missing {}",
                        f.pci.len(),
                        gpus.len(),
                        lost.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",")
                    ),
                    "a GPU the driver lost (fallen off the bus, Xid 79, or failed to initialise) gets no jobs while Slurm's GRES still counts it, so jobs asking for every GPU of the node fail",
                    "look for Xid and 'fallen off the bus' lines in dmesg, drain the node, then reset the GPU (nvidia-smi -r) or reboot; a GPU that falls off again needs service",
                )
            }
        }
        _ => Outcome::ok("node.gpu.count"),
    };
    let fabric = match &f.nvml {
        Nvml::Read { gpus, .. } => fabric_outcome(gpus),
        _ => Outcome::ok("node.gpu.fabric"),
    };
    let gres = f.slurm.as_ref().map_or_else(
        || Outcome::ok("node.gpu.gres"),
        |s| gres_outcome(s, &f.nvml, f.in_step),
    );
    let (ecc, pcie) = match &f.nvml {
        Nvml::Read { gpus, .. } => (ecc_outcome(gpus), pcie_outcome(gpus)),
        _ => (Outcome::ok("node.gpu.ecc"), Outcome::ok("node.gpu.pcie")),
    };
    let mut out = vec![nvml, count, gres, ecc, pcie, xid_outcome(&f.kernel), fabric];
    match &f.nvml {
        Nvml::Read { gpus, .. } => out.extend([
            nvlink_outcome(gpus),
            row_remap_outcome(gpus),
            retired_pages_outcome(gpus),
            persistence_outcome(gpus),
        ]),
        _ => out.extend(
            [
                "node.gpu.nvlink",
                "node.gpu.row_remap",
                "node.gpu.retired_pages",
                "node.gpu.persistence",
            ]
            .map(Outcome::ok),
        ),
    }
    // Where NVML should have answered and did not (wedged, or unusable on a node with NVIDIA GPUs),
    // the checks that read it cannot judge: UNKNOWN, never OK, so `launchguard health` keeps a drain
    // an earlier NVML answer set (an ECC or row-remap drain must not lift because the GPU then
    // wedged). `node.gpu.nvml` carries the reason; `gres` keeps its own verdicts on AutoDetect.
    if let Some(why) = nvml_silent(f, driver_there) {
        for o in out.iter_mut() {
            let reads_nvml = !matches!(o.id, "node.gpu.nvml" | "node.gpu.xid");
            let keep = o.id == "node.gpu.gres"
                && (o.status == Status::Critical
                    || f.slurm.as_ref().map_or(0, |s| s.gres_gpus) == 0);
            if reads_nvml && !keep {
                *o = Outcome::unknown(o.id, why.clone());
            }
        }
    }
    out
}

/// Why NVML gave no answer where it should have (`None` when it answered or was rightly not asked).
fn nvml_silent(f: &GpuFacts, driver_there: bool) -> Option<String> {
    match &f.nvml {
        Nvml::TimedOut(s) => Some(format!(
            "NVML did not answer within {s} s, so the GPUs' state is not known (node.gpu.nvml)"
        )),
        Nvml::Stuck(e) => Some(format!(
            "NVML not asked ({e}), so the GPUs' state is not known (node.gpu.nvml)"
        )),
        Nvml::Unavailable(e) if driver_there => Some(format!(
            "NVML cannot be used ({e}), so the GPUs' state is not known (node.gpu.nvml)"
        )),
        _ => None,
    }
}

/// The GPU indices of `gpus` for which `pick` holds, as `0,3`.
fn indices(gpus: &[Gpu], pick: impl Fn(&Gpu) -> bool) -> Vec<String> {
    gpus.iter()
        .filter(|g| pick(g))
        .map(|g| g.index.to_string())
        .collect()
}

/// What NVML says of the node's NVLink links, for the fact `gpu_nvlink`: `none` where no GPU
/// answers for a link, else `active/links` per GPU (`0:18/18 1:17/18`), with a note where no GPU has
/// an active link (nothing to compare: [`nvlink_outcome`] does not judge).
pub fn nvlink_summary(gpus: &[Gpu]) -> String {
    let per: Vec<String> = gpus
        .iter()
        .filter_map(|g| {
            let l = g.nvlink.as_ref()?;
            Some(format!("{}:{}/{}", g.index, l.active(), l.links))
        })
        .collect();
    if per.is_empty() {
        return "none".into();
    }
    let any_active = gpus
        .iter()
        .any(|g| g.nvlink.as_ref().is_some_and(|l| l.active() > 0));
    if any_active {
        format!("active/links {}", per.join(" "))
    } else {
        format!(
            "active/links {} (no GPU has an active link: no NVLink peer or NVSwitch reachable, not judged)",
            per.join(" ")
        )
    }
}

/// `node.gpu.nvlink`: each GPU against the node's best-connected one (the GPUs of one HGX board or
/// NVL domain have the same links up). A GPU with no active link while others have some is cut off
/// from NVLink (CRITICAL); fewer active links is a WARNING. Where no GPU has an active link (a PCIe
/// card with no bridge, a lone GPU in a VM, a board whose NVSwitches are not visible) nothing is
/// judged: `node.gpu.fabric` covers a fabric that is not up on NVSwitch systems.
fn nvlink_outcome(gpus: &[Gpu]) -> Outcome {
    let best = gpus
        .iter()
        .filter_map(|g| g.nvlink.as_ref().map(NvLinks::active))
        .max()
        .unwrap_or(0);
    if best == 0 {
        return Outcome::ok("node.gpu.nvlink");
    }
    let short: Vec<(&Gpu, &NvLinks)> = gpus
        .iter()
        .filter_map(|g| Some((g, g.nvlink.as_ref()?)))
        .filter(|(_, l)| l.active() < best)
        .collect();
    let Some(&(g0, _)) = short.first() else {
        return Outcome::ok("node.gpu.nvlink");
    };
    let list = short
        .iter()
        .map(|(g, l)| {
            format!(
                "GPU {} {}/{} active (down: {})",
                g.index,
                l.active(),
                l.links,
                l.down
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let cut_off = short.iter().any(|(_, l)| l.active() == 0);
    Outcome::new(
        "node.gpu.nvlink",
        if cut_off { Status::Critical } else { Status::Warning },
        format!("NVLink links down: {list}, while other GPUs of this node have {best} active"),
        if cut_off {
            "a GPU without NVLink talks to its peers over PCIe: NCCL collectives of every job using it run several times slower (or fail where the fabric needs the links), with no error"
        } else {
            "each link down takes its share of the GPU's NVLink bandwidth: NCCL collectives through that GPU slow down with no error"
        },
        format!(
            "nvidia-smi nvlink -s -i {i} shows each link's state; drain the node, reset the GPU (nvidia-smi -r -i {i}) or reboot; a link that stays down needs the board serviced",
            i = g0.index
        ),
    )
}

/// `node.gpu.row_remap` (NVIDIA's *GPU Memory Error Management*).
fn row_remap_outcome(gpus: &[Gpu]) -> Outcome {
    let failed = indices(gpus, |g| g.row_remap.is_some_and(|r| r.failed));
    if !failed.is_empty() {
        return Outcome::new(
            "node.gpu.row_remap",
            Status::Critical,
            format!("row remapping failed on GPU(s) {}", failed.join(",")),
            "a memory row with errors could not be replaced by a spare (the bank has none left): the bad row stays in use and jobs on that GPU hit ECC errors again",
            "drain the node and have the GPU serviced (NVIDIA's GPU Memory Error Management guide: a remapping failure calls for replacement); nvidia-smi -q -d ROW_REMAPPER shows the counts",
        );
    }
    let pending = indices(gpus, |g| g.row_remap.is_some_and(|r| r.pending));
    if !pending.is_empty() {
        return Outcome::new(
            "node.gpu.row_remap",
            Status::Critical,
            format!("a memory row remap is pending on GPU(s) {}", pending.join(",")),
            "the remap replaces a row that had memory errors only at the next GPU reset: until then the row stays in use and jobs on that GPU may hit the error again",
            format!(
                "drain the node; once its jobs have ended reset the GPU (nvidia-smi -r -i {}) or reboot, then check nvidia-smi -q -d ROW_REMAPPER shows Pending: No",
                pending[0]
            ),
        );
    }
    Outcome::ok("node.gpu.row_remap")
}

/// `node.gpu.retired_pages` (NVIDIA's *Dynamic Page Retirement*).
fn retired_pages_outcome(gpus: &[Gpu]) -> Outcome {
    let pending = indices(gpus, |g| g.retired_pages_pending == Some(true));
    if pending.is_empty() {
        return Outcome::ok("node.gpu.retired_pages");
    }
    Outcome::new(
        "node.gpu.retired_pages",
        Status::Critical,
        format!(
            "memory pages are pending retirement on GPU(s) {}",
            pending.join(",")
        ),
        "pages with ECC errors are retired only when the driver next loads the GPU: until then they can be handed to jobs again",
        format!(
            "drain the node; once its jobs have ended reset the GPU (nvidia-smi -r -i {}) or reboot; nvidia-smi -q -d PAGE_RETIREMENT shows the pages",
            pending[0]
        ),
    )
}

/// `node.gpu.persistence` (NVIDIA's *Driver Persistence*).
fn persistence_outcome(gpus: &[Gpu]) -> Outcome {
    let off = indices(gpus, |g| g.persistence == Some(false));
    if off.is_empty() {
        return Outcome::ok("node.gpu.persistence");
    }
    Outcome::new(
        "node.gpu.persistence",
        Status::Warning,
        format!(
            "persistence mode is off on GPU(s) {} of {}",
            off.join(","),
            gpus.len()
        ),
        "the driver then tears a GPU's state down whenever its last client (a job, nvidia-smi, slurmd's NVML) exits and initialises it again at the next open: every job start and health check pays that delay, seconds on large GPUs",
        "run NVIDIA's persistence daemon: systemctl enable --now nvidia-persistenced (NVIDIA's Driver Persistence document), or nvidia-smi -pm 1 as root until the next reboot",
    )
}

/// `node.gpu.xid`: a WARNING naming the worst node-fault Xid of this boot with its age and NVIDIA's
/// action. Never CRITICAL: the record stays in the log after the GPU was reset, while the live checks
/// (`count`, `ecc`, `fabric`, NVML timing out) say whether the fault is still there.
fn xid_outcome(k: &KernelLog) -> Outcome {
    let (uptime_s, xids) = match k {
        KernelLog::Read { uptime_s, xids } => (uptime_s, xids),
        KernelLog::NotAsked => return Outcome::ok("node.gpu.xid"),
        // Not looked: never OK (an Xid 79 would go unseen). syslog(2): reading /dev/kmsg under
        // kernel.dmesg_restrict=1 needs CAP_SYSLOG; systemd.exec(5) ProtectKernelLogs=yes hides it.
        KernelLog::Unreadable(e) => {
            return Outcome::unknown(
                "node.gpu.xid",
                format!("cannot read the kernel log /dev/kmsg for the NVIDIA driver's Xid records: {e} (reading it needs CAP_SYSLOG when kernel.dmesg_restrict=1, and a unit without ProtectKernelLogs=yes)"),
            )
        }
    };
    let faults: Vec<&XidEvent> = xids
        .iter()
        .filter(|x| xid_fault(x.code).is_some())
        .collect();
    let Some(last) = faults.last() else {
        return Outcome::ok("node.gpu.xid");
    };
    let (kind, action) = xid_fault(last.code).unwrap_or(("", ""));
    let age = uptime_s.saturating_sub(last.usec / 1_000_000);
    let age = if age >= 3600 {
        format!("{} h {} min ago", age / 3600, age % 3600 / 60)
    } else {
        format!("{} min ago", age / 60)
    };
    let more = if faults.len() > 1 {
        format!(" ({} such records since boot, codes {})", faults.len(), {
            let mut c: Vec<String> = faults.iter().map(|x| x.code.to_string()).collect();
            c.dedup();
            c.join(",")
        })
    } else {
        String::new()
    };
    Outcome::new(
        "node.gpu.xid",
        Status::Warning,
        format!(
            "the NVIDIA driver logged Xid {} on GPU {} {age}: {kind}{more}",
            last.code, last.bus
        ),
        "a GPU, memory, link or firmware fault, not the application's: jobs on that GPU failed then, and may again if the fault stays (the other node.gpu checks show whether it does)",
        format!("{action} (NVIDIA's Xid Errors document); dmesg | grep Xid shows every record, and nvidia-smi -q the GPU's state now"),
    )
}

/// `node.gpu.ecc` (NVIDIA's *GPU Memory Error Management* guide: an uncorrectable error means the
/// GPU's memory returned bad data; the GPU is reset so that row remapping takes effect, and a GPU
/// whose remapping fails is replaced).
fn ecc_outcome(gpus: &[Gpu]) -> Outcome {
    let bad: Vec<String> = gpus
        .iter()
        .filter_map(|g| match g.ecc_uncorrected {
            Some(n) if n > 0 => Some(format!("GPU {} ({n})", g.index)),
            _ => None,
        })
        .collect();
    if bad.is_empty() {
        return Outcome::ok("node.gpu.ecc");
    }
    Outcome::new(
        "node.gpu.ecc",
        Status::Critical,
        format!(
            "uncorrectable ECC memory errors since the driver loaded: {}",
            bad.join(", ")
        ),
        "the GPU's memory returned corrupted data: jobs on it crash (Xid 48/63/94) or, worse, compute wrong results",
        "drain the node, read nvidia-smi -q -d ECC,ROW_REMAPPER, reset the GPU (nvidia-smi -r -i N) or reboot so pending row remaps apply; replace the GPU if errors come back or remapping failed",
    )
}

/// `node.gpu.pcie`: the link width does not drop at idle (the link generation does), so a width
/// below the maximum is a degraded slot, riser or cable (NVIDIA's data-center GPU debug guidance).
fn pcie_outcome(gpus: &[Gpu]) -> Outcome {
    let bad: Vec<String> = gpus
        .iter()
        .filter_map(|g| match g.pcie_width {
            Some((cur, max)) if cur > 0 && cur < max => {
                Some(format!("GPU {} at x{cur} of x{max}", g.index))
            }
            _ => None,
        })
        .collect();
    if bad.is_empty() {
        return Outcome::ok("node.gpu.pcie");
    }
    Outcome::new(
        "node.gpu.pcie",
        Status::Warning,
        format!("PCIe link below its full width: {}", bad.join(", ")),
        "host-to-GPU copies, data loading and GPUDirect RDMA through that link run at a fraction of their bandwidth, with no error",
        "reseat the GPU (or its riser/cable) at the next maintenance; lspci -vv -s <bus id> shows LnkSta against LnkCap",
    )
}

/// `node.gpu.gres`: gres.conf(5) "AutoDetect": `nvml` needs Slurm's `gpu_nvml.so` (a Slurm built
/// with NVML) and a loadable NVML, else slurmd detects no GPU; slurm.conf(5) "Gres": a node that
/// registers fewer GPUs than its `Gres=gpu:N` is set INVALID (or drained) by slurmctld.
fn gres_outcome(s: &SlurmGpus, nvml: &Nvml, in_step: bool) -> Outcome {
    const WHY_AUTO: &str = "slurmd then detects no GPU through NVML, so the node registers fewer GPUs than slurm.conf's Gres=gpu:N (slurmctld marks it INVALID or drains it) or jobs get GPUs without device files";
    if s.autodetect.as_deref() == Some("nvml") {
        if !s.gpu_nvml_plugin {
            return Outcome::new(
                "node.gpu.gres",
                Status::Critical,
                format!(
                    "gres.conf sets AutoDetect=nvml for {} but this Slurm has no gpu_nvml.so in {} (built without NVML)",
                    s.node,
                    super::quote(&s.plugin_dir)
                ),
                WHY_AUTO,
                "install a Slurm built with NVML (configure --with-nvml, so that PluginDir has gpu_nvml.so), or replace AutoDetect=nvml with Name=gpu File=/dev/nvidia[0-N] lines in gres.conf (gres.conf(5)), then restart slurmd",
            );
        }
        if let Nvml::Unavailable(e) = nvml {
            return Outcome::new(
                "node.gpu.gres",
                Status::Critical,
                format!("gres.conf sets AutoDetect=nvml for {} but NVML cannot be loaded: {e}", s.node),
                WHY_AUTO,
                "install the NVML library of the running driver (libnvidia-ml.so.1; gpu_nvml.so may also need the unversioned libnvidia-ml.so of the driver's development package), then restart slurmd",
            );
        }
    }
    if let Nvml::Read { gpus, .. } = nvml {
        let mig = s.mig_types || gpus.iter().any(|g| g.mig == Some(true));
        if !in_step && !mig && s.gres_gpus as usize > gpus.len() {
            return Outcome::new(
                "node.gpu.gres",
                Status::Critical,
                format!(
                    "slurm.conf says Gres=gpu:{} for {} but the driver lists {} GPU(s)",
                    s.gres_gpus,
                    s.node,
                    gpus.len()
                ),
                "slurmd registers the GPUs it finds: with fewer than configured, slurmctld sets the node INVALID or drains it, and jobs asking for every GPU never start there",
                "find the missing GPU (node.gpu.count, dmesg Xid lines) and reset or service it, or lower Gres=gpu:N on this node's slurm.conf line until it is back",
            );
        }
    }
    Outcome::ok("node.gpu.gres")
}

fn fabric_outcome(gpus: &[Gpu]) -> Outcome {
    const WHY: &str = "CUDA cannot use a GPU of an NVSwitch or multi-node NVLink system before its fabric registration completes: jobs fail at CUDA init or NCCL loses NVLink";
    let bad = |st: FabricState| {
        gpus.iter()
            .filter(|g| g.fabric.as_ref().is_ok_and(|i| i.state == st))
            .map(|g| g.index.to_string())
            .collect::<Vec<_>>()
    };
    let failed: Vec<(u32, String)> = gpus
        .iter()
        .filter_map(|g| match &g.fabric {
            Ok(FabricInfo {
                state: FabricState::Completed,
                status: Some(Err(e)),
                ..
            }) => Some((g.index, e.clone())),
            _ => None,
        })
        .collect();
    if let Some((i, e)) = failed.first() {
        return Outcome::new(
            "node.gpu.fabric",
            Status::Critical,
            format!(
                "NVLink fabric registration of GPU {i} completed with an error: {e}{}",
                if failed.len() > 1 {
                    format!(" ({} GPUs)", failed.len())
                } else {
                    String::new()
                }
            ),
            WHY,
            "check Fabric Manager (systemctl status nvidia-fabricmanager; on GB200/GB300 also the NVLink switch trays and nvidia-imex), then reset the GPUs or reboot the node",
        );
    }
    let not_started = bad(FabricState::NotStarted);
    if !not_started.is_empty() {
        return Outcome::new(
            "node.gpu.fabric",
            Status::Critical,
            format!(
                "NVLink fabric registration has not started on GPU(s) {}",
                not_started.join(",")
            ),
            WHY,
            "start Fabric Manager (systemctl enable --now nvidia-fabricmanager, the version of the driver) and check its log; on GB200/GB300 check that the NVLink switch trays are up",
        );
    }
    let pending = bad(FabricState::InProgress);
    if !pending.is_empty() {
        return Outcome::new(
            "node.gpu.fabric",
            Status::Warning,
            format!(
                "NVLink fabric registration is still in progress on GPU(s) {}",
                pending.join(",")
            ),
            "it normally completes within seconds of boot; until then CUDA cannot use these GPUs",
            "wait a minute and run launchguard check --only node.gpu again; if it stays, check nvidia-fabricmanager's log",
        );
    }
    Outcome::ok("node.gpu.fabric")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, fabric: Result<FabricInfo, String>) -> Gpu {
        Gpu {
            index,
            name: "NVIDIA GB300".into(),
            uuid: format!("GPU-{index}"),
            pci_bus_id: format!("00000000:{:02X}:00.0", 0x18 + index),
            fabric,
            ecc_uncorrected: Some(0),
            pcie_width: Some((16, 16)),
            mig: Some(false),
            nvlink: None,
            row_remap: None,
            retired_pages_pending: None,
            persistence: Some(true),
        }
    }

    fn fab(state: FabricState, uuid: &str) -> FabricInfo {
        FabricInfo {
            state,
            status: (state == FabricState::Completed).then_some(Ok(())),
            cluster_uuid: uuid.into(),
            clique_id: 7,
        }
    }

    const ZERO: &str = "00000000000000000000000000000000";
    const DOMAIN: &str = "5f1e2d3c4b5a69788796a5b4c3d2e1f0";

    fn facts(gpus: Vec<Gpu>) -> GpuFacts {
        let pci = gpus.iter().map(|g| sysfs_bus_id(&g.pci_bus_id)).collect();
        GpuFacts {
            nvml: Nvml::Read {
                driver_version: "580.159.03".into(),
                cuda_driver_version: Some("13.0".into()),
                gpus,
            },
            pci,
            proc_gpus: None,
            slurm: None,
            kernel: KernelLog::NotAsked,
            in_step: false,
        }
    }

    fn status(f: &GpuFacts, id: &str) -> Status {
        judge(f).iter().find(|o| o.id == id).expect(id).status
    }

    fn slurm(gres_gpus: u32, autodetect: Option<&str>, plugin: bool) -> Option<SlurmGpus> {
        Some(SlurmGpus {
            node: "gpu-01".into(),
            gres_gpus,
            mig_types: false,
            autodetect: autodetect.map(Into::into),
            plugin_dir: "/usr/lib/x86_64-linux-gnu/slurm-wlm".into(),
            gpu_nvml_plugin: plugin,
        })
    }

    #[test]
    fn slurms_view_of_the_gpus_is_held_against_the_driver() {
        let mut f = facts(
            (0..4)
                .map(|i| gpu(i, Ok(fab(FabricState::NotSupported, ZERO))))
                .collect(),
        );
        f.slurm = slurm(4, Some("nvml"), true);
        assert_eq!(status(&f, "node.gpu.gres"), Status::Ok);
        f.slurm = slurm(8, None, false);
        let out = judge(&f);
        let o = out.iter().find(|o| o.id == "node.gpu.gres").unwrap();
        assert_eq!(o.status, Status::Critical);
        assert!(
            o.what
                .contains("Gres=gpu:8 for gpu-01 but the driver lists 4"),
            "{}",
            o.what
        );
        // AutoDetect=nvml without Slurm's NVML plugin: critical whatever NVML says, even with no
        // NVIDIA GPU seen here.
        f.slurm = slurm(4, Some("nvml"), false);
        assert_eq!(status(&f, "node.gpu.gres"), Status::Critical);
        f.nvml = Nvml::NotAsked;
        let out = judge(&f);
        let o = out.iter().find(|o| o.id == "node.gpu.gres").unwrap();
        assert!(
            o.what
                .contains("no gpu_nvml.so in '/usr/lib/x86_64-linux-gnu/slurm-wlm'"),
            "{}",
            o.what
        );
        // With the plugin but no NVML library.
        f.slurm = slurm(4, Some("nvml"), true);
        f.nvml = Nvml::Unavailable("libnvidia-ml.so.1: cannot open shared object file".into());
        assert_eq!(status(&f, "node.gpu.gres"), Status::Critical);
        // MIG: Slurm counts instances (Gres=gpu:1g.10gb:7 on one GPU), not GPUs.
        f.nvml = Nvml::Read {
            driver_version: "580.159.04".into(),
            cuda_driver_version: None,
            gpus: vec![gpu(0, Ok(fab(FabricState::NotSupported, ZERO)))],
        };
        f.slurm = slurm(7, None, false);
        assert_eq!(status(&f, "node.gpu.gres"), Status::Critical);
        if let Some(s) = f.slurm.as_mut() {
            s.mig_types = true;
        }
        assert_eq!(status(&f, "node.gpu.gres"), Status::Ok);
        f.slurm = slurm(7, None, false);
        if let Nvml::Read { gpus, .. } = &mut f.nvml {
            gpus[0].mig = Some(true);
        }
        assert_eq!(status(&f, "node.gpu.gres"), Status::Ok);
        // Inside a job step (a sweep), NVML sees the step's GPUs only: no count comparison.
        if let Nvml::Read { gpus, .. } = &mut f.nvml {
            gpus[0].mig = Some(false);
        }
        f.in_step = true;
        f.pci.push("0000:99:00.0".into());
        assert_eq!(status(&f, "node.gpu.gres"), Status::Ok);
        assert_eq!(status(&f, "node.gpu.count"), Status::Ok);
        f.in_step = false;
        assert_eq!(status(&f, "node.gpu.count"), Status::Critical);
        // NVML without bus IDs: counts are compared.
        if let Nvml::Read { gpus, .. } = &mut f.nvml {
            gpus[0].pci_bus_id.clear();
        }
        f.pci = vec!["0000:18:00.0".into()];
        assert_eq!(status(&f, "node.gpu.count"), Status::Ok);
        // Fake or non-NVIDIA GPUs as GRES on a node without NVIDIA hardware: not this check's.
        f.slurm = slurm(2, None, false);
        f.nvml = Nvml::NotAsked;
        assert_eq!(status(&f, "node.gpu.gres"), Status::Ok);
    }

    #[test]
    fn ecc_errors_are_critical_and_a_narrow_pcie_link_a_warning() {
        let mut f = facts(
            (0..2)
                .map(|i| gpu(i, Ok(fab(FabricState::NotSupported, ZERO))))
                .collect(),
        );
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
        if let Nvml::Read { gpus, .. } = &mut f.nvml {
            gpus[1].ecc_uncorrected = Some(3);
            gpus[0].pcie_width = Some((8, 16));
            gpus[1].pcie_width = None;
        }
        let out = judge(&f);
        let ecc = out.iter().find(|o| o.id == "node.gpu.ecc").unwrap();
        assert_eq!(ecc.status, Status::Critical);
        assert!(ecc.what.ends_with("GPU 1 (3)"), "{}", ecc.what);
        let pcie = out.iter().find(|o| o.id == "node.gpu.pcie").unwrap();
        assert_eq!(pcie.status, Status::Warning);
        assert!(pcie.what.ends_with("GPU 0 at x8 of x16"), "{}", pcie.what);
    }

    #[test]
    fn xid_records_are_read_and_only_node_faults_warn() {
        let r = "4,1520,98765432100,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.";
        let x = parse_xid_record(r).unwrap();
        assert_eq!(
            (x.usec, x.bus.as_str(), x.code),
            (98_765_432_100, "0000:3b:00", 79)
        );
        assert!(x.text.starts_with("pid=1234"), "{}", x.text);
        assert_eq!(
            parse_xid_record("6,1,2,-;nvidia-modeset: Loading NVIDIA Kernel Mode Setting"),
            None
        );
        let app =
            parse_xid_record("4,9,1000000,-;NVRM: Xid (PCI:0000:18:00): 31, pid=7, MMU Fault")
                .unwrap();
        let mut f = facts(vec![gpu(0, Ok(fab(FabricState::NotSupported, ZERO)))]);
        f.kernel = KernelLog::Read {
            uptime_s: 100_000,
            xids: vec![app.clone()],
        };
        assert_eq!(
            status(&f, "node.gpu.xid"),
            Status::Ok,
            "an application Xid is not a node fault"
        );
        f.kernel = KernelLog::Read {
            uptime_s: 103_085,
            xids: vec![app, x],
        };
        let out = judge(&f);
        let o = out.iter().find(|o| o.id == "node.gpu.xid").unwrap();
        assert_eq!(o.status, Status::Warning);
        assert!(
            o.what
                .contains("Xid 79 on GPU 0000:3b:00 1 h 12 min ago: the GPU fell off the bus"),
            "{}",
            o.what
        );
        assert!(o.fix.starts_with("reboot"), "{}", o.fix);
        // Issue 28: not looked is not OK.
        f.kernel = KernelLog::Unreadable("Operation not permitted".into());
        assert_eq!(status(&f, "node.gpu.xid"), Status::Unknown);
    }

    fn set(f: &mut GpuFacts, i: usize, edit: impl FnOnce(&mut Gpu)) {
        if let Nvml::Read { gpus, .. } = &mut f.nvml {
            edit(&mut gpus[i]);
        }
    }

    fn outcome(f: &GpuFacts, id: &str) -> Outcome {
        judge(f).into_iter().find(|o| o.id == id).expect(id)
    }

    fn links(links: u32, down: &[u32]) -> Option<NvLinks> {
        Some(NvLinks {
            links,
            down: down.to_vec(),
        })
    }

    #[test]
    fn nvlink_links_down_are_judged_against_the_best_connected_gpu() {
        let mut f = facts(
            (0..4)
                .map(|i| gpu(i, Ok(fab(FabricState::NotSupported, ZERO))))
                .collect(),
        );
        // PCIe GPUs: NVML answers for no link.
        assert_eq!(status(&f, "node.gpu.nvlink"), Status::Ok);
        assert_eq!(nvlink_summary(gpus_of(&f)), "none");
        for i in 0..4 {
            set(&mut f, i, |g| g.nvlink = links(18, &[]));
        }
        assert_eq!(status(&f, "node.gpu.nvlink"), Status::Ok);
        set(&mut f, 2, |g| g.nvlink = links(18, &[4, 5]));
        let o = outcome(&f, "node.gpu.nvlink");
        assert_eq!(o.status, Status::Warning);
        assert_eq!(
            o.what,
            "NVLink links down: GPU 2 16/18 active (down: 4,5), while other GPUs of this node have 18 active"
        );
        assert!(o.fix.starts_with("nvidia-smi nvlink -s -i 2 "), "{}", o.fix);
        assert_eq!(
            nvlink_summary(gpus_of(&f)),
            "active/links 0:18/18 1:18/18 2:16/18 3:18/18"
        );
        set(&mut f, 3, |g| {
            g.nvlink = links(18, &(0..18).collect::<Vec<_>>())
        });
        assert_eq!(status(&f, "node.gpu.nvlink"), Status::Critical);
        // One GPU whose 18 links are all inactive (a lone H200 in a VM: its NVSwitches are not
        // there): nothing to compare with, not a fault; the fact says so.
        let mut f = facts(vec![gpu(0, Ok(fab(FabricState::NotSupported, ZERO)))]);
        set(&mut f, 0, |g| {
            g.nvlink = links(18, &(0..18).collect::<Vec<_>>())
        });
        assert_eq!(status(&f, "node.gpu.nvlink"), Status::Ok);
        assert!(
            nvlink_summary(gpus_of(&f))
                .starts_with("active/links 0:0/18 (no GPU has an active link"),
            "{}",
            nvlink_summary(gpus_of(&f))
        );
    }

    fn gpus_of(f: &GpuFacts) -> &[Gpu] {
        match &f.nvml {
            Nvml::Read { gpus, .. } => gpus,
            _ => &[],
        }
    }

    #[test]
    fn a_pending_or_failed_row_remap_and_pending_page_retirement_are_critical() {
        let remap = |pending, failed| {
            Some(RowRemap {
                correctable: 0,
                uncorrectable: 1,
                pending,
                failed,
            })
        };
        let mut f = facts(
            (0..2)
                .map(|i| gpu(i, Ok(fab(FabricState::NotSupported, ZERO))))
                .collect(),
        );
        set(&mut f, 0, |g| g.row_remap = remap(false, false));
        set(&mut f, 1, |g| g.retired_pages_pending = Some(false));
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
        set(&mut f, 1, |g| g.row_remap = remap(true, false));
        let o = outcome(&f, "node.gpu.row_remap");
        assert_eq!(o.status, Status::Critical);
        assert_eq!(o.what, "a memory row remap is pending on GPU(s) 1");
        assert!(o.fix.contains("nvidia-smi -r -i 1"), "{}", o.fix);
        set(&mut f, 0, |g| g.row_remap = remap(false, true));
        let o = outcome(&f, "node.gpu.row_remap");
        assert_eq!(
            (o.status, o.what.as_str()),
            (Status::Critical, "row remapping failed on GPU(s) 0")
        );
        set(&mut f, 1, |g| g.retired_pages_pending = Some(true));
        let o = outcome(&f, "node.gpu.retired_pages");
        assert_eq!(
            (o.status, o.what.as_str()),
            (
                Status::Critical,
                "memory pages are pending retirement on GPU(s) 1"
            )
        );
    }

    #[test]
    fn persistence_mode_off_is_a_warning_naming_nvidia_persistenced() {
        let mut f = facts(
            (0..2)
                .map(|i| gpu(i, Ok(fab(FabricState::NotSupported, ZERO))))
                .collect(),
        );
        set(&mut f, 1, |g| g.persistence = None);
        assert_eq!(status(&f, "node.gpu.persistence"), Status::Ok);
        set(&mut f, 0, |g| g.persistence = Some(false));
        let o = outcome(&f, "node.gpu.persistence");
        assert_eq!(o.status, Status::Warning);
        assert_eq!(o.what, "persistence mode is off on GPU(s) 0 of 2");
        assert!(
            o.fix.contains("systemctl enable --now nvidia-persistenced")
                && o.fix.contains("nvidia-smi -pm 1"),
            "{}",
            o.fix
        );
        // NVML wedged: not known, so UNKNOWN (never OK).
        f.nvml = Nvml::TimedOut(5);
        assert_eq!(status(&f, "node.gpu.persistence"), Status::Unknown);
    }

    #[test]
    fn bus_ids_are_compared_in_sysfs_form() {
        assert_eq!(sysfs_bus_id("00000000:18:00.0"), "0000:18:00.0");
        assert_eq!(sysfs_bus_id("00000001:AB:00.0"), "0001:ab:00.0");
        assert_eq!(sysfs_bus_id("0000:18:00.0"), "0000:18:00.0");
    }

    #[test]
    fn a_gb300_node_with_a_registered_domain_passes_and_is_a_member() {
        let f = facts(
            (0..4)
                .map(|i| gpu(i, Ok(fab(FabricState::Completed, DOMAIN))))
                .collect(),
        );
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
        assert_eq!(mnnvl(&f), Mnnvl::Member(format!("{DOMAIN}/7")));
    }

    #[test]
    fn single_node_nvswitch_and_pcie_gpus_are_not_mnnvl() {
        let f = facts(vec![gpu(0, Ok(fab(FabricState::Completed, ZERO)))]);
        assert!(matches!(mnnvl(&f), Mnnvl::No(_)));
        let f = facts(vec![gpu(0, Ok(fab(FabricState::NotSupported, ZERO)))]);
        assert!(
            matches!(mnnvl(&f), Mnnvl::No(ref s) if s.contains("not supported")),
            "{:?}",
            mnnvl(&f)
        );
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
    }

    #[test]
    fn fabric_registration_not_started_or_failed_is_critical_in_progress_a_warning() {
        let mut f = facts(vec![
            gpu(0, Ok(fab(FabricState::Completed, DOMAIN))),
            gpu(1, Ok(fab(FabricState::NotStarted, ZERO))),
        ]);
        assert_eq!(status(&f, "node.gpu.fabric"), Status::Critical);
        if let Nvml::Read { gpus, .. } = &mut f.nvml {
            gpus[1].fabric = Ok(fab(FabricState::InProgress, ZERO));
        }
        assert_eq!(status(&f, "node.gpu.fabric"), Status::Warning);
        if let Nvml::Read { gpus, .. } = &mut f.nvml {
            let mut i = fab(FabricState::Completed, DOMAIN);
            i.status = Some(Err("Unknown Error".into()));
            gpus[1].fabric = Ok(i);
        }
        let out = judge(&f);
        let o = out.iter().find(|o| o.id == "node.gpu.fabric").unwrap();
        assert_eq!(o.status, Status::Critical);
        assert!(
            o.what
                .contains("GPU 1 completed with an error: Unknown Error"),
            "{}",
            o.what
        );
    }

    #[test]
    fn a_gpu_on_the_bus_that_the_driver_lost_is_critical() {
        let mut f = facts(vec![gpu(0, Ok(fab(FabricState::NotSupported, ZERO)))]);
        f.pci.push("0000:3b:00.0".into());
        let out = judge(&f);
        let o = out.iter().find(|o| o.id == "node.gpu.count").unwrap();
        assert_eq!(o.status, Status::Critical);
        assert!(o.what.contains("missing 0000:3b:00.0"), "{}", o.what);
    }

    #[test]
    fn nvml_missing_where_gpus_are_is_a_warning_and_nowhere_else() {
        let mut f = GpuFacts {
            nvml: Nvml::Unavailable("libnvidia-ml.so.1: cannot open shared object file".into()),
            pci: vec!["0000:18:00.0".into()],
            proc_gpus: None,
            slurm: None,
            kernel: KernelLog::NotAsked,
            in_step: false,
        };
        assert_eq!(status(&f, "node.gpu.nvml"), Status::Warning);
        f.pci.clear();
        assert_eq!(status(&f, "node.gpu.nvml"), Status::Ok);
        f.nvml = Nvml::TimedOut(5);
        assert_eq!(status(&f, "node.gpu.nvml"), Status::Unknown);
        assert!(matches!(mnnvl(&f), Mnnvl::Unknown(_)));
        // Wedged where GPUs are: every check that reads NVML is UNKNOWN (health keeps its drain),
        // not OK; the kernel log's check still judges.
        f.pci = vec!["0000:18:00.0".into()];
        let o = judge(&f);
        for o in &o {
            // gres: no slurm.conf line here, nothing it needs NVML for.
            let want = if o.id == "node.gpu.xid" || o.id == "node.gpu.gres" {
                Status::Ok
            } else {
                Status::Unknown
            };
            assert_eq!(o.status, want, "{o:?}");
        }
        f.nvml = Nvml::Unavailable("Driver/library version mismatch".into());
        assert_eq!(status(&f, "node.gpu.row_remap"), Status::Unknown);
        assert_eq!(status(&f, "node.gpu.nvml"), Status::Warning);
        f.nvml = Nvml::Stuck("launchguard process 77 holds /run/launchguard/nvml.lock".into());
        let o = judge(&f);
        assert_eq!(o[0].status, Status::Unknown);
        assert!(
            o[0].what
                .starts_with("NVML not asked: launchguard process 77"),
            "{}",
            o[0].what
        );
        assert!(o.iter().all(|o| o.status != Status::Critical));
    }
}

//! Facts the plugin reads from the system: srun's argv, the running Slurm release, node size.
//! Everything here is bounded and non-blocking on local filesystems (/proc, /dev, /sys).

use crate::ffi::{self, Spank, StrItem};
use launchguard_core::argv::split_cmdline;
use launchguard_core::checks::env::parse_count;
use launchguard_core::checks::NodeFacts;
use launchguard_core::policy::parse_args;
use launchguard_core::{Policy, SlurmRelease};
use std::io::Read;
use std::path::Path;

/// Most bytes of `/proc/self/cmdline` read (srun's argv; Linux caps a single argument at 128 KiB).
const MAX_CMDLINE: u64 = 1 << 20;

/// This process's argv from `/proc/self/cmdline` (at most 1 MiB and 4096 arguments). Empty when
/// unreadable.
pub fn own_argv() -> Vec<String> {
    let mut raw = Vec::new();
    if let Ok(f) = std::fs::File::open("/proc/self/cmdline") {
        let _ = f.take(MAX_CMDLINE).read_to_end(&mut raw);
    }
    split_cmdline(&raw, 4096)
}

/// The running Slurm's major.minor from `S_SLURM_VERSION_MAJOR/MINOR`, falling back to the release
/// the plugin was built for (Slurm loads a plugin only on that major.minor, so they agree).
pub fn release(sp: &Spank) -> SlurmRelease {
    match (
        sp.get_str(StrItem::VersionMajor),
        sp.get_str(StrItem::VersionMinor),
    ) {
        (Some(a), Some(b)) => SlurmRelease::from_parts(&a, &b),
        _ => None,
    }
    .unwrap_or_else(|| SlurmRelease::from_version_number(ffi::BUILT_FOR))
}

/// This node's NVIDIA GPU device files, `/dev/nvidia0`, `/dev/nvidia1`, … sorted by number (not
/// `nvidiactl` & co.).
pub fn nvidia_files() -> Vec<String> {
    let mut n: Vec<u32> = std::fs::read_dir("/dev")
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name();
                    let d = name.to_string_lossy().strip_prefix("nvidia")?.to_string();
                    (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| d.parse().ok())
                        .flatten()
                })
                .collect()
        })
        .unwrap_or_default();
    n.sort_unstable();
    n.into_iter().map(|i| format!("/dev/nvidia{i}")).collect()
}

/// A regular file's text (lossily decoded), if it is one and at most `max` bytes are read. Never
/// blocks on a FIFO or device: it is checked before opening, and opened with `O_NONBLOCK` in case the
/// path was swapped in between.
pub fn read_small(path: &Path, max: u64) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut raw = Vec::new();
    f.take(max).read_to_end(&mut raw).ok()?;
    Some(String::from_utf8_lossy(&raw).into_owned())
}

/// The policy for a client-side callback (srun, sbatch, salloc): parses the plugstack arguments and
/// shows each problem on the user's terminal (`srun: error: launchguard: plugstack argument …`).
/// `None` when every check is off.
pub fn client_policy(sp: &Spank) -> Option<Policy> {
    let (policy, problems) = parse_args(sp.args());
    for p in &problems {
        ffi::log_error(&p.to_string());
    }
    (!policy.all_off()).then_some(policy)
}

/// CPUs of this machine, from `/sys/devices/system/cpu/online` (not the affinity mask or cgroup of
/// this process, which in slurmstepd can be the step's).
pub fn node_cpus() -> Option<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    launchguard_core::checks::env::count_cpu_list(&text)
}

/// Node facts for srun: inside an allocation, the allocation's CPUs and GPUs on this node
/// (`SLURM_CPUS_ON_NODE`, `SLURM_GPUS_ON_NODE`); otherwise this machine's CPUs and NVIDIA GPUs.
pub fn srun_node_facts() -> NodeFacts {
    let env = |n: &str| std::env::var(n).ok().and_then(|v| parse_count(&v));
    match (env("SLURM_CPUS_ON_NODE"), env("SLURM_GPUS_ON_NODE")) {
        (Some(c), Some(g)) => NodeFacts {
            cpus: Some(c),
            gpus: Some(g),
        },
        _ => {
            let g = nvidia_files().len() as u32;
            NodeFacts {
                cpus: node_cpus(),
                gpus: (g > 0).then_some(g),
            }
        }
    }
}

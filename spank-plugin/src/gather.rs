//! Facts the plugin reads from the system: srun's argv, the running Slurm release, node size.
//! Everything here is bounded and non-blocking on local filesystems (/proc, /dev, /sys).

use crate::ffi::{self, Spank, StrItem};
use launchguard_core::argv::split_cmdline;
use launchguard_core::checks::env::parse_count;
use launchguard_core::checks::NodeFacts;
use launchguard_core::SlurmRelease;
use std::io::Read;

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

/// GPU device files of this node: `/dev/nvidia0`, `/dev/nvidia1`, … (not `nvidiactl` & co.).
pub fn node_gpu_files() -> u32 {
    let Ok(rd) = std::fs::read_dir("/dev") else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.strip_prefix("nvidia")
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .count() as u32
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
            let g = node_gpu_files();
            NodeFacts {
                cpus: node_cpus(),
                gpus: (g > 0).then_some(g),
            }
        }
    }
}

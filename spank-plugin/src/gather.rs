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

/// The running Slurm's micro release (`S_SLURM_VERSION_MICRO`, the 5 of 24.11.5); `None` when
/// Slurm does not say.
pub fn micro_release(sp: &Spank) -> Option<u16> {
    sp.get_str(StrItem::VersionMicro)?.trim().parse().ok()
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

/// A regular file's text (lossily decoded), at most `max` bytes; `None` when missing, unreadable or
/// not a regular file. Never blocks on a FIFO or device ([`launchguard_core::host::files`]).
pub use launchguard_core::host::files::read_small;

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

/// Most time `sinfo` may take for the `-c` advice; it is killed after that.
const SINFO_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);

/// Runs `argv` with stdin closed, for at most `limit`, and returns its stdout (at most 256 KiB) if it
/// exited 0 in time. The child is killed (and reaped) on timeout. No threads: the pipe is drained
/// after exit, so a command that fills more than the pipe buffer (64 KiB) before exiting counts as a
/// timeout.
pub fn run_bounded(argv: &[&str], limit: std::time::Duration) -> Option<String> {
    use std::process::{Command, Stdio};
    let (prog, args) = argv.split_first()?;
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                let mut out = Vec::new();
                let _ = child.stdout.take()?.take(256 << 10).read_to_end(&mut out);
                return st
                    .success()
                    .then(|| String::from_utf8_lossy(&out).into_owned());
            }
            Ok(None) if start.elapsed() < limit => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The node size of the partition the launch goes to, from `sinfo` (at most 1.5 s), for the `-c`
/// advice on a login node without GPUs. Unknown (both `None`) when sinfo fails, is slow or the
/// partition's nodes differ.
pub fn partition_node_facts(partition: Option<&str>) -> NodeFacts {
    match run_bounded(&["sinfo", "-h", "-o", "%P %c %G"], SINFO_TIMEOUT) {
        Some(out) => launchguard_core::checks::gpus::partition_node_facts(&out, partition),
        None => NodeFacts::default(),
    }
}

/// The NCCL rules: the built-in table plus the admin's file (`nccl_rules=`), and the problems of its
/// bad lines.
pub fn nccl_rules(policy: &Policy) -> (Vec<launchguard_core::checks::nccl_env::Rule>, Vec<String>) {
    use launchguard_core::checks::nccl_env;
    let mut rules = nccl_env::builtin_rules();
    let mut problems = vec![];
    if let Some(text) = read_small(Path::new(&policy.nccl_rules), 1 << 20) {
        let (r, p) = nccl_env::parse_rules(&text, &policy.nccl_rules);
        rules.extend(r);
        problems = p;
    }
    (rules, problems)
}

/// The fabric the admin configured (`fabric=efa|ib`); `None` for `auto`.
pub fn configured_fabric(policy: &Policy) -> Option<launchguard_core::checks::nccl_env::Fabric> {
    use launchguard_core::checks::nccl_env::Fabric;
    use launchguard_core::policy::FabricChoice;
    match policy.fabric {
        FabricChoice::Efa => Some(Fabric::Efa),
        FabricChoice::Ib => Some(Fabric::Ib),
        FabricChoice::Auto => None,
    }
}

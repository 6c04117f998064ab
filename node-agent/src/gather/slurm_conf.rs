//! Facts for `node.slurm_conf.*`: slurm.conf with its includes, the hardware as `slurmd -C` reports it
//! (from `/sys/devices/system/cpu` and `/proc/meminfo`, read once), and gres.conf's GPU files.

use super::util;
use super::Ctx;
use launchguard_core::node::slurm_conf::{ConfReadError, Hardware, SlurmConfFacts};
use launchguard_core::slurm_conf::SlurmConf;
use std::collections::BTreeSet;
use std::path::Path;

/// Reads and parses slurm.conf at `path` with its `Include` files, as the installed Slurm does
/// ([`launchguard_core::host::slurm_conf::read`], the reader the plugin shares; the release from
/// `slurmd -V` decides where a nested relative include is looked up).
pub fn read(ctx: &Ctx, path: &Path) -> Result<SlurmConf, ConfReadError> {
    let release = launchguard_core::SlurmRelease::parse(&super::slurmd_version::get(ctx));
    Ok(launchguard_core::host::slurm_conf::read(path, release)?)
}

/// The node's hardware, as `slurmd -C` computes it.
pub fn hardware(roots: &launchguard_core::host::Roots) -> Result<Hardware, String> {
    let base = roots.sys.join("devices/system/cpu");
    let online = util::read_text(&base.join("online")).map_err(|e| format!("cpu/online: {e}"))?;
    let cpus = launchguard_core::checks::env::count_cpu_list(online.trim())
        .ok_or_else(|| format!("cannot parse cpu/online '{}'", online.trim()))?;
    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    for id in 0..cpus.max(1) * 4 {
        let topo = base.join(format!("cpu{id}/topology"));
        let Ok(p) = std::fs::read_to_string(topo.join("physical_package_id")) else {
            continue;
        };
        // A core is its set of hardware threads (core_id repeats across dies and on some ARM kernels).
        let c = std::fs::read_to_string(topo.join("thread_siblings_list"))
            .or_else(|_| std::fs::read_to_string(topo.join("core_cpus_list")))
            .unwrap_or_else(|_| format!("cpu{id}"));
        packages.insert(p.trim().to_string());
        cores.insert(c.trim().to_string());
    }
    let sockets = packages.len().max(1) as u32;
    let cores_total = cores.len().max(1) as u32;
    let meminfo =
        util::read_text(&roots.proc.join("meminfo")).map_err(|e| format!("/proc/meminfo: {e}"))?;
    let kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or("no MemTotal in /proc/meminfo")?;
    Ok(Hardware {
        cpus,
        boards: 1,
        sockets,
        cores_per_socket: cores_total / sockets,
        threads_per_core: (cpus / cores_total).max(1),
        real_memory_mib: kb / 1024,
    })
}

/// GPU files gres.conf names for `node` (`None`: no gres.conf, `AutoDetect`, `MultipleFiles=` or
/// `Count=`-only lines: nothing launchguard can count).
pub fn gres_gpu_files(dir: &Path, node: &str) -> Option<Vec<String>> {
    let text = util::read_text(&dir.join("gres.conf")).ok()?;
    if text.lines().any(|l| {
        let l = l.split('#').next().unwrap_or("").to_ascii_lowercase();
        l.contains("autodetect=") && !l.contains("autodetect=off")
    }) {
        return None;
    }
    let g = launchguard_core::gres::for_node(&text, node);
    (!g.multiple_files && !g.gpu_files.is_empty()).then_some(g.gpu_files)
}

/// Gathers the slurm_conf family's facts.
pub fn gather(ctx: &Ctx) -> SlurmConfFacts {
    let (path, conf) = ctx.slurm_conf();
    let node = ctx.slurm_node_name(conf.as_ref().ok());
    let gres = gres_gpu_files(&ctx.slurm_dir(), &node);
    let missing = gres
        .iter()
        .flatten()
        .filter(|f| !Path::new(f).exists())
        .cloned()
        .collect();
    SlurmConfFacts {
        path: path.display().to_string(),
        conf,
        node,
        hw: ctx.hardware.get_or_init(|| hardware(&ctx.roots)).clone(),
        gres_gpu_files: gres,
        missing_gpu_files: missing,
    }
}

//! Facts about the node that slurmstepd gathers once per step and node, in `user_init` before the tasks
//! fork (the task children inherit them), for the checks that run later in each task's `task_init`:
//! gres.conf's device files, the RDMA NICs under `/sys/class/infiniband`, `/dev/gdrdrv`, network
//! interfaces and the NCCL rules.

use crate::ffi;
use crate::gather::read_small;
use launchguard_core::checks::nccl_env::Rule;
use launchguard_core::host::{rdma, short_hostname, Roots};
use launchguard_core::{gres, Policy};
use std::path::Path;

/// One RDMA NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hca {
    /// `mlx5_0`, `rdmap16s27`, …
    pub name: String,
    /// Kernel driver (`efa`, `mlx5_core`, …), empty when unknown.
    pub driver: String,
    /// Its verbs devices as `/dev/infiniband/uverbsN`.
    pub uverbs: Vec<String>,
    /// Whether any of its ports is `ACTIVE` (`ports/*/state`).
    pub active: bool,
}

/// Host facts, gathered once per task.
#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    /// This node's GPU device files (gres.conf `Name=gpu File=`, else `/dev/nvidiaN`).
    pub gpu_files: Vec<String>,
    /// Every device file gres.conf hands out as a GRES on this node (not expected in every step).
    pub gres_files: Vec<String>,
    /// MIG or shared GPUs (`/dev/nvidia-caps`, gres.conf `MultipleFiles=`): GPU files are not counted.
    pub mig: bool,
    /// RDMA NICs.
    pub hcas: Vec<Hca>,
    /// Whether the host has `/dev/gdrdrv`.
    pub gdrdrv: bool,
    /// Network interface names (`/sys/class/net`).
    pub interfaces: Vec<String>,
    /// Built-in NCCL rules plus the admin's.
    pub nccl_rules: Vec<Rule>,
    /// Major number of `nvidia-caps-imex-channels` in `/proc/devices` (the driver offers IMEX
    /// channels: a multi-node NVLink node); read only for GPU steps.
    pub imex_major: Option<u32>,
    /// The host's IMEX channel files (`channelN` in `/dev/nvidia-caps-imex-channels`), when
    /// [`HostFacts::imex_major`] is known.
    pub imex_channels: Vec<String>,
    /// Whether the host's `nvidia-imex` service is enabled (a `*.wants/nvidia-imex.service` link),
    /// when [`HostFacts::imex_major`] is known.
    pub imex_enabled: bool,
}

/// The IMEX facts of the host: the major of `nvidia-caps-imex-channels` in `<proc>/devices` and the
/// channel files in `<dev>/nvidia-caps-imex-channels` (at most 64, sorted). NVIDIA IMEX guide,
/// "IMEX Channels".
pub fn imex(proc: &Path, dev: &Path) -> (Option<u32>, Vec<String>) {
    let major = read_small(&proc.join("devices"), 64 << 10)
        .and_then(|t| launchguard_core::node::imex::major_of(&t, "nvidia-caps-imex-channels"));
    if major.is_none() {
        return (None, vec![]);
    }
    let mut names: Vec<String> = std::fs::read_dir(dev.join("nvidia-caps-imex-channels"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .take(64)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("channel"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    (major, names)
}

/// RDMA NICs under `<sys>/class/infiniband` ([`launchguard_core::host::rdma`]): each one's driver
/// and verbs devices as `/dev/infiniband/uverbsN`. At most 64 NICs.
pub fn rdma_devices(sys: &Path) -> Vec<Hca> {
    rdma::nics(sys, 64)
        .into_iter()
        .map(|n| Hca {
            active: n.active(),
            uverbs: n
                .verbs
                .unwrap_or_default()
                .into_iter()
                .filter(|v| v.starts_with("uverbs"))
                .map(|v| format!("/dev/infiniband/{v}"))
                .collect(),
            name: n.name,
            driver: n.driver,
        })
        .collect()
}

/// Network interface names under `<sys>/class/net`.
pub fn interfaces(sys: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sys.join("class/net"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .take(1024)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// gres.conf beside slurm.conf (`SLURM_CONF`'s directory, else `/etc/slurm`): a regular file of at
/// most 1 MiB.
fn gres_conf_text() -> Option<String> {
    let dir = std::env::var("SLURM_CONF")
        .ok()
        .and_then(|c| Path::new(&c).parent().map(|p| p.to_path_buf()))
        .unwrap_or_else(|| "/etc/slurm".into());
    read_small(&dir.join("gres.conf"), 1 << 20)
}

/// This machine's short host name (`/proc/sys/kernel/hostname` up to its first dot).
pub fn hostname() -> String {
    short_hostname(&Roots::system())
}

/// Gathers the host facts the `task_init` checks need, reading `/sys`, `/proc` and `/dev` under
/// `roots` ([`Roots::system`] in slurmstepd). Problems in the admin's NCCL rules file are logged to
/// slurmd's log once (`label` names the job and step).
pub fn gather(roots: &Roots, policy: &Policy, label: &str, step_has_gpus: bool) -> HostFacts {
    let hcas = rdma_devices(&roots.sys);
    // gres.conf matters for the step's GPUs and for NICs handed out as GRES; skip it otherwise.
    let g = if step_has_gpus || !hcas.is_empty() {
        gres_conf_text()
            .map(|t| gres::for_node(&t, &short_hostname(roots)))
            .unwrap_or_default()
    } else {
        Default::default()
    };
    let gpu_files = if g.gpu_files.is_empty() && step_has_gpus {
        crate::gather::nvidia_files()
    } else {
        g.gpu_files
    };
    let (nccl_rules, problems) = crate::gather::nccl_rules(policy);
    for p in problems {
        // slurm_info from slurmstepd reaches slurmd's log only, not the user's terminal.
        ffi::log_info(&format!("launchguard: NCCL rules file: {p} ({label})"));
    }
    let (imex_major, imex_channels) = if step_has_gpus {
        imex(&roots.proc, &roots.dev)
    } else {
        (None, vec![])
    };
    let imex_enabled = imex_major.is_some()
        && launchguard_core::host::systemd_unit_enabled(roots, "nvidia-imex.service");
    HostFacts {
        imex_major,
        imex_channels,
        imex_enabled,
        gpu_files,
        gres_files: g.all_files,
        mig: g.multiple_files || roots.dev.join("nvidia-caps").exists(),
        hcas,
        gdrdrv: roots.dev.join("gdrdrv").exists(),
        interfaces: interfaces(&roots.sys),
        nccl_rules,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn fixture(name: &str, hcas: &[(&str, &str, &[&str])]) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("lg-sysfs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("bus/pci/drivers")).unwrap();
        for (hca, driver, uverbs) in hcas {
            let dev = root.join(format!("devices/{hca}"));
            std::fs::create_dir_all(dev.join("infiniband_verbs")).unwrap();
            for u in *uverbs {
                std::fs::create_dir_all(dev.join("infiniband_verbs").join(u)).unwrap();
            }
            std::fs::create_dir_all(root.join("bus/pci/drivers").join(driver)).unwrap();
            symlink(
                root.join("bus/pci/drivers").join(driver),
                dev.join("driver"),
            )
            .unwrap();
            std::fs::create_dir_all(root.join("class/infiniband").join(hca).join("ports/1"))
                .unwrap();
            let state = if *driver == "efa" {
                "4: ACTIVE\n"
            } else {
                "1: DOWN\n"
            };
            std::fs::write(
                root.join("class/infiniband")
                    .join(hca)
                    .join("ports/1/state"),
                state,
            )
            .unwrap();
            symlink(&dev, root.join("class/infiniband").join(hca).join("device")).unwrap();
        }
        root
    }

    #[test]
    fn efa_and_ib_nodes_are_told_apart_from_sysfs() {
        use launchguard_core::checks::nccl_env::{detect_fabric, Fabric};
        let efa = fixture(
            "efa",
            &[
                ("rdmap16s27", "efa", &["uverbs0"]),
                ("rdmap32s27", "efa", &["uverbs1"]),
                ("mlx5_0", "mlx5_core", &["uverbs2"]),
            ],
        );
        let h = rdma_devices(&efa);
        assert_eq!(h.len(), 3);
        assert_eq!(h[0].name, "mlx5_0");
        assert_eq!(h[1].uverbs, vec!["/dev/infiniband/uverbs0"]);
        assert!(h[1].active && !h[0].active, "the mlx5 port is DOWN");
        let drivers: Vec<&str> = h.iter().map(|x| x.driver.as_str()).collect();
        assert_eq!(detect_fabric(&drivers), Some(Fabric::Efa));

        let ib = fixture(
            "ib",
            &[
                ("mlx5_0", "mlx5_core", &["uverbs0"]),
                ("mlx5_1", "mlx5_core", &["uverbs1"]),
            ],
        );
        let drivers: Vec<String> = rdma_devices(&ib).into_iter().map(|x| x.driver).collect();
        assert_eq!(detect_fabric(&drivers), Some(Fabric::Ib));

        let none = fixture("none", &[]);
        assert!(rdma_devices(&none).is_empty());
        for d in [efa, ib, none] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn imex_facts_come_from_proc_devices_and_the_channel_directory() {
        let root = std::env::temp_dir().join(format!("lg-imex-host-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (proc, dev) = (root.join("proc"), root.join("dev"));
        std::fs::create_dir_all(dev.join("nvidia-caps-imex-channels")).unwrap();
        std::fs::create_dir_all(&proc).unwrap();
        // A node whose driver offers no IMEX channels: nothing else is read.
        std::fs::write(proc.join("devices"), "Character devices:\n195 nvidia\n").unwrap();
        assert_eq!(imex(&proc, &dev), (None, vec![]));
        // A GB300 node: major 509, channel0 and channel1 (plain files stand in for the devices).
        std::fs::write(
            proc.join("devices"),
            "Character devices:\n195 nvidia\n509 nvidia-caps-imex-channels\n",
        )
        .unwrap();
        for c in ["channel1", "channel0", "README"] {
            std::fs::write(dev.join("nvidia-caps-imex-channels").join(c), "").unwrap();
        }
        assert_eq!(
            imex(&proc, &dev),
            (Some(509), vec!["channel0".into(), "channel1".into()])
        );
        std::fs::remove_dir_all(dev.join("nvidia-caps-imex-channels")).unwrap();
        assert_eq!(imex(&proc, &dev), (Some(509), vec![]));
        let _ = std::fs::remove_dir_all(root);
    }
}

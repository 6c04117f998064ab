//! Host I/O shared by the SPANK plugin and the agent (feature `host`; the process runner also needs
//! feature `process`): bounded, non-blocking file reads ([`files`]), the RDMA NICs under sysfs
//! ([`rdma`]), slurm.conf with its includes ([`slurm_conf`]), the hostname, child processes under a deadline ([`process`]), and [`Roots`], the one
//! place gatherers take `/sys`, `/proc`, `/dev` and `/etc` from, so tests point them at fixture
//! trees (as node_exporter's `--path.sysfs`/`--path.procfs` flags do).
//!
//! Nothing here starts a thread or needs an async runtime (the plugin runs inside srun and
//! slurmstepd), and nothing blocks without a bound: files are opened `O_NONBLOCK` and refused unless
//! regular, reads are capped, children are polled until a deadline and then killed.

pub mod files;
pub mod mpi;
#[cfg(feature = "process")]
pub mod process;
pub mod rdma;
pub mod slurm_conf;

use std::path::{Path, PathBuf};

/// Where the kernel's and the system's trees are: `/sys`, `/proc`, `/dev`, `/etc` on a real node
/// ([`Roots::system`]), or the same layout under one directory in a test ([`Roots::under`]). Paths
/// shown to users keep the system names (`/dev/infiniband/uverbs0`); only what is read moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// sysfs (`/sys`).
    pub sys: PathBuf,
    /// procfs (`/proc`).
    pub proc: PathBuf,
    /// Device files (`/dev`).
    pub dev: PathBuf,
    /// System configuration (`/etc`).
    pub etc: PathBuf,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots::system()
    }
}

impl Roots {
    /// The running system's trees: `/sys`, `/proc`, `/dev`, `/etc`.
    pub fn system() -> Roots {
        Roots {
            sys: "/sys".into(),
            proc: "/proc".into(),
            dev: "/dev".into(),
            etc: "/etc".into(),
        }
    }

    /// The four trees as `sys`, `proc`, `dev` and `etc` under `base` (a fixture tree).
    pub fn under(base: &Path) -> Roots {
        Roots {
            sys: base.join("sys"),
            proc: base.join("proc"),
            dev: base.join("dev"),
            etc: base.join("etc"),
        }
    }

    /// Where a system path is read: `/dev/gdrdrv` → `<dev>/gdrdrv`, and likewise under `/sys`,
    /// `/proc` and `/etc`; any other path is returned unchanged.
    pub fn map(&self, system_path: impl AsRef<Path>) -> PathBuf {
        let system_path = system_path.as_ref();
        for (prefix, root) in [
            ("/sys", &self.sys),
            ("/proc", &self.proc),
            ("/dev", &self.dev),
            ("/etc", &self.etc),
        ] {
            if let Ok(rest) = system_path.strip_prefix(prefix) {
                return root.join(rest);
            }
        }
        system_path.to_path_buf()
    }
}

/// This machine's short host name: `<proc>/sys/kernel/hostname` up to its first dot (what slurmd
/// uses as its NodeName by default, slurm.conf(5) "NodeName"). Empty when unreadable.
pub fn short_hostname(roots: &Roots) -> String {
    files::read_small(&roots.proc.join("sys/kernel/hostname"), 4096)
        .map(|h| h.trim().split('.').next().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// Whether the systemd `unit` is enabled by the administrator: a link in one of the usual targets'
/// `.wants/` directories under `<etc>/systemd/system` (systemctl(1), "enable"). One `stat` per target,
/// no D-Bus, so the plugin may ask it too.
pub fn systemd_unit_enabled(roots: &Roots, unit: &str) -> bool {
    [
        "multi-user.target.wants",
        "default.target.wants",
        "graphical.target.wants",
    ]
    .iter()
    .any(|w| roots.etc.join("systemd/system").join(w).join(unit).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enabled_unit_is_a_link_in_a_targets_wants() {
        let base = std::env::temp_dir().join(format!("lg-unit-enabled-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let roots = Roots::under(&base);
        assert!(!systemd_unit_enabled(&roots, "nvidia-imex.service"));
        let wants = base.join("etc/systemd/system/multi-user.target.wants");
        std::fs::create_dir_all(&wants).unwrap();
        std::fs::write(wants.join("nvidia-imex.service"), "").unwrap();
        assert!(systemd_unit_enabled(&roots, "nvidia-imex.service"));
        assert!(!systemd_unit_enabled(
            &roots,
            "nvidia-fabricmanager.service"
        ));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn system_paths_map_into_a_fixture_tree() {
        let r = Roots::under(Path::new("/t"));
        assert_eq!(
            r.map(Path::new("/dev/gdrdrv")),
            PathBuf::from("/t/dev/gdrdrv")
        );
        assert_eq!(
            r.map(Path::new("/proc/meminfo")),
            PathBuf::from("/t/proc/meminfo")
        );
        assert_eq!(r.map(Path::new("/etc")), PathBuf::from("/t/etc"));
        // Only whole components match, and other trees stay where they are.
        assert_eq!(r.map(Path::new("/devices")), PathBuf::from("/devices"));
        assert_eq!(r.map(Path::new("/run/x")), PathBuf::from("/run/x"));
        assert_eq!(
            Roots::system().map(Path::new("/sys/class")),
            PathBuf::from("/sys/class")
        );
    }

    #[test]
    fn the_hostname_is_cut_at_its_first_dot() {
        let base = std::env::temp_dir().join(format!("lg-core-host-{}", std::process::id()));
        let r = Roots::under(&base);
        assert_eq!(short_hostname(&r), "");
        std::fs::create_dir_all(r.proc.join("sys/kernel")).unwrap();
        std::fs::write(
            r.proc.join("sys/kernel/hostname"),
            "gpu-a01.cluster.example\n",
        )
        .unwrap();
        assert_eq!(short_hostname(&r), "gpu-a01");
        let _ = std::fs::remove_dir_all(&base);
    }
}

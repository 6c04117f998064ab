//! The RDMA NICs of a node, from sysfs: `<sys>/class/infiniband/<nic>` with its kernel driver
//! (`device/driver`, a link named for the driver: `mlx5_core`, `efa`, …), its verbs devices
//! (`device/infiniband_verbs/uverbsN`, whose device files are `/dev/infiniband/uverbsN`) and its
//! ports' states (`ports/<n>/state`, e.g. `4: ACTIVE`). Linux kernel documentation,
//! `Documentation/ABI/stable/sysfs-class-infiniband`.

use super::files::read_bytes;
use std::path::Path;

/// One RDMA NIC as sysfs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// `mlx5_0`, `rdmap16s27`, `efa_0`, …
    pub name: String,
    /// Kernel driver (`efa`, `mlx5_core`, …), empty when unknown.
    pub driver: String,
    /// The names in `device/infiniband_verbs` (`uverbs0`), sorted; `None` when that directory is
    /// missing (ib_uverbs is not loaded).
    pub verbs: Option<Vec<String>>,
    /// `(port number, state)` for at most 16 ports, by number; the state as the kernel writes it,
    /// trimmed (`4: ACTIVE`, `1: DOWN`).
    pub ports: Vec<(u32, String)>,
}

impl Nic {
    /// Whether any port is `ACTIVE`.
    pub fn active(&self) -> bool {
        self.ports.iter().any(|(_, s)| s.contains("ACTIVE"))
    }
}

/// The RDMA NICs under `<sys>/class/infiniband`, sorted by name, at most `max` of them (the plugin
/// bounds its work per launch). Empty when the directory is missing (no RDMA stack).
pub fn nics(sys: &Path, max: usize) -> Vec<Nic> {
    let Ok(rd) = std::fs::read_dir(sys.join("class/infiniband")) else {
        return vec![];
    };
    let mut out: Vec<Nic> = rd
        .filter_map(Result::ok)
        .take(max)
        .map(|e| {
            let dev = e.path().join("device");
            let driver = std::fs::read_link(dev.join("driver"))
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default();
            let verbs = std::fs::read_dir(dev.join("infiniband_verbs"))
                .ok()
                .map(|rd| {
                    let mut v: Vec<String> = rd
                        .filter_map(Result::ok)
                        .take(64)
                        .map(|u| u.file_name().to_string_lossy().into_owned())
                        .collect();
                    v.sort();
                    v
                });
            let mut ports: Vec<(u32, String)> = std::fs::read_dir(e.path().join("ports"))
                .map(|rd| {
                    rd.filter_map(Result::ok)
                        .take(16)
                        .filter_map(|p| {
                            let n = p.file_name().to_string_lossy().parse::<u32>().ok()?;
                            let st = read_bytes(&p.path().join("state"), 256)
                                .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                                .unwrap_or_default();
                            Some((n, st))
                        })
                        .collect()
                })
                .unwrap_or_default();
            ports.sort();
            Nic {
                name: e.file_name().to_string_lossy().into_owned(),
                driver,
                verbs,
                ports,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// `(name, driver, verbs, port states)`; `verbs` `None`: no `infiniband_verbs` directory.
    type NicSpec<'a> = (&'a str, &'a str, Option<&'a [&'a str]>, &'a [&'a str]);

    /// A sysfs tree with one NIC per [`NicSpec`].
    fn sysfs(name: &str, nics: &[NicSpec]) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("lg-core-rdma-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("class/infiniband")).unwrap();
        for (nic, driver, verbs, ports) in nics {
            let dev = root.join(format!("devices/pci0000:00/{nic}"));
            std::fs::create_dir_all(&dev).unwrap();
            if let Some(verbs) = verbs {
                for u in *verbs {
                    std::fs::create_dir_all(dev.join("infiniband_verbs").join(u)).unwrap();
                }
            }
            let drv = root.join("bus/pci/drivers").join(driver);
            std::fs::create_dir_all(&drv).unwrap();
            symlink(&drv, dev.join("driver")).unwrap();
            let class = root.join("class/infiniband").join(nic);
            for (i, st) in ports.iter().enumerate() {
                let p = class.join(format!("ports/{}", i + 1));
                std::fs::create_dir_all(&p).unwrap();
                std::fs::write(p.join("state"), format!("{st}\n")).unwrap();
            }
            std::fs::create_dir_all(&class).unwrap();
            symlink(&dev, class.join("device")).unwrap();
        }
        root
    }

    #[test]
    fn nics_come_with_driver_verbs_and_port_states_sorted_by_name() {
        let sys = sysfs(
            "mixed",
            &[
                ("mlx5_1", "mlx5_core", None, &["1: DOWN"]),
                (
                    "efa_0",
                    "efa",
                    Some(&["uverbs1", "uverbs0"]),
                    &["4: ACTIVE"],
                ),
                (
                    "mlx5_0",
                    "mlx5_core",
                    Some(&["uverbs2"]),
                    &["1: DOWN", "4: ACTIVE"],
                ),
            ],
        );
        let n = nics(&sys, 64);
        let names: Vec<&str> = n.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["efa_0", "mlx5_0", "mlx5_1"]);
        assert_eq!(n[0].driver, "efa");
        assert_eq!(n[0].verbs, Some(vec!["uverbs0".into(), "uverbs1".into()]));
        assert_eq!(
            n[1].ports,
            vec![(1, "1: DOWN".into()), (2, "4: ACTIVE".into())]
        );
        assert!(n[0].active() && n[1].active() && !n[2].active());
        assert_eq!(
            n[2].verbs, None,
            "no infiniband_verbs: ib_uverbs not loaded"
        );
        assert_eq!(nics(&sys, 1).len(), 1);
        assert!(nics(&sys.join("nowhere"), 64).is_empty());
        let _ = std::fs::remove_dir_all(sys);
    }
}

//! Facts for `node.devices.*`: RDMA devices under `/sys/class/infiniband` with their verbs device
//! nodes, driver and port states, the GPU files gres.conf names, and cgroup.conf beside slurm.conf.

use super::Ctx;
use launchguard_core::host::{rdma, Roots};
use launchguard_core::node::devices::{DeviceFacts, RdmaDevice};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// `(device, driver)` for every RDMA device under `<sys>/class/infiniband` (`efa_0` → `efa`,
/// `mlx5_0` → `mlx5_core`), sorted.
pub fn hcas(roots: &Roots) -> Vec<(String, String)> {
    rdma::nics(&roots.sys, usize::MAX)
        .into_iter()
        .map(|n| (n.name, n.driver))
        .collect()
}

/// Whether a system path (`/dev/infiniband/uverbs0`) is a character device, read under `roots`.
fn is_char(roots: &Roots, p: &Path) -> bool {
    std::fs::metadata(roots.map(p)).is_ok_and(|m| m.file_type().is_char_device())
}

/// Gathers the devices family's facts.
pub fn gather(ctx: &Ctx) -> DeviceFacts {
    let roots = &ctx.roots;
    let nics = rdma::nics(&roots.sys, usize::MAX);
    let mut uverbs = vec![];
    for nic in &nics {
        let Some(verbs) = &nic.verbs else {
            // No verbs entry at all: ib_uverbs is not loaded, exactly what the check is for.
            uverbs.push((
                nic.name.clone(),
                "/dev/infiniband/uverbs? (ib_uverbs not loaded)".into(),
                false,
            ));
            continue;
        };
        for n in verbs {
            let dev = format!("/dev/infiniband/{n}");
            uverbs.push((
                nic.name.clone(),
                dev.clone(),
                is_char(roots, Path::new(&dev)),
            ));
        }
    }
    let (_, conf) = ctx.slurm_conf();
    let node = ctx.slurm_node_name(conf.as_ref().ok());
    let gpus = super::slurm_conf::gres_gpu_files(&ctx.slurm_dir(), &node)
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            let ok = is_char(roots, Path::new(&f));
            (f, ok)
        })
        .collect();
    let rdma = nics
        .into_iter()
        .map(|n| RdmaDevice {
            name: n.name,
            driver: n.driver,
            ports: n.ports.into_iter().map(|(_, s)| s).collect(),
        })
        .collect();
    let cgroup_conf =
        super::util::read_bytes(&ctx.slurm_dir().join("cgroup.conf"), super::util::MAX_READ)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
    DeviceFacts {
        uverbs,
        gpus,
        rdma,
        cgroup_conf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::os::unix::fs::symlink;

    /// A node's `/sys` and `/dev` in a fixture tree: an InfiniBand NIC whose verbs device file is
    /// missing from `/dev`, and a second one without `infiniband_verbs` (ib_uverbs not loaded).
    #[test]
    fn devices_are_gathered_from_a_fixture_tree() {
        let base = std::env::temp_dir().join(format!("lg-devices-fixture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let roots = Roots::under(&base);
        let drv = roots.sys.join("bus/pci/drivers/mlx5_core");
        std::fs::create_dir_all(&drv).unwrap();
        for (nic, verbs, state) in [
            ("mlx5_0", Some("uverbs0"), "4: ACTIVE"),
            ("mlx5_1", None, "1: DOWN"),
        ] {
            let dev = roots.sys.join(format!("devices/pci0000:00/{nic}"));
            std::fs::create_dir_all(&dev).unwrap();
            if let Some(v) = verbs {
                std::fs::create_dir_all(dev.join("infiniband_verbs").join(v)).unwrap();
            }
            symlink(&drv, dev.join("driver")).unwrap();
            let class = roots.sys.join("class/infiniband").join(nic);
            std::fs::create_dir_all(class.join("ports/1")).unwrap();
            std::fs::write(class.join("ports/1/state"), format!("{state}\n")).unwrap();
            symlink(&dev, class.join("device")).unwrap();
        }
        std::fs::create_dir_all(roots.dev.join("infiniband")).unwrap();
        // A plain file where the character device should be: not a verbs device.
        std::fs::write(roots.dev.join("infiniband/uverbs0"), "").unwrap();

        let ctx = Ctx::with_roots(Config::default(), roots.clone());
        assert_eq!(
            hcas(&roots),
            vec![
                ("mlx5_0".to_string(), "mlx5_core".to_string()),
                ("mlx5_1".to_string(), "mlx5_core".to_string())
            ]
        );
        let f = gather(&ctx);
        assert_eq!(
            f.uverbs,
            vec![
                ("mlx5_0".into(), "/dev/infiniband/uverbs0".into(), false),
                (
                    "mlx5_1".into(),
                    "/dev/infiniband/uverbs? (ib_uverbs not loaded)".into(),
                    false
                ),
            ]
        );
        let ports: Vec<(&str, &[String])> = f
            .rdma
            .iter()
            .map(|d| (d.name.as_str(), d.ports.as_slice()))
            .collect();
        assert_eq!(
            ports,
            vec![
                ("mlx5_0", &["4: ACTIVE".to_string()][..]),
                ("mlx5_1", &["1: DOWN".to_string()][..])
            ]
        );
        // The same tree read as the system's would find none of this.
        assert!(hcas(&Roots::under(&base.join("empty"))).is_empty());

        // The hostname comes from the fixture's /proc too.
        std::fs::create_dir_all(roots.proc.join("sys/kernel")).unwrap();
        std::fs::write(
            roots.proc.join("sys/kernel/hostname"),
            "fixture-n07.example\n",
        )
        .unwrap();
        if std::env::var_os("SLURMD_NODENAME").is_none() {
            assert_eq!(ctx.slurm_node_name(None), "fixture-n07");
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}

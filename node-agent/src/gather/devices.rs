//! Facts for `node.devices.*`: RDMA devices under `/sys/class/infiniband` with their verbs device
//! nodes, driver and port states, the GPU files gres.conf names, and cgroup.conf beside slurm.conf.

use super::Ctx;
use launchguard_core::node::devices::{DeviceFacts, RdmaDevice};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// `(device, driver)` for every RDMA device (`efa_0` → `efa`, `mlx5_0` → `mlx5_core`).
pub fn hcas() -> Vec<(String, String)> {
    let Ok(rd) = std::fs::read_dir("/sys/class/infiniband") else {
        return vec![];
    };
    let mut v: Vec<(String, String)> = rd
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let driver = std::fs::read_link(e.path().join("device/driver"))
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default();
            (name, driver)
        })
        .collect();
    v.sort();
    v
}

fn is_char(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

/// Gathers the devices family's facts.
pub fn gather(ctx: &Ctx) -> DeviceFacts {
    let mut uverbs = vec![];
    for (hca, _) in hcas() {
        let dir = Path::new("/sys/class/infiniband")
            .join(&hca)
            .join("device/infiniband_verbs");
        let Ok(rd) = std::fs::read_dir(&dir) else {
            // No verbs entry at all: ib_uverbs is not loaded, exactly what the check is for.
            uverbs.push((
                hca.clone(),
                "/dev/infiniband/uverbs? (ib_uverbs not loaded)".into(),
                false,
            ));
            continue;
        };
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let dev = format!("/dev/infiniband/{n}");
            uverbs.push((hca.clone(), dev.clone(), is_char(Path::new(&dev))));
        }
    }
    let (_, conf) = ctx.slurm_conf();
    let node = ctx.slurm_node_name(conf.as_ref().ok());
    let gpus = super::slurm_conf::gres_gpu_files(&ctx.slurm_dir(), &node)
        .unwrap_or_default()
        .into_iter()
        .map(|f| {
            let ok = is_char(Path::new(&f));
            (f, ok)
        })
        .collect();
    let rdma = hcas()
        .into_iter()
        .map(|(name, driver)| {
            let mut ports: Vec<(u32, String)> =
                std::fs::read_dir(Path::new("/sys/class/infiniband").join(&name).join("ports"))
                    .map(|rd| {
                        rd.flatten()
                            .take(16)
                            .filter_map(|p| {
                                let n = p.file_name().to_string_lossy().parse::<u32>().ok()?;
                                let st = super::util::read_bytes(&p.path().join("state"), 256)
                                    .ok()
                                    .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                                    .unwrap_or_default();
                                Some((n, st))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
            ports.sort();
            RdmaDevice {
                name,
                driver,
                ports: ports.into_iter().map(|(_, s)| s).collect(),
            }
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

//! `node.devices.*`: device files the node must have (the AWS EFA user guide and rdma-core: `/dev/infiniband/uverbs*`
//! for every RDMA device, or EFA/IB traffic cannot start; the GPU files gres.conf names, or jobs get no GPUs).

use super::{Outcome, Status};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.devices.uverbs",
        "a /dev/infiniband/uverbsN character device for each RDMA device in /sys/class/infiniband",
    ),
    (
        "node.devices.gpus",
        "every GPU device file gres.conf names exists and is a character device",
    ),
    (
        "node.devices.constrain",
        "GPUs handed out as GRES are fenced per job (cgroup.conf ConstrainDevices=yes)",
    ),
];

/// One RDMA device under `/sys/class/infiniband`, as the agent reports it (a fact, not a verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaDevice {
    /// `rdmap16s27`, `mlx5_0`, …
    pub name: String,
    /// Kernel driver (`device/driver` link), empty when unknown.
    pub driver: String,
    /// Each port's state (`ports/N/state`, e.g. `4: ACTIVE`, `1: DOWN`), in port order.
    pub ports: Vec<String>,
}

impl RdmaDevice {
    /// `mlx5_0 mlx5_core DOWN`: name, driver and the port states without their numeric code.
    pub fn describe(&self) -> String {
        let states: Vec<&str> = self
            .ports
            .iter()
            .map(|p| p.split_once(':').map_or(p.as_str(), |(_, s)| s).trim())
            .collect();
        format!(
            "{} {} {}",
            self.name,
            if self.driver.is_empty() {
                "?"
            } else {
                &self.driver
            },
            if states.is_empty() {
                "no-ports".to_string()
            } else {
                states.join("/")
            }
        )
    }
}

/// `ConstrainDevices` from cgroup.conf's text (`key=value` lines, keys case-insensitive, `#`
/// comments): `true` only for `yes`; Slurm's default is `no` (cgroup.conf(5)).
pub fn constrain_devices(cgroup_conf: &str) -> bool {
    let mut on = false;
    for line in cgroup_conf.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some((k, v)) = line.split_once('=') {
            if k.trim().eq_ignore_ascii_case("ConstrainDevices") {
                on = v.trim().eq_ignore_ascii_case("yes");
            }
        }
    }
    on
}

/// Everything the devices family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    /// `(RDMA device, expected /dev path, is a char device)` for every HCA's verbs device.
    pub uverbs: Vec<(String, String, bool)>,
    /// `(GPU file from gres.conf, is a char device)`.
    pub gpus: Vec<(String, bool)>,
    /// Every RDMA device with its driver and port states (reported as facts).
    pub rdma: Vec<RdmaDevice>,
    /// cgroup.conf's text beside slurm.conf; `None` when there is none.
    pub cgroup_conf: Option<String>,
}

/// Judges the devices family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &DeviceFacts) -> Vec<Outcome> {
    let missing: Vec<String> = f
        .uverbs
        .iter()
        .filter(|(_, _, ok)| !ok)
        .map(|(hca, p, _)| format!("{p} ({hca})"))
        .collect();
    let gpus: Vec<&str> = f
        .gpus
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(p, _)| p.as_str())
        .collect();
    let unfenced = !f.gpus.is_empty() && !f.cgroup_conf.as_deref().is_some_and(constrain_devices);
    vec![
        if missing.is_empty() {
            Outcome::ok("node.devices.uverbs")
        } else {
            Outcome::new(
                "node.devices.uverbs",
                Status::Critical,
                format!("missing RDMA verbs device(s): {}", crate::finding::clip(&missing.join(", "), 120)),
                "NCCL cannot open the EFA/InfiniBand device and falls back to TCP sockets (or fails)",
                "load the driver's user-space module (modprobe ib_uverbs) and check udev rules for /dev/infiniband",
            )
        },
        if gpus.is_empty() {
            Outcome::ok("node.devices.gpus")
        } else {
            Outcome::new(
                "node.devices.gpus",
                Status::Critical,
                format!("GPU device file(s) named in gres.conf are missing: {}", crate::finding::clip(&gpus.join(", "), 120)),
                "slurmd cannot hand these GPUs to jobs; jobs that get them fail at CUDA init",
                "load the NVIDIA driver (nvidia-smi; nvidia-modprobe -u -c=0), or fix File= in gres.conf",
            )
        },
        if !unfenced {
            Outcome::ok("node.devices.constrain")
        } else {
            Outcome::new(
                "node.devices.constrain",
                Status::Warning,
                format!(
                    "gres.conf hands out {} GPU file(s) but {}",
                    f.gpus.len(),
                    if f.cgroup_conf.is_some() {
                        "cgroup.conf does not set ConstrainDevices=yes"
                    } else {
                        "there is no cgroup.conf (ConstrainDevices defaults to no)"
                    }
                ),
                "every job on the node can open every GPU, so jobs share GPUs they were not given and CUDA_VISIBLE_DEVICES is the only fence",
                "set ConstrainDevices=yes in cgroup.conf (with TaskPlugin=task/cgroup in slurm.conf) and restart slurmd",
            )
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_uverbs_and_gpus_are_critical() {
        let f = DeviceFacts {
            uverbs: vec![
                ("efa_0".into(), "/dev/infiniband/uverbs0".into(), true),
                ("efa_1".into(), "/dev/infiniband/uverbs1".into(), false),
            ],
            gpus: vec![("/dev/nvidia0".into(), true)],
            rdma: vec![],
            cgroup_conf: Some("ConstrainDevices=yes\n".into()),
        };
        let out = judge(&f);
        assert_eq!(out[0].status, Status::Critical);
        assert!(out[0].what.contains("uverbs1 (efa_1)"));
        assert_eq!(out[1].status, Status::Ok);
        assert!(judge(&DeviceFacts {
            uverbs: vec![],
            gpus: vec![],
            rdma: vec![],
            cgroup_conf: None,
        })
        .iter()
        .all(|o| o.status == Status::Ok));
    }

    #[test]
    fn gpus_as_gres_without_constrain_devices_warn() {
        let f = |conf: Option<&str>| DeviceFacts {
            uverbs: vec![],
            gpus: vec![("/dev/nvidia0".into(), true), ("/dev/nvidia1".into(), true)],
            rdma: vec![],
            cgroup_conf: conf.map(str::to_string),
        };
        let status = |conf| judge(&f(conf))[2].status;
        assert_eq!(status(None), Status::Warning);
        assert_eq!(
            status(Some("CgroupAutomount=yes\nConstrainCores=yes\n")),
            Status::Warning
        );
        assert_eq!(status(Some("ConstrainDevices=no\n")), Status::Warning);
        assert_eq!(
            status(Some("constraindevices = YES # fenced\n")),
            Status::Ok
        );
        assert_eq!(
            status(Some("ConstrainDevices=yes\nConstrainDevices=no\n")),
            Status::Warning
        );
        let o = &judge(&f(None))[2];
        assert!(o.what.contains("no cgroup.conf"), "{}", o.what);
        assert_eq!(judge(&f(None))[2].id, "node.devices.constrain");
    }

    #[test]
    fn rdma_devices_are_described_as_facts() {
        let d = RdmaDevice {
            name: "mlx5_0".into(),
            driver: "mlx5_core".into(),
            ports: vec!["1: DOWN".into()],
        };
        assert_eq!(d.describe(), "mlx5_0 mlx5_core DOWN");
        let e = RdmaDevice {
            name: "rdmap16s27".into(),
            driver: "efa".into(),
            ports: vec!["4: ACTIVE".into()],
        };
        assert_eq!(e.describe(), "rdmap16s27 efa ACTIVE");
    }
}

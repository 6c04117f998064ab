//! `node.devices.*`: device files the node must have (seed 000, Step 3: `/dev/infiniband/uverbs*` for
//! every RDMA device, or EFA/IB traffic cannot start; the GPU files gres.conf names, or jobs get no GPUs).

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
];

/// Everything the devices family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFacts {
    /// `(RDMA device, expected /dev path, is a char device)` for every HCA's verbs device.
    pub uverbs: Vec<(String, String, bool)>,
    /// `(GPU file from gres.conf, is a char device)`.
    pub gpus: Vec<(String, bool)>,
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
        };
        let out = judge(&f);
        assert_eq!(out[0].status, Status::Critical);
        assert!(out[0].what.contains("uverbs1 (efa_1)"));
        assert_eq!(out[1].status, Status::Ok);
        assert!(judge(&DeviceFacts {
            uverbs: vec![],
            gpus: vec![]
        })
        .iter()
        .all(|o| o.status == Status::Ok));
    }
}

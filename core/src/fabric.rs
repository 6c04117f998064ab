//! The RDMA fabric NCCL runs over between nodes: one type for the node check
//! ([`crate::checks::nccl_env`], detected from the HCA drivers), the plugin's `fabric=` setting
//! ([`crate::policy::FabricChoice`] adds `auto`, which is a policy, not a fabric) and
//! `launchguard nccl check --fabric` (which reads its NCCL log against it).

/// The node's RDMA fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum Fabric {
    /// AWS Elastic Fabric Adapter (driver `efa`), used through aws-ofi-nccl / libfabric: NCCL logs
    /// `Using network Libfabric`, provider `efa`.
    Efa,
    /// InfiniBand / RoCE (drivers such as `mlx5_core`), used through NCCL's IB transport: NCCL logs
    /// `Using network IB`.
    Ib,
}

impl Fabric {
    /// Both, in the order `--fabric` lists them.
    pub const ALL: [Fabric; 2] = [Fabric::Efa, Fabric::Ib];

    /// `efa` or `ib`.
    pub fn as_str(self) -> &'static str {
        match self {
            Fabric::Efa => "efa",
            Fabric::Ib => "ib",
        }
    }
}

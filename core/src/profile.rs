//! SKU profiles: the node shapes and NCCL settings vendors validated, named by the `profile=`
//! plugstack argument. Their own module, below both [`crate::policy`] (which validates the name) and
//! [`crate::checks`] (whose rules consult the settings), so neither imports the other for them.

/// A SKU profile: the node shape and NCCL settings a vendor validated for it. Named by the
/// `profile=` plugstack argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The `profile=` value, e.g. `gb300-mnnvl`.
    pub name: &'static str,
    /// What it is.
    pub describe: &'static str,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// CPUs per task (one task per GPU): the `-c` advice when the node's size is unknown.
    pub cpus_per_task: u32,
    /// `(variable, value)` settings the profile uses on purpose; rules that would flag them list the
    /// profile in [`crate::checks::nccl_env::Rule::unless_profile`].
    pub settings: &'static [(&'static str, &'static str)],
}

/// The built-in SKU profiles.
///
/// `gb300-mnnvl`: Grace-Blackwell GB300 racks with multi-node NVLink (MNNVL) and an InfiniBand NDR
/// fabric between racks, as the Azure ND GB300 v6 nccl-tests configuration sets it up: 4 GPUs per
/// node, 4 tasks per node, 24 CPUs per task; NCCL_MNNVL_ENABLE=1 and NCCL_NVLS_ENABLE=1 (NVLink
/// SHARP across the rack), NCCL_SHM_DISABLE=1 (NVLink is faster than shared memory), NCCL_IB_SL=1
/// (the fabric's service level), NCCL_NET_GDR_C2C=1 (GPUDirect RDMA over Grace's C2C link).
pub fn profiles() -> Vec<Profile> {
    vec![Profile {
        name: "gb300-mnnvl",
        describe: "Grace-Blackwell GB300 with multi-node NVLink: 4 GPUs/node, 24 CPUs per task",
        gpus_per_node: 4,
        cpus_per_task: 24,
        settings: &[
            ("NCCL_MNNVL_ENABLE", "1"),
            ("NCCL_NVLS_ENABLE", "1"),
            ("NCCL_SHM_DISABLE", "1"),
            ("NCCL_IB_SL", "1"),
            ("NCCL_NET_GDR_C2C", "1"),
        ],
    }]
}

/// The built-in profile named `name` (lower-case), if any.
pub fn profile(name: &str) -> Option<Profile> {
    profiles().into_iter().find(|p| p.name == name)
}

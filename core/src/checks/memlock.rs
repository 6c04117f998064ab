//! `launch.memlock`: a multi-node GPU step on an RDMA node whose tasks may lock too little memory.
//!
//! NCCL's IB and EFA transports (and UCX, libfabric) register host memory with the NIC; the kernel
//! charges it to `RLIMIT_MEMLOCK` and registration fails with `ibv_reg_mr … Cannot allocate memory`
//! when the limit is low (NVIDIA's MLNX_OFED/DOCA user manual and AWS's EFA user guide ask for
//! `unlimited`). A task's soft limit is the submitting shell's (`PropagateResourceLimits`, default
//! `ALL`, slurm.conf(5)) capped by its hard limit, which is slurmd's. A single-node step talks over
//! NVLink, PCIe or shared memory, so only steps of several nodes are judged.
//!
//! Judged in `task_init` on the task's own limits (`/proc/self/limits` of the task, parsed by
//! [`crate::rlimit::parse_limits`]): a finite **hard** limit is an error (nothing the user
//! can do inside the job raises it), a finite **soft** limit under an unlimited hard one a warning
//! (the user's `ulimit -l unlimited` fixes it).

use crate::finding::{CheckKind, Finding, Severity};
use crate::rlimit::Limit;

/// What `launch.memlock` judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskMemlock {
    /// The task's soft limit.
    pub soft: Limit,
    /// The task's hard limit.
    pub hard: Limit,
    /// RDMA NICs of the node (`/sys/class/infiniband` names); empty: the check does not apply.
    pub rdma_nics: Vec<String>,
    /// Nodes of the step (`SLURM_STEP_NUM_NODES`).
    pub step_nodes: u32,
    /// Whether the step has GPUs.
    pub gpu_step: bool,
}

const WHY: &str = "NCCL over IB/EFA (and UCX, libfabric) pins host memory against this limit, so registration fails ('ibv_reg_mr … Cannot allocate memory') and the job fails or falls back to TCP";

/// Judges one task's locked-memory limits; at most one finding.
pub fn check(t: &TaskMemlock) -> Vec<Finding> {
    if t.rdma_nics.is_empty() || t.step_nodes < 2 || !t.gpu_step {
        return vec![];
    }
    if t.hard.finite() {
        return vec![Finding {
            check: CheckKind::Memlock,
            severity: Severity::Error,
            what: format!(
                "this multi-node GPU step's tasks may lock only {} of memory (hard limit, from slurmd) on a node with RDMA NICs ({})",
                t.hard.human(),
                t.rdma_nics.join(",")
            ),
            why: WHY.into(),
            fix: "ask the admin to start slurmd with LimitMEMLOCK=infinity (`systemctl edit slurmd`) and restart it; `launchguard check --only node.memlock` shows it on the node".into(),
        }];
    }
    if t.soft.finite() {
        return vec![Finding {
            check: CheckKind::Memlock,
            severity: Severity::Warning,
            what: format!(
                "this multi-node GPU step's tasks may lock only {} of memory (soft limit, copied from the shell that ran srun/sbatch)",
                t.soft.human()
            ),
            why: WHY.into(),
            fix: "run `ulimit -l unlimited` in the batch script before srun (the admin can set PropagateResourceLimitsExcept=MEMLOCK in slurm.conf for everyone)".into(),
        }];
    }
    vec![]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(soft: Limit, hard: Limit) -> TaskMemlock {
        TaskMemlock {
            soft,
            hard,
            rdma_nics: vec!["mlx5_0".into(), "mlx5_1".into()],
            step_nodes: 2,
            gpu_step: true,
        }
    }

    #[test]
    fn a_finite_hard_limit_is_an_error_and_a_finite_soft_one_a_warning() {
        let f = check(&task(Limit::Bytes(8 << 20), Limit::Bytes(8 << 20)));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].what.contains("8 MiB") && f[0].what.contains("mlx5_0,mlx5_1"));
        assert!(f[0].fix.contains("LimitMEMLOCK=infinity"));
        let f = check(&task(Limit::Bytes(64 << 10), Limit::Unlimited));
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].what.contains("64 KiB"));
        assert!(f[0].fix.contains("ulimit -l unlimited"));
        assert!(check(&task(Limit::Unlimited, Limit::Unlimited)).is_empty());
    }

    #[test]
    fn single_node_cpu_only_and_non_rdma_steps_are_not_judged() {
        let low = || task(Limit::Bytes(64 << 10), Limit::Bytes(64 << 10));
        let mut t = low();
        t.step_nodes = 1;
        assert!(check(&t).is_empty());
        let mut t = low();
        t.gpu_step = false;
        assert!(check(&t).is_empty());
        let mut t = low();
        t.rdma_nics.clear();
        assert!(check(&t).is_empty());
    }
}

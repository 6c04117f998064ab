//! Causes of NCCL WARN lines: the WARNs NCCL prints (its sources' `WARN(...)` calls in the socket,
//! InfiniBand, shared-memory and CUDA paths) that name a cause a user can act on, as data. Each rule
//! matches the message of a WARN (what follows `NCCL WARN `) by substrings and gives one finding;
//! a WARN no rule explains still gives the generic `nccl.warn`.
//!
//! Sources: NCCL documentation ("Troubleshooting", "Environment Variables": NCCL_SOCKET_IFNAME,
//! NCCL_IB_*, NCCL_SHM_DISABLE), the InfiniBand verbs completion statuses (`ibv_wc_status_str`, e.g.
//! transport retry counter exceeded), Slurm's slurm.conf(5) (`PropagateResourceLimits`) and
//! systemd.exec(5) (`LimitMEMLOCK=`) for locked memory.

use crate::model::Severity;

/// One cause.
pub struct WarnRule {
    /// Finding ID.
    pub id: &'static str,
    /// Severity of the finding.
    pub severity: Severity,
    /// The WARN message matches when it contains any of these...
    pub any: &'static [&'static str],
    /// ...and none of these.
    pub none: &'static [&'static str],
    /// What happened (the matched WARN is appended, clipped).
    pub what: &'static str,
    /// Why it happens.
    pub why: &'static str,
    /// The fix.
    pub fix: &'static str,
}

/// The table, most specific first; the first rule that matches a WARN explains it.
pub const RULES: &[WarnRule] = &[
    WarnRule {
        id: "nccl.memlock",
        severity: Severity::NoGo,
        none: &[],
        any: &["Call to ibv_reg_mr failed", "Call to ibv_reg_mr_iova2 failed", "Call to ibv_reg_dmabuf_mr failed", "fi_mr_reg failed", "Unable to register memory"],
        what: "NCCL could not register memory with the network card",
        why: "with 'Cannot allocate memory' the task's locked-memory limit (RLIMIT_MEMLOCK) is too low: every task inherits slurmd's own limit, or the submit host's soft limit (PropagateResourceLimits), and other errors mean GPUDirect RDMA is missing (nvidia-peermem or dma-buf)",
        fix: "give slurmd LimitMEMLOCK=infinity (systemctl edit slurmd) and set PropagateResourceLimitsExcept=MEMLOCK in slurm.conf, restart slurmd, then check `srun bash -c 'ulimit -l'` prints unlimited, and for other errors load nvidia-peermem",
    },
    WarnRule {
        id: "nccl.ib_completion_error",
        severity: Severity::NoGo,
        none: &[],
        any: &["Got completion from peer", "Got completion with error"],
        what: "an InfiniBand/RoCE transfer to a peer failed",
        why: "status 12 (transport retry counter exceeded) means the peer's card stopped answering (a link, cable or switch port flapped, the peer node or process died, or RoCE lost packets without flow control), and status 4 (local protection) means the card could not reach the GPU memory it was given (GPUDirect RDMA: nvidia-peermem or dma-buf missing, or PCIe ACS/IOMMU in the way)",
        fix: "take the peer address from the line: check that node's HCA (ibstat, ibv_devinfo: port state and rate) and its kernel log, and isolate the node with `launchguard sweep nccl` (on RoCE also check PFC/ECN and NCCL_IB_GID_INDEX)",
    },
    WarnRule {
        id: "nccl.ib_port_fault",
        severity: Severity::NoGo,
        // NCCL logs a changed GID table and SRQ events and carries on.
        none: &["event on SRQ", "unused for now"],
        any: &["async fatal event"],
        what: "the InfiniBand/RoCE card reported a fatal event",
        why: "the port went down or the card hit a catastrophic error, so NCCL's connections through it are gone",
        fix: "check the card on this node (ibstat, dmesg for mlx5 errors), drain the node if the port flaps, then rerun",
    },
    WarnRule {
        id: "nccl.connect_failed",
        severity: Severity::NoGo,
        none: &[],
        any: &["Connection refused", "No route to host", "Connection timed out", "Network is unreachable", "exceeded error retry count"],
        what: "NCCL could not open a socket connection to another rank",
        why: "a firewall between the nodes, an NCCL_SOCKET_IFNAME interface the other node cannot reach (another subnet, a container bridge), or the peer process already gone",
        fix: "pin NCCL_SOCKET_IFNAME to the interface of the nodes' common network on every node, allow TCP between compute nodes (NCCL listens on ephemeral ports), and check `ip route get <peer address>` on both ends",
    },
    WarnRule {
        id: "nccl.peer_closed",
        severity: Severity::Warning,
        none: &[],
        any: &["Connection closed by remote peer", "Connection reset by peer", "remote process exited"],
        what: "a peer rank closed its NCCL connection",
        why: "NCCL sees the effect, not the cause: the peer rank died first (an exception, an OOM kill, a CUDA error) or its node went away",
        fix: "look for the earliest error of every rank (srun --label, then `launchguard explain` on the whole job output), starting with the peer this line names",
    },
    WarnRule {
        id: "nccl.message_truncated",
        severity: Severity::NoGo,
        none: &[],
        any: &["Message truncated", "message truncated"],
        what: "ranks disagree on the size of a transfer",
        why: "the ranks called different collectives, sizes or orders (an application bug: one rank skipped or added a collective), or on Socket a network that corrupts data",
        fix: "make every rank issue the same collectives in the same order with the same counts (TORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch), and if they do, test the network with nccl-tests",
    },
    WarnRule {
        id: "nccl.shm_failed",
        severity: Severity::NoGo,
        none: &[],
        any: &["shared memory segment", "failed to extend", "failed to create shared memory", "Could not map"],
        what: "NCCL could not create or map its shared-memory segment",
        why: "/dev/shm is too small or full: a container's default 64 MiB, or a tmpfs other jobs filled",
        fix: "give the job a larger /dev/shm (a container runtime's --shm-size, while enroot and Pyxis use the host's) or clean /dev/shm on the node, NCCL_SHM_DISABLE=1 being a last resort that costs bandwidth",
    },
    WarnRule {
        id: "nccl.cuda_failure",
        severity: Severity::NoGo,
        none: &[],
        any: &["Cuda failure", "CUDA failure"],
        what: "NCCL hit a CUDA error",
        why: "'out of memory' means the GPU had no room for NCCL's buffers (the model took it all), while other errors point at the GPU or driver (launchguard check --only node.gpu)",
        fix: "leave GPU memory for NCCL (smaller batch, NCCL_BUFFSIZE lower) for out of memory, and for other errors check the node's GPUs and kernel log for Xid lines",
    },
];

/// The first rule that explains the WARN message `msg`.
pub fn explain(msg: &str) -> Option<&'static WarnRule> {
    RULES
        .iter()
        .find(|r| r.any.iter().any(|n| msg.contains(n)) && !r.none.iter().any(|n| msg.contains(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_explains_its_own_warns_and_not_others() {
        let cases = [
            ("Call to ibv_reg_mr failed with error Cannot allocate memory", "nccl.memlock"),
            ("NET/IB: Got completion from peer 10.0.0.7<55123> with status=transport retry counter exceeded(12) opcode=RDMA_WRITE(1) reqSize=524288 vendor_err=129 req_type=Send hca mlx5_2", "nccl.ib_completion_error"),
            ("NET/IB : mlx5_0:1 async fatal event: port error", "nccl.ib_port_fault"),
            ("bootstrap: connect to 10.0.0.8<42311> failed : Connection refused", "nccl.connect_failed"),
            ("socketProgress: Connection closed by remote peer node2<42830>", "nccl.peer_closed"),
            ("Message truncated : received 4096 bytes instead of 2048", "nccl.message_truncated"),
            ("Error: failed to extend /dev/shm/nccl-AbCdEf to 9637892 bytes, error: No space left on device (28)", "nccl.shm_failed"),
            ("Cuda failure 'out of memory'", "nccl.cuda_failure"),
        ];
        for (msg, id) in cases {
            assert_eq!(explain(msg).map(|r| r.id), Some(id), "{msg}");
        }
        for other in [
            "NET/IB : mlx5_0:1 GID table changed",
            "NET/IB : mlx5_0:1 async fatal event on SRQ, unused for now (0x55d0): local catastrophic error",
            "Bootstrap : no socket interface found",
            "Failed to initialize any NET plugin",
            "NET/OFI aws-ofi-nccl initialization failed",
        ] {
            assert!(explain(other).is_none(), "{other}");
        }
        for r in RULES {
            for t in [r.what, r.why, r.fix] {
                assert!(!t.contains(';') && !t.contains('\n'), "{}: {t}", r.id);
            }
        }
    }
}

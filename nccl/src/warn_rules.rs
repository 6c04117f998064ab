//! Causes of NCCL WARN lines: the WARNs NCCL prints (its sources' `WARN(...)` calls in the socket,
//! InfiniBand, shared-memory and CUDA paths) that name a cause a user can act on, as data. Each rule
//! matches the message of a WARN (what follows `NCCL WARN `) by substrings and gives one finding;
//! a WARN no rule explains still gives the generic `nccl.warn`. The table covers the WARNs of
//! NCCL's init, net, transport, bootstrap and proxy code and aws-ofi-nccl's `NCCL_OFI_WARN`s that
//! name a cause (`scripts/catalog.py` measures it against the sources); two `info` rules name WARNs
//! NCCL recovers from by itself (`nccl.ib_event`, `nccl.fallback`), and the last two, the
//! [`RELAYS`], name WARNs with no cause of their own: one that relays an earlier failure
//! (`nccl.follow_on`) and NCCL's own consistency checks (`nccl.internal_error`), each saying which
//! WARN to read instead; they are left out next to a WARN another rule explains.
//!
//! Sources: NCCL documentation ("Troubleshooting", "Environment Variables": NCCL_SOCKET_IFNAME,
//! NCCL_IB_*, NCCL_SHM_DISABLE), the InfiniBand verbs completion statuses (`ibv_wc_status_str`, e.g.
//! transport retry counter exceeded), Slurm's slurm.conf(5) (`PropagateResourceLimits`) and
//! systemd.exec(5) (`LimitMEMLOCK=`) for locked memory, the aws-ofi-nccl and AWS EFA
//! troubleshooting guides for libfabric errors, NVIDIA's Fabric Manager guide for NVLS, and the
//! CUDA programming guide (peer access, IPC) for P2P.

use crate::model::Severity;

/// One cause.
pub struct WarnRule {
    /// Finding ID.
    pub id: &'static str,
    /// Severity of the finding: what happens next (the job fails: NoGo, it runs degraded or NCCL
    /// replaces a setting: Warning, NCCL carries on unharmed: Info).
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
    /// The node or launch checks (`launchguard check --only ID`) that see this cause before a job
    /// runs; empty when none does.
    pub checks: &'static [&'static str],
    /// Whole lines as NCCL or aws-ofi-nccl print them that THIS rule must explain (CI runs them
    /// through the parser and the verdict: `nccl/tests/warn_rule_examples.rs`).
    pub examples: &'static [&'static str],
    /// Lines that must NOT give this rule's ID.
    pub counter: &'static [&'static str],
}

/// The table, most specific first; the first rule that matches a WARN explains it.
pub const RULES: &[WarnRule] = &[
    WarnRule {
        id: "nccl.ib_event",
        severity: Severity::Info,
        none: &[],
        any: &["GID table changed", "Got non-fatal async event", "async fatal event on SRQ, unused for now", "unknown event type", "It might be a CTS message"],
        what: "the InfiniBand/RoCE card reported an event NCCL handles itself",
        why: "a changed GID table (an address added to or removed from a RoCE port), a non-fatal event, or an event on a queue NCCL does not use leaves NCCL's connections working",
        fix: "nothing for this line alone: if the job then fails, the WARN after it names the cause",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN NET/IB : mlx5_0:1 GID table changed",
            "gpu-a:4101:4190 [3] NCCL WARN NET/IB : mlx5_3:1 Got non-fatal async event: port active(9)",
            "gpu-a:4101:4190 [1] NCCL WARN NET/IB : mlx5_1:1 async fatal event on SRQ, unused for now (0x55d0aa10): local catastrophic error",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : mlx5_0:1 async fatal event: port error"],
    },
    WarnRule {
        id: "nccl.memlock",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "Call to ibv_reg_mr failed", "Call to ibv_reg_mr_iova2 failed", "Call to ibv_reg_dmabuf_mr failed", "fi_mr_reg failed",
            "Unable to register memory", "Could not register memory on", "Couldn't register memory region",
            "Failed to register memory for the control mailbox", "Could not register memory for control mailbox",
            "Could not register dummy buffer for flush", "fi_mr_enable failed", "freelist extension registration failed",
            "Failed call to reg_mr", "Unable to enable MR", "Unable to bind MR to EP", "fi_mr_bind (",
        ],
        what: "NCCL could not register memory with the network card",
        why: "with 'Cannot allocate memory' the task's locked-memory limit (RLIMIT_MEMLOCK) is too low: every task inherits slurmd's own limit, or the submit host's soft limit (PropagateResourceLimits), other errors mean GPUDirect RDMA is missing (nvidia-peermem or dma-buf), and on EFA 'Invalid argument' with NCCL 2.19+ is a Libfabric older than EFA installer 1.29.1",
        fix: "give slurmd LimitMEMLOCK=infinity (systemctl edit slurmd) and set PropagateResourceLimitsExcept=MEMLOCK in slurm.conf, restart slurmd, then check `srun bash -c 'ulimit -l'` prints unlimited, and for other errors load nvidia-peermem or upgrade the EFA installer (FI_EFA_SET_CUDA_SYNC_MEMOPS=0 works around the old Libfabric)",
        checks: &["node.memlock.slurmd", "node.memlock.propagation", "launch.memlock"],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory",
            "gpu-b:7711:7790 [2] NCCL WARN NET/OFI Unable to register memory (type = 2) for device 0. RC: -12, Error: Cannot allocate memory",
            "gpu-b:7711:7790 [2] NCCL WARN NET/OFI Could not register memory on data rail 1 with flag 0",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : Unable to open device mlx5_0"],
    },
    WarnRule {
        id: "nccl.ib_completion_error",
        severity: Severity::NoGo,
        none: &[],
        any: &["Got completion from peer", "Got completion with error", "Got CQE with error", "NET/IB: The error is fatal (", "Unsupported completion status"],
        what: "an InfiniBand/RoCE transfer to a peer failed",
        why: "status 12 (transport retry counter exceeded) means the peer's card stopped answering (a link, cable or switch port flapped, the peer node or process died, or RoCE lost packets without flow control), and status 4 (local protection) means the card could not reach the GPU memory it was given (GPUDirect RDMA: nvidia-peermem or dma-buf missing, or PCIe ACS/IOMMU in the way)",
        fix: "take the peer address from the line: check that node's HCA (ibstat, ibv_devinfo: port state and rate) and its kernel log, and isolate the node with `launchguard sweep nccl` (on RoCE also check PFC/ECN and NCCL_IB_GID_INDEX)",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN NET/IB: Got completion from peer 10.0.0.7<55123> with status=transport retry counter exceeded(12) opcode=RDMA_WRITE(1) reqSize=524288 vendor_err=129 req_type=Send hca mlx5_2",
            "gpu-a:4101:4190 [0] NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f10, comm=0x7f20 (send), wr_id=12, qp_num=301)",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NET/OFI Request 0x7f00 (send) completed with error: err: 5, flags: 0, prov_errno: 4100, strerror: Input/output error, len: 0"],
    },
    WarnRule {
        id: "nccl.ib_port_fault",
        severity: Severity::NoGo,
        none: &[],
        any: &["async fatal event", "failed devices out of", "Could not find a functional device", "Could not find a replacement QP", "is not on a functional device", "Maximum number of probing attempts"],
        what: "the InfiniBand/RoCE card reported a fatal event",
        why: "the port went down or the card hit a catastrophic error, so NCCL's connections through it are gone (with NCCL_IB_RESILIENCY_PORT_FAILOVER=1, NCCL 2.29+ moves traffic to another port of the merged NIC but gives up when no working port is left or more than one failed)",
        fix: "check the card on this node (ibstat, dmesg for mlx5 errors), drain the node if the port flaps, then rerun",
        checks: &[],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : mlx5_0:1 async fatal event: port error"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : mlx5_0:1 async fatal event on SRQ, unused for now (0x55d0aa10): local catastrophic error"],
    },
    WarnRule {
        id: "nccl.gdr_unavailable",
        severity: Severity::NoGo,
        none: &["Failed to initialize GDRCopy"],
        any: &[
            "Unable to retrieve flush buffer fd",
            "Peermem is not supported", "requires DMABUF support", "GDR support reported to NCCL but then couldn't be configured",
            "gdr_pin_buffer failed", "gdr_map failed", "Failed to resolve libgdrapi.so", "not compiled with DMA-BUF support",
            "Failed to set FI_OPT_CUDA_API_PERMITTED", "FI_OPT_CUDA_API_PERMITTED is not declared", "GDR disabled on GDR-supported instance type",
        ],
        what: "GPUDirect RDMA is not available to NCCL",
        why: "the network card reads GPU memory directly only with nvidia-peermem loaded or with DMA-BUF (Linux 5.12+ and NVIDIA's open kernel modules), and a libfabric and plugin built for it, and this node or install has neither",
        fix: "load nvidia-peermem (`modprobe nvidia-peermem`, `lsmod | grep peermem`) or use the open kernel modules on a 5.12+ kernel, and install aws-ofi-nccl and libfabric from the same EFA installer",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Unable to retrieve flush buffer fd (-95)",
            "gpu-a:4101:4190 [0] NCCL WARN Unable to use GIN: Peermem is not supported, and device 0 does not support DMA-BUF.",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI GDR support reported to NCCL but then couldn't be configured on an endpoint.  Cannot continue.",
        ],
        counter: &[
            "gpu-a:4101:4190 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to initialize GDRCopy: Failed to resolve libgdrapi.so symbol(s)",
        ],
    },
    WarnRule {
        id: "nccl.ib_device",
        severity: Severity::NoGo,
        none: &["GDRCOPY", ],
        any: &[
            "NET/IB : Unable to open device", "NET/IB : Unable to query device", "Unable to query port_num", "lib wrapper not initialized",
            "dlvsym failed on", "Error in mlx5dv_get_data_direct_sysfs_path", "failed in ncclIbRoceGetVersionNum",
        ],
        what: "NCCL found an InfiniBand/RoCE card but could not open or query it",
        why: "the job cannot use /dev/infiniband/uverbs* (the step's device cgroup or the container leaves it out), the node's rdma-core (libibverbs) is older than this NCCL needs, or the card is in a bad state",
        fix: "run `ls -l /dev/infiniband` and `ibv_devinfo` inside the job (same container and srun options), give the job the uverbs devices, update rdma-core, and check the port with `ibstat` on the node",
        checks: &["node.devices.uverbs"],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN NET/IB : Unable to open device mlx5_0",
            "gpu-a:4101:4190 [0] NCCL WARN dlvsym failed on ibv_reg_dmabuf_mr - ibv_reg_dmabuf_mr version IBVERBS_1.12",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : mlx5_0:1 GID table changed"],
    },
    WarnRule {
        id: "nccl.ib_qp_failed",
        severity: Severity::NoGo,
        none: &[],
        any: &["Call to ibv_modify_qp failed", "mlx5dv_create_qp failed", "ibv_post_send() failed", "ibv_post_recv() failed", "Call to ibv_poll_cq() returned", "Call to ibv_create_qp failed"],
        what: "the InfiniBand/RoCE card refused a queue pair operation",
        why: "on RoCE most often a GID index (NCCL_IB_GID_INDEX) whose address the peer cannot reach or a port without an IP address, else the port is down or the card ran out of resources (a low locked-memory limit)",
        fix: "on RoCE set NCCL_IB_GID_INDEX to the RoCE v2 IPv4 entry (`show_gids`), check that `ibstat` shows the port Active on both nodes, and that `srun bash -c 'ulimit -l'` prints unlimited",
        checks: &["launch.memlock", "launch.nccl_env"],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID fe80::1, remote GID ::ffff:10.0.0.8"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : Unable to open device mlx5_0"],
    },
    WarnRule {
        id: "nccl.ofi_transfer_failed",
        severity: Severity::NoGo,
        none: &["duplicate id insert", "Failed call to fi_av_insert"],
        any: &[
            "Failed to post recv. RC", "Failed to post ACK send. RC", "Failed call to fi_writemsg", "fi_sendmsg failed with RC", "Failed call to fi_read;",
            "fi_read iget failed", "fi_read iflush failed",
            "completed with error", "Unable to read from fi_cq_readerr", "Unable to retrieve completion queue entries", "Error posting RDMA",
            "Error posting rx buffer", "Error posting flush request", "fi_read failed", "fi_sendmsg (eager) failed", "fi_write_inline failed",
            "Error in call to fi_send", "Unable to insert remote address into address vector", "Unable to insert local address into address vector", "CM connect failed", "Could not send request for device",
            "Unable to issue read operation", "Unable to post receive buffer", "Send close message complete with error",
            "fi_write failed; RC", "fi_writedata failed; RC", "Unable to post request; RC", "Failed to insert address for peer rank",
        ],
        what: "a transfer over the EFA/libfabric network failed",
        why: "the peer process or node died, the peer's address cannot be reached (an EFA security group that does not allow all traffic to and from itself, another subnet), or the EFA device reported an error (the provider error in the line names it)",
        fix: "find the earliest error of every rank (a dead peer shows first), let the EFA security group allow all inbound and outbound traffic to itself, and check the peer node's EFA (`fi_info -p efa`, dmesg for efa errors), isolating it with `launchguard sweep nccl`",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed call to fi_writemsg; RC: -5",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI fi_read iget failed on rail 1: -113",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Request 0x7f00aa (send) completed with error: err: 5, flags: 0, prov_errno: 4100, strerror: Input/output error, len: 0",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Unable to insert remote address into address vector for device 0. RC: -113",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI fi_writedata failed; RC: -113, Error: No route to host",
        ],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Couldn't open a fabric provider. RC: -61, ERROR: No data available"],
    },
    WarnRule {
        id: "nccl.message_truncated",
        severity: Severity::NoGo,
        none: &[],
        any: &["posted incorrect receive info", "collective mismatch error", "Message truncated", "message truncated"],
        what: "ranks disagree on the size of a transfer",
        why: "the ranks called different collectives, sizes or orders (an application bug: one rank skipped or added a collective), NCCL_PROTO or NCCL_ALGO set differently on some ranks, or on Socket a network that corrupts data",
        fix: "make every rank issue the same collectives in the same order with the same counts (TORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch) and give every rank the same NCCL_* variables, and if they do, test the network with nccl-tests",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN Message truncated : received 4096 bytes instead of 2048",
            "gpu-a:4101:4190 [0] NCCL WARN NET/Socket : peer 10.0.0.8<41234> message truncated : receiving 1048576 bytes instead of 65536. If you believe your socket network is in a healthy state, there may be a mismatch in collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN socketProgress: Connection closed by remote peer gpu-b<42830>"],
    },
    WarnRule {
        id: "nccl.comm_id",
        severity: Severity::NoGo,
        none: &[],
        any: &["Invalid NCCL_COMM_ID", "should not be called when NCCL_COMM_ID is set", "No valid <IPv4_or_hostname>:<port> pair found", "No valid [IPv6]:port pair found", "error encountered when getting address info"],
        what: "NCCL could not use the rendezvous address it was given",
        why: "NCCL_COMM_ID must be host:port or [ipv6]:port and its host must resolve on every node, and while it is set the program must not also create a unique ID",
        fix: "set NCCL_COMM_ID to rank 0's node address and a free port, the same on every rank, with a name every node resolves (`getent hosts NAME` there), or unset it and let the framework pass the ID (torchrun's MASTER_ADDR/MASTER_PORT)",
        checks: &["node.hostname.resolves"],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>",
            "gpu-a:4101:4190 [0] NCCL WARN Net : error encountered when getting address info : Name or service not known",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Bootstrap : no socket interface found"],
    },
    WarnRule {
        id: "nccl.no_interface",
        severity: Severity::NoGo,
        none: &[],
        any: &["verify NCCL_OOB_NET_IFNAME", "No usable listening interface found", "NET/IB : No IP interface found"],
        what: "NCCL found no usable network interface for this role",
        why: "NCCL_OOB_NET_IFNAME or NCCL_SOCKET_IFNAME names no interface that is up with an address on this node, or the RoCE/IPoIB port NCCL picked has no IP address",
        fix: "list the node's interfaces with `ip -br addr` and `ibdev2netdev`, set the variable to names that exist and are up on every node (or unset it), and give the RoCE/IPoIB port its address",
        checks: &["launch.nccl_env"],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN no device found matching ib9, verify NCCL_OOB_NET_IFNAME"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>"],
    },
    WarnRule {
        id: "nccl.connect_failed",
        severity: Severity::NoGo,
        none: &["No space left on device", "UDS: "],
        any: &["socketStartConnect: Connect to", "Connection refused", "No route to host", "Connection timed out", "Network is unreachable", "exceeded error retry count", ": connect to ", "socketPollConnect to", "Accept failed"],
        what: "NCCL could not open a socket connection to another rank",
        why: "a firewall between the nodes, an NCCL_SOCKET_IFNAME interface the other node cannot reach (another subnet, a container bridge), or the peer process already gone",
        fix: "pin NCCL_SOCKET_IFNAME to the interface of the nodes' common network on every node, allow TCP between compute nodes (NCCL listens on ephemeral ports), and check `ip route get <peer address>` on both ends",
        checks: &["launch.nccl_env"],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN bootstrap: connect to 10.0.0.8<42311> failed : Connection refused",
            "gpu-a:4101:4190 [0] NCCL WARN socketPollConnect to 10.0.0.8<42311> failed with error Connection timed out",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN socketProgress: Connection closed by remote peer gpu-b<42830>"],
    },
    WarnRule {
        id: "nccl.peer_closed",
        severity: Severity::Warning,
        none: &[],
        any: &["socketProgressOpt: Call to", "Connection closed by remote peer", "Connection reset by peer", "remote process exited", "NET/Socket : socket progress error", "Socket recv failed while polling", "Could not receive type from localRank"],
        what: "a peer rank closed its NCCL connection",
        why: "NCCL sees the effect, not the cause: the peer rank died first (an exception, an OOM kill, a CUDA error) or its node went away",
        fix: "look for the earliest error of every rank (srun --label, then `launchguard explain` on the whole job output), starting with the peer this line names",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN socketProgress: Connection closed by remote peer gpu-b<42830>",
            "gpu-a:4101:4190 [0] NCCL WARN socketProgressOpt: Call to recv from 10.0.0.8<41234> failed : Connection reset by peer",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN bootstrap: connect to 10.0.0.8<42311> failed : Connection refused"],
    },
    WarnRule {
        id: "nccl.shm_failed",
        severity: Severity::NoGo,
        none: &[],
        any: &["No space left on device", "shared memory segment", "failed to extend", "failed to create shared memory", "Could not map"],
        what: "NCCL could not create or map its shared-memory segment",
        why: "/dev/shm is too small or full: a container's default 64 MiB, or a tmpfs other jobs filled",
        fix: "give the job a larger /dev/shm (a container runtime's --shm-size, while enroot and Pyxis use the host's) or clean /dev/shm on the node, NCCL_SHM_DISABLE=1 being a last resort that costs bandwidth",
        checks: &[],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-AbCdEf to 9637892 bytes, error: No space left on device (28)"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Cuda failure 'out of memory'"],
    },
    WarnRule {
        id: "nccl.nvls_failed",
        severity: Severity::NoGo,
        none: &[],
        any: &["is available but not working on this system", "Failed to bind NVLink SHARP"],
        what: "NCCL could not set up NVLink SHARP (NVLS) multicast memory or multi-node NVLink",
        why: "NVLS needs the NVSwitch fabric that Fabric Manager sets up (and IMEX across nodes), and the fabric is not ready: Fabric Manager stopped, of another version than the driver, or the GPU's fabric registration failed",
        fix: "check `nvidia-smi -q | grep -A3 Fabric` (State Completed, Status Success) and `systemctl status nvidia-fabricmanager` on the node and fix or restart it, or run with NCCL_NVLS_ENABLE=0",
        checks: &["node.gpu.fabric", "node.imex.service"],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1073741824 : CUDA error 999 'unknown error'."],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Cuda failure 'out of memory'"],
    },
    WarnRule {
        id: "nccl.p2p_failed",
        severity: Severity::NoGo,
        none: &[],
        any: &["UDS: Binding to socket", "UDS: Sending data over socket", "UDS: Receiving data over socket", "UDS: Socket creation error", "failed to peer with device", "cudaIpcGetMemHandle failed", "P2P is disabled between NVLINK connected GPUs"],
        what: "CUDA could not map one GPU's memory into another",
        why: "peer-to-peer access is blocked: PCIe ACS or an IOMMU in the way (virtual machines, some BIOS settings), an NVLink down, or ranks of one node in separate containers or PID/network namespaces where CUDA IPC handles and the Unix sockets NCCL passes them over do not work",
        fix: "check `nvidia-smi topo -p2p r` and `nvidia-smi nvlink -s` on the node, turn off ACS/IOMMU redirection for the GPUs (NCCL_P2P_DISABLE=1 works around it at a bandwidth cost), and run the ranks of a node in one container",
        checks: &["node.gpu.pcie"],
        examples: &[
            "gpu-a:4101:4190 [1] NCCL WARN failed to peer with device 0(=3a000): 217 peer access is not supported between these two devices",
            "gpu-a:4101:4190 [1] NCCL WARN UDS: Sending data over socket /tmp/nccl-socket-1-2f3a failed : Connection refused (111)",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Cuda failure 'out of memory'"],
    },
    WarnRule {
        id: "nccl.cuda_failure",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "Failed to query CUDA runtime version", "stream capture mode (", "Unable to allocate flush buffer", "copy sentinel value to gpu flush buffer","Failed to CUDA calloc", "Failed to CUDA malloc", "Failed to CUDA host alloc", "Failed to find CUDA library", 
            "Cuda failure", "CUDA failure", "Failed to set CUDA device", "Failed to create CUDA context", "Failed to set CUDA context",
            "cuMemAlloc failed", "cuStreamCreate failed", "cuStreamSynchronize failed", "cuMemcpyHtoDAsync failed", "cuCtxGetCurrent failed",
            "cuCtxSetCurrent failed", "cuCtxGetDevice failed", "cuMemsetD8 failed", "cudaMemset failed", "cuMemFree failed", "cuStreamDestroy failed",
            "CUDA initialization failed", "Failed to query CUDA driver version", "Error performing GPU GDR flush",
        ],
        what: "NCCL hit a CUDA error",
        why: "'out of memory' means the GPU had no room for NCCL's buffers (the model took it all), a missing libcuda.so means the driver's libraries are not in the job (container without the NVIDIA hook), while other errors point at the GPU or driver (launchguard check --only node.gpu)",
        fix: "leave GPU memory for NCCL (smaller batch, NCCL_BUFFSIZE lower) for out of memory, and for other errors check the node's GPUs and kernel log for Xid lines",
        checks: &["node.gpu.xid", "node.gpu.nvml"],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to disable stream capture mode (999)",
            "gpu-b:7711:7790 [1] NCCL WARN NET/OFI Unable to allocate flush buffer (-12)",
            "gpu-a:4101:4190 [0] NCCL WARN Cuda failure 'out of memory'",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI cuMemAlloc failed: out of memory",
        ],
        counter: &["gpu-a:4101:4190 [1] NCCL WARN failed to peer with device 0(=3a000): 217 peer access is not supported between these two devices"],
    },
    WarnRule {
        id: "nccl.duplicate_gpu",
        severity: Severity::NoGo,
        none: &[],
        any: &["Duplicate GPU detected", "Multiple Ranks are using the same GPU"],
        what: "two ranks of one communicator use the same GPU",
        why: "the program picks a GPU by an index that is the same on several tasks: cuda:0 while every task sees all GPUs, or LOCAL_RANK from a launcher srun does not emulate, or a per-task GPU binding that the program then indexes again",
        fix: "bind one GPU per task (srun --gpus-per-task=1 or --gpu-bind=single:1) and use cuda:0, or, when each task sees all GPUs, set the device from SLURM_LOCALID",
        checks: &["launch.gpu_options"],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3a000"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Mismatched NCCL version detected : rank 0 version 22809 rank 1 version 22703"],
    },
    WarnRule {
        id: "nccl.version_mismatch",
        severity: Severity::NoGo,
        none: &[],
        any: &["Mismatched NCCL version detected"],
        what: "ranks of one communicator run different NCCL versions",
        why: "the nodes run different container images or installs, or some pick up another libnccl from LD_LIBRARY_PATH, and NCCL refuses to mix versions",
        fix: "run every rank from the same image or install (compare the `NCCL version` line of each host under NCCL_DEBUG=INFO) and remove stray libnccl from LD_LIBRARY_PATH",
        checks: &[],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN Mismatched NCCL version detected : rank 0 version 22809 rank 1 version 22703"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3a000"],
    },
    WarnRule {
        id: "nccl.peer_address_invalid",
        severity: Severity::NoGo,
        none: &[],
        any: &["is neither AF_INET"],
        what: "NCCL was handed a peer address that is not an IP address",
        why: "the address comes from the peer's connection handle or the ncclUniqueId, and it is garbage when the peer chose another network (NCCL_NET or a network plugin set or found on some nodes only, so an IB or OFI handle reaches a Socket transport), when ranks run different NCCL versions, or when the program does not pass rank 0's ncclUniqueId intact to every rank, and NCCL 2.29 also hits it on one node with both NCCL_P2P_DISABLE and NCCL_SHM_DISABLE set (NCCL issue 2057)",
        fix: "run every rank with the same NCCL, network plugin and NCCL_NET (one container image, the same LD_LIBRARY_PATH and NCCL_NET_PLUGIN on every node: compare each host's `Using network` line under NCCL_DEBUG=INFO), broadcast the ncclUniqueId from rank 0 unchanged, and do not disable P2P and SHM together",
        checks: &["launch.nccl_env"],
        examples: &["gpu-a:4101:4190 [1] misc/socket.cc:585 NCCL WARN ncclSocketInit: connecting to address 0.0.0.0<0> with family 33022 is neither AF_INET(2) nor AF_INET6(10)"],
        counter: &["gpu-a:4101:4190 [0] misc/socket.cc:276 NCCL WARN Net : unsupported IP family"],
    },
    WarnRule {
        id: "nccl.rank_mismatch",
        severity: Severity::NoGo,
        none: &[],
        any: &["mismatch in info from procs", "has already checked in", "Invalid rank requested", "improper usage of ncclCommInitRank", "Bootstrap Root : localId"],
        what: "the ranks did not agree on the communicator they join",
        why: "two jobs (or two runs of one) use the same NCCL_COMM_ID or MASTER_ADDR:MASTER_PORT so ranks of one meet the other's root, a task started twice, or tasks were started with different world sizes (WORLD_SIZE not matching srun --ntasks)",
        fix: "give every job its own rendezvous port (derive MASTER_PORT from SLURM_JOB_ID), take WORLD_SIZE and RANK from SLURM_NTASKS and SLURM_PROCID, and start each task once",
        checks: &[],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN Bootstrap Root : rank 3 of 8 ranks has already checked in"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Mismatched NCCL version detected : rank 0 version 22809 rank 1 version 22703"],
    },
    WarnRule {
        id: "nccl.net_count_mismatch",
        severity: Severity::NoGo,
        none: &[],
        any: &["Detected mixed local Net device counts", "Detected mixed local CollNet device counts"],
        what: "the job's nodes see different numbers of network cards",
        why: "a port is down or a card missing on some node, or NCCL_IB_HCA / NCCL_SOCKET_IFNAME selects a different set on some nodes",
        fix: "compare `ibstat` (ports Active) or `ip -br link` across the job's nodes, drain the node short of a card, and select the same cards on every node (NCCL_IGNORE_NET_MISMATCH=1 only hides it)",
        checks: &["launch.nccl_env"],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN Detected mixed local Net device counts across ranks (min 7, max 8). Set NCCL_IGNORE_NET_MISMATCH=1 to continue."],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Mismatched NCCL version detected : rank 0 version 22809 rank 1 version 22703"],
    },
    WarnRule {
        id: "nccl.ib_link_mixed",
        severity: Severity::NoGo,
        none: &[],
        any: &["Attempted to connect incompatible devices", "device is incompatible with the local", "Attempted to merge incompatible devices"],
        what: "NCCL was given InfiniBand and RoCE ports together",
        why: "ports of different link layers (InfiniBand and Ethernet) cannot talk to each other, and NCCL_IB_HCA (or its default, every card) selected both kinds",
        fix: "select ports of one link layer with NCCL_IB_HCA (`ibv_devinfo | grep -e hca_id -e link_layer` lists them), e.g. =mlx5_0,mlx5_1",
        checks: &["launch.nccl_env"],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : Attempted to connect incompatible devices: [0]mlx5_0:1/IB and [1]mlx5_4:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NET/IB : Unable to open device mlx5_0"],
    },
    WarnRule {
        id: "nccl.invalid_usage",
        severity: Severity::NoGo,
        none: &[],
        any: &["This application was compiled with NCCL version", 
            "Invalid config ", "Invalig config ", "argument not initialized via", "ncclGroupEnd: not in a group call",
            "Blocking and nonblocking communicators are not allowed", "Attempt to use communicator before", "has already been destroyed",
            "can be CUDA graph captured", "Invalid device count requested", "invalid device count", "ncclCommGrow:", "exceeds ndev=", "(totalnDev=",
            "parent comm and handle must be provided", "handles and parent are NULL",
            "Split shares resources, but parent comm netName", "does not match the parent",
        ],
        what: "the program called NCCL in a way this NCCL rejects",
        why: "most often a framework built against another NCCL than the libnccl loaded at run time (the layout of ncclConfig_t and friends differs), else a bug in the program's use of the API (groups, a communicator used after it failed or was destroyed)",
        fix: "use the NCCL the framework was built for (compare PyTorch's torch.cuda.nccl.version() with the log's NCCL version line), drop a libnccl from LD_LIBRARY_PATH or LD_PRELOAD, and report what remains to the framework",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER",
            "gpu-a:4101:4190 [0] NCCL WARN Invalid config blocking attribute value -2147483648",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3a000"],
    },
    WarnRule {
        id: "nccl.topo_file",
        severity: Severity::NoGo,
        none: &[],
        any: &["Attribute arch of node", " of node ", "XML Parse", "XML Graph has wrong version", "XML Topology has wrong version", "Could not open XML graph file", "XML Mismatch", "XML Import Channel", "XML parser is limited to", "too many XML", "too long (max "],
        what: "NCCL could not use the topology or graph file it was given",
        why: "the file named by NCCL_TOPO_FILE or NCCL_GRAPH_FILE is missing, malformed, or written for another NCCL version (an image's default file can be stale: the static topology files aws-ofi-nccl shipped before 1.11 lack the CPU attributes NCCL needs)",
        fix: "point NCCL_TOPO_FILE at the file for this machine type and NCCL version, or unset NCCL_TOPO_FILE and NCCL_GRAPH_FILE to let NCCL detect the topology",
        checks: &["launch.nccl_env"],
        examples: &["gpu-a:4101:4190 [0] NCCL WARN XML Topology has wrong version 1, 2 needed"],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Error : could not find CPU close to GPU 0"],
    },
    WarnRule {
        id: "nccl.topo_limit",
        severity: Severity::NoGo,
        none: &[],
        any: &["too many nodes of type", "too many Topo links"],
        what: "the node's topology is larger than NCCL's fixed limits",
        why: "NCCL keeps at most a few hundred devices of a kind (GPUs, NICs, PCI switches: 576 in NCCL 2.28, 640 in 2.30) and a fixed number of links per device, and an NCCL_TOPO_FILE that repeats or merges entries (a file for another machine type, or one joined from several nodes' dumps) or a node exposing hundreds of network functions (SR-IOV virtual functions, each a NIC to NCCL) overflows them",
        fix: "unset NCCL_TOPO_FILE or point it at the file for this machine type, and limit the NICs NCCL considers with NCCL_IB_HCA (e.g. NCCL_IB_HCA=mlx5_0,mlx5_1) or NCCL_SOCKET_IFNAME, then check with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH",
        checks: &["launch.nccl_env"],
        examples: &[
            "gpu-a:4101:4190 [0] topo.cc:104 NCCL WARN Error : tried to create too many nodes of type 3",
            "gpu-a:4101:4190 [0] topo.cc:175 NCCL WARN Error : too many Topo links (max 128)",
        ],
        counter: &["gpu-a:4101:4190 [0] topo.cc:563 NCCL WARN ncclTopoGetDevNodes : too many DEV nodes for busId 1b000 (max 4)"],
    },
    WarnRule {
        id: "nccl.topology",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "could not find CPU close to GPU", "Could not find real path of", "could not find CPU numa ID", "Unknown CPU architecture",
            "Could not find any local path from gpu", "Could not find NIC for rank", "Could not find net id", "Could not find NET with id",
            "Could not find node of type", "Could not find gpu rank", "could not find DEV for GPU", "Add NVLink error : could not find GPU",
            "could not find PCI SW", "Failed to find reverse path", "Could not find intermediate GPU", "No path computed",
            "not found in the list of system hostHashes", "system node not found in XML", "Can't find busId", "Couldn't generate unique busId",
            "Failed to create NCCL OFI topology", "Failed to populate topology", "Topology reported unexpected number of devices", "plugin constructor: invalid number of devices",
            "Unable to load hardware topology", "Unable to initialize hardware topology", "hwloc failed detecting PCI NIC info",
            "Failed to retrieve PCI attributes from NIC", "Failed to retrieve PCI speed and width", "Failed to open device property file",
            "Failed to read device property file", "Unknown link width", "Unknown link speed", "Unable to convert link width",
        ],
        what: "NCCL could not map this node's GPUs and network cards",
        why: "NCCL and aws-ofi-nccl build the PCI, NUMA and NVLink layout from /sys, hwloc and NVML, and a container or virtual machine that hides or fakes /sys (virtual PCI bridges, no NUMA node) or an NCCL_TOPO_FILE that does not fit the node leaves a GPU or card it cannot place",
        fix: "run the job with the host's /sys visible, give NCCL the vendor's topology file for the VM type with NCCL_TOPO_FILE (or unset a wrong one), and send NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH output to NCCL if it persists",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN Error : could not find CPU close to GPU 0",
            "gpu-a:4101:4190 [0] NCCL WARN Could not find real path of /sys/class/net/eth0/device",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN XML Topology has wrong version 1, 2 needed"],
    },
    WarnRule {
        id: "nccl.host_alloc_failed",
        severity: Severity::NoGo,
        none: &["virtual devices", "MR key", "flush buffer", "Invalid msgbuff parameters"],
        any: &[
            "Unable to map MR buffer", "pciPath: Allocation failure", "path malloc failed",
            "Failed to allocate", "Unable to allocate", "allocation failed", "Allocation of fi_info failed", "Could not allocate new",
            "Couldn't allocate send", "Couldn't allocate listen_comm", "calloc failure", "calloc failed", "calloc ncclNetDeviceHandle failed", "Could not extend freelist",
            "Allocating initial freelist entries failed", "Unable to (re)allocate", "Unable to duplicate", "Failed to duplicate",
            "fi_dupinfo failed", "Error creating duplicate info", "Could not create user data vector", "failed to allocate ctx",
            "calloc for mr_handle array block failed",
        ],
        what: "NCCL or its network plugin could not allocate host memory",
        why: "CUDA processes reserve a large virtual address space, so an address-space limit below unlimited (ulimit -v, RLIMIT_AS: Slurm's VSizeFactor or a limit PropagateResourceLimits carried from the submit host) makes allocations fail, else the node or the job's memory is exhausted",
        fix: "check that `srun bash -c 'ulimit -v'` prints unlimited (drop VSizeFactor from slurm.conf or add AS to PropagateResourceLimitsExcept), and give the job more memory (--mem) if the limit is not the cause",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Unable to map MR buffer (-12 Cannot allocate memory)",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Unable to allocate send communicator control mailbox",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to allocate freelist block metadata",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI DUP_CONNS fi_dupinfo failed.",
        ],
        counter: &[
            "gpu-a:4101:4190 [0] NCCL WARN NET/IB : Cannot allocate any more virtual devices (16)",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to allocate and initialize message buffer: Invalid msgbuff parameters: max_inprogress=256 bit_width=4",
        ],
    },
    WarnRule {
        id: "nccl.env_ignored",
        severity: Severity::Warning,
        none: &[],
        any: &[
            "unknown value", "is being ignored because", "is greater than the maximum allowed, setting", "setting NCCL_NSOCKS_PERTHREAD",
            "Unsetting POLICY_EFFICIENCY", "Ignoring SHM locality", "is deprecated", "Unrecognized histogram",
        ],
        what: "NCCL replaced a setting from the environment with its own",
        why: "an NCCL_* or OFI_NCCL_* variable holds a value this version does not accept, so NCCL ignored it or chose another value and runs with a configuration other than the one asked for",
        fix: "correct the variable the line names to a value this version documents (NCCL docs: Environment Variables, aws-ofi-nccl: doc/configuration), or unset it",
        checks: &["launch.nccl_env"],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN NCCL_NET_MERGE_POLICY: unknown value 'fused', defaulting to ALL",
            "gpu-a:4101:4190 [0] NCCL WARN NET/Socket : NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to 16",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN TOPO/NET : Could not force merge NICs mlx5_0+mlx5_9. Please specify a valid NCCL_NET_FORCE_MERGE string."],
    },
    WarnRule {
        id: "nccl.env_invalid",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "Please specify a valid NCCL_NET_FORCE_MERGE", "invalid forced rails", "Tried to merge too many NICs", "TOPO/NET : Only matched", "Specified fused NIC",
            "Fusing NET devices from different NUMA", "NCCL_IB_SUBNET_PREFIX_LEN", "has invalid value", "NCCL_NVLS_ENABLE has been set",
            "Unrecognized prefix token", "Unrecognized element token", "All entries except the first must have a prefix",
            "set to invalid value", "Invalid value for", "configuration of EARLY_COMPLETION", "NCCL_OFI_NIC_DUP_CONNS set on platform",
            "OOO RQ is force enabled", "Number of forced rails", "Provided mr keypool size", "MR key config parsing failed",
            "for policy MAX", "Unknown netDevs policy",
        ],
        what: "NCCL refused a setting from the environment",
        why: "an NCCL_* or OFI_NCCL_* variable holds a value this version rejects (a misspelt list, a NIC name that does not exist, a combination it does not support), and NCCL stops instead of guessing",
        fix: "correct the variable the line names to a value this version documents (NCCL docs: Environment Variables, aws-ofi-nccl: doc/configuration), or unset it",
        checks: &["launch.nccl_env"],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN TOPO/NET : Could not force merge NICs mlx5_0+mlx5_9. Please specify a valid NCCL_NET_FORCE_MERGE string.",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI WARNING: OFI_NCCL_PROTOCOL set to invalid value RDMA_WRITE",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN NCCL_NET_MERGE_POLICY: unknown value 'fused', defaulting to ALL"],
    },
    WarnRule {
        id: "nccl.fallback",
        severity: Severity::Info,
        none: &[],
        any: &["CUDA flush enabled", "AWS platform priority: -1", "GDRCopy support not available at compile time", "Not configuring NCCL_TUNER_PLUGIN", "Model is not supported for platform", 
            "Cannot initialize CollNet, using point-to-point network instead", "plugin has incompatible version", "Unable to create thread context due to old driver",
            "using dlid as fallback", "GDR Flush only supported on x86_64", "falling back to graphStreamOrdering=1",
            "Can't make virtual NIC with 0 devices", "Cannot allocate any more virtual devices", "Cannot use physical device", "fails to share parent comms",
        ],
        what: "NCCL or its network plugin does without an optional feature, or notes a setting at WARN level",
        why: "the feature (CollNet/SHARP, also for a child communicator that cannot share its parent's SHARP resources, merging NIC ports into one virtual NIC, a device unpack plugin, per-thread CUDA contexts, GDR flush off x86, GDRCopy, aws-ofi-nccl's tuner) is not available here and NCCL falls back to its ordinary path, or the line only reports a choice (CUDA flush), so the job runs correctly",
        fix: "nothing for a correct run: install the feature's plugin or driver only if you need its speed",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] NCCL WARN Cannot initialize CollNet, using point-to-point network instead",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI CUDA flush enabled",
        ],
        counter: &["gpu-a:4101:4190 [0] NCCL WARN Failed to initialize any NET plugin"],
    },
    WarnRule {
        id: "nccl.gin_unavailable",
        severity: Severity::NoGo,
        none: &["NET/OFI"],
        any: &[
            "GIN not supported.", "GIN is disabled.", "No GIN-capable devices found", "GIN-capable device type mismatch",
            "signals are required, but the GIN plugin does not support them", "GIN plugin does not support ", "Invalid GIN proxy backend version",
            "Invalid GIN gdaki backend version", "GIN Proxy: RMA backend not found", "No network devices that support GDAKI found",
            "RMA not supported.", "No RMA-capable devices found", "Communicator does not support symmetric memory", "DOCA failure ",
            "DOCA Error ", "GIN Symmetric register failed", "RMA Symmetric register failed",
        ],
        what: "the program asked for NCCL's GPU-initiated networking (the device API's GIN or one-sided RMA) and NCCL cannot provide it here",
        why: "GIN needs InfiniBand/RoCE cards NCCL can drive from the GPU (GDAKI through DOCA GPUNetIO, or the proxy path with GPUDirect RDMA), a network plugin that implements every GIN operation, and symmetric memory (CUDA VMM, NCCL_CUMEM_ENABLE and NCCL_WIN_ENABLE not 0, all GPUs reachable by P2P), and NCCL_GIN_ENABLE=0 or an NCCL_GIN_TYPE the cards do not offer switches it off",
        fix: "unset NCCL_GIN_ENABLE, NCCL_GIN_TYPE, NCCL_CUMEM_ENABLE=0 and NCCL_WIN_ENABLE=0 in the job, run on nodes whose IB/RoCE cards have GPUDirect RDMA (nvidia-peermem or DMA-BUF) with NCCL's own IB transport or a network plugin built for this NCCL, or use a build of the program that does not use the device API",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] gin_host.cc:66 NCCL WARN GIN is disabled.",
            "gpu-a:4101:4190 [0] gin_host.cc:195 NCCL WARN GIN strong signals are required, but the GIN plugin does not support them.",
            "gpu-a:4101:4190 [0] rma_proxy.cc:389 NCCL WARN No RMA-capable devices found.",
        ],
        counter: &["gpu-a:4101:4190 [0] init.cc:3470 NCCL WARN GIN Error detected"],
    },
    WarnRule {
        id: "nccl.no_transport",
        severity: Severity::NoGo,
        none: &[],
        any: &["No transport found for rank"],
        what: "NCCL has no way to connect two ranks",
        why: "every transport refused the pair: on one node NCCL_P2P_DISABLE=1 together with NCCL_SHM_DISABLE=1 leaves only the network, which NCCL does not use between GPUs of one node when NCCL_NET_DISABLE_INTRA=1 or when they have a better path than through the NIC",
        fix: "unset NCCL_SHM_DISABLE or NCCL_P2P_DISABLE (keep at least one of the intra-node transports), or set NCCL_NET_DISABLE_INTRA=0, on every rank",
        checks: &["launch.nccl_env"],
        examples: &["gpu-a:4101:4190 [1] transport.cc:40 NCCL WARN No transport found for rank 1[3a000] -> rank 0[19000]"],
        counter: &["gpu-a:4101:4190 [0] proxy.cc:571 NCCL WARN Rank 0 has no transport for send peer 1 on channel 0/2"],
    },
    WarnRule {
        id: "nccl.ib_failover",
        severity: Severity::Warning,
        none: &[],
        any: &["marked as failed. Initiating recovery?", "Resiliency is enabled on a"],
        what: "NCCL's InfiniBand port failover is at work",
        why: "with NCCL_IB_RESILIENCY_PORT_FAILOVER=1 (NCCL 2.29+) a port of a merged NIC failed and NCCL moved its traffic to the other ports, so the job carries on with less bandwidth, and a communicator on a single port has nothing to fail over to (NCCL says so when it is set up)",
        fix: "check the port the line names on this node (ibstat for its state, dmesg for mlx5 errors) and drain the node if it flaps, or leave NCCL_IB_RESILIENCY_PORT_FAILOVER unset where each GPU has one port",
        checks: &[],
        examples: &["gpu-a:4101:4190 [0] p2p_resiliency.cc:1210 NCCL WARN NET/IB: Device 1 marked as failed. Initiating recovery? yes (send comm=0x7f3a2c000000, outstandingRecovery=1)"],
        counter: &["gpu-a:4101:4190 [0] p2p_resiliency.cc:180 NCCL WARN NET/IB: Fatal error. Detected 2 failed devices out of 2 devices on the send communicator (comm=0x7f3a2c000000). No support for more than a single failed device."],
    },
    WarnRule {
        id: "nccl.follow_on",
        severity: Severity::Warning,
        none: &["NET/OFI"],
        any: &[
            "Failed to execute operation", "Error encountered progressing operation", "communicator encountered a fatal error", "ncclAsyncJobComplete",
            "ncclCommSetAsyncError", "commReclaim", "commDestroySync", "is in abort state", "call to tpRank", "destroys proxy resource error",
            "Legacy IPC cleanup callback failed", "proxyDestroy failed", "shm close failed", "shm unlink failed", "GIN Error detected",
            "GIN Error on gin context", "Error on GFD test", "Unexpected connections are not empty", "socket state (", "wrong socket state",
            "unexpected socket state", "called when comm->base.ready == 0", "Encountered a stale CQE", "outstanding recovery operations",
            "Failed to initialize a resiliency send request",
        ],
        what: "this WARN relays an earlier failure",
        why: "NCCL (or its network plugin, aws-ofi-nccl) prints it on its way out of a failure reported before it (a lost peer, a failed transfer or allocation, an InfiniBand fatal event, an aborted communicator): the proxy relays the failed operation, a socket is already closed, the plugin reports that a call which already warned failed, or the communicator is torn down, and the line names no cause of its own",
        fix: "read the first NCCL WARN of this rank and of every other rank (srun --label, then `launchguard explain` on the whole job output), and if this is the only one, rerun with NCCL_DEBUG=WARN on every rank to see the one before it",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] proxy.cc:1734 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 1, retcode 3",
            "gpu-a:4101:4190 [0] socket.cc:865 NCCL WARN ncclSocketSend: socket state (5) is not ready",
            "gpu-a:4101:4190 [0] common.cc:32 NCCL WARN communicator encountered a fatal error (detected in ncclIbTest)",
        ],
        counter: &["gpu-a:4101:4190 [0] misc/socket.cc:395 NCCL WARN ncclSocketListen: pass NULL socket"],
    },
    WarnRule {
        id: "nccl.internal_error",
        severity: Severity::Warning,
        none: &["NET/OFI"],
        any: &[
            // sockets and Unix sockets
            "pass NULL socket", "file descriptor is -1", "Net : string is null", "Net : unsupported IP family", "invalid socket ", "invalid arguments ops=",
            "ncclNetSocketListen dev=", "NET/Socket : unable to allocate", "NET/IB : unable to allocate requests", "socket is invalid", "close failed: ", "test called with NULL request", "Name too large",
            // the proxy's operation bookkeeping
            "for opId=", "already completed opId=", "match any expected response", "Couldn't find opId", "nonexistent async opId", "dequeue null operation", "Could not find pool of op",
            "List loop at element", "Inactive op has next set", "Proxy append", "Unable to post incomplete proxy op chain", "has no transport for",
            "out of bounds [0, ", "Too many connections (", "Poll failed: ", "Get listenSock fd fails", "Initialize peers[", "Get peers[", "Unknown command ",
            "Error waiting for pthread_join", "failed to join thread for job",
            // communicator set-up and the topology search
            "should be a diviser", "Group creation failed:", "P2p schedule creation has bugs", "Failed to determine intra proc ranks",
            "Failed to determine local ranks", "tree already has", "Could not find id ", "does not loop back to start", "does not contain rank",
            "Could not find rev link", "XML Export Channel : rank", "ran out of room to store found nodes",
            "could not find rank", "could not find value", "too many DEV nodes", "MLOPart", "parent is NULL even after fallback",
            // plugins, transports and the device-initiated (GIN/RMA) paths
            "Unknown device code index", "uninitialized netPlugin", "uninitialized ginPlugin", "failed to set the number of devices for netPlugin",
            "reqSize is ", "respSize is ", "CollNet sizes: want=", "PXN should not use host buffers", "Requested properties for vNic",
            "already connected sendComm", "non-existent virtual device", "Listencomm in unknown state", "could not find mr ", "->events={",
            "IBV_WC_RECV_RDMA_WITH_IMM and req->type", "No format specified for opcode", "could not retreive a request",
            "expected a 'send' request", "expected a 'recv' request", "Unknown completion (req=", "Invalid request index", "Attempting to initiate a",
            "non-existent failed request", "Attempting to repost an unused request", "Unsupported type of request reposting", "Invalid wr_id",
            "Unrecognized request type", "Unexpected GoToPrevState", "Resiliency context is NULL", "alive message batch size",
            "Requested properties for GIN GDAKI NIC", "invalid rank stride", "trying to send to non-connected peer", "Unsupported signalOp",
            "Invalid argument desc ", "Invalid argument comm ", "invalid IPC peerRank", "invalid IPC peerIndex", "unknown desc type",
            "descriptor is not a ", "RMA proxy is not connected", "returned success with NULL request", "completed request with no inflight credit",
            "min local net count is zero", "backend version for invalid GIN type", "returned invalid context for connection", "Dev comm not found",
            "Not enough space to get elements", "plane ID",
        ],
        what: "NCCL's own consistency check failed",
        why: "NCCL checks its state (a null argument, a request or socket in an unexpected state, an index out of range, topology limits) and this WARN names no setting or fault: most often it follows an earlier failure that left the state broken, else the program uses one communicator from two threads at once or after ncclCommAbort/ncclCommDestroy, else it is a defect of this NCCL release",
        fix: "read the first NCCL WARN of every rank (the earlier failure names the cause), make sure each communicator is used by one thread at a time and not after it is destroyed, and if it remains, rerun on the newest NCCL with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL and report that log on NVIDIA's NCCL issue tracker",
        checks: &[],
        examples: &[
            "gpu-a:4101:4190 [0] socket.cc:395 NCCL WARN ncclSocketListen: pass NULL socket",
            "gpu-a:4101:4190 [0] proxy.cc:87 NCCL WARN Proxy response for opId=0x7f3a2c000000 doesn't match any expected response",
            "gpu-a:4101:4190 [0] rings.cc:50 NCCL WARN Error : ring 0 does not loop back to start (1 != 0)",
        ],
        counter: &[
            "gpu-a:4101:4190 [0] proxy.cc:1734 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 1, retcode 3",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Invalid request index 5",
        ],
    },
];

/// WARNs NCCL prints on its way out of an earlier failure (the proxy relaying a failed operation,
/// a communicator marked failed, teardown): they name no cause of their own, so next to a WARN a
/// rule explains they add nothing (alone they are still the generic `nccl.warn`).
pub const FOLLOW_ON: &[&str] = &[
    "Failed to execute operation",
    "communicator encountered a fatal error",
    "ncclAsyncJobComplete",
    "ncclCommSetAsyncError",
    "commReclaim",
    "commDestroySync",
    "Error encountered progressing operation",
    "is in abort state",
    "aws-ofi-nccl initialization failed",
];

/// The rules that explain a WARN by the failure before it (`nccl.follow_on`) or as NCCL's own
/// consistency check (`nccl.internal_error`, aws-ofi-nccl's `nccl.ofi.internal_error`): next to a
/// WARN another rule explains, their findings add nothing and are left out (that rule names the
/// cause).
pub const RELAYS: &[&str] = &[
    "nccl.follow_on",
    "nccl.internal_error",
    "nccl.ofi.internal_error",
];

/// Whether `msg` is one of the [`FOLLOW_ON`] WARNs.
pub fn is_follow_on(msg: &str) -> bool {
    FOLLOW_ON.iter().any(|f| msg.contains(f))
}

/// The first rule that explains the WARN message `msg`.
pub fn explain(msg: &str) -> Option<&'static WarnRule> {
    first_match(RULES, msg)
}

/// The first rule of `rules` one of whose `any` fragments `msg` holds and none of whose `none`
/// fragments it does (the matching every WARN table uses).
pub(crate) fn first_match(rules: &'static [WarnRule], msg: &str) -> Option<&'static WarnRule> {
    rules
        .iter()
        .find(|r| r.any.iter().any(|n| msg.contains(n)) && !r.none.iter().any(|n| msg.contains(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of a whole WARN line (what follows `NCCL WARN `).
    fn msg(line: &str) -> &str {
        line.split_once(" NCCL WARN ")
            .map(|(_, m)| m)
            .unwrap_or(line)
    }

    #[test]
    fn each_rule_explains_its_own_examples_and_not_its_counter_examples() {
        let mut ids = std::collections::HashSet::new();
        for r in RULES {
            assert!(ids.insert(r.id), "{}: listed twice", r.id);
            assert!(
                !r.examples.is_empty() && !r.counter.is_empty(),
                "{}: needs an example and a counter-example",
                r.id
            );
            for e in r.examples {
                assert_eq!(explain(msg(e)).map(|x| x.id), Some(r.id), "{e}");
            }
            for c in r.counter {
                assert_ne!(explain(msg(c)).map(|x| x.id), Some(r.id), "{c}");
            }
            for t in [r.what, r.why, r.fix] {
                assert!(!t.contains(';') && !t.contains('\n'), "{}: {t}", r.id);
            }
            assert!(
                r.any.iter().all(|a| !a.contains('%')),
                "{}: a printf conversion in `any`",
                r.id
            );
        }
    }

    #[test]
    fn warns_other_findings_own_are_left_to_them() {
        for other in [
            "Bootstrap : no socket interface found",
            "NET/Socket : no interface found",
            "Failed to initialize any NET plugin",
            "NET/OFI aws-ofi-nccl initialization failed",
            "NET/OFI Creating new endpoint for domain 0x7f00aa001000 failed: Invalid argument",
            "Failed to open libibverbs.so[.1]",
        ] {
            assert!(explain(other).is_none(), "{other}");
        }
    }
}

//! Causes of aws-ofi-nccl's own WARNs (`NCCL_OFI_WARN`, printed by NCCL's logger as
//! `NCCL WARN NET/OFI …`) beyond those the shared table in [`crate::warn_rules`] explains, as data:
//! GPU-initiated networking (GIN) set-up, GDRCopy, GDAKI capability, the in-memory topology file,
//! the EC2 platform lookup, rails that differ between peers, exhausted connection IDs and
//! memory-registration keys, OFI_NCCL_ABORT_ON_ERROR, the teardown notes that are harmless, and the
//! plugin's own consistency checks (`nccl.ofi.internal_error`, the counterpart of NCCL's
//! `nccl.internal_error`); and the plugin's WARNs that only relay the WARN before them ([`FOLLOW_ON`], explained by the
//! shared `nccl.follow_on`). A rule here matches only a message that starts with `NET/OFI ` (the
//! plugin's prefix), and [`crate::warn_causes::explain`] consults this table after the shared one,
//! so the shared rules keep their lines.
//!
//! Sources: the aws-ofi-nccl README and its release notes (GIN needs the RDMA protocol and
//! GDRCopy 2.5+, GDAKI needs libfabric 2.5+ with the EFA provider), NCCL's "Environment
//! Variables" documentation (NCCL_NET, NCCL_GIN_ENABLE, NCCL_TOPO_FILE), the GDRCopy README
//! (the gdrdrv kernel module and /dev/gdrdrv), memfd_create(2) and seccomp(2) for the topology
//! file, the AWS EFA user guide (`fi_info -p efa`) for rails, and the plugin's parameter list
//! (`include/nccl_ofi_param.h` in the aws-ofi-nccl repository: OFI_NCCL_ABORT_ON_ERROR).

use crate::model::Severity;
use crate::warn_rules::WarnRule;

/// The prefix aws-ofi-nccl puts before each of its messages.
pub const PREFIX: &str = "NET/OFI ";

/// The table, most specific first; the first rule that matches a `NET/OFI` WARN explains it.
pub const RULES: &[WarnRule] = &[
    WarnRule {
        id: "nccl.ofi.gin_setup",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "operations are not supported for SendRecv protocol",
            "OFI NET plugin has not been initialized. GIN requires",
            "GIN only supports RDMA transport protocol",
            "GIN plugin does not support FI_MR_ENDPOINT",
            "Endpoint MR mode is not supported yet",
            // thrown while GIN sets up its own endpoint (printed as `Caught exception in GIN connect: ...`)
            "No providers available for GIN",
            "fi_getinfo for GIN failed",
            "Provider does not support FI_RX_CQ_DATA",
            "Provider does not support cq_data_size",
        ],
        what: "the program asked for NCCL's GPU-initiated networking (GIN) and aws-ofi-nccl refused it",
        why: "aws-ofi-nccl serves GIN only while it is NCCL's active network plugin, with its RDMA protocol, on a provider with one memory key per registration (EFA): NCCL_NET naming another transport (Socket, IB), OFI_NCCL_PROTOCOL=SENDRECV, or FI_PROVIDER choosing a provider that binds memory to endpoints each stops it",
        fix: "unset NCCL_NET (or set NCCL_NET=Libfabric), unset OFI_NCCL_PROTOCOL or set it to RDMA, keep FI_PROVIDER=efa, or run without GIN (NCCL_GIN_ENABLE=0)",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [2] NCCL WARN NET/OFI RMA write_inline operations are not supported for SendRecv protocol",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin: OFI NET plugin has not been initialized. GIN requires the OFI NET plugin to be active.",
            "gpu-b:7711:7790 [3] NCCL WARN NET/OFI GIN only supports RDMA transport protocol.",
            "gpu-b:7711:7790 [1] NCCL WARN NET/OFI Caught exception in GIN connect: No providers available for GIN",
        ],
        counter: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI GIN listen: ctx is NULL",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Caught exception in GIN connect: Unexpectedly got more than one GIN provider",
        ],
    },
    WarnRule {
        id: "nccl.ofi.gdrcopy",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "GIN requires GDRCopy 2.5+",
            "Failed to initialize GDRCopy",
            "Failed to resolve GDRCopy v2 API",
        ],
        what: "aws-ofi-nccl could not use GDRCopy, which its GPU-initiated networking (GIN) needs",
        why: "GIN writes its signals to GPU memory through GDRCopy 2.5 or newer: libgdrapi.so.2 is missing from the library path (often inside the container image), is an older release, or the gdrdrv kernel module is not loaded so /dev/gdrdrv does not exist",
        fix: "install GDRCopy 2.5+ on the node and load its module (`modprobe gdrdrv`, then `ls -l /dev/gdrdrv`), make libgdrapi.so.2 visible inside the container, or run without GIN (NCCL_GIN_ENABLE=0)",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI GIN requires GDRCopy 2.5+ for forced PCIe copy support",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to initialize GDRCopy: Failed to open gdr handle",
        ],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI gdr_unpin_buffer failed: 22"],
    },
    WarnRule {
        id: "nccl.ofi.gdaki_unavailable",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "createContext on a non-GDA-capable environment",
            "GDAKI: not supported on this platform",
            "fi_open_ops FI_EFA_GDA_OPS on rail",
            // thrown while the GDAKI context is built (printed as `gin GDAKI: createContext failed: ...`)
            "returned no GDAKI providers",
            "fi_getinfo for GDAKI info failed",
            "get_dma_buf_fd failed",
            "efa_cuda_create_qp failed",
            "efa_cuda_create_cq failed",
            "host_register_iomem failed",
        ],
        what: "NCCL asked aws-ofi-nccl for GPU-direct async networking (GDAKI) on a node that cannot give it",
        why: "GDAKI lets the GPU drive the EFA device itself: it needs the EFA provider with its efa-direct fabric, libfabric 2.5 or newer at run time (an older EFA installer, or an older libfabric first on LD_LIBRARY_PATH inside the container) and DMA-BUF export of GPU memory (the open NVIDIA kernel modules)",
        fix: "install an EFA installer whose libfabric is 2.5+ (`fi_info --version` inside the job) and use the open NVIDIA kernel modules, or let NCCL use the proxy GIN path (unset NCCL_GIN_TYPE) or no GIN (NCCL_GIN_ENABLE=0)",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin GDAKI: createContext on a non-GDA-capable environment (requires an EFA provider, runtime libfabric >= 2.5, and viable DMA-BUF); GDAKI is unavailable here",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin GDAKI: fi_open_ops FI_EFA_GDA_OPS on rail 2 failed: Function not implemented",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin GDAKI: createContext failed: fi_getinfo returned no GDAKI providers",
        ],
        counter: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin GDAKI: createContext received NULL argument",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin GDAKI: createContext failed: gdaki_fi_endpoint: double open",
        ],
    },
    WarnRule {
        id: "nccl.ofi.plugin_older_than_nccl",
        severity: Severity::NoGo,
        none: &[],
        any: &["GDAKI: unsupported backendVersion"],
        what: "NCCL asked aws-ofi-nccl for a GPU-initiated networking interface newer than the plugin knows",
        why: "the NCCL in the job is newer than the aws-ofi-nccl it loaded (a container's NCCL upgraded while the node's plugin, found through LD_LIBRARY_PATH or NCCL_NET_PLUGIN, stayed)",
        fix: "use an aws-ofi-nccl release built for this NCCL (the one in the same image or EFA installer), or point NCCL_NET_PLUGIN at it",
        checks: &[],
        examples: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin GDAKI: unsupported backendVersion 2 (plugin supports 0..1); refusing rather than building a mismatched device struct"],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI gin GDAKI: createContext_v14 received NULL config"],
    },
    WarnRule {
        id: "nccl.ofi.topo_file",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "Failed to write NCCL topology using file descriptor", "Failed to write NCCL topology file",
            "Failed to create anonymous topology file",
            "Failed to open NCCL topology file using file descriptor",
            "Unable to flush NCCL topology file",
            "Failed to write topology to NCCL topology file. ERROR",
            "Failed to print opening CPU tag. ERROR",
            "Failed to print closing CPU tag. ERROR",
            "Failed to print PCI tag. ERROR",
            "Failed to print opening PCI tag. ERROR",
            "Failed to write closing PCI bridge tag. ERROR",
        ],
        what: "aws-ofi-nccl could not write the topology file it hands NCCL",
        why: "the plugin writes the topology it found (GPUs, EFA devices, PCI switches) into an in-memory file made with memfd_create and points NCCL_TOPO_FILE at it: 'Function not implemented' or 'Operation not permitted' is a container runtime's seccomp profile (or a kernel before 3.17) without memfd_create, 'Too many open files' the open-file limit, 'Cannot allocate memory' or 'No space left on device' the step's memory limit",
        fix: "allow memfd_create in the container runtime's seccomp profile, raise the open-file limit (`ulimit -n`, LimitNOFILE of slurmd), or give the step more memory, and setting NCCL_TOPO_FILE to the XML for this instance type makes the plugin skip writing its own",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to write NCCL topology using file descriptor. RC: -28",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to create anonymous topology file. ERROR: Function not implemented",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Unable to flush NCCL topology file. ERROR: Cannot allocate memory",
        ],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Error preparing topology file name"],
    },
    WarnRule {
        id: "nccl.ofi.platform_unknown",
        severity: Severity::Warning,
        none: &[],
        any: &[
            "Error opening file: /sys/devices/virtual/dmi/",
            "Error reading file: /sys/devices/virtual/dmi/",
        ],
        what: "aws-ofi-nccl could not read the machine's product name",
        why: "the plugin reads the EC2 instance type from the DMI product name in sysfs to apply that type's defaults (protocol, topology file, NIC order), and the file is missing where the machine has no SMBIOS tables or a container hides /sys/devices/virtual/dmi, so the plugin runs without platform defaults (slower on EC2, harmless elsewhere)",
        fix: "on EC2 make /sys visible in the container (enroot and Pyxis mount it unless a configuration removes it) or set OFI_NCCL_FORCE_PRODUCT_NAME to the instance type (e.g. p5.48xlarge), elsewhere nothing",
        checks: &[],
        examples: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Error opening file: /sys/devices/virtual/dmi/id/product_name"],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Error opening file: /tmp/ofi-topo.xml"],
    },
    WarnRule {
        id: "nccl.ofi.rail_mismatch",
        severity: Severity::NoGo,
        none: &[],
        any: &[
            "Unexpected number of remote rails for dev",
            "Unexpected number of remote control rails for dev",
        ],
        what: "two ranks connected over different numbers of EFA devices (rails)",
        why: "with the RDMA protocol a connection stripes across the same number of rails at both ends, and the peer's node offered another count: an EFA device missing or down on one node, nodes of different instance types in one job, or OFI_NCCL_* or FI_* settings that differ between nodes",
        fix: "compare `fi_info -p efa -t FI_EP_RDM | grep -c domain` on the job's nodes and drain the one short of a device, run one instance type per job, and give every node the same OFI_NCCL_* and FI_* environment",
        checks: &[],
        examples: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Unexpected number of remote rails for dev 0. Expected 4 but got 2"],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Invalid number of rails. Expected at least one rail"],
    },
    WarnRule {
        id: "nccl.ofi.rail_order",
        severity: Severity::Warning,
        none: &[],
        any: &["Did not find a device with expected index"],
        what: "aws-ofi-nccl could not put the node's EFA devices in their usual order",
        why: "on P5-class instances two EFA devices share one Nitro card and the plugin alternates the first and second device of each pair (the function index in each device's node GUID), and one GPU's group lacked a device of a pair: an EFA device missing on the node or not visible in the container, so it keeps the provider's order (a small loss)",
        fix: "compare `fi_info -p efa -t FI_EP_RDM | grep -c domain` with the EFA count of the instance type, drain a node short of a device, and make every /dev/infiniband/uverbs* visible in the container",
        checks: &[],
        examples: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Did not find a device with expected index 1"],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Info count (15) and num_rails (16) do not match.  Aborting reorder."],
    },
    WarnRule {
        id: "nccl.ofi.thread_limit",
        severity: Severity::NoGo,
        none: &[],
        any: &["Failed to start GIN gdrcopy worker"],
        what: "aws-ofi-nccl could not start the thread that delivers GPU-initiated networking (GIN) signals",
        why: "it starts one helper thread per process with its own descriptors, and that fails only when the process is at its thread limit (ulimit -u, the step cgroup's pids.max, TasksMax of slurmd's unit) or its open-file limit",
        fix: "raise the limit slurmd passes to tasks (LimitNPROC/LimitNOFILE/TasksMax in slurmd's unit, PropagateResourceLimits in slurm.conf) and check `srun bash -c 'ulimit -u -n'`, or run without GIN (NCCL_GIN_ENABLE=0)",
        checks: &[],
        examples: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to start GIN gdrcopy worker: Resource temporarily unavailable"],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI gdrcopy worker failed for signal seq_num 7 (rc=-5)"],
    },
    WarnRule {
        id: "nccl.ofi.ids_exhausted",
        severity: Severity::NoGo,
        none: &["0-sized pool"],
        any: &[
            "No IDs available (max:",
            "No comm id available",
            "Cannot open more connection for device ID",
            "MR key allocation failed",
        ],
        what: "aws-ofi-nccl ran out of connection IDs or memory-registration keys",
        why: "the plugin hands out a fixed number of them per device (32768 communicators under the RDMA protocol, a tag range under SENDRECV, a pool of keys for registered buffers), and they run out when the program keeps creating communicators or registering buffers without releasing them, e.g. a new process group or NCCL communicator every step",
        fix: "create communicators once and destroy the ones no longer used (torch.distributed.destroy_process_group(), ncclCommDestroy) and deregister buffers the program registered itself",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI No IDs available (max: 32768)",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Cannot open more connection for device ID 0. Maximum is 1048576",
        ],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Cannot allocate an ID from a 0-sized pool"],
    },
    WarnRule {
        id: "nccl.ofi.abort_on_error",
        severity: Severity::NoGo,
        none: &[],
        any: &["Aborting due to call failure with return"],
        what: "aws-ofi-nccl aborted the process because one of its calls failed",
        why: "OFI_NCCL_ABORT_ON_ERROR=1 (a debugging setting) makes the plugin call abort() on any error instead of returning it to NCCL, so the task dies with SIGABRT (and a core dump) and NCCL never reports the error to the program: the failure itself is the plugin WARN printed before this line",
        fix: "read the NET/OFI WARN before this line for the failure and fix its cause, and unset OFI_NCCL_ABORT_ON_ERROR unless a core dump is wanted",
        checks: &[],
        examples: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Aborting due to call failure with return 3"],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Info count (15) and num_rails (16) do not match.  Aborting reorder."],
    },
    WarnRule {
        id: "nccl.ofi.teardown_note",
        severity: Severity::Info,
        none: &[],
        any: &[
            "MR cache destroyed while",
            "in-use entries that are not released",
            "Finalizing already finalized plugin",
        ],
        what: "aws-ofi-nccl noted, while shutting down, buffers the program still held or a second shutdown call",
        why: "the plugin frees what is left when NCCL unloads it and the process exit returns the rest, so the job's results are not affected",
        fix: "nothing for this line alone: if the job failed, the first WARN before it names the cause",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI MR cache destroyed while 3 memory segments still held by the application. Forcing release of remaining entries.",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Finalizing already finalized plugin",
        ],
        counter: &["gpu-b:7711:7790 [0] NCCL WARN NET/OFI Closing send_comm 0x7f00aa with inflight requests. Invalidating domain"],
    },
    WarnRule {
        id: "nccl.ofi.internal_error",
        severity: Severity::Warning,
        // the ID pool's thrown texts repeat the WARN printed just before them (a relay)
        none: &["nccl_ofi_idpool_t: "],
        any: &[
            // arguments, handles, requests, messages and communicators in a state the plugin does not expect
            "Adding cleanup function failed", "Assigning device", "Attempt to insert duplicate id",
            "Bridge is missing attribute struct", "Called get_conn_resp_msg on send_connector before connection complete",
            "Called iread on inactive communicator", "Called irecv on inactive communicator",
            "Called isend on inactive communicator", "Called iwrite on inactive communicator", "Can not support more than",
            "Completion with unexpected NULL op_context",
            "Conn response request is not initialized. Call set_conn_resp_msg_data() first.",
            "Could not compile platform_type regex for", "Could not set registration request attributes, dev:",
            "Duplicate request in message buffer for msg", "Entry already exists for input (", "Error accessing device",
            "Error accessing endpoint. Endpoint has not been initialized.",
            "Error accessing libfabric NIC info. info has not been set.",
            "Error accessing plugin. Plugin has not been initialized yet.",
            "Error occurred while forming the complete topology XML file path. RC:", "Error preparing topology file name",
            "Expected initialized topology", "Expected topology node to be a PCI device or bridge",
            "Failed to access user data of data_iter", "Failed to copy ctrl data",
            "Failed to create device property path for property", "Failed to create device rail array from NIC info list",
            "Failed to determine device property path length of property", "Failed to find callback for id",
            "Failed to get rx_key", "Failed to get system page size (", "Failed to get tuner parameters for model.",
            "Failed to increase completion count for eager send request", "Failed to insert address in new endpoint",
            "Failed to insert new endpoint", "Failed to retrieve attributes from hwloc topology node",
            "Failed to set NCCL_PROTO:", "Invalid Device Interface", "Invalid NCCL OFI topology",
            "Invalid argument: NULL pointer detected", "Invalid buffer type provided:", "Invalid comm object provided",
            "Invalid communicator object provided", "Invalid device index", "Invalid device provided",
            "Invalid endpoint provided", "Invalid hwloc object attribute pointer. Expected pointer to pcidev, but got NULL",
            "Invalid listen communicator provided", "Invalid memory handle provided", "Invalid non-rx_buff request as ctx!",
            "Invalid num_devices pointer", "Invalid number of control rails. Expected at least one rail",
            "Invalid number of rails. Expected at least one rail", "Invalid number of receives:",
            "Invalid request context provided", "Invalid request provided", "Invalid result of msgbuff_complete for msg",
            "Invalid schedule for outgoing control message. Expected one rail, but got",
            "Invalid state of receive communicator object:", "Invalid state of topology. This state should not be reached.",
            "Invalid topology", "Invalid type in msg buff", "Invalid user data pointer",
            "MR cache: initial number of entries must be positive", "MR cache: page size must be positive",
            "Memory handles array is NULL", "Memory registration may not have completed.", "Mutex initialization failed:",
            "No ctrl msg entry found for tag", "No info list provided", "Provided handle is NULL", "Provided handle is nullptr",
            "Provided null request for cleanup", "RDMA write buffers should be pre-registered", "RECV event had NULL ctx!",
            "Received an invalid communicator ID", "Received eager message for non-existent r_comm (",
            "Received error entry without a context.", "Received write-immediate message for non-existent r_comm (",
            "Recv completion with unexpected type", "Regex match failed", "Request for group flush size of", "Schedule for req",
            "Unable to configure invalid endpoint",
            "Unable to retrieve next NIC info list from topology", "Unexpected communicator type. Communicator type:",
            "Unexpected completion flags 0x", "Unexpected result of nccl_ofi_msgbuff_insert for msg",
            "Unexpected result of nccl_ofi_msgbuff_replace for msg", "Unexpected status (", "Unexpected topo group size of",
            "Unexpected transaction direction. Transaction direction:", "Unexpected type (", "after get() called.",
            "do not match.  Aborting reorder.", "does not have valid free list", "elem is NULL", "from unexpected request type",
            "gdr_unpin_buffer failed:", "has invalid status.", "is larger than supplied buffer length", "ncclGetVersion returned",
            "object already has an active send communicator (", "option failed after succeeding during initialization",
            "out of range (max:", "pthread_mutex_init failed:", "pthread_once failed:",
            "recv_segms requests are never directly posted", "unknown transport", "used before initialized",
            // its own pools and queues
            " is full", "Cannot allocate an ID from a 0-sized pool", "Could not create eager header freelist for dev",
            "Freelist not allocated", "Receiver eager queue full",
            // the device-initiated (GIN) paths: signals, memory keys, peer addresses and IDs
            "Attempted to deregister NULL memory region handle", "Could not set registration request attributes, dev:",
            "Error accessing device", "Error accessing plugin: plugin has not been initialized.",
            "Failed to find rank", "Failed to insert duplicate comm_id", "GIN listen: ctx is NULL",
            "Invalid comm_id", "Invalid duplicate address", "Invalid request context provided", "Invalid type:",
            "Is the address vector using FI_AV_TABLE?", "Memory registration key is not available",
            "Only support signal add/increment", "Unknown GIN message type", "but existing registration has size",
            "gin GDAKI: createContext received NULL argument", "gin GDAKI: createContext_v14 received NULL config",
            "gin GDAKI: regMrSym rail", "not found in MR handle map", "not found or out of range)", "out of range for MR of size",
            "outside MR range",
            // the plugin statistics (histograms)
            "Cannot aggregate histogram", "Cannot print histograms, invalid print format or internal error",
            "Cannot register histogram", "failed to clone first histogram for aggregation",
            "failed to clone histogram for aggregation",
            // releasing what it holds (teardown)
            "Attempted to free an ID that", "Cannot free an ID from a 0-sized pool",
            "Did not find entry to delete", "Error retrieving MR key, leaking key", "Failed to close device property file",
            "Received close message for non-existent send comm id", "Unable to deallocate MR buffer(",
            "Unable to deallocate flush buffer (", "Unable to unmap MR buffer (", "ep was already closed", "gdr_unmap failed:",
            "pthread_mutex_destroy failed:", "rdma endpoint destructor: destroying pending_reqs_lock mutex failed, rc",
            "rdma endpoint destructor: tearing down freelists failed, rc",
            // texts it throws, printed by the WARN that catches them (`Caught exception in plugin init: ...`)
            "called after environ frozen", "commit before allocate", "double build", "double map", "double open",
            "domain is null", "fi_info is null", "get_device returned null", "reports zero rails", "sq_size is zero",
            "hints were not narrow enough", "got more than one GIN provider", "Failed to find comm_id",
            "Failed to insert comm_id", "Failed to remove comm_id",
            "Invalid msgbuff parameters",
            "constructor: mutex initialization failed", "Assertion `", "constructor: invalid device provided",
            "constructor: invalid topo group size",
        ],
        what: "aws-ofi-nccl's own consistency check failed",
        why: "the plugin checks its own state (a null argument or handle, a request, message, communicator or ID it does not expect, an index or size out of range, its view of the PCI topology) and the calls that fail only when something else already broke (a mutex, an unmap or close while tearing down), and this WARN names no setting or fault: most often it follows an earlier failure that left that state broken, for the checks on what NCCL hands the plugin (an invalid communicator, request, handle or buffer type, too many receives) also an NCCL the plugin release was not made for (the host's plugin under a container image's newer NCCL), else it is a defect of this plugin release",
        fix: "read the first NET/OFI or NCCL WARN of every rank (an earlier failure names the cause), for a check on what NCCL hands the plugin use the aws-ofi-nccl release made for the job's NCCL (the plugin's release notes name the NCCL releases it supports), and if it remains, rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and report that log on the aws-ofi-nccl issue tracker",
        checks: &[],
        examples: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Invalid request provided",
            "gpu-b:7711:7790 [1] NCCL WARN NET/OFI Called isend on inactive communicator",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Did not find entry to delete",
            "gpu-b:7711:7790 [3] NCCL WARN NET/OFI Signal offset 4096 out of range for MR of size 2048",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Caught exception in plugin init: rdma plugin constructor: invalid topo group size",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Caught exception in plugin listen: src/nccl_ofi_rdma.cpp:812: post_rx: Assertion `rail_id < num_rails' failed.",
        ],
        counter: &[
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed call to post_rx_buffer: -5",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI No IDs available (max: 32768)",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI CM connect failed: duplicate id insert",
            "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Caught exception in plugin connect: nccl_ofi_idpool_t: Cannot free an ID from a 0-sized pool",
        ],
    },
];

/// aws-ofi-nccl's WARNs that only relay an earlier failure: each is printed by a caller after the
/// function it called failed, and (read in the plugin's 1.21 sources) that function prints its own
/// WARN first on every path that fails, so the line names no cause of its own and is explained by
/// the shared follow-on finding (`nccl.follow_on`), which says to read the earlier WARN.
pub struct Relays {
    /// The WARN message (after the [`PREFIX`]) relays an earlier failure when it contains one of
    /// these (none of them matched by a rule of [`RULES`]).
    pub any: &'static [&'static str],
    /// Whole lines as NCCL prints them that must give `nccl.follow_on`.
    pub examples: &'static [&'static str],
    /// Lines that must not.
    pub counter: &'static [&'static str],
}

/// The relays of aws-ofi-nccl 1.21, by the call that WARNs before them.
pub const FOLLOW_ON: Relays = Relays {
    any: &[
        // posting and re-posting receive buffers and requests (their fi_* call WARNs first)
        "Failed call to post_rx_buffer: ",
        "Failed call to post_rx_buffs_on_rail",
        "Failed call to check_post_rx_buff_req",
        "Failed call to process_pending_reqs",
        "Call to post_with_pending_retry failed",
        "Failed to issue eager read",
        "Write failed for seq_num ",
        "Metadata send failed for seq_num ",
        // memory-registration clean-up (the MR cache WARNs first)
        "Failed call to dereg_mr",
        "Failed to delete MR cache entry",
        "Error de-registering MR",
        "Could not deregister freelist buffer",
        // requests taken from or returned to a freelist (the freelist WARNs first)
        "Unable to get NCCL OFI request for device",
        "Unable to get NCCL OFI receive request for device",
        "Unable to get NCCL OFI receive segments request for device",
        "Unable to get allocate flush buffer for device",
        "Call to nccl_ofi_freelist_entry_alloc failed",
        "No free eager header buffers",
        "No freelist items available",
        "Failed to insert receive segments request into recv request",
        "Failed to free receive request",
        "Failed to free eager copy request",
        "Failed to free rx_buff_req",
        // device and endpoint set-up (the provider, flush buffer or topology step WARNs first)
        "Preparation of rx buffers failed",
        "preparing for connection failed: ",
        "Failed to set iterator to begin of user data vector",
        "Error while checking whether hwloc topology node is",
        "Error while retrieving libfabric NIC info struct corresponding to hwloc topology node",
        "Failed to determine whether any NIC has an accelerator at the same PCI level",
        "Failed counting number of nodes that have a Nvidia GPU or NIC in their subtree",
        "Error while setting user data on path to root",
        "Data decoration failed.",
        "Retrieval of topology node corresponding to libfabric NIC failed",
        "Failed to write PCI NIC tag",
        "Failed to print opening PCI bridge tag",
        "Failed to write topology to NCCL topology file",
        "Unable to configure NVLS option",
        "Unable to configure tuner: ",
        "Unexpected failure setting inorder ",
        "Unexpected failure setting max_msg_size ",
        "lookup of rail for index ",
        "Failed to group NICs",
        // texts thrown right after a WARN of their own or of their callee (the exception's catcher
        // prints them: `Caught exception in rdma_init: ...`, `CM connect failed: ...`)
        "plugin constructor: NIC grouping failed",
        "plugin constructor: topology population failed",
        "endpoint rail init: ofi cq creation failed",
        "SEND RECV endpoint constructor: ofi cq creation failed",
        "endpoint constructor: initializing rails failed",
        "endpoint constructor: initializing rx_buffers failed",
        "endpoint constructor: failed to init av",
        "endpoint constructor: failed to init endpoint",
        "domain constructor: ofi domain creation failed",
        "domain constructor: domain creation failed",
        "device constructor: device rail array creation failed",
        "device constructor: connection prep failed",
        "device constructor: fabric creation failed",
        "device constructor: MR key config parse failed",
        "domain constructor: invalid size for mr keypool",
        "duplicate id insert",
        "endpoint: failed call to nccl_ofi_ofiutils_av_create",
        "endpoint: failed call to nccl_ofi_ofiutils_ep_create",
        "Failed call to fi_av_insert",
        "Failed to post rx buffer",
        "Failed to get EP address",
        "nccl_ofi_idpool_t: ",
        // GPU-initiated networking (the all-gather, CQ read, signal lookup or CUDA call WARNs first)
        "Failed to exchange connect metadata: ",
        "bootstrap allgather send reg failed",
        "bootstrap allgather recv reg failed",
        "bootstrap allgather send dereg failed",
        "bootstrap allgather recv dereg failed",
        "GIN: error listening on device ",
        "Failed to ensure signal segment for VA ",
        "Failed to process CQ for rail ",
        "gpu_mem_alloc for mr_handle array block failed",
        "h2d copy of mr_handle array block failed",
        "GDRCopy segment pin failed for ",
        "gdrcopy worker failed for signal seq_num ",
        "Local endpoint memory registration failed: ",
        // closing a listen communicator (destroying its receive communicator WARNs first)
        "Failed to close listen communicator",
        "Unable to close receive communicator stored in listen communicator",
        // teardown: NCCL closes a connection with transfers in flight only while it aborts
        "with inflight requests. Invalidating",
    ],
    examples: &[
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed call to post_rx_buffer: -5",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Unable to get NCCL OFI request for device 0",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Closing send_comm 0x7f00aa with inflight requests. Invalidating domain",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to write topology to NCCL topology file",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI CM connect failed: duplicate id insert",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Caught exception in rdma_init: RDMA domain constructor: ofi domain creation failed",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Caught exception in plugin init: Base device constructor: MR key config parse failed",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Caught exception in plugin connect: nccl_ofi_idpool_t: Attempted to free an ID that's not in use",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI CM connect failed: Failed call to fi_av_insert",
    ],
    counter: &[
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Error posting rx buffer. RC: -5, Error: Input/output error",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Failed to write topology to NCCL topology file. ERROR: No space left on device",
        "gpu-b:7711:7790 [0] NCCL WARN NET/OFI Invalid request provided",
    ],
};

/// The first rule of this table that explains the WARN message `msg` (what follows `NCCL WARN `),
/// else the shared `nccl.follow_on` rule for one of the [`FOLLOW_ON`] relays; only aws-ofi-nccl's
/// own messages (starting with [`PREFIX`]) are considered.
pub fn explain(msg: &str) -> Option<&'static WarnRule> {
    if !msg.starts_with(PREFIX) {
        return None;
    }
    crate::warn_rules::first_match(RULES, msg).or_else(|| {
        if FOLLOW_ON.any.iter().any(|f| msg.contains(f)) {
            crate::warn_rules::RULES
                .iter()
                .find(|r| r.id == "nccl.follow_on")
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }

    #[test]
    fn each_relay_example_is_a_follow_on_and_no_counter_example_is() {
        for e in FOLLOW_ON.examples {
            assert_eq!(explain(msg(e)).map(|x| x.id), Some("nccl.follow_on"), "{e}");
        }
        for c in FOLLOW_ON.counter {
            assert_ne!(explain(msg(c)).map(|x| x.id), Some("nccl.follow_on"), "{c}");
        }
        // A relay fragment that a rule of this table also matches would never be reached.
        for f in FOLLOW_ON.any {
            let m = format!("{PREFIX}{f}");
            assert!(crate::warn_rules::first_match(RULES, &m).is_none(), "{f}");
            assert!(!f.contains('%'), "{f}: a printf conversion");
        }
    }

    #[test]
    fn only_the_plugins_own_messages_match() {
        // The same words without the plugin's prefix are not aws-ofi-nccl's.
        assert!(explain("No IDs available (max: 32768)").is_none());
        assert!(explain("NET/OFI No IDs available (max: 32768)").is_some());
    }
}

//! A network plugin that failed to load or initialise, named as the cause of a Socket fallback.
//!
//! NCCL loads an external network plugin (`libnccl-net.so`, `libnccl-net-ofi.so`: aws-ofi-nccl on
//! EFA, a vendor's on other fabrics) and, when none loads, falls back to its own IB or Socket
//! transport without failing (NCCL docs: "Environment Variables", `NCCL_NET_PLUGIN` / `NCCL_NET`).
//! Two cases look alike in the log and must be told apart:
//! - no plugin installed (`No plugin found (libnccl-net.so), using internal implementation`,
//!   `Could not find: libnccl-net.so`): normal on hosts without EFA or a vendor plugin;
//! - a plugin that is there but failed: a `dlerror` about one of its dependencies (a Libfabric
//!   without the symbol version it needs, `version 'FABRIC_1.7' not found`; a missing `.so`; an
//!   undefined symbol), aws-ofi-nccl's own `NET/OFI … failed` WARN lines, or `Failed to initialize
//!   NET plugin IB` on a host whose NET/IB did find devices.
//!
//! A failure followed by `Using network Socket` on a run across nodes is no-go with the plugin's
//! own error as the cause; on one node, or when another network was still used, a warning.

use crate::model::{Finding, Severity};
use crate::parse::Parsed;

/// The plugin errors of a parsed file, in the plugin's or loader's own words, first one first.
/// `Failed to initialize NET plugin IB` counts only when NET/IB did not say `No device found`
/// (a host without HCAs: the same as no plugin).
pub fn errors(p: &Parsed) -> Vec<String> {
    let facts = &p.facts;
    let mut v = facts.net_plugin_errors.clone();
    for name in &facts.net_plugin_failures {
        if name == "IB" && facts.ib_no_device {
            continue;
        }
        v.push(format!("Failed to initialize NET plugin {name}"));
    }
    v
}

/// Adds `nccl.net_plugin_failed` when a network plugin failed; returns `true` when that finding
/// explains a Socket fallback (so the generic "not EFA"/"Socket" findings need not repeat it).
pub fn check(q: &str, p: &Parsed, f: &mut Vec<Finding>) -> bool {
    let errs = errors(p);
    let Some(first) = errs.first() else {
        return false;
    };
    let facts = &p.facts;
    let socket = facts.networks.iter().any(|n| n == "Socket");
    let inter = facts.inter_node();
    let more = if errs.len() > 1 {
        format!(" (and {} more: {})", errs.len() - 1, errs[1..].join("; "))
    } else {
        String::new()
    };
    let nodes = match facts.nnodes {
        Some(n) if n > 1 => format!(" between {n} nodes"),
        _ if facts.hosts.len() > 1 => format!(" between {} hosts", facts.hosts.len()),
        _ => String::new(),
    };
    let (severity, what, why) = if socket && inter != Some(false) {
        (
            Severity::NoGo,
            format!("{q}: the network plugin failed: {first}{more}; NCCL fell back to Socket (TCP){nodes}"),
            "traffic between nodes then runs over TCP at a fraction of the EFA/IB bandwidth, so the run proves nothing about the fabric and training would crawl".to_string(),
        )
    } else if socket {
        (
            Severity::Warning,
            format!("{q}: the network plugin failed: {first}{more}; NCCL uses Socket (TCP) (this run stayed on one node)"),
            "every multi-node job on these hosts will fall back to TCP the same way".to_string(),
        )
    } else {
        (
            Severity::Warning,
            format!(
                "{q}: a network plugin failed: {first}{more}; NCCL still used {}",
                if facts.networks.is_empty() { "an unknown network".to_string() } else { facts.networks.join(", ") }
            ),
            "some processes may have fallen back to another transport, and the next job may not be as lucky".to_string(),
        )
    };
    f.push(Finding {
        id: "nccl.net_plugin_failed",
        severity,
        what,
        why,
        fix: fix_for(first),
    });
    socket && severity == Severity::NoGo
}

/// The fix for one plugin error, by its kind.
pub fn fix_for(err: &str) -> String {
    if err.contains("FABRIC_") && err.contains("not found") {
        "the plugin was built for a newer Libfabric than the one it loaded: put the EFA installer's Libfabric first (LD_LIBRARY_PATH=/opt/amazon/efa/lib:$LD_LIBRARY_PATH) or install the aws-ofi-nccl build made for the Libfabric on the hosts (aws-ofi-nccl release notes), then rerun with NCCL_DEBUG=INFO".into()
    } else if err.contains("cannot open shared object file") {
        "a library the plugin needs is missing in the job's environment (host or container image): install it or add its directory to LD_LIBRARY_PATH, then rerun with NCCL_DEBUG=INFO".into()
    } else if err.contains("undefined symbol") {
        "the plugin and the libraries it loaded come from different releases: use one matched NCCL, aws-ofi-nccl and Libfabric set (the container image's or the host's, not a mix), then rerun".into()
    } else if err.contains("NET plugin IB") || err.starts_with("NET/IB") {
        "check the HCAs inside the job (ibv_devinfo, ibstat: port ACTIVE), that /dev/infiniband is visible to the job, and NCCL_IB_HCA, then rerun with NCCL_DEBUG=INFO".into()
    } else {
        "run `fi_info -p efa` inside the job (same container and srun options): if it lists no efa provider, make /dev/infiniband/uverbs* visible to the job (cgroup devices, container mounts), unset FI_PROVIDER, and check the EFA driver (aws-ofi-nccl and AWS EFA troubleshooting guides), then rerun with NCCL_DEBUG=INFO".into()
    }
}

//! The fabric the run used: `Using network Libfabric`/`IB`/`Socket` against `--fabric` and the EFA
//! evidence, provider `efa`, GPUDirect RDMA (`/GDRDMA`) and `found N nics` against `--expect-nics`
//! (AWS EFA user guide; aws-ofi-nccl README; NCCL docs, environment variables).

use super::{CheckOptions, Fabric, Finding, Severity};
use crate::parse::Parsed;

fn is_libfabric(net: &str) -> bool {
    net.eq_ignore_ascii_case("Libfabric") || net.eq_ignore_ascii_case("AWS Libfabric")
}

fn is_ib(net: &str) -> bool {
    net == "IB" || net.starts_with("IBext")
}

pub(super) fn check_network(
    q: &str,
    p: &Parsed,
    opts: &CheckOptions,
    plugin_explains_socket: bool,
    f: &mut Vec<Finding>,
) {
    let facts = &p.facts;
    let efa_evidence = facts.ofi_version.is_some()
        || facts.providers.iter().any(|x| x.provider == "efa")
        || facts.networks.iter().any(|n| is_libfabric(n));
    let expect = opts.fabric.or(if efa_evidence {
        Some(Fabric::Efa)
    } else {
        None
    });
    let nets = &facts.networks;
    let net_list = nets.join(", ");
    match expect {
        Some(fabric) if nets.is_empty() => {
            f.push(Finding {
                id: "nccl.network_unknown",
                severity: Severity::Warning,
                what: format!(
                    "{q}: no 'Using network' line, so the {} path is not proven",
                    fabric_name(fabric)
                ),
                why: "only NCCL_DEBUG=INFO logs show which network NCCL picked (NCCL docs: NCCL_DEBUG)".into(),
                fix: "rerun with NCCL_DEBUG=INFO (srun --export=ALL,NCCL_DEBUG=INFO)".into(),
            });
        }
        Some(Fabric::Efa) => {
            if let Some(bad) = nets
                .iter()
                .find(|n| !is_libfabric(n))
                .filter(|n| !(plugin_explains_socket && *n == "Socket"))
            {
                f.push(Finding {
                    id: "nccl.not_efa",
                    severity: Severity::NoGo,
                    what: format!("{q}: NCCL used network {bad} (all: {net_list}), not Libfabric"),
                    why: if bad == "Socket" {
                        "the EFA plugin was not loaded and traffic fell back to TCP: bandwidth drops to a fraction (AWS EFA user guide, \"Get started with EFA and NCCL\")".into()
                    } else {
                        "an EFA cluster must run NCCL over aws-ofi-nccl (Libfabric); anything else departs from the EFA path".into()
                    },
                    fix: "keep NCCL_NET_PLUGIN=ofi (the image default), remove NCCL_NET and NCCL_IB_* from the job environment, and rerun with NCCL_DEBUG=INFO".into(),
                });
            }
            if let Some(bad) = facts.providers.iter().find(|x| x.provider != "efa") {
                f.push(Finding {
                    id: "nccl.provider_not_efa",
                    severity: Severity::NoGo,
                    what: format!(
                        "{q}: aws-ofi-nccl selected provider {}{}",
                        bad.provider,
                        bad.host.as_ref().map(|h| format!(" on {h}")).unwrap_or_default()
                    ),
                    why: "only the efa provider uses the EFA devices; others (tcp, sockets) are far slower (aws-ofi-nccl README)".into(),
                    fix: "unset FI_PROVIDER or set FI_PROVIDER=efa, and check that /dev/infiniband is visible in the job".into(),
                });
            }
            if facts.providers.is_empty() && nets.iter().all(|n| is_libfabric(n)) {
                f.push(Finding {
                    id: "nccl.provider_unknown",
                    severity: Severity::Warning,
                    what: format!("{q}: Libfabric in use but no 'Selected provider is' line"),
                    why: "the provider and NIC count prove all EFA devices are used (aws-ofi-nccl logs them at NCCL_DEBUG=INFO)".into(),
                    fix: "keep the whole NCCL_DEBUG=INFO output of every rank (NCCL_DEBUG_SUBSYS must include INIT,NET)".into(),
                });
            }
            for e in facts
                .env
                .iter()
                .filter(|e| e.name == "NCCL_NET" || e.name.starts_with("NCCL_IB_"))
            {
                f.push(Finding {
                    id: "nccl.ib_env_on_efa",
                    severity: Severity::Warning,
                    what: format!("{q}: {} is set to {} on an EFA run", e.name, e.value),
                    why: "IB settings carried over from another cluster drop EFA to TCP or fail init (NCCL docs: NCCL_NET, NCCL_IB_HCA)".into(),
                    fix: format!("remove {} from the job environment", e.name),
                });
            }
        }
        Some(Fabric::Ib) => {
            if let Some(bad) = nets.iter().find(|n| !is_ib(n)) {
                f.push(Finding {
                    id: "nccl.not_ib",
                    severity: Severity::NoGo,
                    what: format!("{q}: NCCL used network {bad} (all: {net_list}), not IB"),
                    why: "the run did not use the InfiniBand fabric, so it says nothing about it and will be far slower".into(),
                    fix: "check ibstat on every node, NCCL_IB_HCA, and that /dev/infiniband is visible in the job".into(),
                });
            }
        }
        None => {
            if nets.iter().any(|n| n == "Socket") {
                if facts.inter_node() == Some(false) {
                    f.push(Finding {
                        id: "nccl.single_node",
                        severity: Severity::Info,
                        what: format!(
                            "{q}: one node (nNodes 1): no traffic between nodes; inside the node: {}",
                            intra_node_transports(facts)
                        ),
                        why: "a single-node run checks the GPUs, the driver and NCCL, not the network between nodes".into(),
                        fix: "run 2 or more nodes to validate the fabric".into(),
                    });
                } else if opts.expect_nics.is_none() && !plugin_explains_socket {
                    let plugin = if facts.net_plugin_absent {
                        " (no external network plugin on these hosts: NCCL used its own TCP transport)"
                    } else {
                        ""
                    };
                    f.push(Finding {
                        id: "nccl.socket",
                        severity: Severity::Warning,
                        what: format!("{q}: NCCL used network Socket (TCP){}{plugin}", if facts.net_connections > 0 { format!(", {} connections through NET/Socket", facts.net_connections) } else { String::new() }),
                        why: "inter-node traffic over TCP runs at a fraction of EFA/IB bandwidth".into(),
                        fix: "if the nodes have EFA or IB, check NCCL_NET_PLUGIN and leftover NCCL_NET/NCCL_IB_* settings; pass --fabric efa|ib to make this a no-go".into(),
                    });
                }
            }
        }
    }
    if !plugin_explains_socket {
        check_nics(q, p, opts, expect, f);
    }
    // GPUDirect RDMA: expected on EFA/IB when connections went through the network.
    let rdma_net = expect.is_some() || nets.iter().any(|n| is_libfabric(n) || is_ib(n));
    if rdma_net && facts.net_connections > 0 && facts.gdrdma_connections < facts.net_connections {
        f.push(Finding {
            id: "nccl.no_gdrdma",
            severity: Severity::Warning,
            what: format!(
                "{q}: {} of {} network connections use GPUDirect RDMA (/GDRDMA)",
                facts.gdrdma_connections, facts.net_connections
            ),
            why: "without GPUDirect RDMA every transfer is staged through host memory and busbw drops".into(),
            fix: "check that /dev/gdrdrv and nvidia_peermem (or dma-buf) are available inside the job, and that FI_EFA_USE_DEVICE_RDMA is not 0".into(),
        });
    }
}

/// `48 P2P connections`, `8 SHM connections`, `8 connections through the network transport`, or
/// `no connection lines logged`.
fn intra_node_transports(facts: &crate::log::LogFacts) -> String {
    let mut parts = Vec::new();
    if facts.p2p_connections > 0 {
        parts.push(format!("{} P2P connections", facts.p2p_connections));
    }
    if facts.shm_connections > 0 {
        parts.push(format!("{} SHM connections", facts.shm_connections));
    }
    if facts.net_connections > 0 {
        parts.push(format!(
            "{} connections through the network transport ({})",
            facts.net_connections,
            facts.net_transports.join(", ")
        ));
    }
    if parts.is_empty() {
        "no connection lines logged".into()
    } else {
        parts.join(", ")
    }
}

fn fabric_name(f: Fabric) -> &'static str {
    match f {
        Fabric::Efa => "EFA",
        Fabric::Ib => "IB",
    }
}

fn check_nics(
    q: &str,
    p: &Parsed,
    opts: &CheckOptions,
    expect: Option<Fabric>,
    f: &mut Vec<Finding>,
) {
    let Some(want) = opts.expect_nics else {
        return;
    };
    let facts = &p.facts;
    let fix = "check that every EFA/IB device is visible in the job (/dev/infiniband, cgroup ConstrainDevices, ENROOT_RESTRICT_DEV n) and healthy (fi_info -p efa, ibstat), then rerun".to_string();
    let why = "fewer NICs means a fraction of the node's network bandwidth (aws-ofi-nccl logs `found N nics` for every NIC it uses)".to_string();
    let uses_ib = facts.networks.iter().any(|n| is_ib(n)) || expect == Some(Fabric::Ib);
    if let Some((min, hosts)) = facts.min_nics() {
        if min < want {
            let on = if hosts.is_empty() {
                String::new()
            } else {
                format!(" on {}", hosts.join(", "))
            };
            f.push(Finding {
                id: "nccl.nics",
                severity: Severity::NoGo,
                what: format!("{q}: aws-ofi-nccl found {min} NICs{on}, expected {want}"),
                why,
                fix,
            });
        }
    } else if uses_ib && facts.ib_nics.is_some() {
        let n = facts.ib_nics.unwrap_or(0);
        if n < want {
            f.push(Finding {
                id: "nccl.nics",
                severity: Severity::NoGo,
                what: format!("{q}: NET/IB uses {n} HCAs, expected {want}"),
                why,
                fix,
            });
        }
    } else if facts.networks.iter().any(|n| n == "Socket") {
        f.push(Finding {
            id: "nccl.nics",
            severity: Severity::NoGo,
            what: format!(
                "{q}: NCCL fell back to Socket ({} interface{}), expected {want} NICs",
                facts.socket_nics.unwrap_or(0),
                if facts.socket_nics == Some(1) { "" } else { "s" }
            ),
            why: "TCP over the host interface uses none of the high-speed NICs".into(),
            fix: "keep NCCL_NET_PLUGIN=ofi (EFA) or check the IB HCAs, remove leftover NCCL_NET/NCCL_IB_* settings, and rerun".into(),
        });
    } else {
        f.push(Finding {
            id: "nccl.nics_unknown",
            severity: Severity::Warning,
            what: format!("{q}: no NIC count in the file, expected {want}"),
            why: "only the NCCL_DEBUG=INFO 'found N nics' line proves every NIC is used".into(),
            fix: "rerun with NCCL_DEBUG=INFO".into(),
        });
    }
}

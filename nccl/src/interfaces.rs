//! The interfaces NCCL's Socket transport, its bootstrap and NET/IB's out-of-band channel use,
//! judged: a container bridge, a veth, an overlay, the loopback or a link-local address does not
//! carry traffic between nodes, so connections hang or crawl. NCCL picks interfaces by its own
//! order unless `NCCL_SOCKET_IFNAME` names them (NCCL docs: "Environment Variables",
//! `NCCL_SOCKET_IFNAME`, whose `^` prefix excludes).

use crate::log::SocketInterface;
use crate::model::{Finding, Severity};
use crate::parse::Parsed;

/// Why an interface cannot carry traffic between nodes; `None` when it can.
pub fn bad_reason(name: &str, addr: &str) -> Option<&'static str> {
    const VIRTUAL: [&str; 14] = [
        "docker", "br-", "virbr", "lxcbr", "lxdbr", "cni", "flannel", "cali", "weave", "vxlan",
        "tunl", "kube", "podman", "veth",
    ];
    let a = addr.to_ascii_lowercase();
    if name == "lo" || a.starts_with("127.") || a == "::1" {
        Some("loopback")
    } else if a.starts_with("169.254.") || a.starts_with("fe80") {
        Some("link-local address")
    } else if VIRTUAL.iter().any(|v| name.starts_with(v)) {
        Some("container bridge or virtual interface")
    } else {
        None
    }
}

/// Adds `nccl.socket_ifname` when a listed interface cannot reach other nodes.
pub fn check(q: &str, p: &Parsed, f: &mut Vec<Finding>) {
    let facts = &p.facts;
    let bad: Vec<(&SocketInterface, &str)> = facts
        .socket_interfaces
        .iter()
        .filter_map(|i| bad_reason(&i.name, &i.addr).map(|r| (i, r)))
        .collect();
    if bad.is_empty() {
        return;
    }
    let mut listed: Vec<String> = Vec::new();
    for (i, r) in &bad {
        let s = format!("{} ({}, {r})", i.name, i.addr);
        if !listed.contains(&s) {
            listed.push(s);
        }
    }
    let roles: Vec<&str> = {
        let mut r: Vec<&str> = bad.iter().map(|(i, _)| i.role).collect();
        r.dedup();
        r
    };
    let good = facts
        .socket_interfaces
        .iter()
        .find(|i| bad_reason(&i.name, &i.addr).is_none())
        .map(|i| i.name.clone());
    let socket_ifaces: Vec<&SocketInterface> = facts
        .socket_interfaces
        .iter()
        .filter(|i| i.role == "socket")
        .collect();
    let all_socket_bad = !socket_ifaces.is_empty()
        && socket_ifaces
            .iter()
            .all(|i| bad_reason(&i.name, &i.addr).is_some());
    let socket_between_nodes =
        facts.networks.iter().any(|n| n == "Socket") && facts.inter_node() == Some(true);
    let severity = if all_socket_bad && socket_between_nodes {
        Severity::NoGo
    } else {
        Severity::Warning
    };
    let exclude = "NCCL_SOCKET_IFNAME=^docker,lo,veth,virbr,br-";
    let fix = match good {
        Some(g) => format!("set NCCL_SOCKET_IFNAME={g} (the interface that carries the nodes' own addresses) in the job environment, or exclude the others with {exclude}"),
        None => format!("set NCCL_SOCKET_IFNAME to the interface that carries the nodes' own addresses (e.g. NCCL_SOCKET_IFNAME=eth0; see `ip -br addr` on a node), or exclude with {exclude}"),
    };
    f.push(Finding {
        id: "nccl.socket_ifname",
        severity,
        what: format!(
            "{q}: NCCL's {} uses {}",
            roles
                .iter()
                .map(|r| match *r {
                    "socket" => "Socket transport",
                    "bootstrap" => "bootstrap",
                    _ => "out-of-band channel",
                })
                .collect::<Vec<_>>()
                .join(" and "),
            listed.join(", ")
        ),
        why: "NCCL spreads connections over every listed interface, and a bridge, veth, overlay, loopback or link-local address does not reach the other nodes: connections hang at init or crawl".into(),
        fix,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_kinds() {
        assert_eq!(bad_reason("eth0", "10.0.0.5"), None);
        assert_eq!(bad_reason("ens5", "172.31.4.37"), None);
        assert!(bad_reason("docker0", "172.17.0.1").is_some());
        assert!(bad_reason("veth1a2b", "10.1.0.1").is_some());
        assert!(bad_reason("eth1", "169.254.3.1").is_some());
        assert!(bad_reason("eth0", "fe80::1%eth0").is_some());
        assert!(bad_reason("lo", "127.0.0.1").is_some());
        assert!(bad_reason("flannel.1", "10.244.3.0").is_some());
    }
}

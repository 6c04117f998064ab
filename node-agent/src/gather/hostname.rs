//! Facts for `node.hostname.*`: the hostname, `getaddrinfo` answers in resolver order, this node's
//! own addresses (an rtnetlink dump, as `getifaddrs` lists them), and `NodeAddr` from slurm.conf.

use super::Ctx;
use launchguard_core::node::hostname::HostnameFacts;
use std::net::{IpAddr, ToSocketAddrs};

/// Resolves a name as slurmd does (`getaddrinfo`, any family), keeping the resolver's order.
pub fn resolve(name: &str) -> Result<Vec<IpAddr>, String> {
    match (name, 0u16).to_socket_addrs() {
        Ok(it) => {
            let mut v: Vec<IpAddr> = vec![];
            for a in it {
                if !v.contains(&a.ip()) {
                    v.push(a.ip());
                }
            }
            Ok(v)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Every address of every interface of this node: one rtnetlink address dump
/// ([`super::netlink_addrs`]), else `getifaddrs(3)` (the same list at a higher cost).
pub fn own_addresses() -> Vec<IpAddr> {
    match super::netlink_addrs::addresses() {
        Ok(v) => return v,
        Err(e) => tracing::debug!("{e}; asking getifaddrs"),
    }
    let mut v = vec![];
    if let Ok(ifs) = nix::ifaddrs::getifaddrs() {
        for i in ifs {
            let Some(a) = i.address else { continue };
            if let Some(s) = a.as_sockaddr_in() {
                v.push(IpAddr::V4(s.ip()));
            } else if let Some(s) = a.as_sockaddr_in6() {
                v.push(IpAddr::V6(s.ip()));
            }
        }
    }
    v
}

/// Gathers the hostname family's facts.
pub fn gather(ctx: &Ctx) -> HostnameFacts {
    let hostname = super::node_name();
    let (_, conf) = ctx.slurm_conf();
    let conf = conf.ok();
    let node = ctx.slurm_node_name(conf.as_ref());
    let node_addr = conf
        .as_ref()
        .and_then(|c| c.node(&node))
        .and_then(|l| l.get_for("NodeAddr", &node))
        .map(|na| {
            let r = match na.parse::<IpAddr>() {
                Ok(ip) => Ok(vec![ip]),
                Err(_) => resolve(&na),
            };
            (na, r)
        });
    let addrs = resolve(&hostname);
    // std reports EAI_AGAIN as "Temporary failure in name resolution" (gai_strerror).
    let transient =
        matches!(&addrs, Err(e) if e.contains("Temporary failure") || e.contains("try again"));
    HostnameFacts {
        addrs,
        transient,
        hostname,
        own: own_addresses(),
        node_addr,
        cluster_nodes: conf.as_ref().and_then(|c| c.node_count()),
    }
}

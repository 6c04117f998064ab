//! `node.hostname.*`: how this node's name resolves (Slurm's slurm.conf(5) NodeName/NodeAddr and the Slurm
//! network set-up guidance: the node's hostname must resolve to its IPv4 address; a first answer of `fe80::…` or a loopback address breaks
//! slurmd registration, srun's I/O connections and NCCL/MPI bootstrap on multi-node jobs).

use super::{quote, Outcome, Status};
use std::net::IpAddr;

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.hostname.resolves",
        "the node's hostname resolves to an IPv4 address",
    ),
    (
        "node.hostname.link_local",
        "the first address of the hostname is not IPv6 link-local (fe80::)",
    ),
    (
        "node.hostname.loopback",
        "on a multi-node cluster, the hostname does not resolve only to loopback",
    ),
    (
        "node.hostname.node_addr",
        "the node's NodeAddr in slurm.conf is one of this node's addresses",
    ),
];

/// Everything the hostname family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostnameFacts {
    /// This node's hostname (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// `getaddrinfo(hostname)` answers in resolver order, or the resolver's error.
    pub addrs: Result<Vec<IpAddr>, String>,
    /// The resolver's error was temporary (EAI_AGAIN: DNS unreachable), not an answer.
    pub transient: bool,
    /// This node's own addresses (every interface, loopback included).
    pub own: Vec<IpAddr>,
    /// `NodeAddr=` of this node in slurm.conf, if set, and what it resolves to (`Err`: resolver error).
    pub node_addr: Option<(String, Result<Vec<IpAddr>, String>)>,
    /// Nodes defined in slurm.conf (`None`: slurm.conf not readable).
    pub cluster_nodes: Option<usize>,
}

fn is_link_local(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80)
}

/// Judges the hostname family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &HostnameFacts) -> Vec<Outcome> {
    let addrs = match &f.addrs {
        Ok(a) => a.as_slice(),
        Err(e) if f.transient => {
            // A DNS outage is not this node's fault: judging it would drain every node at once.
            let name = quote(&f.hostname);
            return CHECKS
                .iter()
                .map(|(id, _)| {
                    Outcome::unknown(id, format!("resolving {name} failed for now ({e})"))
                })
                .collect();
        }
        Err(_) => &[],
    };
    vec![
        check_hostname_resolves(f, addrs),
        check_hostname_link_local(f, addrs),
        check_hostname_loopback(f, addrs),
        check_hostname_node_addr(f),
    ]
}

/// The fix for a name that resolves wrongly: an /etc/hosts line, so `what` holds.
fn hosts_fix(f: &HostnameFacts, what: &str) -> String {
    format!(
        "add '<this node's IPv4> {}' to /etc/hosts (or fix DNS) so {what}",
        f.hostname
    )
}

/// `node.hostname.resolves`: the hostname resolves, to an IPv4 address.
fn check_hostname_resolves(f: &HostnameFacts, addrs: &[IpAddr]) -> Outcome {
    let name = quote(&f.hostname);
    match &f.addrs {
        Err(e) => Outcome::new(
            "node.hostname.resolves",
            Status::Critical,
            format!("hostname {name} does not resolve ({e})"),
            "slurmd, srun and NCCL's bootstrap look nodes up by name",
            hosts_fix(f, "it resolves"),
        ),
        Ok(_) if addrs.iter().any(IpAddr::is_ipv4) => Outcome::ok("node.hostname.resolves"),
        Ok(_) => Outcome::new(
            "node.hostname.resolves",
            Status::Critical,
            format!("hostname {name} resolves to no IPv4 address"),
            "Slurm daemons and NCCL's bootstrap connect over IPv4 here",
            hosts_fix(f, "it resolves to IPv4"),
        ),
    }
}

/// `node.hostname.link_local`: the first address is not link-local.
fn check_hostname_link_local(f: &HostnameFacts, addrs: &[IpAddr]) -> Outcome {
    let name = quote(&f.hostname);
    match addrs.first() {
        Some(a) if is_link_local(a) => Outcome::new(
            "node.hostname.link_local",
            Status::Critical,
            format!("hostname {name} resolves first to the link-local address {a}"),
            "a link-local address has no scope outside this host: slurmd registers and srun connects to an address other nodes cannot reach",
            hosts_fix(f, "its IPv4 address comes first"),
        ),
        // Issue 24 item 8: after a usable first answer the link-local one is a trap, not a failure
        // (slurmd and srun take the first address).
        _ => match addrs.iter().find(|a| is_link_local(a)) {
            Some(a) => Outcome::new(
                "node.hostname.link_local",
                Status::Warning,
                format!(
                    "hostname {name} also resolves to the link-local address {a} (not first)"
                ),
                "Slurm takes the first address, but programs that try each address in turn (MPI and NCCL bootstraps, or any resolver order changed by /etc/gai.conf) can pick it, and it has no scope outside this host",
                format!(
                    "remove the {a} entry for {} from /etc/hosts (or DNS)",
                    f.hostname
                ),
            ),
            None => Outcome::ok("node.hostname.link_local"),
        },
    }
}

/// `node.hostname.loopback`: on a multi-node cluster, the first IPv4 address is not loopback.
fn check_hostname_loopback(f: &HostnameFacts, addrs: &[IpAddr]) -> Outcome {
    let name = quote(&f.hostname);
    let v4: Vec<&IpAddr> = addrs.iter().filter(|a| a.is_ipv4()).collect();
    // The first IPv4 answer is the one used (RFC 3484 sorts 127.0.1.1 before a real address).
    let first_loopback = v4.first().is_some_and(|a| a.is_loopback());
    match f.cluster_nodes {
        _ if !first_loopback => Outcome::ok("node.hostname.loopback"),
        Some(n) if n <= 1 => Outcome::ok("node.hostname.loopback"),
        Some(n) => Outcome::new(
            "node.hostname.loopback",
            Status::Critical,
            format!("hostname {name} resolves first to loopback ({}) on a {n}-node cluster", v4[0]),
            "multi-node steps hand out this address: tasks on other nodes connect to themselves and hang or fail",
            hosts_fix(
                f,
                &format!(
                "it resolves to the address other nodes reach (remove the name from the {} line)",
                v4[0]
            )),
        ),
        None => Outcome::unknown(
            "node.hostname.loopback",
            "hostname resolves first to loopback and the cluster size is unknown (slurm.conf unreadable)",
        ),
    }
}

/// `node.hostname.node_addr`: slurm.conf's NodeAddr for this node resolves to one of its addresses.
fn check_hostname_node_addr(f: &HostnameFacts) -> Outcome {
    match &f.node_addr {
        None => Outcome::ok("node.hostname.node_addr"),
        Some((na, Err(e))) => Outcome::new(
            "node.hostname.node_addr",
            Status::Critical,
            format!(
                "NodeAddr {} in slurm.conf does not resolve ({e})",
                quote(na)
            ),
            "slurmctld cannot reach this node's slurmd, so the node goes DOWN",
            "set NodeAddr to this node's IPv4 address in slurm.conf and run scontrol reconfigure",
        ),
        Some((na, Ok(resolved))) => {
            let mine = resolved.iter().any(|a| f.own.contains(a));
            if mine {
                Outcome::ok("node.hostname.node_addr")
            } else {
                let own_v4: Vec<String> = f
                    .own
                    .iter()
                    .filter(|a| a.is_ipv4() && !a.is_loopback())
                    .map(|a| a.to_string())
                    .collect();
                Outcome::new(
                    "node.hostname.node_addr",
                    Status::Critical,
                    format!(
                        "NodeAddr {} in slurm.conf is not an address of this node (it has {})",
                        quote(na),
                        if own_v4.is_empty() { "only loopback".to_string() } else { own_v4.join(", ") }
                    ),
                    "slurmctld sends this node's jobs to another host, or to nobody",
                    "set NodeAddr to one of the addresses above in slurm.conf on every node and run scontrol reconfigure",
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn facts(addrs: &[&str], nodes: usize) -> HostnameFacts {
        HostnameFacts {
            hostname: "gpu-01".into(),
            addrs: Ok(addrs.iter().map(|a| ip(a)).collect()),
            transient: false,
            own: vec![ip("127.0.0.1"), ip("10.0.0.5")],
            node_addr: None,
            cluster_nodes: Some(nodes),
        }
    }

    fn status(f: &HostnameFacts, id: &str) -> Status {
        judge(f).into_iter().find(|o| o.id == id).unwrap().status
    }

    #[test]
    fn good_node_is_ok_and_covers_every_id() {
        let out = judge(&facts(&["10.0.0.5"], 16));
        assert_eq!(
            out.iter().map(|o| o.id).collect::<Vec<_>>(),
            CHECKS.iter().map(|c| c.0).collect::<Vec<_>>()
        );
        assert!(out.iter().all(|o| o.status == Status::Ok), "{out:?}");
    }

    #[test]
    fn link_local_first_is_critical_even_with_ipv4_after() {
        let f = facts(&["fe80::1", "10.0.0.5"], 2);
        assert_eq!(status(&f, "node.hostname.link_local"), Status::Critical);
        assert_eq!(status(&f, "node.hostname.resolves"), Status::Ok);
        let f = facts(&["fe80::1"], 2);
        assert_eq!(status(&f, "node.hostname.resolves"), Status::Critical);
    }

    /// Issue 24 item 8: fe80:: present but not first is a warning (before: OK).
    #[test]
    fn link_local_after_ipv4_is_a_warning() {
        let f = facts(&["10.0.0.5", "fe80::1"], 2);
        assert_eq!(status(&f, "node.hostname.link_local"), Status::Warning);
        let o = judge(&f)
            .into_iter()
            .find(|o| o.id == "node.hostname.link_local")
            .unwrap();
        assert!(o.what.contains("fe80::1 (not first)"), "{}", o.what);
        assert!(o.fix.starts_with("remove the fe80::1 entry"), "{}", o.fix);
        assert_eq!(
            status(&facts(&["10.0.0.5", "::1"], 2), "node.hostname.link_local"),
            Status::Ok
        );
    }

    #[test]
    fn loopback_only_is_fine_on_one_node_and_critical_on_many() {
        assert_eq!(
            status(&facts(&["127.0.1.1"], 1), "node.hostname.loopback"),
            Status::Ok
        );
        assert_eq!(
            status(&facts(&["127.0.1.1"], 3), "node.hostname.loopback"),
            Status::Critical
        );
        assert_eq!(
            status(
                &facts(&["127.0.1.1", "10.0.0.5"], 3),
                "node.hostname.loopback"
            ),
            Status::Critical
        );
        assert_eq!(
            status(
                &facts(&["10.0.0.5", "127.0.1.1"], 3),
                "node.hostname.loopback"
            ),
            Status::Ok
        );
        let mut f = facts(&["127.0.1.1"], 3);
        f.cluster_nodes = None;
        assert_eq!(status(&f, "node.hostname.loopback"), Status::Unknown);
    }

    #[test]
    fn unresolvable_name_and_foreign_node_addr_are_critical() {
        let mut f = facts(&[], 2);
        f.addrs = Err("Name or service not known".into());
        assert_eq!(status(&f, "node.hostname.resolves"), Status::Critical);
        f.transient = true;
        assert!(judge(&f).iter().all(|o| o.status == Status::Unknown));
        let mut f = facts(&["10.0.0.5"], 2);
        f.node_addr = Some(("10.0.0.9".into(), Ok(vec![ip("10.0.0.9")])));
        assert_eq!(status(&f, "node.hostname.node_addr"), Status::Critical);
        f.node_addr = Some(("10.0.0.5".into(), Ok(vec![ip("10.0.0.5")])));
        assert_eq!(status(&f, "node.hostname.node_addr"), Status::Ok);
    }
}

//! This node's interface addresses from one rtnetlink dump of `RTM_GETADDR` (rtnetlink(7)), the
//! addresses `getifaddrs(3)` lists, without its `RTM_GETLINK` dump: glibc's `getifaddrs` also asks
//! the kernel for every link with its statistics and bridge attributes, which on a node with many
//! interfaces (containers' veths, bridges) was the largest single cost of `launchguard check`.
//!
//! Shapes (all native-endian, `linux/netlink.h`, `linux/if_addr.h`, `linux/rtnetlink.h`): a message
//! is `nlmsghdr` (length u32, type u16, flags u16, sequence u32, port u32: 16 bytes) and a body
//! padded to 4 bytes; the request's body is an `ifaddrmsg` (family, prefix length, flags, scope
//! (u8 each), interface index u32: 8 bytes) with family `AF_UNSPEC` (every family); each reply
//! `RTM_NEWADDR` is an `ifaddrmsg` followed by attributes (`rtattr`: length u16, type u16, data,
//! padded to 4). The dump ends with `NLMSG_DONE`; `NLMSG_ERROR` carries a negative errno.
//!
//! Which attribute is the address: glibc's `getifaddrs` takes `IFA_LOCAL` when present (on a
//! point-to-point link `IFA_ADDRESS` is the peer) and `IFA_ADDRESS` otherwise; so does this, so the
//! list is the same, in the same order (the kernel dumps IPv4, then IPv6).

use nix::sys::socket::{
    recv, sendto, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag,
    SockProtocol, SockType,
};
use nix::sys::time::TimeVal;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
/// Sequence number of the one request (replies carry it back).
const SEQ: u32 = 1;
/// Most receive calls one dump may take (a node with a million addresses is not a node).
const MAX_RECV: usize = 10_000;

/// Every address of every interface of this node, as `getifaddrs(3)` lists them. Errors: the
/// socket's (`EPERM` under a seccomp filter that refuses netlink, `EAGAIN` when the kernel does not
/// answer within 2 s) or "malformed netlink reply".
pub fn addresses() -> Result<Vec<IpAddr>, String> {
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(|e| format!("netlink socket: {e}"))?;
    setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(2, 0))
        .map_err(|e| format!("netlink SO_RCVTIMEO: {e}"))?;
    let mut req = Vec::with_capacity(24);
    req.extend_from_slice(&24u32.to_ne_bytes());
    req.extend_from_slice(&RTM_GETADDR.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&SEQ.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(&[0u8; 8]); // ifaddrmsg: AF_UNSPEC, everything else 0
    sendto(
        fd.as_raw_fd(),
        &req,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .map_err(|e| format!("netlink send: {e}"))?;
    let mut out = vec![];
    let mut buf = vec![0u8; 32 << 10];
    for _ in 0..MAX_RECV {
        let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty())
            .map_err(|e| format!("netlink receive: {e}"))?;
        if parse(&buf[..n], &mut out)? {
            return Ok(out);
        }
    }
    Err("netlink dump did not end".into())
}

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

/// Reads one datagram of the dump into `out`; `Ok(true)` at `NLMSG_DONE`.
fn parse(mut b: &[u8], out: &mut Vec<IpAddr>) -> Result<bool, String> {
    const BAD: &str = "malformed netlink reply";
    while b.len() >= 16 {
        let len = u32_at(b, 0).ok_or(BAD)? as usize;
        let kind = u16_at(b, 4).ok_or(BAD)?;
        let seq = u32_at(b, 8).ok_or(BAD)?;
        if len < 16 || len > b.len() {
            return Err(BAD.into());
        }
        let body = &b[16..len];
        if seq == SEQ {
            match kind {
                NLMSG_DONE => return Ok(true),
                NLMSG_ERROR => {
                    let errno = u32_at(body, 0).ok_or(BAD)? as i32;
                    return Err(format!(
                        "netlink: {}",
                        std::io::Error::from_raw_os_error(-errno)
                    ));
                }
                RTM_NEWADDR => {
                    if let Some(a) = address(body) {
                        out.push(a);
                    }
                }
                _ => {}
            }
        }
        b = b.get(len.next_multiple_of(4)..).unwrap_or(&[]);
    }
    Ok(false)
}

/// The address of one `RTM_NEWADDR` body: `IFA_LOCAL`, else `IFA_ADDRESS` (glibc's choice).
fn address(body: &[u8]) -> Option<IpAddr> {
    let family = *body.first()?;
    let mut attrs = body.get(8..)?;
    let (mut local, mut addr) = (None, None);
    while attrs.len() >= 4 {
        let len = u16_at(attrs, 0)? as usize;
        let kind = u16_at(attrs, 2)?;
        if len < 4 || len > attrs.len() {
            break;
        }
        let data = &attrs[4..len];
        let ip = match (family, data.len()) {
            (AF_INET, 4) => Some(IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(data).ok()?))),
            (AF_INET6, 16) => Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(data).ok()?))),
            _ => None,
        };
        match kind {
            IFA_LOCAL => local = local.or(ip),
            IFA_ADDRESS => addr = addr.or(ip),
            _ => {}
        }
        attrs = attrs.get(len.next_multiple_of(4)..).unwrap_or(&[]);
    }
    local.or(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same addresses, in the same order, as glibc's getifaddrs on this machine (whatever
    /// interfaces it has: loopback at least).
    #[test]
    fn the_dump_lists_what_getifaddrs_lists() {
        let mut want = vec![];
        for i in nix::ifaddrs::getifaddrs().unwrap() {
            let Some(a) = i.address else { continue };
            if let Some(s) = a.as_sockaddr_in() {
                want.push(IpAddr::V4(s.ip()));
            } else if let Some(s) = a.as_sockaddr_in6() {
                want.push(IpAddr::V6(s.ip()));
            }
        }
        assert!(want.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{want:?}");
        assert_eq!(addresses().unwrap(), want);
    }

    /// A point-to-point address: IFA_ADDRESS (the peer) before IFA_LOCAL (ours); ours is taken.
    #[test]
    fn the_local_address_wins_over_the_peer() {
        let mut m = vec![];
        let attr = |m: &mut Vec<u8>, kind: u16, ip: [u8; 4]| {
            m.extend_from_slice(&8u16.to_ne_bytes());
            m.extend_from_slice(&kind.to_ne_bytes());
            m.extend_from_slice(&ip);
        };
        let mut body = vec![AF_INET, 32, 0, 0, 0, 0, 0, 0];
        attr(&mut body, IFA_ADDRESS, [10, 0, 0, 2]);
        attr(&mut body, IFA_LOCAL, [10, 0, 0, 1]);
        m.extend_from_slice(&(16 + body.len() as u32).to_ne_bytes());
        m.extend_from_slice(&RTM_NEWADDR.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&SEQ.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&body);
        let mut out = vec![];
        assert_eq!(parse(&m, &mut out), Ok(false));
        assert_eq!(out, vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))]);
        // Cut short: refused, not read past.
        assert!(parse(&m[..m.len() - 1], &mut vec![]).is_err());
    }
}

//! Facts for `node.munge.*`: stat of the key, the munge user, munged's pid file and start time, a
//! `munge -n | unmunge` round trip against the configured socket (spoken on the socket, each
//! request sent before the family's other reads and its answer read after them), the key's
//! digest, stray copies,
//! and whether slurmctld accepts this node's credential ([`super::munge_peer`]).

use super::munge_socket;
use super::nofollow::{self, Link};
use super::util;
use super::Ctx;
use launchguard_core::host::Roots;
use launchguard_core::node::munge::{Daemon, KeyStat, MungeFacts, SharedCopy};
use nix::dir::Type;
use nix::fcntl::OFlag;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// Most directory entries visited per shared path (a huge /fsx must not stall the check).
const MAX_ENTRIES: usize = 20_000;

/// Gathers the munge family's facts.
pub fn gather(ctx: &Ctx) -> MungeFacts {
    let m = &ctx.cfg.munge;
    // The round trip's requests go out first and their answers are read later: munged works on
    // each while this family reads the key, the pid file and the mount tables (two answers that
    // are otherwise waited for one after the other, each a wake-up of munged's threads). The
    // encode request goes before munged is known to run; a socket that accepted it is a running
    // munged (below), so its answer is always read.
    let encode = munge_socket::send_encode(&m.socket, ROUNDTRIP_DEADLINE);
    let key = match std::fs::metadata(&m.key) {
        Ok(md) => Ok(Some(KeyStat {
            uid: md.uid(),
            mode: md.mode() & 0o7777,
            regular: md.is_file(),
            mtime: md.mtime(),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    };
    let bytes = util::read_regular(&m.key, 1 << 20);
    let digest = match &bytes {
        Ok(b) => Ok(format!("sha256:{:x}", Sha256::digest(b))),
        Err(e) => Err(e.to_string()),
    };
    let daemon = match daemon(&ctx.roots, &m.pid_file) {
        // No usable pid file (munged started with another --pid-file, a source build under
        // /usr/local/var): a socket that accepts a connection is a running munged. The encode
        // request's connection is that probe; a second connect is tried only when it failed.
        Daemon::NotRunning(why)
            if encode.is_ok() || std::os::unix::net::UnixStream::connect(&m.socket).is_ok() =>
        {
            tracing::debug!("munged answers on {} ({why})", m.socket.display());
            Daemon::Running {
                pid: 0,
                started: None,
            }
        }
        d => d,
    };
    // The decode request goes as soon as the credential is in (no round trip unless munged runs).
    let decode = matches!(daemon, Daemon::Running { .. }).then(|| {
        let cred = encode
            .and_then(munge_socket::Sent::encoded)
            .map_err(|e| format!("munge: {e}"))?;
        munge_socket::send_decode(&m.socket, &cred, ROUNDTRIP_DEADLINE)
            .map_err(|e| format!("unmunge: {e}"))
    });
    let shared_copies = match &bytes {
        Ok(b) if !b.is_empty() => m
            .shared_paths
            .iter()
            .flat_map(|p| find_copies(p, b, m.shared_depth))
            .collect(),
        _ => vec![],
    };
    // What the agent's unit may show otherwise than the node.
    let hidden = [&m.key, &m.pid_file, &m.socket]
        .iter()
        .find_map(|p| super::view::hidden(ctx, p));
    let munge_uid = ctx.munge_uid();
    let roundtrip =
        decode.map(|d| d.and_then(|sent| sent.decoded().map_err(|e| format!("unmunge: {e}"))));
    let peer = super::munge_peer::gather(ctx, &daemon, matches!(roundtrip, Some(Ok(()))));
    MungeFacts {
        peer,
        hidden,
        key_path: m.key.display().to_string(),
        key,
        munge_uid,
        daemon,
        roundtrip,
        digest,
        shared_copies,
        shared_paths: m
            .shared_paths
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    }
}

/// munged from its pid file: alive, and when it started (from `/proc/PID/stat` and the boot time).
fn daemon(roots: &Roots, pid_file: &Path) -> Daemon {
    let pid = match super::util::read_bytes(pid_file, 64)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
    {
        Ok(s) => match s.trim().parse::<u32>() {
            Ok(p) => p,
            Err(_) => return Daemon::NotRunning(format!("{} holds no pid", pid_file.display())),
        },
        Err(e) => return Daemon::NotRunning(format!("{}: {e}", pid_file.display())),
    };
    let Ok(stat) = std::fs::read_to_string(roots.proc.join(format!("{pid}/stat"))) else {
        return Daemon::NotRunning(format!(
            "pid {pid} from {} is not alive",
            pid_file.display()
        ));
    };
    let comm_ok = stat.contains("(munged)");
    if !comm_ok {
        return Daemon::NotRunning(format!(
            "pid {pid} from {} is not munged",
            pid_file.display()
        ));
    }
    if stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .trim_start()
        .starts_with('Z')
    {
        return Daemon::NotRunning(format!("pid {pid} (munged) has exited (a zombie)"));
    }
    Daemon::Running {
        pid,
        started: start_time(roots, &stat),
    }
}

/// A process's start in seconds since the epoch: field 22 of `/proc/PID/stat` (clock ticks after
/// boot) plus `btime` from `/proc/stat`.
fn start_time(roots: &Roots, stat: &str) -> Option<i64> {
    let after = &stat[stat.rfind(')')? + 2..];
    let ticks: i64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    let btime: i64 = std::fs::read_to_string(roots.proc.join("stat"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(btime + ticks / hz)
}

/// The deadline of each read and write of the round trip `munge -n -S SOCKET | unmunge -S SOCKET`
/// does, spoken directly on munged's socket ([`super::munge_socket`]: no process starts).
const ROUNDTRIP_DEADLINE: Duration = Duration::from_secs(3);

/// Files under `root` (at most `depth` levels, [`MAX_ENTRIES`] entries) whose bytes equal the key.
///
/// Root-phase safety ([`super::nofollow`]): `root` is walked from `/` with `O_NOFOLLOW`, following
/// only root's symlinks in root's directories; below it no symlink is ever followed. Every entry is
/// opened with `openat(dir_fd, name, O_NOFOLLOW)`, judged by `fstat` of that descriptor and read
/// through it, so a directory swapped for a link to `/etc/munge` between two steps is never entered
/// and what is reported (path, mode, owner) is what was read. Each copy records who, other than
/// root, can change what its path resolves to.
fn find_copies(root: &Path, key: &[u8], depth: usize) -> Vec<SharedCopy> {
    let w = match nofollow::walk_dir(root) {
        Ok(w) => w,
        Err(e @ nofollow::WalkError::Missing { .. }) => {
            tracing::debug!("munge shared path not searched: {e}");
            return vec![];
        }
        Err(e) => {
            tracing::warn!("munge shared path {} not searched: {e}", root.display());
            return vec![];
        }
    };
    let mut out = vec![];
    let mut seen = 0;
    search(
        &w.dir,
        &w.path,
        &mut w.chain.clone(),
        key,
        depth,
        &mut seen,
        &mut out,
    );
    out
}

/// Depth-first search of one open directory (one descriptor per level held at a time).
fn search(
    dir: &File,
    path: &Path,
    chain: &mut Vec<Link>,
    key: &[u8],
    depth: usize,
    seen: &mut usize,
    out: &mut Vec<SharedCopy>,
) {
    let Ok(list) = nofollow::entries(dir, MAX_ENTRIES.saturating_sub(*seen)) else {
        return;
    };
    for (name, dtype) in list {
        *seen += 1;
        if *seen > MAX_ENTRIES {
            return;
        }
        // d_type (or an fstatat) only skips what must not be opened (devices, FIFOs, links);
        // the decision is made on the opened descriptor.
        match dtype.or_else(|| nofollow::entry_type(dir, &name)) {
            Some(Type::Directory) if depth > 0 => {}
            Some(Type::File) => {}
            _ => continue,
        }
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
        let Ok(f) = nofollow::open_at(dir, &name, flags) else {
            continue;
        };
        let Ok(md) = f.metadata() else {
            continue;
        };
        let p = path.join(&name);
        if md.is_dir() && depth > 0 {
            let Ok(l) = Link::of(&f, &p) else {
                continue;
            };
            chain.push(l);
            search(&f, &p, chain, key, depth - 1, seen, out);
            chain.pop();
        } else if md.is_file() && md.len() == key.len() as u64 {
            let mut b = Vec::with_capacity(key.len());
            if (&f).take(key.len() as u64).read_to_end(&mut b).is_ok() && b == key {
                let c = nofollow::controller(chain, md.uid());
                out.push(SharedCopy {
                    path: p.display().to_string(),
                    mode: md.mode() & 0o7777,
                    uid: md.uid(),
                    controller: c.as_ref().and_then(|c| c.uid).map(|u| {
                        let name = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(u));
                        (u, name.ok().flatten().map(|n| n.name))
                    }),
                    controlled_by: c.map(|c| c.text),
                });
            }
        }
    }
}

//! Facts for `node.munge.*`: stat of the key, the munge user, munged's pid file and start time, a
//! `munge -n | unmunge` round trip against the configured socket, the key's digest, stray copies.

use super::util;
use super::Ctx;
use launchguard_core::host::Roots;
use launchguard_core::node::munge::{Daemon, KeyStat, MungeFacts, SharedCopy};
use sha2::{Digest, Sha256};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Most directory entries visited per shared path (a huge /fsx must not stall the check).
const MAX_ENTRIES: usize = 20_000;

/// Gathers the munge family's facts.
pub fn gather(ctx: &Ctx) -> MungeFacts {
    let m = &ctx.cfg.munge;
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
        // /usr/local/var): a socket that accepts a connection is a running munged.
        Daemon::NotRunning(why) if std::os::unix::net::UnixStream::connect(&m.socket).is_ok() => {
            tracing::debug!("munged answers on {} ({why})", m.socket.display());
            Daemon::Running {
                pid: 0,
                started: None,
            }
        }
        d => d,
    };
    let roundtrip = matches!(daemon, Daemon::Running { .. }).then(|| roundtrip(&m.socket));
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
        .find_map(|p| super::view::hidden(&ctx.roots, p));
    MungeFacts {
        hidden,
        key_path: m.key.display().to_string(),
        key,
        munge_uid: nix::unistd::User::from_name("munge")
            .ok()
            .flatten()
            .map(|u| u.uid.as_raw()),
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

/// `munge -n -S SOCKET | unmunge -S SOCKET`, each with a deadline.
fn roundtrip(socket: &Path) -> Result<(), String> {
    let deadline = Duration::from_secs(3);
    let mut enc = Command::new("munge");
    enc.arg("-n").arg("-S").arg(socket);
    let cred = util::run(enc, None, deadline)?;
    if !cred.ok {
        return Err(format!("munge: {}", cred.stderr.trim()));
    }
    let mut dec = Command::new("unmunge");
    dec.arg("-S").arg(socket);
    let out = util::run(dec, Some(&cred.stdout), deadline)?;
    if out.ok {
        Ok(())
    } else {
        Err(format!("unmunge: {}", out.stderr.trim()))
    }
}

/// Files under `root` (at most `depth` levels, [`MAX_ENTRIES`] entries, symlinks not followed) whose
/// bytes equal the key.
fn find_copies(root: &Path, key: &[u8], depth: usize) -> Vec<SharedCopy> {
    let mut out = vec![];
    let mut seen = 0;
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, d)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return out;
            }
            let Ok(md) = e.path().symlink_metadata() else {
                continue;
            };
            if md.is_dir() && d < depth {
                stack.push((e.path(), d + 1));
            } else if md.is_file()
                && md.len() == key.len() as u64
                && util::read_regular(&e.path(), key.len() as u64).is_ok_and(|b| b == key)
            {
                out.push(SharedCopy {
                    path: e.path().display().to_string(),
                    mode: md.mode() & 0o7777,
                });
            }
        }
    }
    out
}

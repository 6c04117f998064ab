//! Whether this process sees a path as the node does: the agent runs in its unit's own mount
//! namespace (systemd.exec(5): `PrivateTmp=`, `ProtectHome=`, `InaccessiblePaths=`,
//! `TemporaryFileSystem=`, a site's drop-in…), where a path may show another filesystem than the
//! node's. A check that judges such a path from here would judge the sandbox, not the node, so it
//! says UNKNOWN with [`hidden`]'s reason instead.
//!
//! The node's view is slurmd's mount table (its jobs run there), else PID 1's: `/proc/<pid>/mountinfo`
//! (proc(5); readable where `/proc/<pid>/root` needs ptrace access the agent's capability bound does
//! not give); this process's is `/proc/self/mountinfo`. A check run inside a namespace node or a
//! container beside its own slurmd is therefore judged as that node sees it. A path is seen as the node sees it when both tables
//! resolve it to the same filesystem (`major:minor`) and the same directory inside it (the mount's
//! root joined with the rest of the path). Mount options are not compared: `ProtectSystem=strict`
//! makes the agent's mounts read-only, which changes no answer of a read.

use std::path::{Component, Path, PathBuf};

/// Largest mountinfo read (bytes): thousands of mounts fit.
const MAX_MOUNTINFO: u64 = 16 << 20;

/// One mountinfo line's fields that locate a path: device, root inside it, mount point.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    dev: String,
    root: PathBuf,
    point: PathBuf,
}

/// mountinfo's octal escapes (`\040` for a space, proc(5)).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mounts of a mountinfo text, in its order (a later mount on the same point is on top).
fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() >= 5).then(|| Mount {
                dev: f[2].to_string(),
                root: PathBuf::from(unescape(f[3])),
                point: PathBuf::from(unescape(f[4])),
            })
        })
        .collect()
}

/// `p` without `.` and `..` components (lexically; `None` for a relative path).
fn normal(p: &Path) -> Option<PathBuf> {
    if !p.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    Some(out)
}

/// Where a table puts `p`: the topmost mount whose point is the longest prefix of `p`, as
/// (device, directory inside it).
fn locate(mounts: &[Mount], p: &Path) -> Option<(String, PathBuf)> {
    let m = mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| p.starts_with(&m.point))
        .max_by_key(|(i, m)| (m.point.components().count(), *i))?
        .1;
    let rest = p.strip_prefix(&m.point).ok()?;
    Some((m.dev.clone(), m.root.join(rest)))
}

/// Why `p` is not seen here as the node sees it, from the two mount tables' texts; `None` when
/// both resolve it to the same directory of the same filesystem (or `p` is relative).
pub fn differs(node_mountinfo: &str, own_mountinfo: &str, p: &Path) -> Option<String> {
    let p = normal(p)?;
    let node = locate(&parse(node_mountinfo), &p)?;
    let own = locate(&parse(own_mountinfo), &p)?;
    (node != own).then(|| {
        format!(
            "the agent's sandbox shows another directory at {} than the node does (the node: {} on device {}; here: {} on device {}): a setting of its unit hides it (PrivateTmp=, ProtectHome=, InaccessiblePaths=, TemporaryFileSystem=, or a drop-in's)",
            p.display(),
            node.1.display(),
            node.0,
            own.1.display(),
            own.0
        )
    })
}

/// The node's mount table and this process's, when they can differ: `None` when this process is
/// in the node's mount namespace (the same `/proc/<pid>/ns/mnt` link as `/proc/self/ns/mnt`: one
/// table, so every path is seen alike and neither is read), when the two texts are equal, or when
/// a table cannot be read (nothing to compare). The node's table is slurmd's
/// (`/proc/<slurmd>/mountinfo`; the node's jobs run in its mount namespace, which in a container or
/// namespace node is not PID 1's), else PID 1's. Families ask [`super::Ctx::mount_tables`], which
/// reads them once per run.
pub fn tables(ctx: &super::Ctx) -> Option<(String, String)> {
    let proc = &ctx.roots.proc;
    let (_, conf) = ctx.slurm_conf();
    let slurmd = super::slurmd::find(ctx, conf.ok().as_ref())
        .ok()
        .map(|(pid, _)| pid.to_string());
    let ns = |pid: &str| std::fs::read_link(proc.join(pid).join("ns/mnt")).ok();
    let node_pid = slurmd.clone().unwrap_or_else(|| "1".into());
    if let (Some(node), Some(own)) = (ns(&node_pid), ns("self")) {
        if node == own {
            return None;
        }
    }
    let read = |pid: &str| read_mountinfo(&proc.join(pid).join("mountinfo"));
    let node = slurmd.and_then(|p| read(&p)).or_else(|| read("1"))?;
    let own = read("self")?;
    (node != own).then_some((node, own))
}

/// A mount table's text (`None` when it cannot be read).
fn read_mountinfo(path: &Path) -> Option<String> {
    super::util::read_bytes(path, MAX_MOUNTINFO)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Why this process does not see `p` as the node does (see [`differs`]), from the run's two mount
/// tables ([`tables`]); `None` when it does, and when a table cannot be read (nothing to compare:
/// the path is judged as seen).
pub fn hidden(ctx: &super::Ctx, p: &Path) -> Option<String> {
    let t = ctx.mount_tables()?;
    differs(&t.0, &t.1, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
30 27 0:30 / /home rw,relatime - ext4 /dev/sdb1 rw
31 27 0:31 / /run rw,nosuid - tmpfs tmpfs rw
";

    #[test]
    fn private_tmp_and_protect_home_are_hidden_read_only_is_not() {
        // systemd's PrivateTmp=: a directory of the node's /tmp bound on /tmp; ProtectHome=yes: an
        // inaccessible directory from /run bound on /home; ProtectSystem=strict: the same mounts
        // remounted read-only.
        let own = format!(
            "{}\
40 27 8:1 /tmp/systemd-private-abc-launchguard-agent.service-x/tmp /tmp rw - ext4 /dev/sda1 rw
41 30 0:31 /systemd/inaccessible/dir /home ro - tmpfs tmpfs rw
",
            NODE.replace("/ / rw,", "/ / ro,")
        );
        let tmp = differs(NODE, &own, Path::new("/tmp/enroot-data/x")).unwrap();
        assert!(tmp.contains("at /tmp/enroot-data/x"), "{tmp}");
        assert!(tmp.contains("systemd-private-abc"), "{tmp}");
        assert!(differs(NODE, &own, Path::new("/home/u")).is_some());
        // Read-only, same filesystem and directory: seen as the node sees it.
        assert_eq!(
            differs(NODE, &own, Path::new("/etc/enroot/enroot.conf")),
            None
        );
        assert_eq!(differs(NODE, &own, Path::new("/run/enroot")), None);
        assert_eq!(differs(NODE, NODE, Path::new("/tmp/x/../y")), None);
        assert_eq!(differs(NODE, &own, Path::new("relative")), None);
    }

    #[test]
    fn a_tmpfs_on_tmp_differs_and_escapes_are_read() {
        let own = format!("{NODE}50 27 0:55 / /tmp rw - tmpfs tmpfs rw\n");
        assert!(differs(NODE, &own, Path::new("/tmp")).is_some());
        assert!(differs(NODE, &own, Path::new("/tmpx")).is_none());
        let spaced =
            "27 1 8:1 / / rw - ext4 /dev/sda1 rw\n60 27 0:60 / /mnt/a\\040b rw - tmpfs t rw\n";
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert!(differs(NODE, spaced, Path::new("/mnt/a b/c")).is_some());
        assert!(differs(NODE, spaced, Path::new("/mnt/a")).is_none());
    }
}

//! `launch.enroot_runtime` in slurmstepd's task, as root, before Pyxis's `task_init`: finds enroot's
//! runtime directory and, with `enroot_repair=yes`, creates it (mode 1777, owner root) or fixes the
//! mode of a root-owned one, telling the admin through slurmd's log rather than the user.
//!
//! Root-phase safety: the path is walked from `/` one component at a time with
//! `openat(…, O_NOFOLLOW | O_DIRECTORY)` ([`crate::ffi::open_dir_at`]), so a symlink at any level —
//! a user's `ln -s / /tmp/x` under a path the admin named — is refused, not followed; every
//! directory above the runtime directory must be owned by root and writable by nobody else (so no
//! user can plant or swap a component: paths under `/tmp` are refused); the runtime directory is
//! created with `mkdirat` and changed only through its own descriptor (`fchown`, `fchmod`); and a
//! directory owned by a user is never adopted (it could hold their planted `user-<uid>`
//! directories): it is reported. Constants come from the `libc` crate, right on every architecture.

use crate::gather::read_small;
use launchguard_core::checks::enroot::{self, DirState, Repair};
use launchguard_core::{Finding, Policy};
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Whether enroot is used on this node: its config exists, its binary exists, or the admin named a
/// runtime path.
fn enroot_present(policy: &Policy) -> bool {
    policy.enroot_runtime_path.is_some()
        || Path::new(&policy.enroot_conf).is_file()
        || Path::new("/usr/bin/enroot").exists()
}

fn state(dir: &str) -> DirState {
    match std::fs::symlink_metadata(dir) {
        Err(_) => DirState::Missing,
        Ok(m) if !m.is_dir() => DirState::NotDir,
        Ok(m) => DirState::Dir {
            mode: m.mode(),
            uid: m.uid(),
        },
    }
}

fn repair(dir: &str, before: DirState) -> Result<(), String> {
    repair_as(dir, before, 0)
}

/// Checks that an open directory is owned by root (or `owner`, root in production) and writable by
/// nobody else.
fn trusted(f: &File, shown: &str, owner: u32) -> Result<(), String> {
    let m = f.metadata().map_err(|e| format!("fstat {shown}: {e}"))?;
    if (m.uid() != owner && m.uid() != 0) || m.mode() & 0o022 != 0 {
        return Err(format!(
            "'{shown}' is not a directory owned by root and writable only by root, so a user could swap what lies under it"
        ));
    }
    Ok(())
}

/// Opens the parent of `dir` walking from `/` with `O_NOFOLLOW | O_DIRECTORY` at every level, each
/// level trusted ([`trusted`]); returns it and the last component.
fn open_parent(dir: &str, owner: u32) -> Result<(File, String), String> {
    if !dir.starts_with('/') {
        return Err("it is not an absolute path".into());
    }
    let comps: Vec<&str> = dir
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if comps.contains(&"..") {
        return Err("its path contains '..'".into());
    }
    let (last, ancestors) = comps.split_last().ok_or("it is '/'")?;
    let mut cur = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open("/")
        .map_err(|e| format!("open /: {e}"))?;
    trusted(&cur, "/", owner)?;
    let mut shown = String::new();
    for c in ancestors {
        shown.push('/');
        shown.push_str(c);
        cur = crate::ffi::open_dir_at(&cur, c).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => format!(
                "'{shown}' is a symlink or not a directory (launchguard never follows a link as root)"
            ),
            _ => format!("open {shown}: {e}"),
        })?;
        trusted(&cur, &shown, owner)?;
    }
    Ok((cur, last.to_string()))
}

/// The repair with the trusted owner as a parameter (root in production; tests run it as their own
/// uid on a private tree).
fn repair_as(dir: &str, before: DirState, owner: u32) -> Result<(), String> {
    let (parent, name) = open_parent(dir, owner)?;
    match before {
        DirState::Dir { uid, .. } if uid != owner => {
            return Err(format!(
                "it is owned by uid {uid}: remove it so that launchguard recreates it"
            ))
        }
        DirState::NotDir => {
            return Err(
                "it is a symlink or not a directory (launchguard never follows a link as root)"
                    .into(),
            )
        }
        _ => {}
    }
    match crate::ffi::mkdir_at(&parent, &name, 0o700) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("mkdir: {e}")),
    }
    let f = crate::ffi::open_dir_at(&parent, &name).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => {
            "it is a symlink or not a directory (launchguard never follows a link as root)".into()
        }
        _ => format!("open: {e}"),
    })?;
    let m = f.metadata().map_err(|e| format!("fstat: {e}"))?;
    if m.uid() != owner {
        return Err(format!("it is owned by uid {}", m.uid()));
    }
    std::os::unix::fs::fchown(&f, Some(owner), (owner == 0).then_some(0))
        .map_err(|e| format!("fchown: {e}"))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o1777))
        .map_err(|e| format!("fchmod: {e}"))
}

/// Checks (and with `enroot_repair=yes` repairs) the runtime directory. `container` is whether the
/// step uses a Pyxis container, as srun's plugin said (`None` when unknown). Returns the findings for
/// the user and, when this call repaired it, the admin's log line.
pub fn check(policy: &Policy, container: Option<bool>) -> (Vec<Finding>, Option<String>) {
    if !enroot_present(policy) {
        return (vec![], None);
    }
    let runtime = policy.enroot_runtime_path.clone().unwrap_or_else(|| {
        read_small(Path::new(&policy.enroot_conf), 64 * 1024)
            .and_then(|t| enroot::runtime_path_from_conf(&t))
            .unwrap_or_else(|| enroot::DEFAULT_RUNTIME_PATH.to_string())
    });
    let Some(dir) = enroot::shared_dir(&runtime) else {
        return (vec![], None);
    };
    let before = state(&dir);
    if before.is_good() {
        return (vec![], None);
    }
    let mut log = None;
    let outcome = if policy.enroot_repair {
        match repair(&dir, before) {
            Ok(()) => {
                log = Some(enroot::repaired_log(&dir, before));
                Repair::Done
            }
            Err(e) => Repair::Failed(e),
        }
    } else {
        Repair::Off
    };
    (enroot::check(&dir, state(&dir), &outcome, container), log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    /// A private tree whose every ancestor is writable only by its owner, owned by whoever runs the
    /// tests: as root under /run (the checkout itself may lie under a 1777 /tmp, as CI's clone can),
    /// otherwise under the target directory.
    fn tree(name: &str) -> (PathBuf, u32) {
        let top = if crate::ffi::euid() == 0 {
            PathBuf::from("/run/launchguard-enroot-walk-tests")
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/enroot-walk")
        };
        let base = top.join(name);
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let base = base.canonicalize().unwrap();
        let owner = std::fs::metadata(&base).unwrap().uid();
        // what the tests create must be writable by the owner only, whatever the umask
        for p in [base.as_path(), base.parent().unwrap()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        (base, owner)
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_symlink_at_any_level_is_refused_and_nothing_is_changed() {
        let (base, owner) = tree("levels");
        // base/real/{a/b/c}: the tree a link points into; base/t/a/b/c/run is the runtime dir.
        let comps = ["a", "b", "c", "run"];
        for level in 0..comps.len() {
            let real = base.join(format!("real{level}"));
            let t = base.join(format!("t{level}"));
            let mut r = real.clone();
            let mut p = t.clone();
            for (i, c) in comps.iter().enumerate() {
                r.push(c);
                std::fs::create_dir_all(&r).unwrap();
                std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o755)).unwrap();
                if i == level {
                    std::fs::create_dir_all(p.parent().unwrap_or(&p)).unwrap();
                    std::fs::create_dir_all(&p).unwrap();
                    symlink(&r, p.join(c)).unwrap();
                    break;
                }
                p.push(c);
                std::fs::create_dir_all(&p).unwrap();
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            let dir = t.join(comps.join("/"));
            let target = real.join(comps.join("/"));
            // the link target exists only up to the linked level; make the runtime dir there
            std::fs::create_dir_all(&target).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
            let before = state(dir.to_str().unwrap());
            let e = repair_as(dir.to_str().unwrap(), before, owner).unwrap_err();
            assert!(e.contains("symlink"), "level {level}: {e}");
            assert_eq!(mode(&target), 0o755, "level {level}: followed the link");
        }
    }

    #[test]
    fn the_issue_case_a_link_to_root_is_not_followed() {
        // a user's `ln -s / /tmp/lgx`, enroot_runtime_path=/tmp/lgx/etc/x/...: here a link to a
        // stand-in for / inside the private tree
        let (base, owner) = tree("issue");
        let fake_root = base.join("fakeroot");
        std::fs::create_dir_all(fake_root.join("etc/x")).unwrap();
        std::fs::set_permissions(
            fake_root.join("etc/x"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        symlink(&fake_root, base.join("lgx")).unwrap();
        let dir = base.join("lgx/etc/x");
        let e = repair_as(dir.to_str().unwrap(), state(dir.to_str().unwrap()), owner).unwrap_err();
        assert!(e.contains("/lgx' is a symlink"), "{e}");
        assert_eq!(mode(&fake_root.join("etc/x")), 0o755);
    }

    #[test]
    fn a_writable_ancestor_is_refused_and_a_clean_path_is_repaired() {
        let (base, owner) = tree("clean");
        let parent = base.join("run");
        std::fs::create_dir_all(&parent).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = parent.join("enroot");
        let d = dir.to_str().unwrap();
        repair_as(d, state(d), owner).unwrap();
        assert_eq!(mode(&dir), 0o1777);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = repair_as(d, state(d), owner).unwrap_err();
        assert!(e.contains("writable only by root"), "{e}");
        assert_eq!(mode(&dir), 0o700);
        // /tmp itself (1777) is never trusted
        let e = repair_as("/tmp/lg-never/x", DirState::Missing, owner).unwrap_err();
        assert!(e.contains("'/tmp'"), "{e}");
        assert!(!Path::new("/tmp/lg-never").exists());
    }
}

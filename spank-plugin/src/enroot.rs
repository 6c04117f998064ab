//! `launch.enroot_runtime` in slurmstepd's task, as root, before Pyxis's `task_init`: finds enroot's
//! runtime directory and, with `enroot_repair=yes`, creates it (mode 1777, owner root) or fixes the
//! mode of a root-owned one, telling the admin through slurmd's log rather than the user.
//!
//! Root-phase safety: the repair only happens under a root-owned parent that nobody else can write
//! (so no user can swap the path for a symlink), the directory is opened with `O_NOFOLLOW |
//! O_DIRECTORY` and changed through that descriptor (`fchown`, `fchmod`), and a directory owned by a
//! user is never adopted (it could hold their planted `user-<uid>` directories): it is reported.

use crate::gather::read_small;
use launchguard_core::checks::enroot::{self, DirState, Repair};
use launchguard_core::{Finding, Policy};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// `O_DIRECTORY` and `O_NOFOLLOW` on Linux x86-64/arm64 (asm-generic/fcntl.h).
const O_DIRECTORY: i32 = 0o200000;
const O_NOFOLLOW: i32 = 0o400000;

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
    let parent = Path::new(dir).parent().ok_or("no parent directory")?;
    let pm = std::fs::symlink_metadata(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    if !pm.is_dir() || pm.uid() != 0 || pm.mode() & 0o022 != 0 {
        return Err(format!(
            "its parent '{}' is not a root-owned directory writable only by root",
            parent.display()
        ));
    }
    match before {
        DirState::Dir { uid, .. } if uid != 0 => {
            return Err(format!(
                "it is owned by uid {uid}: remove it so that launchguard recreates it"
            ))
        }
        DirState::NotDir => return Err("it is not a directory".into()),
        DirState::Missing => match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("mkdir: {e}")),
        },
        DirState::Dir { .. } => {}
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_DIRECTORY | O_NOFOLLOW)
        .open(dir)
        .map_err(|e| format!("open: {e}"))?;
    let m = f.metadata().map_err(|e| format!("fstat: {e}"))?;
    if m.uid() != 0 {
        return Err(format!("it is owned by uid {}", m.uid()));
    }
    std::os::unix::fs::fchown(&f, Some(0), Some(0)).map_err(|e| format!("fchown: {e}"))?;
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

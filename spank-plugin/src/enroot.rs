//! `launch.enroot_runtime` in slurmstepd's task, as root, before Pyxis's `task_init`: finds enroot's
//! runtime directory and, with `enroot_repair=yes`, creates or fixes it (mode 1777, owner root),
//! telling the admin through slurmd's log rather than the user.

use launchguard_core::checks::enroot::{self, DirState};
use launchguard_core::{Finding, Policy};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
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

fn repair(dir: &str) -> Result<(), String> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("mkdir: {e}")),
    }
    std::os::unix::fs::chown(dir, Some(0), Some(0)).map_err(|e| format!("chown: {e}"))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777))
        .map_err(|e| format!("chmod: {e}"))
}

/// Checks (and with `enroot_repair=yes` repairs) the runtime directory. Returns the findings for the
/// user and, when this call repaired it, the admin's log line.
pub fn check(policy: &Policy) -> (Vec<Finding>, Option<String>) {
    if !enroot_present(policy) {
        return (vec![], None);
    }
    let runtime = policy.enroot_runtime_path.clone().unwrap_or_else(|| {
        std::fs::read_to_string(&policy.enroot_conf)
            .ok()
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
    let mut error = None;
    if policy.enroot_repair && before != DirState::NotDir {
        match repair(&dir) {
            Ok(()) => log = Some(enroot::repaired_log(&dir, before)),
            Err(e) => error = Some(e),
        }
    }
    (enroot::check(&dir, state(&dir), error.as_deref()), log)
}

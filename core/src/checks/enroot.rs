//! `launch.enroot_runtime`: enroot's runtime directory before Pyxis needs it.
//!
//! Seed 000 (Step 5, troubleshooting): `/run` is a tmpfs, so `/run/enroot` vanishes at reboot; the first
//! non-root user's Pyxis job then fails with `mkdir: cannot create directory '/run/enroot': Permission
//! denied` (measured in spank-facts.md). The directory must exist, be owned by root and have mode 1777
//! (users create `user-$(id -u)` in it); `d /run/enroot 1777 root root -` in tmpfiles.d recreates it
//! at boot.

use crate::finding::{clip, CheckKind, Finding, Severity};

/// enroot's default runtime path (enroot.conf(5)).
pub const DEFAULT_RUNTIME_PATH: &str = "/run/enroot";

/// The value of `ENROOT_RUNTIME_PATH` in an enroot.conf text (`KEY value` lines, `#` comments, values
/// in shell syntax, optionally quoted), if set.
pub fn runtime_path_from_conf(conf: &str) -> Option<String> {
    conf.lines().rev().find_map(|l| {
        let l = l.trim();
        let rest = l.strip_prefix("ENROOT_RUNTIME_PATH")?;
        if !rest.starts_with([' ', '\t', '=']) {
            return None;
        }
        let v = rest.trim_start_matches([' ', '\t', '=']).trim();
        let v = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
            .unwrap_or(v);
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The directory shared by all users that must exist before enroot runs: the runtime path up to its
/// first component that the shell expands (`/run/enroot/user-$(id -u)` → `/run/enroot`). `None` when
/// the very first component is expanded (`${XDG_RUNTIME_DIR}/enroot`: a per-user directory, not ours to
/// check) or the path is relative.
pub fn shared_dir(runtime_path: &str) -> Option<String> {
    if !runtime_path.starts_with('/') {
        return None;
    }
    let mut dir = String::new();
    for comp in runtime_path.split('/').filter(|c| !c.is_empty()) {
        if comp.contains(['$', '`', '~', '*', '?']) {
            break;
        }
        dir.push('/');
        dir.push_str(comp);
    }
    let static_whole = !runtime_path.contains(['$', '`', '~', '*', '?']);
    if dir.is_empty() || (dir.matches('/').count() < 2 && !static_whole) {
        // `/run/$x`-style: the shared part would be /run itself, which is the OS's.
        return None;
    }
    Some(dir)
}

/// What the directory looks like (`lstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirState {
    /// Absent.
    Missing,
    /// Present but not a directory (a file, a symlink…).
    NotDir,
    /// A directory with this mode (permission bits incl. sticky) and owner.
    Dir { mode: u32, uid: u32 },
}

impl DirState {
    /// Whether enroot can use it for every user: a root-owned directory with mode 1777.
    pub fn is_good(self) -> bool {
        matches!(self, DirState::Dir { mode, uid: 0 } if mode & 0o7777 == 0o1777)
    }

    fn describe(self) -> String {
        match self {
            DirState::Missing => "is missing".into(),
            DirState::NotDir => "is not a directory".into(),
            DirState::Dir { mode, uid } => {
                format!("has mode {:04o} and owner uid {uid}", mode & 0o7777)
            }
        }
    }
}

/// The tmpfiles.d line that recreates `dir` at every boot.
pub fn tmpfiles_line(dir: &str) -> String {
    format!("d {dir} 1777 root root -")
}

/// The admin's log line after launchguard repaired `dir` (never shown to users).
pub fn repaired_log(dir: &str, before: DirState) -> String {
    format!(
        "launchguard: {}: repaired '{dir}' (it {}): now mode 1777 owned by root; make it survive reboots with the tmpfiles.d line '{}' in /etc/tmpfiles.d/enroot.conf",
        CheckKind::EnrootRuntime.id(),
        before.describe(),
        tmpfiles_line(dir)
    )
}

/// Judges the runtime directory after any repair attempt. `state` is what it looks like now;
/// `repair_error` says why a repair failed (`None` when none was tried).
pub fn check(dir: &str, state: DirState, repair_error: Option<&str>) -> Vec<Finding> {
    if state.is_good() {
        return vec![];
    }
    let tried = repair_error
        .map(|e| format!(" (launchguard could not repair it: {})", clip(e, 80)))
        .unwrap_or_default();
    vec![Finding {
        check: CheckKind::EnrootRuntime,
        severity: Severity::Error,
        what: format!("enroot's runtime directory '{dir}' {}{tried}", state.describe()),
        why: format!(
            "Pyxis container jobs of non-root users fail with 'mkdir: cannot create directory '{dir}': Permission denied'"
        ),
        fix: format!(
            "ask the admin to run 'install -d -m 1777 -o root -g root {dir}' and add '{}' to /etc/tmpfiles.d/enroot.conf (or set enroot_repair=yes in plugstack)",
            tmpfiles_line(dir)
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_path_is_read_from_shell_style_conf() {
        let conf = "# seed 000\nENROOT_RUNTIME_PATH      /run/enroot/user-$(id -u)\nENROOT_CACHE_PATH /x\n";
        assert_eq!(
            runtime_path_from_conf(conf).as_deref(),
            Some("/run/enroot/user-$(id -u)")
        );
        assert_eq!(
            runtime_path_from_conf("ENROOT_RUNTIME_PATH \"/run/e\"\n").as_deref(),
            Some("/run/e")
        );
        assert_eq!(runtime_path_from_conf("ENROOT_RUNTIME_PATHX /a\n"), None);
        assert_eq!(runtime_path_from_conf("#ENROOT_RUNTIME_PATH /a\n"), None);
        assert_eq!(runtime_path_from_conf(""), None);
    }

    #[test]
    fn shared_dir_stops_at_the_first_expansion() {
        let table = [
            ("/run/enroot/user-$(id -u)", Some("/run/enroot")),
            ("/run/enroot", Some("/run/enroot")),
            ("/run/enroot/user-${UID}/x", Some("/run/enroot")),
            ("${XDG_RUNTIME_DIR}/enroot", None),
            ("/run/user-$(id -u)", None),
            ("relative/path", None),
        ];
        for (p, want) in table {
            assert_eq!(shared_dir(p).as_deref(), want, "{p}");
        }
    }

    #[test]
    fn only_root_owned_1777_passes() {
        assert!(DirState::Dir {
            mode: 0o41777,
            uid: 0
        }
        .is_good());
        assert!(!DirState::Dir {
            mode: 0o0700,
            uid: 1001
        }
        .is_good());
        assert!(!DirState::Dir {
            mode: 0o1777,
            uid: 1001
        }
        .is_good());
        assert!(!DirState::Missing.is_good());
        let f = check("/run/enroot", DirState::Missing, None);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.enroot_runtime: enroot's runtime directory '/run/enroot' is missing; \
             Pyxis container jobs of non-root users fail with 'mkdir: cannot create directory '/run/enroot': Permission denied'; \
             ask the admin to run 'install -d -m 1777 -o root -g root /run/enroot' and add 'd /run/enroot 1777 root root -' \
             to /etc/tmpfiles.d/enroot.conf (or set enroot_repair=yes in plugstack)"
        );
        assert!(check(
            "/run/enroot",
            DirState::Dir {
                mode: 0o1777,
                uid: 0
            },
            None
        )
        .is_empty());
    }
}

//! `launch.enroot_runtime`: enroot's runtime directory before Pyxis needs it.
//!
//! `docs/field-rules.md`, "`/run/enroot` after a reboot": `/run` is a tmpfs, so `/run/enroot` vanishes at reboot; the first
//! non-root user's Pyxis job then fails with `mkdir: cannot create directory '/run/enroot': Permission
//! denied` (docs/spank.md, "Next to Pyxis"). The directory must exist, be owned by root and have mode 1777
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

/// The directory shared by all users that must exist before enroot runs: the parent of a per-user
/// last component (`/run/enroot/user-$(id -u)` → `/run/enroot`), or the whole path when nothing in it
/// is expanded (`/run/enroot`). `None` when an expansion sits anywhere but the last component
/// (`/run/user/$(id -u)/enroot`, `${XDG_RUNTIME_DIR}/enroot`: per-user trees, not launchguard's to
/// judge), for a relative path, or when the result would be a top-level directory such as `/run`.
pub fn shared_dir(runtime_path: &str) -> Option<String> {
    if !runtime_path.starts_with('/') {
        return None;
    }
    let expands = |c: &str| c.contains(['$', '`', '~', '*', '?']);
    let comps: Vec<&str> = runtime_path.split('/').filter(|c| !c.is_empty()).collect();
    let (last, parents) = comps.split_last()?;
    if parents.iter().any(|c| expands(c)) {
        return None;
    }
    let keep = if expands(last) { parents } else { &comps[..] };
    (keep.len() >= 2).then(|| format!("/{}", keep.join("/")))
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
    /// Whether enroot can use it for every user: a root-owned directory that others may write and
    /// enter (1777 is what the build guides' tmpfiles.d line uses).
    pub fn is_good(self) -> bool {
        matches!(self, DirState::Dir { mode, uid: 0 } if mode & 0o003 == 0o003)
    }

    /// `is missing`, `is not a directory`, `has mode 0755 and owner uid 0`.
    pub fn describe(self) -> String {
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

/// What happened to a repair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// `enroot_repair=no`.
    Off,
    /// Tried and failed (or refused, e.g. a user-owned directory), with the reason.
    Failed(String),
    /// Not needed, or done.
    Done,
}

/// Judges the runtime directory after any repair attempt. `state` is what it looks like now.
/// `container` says whether the step runs in a Pyxis container (`None`: unknown, srun had no
/// launchguard): only a container step fails on it, so only then is it an error; unknown is a warning,
/// and a step known to use no container is not told.
pub fn check(dir: &str, state: DirState, repair: &Repair, container: Option<bool>) -> Vec<Finding> {
    if state.is_good() || container == Some(false) {
        return vec![];
    }
    let tried = match repair {
        Repair::Failed(e) => format!(" (launchguard could not repair it: {})", clip(e, 80)),
        _ => String::new(),
    };
    let or_repair = if *repair == Repair::Off {
        " (or set enroot_repair=yes in plugstack)"
    } else {
        ""
    };
    vec![Finding {
        check: CheckKind::EnrootRuntime,
        severity: if container == Some(true) {
            Severity::Error
        } else {
            Severity::Warning
        },
        what: format!("enroot's runtime directory '{dir}' {}{tried}", state.describe()),
        why: format!(
            "Pyxis container jobs of non-root users fail with 'mkdir: cannot create directory '{dir}': Permission denied'"
        ),
        fix: format!(
            "ask the admin to run 'install -d -m 1777 -o root -g root {dir}' and add '{}' to /etc/tmpfiles.d/enroot.conf{or_repair}",
            tmpfiles_line(dir)
        ),
    }]
}

#[cfg(test)]
#[rustfmt::skip]
mod tests {
    use super::*;

    #[test]
    fn runtime_path_is_read_from_shell_style_conf() {
        let conf = "# a common site setting\nENROOT_RUNTIME_PATH      /run/enroot/user-$(id -u)\nENROOT_CACHE_PATH /x\n";
        assert_eq!(runtime_path_from_conf(conf).as_deref(), Some("/run/enroot/user-$(id -u)"));
        assert_eq!(runtime_path_from_conf("ENROOT_RUNTIME_PATH \"/run/e\"\n").as_deref(), Some("/run/e"));
        assert_eq!(runtime_path_from_conf("ENROOT_RUNTIME_PATHX /a\n"), None);
        assert_eq!(runtime_path_from_conf("#ENROOT_RUNTIME_PATH /a\n"), None);
        assert_eq!(runtime_path_from_conf(""), None);
    }

    #[test]
    fn shared_dir_is_the_parent_of_a_per_user_last_component() {
        let table = [
            ("/run/enroot/user-$(id -u)", Some("/run/enroot")),
            ("/run/enroot", Some("/run/enroot")),
            ("/run/enroot/user-${UID}/x", None),
            ("/run/user/$(id -u)/enroot", None),
            ("/local/scratch/$USER/enroot", None),
            ("${XDG_RUNTIME_DIR}/enroot", None),
            ("/run/user-$(id -u)", None),
            ("/run", None),
            ("relative/path", None),
        ];
        for (p, want) in table {
            assert_eq!(shared_dir(p).as_deref(), want, "{p}");
        }
    }

    #[test]
    fn only_root_owned_world_writable_passes() {
        assert!(DirState::Dir { mode: 0o41777, uid: 0 }.is_good());
        assert!(DirState::Dir { mode: 0o777, uid: 0 }.is_good());
        assert!(!DirState::Dir { mode: 0o0700, uid: 1001 }.is_good());
        assert!(!DirState::Dir { mode: 0o1777, uid: 1001 }.is_good());
        assert!(!DirState::Dir { mode: 0o755, uid: 0 }.is_good());
        assert!(!DirState::Missing.is_good());
    }

    #[test]
    fn only_container_steps_fail_on_it() {
        let f = check("/run/enroot", DirState::Missing, &Repair::Off, Some(true));
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.enroot_runtime: enroot's runtime directory '/run/enroot' is missing; \
             Pyxis container jobs of non-root users fail with 'mkdir: cannot create directory '/run/enroot': Permission denied'; \
             ask the admin to run 'install -d -m 1777 -o root -g root /run/enroot' and add 'd /run/enroot 1777 root root -' \
             to /etc/tmpfiles.d/enroot.conf (or set enroot_repair=yes in plugstack)"
        );
        assert_eq!(f[0].severity, Severity::Error);
        assert!(check("/run/enroot", DirState::Missing, &Repair::Off, Some(false)).is_empty());
        assert_eq!(check("/run/enroot", DirState::Missing, &Repair::Off, None)[0].severity, Severity::Warning);
        let failed = check("/run/enroot", DirState::Missing, &Repair::Failed("mkdir: x".into()), Some(true));
        assert!(!failed[0].fix.contains("enroot_repair=yes"), "{}", failed[0].fix);
        assert!(failed[0].what.contains("(launchguard could not repair it: mkdir: x)"));
        assert!(check("/run/enroot", DirState::Dir { mode: 0o1777, uid: 0 }, &Repair::Off, Some(true)).is_empty());
    }
}

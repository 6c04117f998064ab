//! `node.munge.dirs_secure` and `node.munge.socket_dir_access`: munged's own rules for the
//! directories above its files.
//!
//! munged(8) refuses to start ("Keyfile is insecure: group-writable permissions without sticky bit
//! set on …", and likewise for its PID file, socket and seed file) when any directory on the path to
//! one of them, up to `/`, is
//! - owned by someone other than root or munged's own user,
//! - group-writable without the sticky bit, unless its group is munged's `--trusted-group`
//!   (the log file's directories may be group-writable),
//! - other-writable without the sticky bit;
//!
//! and users' clients (srun, sbatch, slurmstepd's credential checks) cannot reach the socket unless
//! every directory on its path has execute permission for owner, group and other ("Socket is
//! inaccessible: execute permissions for all required on …"). With `--force` munged only warns.
//! The walk follows munged's: the path is canonicalised (realpath), then each directory from the
//! file's own up to `/` is examined with `lstat`.

use super::{Outcome, Status};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.munge.dirs_secure",
        "the directories above munged's key, PID file, socket, seed and log pass munged's own security rule",
    ),
    (
        "node.munge.socket_dir_access",
        "every directory above munged's socket lets all users through (users' srun needs it)",
    ),
];

/// Which of munged's files a directory leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `--key-file` (default `/etc/munge/munge.key`).
    Key,
    /// `--pid-file` (default `/run/munge/munged.pid`).
    Pid,
    /// `--socket` (default `/run/munge/munge.socket.2`).
    Socket,
    /// `--seed-file` (default `/var/lib/munge/munged.seed`).
    Seed,
    /// `--log-file` (default `/var/log/munge/munged.log`); group-write is allowed here.
    Log,
}

impl Role {
    /// The word munged uses for the file in its messages.
    pub fn name(self) -> &'static str {
        match self {
            Role::Key => "key",
            Role::Pid => "PID file",
            Role::Socket => "socket",
            Role::Seed => "seed file",
            Role::Log => "log file",
        }
    }
}

/// One directory on a path, as `lstat` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dir {
    /// Its canonical path.
    pub path: String,
    /// Owner uid.
    pub uid: u32,
    /// Group gid.
    pub gid: u32,
    /// `st_mode & 0o7777`.
    pub mode: u32,
    /// Whether it is a directory (not a symlink or file).
    pub is_dir: bool,
}

/// The directories above one of munged's files, the file's own directory first, `/` last; `Err`
/// when the walk failed (the path names a missing directory: munged fails the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    /// Which file.
    pub role: Role,
    /// The file's path as munged is given it.
    pub file: String,
    /// The directories, or what stopped the walk.
    pub dirs: Result<Vec<Dir>, String>,
}

/// Everything this family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MungePathFacts {
    /// One walk per file munged uses.
    pub walks: Vec<Walk>,
    /// munged's uid (the `munge` user's, or the running munged's).
    pub munge_uid: u32,
    /// `--trusted-group`'s gid, if given.
    pub trusted_gid: Option<u32>,
    /// Whether munged runs (or will start) with `--force`, which turns these errors into warnings.
    pub force: bool,
    /// systemd's `RuntimeDirectoryMode=` for munge.service when it creates the socket's directory
    /// (`RuntimeDirectory=munge`), as the unit and its drop-ins set it last.
    pub runtime_dir_mode: Option<u32>,
}

/// What is wrong with one directory under munged's rule for `role`, with the fix.
fn insecure(d: &Dir, role: Role, f: &MungePathFacts) -> Option<(String, String)> {
    if !d.is_dir {
        return Some((
            format!("'{}' is not a directory", d.path),
            format!("make '{}' a real directory (not a symlink)", d.path),
        ));
    }
    if d.uid != 0 && d.uid != f.munge_uid {
        return Some((
            format!("'{}' is owned by uid {}", d.path, d.uid),
            format!("chown root '{}'", d.path),
        ));
    }
    let sticky = d.mode & 0o1000 != 0;
    if role != Role::Log && d.mode & 0o020 != 0 && !sticky && f.trusted_gid != Some(d.gid) {
        return Some((
            format!(
                "'{}' is group-writable without the sticky bit (mode {:04o})",
                d.path, d.mode
            ),
            format!("chmod g-w '{}'", d.path),
        ));
    }
    if d.mode & 0o002 != 0 && !sticky {
        return Some((
            format!(
                "'{}' is world-writable without the sticky bit (mode {:04o})",
                d.path, d.mode
            ),
            format!("chmod o-w '{}'", d.path),
        ));
    }
    None
}

/// Judges munged's directory rules: one outcome per ID of [`CHECKS`].
pub fn judge(f: &MungePathFacts) -> Vec<Outcome> {
    let (status, consequence) = if f.force {
        (
            Status::Warning,
            "munged runs only because of --force, which it says is insecure; anyone who can write there can swap its files",
        )
    } else {
        (
            Status::Critical,
            "munged refuses to start with this ('… is insecure'), so its next restart or the node's reboot leaves the node without munge and every Slurm RPC fails; anyone who can write there can swap its files",
        )
    };
    let mut secure = Outcome::ok("node.munge.dirs_secure");
    let mut unknown = vec![];
    'walks: for w in &f.walks {
        match &w.dirs {
            Err(e) => unknown.push(format!("{} '{}': {e}", w.role.name(), w.file)),
            Ok(dirs) => {
                for d in dirs {
                    if let Some((what, fix)) = insecure(d, w.role, f) {
                        secure = Outcome::new(
                            "node.munge.dirs_secure",
                            status,
                            format!(
                                "on the path to munged's {} '{}', {what}",
                                w.role.name(),
                                w.file
                            ),
                            consequence,
                            fix,
                        );
                        break 'walks;
                    }
                }
            }
        }
    }
    if secure.status == Status::Ok && !unknown.is_empty() {
        secure = Outcome::unknown(
            "node.munge.dirs_secure",
            format!("cannot walk {}", unknown.join("; ")),
        );
    }
    let socket = f.walks.iter().find(|w| w.role == Role::Socket);
    let access = match socket.map(|w| (&w.file, &w.dirs)) {
        None => Outcome::unknown(
            "node.munge.socket_dir_access",
            "munged's socket path is not known",
        ),
        Some((file, Err(e))) => Outcome::unknown(
            "node.munge.socket_dir_access",
            format!("cannot walk the socket '{file}': {e}"),
        ),
        Some((file, Ok(dirs))) => match dirs.iter().find(|d| d.mode & 0o111 != 0o111) {
            None => Outcome::ok("node.munge.socket_dir_access"),
            Some(d) => {
                let first = dirs.first().map(|x| x.path.as_str()) == Some(d.path.as_str());
                let fix = match f.runtime_dir_mode {
                    Some(m) if first && m & 0o111 != 0o111 => format!(
                        "munge.service sets RuntimeDirectoryMode={m:04o}, which recreates it so at every start, so a chmod alone is undone by the next restart of munge or reboot: set RuntimeDirectoryMode=0755 with `systemctl edit munge`, then `systemctl restart munge`"
                    ),
                    Some(_) if first => format!(
                        "chmod a+x '{}' (munge.service's RuntimeDirectoryMode recreates it correctly at the next `systemctl restart munge`)",
                        d.path
                    ),
                    _ => format!("chmod a+x '{}'", d.path),
                };
                Outcome::new(
                    "node.munge.socket_dir_access",
                    Status::Critical,
                    format!(
                        "'{}' (mode {:04o}) on the path to munged's socket '{file}' is not searchable by all users",
                        d.path, d.mode
                    ),
                    "users' srun and sbatch cannot reach munged ('Failed to access \"…\": Permission denied'), while root's commands still work",
                    fix,
                )
            }
        },
    };
    vec![secure, access]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(path: &str, uid: u32, gid: u32, mode: u32) -> Dir {
        Dir {
            path: path.into(),
            uid,
            gid,
            mode,
            is_dir: true,
        }
    }

    fn facts(etc_mode: u32, force: bool) -> MungePathFacts {
        let root = dir("/", 0, 0, 0o755);
        MungePathFacts {
            walks: vec![
                Walk {
                    role: Role::Key,
                    file: "/etc/munge/munge.key".into(),
                    dirs: Ok(vec![
                        dir("/etc/munge", 102, 105, 0o700),
                        dir("/etc", 0, 0, etc_mode),
                        root.clone(),
                    ]),
                },
                Walk {
                    role: Role::Socket,
                    file: "/run/munge/munge.socket.2".into(),
                    dirs: Ok(vec![
                        dir("/run/munge", 102, 105, 0o755),
                        dir("/run", 0, 0, 0o755),
                        root,
                    ]),
                },
            ],
            munge_uid: 102,
            trusted_gid: None,
            force,
            runtime_dir_mode: Some(0o755),
        }
    }

    #[test]
    fn group_writable_etc_is_critical_and_the_sticky_bit_or_trusted_group_passes() {
        let out = judge(&facts(0o775, false));
        assert_eq!(out[0].status, Status::Critical, "{out:?}");
        assert_eq!(out[0].fix, "chmod g-w '/etc'");
        assert!(out[0].what.contains("munged's key '/etc/munge/munge.key'"));
        assert_eq!(judge(&facts(0o1775, false))[0].status, Status::Ok);
        let mut f = facts(0o775, false);
        f.trusted_gid = Some(0);
        assert_eq!(judge(&f)[0].status, Status::Ok);
        assert_eq!(judge(&facts(0o775, true))[0].status, Status::Warning);
        assert_eq!(judge(&facts(0o757, false))[0].fix, "chmod o-w '/etc'");
    }

    #[test]
    fn a_foreign_owner_fails_and_the_log_dir_may_be_group_writable() {
        let mut f = facts(0o755, false);
        f.walks[0].dirs.as_mut().unwrap()[0].uid = 1000;
        assert_eq!(judge(&f)[0].fix, "chown root '/etc/munge'");
        let mut f = facts(0o755, false);
        f.walks.push(Walk {
            role: Role::Log,
            file: "/var/log/munge/munged.log".into(),
            dirs: Ok(vec![dir("/var/log/munge", 102, 4, 0o770)]),
        });
        assert_eq!(judge(&f)[0].status, Status::Ok);
    }

    #[test]
    fn a_socket_dir_users_cannot_search_is_critical_and_names_systemds_mode() {
        let mut f = facts(0o755, false);
        f.walks[1].dirs.as_mut().unwrap()[0].mode = 0o700;
        let out = judge(&f);
        assert_eq!(out[1].status, Status::Critical);
        assert!(
            out[1].fix.starts_with("chmod a+x '/run/munge'"),
            "{}",
            out[1].fix
        );
        f.runtime_dir_mode = Some(0o700);
        let fix = judge(&f)[1].fix.clone();
        assert!(fix.contains("RuntimeDirectoryMode=0755"), "{fix}");
        // Issue 24 item 3: the restart that would undo a manual chmod is named.
        assert!(
            fix.contains("a chmod alone is undone by the next restart of munge"),
            "{fix}"
        );
        assert_eq!(judge(&facts(0o755, false))[1].status, Status::Ok);
    }

    #[test]
    fn a_walk_that_failed_is_unknown_never_ok() {
        let mut f = facts(0o755, false);
        f.walks[0].dirs = Err("No such file or directory".into());
        assert_eq!(judge(&f)[0].status, Status::Unknown);
    }
}

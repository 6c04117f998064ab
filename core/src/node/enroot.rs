//! `node.enroot.*`: enroot's configuration on the node (enroot's configuration documentation and the
//! Pyxis README): the runtime directory under
//! `/run/enroot` present with mode 1777 and recreated at boot by tmpfiles.d, cache and data on node-local
//! disks (images are tens of GB), and `ENROOT_RESTRICT_DEV n` where the node has EFA (otherwise
//! `/dev/infiniband` is hidden in containers and NCCL silently falls back to TCP).

use super::{quote, Outcome, Status};
use crate::checks::enroot::{shared_dir, tmpfiles_line, DirState};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.enroot.conf",
        "/etc/enroot/enroot.conf parses (KEY value lines)",
    ),
    (
        "node.enroot.runtime_path",
        "ENROOT_RUNTIME_PATH is under /run/enroot",
    ),
    (
        "node.enroot.run_dir",
        "the runtime directory exists, owned by root, mode 1777",
    ),
    (
        "node.enroot.tmpfiles",
        "a tmpfiles.d entry recreates the runtime directory at boot",
    ),
    (
        "node.enroot.storage",
        "ENROOT_CACHE_PATH and ENROOT_DATA_PATH are on a node-local filesystem, not / or NFS",
    ),
    (
        "node.enroot.restrict_dev",
        "ENROOT_RESTRICT_DEV n on nodes with EFA",
    ),
    (
        "node.enroot.nvidia_hook",
        "on GPU nodes enroot's 98-nvidia.sh hook is enabled and nvidia-container-cli is installed",
    ),
];

/// Parses enroot.conf: `KEY value` (or `KEY=value`) lines, `#` comments, values optionally quoted.
/// Returns the pairs in order and the problems (`line N: …`).
pub fn parse_conf(text: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut pairs = vec![];
    let mut problems = vec![];
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let split = l.find(|c: char| c.is_whitespace() || c == '=');
        let (k, v) = match split {
            Some(at) => (
                &l[..at],
                l[at..].trim_start_matches(|c: char| c.is_whitespace() || c == '='),
            ),
            None => (l, ""),
        };
        if !k.starts_with("ENROOT_")
            || !k
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            problems.push(format!(
                "line {}: '{}' is not an ENROOT_* setting",
                i + 1,
                crate::finding::clip(k, 40)
            ));
            continue;
        }
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
            .unwrap_or(v);
        pairs.push((k.to_string(), v.to_string()));
    }
    (pairs, problems)
}

/// The filesystem a path lives on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fs {
    /// On the root filesystem (`/`).
    Root,
    /// A network filesystem (nfs, lustre, cifs…), with its type.
    Network(String),
    /// Another local filesystem.
    Local,
    /// The path (and its parents up to a mount) could not be examined.
    Unknown(String),
}

/// One of ENROOT_CACHE_PATH / ENROOT_DATA_PATH and what the node has of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    /// `ENROOT_CACHE_PATH` or `ENROOT_DATA_PATH`.
    pub key: String,
    /// The path as configured (may hold `$(id -u)`, `${UID}`…).
    pub path: String,
    /// The filesystem of `ancestor` (where the directory is or will be created).
    pub fs: Fs,
    /// The path's fixed part ([`fixed_part`]) as a walk from `/` that follows no user's symlink
    /// found it: [`DirState::Missing`] when absent, [`DirState::NotDir`] for a file or a symlink.
    pub base: DirState,
    /// The deepest existing directory of the fixed part and its state (the fixed part itself when
    /// it exists).
    pub ancestor: (String, DirState),
    /// Who, other than root, controls the fixed part (owns it or a directory above it, or can
    /// create it), e.g. `uid 1001 (alice) owns '/tmp/enroot-data'`; `None` when only root can.
    pub controlled_by: Option<String>,
    /// The first directory from `/` to the fixed part (or its deepest existing parent) that a user
    /// who is neither its owner nor in its group cannot pass (no search bit for others), with its
    /// mode and owner uid: every non-root user's enroot then fails there with 'Permission denied',
    /// whatever the directory below allows (the user's seat, as `node.munge.socket_dir_access`
    /// judges munged's socket).
    pub unsearchable: Option<(String, u32, u32)>,
}

/// enroot's NVIDIA hook on this node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NvidiaHook {
    /// The node has NVIDIA GPUs (`/proc/driver/nvidia/gpus/*` or `/dev/nvidia0`).
    pub gpu: bool,
    /// The hook's path when it is present and executable (enroot runs only executable hooks).
    pub hook: Option<String>,
    /// Where `nvidia-container-cli` is, if anywhere on the standard PATH.
    pub cli: Option<String>,
}

/// Everything the enroot family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrootFacts {
    /// enroot.conf's path.
    pub conf_path: String,
    /// `Ok(None)`: no enroot.conf and no enroot installed (every check passes: not applicable).
    pub conf: Result<Option<String>, String>,
    /// State of the runtime path's shared directory (`None` when the path has no fixed shared
    /// directory, e.g. `${XDG_RUNTIME_DIR}/enroot`).
    pub run_dir: Option<(String, DirState)>,
    /// Whether a tmpfiles.d file creates that directory.
    pub tmpfiles: bool,
    /// The cache and data paths.
    pub storage: Vec<Storage>,
    /// The node has EFA devices (`/sys/class/infiniband/*` with driver `efa`).
    pub efa: bool,
    /// launchguard's plugin is listed in plugstack with `enroot_runtime` on and `enroot_repair=yes`
    /// (both its defaults): it creates a missing runtime directory, or fixes a root-owned one's mode,
    /// as root before Pyxis needs it, at the next container launch.
    pub plugin_repairs: bool,
    /// The NVIDIA hook.
    pub nvidia: NvidiaHook,
    /// Paths of `run_dir` and `storage` that the gathering process does not see as the node does
    /// (the agent's unit's own `/tmp`, a hidden `/home`…), each with why: their checks say UNKNOWN,
    /// never OK.
    pub hidden: Vec<(String, String)>,
}

/// The part of a configured path before its first component that the shell expands (`$`, `` ` ``,
/// `~`): `/opt/enroot/data` for `/opt/enroot/data/user-$(id -u)`, the whole path when nothing
/// expands, `None` for a relative path or one that expands from its first component (`$HOME/...`).
pub fn fixed_part(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let mut out = String::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        if c.contains(['$', '`', '~']) {
            break;
        }
        out.push('/');
        out.push_str(c);
    }
    (!out.is_empty()).then_some(out)
}

/// Whether a configured path is per user (it expands something, e.g. `user-$(id -u)`).
pub fn per_user(path: &str) -> bool {
    path.contains(['$', '`', '~'])
}

/// Whether every user may create entries in a directory (world-writable, as 1777).
fn others_can_create(s: DirState) -> bool {
    matches!(s, DirState::Dir { mode, .. } if mode & 0o003 == 0o003)
}

/// The problems of one storage path, worst first: (status, what).
fn storage_problems(s: &Storage) -> Vec<(Status, String)> {
    let mut out = vec![];
    let Some(fixed) = fixed_part(&s.path) else {
        return out;
    };
    let (anc, anc_state) = (&s.ancestor.0, s.ancestor.1);
    let shared = !per_user(&s.path);
    if let Some((dir, mode, uid)) = &s.unsearchable {
        out.push((
            Status::Critical,
            format!(
                "{} {}: users cannot pass {} (mode {mode:04o}, owned by uid {uid}) on its way, so every non-root user's container import fails with 'Permission denied' (chmod o+x {})",
                s.key,
                quote(&s.path),
                quote(dir),
                quote(dir)
            ),
        ));
        return out;
    }
    match s.base {
        DirState::Missing if !others_can_create(anc_state) => out.push((
            Status::Critical,
            format!(
                "{} {}: {} does not exist and users cannot create it in {} (it {})",
                s.key,
                quote(&s.path),
                quote(&fixed),
                quote(anc),
                anc_state.describe()
            ),
        )),
        DirState::Missing if shared => out.push((
            Status::Warning,
            format!(
                "{} {} is one path for all users and does not exist yet: the first user to run a container creates it and owns it, every other user then gets 'Permission denied'",
                s.key,
                quote(&s.path)
            ),
        )),
        DirState::NotDir => out.push((
            Status::Critical,
            format!("{} {}: {} is not a directory", s.key, quote(&s.path), quote(&fixed)),
        )),
        DirState::Dir { uid, .. } if shared && !others_can_create(s.base) && uid != 0 => out.push((
            Status::Critical,
            format!(
                "{} {} is one directory for all users and uid {uid} owns it ({}): every other user gets 'Permission denied'",
                s.key,
                quote(&s.path),
                s.base.describe()
            ),
        )),
        DirState::Dir { .. } if !others_can_create(s.base) => out.push((
            if shared { Status::Critical } else { Status::Warning },
            format!(
                "{} {}: users cannot create {} in {} (it {}) unless a prolog does it for them",
                s.key,
                quote(&s.path),
                if shared { "files" } else { "their directory" },
                quote(&fixed),
                s.base.describe()
            ),
        )),
        _ => {}
    }
    // The configuration that lets a user own, create or swap the directory every user's path lies
    // in: whatever is wrong or right with it today is that user's choice.
    if let Some(who) = &s.controlled_by {
        out.push((
            Status::Warning,
            format!(
                "{} {}: {} is not root's ({who}), so a user can squat it or swap it for a link and fail every other user's Pyxis job",
                s.key,
                quote(&s.path),
                quote(&fixed)
            ),
        ));
    }
    // Where it lives: only meaningful where it exists or users can create it.
    if out.iter().all(|(st, _)| *st != Status::Critical) {
        match &s.fs {
            Fs::Root => out.push((
                Status::Warning,
                format!("{} {} is on the root filesystem", s.key, quote(&s.path)),
            )),
            Fs::Network(t) => out.push((
                Status::Warning,
                format!("{} {} is on {t}", s.key, quote(&s.path)),
            )),
            _ => {}
        }
    }
    out
}

/// The runtime path enroot uses (its default when unset).
pub fn runtime_path(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == "ENROOT_RUNTIME_PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "${XDG_RUNTIME_DIR}/enroot".into())
}

/// Judges the enroot family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &EnrootFacts) -> Vec<Outcome> {
    let text = match &f.conf {
        Ok(Some(t)) => t,
        Ok(None) => return CHECKS.iter().map(|(id, _)| Outcome::ok(id)).collect(),
        Err(e) => {
            let mut out = vec![Outcome::new(
                "node.enroot.conf",
                Status::Critical,
                format!("cannot read {}: {e}", quote(&f.conf_path)),
                "Pyxis containers fall back to enroot's defaults (per-user runtime dirs, cache in home)",
                "make the file readable by all users (mode 0644)",
            )];
            out.extend(
                CHECKS[1..]
                    .iter()
                    .map(|(id, _)| Outcome::unknown(id, "enroot.conf unreadable")),
            );
            return out;
        }
    };
    let (pairs, problems) = parse_conf(text);
    let rp = runtime_path(&pairs);
    let dir = shared_dir(&rp);
    vec![
        check_enroot_conf(f, &problems),
        check_enroot_runtime_path(&rp, dir.as_deref()),
        check_enroot_run_dir(f),
        check_enroot_tmpfiles(f, dir.as_deref()),
        check_enroot_storage(f),
        check_enroot_restrict_dev(f, &pairs),
        check_enroot_nvidia_hook(f),
    ]
}

/// `node.enroot.conf`: enroot.conf holds only `KEY value` lines and comments.
fn check_enroot_conf(f: &EnrootFacts, problems: &[String]) -> Outcome {
    match problems.first() {
        None => Outcome::ok("node.enroot.conf"),
        Some(p) => Outcome::new(
            "node.enroot.conf",
            Status::Warning,
            format!("{}: {p}", quote(&f.conf_path)),
            "enroot sources the file as shell; a stray line may break every container start",
            "keep only `ENROOT_KEY value` lines and comments",
        ),
    }
}

/// `node.enroot.runtime_path`: ENROOT_RUNTIME_PATH under `/run/enroot`.
fn check_enroot_runtime_path(rp: &str, dir: Option<&str>) -> Outcome {
    let xdg = rp.contains("XDG_RUNTIME_DIR") || rp.starts_with("/run/user/");
    match dir {
        Some("/run/enroot") => Outcome::ok("node.enroot.runtime_path"),
        // A warning, not a drain: enroot falls back to XDG_RUNTIME_DIR=/run when the step has none
        // (enroot's own `config::export XDG_RUNTIME_DIR /run`), so some containers start; the ones
        // whose srun carried the login node's XDG_RUNTIME_DIR fail.
        _ if xdg => Outcome::new(
            "node.enroot.runtime_path",
            Status::Warning,
            format!("ENROOT_RUNTIME_PATH is {} (enroot's default when unset)", quote(rp)),
            "srun copies the login session's XDG_RUNTIME_DIR=/run/user/UID into the step, and without a pam_systemd login on this node that directory does not exist, so those users' Pyxis containers fail with 'mkdir: cannot create directory ... Permission denied' (steps without the variable use /run/enroot)",
            "set `ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)` in /etc/enroot/enroot.conf and create /run/enroot mode 1777 from tmpfiles.d ('d /run/enroot 1777 root root -')",
        ),
        _ => Outcome::new(
            "node.enroot.runtime_path",
            Status::Warning,
            format!("ENROOT_RUNTIME_PATH is {}, not under /run/enroot", quote(rp)),
            "the runtime directory must be node-local tmpfs shared by all users; other places persist stale state or differ per user",
            "set `ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)` in /etc/enroot/enroot.conf",
        ),
    }
}

/// `node.enroot.run_dir`: the shared runtime directory exists, mode 1777, owned by root.
fn check_enroot_run_dir(f: &EnrootFacts) -> Outcome {
    if let Some((d, _)) = &f.run_dir {
        if let Some((_, why)) = f.hidden.iter().find(|(p, _)| p == d) {
            return Outcome::unknown("node.enroot.run_dir", why.clone());
        }
    }
    match &f.run_dir {
        // No fixed shared directory (e.g. ${XDG_RUNTIME_DIR}/enroot): nothing on the node to
        // examine; node.enroot.runtime_path judges the path itself.
        None => Outcome::ok("node.enroot.run_dir"),
        Some((_, s)) if s.is_good() => Outcome::ok("node.enroot.run_dir"),
        // Not a drain: the node is fine for jobs, and a drained node never gets the launch that
        // would repair it.
        Some((d, s)) if f.plugin_repairs && matches!(s, DirState::Missing | DirState::Dir { uid: 0, .. }) => Outcome::new(
            "node.enroot.run_dir",
            Status::Warning,
            format!("{} {}", quote(d), s.describe()),
            "launchguard's plugin (enroot_repair=yes) repairs it as root at the next container launch, so jobs run; without the plugin the first Pyxis job of a non-root user would fail with 'mkdir: cannot create directory '/run/enroot': Permission denied'",
            format!("install -d -m 1777 -o root -g root {d}; and add '{}' to /etc/tmpfiles.d/enroot.conf", tmpfiles_line(d)),
        ),
        Some((d, s)) => Outcome::new(
            "node.enroot.run_dir",
            Status::Critical,
            format!("{} {}", quote(d), s.describe()),
            "the first Pyxis job of a non-root user fails with 'mkdir: cannot create directory '/run/enroot': Permission denied'",
            format!("install -d -m 1777 -o root -g root {d}; and add '{}' to /etc/tmpfiles.d/enroot.conf", tmpfiles_line(d)),
        ),
    }
}

/// `node.enroot.tmpfiles`: a tmpfiles.d entry recreates the runtime directory at boot.
fn check_enroot_tmpfiles(f: &EnrootFacts, dir: Option<&str>) -> Outcome {
    match (dir, f.tmpfiles) {
        (_, true) => Outcome::ok("node.enroot.tmpfiles"),
        (None, false) => Outcome::ok("node.enroot.tmpfiles"),
        (Some(d), false) => Outcome::new(
            "node.enroot.tmpfiles",
            Status::Warning,
            format!("no tmpfiles.d entry creates {}", quote(d)),
            "/run is a tmpfs: after the next reboot the directory is gone and Pyxis jobs fail with 'Permission denied'",
            format!("echo '{}' > /etc/tmpfiles.d/enroot.conf; systemd-tmpfiles --create /etc/tmpfiles.d/enroot.conf", tmpfiles_line(d)),
        ),
    }
}

/// `node.enroot.storage`: data and cache paths per user, on node-local storage under a 1777 parent.
/// A status that rests only on paths a user controls ([`Storage::controlled_by`]) is marked
/// user-controlled, so that user cannot drain the node (nor lift a drain) by moving a directory.
fn check_enroot_storage(f: &EnrootFacts) -> Outcome {
    let hidden: Vec<&str> = f
        .storage
        .iter()
        .filter_map(|s| fixed_part(&s.path))
        .filter_map(|p| f.hidden.iter().find(|(h, _)| *h == p))
        .map(|(_, why)| why.as_str())
        .collect();
    if let Some(first) = hidden.first() {
        let more = match hidden.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more path(s))"),
        };
        return Outcome::unknown("node.enroot.storage", format!("{first}{more}"));
    }
    let mut problems: Vec<(Status, String, Option<&str>)> = f
        .storage
        .iter()
        .flat_map(|s| {
            storage_problems(s)
                .into_iter()
                .map(move |(st, w)| (st, w, s.controlled_by.as_deref()))
        })
        .collect();
    problems.sort_by_key(|(st, _, _)| if *st == Status::Critical { 0 } else { 1 });
    let Some((st, _, _)) = problems.first() else {
        return Outcome::ok("node.enroot.storage");
    };
    let worst: Vec<_> = problems.iter().filter(|(s, _, _)| s == st).collect();
    let user = worst
        .iter()
        .all(|(_, _, who)| who.is_some())
        .then(|| worst[0].2.map(String::from))
        .flatten();
    let squatted = f
        .storage
        .iter()
        .find(|s| s.controlled_by.is_some())
        .and_then(|s| fixed_part(&s.path));
    let fix = match squatted {
        Some(fixed) => format!(
            "let root own the parent: move '{fixed}' aside, add 'd {fixed} 1777 root root -' to /etc/tmpfiles.d/enroot.conf and run systemd-tmpfiles --create /etc/tmpfiles.d/enroot.conf (or use per-user paths under a root-owned 1777 directory on node-local NVMe, e.g. `ENROOT_DATA_PATH /opt/dlami/nvme/enroot/data/user-$(id -u)`)"
        ),
        None => "use per-user paths on node-local NVMe under a parent created at boot with mode 1777, e.g. `ENROOT_DATA_PATH /opt/dlami/nvme/enroot/data/user-$(id -u)` and 'd /opt/dlami/nvme/enroot/data 1777 root root -' in /etc/tmpfiles.d/enroot.conf".into(),
    };
    Outcome::new(
        "node.enroot.storage",
        *st,
        problems.iter().map(|(_, w, _)| w.as_str()).collect::<Vec<_>>().join(", "),
        "container images are tens of GB and each user needs a directory of their own: a missing parent or one directory owned by one user fails every other user's Pyxis job, / fills the root disk, a network filesystem makes every import slow",
        fix,
    )
    .controlled_by(user)
}

/// `node.enroot.restrict_dev`: an EFA node does not hide `/dev` from containers.
fn check_enroot_restrict_dev(f: &EnrootFacts, pairs: &[(String, String)]) -> Outcome {
    let restrict = pairs
        .iter()
        .rev()
        .find(|(k, _)| k == "ENROOT_RESTRICT_DEV")
        .map(|(_, v)| v.clone());
    // enroot(1): unset or empty means unrestricted; its false values are
    // ^(no?|N[oO]?|[fF](alse)?|FALSE)$ and anything else restricts /dev.
    let open = match restrict.as_deref() {
        None | Some("") => true,
        Some(v) => matches!(
            v,
            "n" | "no" | "N" | "NO" | "No" | "f" | "false" | "F" | "False" | "FALSE"
        ),
    };
    if !f.efa || open {
        Outcome::ok("node.enroot.restrict_dev")
    } else {
        Outcome::new(
            "node.enroot.restrict_dev",
            Status::Critical,
            format!(
                "this node has EFA but ENROOT_RESTRICT_DEV is '{}'",
                restrict.unwrap_or_default()
            ),
            "containers do not see /dev/infiniband, so NCCL cannot use EFA and falls back to TCP without an error",
            "set `ENROOT_RESTRICT_DEV n` in /etc/enroot/enroot.conf",
        )
    }
}

/// `node.enroot.nvidia_hook`: a GPU node has enroot's NVIDIA hook and nvidia-container-cli.
fn check_enroot_nvidia_hook(f: &EnrootFacts) -> Outcome {
    let n = &f.nvidia;
    match (n.gpu, &n.hook, &n.cli) {
        (true, Some(h), None) => Outcome::new(
            "node.enroot.nvidia_hook",
            Status::Critical,
            format!("this GPU node enables enroot's hook {} but has no nvidia-container-cli", quote(h)),
            "every container that asks for GPUs (CUDA images set NVIDIA_VISIBLE_DEVICES) fails to start with '98-nvidia.sh exited with return code 1'",
            "install libnvidia-container-tools (nvidia-container-cli) on the node",
        ),
        (true, None, _) => Outcome::new(
            "node.enroot.nvidia_hook",
            Status::Warning,
            format!("this GPU node has no executable 98-nvidia.sh in {}", quote(&hooks_dir(&f.conf_path))),
            "Pyxis containers then get no NVIDIA driver libraries or GPU devices",
            format!("install enroot's hook: cp /usr/share/enroot/hooks.d/98-nvidia.sh {}/ (mode 0755) and install libnvidia-container-tools", hooks_dir(&f.conf_path)),
        ),
        _ => Outcome::ok("node.enroot.nvidia_hook"),
    }
}

/// enroot's system hook directory: `hooks.d` beside enroot.conf (ENROOT_SYSCONF_PATH).
pub fn hooks_dir(conf_path: &str) -> String {
    match conf_path.rsplit_once('/') {
        Some(("", _)) => "/hooks.d".into(),
        Some((d, _)) => format!("{d}/hooks.d"),
        None => "hooks.d".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "ENROOT_RUNTIME_PATH      /run/enroot/user-$(id -u)\n\
ENROOT_CACHE_PATH        /opt/dlami/nvme/enroot/cache/user-$(id -u)\n\
ENROOT_DATA_PATH         /opt/dlami/nvme/enroot/data/user-$(id -u)\n\
ENROOT_SQUASH_OPTIONS    -noI -noD -noF -noX -no-duplicates\n\
ENROOT_RESTRICT_DEV      n\n";

    fn facts(conf: &str) -> EnrootFacts {
        EnrootFacts {
            conf_path: "/etc/enroot/enroot.conf".into(),
            conf: Ok(Some(conf.into())),
            run_dir: Some((
                "/run/enroot".into(),
                DirState::Dir {
                    mode: 0o1777,
                    uid: 0,
                },
            )),
            tmpfiles: true,
            storage: vec![store(
                "ENROOT_CACHE_PATH",
                "/opt/dlami/nvme/enroot/cache/user-$(id -u)",
                Fs::Local,
                STICKY,
                None,
            )],
            efa: true,
            plugin_repairs: false,
            nvidia: NvidiaHook {
                gpu: true,
                hook: Some("/etc/enroot/hooks.d/98-nvidia.sh".into()),
                cli: Some("/usr/bin/nvidia-container-cli".into()),
            },
            hidden: vec![],
        }
    }

    const STICKY: DirState = DirState::Dir {
        mode: 0o1777,
        uid: 0,
    };

    /// A storage path whose fixed part is in `base`; `anc`: the deepest existing directory when
    /// the fixed part is missing.
    fn store(
        key: &str,
        path: &str,
        fs: Fs,
        base: DirState,
        anc: Option<(&str, DirState)>,
    ) -> Storage {
        let fixed = fixed_part(path).unwrap();
        Storage {
            key: key.into(),
            path: path.into(),
            fs,
            base,
            ancestor: anc
                .map(|(a, s)| (a.to_string(), s))
                .unwrap_or((fixed, base)),
            controlled_by: None,
            unsearchable: None,
        }
    }

    /// Smallest input: ENROOT_DATA_PATH /tmp/enroot-data/user-$(id -u) where uid 1001 put a
    /// symlink at /tmp/enroot-data. Before: CRITICAL with nothing saying whose it is, and health
    /// drained on it.
    #[test]
    fn a_parent_a_user_controls_is_reported_as_theirs_and_never_drains() {
        let mut f = facts(SEED);
        let mut s = store(
            "ENROOT_DATA_PATH",
            "/tmp/enroot-data/user-$(id -u)",
            Fs::Root,
            DirState::NotDir,
            Some(("/tmp", STICKY)),
        );
        s.controlled_by = Some("uid 1001 (lgtest) owns '/tmp/enroot-data'".into());
        f.storage = vec![s.clone()];
        let o = judge(&f)
            .into_iter()
            .find(|o| o.id == "node.enroot.storage")
            .unwrap();
        assert_eq!(o.status, Status::Critical);
        assert_eq!(
            o.user_controlled.as_deref(),
            Some("uid 1001 (lgtest) owns '/tmp/enroot-data'")
        );
        assert!(o.what.contains("uid 1001 (lgtest)"), "{}", o.what);
        assert!(
            o.fix.contains("'d /tmp/enroot-data 1777 root root -'"),
            "{}",
            o.fix
        );
        // A root-owned parent with the same fault is root's doing: not marked, so it drains.
        s.controlled_by = None;
        f.storage = vec![s];
        let o = judge(&f)
            .into_iter()
            .find(|o| o.id == "node.enroot.storage")
            .unwrap();
        assert_eq!(o.status, Status::Critical);
        assert_eq!(o.user_controlled, None);
    }

    fn status(f: &EnrootFacts, id: &str) -> Status {
        judge(f).into_iter().find(|o| o.id == id).unwrap().status
    }

    #[test]
    fn the_seed_configuration_passes_every_check() {
        let out = judge(&facts(SEED));
        assert_eq!(out.len(), CHECKS.len());
        assert!(out.iter().all(|o| o.status == Status::Ok), "{out:?}");
        let (pairs, problems) = parse_conf(SEED);
        assert!(problems.is_empty());
        assert_eq!(pairs[3].1, "-noI -noD -noF -noX -no-duplicates");
    }

    #[test]
    fn missing_run_dir_no_tmpfiles_and_efa_restricted() {
        let mut f = facts("ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)\nENROOT_RESTRICT_DEV y\n");
        f.run_dir = Some(("/run/enroot".into(), DirState::Missing));
        f.tmpfiles = false;
        assert_eq!(status(&f, "node.enroot.run_dir"), Status::Critical);
        // launchguard's plugin repairs a missing one at the next launch: a warning, no drain
        f.plugin_repairs = true;
        assert_eq!(status(&f, "node.enroot.run_dir"), Status::Warning);
        // but not one owned by a user (the plugin refuses to adopt it)
        f.run_dir = Some((
            "/run/enroot".into(),
            DirState::Dir {
                mode: 0o755,
                uid: 1000,
            },
        ));
        assert_eq!(status(&f, "node.enroot.run_dir"), Status::Critical);
        f.run_dir = Some(("/run/enroot".into(), DirState::Missing));
        f.plugin_repairs = false;
        assert_eq!(status(&f, "node.enroot.tmpfiles"), Status::Warning);
        assert_eq!(status(&f, "node.enroot.restrict_dev"), Status::Critical);
        f.efa = false;
        assert_eq!(status(&f, "node.enroot.restrict_dev"), Status::Ok);
        // Unset and enroot's false spellings leave /dev open.
        for conf in [
            "",
            "ENROOT_RESTRICT_DEV\n",
            "ENROOT_RESTRICT_DEV no\n",
            "ENROOT_RESTRICT_DEV false\n",
        ] {
            let f = facts(conf);
            assert_eq!(
                status(&f, "node.enroot.restrict_dev"),
                Status::Ok,
                "{conf:?}"
            );
        }
        assert_eq!(
            status(
                &facts("ENROOT_RESTRICT_DEV 0\n"),
                "node.enroot.restrict_dev"
            ),
            Status::Critical
        );
    }

    #[test]
    fn storage_on_root_or_nfs_and_bad_lines() {
        let mut f = facts(SEED);
        f.storage = vec![
            store(
                "ENROOT_CACHE_PATH",
                "/var/enroot/u-$(id -u)",
                Fs::Root,
                STICKY,
                None,
            ),
            store(
                "ENROOT_DATA_PATH",
                "/fsx/enroot/u-$(id -u)",
                Fs::Network("nfs4".into()),
                STICKY,
                None,
            ),
        ];
        let o = judge(&f)
            .into_iter()
            .find(|o| o.id == "node.enroot.storage")
            .unwrap();
        assert_eq!(o.status, Status::Warning);
        assert!(o.what.contains("nfs4"), "{}", o.what);
        assert!(o.what.contains("root filesystem"), "{}", o.what);
        let f = facts("rm -rf /\nENROOT_X 1\n");
        assert_eq!(status(&f, "node.enroot.conf"), Status::Warning);
        // No ENROOT_RUNTIME_PATH: enroot's default under XDG_RUNTIME_DIR.
        assert_eq!(status(&f, "node.enroot.runtime_path"), Status::Warning);
    }

    /// Issue 28: the agent's unit with its own /tmp saw an empty /tmp where root saw a 0700
    /// directory of uid 1002, and said OK. A path it cannot see is UNKNOWN with the reason.
    #[test]
    fn paths_the_gathering_process_cannot_see_are_unknown_never_ok() {
        let mut f = facts(SEED);
        let why = "the agent's sandbox shows another directory at /tmp/enroot-data";
        f.storage = vec![store(
            "ENROOT_DATA_PATH",
            "/tmp/enroot-data/user-$(id -u)",
            Fs::Root,
            DirState::Missing,
            Some(("/tmp", STICKY)),
        )];
        f.run_dir = Some(("/tmp/enroot".into(), DirState::Missing));
        f.hidden = vec![
            ("/tmp/enroot-data".into(), why.into()),
            ("/tmp/enroot".into(), why.into()),
        ];
        let out = judge(&f);
        for id in ["node.enroot.storage", "node.enroot.run_dir"] {
            let o = out.iter().find(|o| o.id == id).unwrap();
            assert_eq!(o.status, Status::Unknown, "{id}: {o:?}");
            assert!(o.what.contains(why), "{o:?}");
        }
        // Seen: judged as before (a run dir of the runtime path that is missing is critical).
        f.hidden.clear();
        assert_eq!(status(&f, "node.enroot.run_dir"), Status::Critical);
    }

    /// Field reports: enroot issues 13 and 61, pyxis issue 138, awsome-distributed-ai issue 184.
    #[test]
    fn storage_paths_are_judged_by_what_users_can_create() {
        let root_755 = DirState::Dir {
            mode: 0o755,
            uid: 0,
        };
        let user_755 = DirState::Dir {
            mode: 0o755,
            uid: 1001,
        };
        let k = "ENROOT_DATA_PATH";
        // (storage, status, words the message must hold, words it must not)
        let cases: Vec<(Storage, Status, &[&str], &[&str])> = vec![
            // Parent missing, under a root-owned 0755 /: not "on the root filesystem".
            (
                store(
                    k,
                    "/raid/enroot-data/user-$(id -u)",
                    Fs::Root,
                    DirState::Missing,
                    Some(("/", root_755)),
                ),
                Status::Critical,
                &[
                    "'/raid/enroot-data' does not exist",
                    "users cannot create it in '/'",
                ],
                &["root filesystem"],
            ),
            // A fixed path that one user created first.
            (
                store(k, "/tmp/enroot-data", Fs::Root, user_755, None),
                Status::Critical,
                &["one directory for all users", "uid 1001 owns it"],
                &["root filesystem"],
            ),
            // A fixed path not created yet under /tmp: the first user will own it.
            (
                store(
                    k,
                    "/tmp/enroot-data",
                    Fs::Local,
                    DirState::Missing,
                    Some(("/tmp", STICKY)),
                ),
                Status::Warning,
                &["first user to run a container creates it"],
                &[],
            ),
            // A fixed path, root-owned 0755: nobody but root can write it.
            (
                store(k, "/opt/nvme/tmp/enroot/data", Fs::Local, root_755, None),
                Status::Critical,
                &["users cannot create files in"],
                &[],
            ),
            // Per-user under a 0755 parent: only a prolog makes it work.
            (
                store(
                    k,
                    "/opt/nvme/enroot/user-$(id -u)",
                    Fs::Local,
                    root_755,
                    None,
                ),
                Status::Warning,
                &["users cannot create their directory in '/opt/nvme/enroot'"],
                &[],
            ),
            // Per-user under a 1777 parent on a local disk: fine.
            (
                store(k, "/opt/nvme/enroot/user-$(id -u)", Fs::Local, STICKY, None),
                Status::Ok,
                &[],
                &[],
            ),
            // A fixed shared 1777 directory, local: fine.
            (
                store(k, "/local/enroot", Fs::Local, STICKY, None),
                Status::Ok,
                &[],
                &[],
            ),
        ];
        for (st, want, has, hasnt) in cases {
            let mut f = facts(SEED);
            let path = st.path.clone();
            f.storage = vec![st];
            let o = judge(&f)
                .into_iter()
                .find(|o| o.id == "node.enroot.storage")
                .unwrap();
            assert_eq!(o.status, want, "{path}: {}", o.what);
            for w in has {
                assert!(o.what.contains(w), "{path}: {w:?} not in {}", o.what);
            }
            for w in hasnt {
                assert!(!o.what.contains(w), "{path}: {w:?} in {}", o.what);
            }
        }
        assert_eq!(fixed_part("$HOME/enroot"), None);
        assert_eq!(fixed_part("/a/b/u-${UID}/c").as_deref(), Some("/a/b"));
    }

    #[test]
    fn enroots_default_runtime_path_is_judged_not_unknown() {
        // No ENROOT_RUNTIME_PATH (enroot's make install leaves it commented out) or set to the default.
        for conf in ["", "ENROOT_RUNTIME_PATH ${XDG_RUNTIME_DIR}/enroot\n"] {
            let mut f = facts(conf);
            f.run_dir = None;
            f.tmpfiles = false;
            let out = judge(&f);
            let get = |id: &str| out.iter().find(|o| o.id == id).unwrap().clone();
            assert_eq!(
                get("node.enroot.runtime_path").status,
                Status::Warning,
                "{conf:?}"
            );
            assert!(get("node.enroot.runtime_path")
                .what
                .contains("XDG_RUNTIME_DIR"));
            assert_eq!(get("node.enroot.run_dir").status, Status::Ok);
            assert_eq!(get("node.enroot.tmpfiles").status, Status::Ok);
            assert!(out.iter().all(|o| o.status != Status::Unknown), "{out:?}");
        }
        let mut f = facts("ENROOT_RUNTIME_PATH /tmp/enroot/$(id -u)\n");
        f.run_dir = Some(("/tmp/enroot".into(), STICKY));
        assert_eq!(status(&f, "node.enroot.runtime_path"), Status::Warning);
    }

    #[test]
    fn the_nvidia_hook_needs_its_cli_on_gpu_nodes() {
        let hook = Some("/etc/enroot/hooks.d/98-nvidia.sh".to_string());
        let cli = Some("/usr/bin/nvidia-container-cli".to_string());
        for (gpu, h, c, want) in [
            (true, hook.clone(), cli.clone(), Status::Ok),
            (true, hook.clone(), None, Status::Critical),
            (true, None, cli.clone(), Status::Warning),
            (true, None, None, Status::Warning),
            (false, hook.clone(), None, Status::Ok),
            (false, None, None, Status::Ok),
        ] {
            let mut f = facts(SEED);
            f.nvidia = NvidiaHook {
                gpu,
                hook: h.clone(),
                cli: c.clone(),
            };
            assert_eq!(
                status(&f, "node.enroot.nvidia_hook"),
                want,
                "{gpu} {h:?} {c:?}"
            );
        }
        assert_eq!(hooks_dir("/etc/enroot/enroot.conf"), "/etc/enroot/hooks.d");
    }

    #[test]
    fn no_enroot_means_not_applicable() {
        let mut f = facts(SEED);
        f.conf = Ok(None);
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
    }
}

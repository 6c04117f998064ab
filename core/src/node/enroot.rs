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

/// Everything the enroot family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrootFacts {
    /// enroot.conf's path.
    pub conf_path: String,
    /// `Ok(None)`: no enroot.conf and no enroot installed (every check passes: not applicable).
    pub conf: Result<Option<String>, String>,
    /// State of the runtime path's shared directory (`None` when not examined).
    pub run_dir: Option<(String, DirState)>,
    /// Whether a tmpfiles.d file creates that directory.
    pub tmpfiles: bool,
    /// `(key, path as configured, filesystem of the expanded path's existing prefix)`.
    pub storage: Vec<(String, String, Fs)>,
    /// The node has EFA devices (`/sys/class/infiniband/*` with driver `efa`).
    pub efa: bool,
    /// launchguard's plugin is listed in plugstack with `enroot_runtime` on and `enroot_repair=yes`
    /// (both its defaults): it creates a missing runtime directory, or fixes a root-owned one's mode,
    /// as root before Pyxis needs it, at the next container launch.
    pub plugin_repairs: bool,
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
    let mut out = vec![match problems.first() {
        None => Outcome::ok("node.enroot.conf"),
        Some(p) => Outcome::new(
            "node.enroot.conf",
            Status::Warning,
            format!("{}: {p}", quote(&f.conf_path)),
            "enroot sources the file as shell; a stray line may break every container start",
            "keep only `ENROOT_KEY value` lines and comments",
        ),
    }];
    let rp = runtime_path(&pairs);
    let dir = shared_dir(&rp);
    out.push(match &dir {
        Some(d) if d == "/run/enroot" => Outcome::ok("node.enroot.runtime_path"),
        _ => Outcome::new(
            "node.enroot.runtime_path",
            Status::Warning,
            format!("ENROOT_RUNTIME_PATH is {}, not under /run/enroot", quote(&rp)),
            "the runtime directory must be node-local tmpfs shared by all users; other places persist stale state or differ per user",
            "set `ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)` in /etc/enroot/enroot.conf",
        ),
    });
    out.push(match &f.run_dir {
        None => Outcome::unknown("node.enroot.run_dir", "the runtime directory was not examined (per-user path)"),
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
    });
    out.push(match (&dir, f.tmpfiles) {
        (_, true) => Outcome::ok("node.enroot.tmpfiles"),
        (None, false) => Outcome::ok("node.enroot.tmpfiles"),
        (Some(d), false) => Outcome::new(
            "node.enroot.tmpfiles",
            Status::Warning,
            format!("no tmpfiles.d entry creates {}", quote(d)),
            "/run is a tmpfs: after the next reboot the directory is gone and Pyxis jobs fail with 'Permission denied'",
            format!("echo '{}' > /etc/tmpfiles.d/enroot.conf; systemd-tmpfiles --create /etc/tmpfiles.d/enroot.conf", tmpfiles_line(d)),
        ),
    });
    let bad: Vec<String> = f
        .storage
        .iter()
        .filter_map(|(k, p, fs)| match fs {
            Fs::Root => Some(format!("{k} {} is on the root filesystem", quote(p))),
            Fs::Network(t) => Some(format!("{k} {} is on {t}", quote(p))),
            _ => None,
        })
        .collect();
    out.push(if bad.is_empty() {
        Outcome::ok("node.enroot.storage")
    } else {
        Outcome::new(
            "node.enroot.storage",
            Status::Warning,
            bad.join(", "),
            "container images are tens of GB: on / they fill the root disk, on a network filesystem every import is slow and shared",
            "point ENROOT_CACHE_PATH and ENROOT_DATA_PATH at node-local NVMe, e.g. /opt/dlami/nvme/enroot/cache/user-$(id -u)",
        )
    });
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
    out.push(if !f.efa || open {
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
    });
    out
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
            storage: vec![(
                "ENROOT_CACHE_PATH".into(),
                "/opt/dlami/nvme".into(),
                Fs::Local,
            )],
            efa: true,
            plugin_repairs: false,
        }
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
            ("ENROOT_CACHE_PATH".into(), "/var/enroot".into(), Fs::Root),
            (
                "ENROOT_DATA_PATH".into(),
                "/fsx/enroot".into(),
                Fs::Network("nfs4".into()),
            ),
        ];
        let o = judge(&f)
            .into_iter()
            .find(|o| o.id == "node.enroot.storage")
            .unwrap();
        assert_eq!(o.status, Status::Warning);
        assert!(o.what.contains("nfs4"), "{}", o.what);
        let f = facts("rm -rf /\nENROOT_X 1\n");
        assert_eq!(status(&f, "node.enroot.conf"), Status::Warning);
        assert_eq!(status(&f, "node.enroot.runtime_path"), Status::Warning);
    }

    #[test]
    fn no_enroot_means_not_applicable() {
        let mut f = facts(SEED);
        f.conf = Ok(None);
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
    }
}

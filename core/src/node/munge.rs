//! `node.munge.*`: the munge key and munged (MUNGE's installation guide and munged(8): the key must
//! be identical on every node, owned by munge, mode 0400; otherwise `Invalid credential`, `Munge decode failed`).

use super::{quote, Outcome, Status};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.munge.key_present",
        "/etc/munge/munge.key exists and is a regular file",
    ),
    (
        "node.munge.key_owner",
        "the munge key is owned by the munge user",
    ),
    (
        "node.munge.key_mode",
        "the munge key has mode 0400 (0600 is a warning)",
    ),
    (
        "node.munge.daemon",
        "munged is running (its pid file names a live process)",
    ),
    (
        "node.munge.roundtrip",
        "a credential encodes and decodes on this node (munge -n | unmunge)",
    ),
    (
        "node.munge.key_stale",
        "munged started after the key file last changed (it runs with the key on disk)",
    ),
    (
        "node.munge.key_digest",
        "the key's SHA-256 digest is published so nodes can be compared (never the key)",
    ),
    (
        "node.munge.shared_copy",
        "no copy of the key under the admin's shared paths (e.g. /fsx)",
    ),
    (
        "node.munge.peer_key",
        "slurmctld accepts this node's munge credential (a client request from this node is answered), so the key is the controller's",
    ),
];

/// Seconds the key's mtime may follow munged's start (start times are whole seconds after boot).
pub const STALE_SLACK_SECS: i64 = 2;

/// `stat` of the key file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyStat {
    /// Owner uid.
    pub uid: u32,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// A regular file (not a directory, link target checked by `stat`).
    pub regular: bool,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
}

/// munged as seen from its pid file and `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Daemon {
    /// A live munged; `started` in seconds since the epoch when known.
    Running { pid: u32, started: Option<i64> },
    /// Not running; says what was seen (`no pid file /run/munge/munged.pid`, `pid 42 is not alive`).
    NotRunning(String),
}

/// A copy of the key found under a shared path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCopy {
    /// Where: the path as walked, with no symlink in it.
    pub path: String,
    /// Its permission bits.
    pub mode: u32,
    /// Its owner's uid.
    pub uid: u32,
    /// Who, other than root, can change what `path` resolves to (a user who owns a directory on
    /// it, or the file), e.g. `uid 1001 (alice) owns '/home/alice'`; `None` when only root can.
    pub controlled_by: Option<String>,
    /// The one account that controls it, when one does: uid and name (a group or every account:
    /// `None`).
    pub controller: Option<(u32, Option<String>)>,
}

/// Everything the munge family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MungeFacts {
    /// The key's path.
    pub key_path: String,
    /// `Ok(None)`: absent; `Err`: could not stat (message).
    pub key: Result<Option<KeyStat>, String>,
    /// The `munge` user's uid, if such a user exists.
    pub munge_uid: Option<u32>,
    /// munged.
    pub daemon: Daemon,
    /// `munge -n | unmunge`: `None` when not tried (munged down), `Some(Err(stderr))` on failure.
    pub roundtrip: Option<Result<(), String>>,
    /// `sha256:<hex>` of the key's bytes, or `Err` when unreadable.
    pub digest: Result<String, String>,
    /// Copies of the key found under the admin's shared paths.
    pub shared_copies: Vec<SharedCopy>,
    /// The shared paths searched (for the message).
    pub shared_paths: Vec<String>,
    /// A client request from this node to slurmctld, and slurmd's own decode failures.
    pub peer: PeerKey,
    /// Why munge cannot be judged from here: the key, munged's pid file or its socket is in a
    /// directory the gathering process is shown otherwise than the node (the agent's unit hiding
    /// `/tmp`, `/home`…). Every check of the family is then UNKNOWN (issue 28).
    pub hidden: Option<String>,
}

/// What a client request from this node to slurmctld showed (`scontrol show config` as root, with
/// this node's slurm.conf and munged).
///
/// Sources: Slurm's `slurm_receive_msg` and slurmctld's `_service_connection`/`_on_msg`: a
/// credential slurmctld's munged cannot decode (another key: munged's MAC check fails, munge error
/// 14 'Invalid credential') is answered with `SLURM_PROTOCOL_AUTHENTICATION_ERROR` from 24.05.5
/// on (the client prints "Protocol authentication error"), and before that the connection is
/// closed without a reply ("Zero Bytes were transmitted or received"). A munged that cannot encode
/// on this node fails first, in the client ("Munge encode failed"); a controller that does not
/// listen is "Unable to contact slurm controller (connect failure)".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerProbe {
    /// slurmctld answered: it decoded this node's credential. `cached`: the answer is a recent
    /// one kept while nothing on this node it depends on changed.
    Answered { cached: bool },
    /// This runs inside a job step on this node: slurmd decoded slurmctld's job credential to
    /// start it, which is the same proof (and the controller is not asked from every node of a
    /// sweep at once).
    InStep,
    /// slurmctld refused this node's credential: the client's line.
    Refused(String),
    /// slurmctld could not be reached: the client's line (connect failure, no answer in time).
    Unreachable(String),
    /// This node's munged could not make a credential: the client's line.
    LocalMunge(String),
    /// Not asked: why (no scontrol, munged not running here).
    NotAsked(String),
    /// Another failure: the client's line.
    Other(String),
}

/// Classifies a failed client request by its error output (see [`PeerProbe`] for the sources).
pub fn classify_client_error(stderr: &str) -> PeerProbe {
    let line = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .find(|l| l.contains("Munge encode failed"))
        .or_else(|| stderr.lines().map(str::trim).rfind(|l| !l.is_empty()))
        .unwrap_or("")
        .to_string();
    let line = crate::finding::clip(&line, 200);
    if stderr.contains("Munge encode failed") || stderr.contains("auth_g_create") {
        PeerProbe::LocalMunge(line)
    } else if stderr.contains("Protocol authentication error")
        || stderr.contains("Zero Bytes were transmitted or received")
    {
        PeerProbe::Refused(line)
    } else if stderr.contains("Unable to contact slurm controller")
        || stderr.contains("Connection refused")
        || stderr.contains("Connection timed out")
        || stderr.contains("No route to host")
        || stderr.contains("timed out")
    {
        PeerProbe::Unreachable(line)
    } else {
        PeerProbe::Other(line)
    }
}

/// `Munge decode failed: …` lines in slurmd's log (`SlurmdLogFile`), counted from slurmd's last
/// start in the part of the log read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeFailures {
    /// The log file.
    pub log: String,
    /// How many.
    pub count: usize,
    /// The last one, as written (with its time stamp).
    pub last: String,
}

/// Everything `node.munge.peer_key` judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerKey {
    /// The controller asked (`SlurmctldHost`'s first name), for messages.
    pub controller: String,
    /// What the request showed.
    pub probe: PeerProbe,
    /// slurmd's decode failures, when its log could be read and holds any.
    pub decode_failures: Option<DecodeFailures>,
}

/// Judges the munge family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &MungeFacts) -> Vec<Outcome> {
    if let Some(why) = &f.hidden {
        return CHECKS
            .iter()
            .map(|(id, _)| Outcome::unknown(id, why.clone()))
            .collect();
    }
    // The key's stat, when it is a regular file the other checks can inspect.
    let stat = match &f.key {
        Ok(Some(s)) if s.regular => Some(s),
        _ => None,
    };
    vec![
        check_munge_key_present(f),
        check_munge_key_owner(f, stat),
        check_munge_key_mode(f, stat),
        check_munge_daemon(f),
        check_munge_roundtrip(f),
        check_munge_key_stale(f, stat),
        check_munge_key_digest(f),
        check_munge_shared_copy(f),
        check_munge_peer_key(f),
    ]
}

/// `node.munge.peer_key`: slurmctld accepts this node's credential. The node cannot compare keys
/// (the controller's is not here), but it sees the consequence: its request is refused. "munged
/// down" (`node.munge.daemon`, `node.munge.roundtrip`) and "controller unreachable" are not this
/// check's faults: they are UNKNOWN here.
fn check_munge_peer_key(f: &MungeFacts) -> Outcome {
    const ID: &str = "node.munge.peer_key";
    let p = &f.peer;
    let ctl = &p.controller;
    if !matches!(f.daemon, Daemon::Running { .. }) || matches!(f.roundtrip, Some(Err(_))) {
        return Outcome::unknown(
            ID,
            "this node's munged does not work (node.munge.daemon, node.munge.roundtrip), so its key cannot be compared with slurmctld's",
        );
    }
    let log = p.decode_failures.as_ref().map(|d| {
        format!(
            "; slurmd's log {} holds {} 'Munge decode failed' line(s), last: {}",
            quote(&d.log),
            d.count,
            crate::finding::clip(&d.last, 160)
        )
    });
    match &p.probe {
        PeerProbe::Answered { .. } | PeerProbe::InStep => Outcome::ok(ID),
        PeerProbe::Refused(line) => {
            let clock = p.decode_failures.as_ref().is_some_and(|d| {
                d.last.contains("Expired credential") || d.last.contains("Rewound credential")
            });
            let (why, fix) = if clock {
                (
                    "munge credentials carry their time: with this node's clock off by more than the credential TTL (300 s by default), slurmctld and slurmd refuse each other's credentials, and no job starts here".to_string(),
                    "set the clock right (chronyc makestep, or timedatectl set-ntp true), then systemctl restart slurmd".to_string(),
                )
            } else {
                (
                    format!("this node's munge key differs from the controller's: every credential between {ctl} and this node fails ('Invalid credential'), so slurmctld marks the node not responding and no job starts here"),
                    format!(
                        "copy the controller's key here (scp {ctl}:/etc/munge/munge.key {k}), chown munge:munge {k}, chmod 0400 {k}, systemctl restart munge, then systemctl restart slurmd",
                        k = f.key_path
                    ),
                )
            };
            Outcome::new(
                ID,
                Status::Critical,
                format!(
                    "slurmctld on {ctl} refuses this node's munge credential (scontrol: '{}'){}",
                    crate::finding::clip(line, 120),
                    log.unwrap_or_default()
                ),
                why,
                fix,
            )
        }
        PeerProbe::Unreachable(line) => Outcome::unknown(
            ID,
            format!(
                "slurmctld on {ctl} cannot be reached from this node ({}), so its key cannot be compared{}",
                crate::finding::clip(line, 120),
                log.unwrap_or_default()
            ),
        ),
        PeerProbe::LocalMunge(line) => Outcome::unknown(
            ID,
            format!(
                "Slurm's client cannot get a credential from this node's munged ({}): node.munge.daemon and node.munge.roundtrip judge munged",
                crate::finding::clip(line, 120)
            ),
        ),
        PeerProbe::NotAsked(why) => Outcome::unknown(ID, format!("slurmctld was not asked: {why}")),
        PeerProbe::Other(line) => Outcome::unknown(
            ID,
            format!(
                "a request to slurmctld on {ctl} failed otherwise than on munge ({}){}",
                crate::finding::clip(line, 120),
                log.unwrap_or_default()
            ),
        ),
    }
}

/// `node.munge.key_present`: the key exists and is a regular file.
fn check_munge_key_present(f: &MungeFacts) -> Outcome {
    let key = quote(&f.key_path);
    match &f.key {
        Ok(Some(s)) if s.regular => Outcome::ok("node.munge.key_present"),
        Ok(Some(_)) => Outcome::new(
            "node.munge.key_present",
            Status::Critical,
            format!("{key} is not a regular file"),
            "munged cannot start, and every Slurm RPC to this node fails with 'Invalid credential'",
            format!("copy the cluster's key into place: install -o munge -g munge -m 0400 <key> {}; systemctl restart munge", f.key_path),
        ),
        Ok(None) => Outcome::new(
            "node.munge.key_present",
            Status::Critical,
            format!("{key} does not exist"),
            "munged cannot start, and every Slurm RPC to this node fails with 'Invalid credential'",
            format!("copy the same key as on the controller: install -o munge -g munge -m 0400 <key> {}; systemctl restart munge", f.key_path),
        ),
        Err(e) => Outcome::unknown(
            "node.munge.key_present",
            format!("cannot stat {key}: {e}"),
        ),
    }
}

/// `node.munge.key_owner`: the key is owned by the munge user.
fn check_munge_key_owner(f: &MungeFacts, stat: Option<&KeyStat>) -> Outcome {
    let key = quote(&f.key_path);
    match (stat, f.munge_uid) {
        (None, _) => Outcome::unknown("node.munge.key_owner", "no key to inspect"),
        (Some(_), None) => Outcome::new(
            "node.munge.key_owner",
            Status::Critical,
            "there is no 'munge' user on this node",
            "munged runs as the munge user and must own its key",
            "install the munge package (it creates the user), then chown munge:munge /etc/munge/munge.key",
        ),
        (Some(s), Some(uid)) if s.uid == uid => Outcome::ok("node.munge.key_owner"),
        (Some(s), Some(_)) => Outcome::new(
            "node.munge.key_owner",
            Status::Critical,
            format!("{key} is owned by uid {}, not munge", s.uid),
            "munged refuses a key it does not own, so this node cannot authenticate to slurmctld",
            format!("chown munge:munge {}; systemctl restart munge", f.key_path),
        ),
    }
}

/// `node.munge.key_mode`: the key's mode is 0400.
fn check_munge_key_mode(f: &MungeFacts, stat: Option<&KeyStat>) -> Outcome {
    let key = quote(&f.key_path);
    let Some(s) = stat else {
        return Outcome::unknown("node.munge.key_mode", "no key to inspect");
    };
    let m = s.mode & 0o7777;
    let fix = format!("chmod 0400 {}; systemctl restart munge", f.key_path);
    if m == 0o400 {
        Outcome::ok("node.munge.key_mode")
    } else if m == 0o600 {
        Outcome::new(
            "node.munge.key_mode",
            Status::Warning,
            format!("{key} has mode 0600, not 0400"),
            "the key only needs to be read; a writable key is one mistake away from a different key on this node",
            fix,
        )
    } else if m & 0o077 != 0 {
        Outcome::new(
            "node.munge.key_mode",
            Status::Critical,
            format!("{key} has mode {m:04o}: group or others can access it"),
            "anyone who reads the key can forge credentials for any user on the whole cluster, and munged refuses such a key",
            fix,
        )
    } else if m & 0o400 == 0 {
        Outcome::new(
            "node.munge.key_mode",
            Status::Critical,
            format!("{key} has mode {m:04o}: its owner cannot read it"),
            "munged cannot load its key and does not start",
            fix,
        )
    } else {
        Outcome::new(
            "node.munge.key_mode",
            Status::Warning,
            format!("{key} has mode {m:04o}, not 0400"),
            "munged accepts it, but the key only needs to be read by its owner",
            fix,
        )
    }
}

/// `node.munge.daemon`: munged runs.
fn check_munge_daemon(f: &MungeFacts) -> Outcome {
    match &f.daemon {
        Daemon::Running { .. } => Outcome::ok("node.munge.daemon"),
        Daemon::NotRunning(why) => Outcome::new(
            "node.munge.daemon",
            Status::Critical,
            format!("munged is not running ({why})"),
            "slurmd cannot authenticate anything: every job on this node fails",
            "systemctl enable --now munge; journalctl -u munge explains a start failure",
        ),
    }
}

/// `node.munge.roundtrip`: `munge -n | unmunge` decodes this node's own credential.
fn check_munge_roundtrip(f: &MungeFacts) -> Outcome {
    let running = matches!(f.daemon, Daemon::Running { .. });
    match &f.roundtrip {
        Some(Ok(())) => Outcome::ok("node.munge.roundtrip"),
        Some(Err(e)) => Outcome::new(
            "node.munge.roundtrip",
            Status::Critical,
            format!("munge -n | unmunge fails: {}", crate::finding::clip(e.trim(), 160)),
            "Slurm's credentials are munge credentials: if this node cannot decode its own, it cannot decode the controller's",
            "check that munged runs with the cluster's key (systemctl restart munge) and that /run/munge is reachable",
        ),
        None if !running => Outcome::unknown("node.munge.roundtrip", "munged is not running"),
        None => Outcome::unknown("node.munge.roundtrip", "the round trip was not tried"),
    }
}

/// `node.munge.key_stale`: the key did not change after munged started.
fn check_munge_key_stale(f: &MungeFacts, stat: Option<&KeyStat>) -> Outcome {
    let key = quote(&f.key_path);
    match (stat, &f.daemon) {
        // A WARNING, not a drain: the same key written again (pdcp, install, touch) also moves the
        // mtime, and only the cluster-wide digest comparison (launchguard sweep) can tell.
        (Some(s), Daemon::Running { pid, started: Some(t) }) if s.mtime > *t + STALE_SLACK_SECS => Outcome::new(
            "node.munge.key_stale",
            Status::Warning,
            format!("{key} changed after munged (pid {pid}) started"),
            "munged keeps the key it read at start: if the content changed, this node disagrees with the nodes that use the file's key and their credentials fail with 'Invalid credential'",
            "systemctl restart munge (on every node whose key was replaced)",
        ),
        (Some(_), Daemon::Running { started: Some(_), .. }) => Outcome::ok("node.munge.key_stale"),
        _ => Outcome::unknown("node.munge.key_stale", "needs both the key and a running munged"),
    }
}

/// `node.munge.key_digest`: the key could be read for the cluster-wide comparison.
fn check_munge_key_digest(f: &MungeFacts) -> Outcome {
    let key = quote(&f.key_path);
    match &f.digest {
        Ok(_) => Outcome::ok("node.munge.key_digest"),
        Err(e) => Outcome::unknown("node.munge.key_digest", format!("cannot read {key}: {e}")),
    }
}

/// `node.munge.shared_copy`: no copy of the key on a shared filesystem. A copy whose path a user
/// controls (they can swap a directory on it for a link to `/etc/munge`) gets no fix that root would
/// run by path (`shred -u` would follow the link to the real key): the fix runs as that account, so
/// the kernel stops it at the key's permissions; such a finding is marked user-controlled (a user
/// could plant or remove it at will), so it never drains a node alone.
fn check_munge_shared_copy(f: &MungeFacts) -> Outcome {
    let Some(first) = f.shared_copies.first() else {
        return Outcome::ok("node.munge.shared_copy");
    };
    let exposed = f.shared_copies.iter().any(|c| c.mode & 0o044 != 0);
    // The copies the status rests on: the exposed ones when any is, otherwise all.
    let deciding: Vec<&SharedCopy> = f
        .shared_copies
        .iter()
        .filter(|c| !exposed || c.mode & 0o044 != 0)
        .collect();
    // Name a root-only copy first: that one is a finding no user can take back.
    let c = deciding
        .iter()
        .find(|c| c.controlled_by.is_none())
        .copied()
        .unwrap_or(first);
    let user = deciding
        .iter()
        .all(|c| c.controlled_by.is_some())
        .then(|| c.controlled_by.clone())
        .flatten();
    let others = f.shared_copies.len() - 1;
    let fix = match &c.controlled_by {
        None => format!(
            "shred -u {} (distribute keys over a root-only channel)",
            c.path
        ),
        Some(who) => {
            let who = crate::finding::clip(who, 80);
            let path = crate::finding::clip(&c.path, 200);
            // As that account, a swapped-in link to the real key hits the key's permissions.
            let as_them = match &c.controller {
                Some((_, Some(name))) => Some(format!("runuser -u {name} --")),
                Some((uid, None)) => Some(format!(
                    "setpriv --reuid={uid} --regid={uid} --clear-groups --"
                )),
                None => None,
            };
            match as_them {
                Some(run) => format!(
                    "do not remove it by path as root ({who}, who can swap it for a link to the real key): {run} shred -u -- {path}; then treat the key as exposed and replace it on every node"
                ),
                None => format!(
                    "do not remove it by path as root ({who}, so its entries can be swapped for a link to the real key): make that directory writable by root only, then shred -u {path}; then treat the key as exposed and replace it on every node"
                ),
            }
        }
    };
    Outcome::new(
        "node.munge.shared_copy",
        if exposed {
            Status::Critical
        } else {
            Status::Warning
        },
        format!(
            "a copy of the munge key is at {} (mode {:04o}, owner uid {}){}",
            quote(&c.path),
            c.mode & 0o7777,
            c.uid,
            if others > 0 {
                format!(" and {others} more")
            } else {
                String::new()
            }
        ),
        if exposed {
            "users who can read it can forge credentials for any user, root included, on the whole cluster"
        } else {
            "a key on a shared filesystem is one chmod away from every user"
        },
        fix,
    )
    .controlled_by(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28: a key or munged the gathering process cannot see as the node does is not judged
    /// (a private /tmp said 'munged is not running', CRITICAL, where root's check was clean).
    #[test]
    fn munge_not_seen_as_the_node_sees_it_is_unknown_throughout() {
        let mut f = good();
        f.key = Ok(None);
        assert!(judge(&f).iter().any(|o| o.status == Status::Critical));
        f.hidden = Some("the agent's sandbox shows another directory at /tmp/m".into());
        let out = judge(&f);
        assert_eq!(out.len(), CHECKS.len());
        assert!(out.iter().all(|o| o.status == Status::Unknown), "{out:?}");
    }

    fn good() -> MungeFacts {
        MungeFacts {
            hidden: None,
            key_path: "/etc/munge/munge.key".into(),
            key: Ok(Some(KeyStat {
                uid: 100,
                mode: 0o400,
                regular: true,
                mtime: 1000,
            })),
            munge_uid: Some(100),
            daemon: Daemon::Running {
                pid: 7,
                started: Some(2000),
            },
            roundtrip: Some(Ok(())),
            digest: Ok("sha256:ab".into()),
            shared_copies: vec![],
            shared_paths: vec![],
            peer: PeerKey {
                controller: "ctl1".into(),
                probe: PeerProbe::Answered { cached: false },
                decode_failures: None,
            },
        }
    }

    fn outcome(f: &MungeFacts, id: &str) -> Outcome {
        judge(f).into_iter().find(|o| o.id == id).unwrap()
    }

    fn status(f: &MungeFacts, id: &str) -> Status {
        judge(f).into_iter().find(|o| o.id == id).unwrap().status
    }

    #[test]
    fn healthy_node_is_all_ok_and_covers_every_id() {
        let out = judge(&good());
        assert_eq!(out.len(), CHECKS.len());
        for (o, (id, _)) in out.iter().zip(CHECKS) {
            assert_eq!(o.id, *id);
            assert_eq!(o.status, Status::Ok, "{o:?}");
        }
    }

    #[test]
    fn key_modes() {
        for (mode, want) in [
            (0o400, Status::Ok),
            (0o600, Status::Warning),
            (0o644, Status::Critical),
            (0o440, Status::Critical),
            (0o000, Status::Critical),
            (0o700, Status::Warning),
            (0o500, Status::Warning),
        ] {
            let mut f = good();
            if let Ok(Some(k)) = &mut f.key {
                k.mode = mode;
            }
            assert_eq!(status(&f, "node.munge.key_mode"), want, "{mode:o}");
        }
    }

    #[test]
    fn wrong_owner_missing_key_and_stale_daemon() {
        let mut f = good();
        if let Ok(Some(k)) = &mut f.key {
            k.uid = 0;
        }
        assert_eq!(status(&f, "node.munge.key_owner"), Status::Critical);
        let mut f = good();
        f.key = Ok(None);
        assert_eq!(status(&f, "node.munge.key_present"), Status::Critical);
        assert_eq!(status(&f, "node.munge.key_mode"), Status::Unknown);
        let mut f = good();
        if let Ok(Some(k)) = &mut f.key {
            k.mtime = 3000;
        }
        assert_eq!(status(&f, "node.munge.key_stale"), Status::Warning);
        if let Ok(Some(k)) = &mut f.key {
            k.mtime = 2001;
        }
        assert_eq!(status(&f, "node.munge.key_stale"), Status::Ok);
    }

    #[test]
    fn daemon_down_makes_roundtrip_unknown_not_critical_twice() {
        let mut f = good();
        f.daemon = Daemon::NotRunning("no pid file".into());
        f.roundtrip = None;
        assert_eq!(status(&f, "node.munge.daemon"), Status::Critical);
        assert_eq!(status(&f, "node.munge.roundtrip"), Status::Unknown);
    }

    #[test]
    fn shared_copies_readable_by_others_are_critical() {
        let mut f = good();
        f.shared_copies = vec![SharedCopy {
            path: "/fsx/munge.key".into(),
            mode: 0o644,
            uid: 0,
            controlled_by: None,
            controller: None,
        }];
        assert_eq!(status(&f, "node.munge.shared_copy"), Status::Critical);
        let o = outcome(&f, "node.munge.shared_copy");
        assert_eq!(o.user_controlled, None);
        assert!(o.fix.starts_with("shred -u /fsx/munge.key"), "{}", o.fix);
        f.shared_copies[0].mode = 0o400;
        assert_eq!(status(&f, "node.munge.shared_copy"), Status::Warning);
    }

    /// Smallest input: a 0644 copy under a directory uid 1001 owns. Before: the fix was
    /// `shred -u /home/alice/l/munge.key`, which root would run through alice's link to
    /// /etc/munge; and the CRITICAL drained the node.
    #[test]
    fn a_copy_under_a_users_directory_gets_no_root_fix_by_path_and_never_drains() {
        let mut f = good();
        f.shared_copies = vec![SharedCopy {
            path: "/home/alice/l/munge.key".into(),
            mode: 0o644,
            uid: 1001,
            controlled_by: Some("uid 1001 (alice) owns '/home/alice'".into()),
            controller: Some((1001, Some("alice".into()))),
        }];
        let o = outcome(&f, "node.munge.shared_copy");
        assert_eq!(o.status, Status::Critical);
        assert_eq!(
            o.user_controlled.as_deref(),
            Some("uid 1001 (alice) owns '/home/alice'")
        );
        assert!(!o.fix.starts_with("shred"), "{}", o.fix);
        assert!(
            o.fix
                .contains("runuser -u alice -- shred -u -- /home/alice/l/munge.key"),
            "{}",
            o.fix
        );
        assert!(o.what.contains("owner uid 1001"), "{}", o.what);
        // A root-only exposed copy next to it decides: named first, not user-controlled.
        f.shared_copies.push(SharedCopy {
            path: "/fsx/admin/munge.key".into(),
            mode: 0o644,
            uid: 0,
            controlled_by: None,
            controller: None,
        });
        let o = outcome(&f, "node.munge.shared_copy");
        assert_eq!(o.user_controlled, None);
        assert!(
            o.fix.starts_with("shred -u /fsx/admin/munge.key"),
            "{}",
            o.fix
        );
    }

    /// Issue 24 item 8: a key that differs from the controller's is CRITICAL on the node itself.
    /// Smallest input: scontrol's line on the 22.05 multinode cluster's lgn2 after
    /// `scripts/multinode.sh break lgn2 munge-key`. Before: no node check looked (all node.munge.* OK).
    #[test]
    fn a_refused_credential_is_critical_with_the_key_fix() {
        let mut f = good();
        f.peer.probe = classify_client_error(
            "slurm_load_ctl_conf error: Zero Bytes were transmitted or received\n",
        );
        f.peer.decode_failures = Some(DecodeFailures {
            log: "/var/log/slurmd.log".into(),
            count: 3,
            last: "[2026-12-02T03:04:50.601] error: Munge decode failed: Invalid credential".into(),
        });
        let o = judge(&f).pop().unwrap();
        assert_eq!((o.id, o.status), ("node.munge.peer_key", Status::Critical));
        assert!(o.what.starts_with("slurmctld on ctl1 refuses this node's munge credential (scontrol: 'slurm_load_ctl_conf error: Zero Bytes were transmitted or received'); slurmd's log '/var/log/slurmd.log' holds 3"), "{}", o.what);
        assert_eq!(o.fix, "copy the controller's key here (scp ctl1:/etc/munge/munge.key /etc/munge/munge.key), chown munge:munge /etc/munge/munge.key, chmod 0400 /etc/munge/munge.key, systemctl restart munge, then systemctl restart slurmd");
        // 24.05.5 and later answer with the error instead of closing.
        f.peer.probe =
            classify_client_error("slurm_load_ctl_conf error: Protocol authentication error\n");
        assert_eq!(status(&f, "node.munge.peer_key"), Status::Critical);
        // Clock skew is said as such.
        f.peer.decode_failures.as_mut().unwrap().last =
            "error: Munge decode failed: Expired credential".into();
        let o = judge(&f).pop().unwrap();
        assert_eq!(o.status, Status::Critical);
        assert!(o.fix.starts_with("set the clock right"), "{}", o.fix);
    }

    #[test]
    fn munged_down_or_controller_unreachable_is_not_called_a_key_difference() {
        // munged down here: the client's encode fails (its own line), the daemon check owns it.
        let mut f = good();
        f.peer.probe = classify_client_error("scontrol: error: Munge encode failed: Failed to access \"/run/munge/munge.socket.2\": No such file or directory (Did you start munged?)\nscontrol: error: slurm_send_node_msg: auth_g_create: REQUEST_BUILD_INFO has authentication error\nslurm_load_ctl_conf error: Protocol authentication error\n");
        assert!(
            matches!(f.peer.probe, PeerProbe::LocalMunge(_)),
            "{:?}",
            f.peer.probe
        );
        assert_eq!(status(&f, "node.munge.peer_key"), Status::Unknown);
        f.daemon = Daemon::NotRunning("no pid file".into());
        f.roundtrip = None;
        f.peer.probe = PeerProbe::Refused("x".into());
        assert_eq!(status(&f, "node.munge.peer_key"), Status::Unknown);
        // The controller does not listen.
        let mut f = good();
        f.peer.probe = classify_client_error(
            "slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)\n",
        );
        assert!(
            matches!(f.peer.probe, PeerProbe::Unreachable(_)),
            "{:?}",
            f.peer.probe
        );
        assert_eq!(status(&f, "node.munge.peer_key"), Status::Unknown);
        // Answered (fresh, cached, or inside a step): OK.
        for probe in [PeerProbe::Answered { cached: true }, PeerProbe::InStep] {
            f.peer.probe = probe;
            assert_eq!(status(&f, "node.munge.peer_key"), Status::Ok);
        }
    }
}

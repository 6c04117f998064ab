//! The Prometheus textfile for node_exporter's textfile collector (`--collector.textfile.directory`),
//! written atomically (a temporary file in the same directory, then `rename`), so the collector never
//! reads half a file. Names follow Prometheus conventions: `_total` counters, `_seconds` units.

use crate::gather::nofollow::{self, WalkError};
use crate::registry::NodeReport;
use crate::reports::Counters;
use std::fmt::Write;
use std::os::fd::AsRawFd;
use std::path::Path;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The exposition text for the last check run and the report counters.
pub fn render(rep: Option<&NodeReport>, counters: &Counters) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# HELP launchguard_check_status Node check status: 0 ok, 1 warning, 2 critical, 3 unknown.");
    let _ = writeln!(o, "# TYPE launchguard_check_status gauge");
    if let Some(r) = rep {
        for c in &r.checks {
            let _ = writeln!(
                o,
                "launchguard_check_status{{check=\"{}\"}} {}",
                esc(&c.id),
                c.status.exit_code()
            );
        }
        let _ = writeln!(o, "# HELP launchguard_node_status Worst node check status: 0 ok, 1 warning, 2 critical, 3 unknown.");
        let _ = writeln!(o, "# TYPE launchguard_node_status gauge");
        let _ = writeln!(o, "launchguard_node_status {}", r.exit_code);
        let _ = writeln!(
            o,
            "# HELP launchguard_check_run_duration_seconds Wall time of the last check run."
        );
        let _ = writeln!(o, "# TYPE launchguard_check_run_duration_seconds gauge");
        let _ = writeln!(
            o,
            "launchguard_check_run_duration_seconds {:.6}",
            r.duration_ms / 1e3
        );
        let _ = writeln!(
            o,
            "# HELP launchguard_check_run_timestamp_seconds When the last check run finished."
        );
        let _ = writeln!(o, "# TYPE launchguard_check_run_timestamp_seconds gauge");
        let _ = writeln!(o, "launchguard_check_run_timestamp_seconds {}", r.timestamp);
    }
    let _ = writeln!(o, "# HELP launchguard_reports_total Launch reports received from spank_launchguard.so, by source (slurmstepd: its verdict on a step; user_claim: what a user's srun sent, unverified) and action.");
    let _ = writeln!(o, "# TYPE launchguard_reports_total counter");
    for (source, action, n) in counters.accepted() {
        let _ = writeln!(
            o,
            "launchguard_reports_total{{source=\"{source}\",action=\"{action}\"}} {n}"
        );
    }
    let _ = writeln!(o, "# HELP launchguard_reports_dropped_total Launch reports or connections refused, by reason.");
    let _ = writeln!(o, "# TYPE launchguard_reports_dropped_total counter");
    for (reason, n) in counters.dropped() {
        let _ = writeln!(
            o,
            "launchguard_reports_dropped_total{{reason=\"{reason}\"}} {n}"
        );
    }
    o
}

/// Writes `text` to `path` atomically; does nothing when `path` is empty or its directory is absent.
///
/// Root writes here, so the directory is reached from `/` with `openat(…, O_NOFOLLOW |
/// O_DIRECTORY)` at every component ([`nofollow::walk_dir_strict`], as the plugin's enroot runtime
/// repair walks), and the file is created and renamed relative to that descriptor
/// (`openat(O_CREAT | O_EXCL | O_NOFOLLOW)`, `renameat`). Refused, with an error that says where:
/// a symlink at any component (a user's link to `/etc` must not make root write there), and a
/// directory on the way owned by an account other than root and the textfile directory's own
/// owner (node_exporter's account may own that one). Errors: those, and the I/O's own.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<bool> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(false);
    };
    if path.as_os_str().is_empty() || dir.as_os_str().is_empty() {
        return Ok(false);
    }
    let refuse = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("not written: {why}"),
        )
    };
    let w = match nofollow::walk_dir_strict(dir) {
        Ok(w) => w,
        Err(WalkError::Missing { .. }) => return Ok(false),
        Err(e @ WalkError::Symlink { .. }) => {
            return Err(refuse(format!(
                "{e}; launchguard never writes through a symlink as root"
            )))
        }
        Err(e) => return Err(refuse(e.to_string())),
    };
    let target_owner = w.chain.last().map_or(0, |l| l.uid);
    if let Some(l) = w.chain.iter().find(|l| l.uid != 0 && l.uid != target_owner) {
        return Err(refuse(format!(
            "'{}' is owned by {}, neither root nor the owner of '{}' ({}), so that account could swap what lies under it",
            l.path,
            nofollow::account(l.uid),
            w.path.display(),
            nofollow::account(target_owner)
        )));
    }
    let tmp = std::ffi::OsString::from(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let fd = Some(w.dir.as_raw_fd());
    // A leftover (or planted) entry at the temporary name goes first; the create never follows one.
    let _ = nix::unistd::unlinkat(fd, tmp.as_os_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
    {
        use std::io::Write;
        let mut f = nofollow::create_at(&w.dir, &tmp, 0o644)?;
        f.write_all(text.as_bytes())?;
    }
    nix::fcntl::renameat(fd, tmp.as_os_str(), fd, name).map_err(|e| {
        let _ = nix::unistd::unlinkat(fd, tmp.as_os_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
        std::io::Error::from(e)
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, MetadataExt};

    /// A private directory, writable by its owner only (whoever runs the tests).
    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/metrics-tests")
            .join(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn writes_the_file_and_skips_a_missing_directory() {
        let d = dir("plain");
        assert!(write_atomic(&d.join("launchguard.prom"), "a 1\n").unwrap());
        assert_eq!(
            std::fs::read_to_string(d.join("launchguard.prom")).unwrap(),
            "a 1\n"
        );
        assert!(!write_atomic(&d.join("absent/launchguard.prom"), "x").unwrap());
        assert!(!write_atomic(Path::new(""), "x").unwrap());
    }

    /// Smallest input: the textfile's directory is a symlink to another directory. Before: the file
    /// was created in the link's target (as root: `/etc/…/launchguard.prom`).
    #[test]
    fn never_writes_through_a_directory_symlink() {
        let d = dir("link");
        let target = d.join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        symlink(&target, d.join("prom")).unwrap();
        let e = write_atomic(&d.join("prom/launchguard.prom"), "x").unwrap_err();
        assert!(e.to_string().contains("is a symlink owned by"), "{e}");
        assert!(!target.join("launchguard.prom").exists());
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    }

    /// A directory on the way owned by another account than root and the textfile directory's
    /// owner is refused (as root only: it needs a chown).
    #[test]
    fn refuses_a_directory_owned_by_a_third_account() {
        if nix::unistd::geteuid().as_raw() != 0 {
            return;
        }
        let d = dir("owner");
        let mid = d.join("mid");
        let last = mid.join("prom");
        std::fs::create_dir_all(&last).unwrap();
        nix::unistd::chown(&mid, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        let e = write_atomic(&last.join("launchguard.prom"), "x").unwrap_err();
        assert!(e.to_string().contains("is owned by uid 4242"), "{e}");
        // Owned by the same account as the textfile directory: accepted.
        nix::unistd::chown(&last, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        assert!(write_atomic(&last.join("launchguard.prom"), "x").unwrap());
        assert_eq!(
            std::fs::metadata(last.join("launchguard.prom"))
                .unwrap()
                .uid(),
            0
        );
    }

    use launchguard_core::node::Status;
    use launchguard_core::report::CheckLine;

    /// The alerting rules the package ships.
    const ALERTS: &str = include_str!("../../packaging/prometheus/launchguard-alerts.yml");

    fn sample() -> String {
        let rep = NodeReport {
            schema: 1,
            node: "gpu1".into(),
            launchguard_version: "0.1.0".into(),
            status: Status::Critical,
            exit_code: 2,
            duration_ms: 8.0,
            timestamp: 1_700_000_000,
            checks: vec![CheckLine {
                id: "node.munge.key_mode".into(),
                status: Status::Critical,
                message: "launchguard: node.munge.key_mode: …".into(),
                duration_ms: 0.1,
                user_controlled: None,
            }],
            facts: Default::default(),
        };
        render(Some(&rep), &Counters::default())
    }

    /// Every metric the alerting rules use is one the agent writes, with the labels and label
    /// values they select on: renaming a metric without its rules fails here.
    #[test]
    fn the_alert_rules_use_the_metrics_we_write() {
        let text = sample();
        let names = regex::Regex::new(r"\b(launchguard_[a-z_]+)(\{[^}]*\})?").unwrap();
        let mut seen = 0;
        for c in names.captures_iter(ALERTS) {
            let name = &c[1];
            seen += 1;
            assert!(
                text.contains(&format!("# TYPE {name} ")),
                "launchguard-alerts.yml uses {name}, which the textfile does not have:\n{text}"
            );
            if let Some(sel) = c.get(2) {
                for m in sel.as_str().trim_matches(['{', '}']).split(',') {
                    let m = m.trim().replace("=~", "=");
                    assert!(
                        text.lines().any(|l| l.starts_with(name) && l.contains(&m)),
                        "launchguard-alerts.yml selects {name}{{{m}}}, which the textfile never writes"
                    );
                }
            }
        }
        assert!(seen >= 3, "the rules name launchguard's metrics");
    }

    /// Names follow Prometheus's naming guide: the `launchguard_` prefix, base units (`_seconds`),
    /// `_total` exactly on counters, snake_case label names.
    #[test]
    fn names_follow_the_prometheus_naming_guide() {
        let text = sample();
        let ty = regex::Regex::new(r"^# TYPE ([a-z_:][a-z0-9_:]*) (counter|gauge)$").unwrap();
        let mut n = 0;
        for l in text.lines().filter(|l| l.starts_with("# TYPE")) {
            let c = ty
                .captures(l)
                .unwrap_or_else(|| panic!("bad TYPE line: {l}"));
            let (name, kind) = (&c[1], &c[2]);
            assert!(name.starts_with("launchguard_"), "{name}");
            assert_eq!(
                name.ends_with("_total"),
                kind == "counter",
                "{name} is a {kind}"
            );
            assert!(
                !name.contains("_ms") && !name.contains("milli"),
                "{name}: base units"
            );
            n += 1;
        }
        assert_eq!(n, 6, "{text}");
        let label = regex::Regex::new(r"\{([a-z_]+)=").unwrap();
        for c in label.captures_iter(&text) {
            assert!(!c[1].starts_with("__"), "{}", &c[1]);
        }
    }
}

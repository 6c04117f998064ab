//! Logging: journald with structured fields (`tracing-journald`) when journald's socket exists,
//! else plain lines on stderr (containers, this test VM, `launchguard agent` in a terminal).
//!
//! Journal entries of the agent carry systemd's `MESSAGE_ID` (one 128-bit ID per kind of event, see
//! [`message_id`]; `journalctl MESSAGE_ID=…` selects them, as systemd.journal-fields(7) describes)
//! and launchguard's own fields, all named `LAUNCHGUARD_*` ([`JOURNAL_FIELDS`] lists them; the
//! tracing field `launchguard.check` becomes the journal field `LAUNCHGUARD_CHECK`). `PRIORITY`
//! follows syslog(3): a CRITICAL finding is 2 (crit), a WARNING or UNKNOWN one 4 (warning), a
//! cleared finding and an allowed launch 5 (notice), other errors of the agent itself 3 (err).

use crate::registry::NodeReport;
use launchguard_core::node::Status;
use std::collections::HashMap;
use tracing_journald::{Priority, PriorityMappings};
use tracing_subscriber::filter::{filter_fn, LevelFilter};
use tracing_subscriber::prelude::*;

/// The tracing target of events that must reach the journal at `PRIORITY=2` (crit): a node check
/// that turned CRITICAL, a launch rejected or warned for a CRITICAL finding. Emit them with
/// `tracing::error!(target: CRITICAL, …)`.
pub const CRITICAL: &str = "launchguard::critical";

/// Whether systemd runs this machine: `/run/systemd/system` is a directory, the test sd_booted(3)
/// uses. The advice the CLI and the agent give (systemctl, or running the agent by hand) follows it.
pub fn systemd_booted() -> bool {
    std::path::Path::new("/run/systemd/system").is_dir()
}

/// `MESSAGE_ID`s of the agent's journal entries (generated once with `systemd-id128 new`; never
/// change one: sites filter and alert on them).
pub mod message_id {
    /// The agent started: socket bound, first check run done, `READY=1` sent.
    pub const STARTED: &str = "8908bd5305544e829d54cc0e5f34b0aa";
    /// A node check changed to WARNING, CRITICAL or UNKNOWN (`LAUNCHGUARD_CHECK`,
    /// `LAUNCHGUARD_SEVERITY`).
    pub const FINDING: &str = "26624f63eee84b53945857a5f532f1e3";
    /// A node check that was not OK is OK again.
    pub const CLEARED: &str = "032b70a2e71742d6a0d5590858c788e9";
    /// A launch report from spank_launchguard.so (`LAUNCHGUARD_JOB`, `_STEP`, `_UID`, `_NODE`,
    /// `_PHASE`, `_ACTION`, `_FINDINGS`, `_SEVERITY`).
    pub const LAUNCH: &str = "7c3613215b974e6fa69bff88de07bdb2";
    /// The configuration was re-read (SIGHUP, `systemctl reload`), or re-reading it failed.
    pub const RELOADED: &str = "ab30368ed3fb450483935740d6ad2672";
    /// The agent stopped (SIGTERM, `systemctl stop`); the socket is removed.
    pub const STOPPED: &str = "82c40d88b4dc47309f938f243c6e6245";
}

/// Every journal field the agent sets besides journald's own (MESSAGE, PRIORITY, SYSLOG_IDENTIFIER,
/// CODE_FILE, CODE_LINE, TARGET): name, the entries that carry it, meaning. docs/node-agent.md and the
/// `launchguard-agent(1)` man page print this table.
pub const JOURNAL_FIELDS: &[(&str, &str, &str)] = &[
    ("MESSAGE_ID", "all", "the kind of entry (see the IDs below)"),
    ("LAUNCHGUARD_CHECK", "FINDING, CLEARED", "the check ID, e.g. node.munge.key_mode"),
    (
        "LAUNCHGUARD_SEVERITY",
        "FINDING, CLEARED, LAUNCH",
        "critical, warning, unknown or ok; LAUNCH: error or warning, the first finding's (empty: none)",
    ),
    ("LAUNCHGUARD_JOB", "LAUNCH", "Slurm job ID (empty before allocation)"),
    ("LAUNCHGUARD_STEP", "LAUNCH", "Slurm step ID (empty before allocation)"),
    ("LAUNCHGUARD_UID", "LAUNCH", "the user's uid"),
    ("LAUNCHGUARD_PEER_UID", "LAUNCH", "the sending process's uid from SO_PEERCRED (0: slurmstepd)"),
    (
        "LAUNCHGUARD_SOURCE",
        "LAUNCH",
        "slurmstepd (its verdict on a step) or user_claim (an srun-phase report: sent by the user's srun, unverified; always PRIORITY 5)",
    ),
    ("LAUNCHGUARD_DROPPED", "the summary of dropped claims", "how many srun reports of LAUNCHGUARD_PEER_UID were dropped over the per-user limit"),
    ("LAUNCHGUARD_NODE", "LAUNCH", "this node (the agent's own name, whatever the report said)"),
    ("LAUNCHGUARD_PHASE", "LAUNCH", "srun, step (slurmstepd as root) or task"),
    ("LAUNCHGUARD_ACTION", "LAUNCH", "allowed, warned or rejected"),
    ("LAUNCHGUARD_FINDINGS", "LAUNCH", "the launch's finding IDs, comma-separated"),
    ("LAUNCHGUARD_INTERVAL_SECS", "STARTED, RELOADED", "seconds between check runs now"),
    ("LAUNCHGUARD_CHANGED", "RELOADED", "the settings whose value changed, comma-separated"),
    ("LAUNCHGUARD_SOCKET", "STARTED", "the agent's socket"),
];

/// The man page's and `launchguard agent --help`'s section on journal fields.
pub fn journal_help() -> String {
    let mut s = String::from(
        "Journal fields (journalctl -u launchguard-agent -o json): PRIORITY is 2 (crit) for a CRITICAL \
         finding and for slurmstepd's verdict with an error-severity finding, 4 (warning) for WARNING, \
         UNKNOWN, slurmstepd's launch warnings and dropped srun reports, 5 (notice) for the rest (cleared \
         findings, allowed launches, every srun report, which is the user's own claim, start, reload, \
         stop), 3 (err) for the agent's own errors.\n\n",
    );
    for (f, on, what) in JOURNAL_FIELDS {
        s.push_str(&format!("  {f} ({on}): {what}\n"));
    }
    s.push_str("\nMESSAGE_IDs:\n");
    for (name, id) in [
        ("STARTED", message_id::STARTED),
        ("FINDING", message_id::FINDING),
        ("CLEARED", message_id::CLEARED),
        ("LAUNCH", message_id::LAUNCH),
        ("RELOADED", message_id::RELOADED),
        ("STOPPED", message_id::STOPPED),
    ] {
        s.push_str(&format!("  {id} {name}\n"));
    }
    s
}

/// Installs the global subscriber. `stderr` forces stderr even when journald is present.
pub fn init(level: LevelFilter, stderr: bool) -> &'static str {
    let layers = if stderr {
        None
    } else {
        tracing_journald::layer()
            .ok()
            .zip(tracing_journald::layer().ok())
    };
    match layers {
        Some((j, jcrit)) => {
            // No prefix: the fields are named `launchguard.*` in the events themselves, and
            // `message_id` must reach the journal as MESSAGE_ID.
            let j = j
                .with_syslog_identifier("launchguard".into())
                .with_field_prefix(None);
            let jcrit = jcrit
                .with_syslog_identifier("launchguard".into())
                .with_field_prefix(None)
                .with_priority_mappings(PriorityMappings {
                    error: Priority::Critical,
                    ..PriorityMappings::new()
                });
            let _ = tracing_subscriber::registry()
                .with(
                    j.with_filter(level)
                        .with_filter(filter_fn(|m| m.target() != CRITICAL)),
                )
                .with(
                    jcrit
                        .with_filter(level)
                        .with_filter(filter_fn(|m| m.target() == CRITICAL)),
                )
                .try_init();
            "journald"
        }
        None => {
            let fmt = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .with_target(false);
            let _ = tracing_subscriber::registry()
                .with(fmt.with_filter(level))
                .try_init();
            "stderr"
        }
    }
}

/// Logs every check whose status changed since the previous run (all non-OK ones on the first run),
/// with `MESSAGE_ID` FINDING or CLEARED and the fields `launchguard.check`/`launchguard.severity`
/// (journal: `LAUNCHGUARD_CHECK`, `LAUNCHGUARD_SEVERITY`). CRITICAL goes out at journal priority 2.
pub(crate) fn log_changes(prev: &mut HashMap<String, String>, rep: &NodeReport) {
    for c in &rep.checks {
        let before = prev.insert(c.id.clone(), c.status.as_str().to_string());
        if before.as_deref() == Some(c.status.as_str()) {
            continue;
        }
        let severity = c.status.as_str();
        match c.status {
            Status::Ok if before.is_some() => tracing::info!(
                message_id = message_id::CLEARED,
                launchguard.check = c.id.as_str(),
                launchguard.severity = "ok",
                "{} cleared",
                c.id
            ),
            Status::Ok => {}
            Status::Warning | Status::Unknown => tracing::warn!(
                message_id = message_id::FINDING,
                launchguard.check = c.id.as_str(),
                launchguard.severity = severity,
                "{}",
                c.message
            ),
            Status::Critical => tracing::error!(
                target: CRITICAL,
                message_id = message_id::FINDING,
                launchguard.check = c.id.as_str(),
                launchguard.severity = "critical",
                "{}",
                c.message
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_distinct_128_bit_hex() {
        let ids = [
            message_id::STARTED,
            message_id::FINDING,
            message_id::CLEARED,
            message_id::LAUNCH,
            message_id::RELOADED,
            message_id::STOPPED,
        ];
        for id in ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        }
        let mut d = ids.to_vec();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), ids.len());
        // every field in the table is documented in the help text
        let h = journal_help();
        for (f, _, _) in JOURNAL_FIELDS {
            assert!(h.contains(f), "{f}");
        }
    }
}

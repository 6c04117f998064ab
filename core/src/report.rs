//! The node report: what `launchguard check --json` prints, what the agent keeps as its last run
//! and returns to `launchguard status`, and what `launchguard sweep` reads back from every node.
//! Defined once, here; serde derives behind the `serde` feature (the plugin does not need them).
//!
//! JSON shape (schema 1): `{"schema":1,"node":…,"launchguard_version":…,"status":"ok|warning|
//! critical|unknown","exit_code":N,"duration_ms":…,"timestamp":…,"checks":[{"id","status",
//! "message","duration_ms","user_controlled"?}],"facts":{"munge_key_digest":…,…}}`.

use std::collections::BTreeMap;

use crate::node::Status;

/// One check's line in a report.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CheckLine {
    /// Check ID.
    pub id: String,
    /// `ok|warning|critical|unknown`.
    pub status: Status,
    /// The one-line finding (empty when ok).
    pub message: String,
    /// Milliseconds its family took to gather and judge (the wait, for one that timed out).
    pub duration_ms: f64,
    /// Who controls the state the finding rests on, when an unprivileged account does
    /// ([`crate::node::Outcome::user_controlled`]); absent otherwise. `launchguard health` never
    /// drains for such a check alone.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub user_controlled: Option<String>,
}

/// One run of the node checks: what `launchguard check --json` prints and `status` returns.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NodeReport {
    /// Format version of this object (1).
    pub schema: u32,
    /// This node's name.
    pub node: String,
    /// launchguard's version.
    pub launchguard_version: String,
    /// Worst status over the checks.
    pub status: Status,
    /// 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    pub exit_code: u8,
    /// Wall time of the whole run in milliseconds.
    pub duration_ms: f64,
    /// Seconds since the epoch when the run finished.
    pub timestamp: u64,
    /// Every check run.
    pub checks: Vec<CheckLine>,
    /// Values that must be identical across nodes (digests, versions).
    pub facts: BTreeMap<String, String>,
}

impl NodeReport {
    /// The worst status.
    pub fn worst(&self) -> Status {
        self.checks
            .iter()
            .fold(Status::Ok, |w, c| w.worst(c.status))
    }
}

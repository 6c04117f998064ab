//! Severities and findings, the same shape as every other launchguard finding: one line,
//! `launchguard: <id>: <what>; <why>; <fix>`.

use std::fmt;

use serde::Serialize;

/// Monitoring-plugin severities, ordered by how much they decide the exit code: critical outranks
/// unknown (as `launchguard nccl` does), unknown outranks warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Nothing wrong (exit 0).
    Ok,
    /// Something to look at (exit 1).
    Warning,
    /// Could not be judged (exit 3).
    Unknown,
    /// Broken (exit 2).
    Critical,
}

impl Severity {
    /// Exit code: 0 ok, 1 warning, 2 critical, 3 unknown.
    pub fn exit_code(self) -> u8 {
        match self {
            Severity::Ok => 0,
            Severity::Warning => 1,
            Severity::Critical => 2,
            Severity::Unknown => 3,
        }
    }

    /// Reads the check contract's `status` (`ok|warning|critical|unknown`).
    pub fn parse(s: &str) -> Option<Severity> {
        match s {
            "ok" => Some(Severity::Ok),
            "warning" => Some(Severity::Warning),
            "critical" => Some(Severity::Critical),
            "unknown" => Some(Severity::Unknown),
            _ => None,
        }
    }

    /// Lower-case name, as in the check contract.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
            Severity::Unknown => "unknown",
        }
    }
}

/// One finding of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable ID: `cluster.munge_key_digest`, `cluster.node_unreachable`, `nccl.bad_node`, or a node
    /// check's own ID.
    pub id: String,
    /// How serious.
    pub severity: Severity,
    /// Nodes it is about.
    pub nodes: Vec<String>,
    /// The whole line.
    pub line: String,
}

impl Finding {
    /// Builds the line from its parts.
    pub fn new(
        id: &str,
        severity: Severity,
        nodes: Vec<String>,
        what: &str,
        why: &str,
        fix: &str,
    ) -> Finding {
        Finding {
            id: id.to_string(),
            severity,
            nodes,
            line: format!("launchguard: {id}: {what}; {why}; {fix}"),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line)
    }
}

/// Worst severity of a list (ok when empty).
pub fn worst<'a>(it: impl IntoIterator<Item = &'a Finding>) -> Severity {
    it.into_iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Ok)
}

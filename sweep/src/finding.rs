//! Severities and findings, the same shape as every other launchguard finding: one line,
//! `launchguard: <id>: <what>; <why>; <fix>`.

use std::fmt;

use serde::Serialize;

/// A sweep finding's severity is a node check's status (`ok|warning|critical|unknown`, exit
/// 0/1/2/3, critical outranks unknown outranks warning): one type, core's.
pub use launchguard_core::node::Status as Severity;

/// One finding of the sweep. Not [`launchguard_core::node::Outcome`]: a sweep finding is about a set
/// of nodes (`nodes`), may come from another node's report (its `line` is then that node's message,
/// kept as it was) and is serialised in `launchguard sweep --json`; an outcome is one check on this
/// node. Both render through [`launchguard_core::finding::render_line`].
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
            line: launchguard_core::finding::render_line(id, what, why, fix),
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

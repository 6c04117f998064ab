//! Node checks: pure evaluators over facts the agent gathers on a node, one check family per file.
//!
//! Each family's `judge` returns one [`Outcome`] for every check ID it owns, `ok` or not, so a status
//! table always lists every check. Gathering (files, `/proc`, `/sys`, munged) lives in the agent
//! (`node-agent/src/gather/`); tests here feed canned facts. Each family names the public documentation its rules come from.

pub mod devices;
pub mod enroot;
pub mod hostname;
pub mod imex;
pub mod munge;
pub mod nccl_env;
pub mod plugstack;
pub mod pmix;
pub mod slurm_conf;

use std::fmt;

/// How a node check came out, in the monitoring-plugin order (`0 OK`, `1 WARNING`, `2 CRITICAL`,
/// `3 UNKNOWN`); [`Status::worst`] ranks UNKNOWN below CRITICAL but above WARNING.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Nothing wrong.
    Ok,
    /// Worth fixing; jobs still run.
    Warning,
    /// Jobs on this node fail or run far below speed; `launchguard health` drains for these.
    Critical,
    /// The facts could not be gathered (timeout, permission): never a node fault.
    Unknown,
}

impl Status {
    /// The monitoring-plugin exit code: 0, 1, 2, 3.
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Warning => 1,
            Status::Critical => 2,
            Status::Unknown => 3,
        }
    }

    /// `ok`, `warning`, `critical`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Critical => "critical",
            Status::Unknown => "unknown",
        }
    }

    fn rank(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Warning => 1,
            Status::Unknown => 2,
            Status::Critical => 3,
        }
    }

    /// The worse of the two: CRITICAL > UNKNOWN > WARNING > OK.
    pub fn worst(self, other: Status) -> Status {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one node check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Stable ID, e.g. `node.munge.key_mode`.
    pub id: &'static str,
    /// The status.
    pub status: Status,
    /// What is wrong (empty when OK).
    pub what: String,
    /// Why it matters (empty when OK).
    pub why: String,
    /// The exact fix (empty when OK).
    pub fix: String,
}

impl Outcome {
    /// A passing check.
    pub fn ok(id: &'static str) -> Outcome {
        Outcome {
            id,
            status: Status::Ok,
            what: String::new(),
            why: String::new(),
            fix: String::new(),
        }
    }

    /// A failing (or unknown) check with its three parts.
    pub fn new(
        id: &'static str,
        status: Status,
        what: impl Into<String>,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Outcome {
        Outcome {
            id,
            status,
            what: what.into(),
            why: why.into(),
            fix: fix.into(),
        }
    }

    /// A check whose facts could not be gathered: `what` says which and why.
    pub fn unknown(id: &'static str, what: impl Into<String>) -> Outcome {
        Outcome::new(
            id,
            Status::Unknown,
            what,
            "the check could not judge, so it counts neither as a fault nor as healthy (never a drain)",
            format!("fix what stops it (above), then `launchguard check --only {id}` as root"),
        )
    }

    /// `launchguard: <id>: <what>; <why>; <fix>`, or empty for an OK outcome.
    pub fn message(&self) -> String {
        if self.status == Status::Ok {
            return String::new();
        }
        let one = |s: &str| s.replace(['\n', '\r'], " ");
        format!(
            "launchguard: {}: {}; {}; {}",
            self.id,
            one(&self.what),
            one(&self.why),
            one(&self.fix)
        )
    }
}

/// A node check's ID with the family that computes it and a one-line description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckInfo {
    /// Stable ID, e.g. `node.munge.key_mode`.
    pub id: &'static str,
    /// Family (file) that computes it: `munge`, `hostname`, …
    pub family: &'static str,
    /// One line for `launchguard list-checks`.
    pub describe: &'static str,
}

/// Whether check `id` is named by `pattern`: the ID itself or a prefix ending at a dot
/// (`node.munge` names `node.munge.key_mode`, `node.mun` names nothing). Used by `--only`,
/// `disabled` and their validation alike.
pub fn id_matches(id: &str, pattern: &str) -> bool {
    id == pattern || (id.starts_with(pattern) && id.as_bytes().get(pattern.len()) == Some(&b'.'))
}

/// Every node check, in documentation order.
pub fn all_checks() -> Vec<CheckInfo> {
    let mut v = vec![];
    for (family, list) in [
        ("munge", munge::CHECKS),
        ("hostname", hostname::CHECKS),
        ("slurm_conf", slurm_conf::CHECKS),
        ("pmix", pmix::CHECKS),
        ("enroot", enroot::CHECKS),
        ("plugstack", plugstack::CHECKS),
        ("nccl_env", nccl_env::CHECKS),
        ("devices", devices::CHECKS),
        ("imex", imex::CHECKS),
    ] {
        for (id, describe) in list {
            v.push(CheckInfo {
                id,
                family,
                describe,
            });
        }
    }
    v
}

/// Shapes a size in MiB for messages.
pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", crate::finding::clip(s, 120))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_themselves_and_their_families_at_a_dot() {
        assert!(id_matches("node.munge.key_mode", "node.munge.key_mode"));
        assert!(id_matches("node.munge.key_mode", "node.munge"));
        assert!(!id_matches("node.munge.key_mode", "node.mun"));
        assert!(!id_matches("node.munge", "node.munge.key_mode"));
    }

    #[test]
    fn worst_ranks_critical_over_unknown_over_warning() {
        assert_eq!(Status::Ok.worst(Status::Warning), Status::Warning);
        assert_eq!(Status::Warning.worst(Status::Unknown), Status::Unknown);
        assert_eq!(Status::Critical.worst(Status::Unknown), Status::Critical);
        assert_eq!(Status::Unknown.worst(Status::Ok), Status::Unknown);
    }

    #[test]
    fn ids_are_unique_and_prefixed_by_family() {
        let all = all_checks();
        let mut ids: Vec<_> = all.iter().map(|c| c.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        for c in all {
            assert!(c.id.starts_with(&format!("node.{}.", c.family)), "{}", c.id);
        }
    }

    #[test]
    fn ok_outcomes_have_no_message_and_others_one_line() {
        assert_eq!(Outcome::ok("node.x.y").message(), "");
        let o = Outcome::new("node.x.y", Status::Critical, "a\nb", "c", "d");
        assert_eq!(o.message(), "launchguard: node.x.y: a b; c; d");
    }
}

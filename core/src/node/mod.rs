//! Node checks: pure evaluators over facts the agent gathers on a node, one check family per file.
//!
//! Each family's `judge` returns one [`Outcome`] for every check ID it owns, `ok` or not, so a status
//! table always lists every check. Gathering (files, `/proc`, `/sys`, munged) lives in the agent
//! (`node-agent/src/gather/`); tests here feed canned facts. Each family names the public documentation its rules come from.

pub mod devices;
pub mod enroot;
pub mod gpu;
pub mod hostname;
pub mod imex;
pub mod memlock;
pub mod munge;
pub mod munge_paths;
pub mod nccl_env;
pub mod plugstack;
pub mod pmix;
pub mod slurm_conf;

use std::fmt;

/// How a node check came out, in the monitoring-plugin order (`0 OK`, `1 WARNING`, `2 CRITICAL`,
/// `3 UNKNOWN`). The variants are declared (and so ordered by `Ord`) by how bad they are:
/// CRITICAL > UNKNOWN > WARNING > OK, which is what [`Status::worst`] and `max` pick.
///
/// The same type is a node report's `status` (`launchguard check --json`, `"ok"` … `"unknown"` with
/// the `serde` feature) and a sweep finding's severity; `launchguard nccl`'s
/// `launchguard_nccl::model::Severity` stays its own type (go/warn/no-go over a log file, not a
/// node's health).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum Status {
    /// Nothing wrong.
    Ok,
    /// Worth fixing; jobs still run.
    Warning,
    /// The facts could not be gathered (timeout, permission): never a node fault.
    Unknown,
    /// Jobs on this node fail or run far below speed; `launchguard health` drains for these.
    Critical,
}

impl Status {
    /// The monitoring-plugin exit code: 0, 1, 2, 3.
    pub fn exit_code(self) -> u8 {
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

    /// The worse of the two: CRITICAL > UNKNOWN > WARNING > OK.
    pub fn worst(self, other: Status) -> Status {
        self.max(other)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `status` string that is not `ok`, `warning`, `critical` or `unknown`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatus;

impl fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not one of ok, warning, critical, unknown")
    }
}

impl std::error::Error for UnknownStatus {}

impl std::str::FromStr for Status {
    type Err = UnknownStatus;

    /// Reads `ok|warning|critical|unknown` (exactly, lower-case), as [`Status::as_str`] writes it.
    fn from_str(s: &str) -> Result<Status, UnknownStatus> {
        match s {
            "ok" => Ok(Status::Ok),
            "warning" => Ok(Status::Warning),
            "critical" => Ok(Status::Critical),
            "unknown" => Ok(Status::Unknown),
            _ => Err(UnknownStatus),
        }
    }
}

/// The result of one node check. Not a launch [`crate::Finding`]: a finding exists only when a launch
/// is wrong and carries an enforce-mode severity (warning/error) for one srun; an outcome exists for
/// every check ID, `ok` included, with a monitoring status (ok/warning/critical/unknown) that decides
/// the exit code and drains. Both render through [`crate::finding::Line`].
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
    /// Set when the finding rests on state an unprivileged account controls (a path it owns or can
    /// swap): says who, e.g. `uid 1001 (alice) owns '/home/alice'`. Such a finding is reported at its
    /// status, but `launchguard health` never drains (nor keeps a drain) for it alone: a user must
    /// not be able to switch a node's drain on and off.
    pub user_controlled: Option<String>,
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
            user_controlled: None,
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
            user_controlled: None,
        }
    }

    /// Marks the outcome as resting on state that `who` controls (see
    /// [`Outcome::user_controlled`]); `None` leaves it unmarked.
    pub fn controlled_by(mut self, who: Option<String>) -> Outcome {
        self.user_controlled = who;
        self
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

    /// `launchguard: <id>: <what>; <why>; <fix>` ([`crate::finding::Line`]), or empty for an OK
    /// outcome.
    pub fn message(&self) -> String {
        if self.status == Status::Ok {
            return String::new();
        }
        crate::finding::render_line(self.id, &self.what, &self.why, &self.fix)
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
        ("munge", munge_paths::CHECKS),
        ("hostname", hostname::CHECKS),
        ("slurm_conf", slurm_conf::CHECKS),
        ("pmix", pmix::CHECKS),
        ("memlock", memlock::CHECKS),
        ("enroot", enroot::CHECKS),
        ("plugstack", plugstack::CHECKS),
        ("nccl_env", nccl_env::CHECKS),
        ("devices", devices::CHECKS),
        ("gpu", gpu::CHECKS),
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
    fn status_strings_read_back_and_nothing_else_does() {
        for st in [
            Status::Ok,
            Status::Warning,
            Status::Critical,
            Status::Unknown,
        ] {
            assert_eq!(st.as_str().parse::<Status>(), Ok(st));
        }
        assert_eq!("OK".parse::<Status>(), Err(UnknownStatus));
        assert_eq!("".parse::<Status>(), Err(UnknownStatus));
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

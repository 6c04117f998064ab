//! What the agent keeps of launch reports: the counters behind `launchguard_reports_total` and
//! `launchguard_reports_dropped_total`, and the two rings of recent reports (root's and users', so a
//! user cannot push slurmstepd's reports out), each launch counted once under its worst action.
//!
//! Reports have one of two [`SOURCES`]: `slurmstepd` (the `step` and `task` phases, sent by
//! slurmstepd as root: the plugin's verdict on a step that Slurm started) and `user_claim` (the
//! `srun` phase, sent by srun, which runs as the user: whatever a user's process chooses to send on
//! the socket reads the same). They are counted apart, and a claim is logged at notice level,
//! below every node finding, whatever severity it names.

use crate::config::Reports as ReportsConfig;
use crate::protocol::Stored;
use launchguard_core::protocol::Report;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Why something was refused (the `reason` label).
pub const DROP_REASONS: &[&str] = &[
    "too_long",
    "bad_json",
    "bad_version",
    "uid_mismatch",
    "rate",
    "connections",
    "idle",
    "bad_action",
    "truncated",
    "root_phase",
    "bad_finding",
    "claim_rate",
];
/// Report actions counted: the three verdicts the plugin sends. A report with any other action is
/// refused (`bad_action`), so every accepted report is counted under one of these.
pub const ACTIONS: &[&str] = &["allowed", "warned", "rejected"];

/// Where a report comes from (the `source` label): `slurmstepd` for the `step` and `task` phases
/// (only root may send them), `user_claim` for the `srun` phase (srun runs as the user).
pub const SOURCES: &[&str] = &["slurmstepd", "user_claim"];

/// The source of a report, by its phase ([`SOURCES`]).
pub fn source(r: &Report) -> &'static str {
    if crate::protocol::root_only_phase(&r.phase) {
        SOURCES[0]
    } else {
        SOURCES[1]
    }
}

/// Counters, lock-free.
#[derive(Default)]
pub struct Counters {
    accepted: [[AtomicU64; 3]; 2],
    dropped: [AtomicU64; 12],
}

impl Counters {
    /// Counts a refusal.
    pub fn drop_one(&self, reason: &str) {
        if let Some(i) = DROP_REASONS.iter().position(|r| *r == reason) {
            self.dropped[i].fetch_add(1, Ordering::Relaxed);
        }
    }
    /// Counts an accepted report under its action (one of [`ACTIONS`]; anything else is not counted:
    /// the server refuses such reports before they are stored).
    pub(crate) fn accept(&self, source: &str, action: &str) {
        if let Some(n) = self.slot(source, action) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn slot(&self, source: &str, action: &str) -> Option<&AtomicU64> {
        let s = SOURCES.iter().position(|x| *x == source)?;
        let a = ACTIONS.iter().position(|x| *x == action)?;
        Some(&self.accepted[s][a])
    }
    /// Takes back one count of an action (a launch judged again later, counted under its worst verdict).
    pub(crate) fn unaccept(&self, source: &str, action: &str) {
        let Some(n) = self.slot(source, action) else {
            return;
        };
        let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            Some(n.saturating_sub(1))
        });
    }
    /// `(source, action, count)` for every source of [`SOURCES`] and action of [`ACTIONS`].
    pub fn accepted(&self) -> Vec<(&'static str, &'static str, u64)> {
        let mut out = vec![];
        for (s, row) in SOURCES.iter().zip(&self.accepted) {
            for (a, n) in ACTIONS.iter().zip(row) {
                out.push((*s, *a, n.load(Ordering::Relaxed)));
            }
        }
        out
    }
    /// `(reason, count)`.
    pub fn dropped(&self) -> Vec<(&'static str, u64)> {
        DROP_REASONS
            .iter()
            .zip(&self.dropped)
            .map(|(a, n)| (*a, n.load(Ordering::Relaxed)))
            .collect()
    }
}

/// The report store: counters and the recent reports.
pub struct ReportStore {
    /// Recent reports from root peers (slurmstepd), oldest first, at most `reports.history`.
    pub history: Mutex<VecDeque<Stored>>,
    /// Recent reports from non-root peers (srun, the task phase), in their own ring so that a user
    /// cannot push slurmstepd's reports out.
    pub user_history: Mutex<VecDeque<Stored>>,
    /// Counters.
    pub counters: Counters,
    /// The action each launch is counted under, by `(node, job, step)`: slurmstepd reports a step in
    /// its root phase (`step`, always) and again in its task phase (`task`, with findings), and the
    /// launch must be counted once, under its worst action. Cleared when it reaches [`LAUNCH_KEYS`].
    counted: Mutex<HashMap<(String, u64, u64), &'static str>>,
    /// Reports kept per ring (`reports.history`).
    history_len: usize,
}

impl ReportStore {
    /// An empty store keeping `cfg.history` reports per ring.
    pub fn new(cfg: &ReportsConfig) -> ReportStore {
        ReportStore {
            history: Mutex::new(VecDeque::with_capacity(cfg.history.min(4096))),
            user_history: Mutex::new(VecDeque::with_capacity(cfg.history.min(4096))),
            counters: Counters::default(),
            counted: Mutex::new(HashMap::new()),
            history_len: cfg.history,
        }
    }

    pub fn store(&self, s: Stored) {
        let r = &s.report;
        let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
        let ids = ids.join(",");
        let job = r.job.map(|j| j.to_string()).unwrap_or_default();
        let step = r.step.map(|j| j.to_string()).unwrap_or_default();
        let severity = r
            .findings
            .first()
            .map(|f| f.severity.as_str())
            .unwrap_or("");
        let first = r.findings.first().map(|f| f.message.as_str()).unwrap_or("");
        let source = source(r);
        // Journal: MESSAGE_ID LAUNCH and LAUNCHGUARD_* fields (crate::logging); slurmstepd's verdict
        // with an error-severity finding (one enforce mode rejects) at priority 2, a warning at 4; a
        // user's claim (srun phase) always at 5, below every node finding.
        macro_rules! launch {
            ($lvl:ident $(, target: $t:expr)?) => {
                tracing::$lvl!(
                    $(target: $t,)?
                    message_id = crate::logging::message_id::LAUNCH,
                    launchguard.source = source,
                    launchguard.peer_uid = s.peer_uid,
                    launchguard.job = job.as_str(),
                    launchguard.step = step.as_str(),
                    launchguard.uid = r.uid,
                    launchguard.node = r.node.as_str(),
                    launchguard.phase = r.phase.as_str(),
                    launchguard.action = r.action.as_str(),
                    launchguard.findings = ids.as_str(),
                    launchguard.severity = severity,
                    "launch {}{}{}{}",
                    r.action,
                    if source == SOURCES[1] { " (claimed by the user's srun, not verified)" } else { "" },
                    if first.is_empty() { "" } else { ": " },
                    first
                )
            };
        }
        if source == SOURCES[1] || (r.action == "allowed" && r.findings.is_empty()) {
            launch!(info);
        } else if r.findings.iter().any(|f| f.severity == "error") {
            launch!(error, target: crate::logging::CRITICAL);
        } else {
            launch!(warn);
        }
        self.count(r);
        let ring = if s.peer_uid == 0 {
            &self.history
        } else {
            &self.user_history
        };
        let mut h = ring.lock().unwrap_or_else(|p| p.into_inner());
        while h.len() >= self.history_len {
            h.pop_front();
        }
        h.push_back(s);
    }

    /// Counts a report: once per launch (`node`, `job`, `step`) under its worst action, so that a step
    /// allowed in the root phase and rejected in the task phase counts as one rejection.
    fn count(&self, r: &Report) {
        let source = source(r);
        let (Some(job), Some(step), true) =
            (r.job, r.step, matches!(r.phase.as_str(), "step" | "task"))
        else {
            self.counters.accept(source, &r.action);
            return;
        };
        let Some(action) = ACTIONS.iter().find(|a| **a == r.action).copied() else {
            return;
        };
        let mut m = self.counted.lock().unwrap_or_else(|p| p.into_inner());
        let (take_back, add) = tally(&mut m, (r.node.clone(), job, step), action);
        if let Some(a) = take_back {
            self.counters.unaccept(source, a);
        }
        if let Some(a) = add {
            self.counters.accept(source, a);
        }
    }

    /// The last `limit` reports (at most `reports.history`), root's and users' merged by arrival,
    /// newest last.
    pub fn recent(&self, limit: usize) -> Vec<Stored> {
        let limit = limit.min(self.history_len);
        let mut all: Vec<Stored> = {
            let h = self.history.lock().unwrap_or_else(|p| p.into_inner());
            let u = self.user_history.lock().unwrap_or_else(|p| p.into_inner());
            h.iter()
                .rev()
                .take(limit)
                .chain(u.iter().rev().take(limit))
                .cloned()
                .collect()
        };
        all.sort_by_key(|s| s.seq);
        let skip = all.len().saturating_sub(limit);
        all.into_iter().skip(skip).collect()
    }
}

/// Most launches remembered for counting (about 100 bytes each).
const LAUNCH_KEYS: usize = 16_384;

/// The counting decision for one report of launch `key`: `(count to take back, count to add)`.
fn tally(
    m: &mut HashMap<(String, u64, u64), &'static str>,
    key: (String, u64, u64),
    action: &'static str,
) -> (Option<&'static str>, Option<&'static str>) {
    if m.len() >= LAUNCH_KEYS {
        m.clear();
    }
    match m.get(&key).copied() {
        None => {
            m.insert(key, action);
            (None, Some(action))
        }
        Some(prev) if gravity(action) > gravity(prev) => {
            m.insert(key, action);
            (Some(prev), Some(action))
        }
        Some(_) => (None, None),
    }
}

/// Order of actions by gravity.
fn gravity(action: &str) -> u8 {
    match action {
        "rejected" => 3,
        "warned" => 2,
        "allowed" => 1,
        _ => 0,
    }
}

/// True when `check` is a verdict that launch reports can prove wrong: `node.plugstack.order` saying
/// spank_launchguard.so is not listed (so "launches on this node are not checked"). A step or task
/// report from slurmstepd (root) is made by the plugin that plugstack loaded, so it disproves that
/// verdict; other plugstack findings (listed before Pyxis, an unreadable file) it does not.
pub fn disprovable(check: &launchguard_core::report::CheckLine) -> bool {
    check.id == "node.plugstack.order"
        && check.status != launchguard_core::node::Status::Ok
        && check.message.contains("spank_launchguard.so is not listed")
}

/// True for a report from slurmstepd itself: a `step` or `task` phase report from a root peer, i.e.
/// proof that the plugstack on this node loaded spank_launchguard.so when it arrived.
pub fn from_slurmstepd(s: &Stored) -> bool {
    s.peer_uid == 0 && crate::protocol::root_only_phase(&s.report.phase)
}

/// The first report from slurmstepd received after `run_finished` (epoch seconds, the check run's
/// `timestamp`), if any: it disproves a [`disprovable`] verdict of that run. Strictly after, at the
/// second's resolution, so a report from the run's own second never counts (the plugstack line may
/// have been removed in that second; the agent's refresh re-judges it anyway).
pub fn disproof(reports: &[Stored], run_finished: u64) -> Option<&Stored> {
    reports
        .iter()
        .find(|s| from_slurmstepd(s) && s.received > run_finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_is_counted_once_under_its_worst_action() {
        let mut m = HashMap::new();
        let k = |j: u64| ("n".to_string(), j, 0);
        // root phase allowed, task phase rejected: one rejection
        assert_eq!(tally(&mut m, k(1), "allowed"), (None, Some("allowed")));
        assert_eq!(
            tally(&mut m, k(1), "rejected"),
            (Some("allowed"), Some("rejected"))
        );
        // warned twice (root and task phase): one warning
        assert_eq!(tally(&mut m, k(2), "warned"), (None, Some("warned")));
        assert_eq!(tally(&mut m, k(2), "warned"), (None, None));
        // a later, milder report changes nothing
        assert_eq!(tally(&mut m, k(1), "allowed"), (None, None));
        // another node's report of the same step is its own launch
        assert_eq!(
            tally(&mut m, ("m".to_string(), 1, 0), "allowed"),
            (None, Some("allowed"))
        );
    }
}

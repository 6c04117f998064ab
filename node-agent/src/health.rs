//! `launchguard health`: Slurm's `HealthCheckProgram` (slurm.conf(5): slurmd runs it every
//! `HealthCheckInterval` and kills it after 60 s). Runs the node checks once; on a CRITICAL finding it
//! drains the node with `Reason="launchguard: <id>: <what>"`. Like NHC it never overwrites a reason it
//! did not set (a reason not starting with `launchguard:`), and resumes only nodes it drained itself
//! once no CRITICAL finding is left. UNKNOWN never drains. `--dry-run` prints what it would do.
//!
//! A finding that rests on state an unprivileged account controls (a path it owns or can swap, marked
//! by its check: [`launchguard_core::node::Outcome::user_controlled`]) never decides a drain on its
//! own: it counts as a WARNING here (neither drains nor lifts a drain) and `health` prints who
//! controls it, so no user can switch a node's drain on and off.

use crate::check_cmd::{load_config, run_once};
use crate::gather::util;
use crate::registry::NodeReport;
use launchguard_core::node::Status;
use std::process::{Command, ExitCode};
use std::time::Duration;

/// Prefix of every reason launchguard sets.
pub const PREFIX: &str = "launchguard:";
/// Longest reason set (Slurm shows reasons in one sinfo column; keep them readable).
const MAX_REASON: usize = 200;

// `launchguard health`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print what would be done; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The node's name in Slurm (default: the short hostname, as slurmd uses).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Config file (default /etc/launchguard/launchguard.toml; missing there = defaults).
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
}

/// The node as slurmctld sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    /// `State=` (e.g. `IDLE+DRAIN`).
    pub state: String,
    /// `Reason=` without the trailing `[user@time]`, if any.
    pub reason: Option<String>,
}

impl NodeState {
    fn drained(&self) -> bool {
        self.state.contains("DRAIN")
    }

    /// Whether the node's state is one a `Reason=` explains: drained, down, failed, or a reboot or
    /// power-down someone asked for (scontrol(1) `State=`, `Reason=`). Slurm 24.11 keeps the last
    /// reason after `scontrol update State=RESUME` (measured on 24.11.5; 22.05 clears it), so on an
    /// IDLE, MIXED or ALLOCATED node a reason is a leftover that holds nothing back.
    fn reason_in_effect(&self) -> bool {
        ["DRAIN", "DOWN", "FAIL", "REBOOT", "POWER"]
            .iter()
            .any(|f| self.state.contains(f))
    }
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing to change.
    None,
    /// Drain (or update launchguard's own reason) with this reason.
    Drain(String),
    /// Resume: launchguard drained it and the finding cleared.
    Resume,
    /// Critical, but someone else's reason is on the node: leave it.
    LeaveForeign(String),
}

/// Parses `scontrol show node NAME` output.
pub fn parse_show_node(text: &str) -> Option<NodeState> {
    let mut state = None;
    let mut reason = None;
    for l in text.lines() {
        let l = l.trim_start();
        if let Some(r) = l.strip_prefix("Reason=") {
            let r = match r.rfind(" [") {
                Some(i) if r.ends_with(']') => &r[..i],
                _ => r,
            };
            reason = Some(r.to_string());
            continue;
        }
        for w in l.split_whitespace() {
            if let Some(s) = w.strip_prefix("State=") {
                state = Some(s.to_string());
            }
        }
    }
    Some(NodeState {
        state: state?,
        reason,
    })
}

/// A check's status as far as draining goes: a CRITICAL that rests on user-controlled state counts
/// as a WARNING (it neither drains nor counts as cleared).
pub fn drain_status(c: &crate::registry::CheckLine) -> Status {
    match c.status {
        Status::Critical if c.user_controlled.is_some() => Status::Warning,
        s => s,
    }
}

/// The CRITICAL checks that do not drain because an unprivileged account controls what they rest
/// on: `(id, who)`.
pub fn user_controlled(rep: &NodeReport) -> Vec<(&str, &str)> {
    rep.checks
        .iter()
        .filter(|c| c.status == Status::Critical)
        .filter_map(|c| Some((c.id.as_str(), c.user_controlled.as_deref()?)))
        .collect()
}

/// The reason for a report's CRITICAL checks that may drain ([`drain_status`]; `None` when there
/// are none).
pub fn reason(rep: &NodeReport) -> Option<String> {
    let crit: Vec<_> = rep
        .checks
        .iter()
        .filter(|c| drain_status(c) == Status::Critical)
        .collect();
    let first = crit.first()?;
    // "launchguard: <id>: <what>" (the message's first part), plus how many more.
    let what = first.message.split("; ").next().unwrap_or(&first.message);
    let mut r = what.to_string();
    if crit.len() > 1 {
        r.push_str(&format!(" (+{} more)", crit.len() - 1));
    }
    if r.chars().count() > MAX_REASON {
        r = r.chars().take(MAX_REASON - 1).collect::<String>() + "…";
    }
    Some(r)
}

/// The check ID in a reason launchguard set (`launchguard: node.munge.key_mode: …`).
pub fn reason_id(reason: &str) -> Option<&str> {
    reason.strip_prefix(PREFIX)?.trim_start().split(':').next()
}

/// Decides what to do from the node's state, the reason launchguard would set (`want`, from the
/// CRITICAL checks) and the status of any check by ID. Rules: any reason not starting with
/// `launchguard:` is someone else's and is never touched while it is in effect (the node drained,
/// down, failed, or a reboot or power-down pending); a reason left on a node back in service (Slurm
/// 24.11 keeps it after a resume) is no one's; a node is resumed only from DRAIN (never from DOWN,
/// which slurmctld may have set), only when launchguard set the reason, and only when the check
/// named in it is OK now (UNKNOWN keeps the drain).
pub fn decide(
    node: &NodeState,
    want: Option<&str>,
    status: &dyn Fn(&str) -> Option<Status>,
) -> Action {
    let reason = node
        .reason
        .as_deref()
        .filter(|r| !r.is_empty() && node.reason_in_effect());
    let ours = reason.is_some_and(|r| r.starts_with(PREFIX));
    match want {
        Some(_) if reason.is_some() && !ours => {
            Action::LeaveForeign(reason.unwrap_or_default().to_string())
        }
        Some(r) if node.drained() && reason == Some(r) => Action::None,
        Some(r) if node.state.starts_with("DOWN") && !node.drained() && !ours => {
            Action::LeaveForeign(format!("node is {} ({r})", node.state))
        }
        Some(r) => Action::Drain(r.to_string()),
        None if node.drained() && ours && !node.state.starts_with("DOWN") => {
            match reason.and_then(reason_id).map(status) {
                Some(Some(Status::Ok)) | Some(None) => Action::Resume,
                _ => Action::None,
            }
        }
        None => Action::None,
    }
}

fn scontrol(cfg: &crate::config::Config, args: &[&str]) -> Result<String, String> {
    let mut c = Command::new(&cfg.health.scontrol);
    c.args(args);
    let out = util::run(c, None, Duration::from_secs(20))?;
    if out.ok {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        // scontrol prints some errors ("Node x not found") on stdout.
        let err = if out.stderr.trim().is_empty() {
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        } else {
            out.stderr.trim().to_string()
        };
        Err(format!("scontrol {}: {err}", args.join(" ")))
    }
}

/// Runs the health check: exit code is the checks' (0–3); 3 also when Slurm cannot be asked.
pub fn run(a: &Args) -> ExitCode {
    let cfg = match load_config(a.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let node = a.node.clone().unwrap_or_else(crate::gather::node_name);
    let rep = run_once(cfg.clone(), &[]);
    let want = reason(&rep);
    let state = match scontrol(&cfg, &["show", "node", &node]).map(|t| parse_show_node(&t)) {
        Ok(Some(s)) => s,
        Ok(None) => {
            eprintln!("launchguard: health: scontrol show node {node} gave no State");
            return ExitCode::from(3);
        }
        Err(e) => {
            eprintln!("launchguard: health: {e}");
            return ExitCode::from(3);
        }
    };
    let status = |id: &str| rep.checks.iter().find(|c| c.id == id).map(drain_status);
    let action = decide(&state, want.as_deref(), &status);
    let drain = cfg.health.drain && !a.dry_run;
    let verb = if drain { "" } else { "would " };
    for (id, who) in user_controlled(&rep) {
        println!(
            "launchguard: health: {node}: {id} is CRITICAL but not a drain reason: it rests on state an unprivileged account controls ({}); its fix: launchguard check --only {id}",
            launchguard_core::text::printable(who, 200)
        );
    }
    let result = match &action {
        Action::None => {
            println!(
                "launchguard: health: {node}: {} ({}), nothing to change",
                rep.status.as_str().to_uppercase(),
                state.state
            );
            Ok(())
        }
        Action::LeaveForeign(r) => {
            println!("launchguard: health: {node}: CRITICAL but already drained by someone else (Reason={r}); left alone");
            Ok(())
        }
        Action::Drain(r) => {
            println!("launchguard: health: {node}: {verb}drain: Reason={r}");
            if drain {
                scontrol(
                    &cfg,
                    &[
                        "update",
                        &format!("NodeName={node}"),
                        "State=DRAIN",
                        &format!("Reason={r}"),
                    ],
                )
                .map(|_| ())
            } else {
                Ok(())
            }
        }
        Action::Resume => {
            println!("launchguard: health: {node}: the finding cleared; {verb}resume (launchguard drained it)");
            if drain {
                scontrol(
                    &cfg,
                    &["update", &format!("NodeName={node}"), "State=RESUME"],
                )
                .map(|_| ())
            } else {
                Ok(())
            }
        }
    };
    if let Err(e) = result {
        eprintln!("launchguard: health: {e}");
        return ExitCode::from(3);
    }
    ExitCode::from(rep.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(state: &str, reason: Option<&str>) -> NodeState {
        NodeState {
            state: state.into(),
            reason: reason.map(String::from),
        }
    }

    fn report(lines: &[(&str, Status, Option<&str>)]) -> NodeReport {
        NodeReport {
            schema: 1,
            node: "vm".into(),
            launchguard_version: "0.1.0".into(),
            status: Status::Critical,
            exit_code: 2,
            duration_ms: 1.0,
            timestamp: 0,
            checks: lines
                .iter()
                .map(|(id, status, who)| crate::registry::CheckLine {
                    id: id.to_string(),
                    status: *status,
                    message: format!("launchguard: {id}: bad; why; fix"),
                    duration_ms: 0.1,
                    user_controlled: who.map(String::from),
                })
                .collect(),
            facts: Default::default(),
        }
    }

    /// Smallest input: one CRITICAL check whose state a user controls (a symlink lgtest planted at
    /// ENROOT_DATA_PATH's parent in /tmp). Before: `reason` gave a drain reason for it.
    #[test]
    fn a_user_controlled_critical_neither_drains_nor_lifts_a_drain() {
        let owner = "uid 1001 (lgtest) owns '/tmp/enroot-data'";
        let who = Some(owner);
        let rep = report(&[("node.enroot.storage", Status::Critical, who)]);
        assert_eq!(reason(&rep), None);
        assert_eq!(user_controlled(&rep), vec![("node.enroot.storage", owner)]);
        let status = |id: &str| rep.checks.iter().find(|c| c.id == id).map(drain_status);
        assert_eq!(decide(&st("IDLE", None), None, &status), Action::None);
        // A drain launchguard set for it earlier stays: the user cannot lift it either.
        let lg = "launchguard: node.enroot.storage: x";
        assert_eq!(
            decide(&st("IDLE+DRAIN", Some(lg)), None, &status),
            Action::None
        );
        // Next to a CRITICAL the user does not control, that one is the reason.
        let rep = report(&[
            ("node.enroot.storage", Status::Critical, who),
            ("node.munge.key_mode", Status::Critical, None),
        ]);
        assert_eq!(
            reason(&rep).as_deref(),
            Some("launchguard: node.munge.key_mode: bad")
        );
    }

    /// Smallest input, measured on Slurm 24.11.5 (the cgroup v2 VM, scripts/test-vm.sh): an admin
    /// drained the node ("disk swap by hand") and resumed it; `scontrol show node` still prints
    /// `State=IDLE … Reason=disk swap by hand`. Before: a later CRITICAL left that node in service
    /// ("already drained by someone else; left alone").
    #[test]
    fn a_reason_left_on_a_resumed_node_does_not_stop_a_drain() {
        let lg = "launchguard: node.munge.key_mode: bad";
        let ok = |_: &str| Some(Status::Ok);
        for state in ["IDLE", "MIXED", "ALLOCATED"] {
            assert_eq!(
                decide(&st(state, Some("disk swap by hand")), Some(lg), &ok),
                Action::Drain(lg.into()),
                "{state}"
            );
        }
        // launchguard's own leftover on a resumed node: nothing to resume, a new finding drains.
        let old = "launchguard: node.munge.key_mode: old";
        assert_eq!(decide(&st("IDLE", Some(old)), None, &ok), Action::None);
        assert_eq!(
            decide(&st("IDLE", Some(old)), Some(lg), &ok),
            Action::Drain(lg.into())
        );
        // In effect (drained, down, failed, a reboot or power-down asked for): kept.
        for state in [
            "IDLE+DRAIN",
            "DOWN",
            "IDLE+FAIL",
            "IDLE+REBOOT_REQUESTED",
            "IDLE+POWERING_DOWN",
        ] {
            assert!(
                matches!(
                    decide(&st(state, Some("disk swap by hand")), Some(lg), &ok),
                    Action::LeaveForeign(_)
                ),
                "{state}"
            );
        }
    }

    #[test]
    fn show_node_parsing_strips_the_user_and_time() {
        let text = "NodeName=vm Arch=x86_64 CoresPerSocket=1\n   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0\n   Reason=launchguard: node.munge.key_mode: x [root@2026-11-30T03:00:00]\n";
        let s = parse_show_node(text).unwrap();
        assert_eq!(s.state, "IDLE+DRAIN");
        assert_eq!(
            s.reason.as_deref(),
            Some("launchguard: node.munge.key_mode: x")
        );
    }

    #[test]
    fn never_overwrites_a_foreign_reason_and_resumes_only_its_own() {
        let lg = "launchguard: node.munge.key_mode: bad";
        let ok = |_: &str| Some(Status::Ok);
        let unknown = |_: &str| Some(Status::Unknown);
        assert_eq!(
            decide(&st("IDLE", None), Some(lg), &ok),
            Action::Drain(lg.into())
        );
        assert_eq!(
            decide(&st("IDLE+DRAIN", Some(lg)), Some(lg), &ok),
            Action::None
        );
        assert_eq!(
            decide(
                &st("IDLE+DRAIN", Some("launchguard: node.x: old")),
                Some(lg),
                &ok
            ),
            Action::Drain(lg.into())
        );
        assert!(matches!(
            decide(&st("IDLE+DRAIN", Some("bad DIMM")), Some(lg), &ok),
            Action::LeaveForeign(_)
        ));
        // A foreign reason on a node that is not drained (REBOOT_REQUESTED, FAIL…) is kept too.
        assert!(matches!(
            decide(
                &st("IDLE+REBOOT_REQUESTED", Some("firmware update")),
                Some(lg),
                &ok
            ),
            Action::LeaveForeign(_)
        ));
        assert_eq!(
            decide(&st("IDLE+DRAIN", Some(lg)), None, &ok),
            Action::Resume
        );
        // The check that drained it is UNKNOWN now: keep the drain.
        assert_eq!(
            decide(&st("IDLE+DRAIN", Some(lg)), None, &unknown),
            Action::None
        );
        // Never resume from DOWN.
        assert_eq!(decide(&st("DOWN+DRAIN", Some(lg)), None, &ok), Action::None);
        assert_eq!(
            decide(&st("IDLE+DRAIN", Some("bad DIMM")), None, &ok),
            Action::None
        );
        assert_eq!(decide(&st("MIXED", None), None, &ok), Action::None);
        assert_eq!(reason_id(lg), Some("node.munge.key_mode"));
    }
}

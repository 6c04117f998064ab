//! Why a node could not run the check step: the likeliest cause, judged from what Slurm already
//! knows, with the fix for that cause.
//!
//! Evidence, gathered by the caller ([`crate::check_sweep`] through [`crate::slurm`]):
//! - srun's per-node launch error (`Task launch for StepId=… failed on node X: why`). srun's launch
//!   request is a munge-signed RPC from this login node to that node's slurmd, so it is also the
//!   munge round trip against that node: `Zero Bytes were transmitted or received` means slurmd
//!   accepted the connection and closed it without an answer, which is what slurmd does with a
//!   credential it cannot verify (its own log says `auth_g_verify: … has authentication error`);
//!   `Communication connection failure` / `Connection refused` mean nothing listens (slurmd not
//!   running, or the host unreachable); `Socket timed out` means slurmd or the network hung;
//! - the node's Slurm state and Reason (`sinfo`, `scontrol show node`), e.g. `Not responding`;
//! - slurmctld's own log, where it is on this host (`SlurmctldLogFile`, slurm.conf(5)): its lines
//!   that name the node or its `NodeAddr` (a credential slurmctld could not verify is logged with
//!   the sender's address, `… authentication error …`).
//!
//! `Not responding` alone names no cause (a dead slurmd, a powered-off host and a foreign munge key
//! all look so to slurmctld's pings): then [`Cause::Unknown`] with both fixes.

use serde::Serialize;

/// The likeliest cause of an unreachable node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The node's slurmd rejects this cluster's munge credentials: its munge key differs (or its
    /// munged is not running).
    MungeKey,
    /// Nothing answers on the node's SlurmdPort: slurmd is not running or the host is unreachable.
    SlurmdDown,
    /// The connection was made but slurmd (or the network) did not answer in `MessageTimeout`.
    SlurmdHung,
    /// Slurm's words name no cause (only `Not responding`, or nothing at all).
    Unknown,
}

/// A cause and the words it was read from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The likeliest cause.
    pub cause: Cause,
    /// The evidence, quoted: `srun: Zero Bytes were transmitted or received`, or a slurmctld log line.
    pub evidence: String,
}

/// The evidence about one node.
#[derive(Debug, Clone, Default)]
pub struct Evidence<'a> {
    /// srun's launch error for this node, if the sweep launched there.
    pub launch_error: Option<&'a str>,
    /// Slurm's Reason for the node (`Not responding`, …), `none`/empty when unset.
    pub reason: &'a str,
    /// slurmctld log lines about this node (its name or address), oldest first.
    pub ctld_lines: &'a [String],
}

const AUTH: [&str; 4] = [
    "authentication error",
    "invalid authentication credential",
    "invalid credential",
    "zero bytes were transmitted or received",
];
// Not "Unable to contact slurm controller": that is the login node failing to reach slurmctld,
// which says nothing about any compute node.
const DOWN: [&str; 3] = [
    "communication connection failure",
    "connection refused",
    "no route to host",
];
const HUNG: [&str; 1] = ["socket timed out"];

fn says(text: &str, words: &[&str]) -> bool {
    let t = text.to_ascii_lowercase();
    words.iter().any(|w| t.contains(w))
}

/// The likeliest cause, from the freshest evidence: srun's launch error for this node (this very
/// sweep's RPC to it), then slurmctld's log lines about it, newest first; else none.
pub fn judge(e: &Evidence) -> Diagnosis {
    let cause_of = |text: &str| {
        if says(text, &AUTH) {
            Some(Cause::MungeKey)
        } else if says(text, &DOWN) {
            Some(Cause::SlurmdDown)
        } else if says(text, &HUNG) {
            Some(Cause::SlurmdHung)
        } else {
            None
        }
    };
    if let Some((err, cause)) = e.launch_error.and_then(|l| Some((l, cause_of(l)?))) {
        return Diagnosis {
            cause,
            evidence: format!("srun: {}", err.trim()),
        };
    }
    if let Some((l, cause)) = e
        .ctld_lines
        .iter()
        .rev()
        .find_map(|l| Some((l, cause_of(l)?)))
    {
        return Diagnosis {
            cause,
            evidence: format!("slurmctld's log: {}", l.trim()),
        };
    }
    let evidence = match (e.launch_error, e.reason) {
        (Some(err), _) => format!("srun: {}", err.trim()),
        (None, r) if !r.is_empty() && r != "none" => format!("Slurm's reason: {r}"),
        _ => "Slurm gave no reason".to_string(),
    };
    Diagnosis {
        cause: Cause::Unknown,
        evidence,
    }
}

/// What the cause means and its fix, for node `node`: (`why`, `fix`).
pub fn explain(cause: Cause, node: &str) -> (String, String) {
    let resume = format!("then scontrol update nodename={node} state=resume");
    match cause {
        Cause::MungeKey => (
            format!("munge key differs: {node}'s slurmd rejects credentials signed with the cluster's key (slurmd drops what it cannot verify), so no job or step can start there"),
            format!("copy the cluster's /etc/munge/munge.key to {node} (owner munge, mode 0400), restart munged there (systemctl restart munge), {resume}"),
        ),
        Cause::SlurmdDown => (
            format!("nothing answers on {node}'s SlurmdPort: slurmd is not running there or the host is unreachable"),
            format!("start slurmd on {node} (systemctl status slurmd; its log says why it stopped) or bring the host back, {resume}"),
        ),
        Cause::SlurmdHung => (
            format!("{node}'s slurmd accepted the connection but did not answer within MessageTimeout: slurmd hung or the network drops"),
            format!("look at slurmd on {node} (its log, systemctl status slurmd) and the path from the controller to it, restart slurmd, {resume}"),
        ),
        Cause::Unknown => (
            format!("Slurm cannot reach {node}'s slurmd and its words do not say why (a stopped slurmd, a host that is off and a foreign munge key look alike)"),
            format!("check that {node} is up and slurmd runs there (systemctl status slurmd), and that its /etc/munge/munge.key is the cluster's key (munge -n | ssh {node} unmunge must succeed); {resume}"),
        ),
    }
}

/// The lines of `log` (slurmctld's log text) about `node`: those naming it as a word (`lgn16`, not
/// `lgn160`) or its address `addr` (as `10.0.0.5:`, `10.0.0.5]` or a whole word), since slurmctld
/// last logged it healthy (`Node lgn16 now responding`, `returned to service`: an older fault is
/// not this one), the last `max`, oldest first.
pub fn log_lines_about(log: &str, node: &str, addr: Option<&str>, max: usize) -> Vec<String> {
    let word = |line: &str, w: &str| {
        line.match_indices(w).any(|(i, _)| {
            let before = line[..i].chars().next_back();
            let after = line[i + w.len()..].chars().next();
            let edge = |c: Option<char>| {
                !c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            };
            // An address may end a sentence ("from 10.0.0.5.") or carry a port ("10.0.0.5:6818").
            edge(before) && (edge(after) || after == Some('.') && w.contains('.'))
        })
    };
    let mut out: Vec<String> = log
        .lines()
        .filter(|l| word(l, node) || addr.is_some_and(|a| a != node && word(l, a)))
        .map(str::to_string)
        .collect();
    if let Some(i) = out
        .iter()
        .rposition(|l| l.contains("now responding") || l.contains("returned to service"))
    {
        out.drain(..=i);
    }
    let skip = out.len().saturating_sub(max);
    out.drain(..skip);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// slurmctld 22.05's log on this repository's multi-node test cluster: lgn16 (10.78.0.26) with
    /// a foreign munge key, lines as written (15:48); the last two lines are made up in the same
    /// format, for a node whose slurmd is stopped.
    const CTLD_LOG: &str = "\
[2026-12-01T15:48:20.421] sched: _slurm_rpc_allocate_resources JobId=10 NodeList=lgn[1-16] usec=318
[2026-12-01T15:48:20.605] error: slurm_receive_msgs: [[10.78.0.26]:6918] failed: Zero Bytes were transmitted or received
[2026-12-01T15:48:33.988] error: Nodes lgn16 not responding, setting DOWN
[2026-12-01T15:48:34.000] error: Nodes lgn160 not responding
[2026-12-01T15:48:35.000] error: Nodes lgn3 not responding
[2026-12-01T15:48:35.500] error: slurm_receive_msgs: [[10.78.0.13]:6918] failed: Communication connection failure
";

    fn diag(launch: Option<&str>, reason: &str, lines: &[String]) -> Diagnosis {
        judge(&Evidence {
            launch_error: launch,
            reason,
            ctld_lines: lines,
        })
    }

    #[test]
    fn slurmctlds_lines_are_picked_by_name_or_address_as_a_word() {
        let l = log_lines_about(CTLD_LOG, "lgn16", Some("10.78.0.26"), 10);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(l[0].contains("Zero Bytes"));
        assert!(l[1].contains("setting DOWN"));
        // lgn160 is not lgn16.
        assert!(log_lines_about(CTLD_LOG, "lgn160", None, 10).len() == 1);
        let by_addr = log_lines_about(
            "x error: slurm_receive_msg [10.78.0.26:6818]: Zero Bytes were transmitted or received\ny 10.78.0.2:1\n",
            "gpu-1",
            Some("10.78.0.26"),
            10,
        );
        assert_eq!(by_addr.len(), 1, "{by_addr:?}");
        assert_eq!(
            log_lines_about(CTLD_LOG, "lgn3", Some("10.78.0.13"), 1).len(),
            1
        );
        // A fault before the node last answered is not evidence about it now.
        let healed = format!("{CTLD_LOG}[2026-12-01T15:49:09.690] Node lgn16 now responding\n");
        assert!(log_lines_about(&healed, "lgn16", Some("10.78.0.26"), 10).is_empty());
    }

    #[test]
    fn a_foreign_munge_key_is_named_from_slurmctlds_log_or_srun() {
        let lines = log_lines_about(CTLD_LOG, "lgn16", Some("10.78.0.26"), 10);
        // Slurm says only "Not responding"; slurmctld's log has its own RPCs to lgn16 dropped.
        let d = diag(None, "Not responding", &lines);
        assert_eq!(d.cause, Cause::MungeKey);
        assert_eq!(
            d.evidence,
            "slurmctld's log: [2026-12-01T15:48:20.605] error: slurm_receive_msgs: [[10.78.0.26]:6918] failed: Zero Bytes were transmitted or received"
        );
        // Without the log (slurmctld elsewhere): srun's own launch RPC was dropped unanswered.
        let d = diag(Some("Zero Bytes were transmitted or received"), "none", &[]);
        assert_eq!(
            d,
            Diagnosis {
                cause: Cause::MungeKey,
                evidence: "srun: Zero Bytes were transmitted or received".into()
            }
        );
        let (why, fix) = explain(Cause::MungeKey, "lgn16");
        assert!(why.starts_with("munge key differs"), "{why}");
        assert!(fix.contains("restart munged"), "{fix}");
    }

    #[test]
    fn a_stopped_slurmd_a_hung_one_and_no_words_at_all_are_told_apart() {
        let d = diag(Some("Communication connection failure"), "none", &[]);
        assert_eq!(d.cause, Cause::SlurmdDown);
        let d = diag(Some("Socket timed out on send/recv operation"), "none", &[]);
        assert_eq!(d.cause, Cause::SlurmdHung);
        // Not responding, srun never launched there: slurmctld's ping error decides.
        let lines = log_lines_about(CTLD_LOG, "lgn3", Some("10.78.0.13"), 10);
        let d = diag(None, "Not responding", &lines);
        assert_eq!(d.cause, Cause::SlurmdDown);
        assert!(d.evidence.contains("Communication connection failure"));
        // Only "Not responding": no cause is invented.
        let d = diag(None, "Not responding", &[]);
        assert_eq!(
            d,
            Diagnosis {
                cause: Cause::Unknown,
                evidence: "Slurm's reason: Not responding".into()
            }
        );
        let (_, fix) = explain(Cause::Unknown, "lgn3");
        assert!(fix.contains("slurmd") && fix.contains("munge.key"), "{fix}");
    }
}

//! Slurm commands under deadlines, node states from `sinfo`, node lists.
//!
//! Every command runs through `launchguard_core::host::process` (the agent's runner too): its output
//! is drained while it runs (a full pipe never blocks it) and it is polled until its deadline; past
//! it, the process gets SIGTERM (srun then cancels its step), two seconds later SIGKILL. Commands
//! that create jobs carry a job name so the sweep can `scancel` whatever a killed client left behind.

use launchguard_core::host::process::{self, Limits};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

/// What a command did.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Exit code (`None`: killed by a signal, including our own after the deadline).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Whether the deadline passed and the command was killed.
    pub timed_out: bool,
    /// Whether a stderr line met the caller's stop rule ([`run_streaming_until`]) and the command
    /// was ended for it.
    pub stopped: bool,
    /// Wall time.
    pub elapsed: Duration,
}

/// Runs `cmd` until `deadline`. Spawn failures come back as `Err` with the program named.
pub fn run(cmd: &mut Command, timeout: Duration) -> Result<Output, String> {
    run_inner(cmd, timeout, None, None)
}

/// Like [`run`], but hands each stdout line to `on_line` as it arrives (the returned `stdout` is
/// empty): a step's output is aggregated while it runs and never held whole.
pub fn run_streaming(
    cmd: &mut Command,
    timeout: Duration,
    on_line: &mut dyn FnMut(&str),
) -> Result<Output, String> {
    run_inner(cmd, timeout, Some(on_line), None)
}

/// Like [`run_streaming`], and ends the command (SIGTERM, SIGKILL 2 s later; [`Output::stopped`])
/// as soon as a stderr line meets `stop`, e.g. [`step_aborted`].
pub fn run_streaming_until(
    cmd: &mut Command,
    timeout: Duration,
    on_line: &mut dyn FnMut(&str),
    stop: fn(&str) -> bool,
) -> Result<Output, String> {
    run_inner(cmd, timeout, Some(on_line), Some(stop))
}

/// srun gave up on its step (`srun: Job step aborted: Waiting up to 32 seconds for job step to
/// finish.`): a node refused the launch and srun killed the step's tasks. srun then waits for every
/// task to be reported ended, which for the refusing node happens only when slurmctld marks it
/// down (up to KillWait + 2 s, slurm.conf(5)): nothing more comes from the step, so the sweep
/// ends srun here rather than wait on slurmctld.
pub fn step_aborted(line: &str) -> bool {
    line.starts_with("srun: Job step aborted")
}

/// srun's pending reason when a node it asked for cannot take the job now, printed just before
/// `srun: job N queued and waiting for resources`: `srun: Required node not available (down,
/// drained or reserved)` (slurmctld marked a node not responding or down after the sweep's sinfo)
/// or `srun: Requested nodes are busy` (a node was allocated or started completing a job). With
/// `--immediate=N` srun would wait up to N s and then give up on every node; the sweep ends srun
/// at this line instead and reads the nodes' states again. A job queued for another reason (no
/// reason line at all under `SchedulerParameters=defer`, slurm.conf(5)) is left to srun.
pub fn node_unavailable(line: &str) -> bool {
    matches!(
        line.trim_end(),
        "srun: Required node not available (down, drained or reserved)"
            | "srun: Requested nodes are busy"
    )
}

/// [`step_aborted`] or [`node_unavailable`]: where the sweep ends its first check step's srun.
pub fn step_aborted_or_node_unavailable(line: &str) -> bool {
    step_aborted(line) || node_unavailable(line)
}

/// The [`node_unavailable`] reason in srun's stderr, without `srun: `.
pub fn unavailable_reason(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find(|l| node_unavailable(l))
        .map(|l| l.trim_end().trim_start_matches("srun: ").to_string())
}

fn run_inner(
    cmd: &mut Command,
    timeout: Duration,
    on_line: Option<&mut dyn FnMut(&str)>,
    stop: Option<fn(&str) -> bool>,
) -> Result<Output, String> {
    let limits = Limits {
        on_child: Some(crate::children::child),
        stop_on_stderr: stop,
        ..Limits::slurm_client(timeout)
    };
    let f = process::run(cmd, None, &limits, on_line).map_err(|e| e.to_string())?;
    Ok(Output {
        code: f.code(),
        stdout: String::from_utf8_lossy(&f.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&f.stderr).into_owned(),
        timed_out: f.timed_out,
        stopped: f.stopped,
        elapsed: f.elapsed,
    })
}

/// A node as `sinfo -N -h -o '%N|%T|%E'` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    /// Node name.
    pub node: String,
    /// Long state (`idle`, `idle*`, `down*`, `drained`, `mixed`, …).
    pub state: String,
    /// Slurm's reason (`none` when unset).
    pub reason: String,
}

impl NodeState {
    /// Whether a step can be launched there now (Slurm believes it responds and it takes jobs).
    /// `*` means not responding; `down`, `drain`, `fail`, `future`, `maint`, `unknown`, `power`
    /// states take no new work.
    pub fn usable(&self) -> bool {
        let s = self.state.to_ascii_lowercase();
        !s.ends_with('*')
            && ![
                "down", "drain", "fail", "future", "maint", "unknown", "power", "reboot", "inval",
                "alloc",
            ]
            .iter()
            .any(|w| s.contains(w))
    }

    /// Every CPU taken by jobs (`allocated`): a new step would wait for them.
    pub fn busy(&self) -> bool {
        let s = self.state.to_ascii_lowercase();
        s.starts_with("alloc") && !s.ends_with('*')
    }

    /// `state, reason` for messages.
    pub fn describe(&self) -> String {
        if self.reason.is_empty() || self.reason == "none" {
            format!("Slurm state {}", self.state)
        } else {
            format!("Slurm state {}, reason '{}'", self.state, self.reason)
        }
    }
}

impl NodeState {
    /// Still completing a job (`completing`, `idle+completing`, …): slurmd has not yet reported
    /// the job's end, so a new step there is refused (`Requested nodes are busy`) until it does.
    pub fn completing(&self) -> bool {
        self.state.to_ascii_lowercase().contains("completing")
    }
}

/// `field=value` of one `scontrol show node -o` line; `Reason=` runs to the end of the line (its
/// value has spaces). `None` when absent, empty or `(null)`.
pub fn node_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let v = if key == "Reason" {
        line.split_once(" Reason=")
            .map(|(_, r)| r.trim())
            .or_else(|| line.strip_prefix("Reason=").map(str::trim))
    } else {
        let k = format!("{key}=");
        line.split_whitespace()
            .find_map(|t| t.strip_prefix(k.as_str()))
    };
    v.filter(|v| !v.is_empty() && *v != "(null)")
}

/// NodeName -> NodeAddr from `scontrol show node -o` (slurm.conf(5): how slurmctld reaches the node).
pub fn parse_node_addrs(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| Some((node_field(l, "NodeName")?, node_field(l, "NodeAddr")?)))
        .map(|(n, a)| (n.to_string(), a.to_string()))
        .collect()
}

/// [`parse_node_addrs`] for `nodes`, asked of slurmctld within `timeout` (empty on any failure).
pub fn node_addrs(nodes: &[String], timeout: Duration) -> BTreeMap<String, String> {
    match run(
        Command::new("scontrol").args(["show", "node", "-o", &nodes.join(",")]),
        timeout,
    ) {
        Ok(o) if !o.timed_out => parse_node_addrs(&o.stdout),
        _ => BTreeMap::new(),
    }
}

/// `Key = value` from `scontrol show config` (`SlurmctldLogFile`, `SlurmctldHost[0]`).
pub fn config_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key)
            .then(|| v.trim())
            .filter(|v| !v.is_empty() && *v != "(null)")
    })
}

/// Most bytes read from the end of slurmctld's log.
pub const CTLD_LOG_TAIL: u64 = 4 << 20;

/// The last [`CTLD_LOG_TAIL`] bytes of slurmctld's log, when slurmctld runs on this host
/// (`SlurmctldHost` names it, slurm.conf(5)) and its `SlurmctldLogFile` is readable here; `None`
/// otherwise (slurmctld elsewhere, logging to syslog, no permission). Returns (path, text).
pub fn ctld_log_tail(timeout: Duration) -> Option<(String, String)> {
    let o = run(Command::new("scontrol").args(["show", "config"]), timeout).ok()?;
    if o.timed_out || o.code != Some(0) {
        return None;
    }
    let path = config_value(&o.stdout, "SlurmctldLogFile")?.to_string();
    let me = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let me = me.trim();
    let local = (0..8)
        .filter_map(|i| config_value(&o.stdout, &format!("SlurmctldHost[{i}]")))
        .any(|h| {
            let h = h.split('(').next().unwrap_or(h).trim();
            h == me || me.split('.').next() == Some(h)
        });
    if !local {
        return None;
    }
    use std::io::{Read, Seek, SeekFrom};
    // Regular files only, opened without blocking (the log path comes from slurm.conf).
    let mut f =
        launchguard_core::host::files::open_regular(std::path::Path::new(&path), true).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(CTLD_LOG_TAIL)))
        .ok()?;
    let mut buf = Vec::new();
    f.take(CTLD_LOG_TAIL).read_to_end(&mut buf).ok()?;
    Some((path, String::from_utf8_lossy(&buf).into_owned()))
}

/// Parses `sinfo -N -h -o '%N|%T|%E'` (one line per node and partition: duplicates collapsed).
pub fn parse_sinfo(text: &str) -> Vec<NodeState> {
    let mut out: Vec<NodeState> = Vec::new();
    for line in text.lines() {
        let mut it = line.splitn(3, '|');
        let (Some(n), Some(s)) = (it.next(), it.next()) else {
            continue;
        };
        let n = n.trim();
        if n.is_empty() || out.iter().any(|x| x.node == n) {
            continue;
        }
        out.push(NodeState {
            node: n.to_string(),
            state: s.trim().to_string(),
            reason: it.next().unwrap_or("").trim().to_string(),
        });
    }
    out
}

/// Node states for a partition or a node list (or every node).
pub fn sinfo(
    partition: Option<&str>,
    nodes: Option<&str>,
    timeout: Duration,
) -> Result<Vec<NodeState>, String> {
    let mut c = Command::new("sinfo");
    c.args(["-N", "-h", "-o", "%N|%T|%E"]);
    if let Some(p) = partition {
        c.args(["-p", p]);
    }
    if let Some(n) = nodes {
        c.args(["-n", n]);
    }
    let o = run(&mut c, timeout)?;
    if o.timed_out {
        return Err(format!(
            "sinfo did not answer within {} s",
            timeout.as_secs()
        ));
    }
    if o.code != Some(0) {
        return Err(format!("sinfo failed: {}", o.stderr.trim()));
    }
    Ok(parse_sinfo(&o.stdout))
}

/// The default partition (`sinfo`'s name ending in `*`), if there is one.
pub fn default_partition(timeout: Duration) -> Option<String> {
    let o = run(Command::new("sinfo").args(["-h", "-o", "%P"]), timeout).ok()?;
    if o.code != Some(0) || o.timed_out {
        return None;
    }
    o.stdout
        .lines()
        .find_map(|l| l.trim().strip_suffix('*').map(str::to_string))
}

/// Expands a node list (`lgn[1-3],gpu-07`) with launchguard's hostlist reader.
pub fn expand(list: &str) -> Result<Vec<String>, String> {
    let v = launchguard_core::hostlist::expand(list)
        .ok_or_else(|| format!("'{list}' is not a valid node list"))?;
    let mut seen = Vec::with_capacity(v.len());
    for n in v {
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    Ok(seen)
}

/// Per-node launch errors from srun's stderr: `… failed on node lgn3: Communication connection
/// failure` → (lgn3, "Communication connection failure").
pub fn launch_errors(stderr: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // Only srun's own lines: a task's labelled output ("0: …") may contain " on node X:" too.
    for line in stderr.lines().filter(|l| l.starts_with("srun: ")) {
        if let Some(i) = line.find(" on node ") {
            let rest = &line[i + " on node ".len()..];
            if let Some((node, why)) = rest.split_once(':') {
                out.push((node.trim().to_string(), why.trim().to_string()));
            }
        }
    }
    out
}

/// The first `srun: error:` line's text (what Slurm said), else the last stderr line.
pub fn srun_error(stderr: &str) -> Option<String> {
    let errs: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("srun: error: ").map(str::trim))
        .filter(|e| !e.is_empty())
        .collect();
    if !errs.is_empty() {
        // The most specific line names the cause ("… failed on node X: why"), else the first one.
        let best = errs
            .iter()
            .find(|e| e.contains(" on node "))
            .unwrap_or(&errs[0]);
        return Some(best.to_string());
    }
    stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// How a host name a program printed maps to Slurm's NodeName, from `scontrol show node -o`
/// (slurm.conf(5): `NodeHostname` is what the node's `hostname` says, `NodeAddr` how it is reached;
/// both default to NodeName, and differ on clusters that name nodes by rack position). nccl-tests
/// prints `gethostname()` cut at the first dot (NCCL's getHostName), so a fully qualified
/// NodeHostname is also known by its first label.
///
/// Keys, strongest first: NodeHostname, its first label, NodeAddr, NodeName itself. A key two nodes
/// share at the same strength (two slurmds on one host) maps to neither: the name stays as printed.
pub fn parse_node_names(text: &str) -> BTreeMap<String, String> {
    // key -> (strength, NodeName); None when ambiguous at that strength.
    let mut best: BTreeMap<String, (u8, Option<String>)> = BTreeMap::new();
    for line in text.lines() {
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|t| t.strip_prefix(k))
                .filter(|v| !v.is_empty() && *v != "(null)")
        };
        let Some(name) = field("NodeName=") else {
            continue;
        };
        let mut keys: Vec<(u8, &str)> = Vec::new();
        if let Some(h) = field("NodeHostName=") {
            keys.push((0, h));
            if let Some((short, _)) = h.split_once('.') {
                keys.push((1, short));
            }
        }
        if let Some(a) = field("NodeAddr=") {
            keys.push((2, a));
        }
        keys.push((3, name));
        for (strength, k) in keys {
            match best.get_mut(k) {
                None => {
                    best.insert(k.to_string(), (strength, Some(name.to_string())));
                }
                Some(e) if strength < e.0 => *e = (strength, Some(name.to_string())),
                Some(e) if strength == e.0 && e.1.as_deref() != Some(name) => e.1 = None,
                Some(_) => {}
            }
        }
    }
    best.into_iter()
        .filter_map(|(k, (_, n))| n.map(|n| (k, n)))
        .collect()
}

/// [`parse_node_names`] for `nodes`, asked of slurmctld within `timeout`.
pub fn node_names(nodes: &[String], timeout: Duration) -> Result<BTreeMap<String, String>, String> {
    let o = run(
        Command::new("scontrol").args(["show", "node", "-o", &nodes.join(",")]),
        timeout,
    )?;
    if o.timed_out || o.code != Some(0) {
        return Err(format!(
            "scontrol show node failed: {}",
            if o.timed_out {
                "no answer in time".to_string()
            } else {
                o.stderr.trim().to_string()
            }
        ));
    }
    Ok(parse_node_names(&o.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinfo_states_decide_usability() {
        let s = parse_sinfo("lgn1|idle|none\nlgn2|down*|Not responding\nlgn3|drained|maintenance\nlgn4|idle*|none\nlgn5|mixed|none\nlgn1|idle|none\nlgn6|allocated|none\n");
        let u: Vec<(&str, bool)> = s.iter().map(|n| (n.node.as_str(), n.usable())).collect();
        assert_eq!(
            u,
            vec![
                ("lgn1", true),
                ("lgn2", false),
                ("lgn3", false),
                ("lgn4", false),
                ("lgn5", true),
                ("lgn6", false)
            ]
        );
        assert!(s[5].busy() && !s[4].busy() && !s[1].busy());
        assert_eq!(
            s[1].describe(),
            "Slurm state down*, reason 'Not responding'"
        );
    }

    #[test]
    fn launch_errors_name_the_node() {
        let e = "srun: error: Task launch for StepId=4.0 failed on node lgn3: Communication connection failure\nsrun: error: Application launch failed: Communication connection failure\n";
        assert_eq!(
            launch_errors(e),
            vec![(
                "lgn3".to_string(),
                "Communication connection failure".to_string()
            )]
        );
        assert_eq!(
            srun_error(e).unwrap(),
            "Task launch for StepId=4.0 failed on node lgn3: Communication connection failure"
        );
    }

    #[test]
    fn deadlines_kill_a_hanging_command() {
        let o = run(Command::new("sleep").arg("30"), Duration::from_millis(200)).unwrap();
        assert!(o.timed_out);
        assert!(o.elapsed < Duration::from_secs(5), "{:?}", o.elapsed);
    }

    #[test]
    fn streamed_lines_arrive_before_the_command_ends_and_survive_its_deadline() {
        let mut lines = Vec::new();
        let o = run_streaming(
            Command::new("sh").args(["-c", "echo one; printf 'two\\r\\n'; exec sleep 30"]),
            Duration::from_millis(500),
            &mut |l| lines.push(l.to_string()),
        )
        .unwrap();
        assert!(o.timed_out);
        assert_eq!(lines, vec!["one", "two"]);
        assert!(o.stdout.is_empty());
    }

    #[test]
    fn host_names_map_to_node_names_through_scontrol() {
        let text = "NodeName=gpu-a01 Arch=x86_64 CoresPerSocket=2 NodeAddr=10.1.0.11 NodeHostName=r12u01.dc.example Version=22.05.8 OS=Linux 6.1.0 #1 SMP\n\
NodeName=gpu-a02 NodeAddr=10.1.0.12 NodeHostName=r12u02 Reason=slow [root@2026-12-01T05:00:00]\n\
NodeName=x1 NodeAddr=shared NodeHostName=twin\nNodeName=x2 NodeAddr=shared NodeHostName=twin\n\
NodeName=swap-a NodeHostName=swap-b\nNodeName=swap-b NodeHostName=swap-a\n";
        let m = parse_node_names(text);
        let get = |k: &str| m.get(k).map(String::as_str);
        assert_eq!(get("r12u01.dc.example"), Some("gpu-a01"));
        // nccl-tests prints the name cut at its first dot.
        assert_eq!(get("r12u01"), Some("gpu-a01"));
        assert_eq!(get("r12u02"), Some("gpu-a02"));
        assert_eq!(get("10.1.0.12"), Some("gpu-a02"));
        assert_eq!(get("gpu-a02"), Some("gpu-a02"));
        // Two nodes on one host: neither is guessed.
        assert_eq!(get("twin"), None);
        assert_eq!(get("shared"), None);
        // A host name beats a NodeName that happens to spell it.
        assert_eq!(get("swap-a"), Some("swap-b"));
        assert_eq!(get("swap-b"), Some("swap-a"));
        assert!(parse_node_names("garbage\n").is_empty());
    }

    #[test]
    fn node_fields_addresses_and_config_values_are_read() {
        let line = "NodeName=lgn16 Arch=x86_64 CoresPerSocket=2 NodeAddr=10.78.0.26 NodeHostName=lgn16 State=DOWN*+COMPLETING ThreadsPerCore=1 CurrentWatts=0 AveWatts=0 Reason=Not responding [slurm@2026-12-01T15:20:12]";
        assert_eq!(node_field(line, "State"), Some("DOWN*+COMPLETING"));
        assert_eq!(
            node_field(line, "Reason"),
            Some("Not responding [slurm@2026-12-01T15:20:12]")
        );
        assert_eq!(node_field("NodeName=x Reason=(null)", "Reason"), None);
        let m = parse_node_addrs(&format!("{line}\nNodeName=lgn1 NodeAddr=10.78.0.11\n"));
        assert_eq!(m.get("lgn16").map(String::as_str), Some("10.78.0.26"));
        assert_eq!(m.len(), 2);
        let cfg = "SlurmctldHost[0]        = vm1(10.78.0.1)\nSlurmctldLogFile        = /run/lg-mn/slurmctld.log\nSlurmdLogFile           = (null)\n";
        assert_eq!(
            config_value(cfg, "SlurmctldLogFile"),
            Some("/run/lg-mn/slurmctld.log")
        );
        assert_eq!(
            config_value(cfg, "SlurmctldHost[0]"),
            Some("vm1(10.78.0.1)")
        );
        assert_eq!(config_value(cfg, "SlurmdLogFile"), None);
        let c = parse_sinfo("a|completing|none\nb|idle+completing|none\nc|idle|none\n");
        assert_eq!(
            c.iter().map(NodeState::completing).collect::<Vec<_>>(),
            vec![true, true, false]
        );
        assert!(step_aborted(
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
        ));
        assert!(!step_aborted("0: srun: Job step aborted"));
        // srun 22.05's lines when a requested node went unusable after the sweep's sinfo.
        let pend = "srun: Required node not available (down, drained or reserved)\nsrun: job 8 queued and waiting for resources\n";
        assert!(pend.lines().any(step_aborted_or_node_unavailable));
        assert_eq!(
            unavailable_reason(pend).as_deref(),
            Some("Required node not available (down, drained or reserved)")
        );
        assert!(node_unavailable("srun: Requested nodes are busy"));
        // A refusal (srun gave up) and a task's own output are not the pending reason; neither
        // is a job queued without one (SchedulerParameters=defer).
        assert!(!node_unavailable(
            "srun: error: Unable to allocate resources: Requested nodes are busy"
        ));
        assert!(!node_unavailable("0: srun: Requested nodes are busy"));
        assert_eq!(
            unavailable_reason("srun: job 9 queued and waiting for resources\n"),
            None
        );
    }

    #[test]
    fn node_lists_expand_without_duplicates() {
        assert_eq!(
            expand("lgn[1-3],lgn2").unwrap(),
            vec!["lgn1", "lgn2", "lgn3"]
        );
        assert!(expand("lgn[1-").is_err());
    }
}

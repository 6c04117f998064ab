//! `launchguard status`: asks the running agent (over its socket) for the last check run, recent
//! launch reports and the counters.

use crate::check_cmd::{load_config, print_table};
use crate::protocol::StatusReply;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

// `launchguard status`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the agent's answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// How many recent launch reports to show.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// The agent's socket (default: the config's `socket`).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Make the agent run its checks now (instead of showing its last run).
    #[arg(long)]
    pub refresh: bool,
    /// Config file (default /etc/launchguard/launchguard.toml; missing there = defaults).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// Longest answer read from the agent's socket, in bytes (64 MiB: a status answer with
/// `reports.history`'s largest 10,000 reports per ring, each clipped by the agent, is far shorter).
pub const MAX_ANSWER: usize = 64 << 20;

/// Time allowed for the whole exchange (connect, request, complete answer).
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(15);

/// Sends one request line and reads one answer line, within [`ANSWER_DEADLINE`] for the whole
/// exchange and at most [`MAX_ANSWER`] bytes (whatever listens at `socket` may not be the agent).
pub fn ask(socket: &std::path::Path, request: &str) -> Result<String, String> {
    ask_within(socket, request, ANSWER_DEADLINE, MAX_ANSWER)
}

/// [`ask`] with its limits given: `deadline` bounds the whole answer, not each read (a peer that
/// drips a byte at a time cannot keep it waiting), and an answer longer than `max` bytes is refused
/// once `max` bytes were read. Errors name the socket and the limit that was hit.
pub fn ask_within(
    socket: &std::path::Path,
    request: &str,
    deadline: Duration,
    max: usize,
) -> Result<String, String> {
    let start = std::time::Instant::now();
    let left = || {
        deadline
            .checked_sub(start.elapsed())
            .filter(|d| !d.is_zero())
    };
    let shown = launchguard_core::text::printable(&socket.display().to_string(), 200);
    let late = || {
        format!(
            "no complete answer from {shown} within {} s; is it the agent's socket (`launchguard agent`)?",
            deadline.as_secs_f64()
        )
    };
    let mut s = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot reach the agent at {shown}: {e}; {}",
            unreachable_hint(
                e.kind(),
                crate::logging::systemd_booted(),
                nix::unistd::geteuid().is_root()
            )
        )
    })?;
    let _ = s.set_write_timeout(Some(left().ok_or_else(late)?.min(Duration::from_secs(5))));
    s.write_all(format!("{request}\n").as_bytes())
        .map_err(|e| format!("cannot send the request to {shown}: {e}"))?;
    let mut answer: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let Some(t) = left() else {
            return Err(late());
        };
        let _ = s.set_read_timeout(Some(t));
        let n = match s.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(late())
            }
            Err(e) => return Err(format!("no answer from the agent at {shown}: {e}")),
        };
        if n == 0 {
            if answer.is_empty() {
                return Err("the agent closed the connection without answering".into());
            }
            break;
        }
        let got = &chunk[..n];
        if let Some(i) = got.iter().position(|&b| b == b'\n') {
            answer.extend_from_slice(&got[..=i]);
            break;
        }
        answer.extend_from_slice(got);
        if answer.len() > max {
            return Err(format!(
                "the answer from {shown} is longer than {} without a line end; is it the agent's socket (`launchguard agent`)?",
                launchguard_core::host::files::size_text(max as u64)
            ));
        }
    }
    if answer.len() > max {
        return Err(format!(
            "the answer from {shown} is longer than {}; is it the agent's socket (`launchguard agent`)?",
            launchguard_core::host::files::size_text(max as u64)
        ));
    }
    String::from_utf8(answer).map_err(|_| {
        format!(
            "the answer from {shown} is not text; is it the agent's socket (`launchguard agent`)?"
        )
    })
}

/// What to do when the agent's socket cannot be reached: the advice depends on whether systemd runs
/// this machine ([`crate::logging::systemd_booted`]) and on who asks.
fn unreachable_hint(kind: std::io::ErrorKind, systemd: bool, root: bool) -> String {
    if kind == std::io::ErrorKind::PermissionDenied && !root {
        return "the socket's mode shuts this user out; run `launchguard status` as root".into();
    }
    let start = if systemd {
        "start it with `systemctl enable --now launchguard-agent` (and see `journalctl -u launchguard-agent`)"
    } else {
        "this machine has no systemd: start it with `launchguard agent &` as root (or `setsid launchguard agent </dev/null >>/var/log/launchguard-agent.log 2>&1 &`)"
    };
    if root {
        format!("the agent is not running; {start}")
    } else {
        format!("the agent is not running, or you are not root; {start}")
    }
}

/// Runs `status`: exit code = the agent's last check status (0–3), 3 when the agent cannot be asked.
pub fn run(a: &Args) -> ExitCode {
    let cfg = match load_config(a.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let socket = a.socket.clone().unwrap_or(cfg.socket);
    if a.refresh {
        if let Err(e) = ask(&socket, "{\"v\":1,\"kind\":\"check\"}") {
            eprintln!("launchguard: status: {e}");
            return ExitCode::from(3);
        }
    }
    let line = match ask(
        &socket,
        &format!("{{\"v\":1,\"kind\":\"status\",\"limit\":{}}}", a.limit),
    ) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("launchguard: status: {e}");
            return ExitCode::from(3);
        }
    };
    let reply: StatusReply = match serde_json::from_str(&line) {
        Ok(r) => r,
        Err(_) => {
            if line.contains("for root") {
                eprintln!("launchguard: status: the agent answers root only (reports name other users' jobs); run it as root, e.g. sudo launchguard status");
            } else {
                eprintln!(
                    "launchguard: status: the agent answered: {}",
                    launchguard_core::text::printable(line.trim(), 200)
                );
            }
            return ExitCode::from(3);
        }
    };
    let shown = reply
        .last_check
        .as_ref()
        .map(|r| shown_run(r, &reply.reports));
    let code = shown.as_ref().map(|(r, _)| r.exit_code).unwrap_or(3);
    if a.json {
        println!("{}", line.trim_end());
        return ExitCode::from(code);
    }
    println!("agent {} up {}", reply.version, duration(reply.uptime_secs));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match &shown {
        Some((r, notes)) => {
            println!(
                "last check run: {}, {:.1} ms",
                when(r.timestamp, now),
                r.duration_ms
            );
            print_table(r, false);
            for n in notes {
                println!("{n}");
            }
        }
        None => println!("no check run yet"),
    }
    let mut totals: Vec<_> = reply.reports_total.iter().collect();
    totals.sort();
    let mut drops: Vec<_> = reply
        .dropped_total
        .iter()
        .filter(|(_, n)| **n > 0)
        .collect();
    drops.sort();
    let mut claims: Vec<_> = reply.claims_total.iter().filter(|(_, n)| **n > 0).collect();
    claims.sort();
    println!(
        "launch reports: {}; srun claims (sent by users' srun, unverified): {}; dropped: {}",
        totals
            .iter()
            .map(|(a, n)| format!("{a} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        if claims.is_empty() {
            "none".into()
        } else {
            claims
                .iter()
                .map(|(a, n)| format!("{a} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        if drops.is_empty() {
            "none".into()
        } else {
            drops
                .iter()
                .map(|(a, n)| format!("{a} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    for s in &reply.reports {
        println!("{}", report_row(s, now));
    }
    ExitCode::from(code)
}

/// The check run as `status` shows it: a verdict that launch reports received after the run disprove
/// ([`crate::reports::disprovable`], [`crate::reports::disproof`]) is shown as OK, the run's status
/// and exit code are the worst of what is left, and one note line per such verdict says why (which
/// launch, when). `reports` are the status answer's recent reports; the agent's JSON is unchanged.
pub fn shown_run(
    run: &crate::registry::NodeReport,
    reports: &[crate::protocol::Stored],
) -> (crate::registry::NodeReport, Vec<String>) {
    let mut shown = run.clone();
    let mut notes = vec![];
    let Some(proof) = crate::reports::disproof(reports, run.timestamp) else {
        return (shown, notes);
    };
    for c in shown
        .checks
        .iter_mut()
        .filter(|c| crate::reports::disprovable(c))
    {
        let job = match (proof.report.job, proof.report.step) {
            (Some(j), Some(s)) => format!("job {j}.{s}"),
            (Some(j), None) => format!("job {j}"),
            _ => "a step".into(),
        };
        notes.push(format!(
            "note: {}: not shown: the run above found spank_launchguard.so not listed, but slurmstepd reported {job} at {} through the plugin, so launches here are checked; `launchguard status --refresh` re-checks now",
            c.id,
            utc(proof.received)
        ));
        c.status = launchguard_core::node::Status::Ok;
        c.message.clear();
    }
    shown.status = shown.worst();
    shown.exit_code = shown.status.exit_code();
    (shown, notes)
}

/// A report's findings for its status row: each ID once, in order, with the rules named in its
/// messages (`(rule efa.nccl_net_ib)`, as the NCCL findings say), e.g.
/// `launch.nccl_env (efa.nccl_net_ib, efa.fi_provider), launch.devices`. Text is already printable.
pub fn finding_names(findings: &[launchguard_core::protocol::ReportFinding]) -> String {
    let mut ids: Vec<(&str, Vec<&str>)> = vec![];
    for f in findings {
        let rule = f
            .message
            .split_once("(rule ")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(r, _)| r);
        let i = match ids.iter().position(|(id, _)| *id == f.id) {
            Some(i) => i,
            None => {
                ids.push((&f.id, vec![]));
                ids.len() - 1
            }
        };
        if let Some(r) = rule {
            if !ids[i].1.contains(&r) {
                ids[i].1.push(r);
            }
        }
    }
    ids.iter()
        .map(|(id, rules)| {
            if rules.is_empty() {
                id.to_string()
            } else {
                format!("{id} ({})", rules.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A duration as people read it: `42 s`, `5 min 3 s`, `2 h 5 min`, `3 d 4 h`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else if m > 0 {
        format!("{m} min {s} s")
    } else {
        format!("{s} s")
    }
}

/// A report's arrival time: UTC date and time, and how long ago (`2026-12-01T02:41:07Z (3 min 2 s ago)`).
pub fn when(epoch: u64, now: u64) -> String {
    let ago = if now >= epoch {
        format!("{} ago", duration(now - epoch))
    } else {
        "in the future: clock changed".into()
    };
    format!("{} ({ago})", utc(epoch))
}

/// Seconds since the epoch as RFC 3339 UTC, to the second (`2026-12-01T02:41:07Z`).
pub fn utc(epoch: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(epoch))
        .to_string()
}

/// One report as a status row. Text from the report goes through the one sanitiser (the agent
/// already cleaned it; an older agent may not have); a report a non-root client sent says so with
/// the sender's uid from `SO_PEERCRED` (`from uid 1001`), so it cannot pass for slurmstepd's.
pub fn report_row(s: &crate::protocol::Stored, now: u64) -> String {
    use launchguard_core::text::printable;
    let r = &s.report;
    let job = match (r.job, r.step) {
        (Some(j), Some(st)) => format!("{j}.{st}"),
        (Some(j), None) => j.to_string(),
        _ => "-".into(),
    };
    let findings: Vec<launchguard_core::protocol::ReportFinding> = r
        .findings
        .iter()
        .map(|f| launchguard_core::protocol::ReportFinding {
            id: printable(&f.id, 128),
            severity: String::new(),
            message: printable(&f.message, 512),
        })
        .collect();
    let from = if s.peer_uid == 0 {
        String::new()
    } else {
        format!("  (from uid {})", s.peer_uid)
    };
    format!(
        "{}  job {:<12} uid {:<6} {:<5} {:<9} {}{from}",
        when(s.received, now),
        job,
        r.uid,
        printable(&r.phase, 16),
        printable(&r.action, 16),
        finding_names(&findings)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use launchguard_core::protocol::{Report, ReportFinding};
    use std::io::ErrorKind;

    /// A listener at a fresh socket path whose one connection is served by `serve` on a thread.
    fn fake_agent(
        name: &str,
        serve: impl FnOnce(UnixStream) + Send + 'static,
    ) -> (PathBuf, std::thread::JoinHandle<()>) {
        let dir = std::env::temp_dir().join(format!("lg-status-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.sock");
        let l = std::os::unix::net::UnixListener::bind(&p).unwrap();
        let t = std::thread::spawn(move || {
            let (c, _) = l.accept().unwrap();
            serve(c);
        });
        (p, t)
    }

    #[test]
    fn an_endless_answer_is_cut_at_the_cap() {
        // Whatever listens at --socket sends bytes and never a line end: the answer is refused once
        // MAX_ANSWER bytes were read, instead of growing until memory runs out.
        let (p, t) = fake_agent("endless", |mut c| {
            let block = vec![b'x'; 1 << 16];
            while c.write_all(&block).is_ok() {}
        });
        let e = ask(&p, "{}").unwrap_err();
        assert!(e.contains("longer than 64 MiB without a line end"), "{e}");
        t.join().unwrap();
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn a_dripping_answer_ends_at_the_deadline() {
        // One byte at a time, each well within a per-read timeout: the deadline is for the whole
        // answer. The sleep paces the peer; the test waits on nothing but `ask`'s own deadline.
        let (p, t) = fake_agent("drip", |mut c| {
            while c.write_all(b"x").is_ok() {
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let started = std::time::Instant::now();
        let e = ask_within(&p, "{}", Duration::from_millis(300), MAX_ANSWER).unwrap_err();
        assert!(e.starts_with("no complete answer from "), "{e}");
        assert!(e.contains("within 0.3 s"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        t.join().unwrap();
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn one_answer_line_is_read_whole() {
        let (p, t) = fake_agent("line", |mut c| {
            let mut req = [0u8; 3];
            c.read_exact(&mut req).unwrap();
            assert_eq!(&req, b"{}\n");
            c.write_all(b"{\"a\":1}\nmore").unwrap();
        });
        assert_eq!(ask(&p, "{}").unwrap(), "{\"a\":1}\n");
        t.join().unwrap();
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn times_read_as_dates_and_ages() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_092_867), "2026-12-01T02:41:07Z");
        assert_eq!(duration(42), "42 s");
        assert_eq!(duration(303), "5 min 3 s");
        assert_eq!(duration(7_500), "2 h 5 min");
        assert_eq!(duration(3 * 86_400 + 4 * 3600), "3 d 4 h");
        assert_eq!(
            when(1_796_092_867, 1_796_093_049),
            "2026-12-01T02:41:07Z (3 min 2 s ago)"
        );
    }

    #[test]
    fn hint_follows_the_machine_and_the_user() {
        let no_systemd = unreachable_hint(ErrorKind::NotFound, false, true);
        assert!(no_systemd.contains("no systemd"), "{no_systemd}");
        assert!(no_systemd.contains("launchguard agent"), "{no_systemd}");
        assert!(!no_systemd.contains("systemctl"), "{no_systemd}");
        let systemd = unreachable_hint(ErrorKind::ConnectionRefused, true, true);
        assert!(
            systemd.contains("systemctl enable --now launchguard-agent"),
            "{systemd}"
        );
        assert!(!systemd.contains("not root"), "{systemd}");
        let user = unreachable_hint(ErrorKind::PermissionDenied, true, false);
        assert!(user.contains("as root"), "{user}");
        let user_down = unreachable_hint(ErrorKind::NotFound, true, false);
        assert!(user_down.contains("or you are not root"), "{user_down}");
    }

    #[test]
    fn rows_neutralise_client_text_and_name_a_non_root_sender() {
        let s = crate::protocol::Stored {
            seq: 0,
            received: 5,
            peer_uid: 1001,
            peer_pid: None,
            report: Report {
                v: 1,
                phase: "srun\u{202E}".into(),
                job: None,
                step: None,
                uid: 1001,
                node: "n".into(),
                mode: "warn".into(),
                action: "warned\n".into(),
                findings: vec![ReportFinding {
                    id: "launch.x\u{200B}".into(),
                    severity: "error".into(),
                    message: "m".into(),
                }],
            },
        };
        let row = report_row(&s, 5);
        assert!(row.contains("launch.x<U+200B>"), "{row}");
        assert!(row.ends_with("(from uid 1001)"), "{row}");
        assert!(!row.contains('\n') && !row.contains('\u{202E}'), "{row}");
    }

    fn finding(id: &str, message: &str) -> ReportFinding {
        ReportFinding {
            id: id.into(),
            severity: "warning".into(),
            message: message.into(),
        }
    }

    fn stored(received: u64, peer_uid: u32, phase: &str) -> crate::protocol::Stored {
        crate::protocol::Stored {
            seq: received,
            received,
            peer_uid,
            peer_pid: None,
            report: Report {
                v: 1,
                phase: phase.into(),
                job: Some(15),
                step: Some(0),
                uid: 1001,
                node: "vm".into(),
                mode: "warn".into(),
                action: "allowed".into(),
                findings: vec![],
            },
        }
    }

    /// A run whose only finding is `node.plugstack.order` "not listed", finished at epoch 1000.
    fn not_listed_run() -> crate::registry::NodeReport {
        use launchguard_core::node::Status;
        use launchguard_core::report::CheckLine;
        let line = |id: &str, status: Status, message: &str| CheckLine {
            id: id.into(),
            status,
            message: message.into(),
            duration_ms: 0.1,
            user_controlled: None,
        };
        crate::registry::NodeReport {
            schema: 1,
            node: "vm".into(),
            launchguard_version: "0.1.0".into(),
            status: Status::Warning,
            exit_code: 1,
            duration_ms: 9.0,
            timestamp: 1000,
            checks: vec![
                line("node.munge.key_mode", Status::Ok, ""),
                line(
                    "node.plugstack.order",
                    Status::Warning,
                    "launchguard: node.plugstack.order: spank_launchguard.so is not listed in '/etc/slurm/plugstack.conf'; launches on this node are not checked; ln -s …",
                ),
            ],
            facts: Default::default(),
        }
    }

    #[test]
    fn launches_after_the_run_hide_its_not_listed_verdict() {
        let run = not_listed_run();
        // slurmstepd's step report after the run: the verdict is disproved, shown as OK, exit 0.
        let (shown, notes) = shown_run(&run, &[stored(1005, 0, "step")]);
        assert_eq!(shown.exit_code, 0, "{shown:?}");
        assert!(
            shown.checks.iter().all(|c| c.message.is_empty()),
            "{shown:?}"
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("slurmstepd reported job 15.0 at 1970-01-01T00:16:45Z"),
            "{notes:?}"
        );
        // Not disproved: a report before the run (or in its second), an srun report (a user's
        // srun proves nothing about this node's plugstack), a non-root sender.
        for reports in [
            vec![stored(999, 0, "step")],
            vec![stored(1000, 0, "task")],
            vec![stored(1005, 0, "srun")],
            vec![stored(1005, 1001, "step")],
            vec![],
        ] {
            let (shown, notes) = shown_run(&run, &reports);
            assert_eq!(shown.exit_code, 1, "{reports:?}");
            assert!(notes.is_empty(), "{reports:?}");
        }
        // Other plugstack.order findings (listed before Pyxis) are not disproved by launches.
        let mut before_pyxis = run.clone();
        before_pyxis.checks[1].message =
            "launchguard: node.plugstack.order: launchguard (a:1) is listed before Pyxis (b:1); …"
                .into();
        let (shown, notes) = shown_run(&before_pyxis, &[stored(1005, 0, "step")]);
        assert_eq!((shown.exit_code, notes.len()), (1, 0));
    }

    #[test]
    fn rows_name_each_finding_once_with_its_rules() {
        let f = [
            finding(
                "launch.nccl_env",
                "NCCL_NET=IB is set on this EFA node (rule efa.nccl_net_ib); …",
            ),
            finding(
                "launch.nccl_env",
                "FI_PROVIDER=tcp … (rule efa.fi_provider); …",
            ),
            finding(
                "launch.nccl_env",
                "NCCL_NET=IB again (rule efa.nccl_net_ib); …",
            ),
            finding("launch.devices", "1 GPU but 0 usable"),
            finding("launch.devices", "/dev/gdrdrv missing"),
        ];
        assert_eq!(
            finding_names(&f),
            "launch.nccl_env (efa.nccl_net_ib, efa.fi_provider), launch.devices"
        );
        assert_eq!(finding_names(&[]), "");
    }
}

//! `launchguard status`: asks the running agent (over its socket) for the last check run, recent
//! launch reports and the counters.

use crate::check_cmd::{load_config, print_table};
use crate::protocol::StatusReply;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `launchguard status`.
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

/// Sends one request line and reads one answer line (5 s deadline each way).
pub fn ask(socket: &std::path::Path, request: &str) -> Result<String, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot reach the agent at {}: {e}; {}",
            socket.display(),
            unreachable_hint(
                e.kind(),
                crate::logging::systemd_booted(),
                nix::unistd::geteuid().is_root()
            )
        )
    })?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
    s.write_all(format!("{request}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .map_err(|e| format!("no answer from the agent: {e}"))?;
    if line.is_empty() {
        return Err("the agent closed the connection without answering".into());
    }
    Ok(line)
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
                eprintln!("launchguard: status: the agent answered: {}", line.trim());
            }
            return ExitCode::from(3);
        }
    };
    let code = reply.last_check.as_ref().map(|r| r.exit_code).unwrap_or(3);
    if a.json {
        println!("{}", line.trim_end());
        return ExitCode::from(code);
    }
    println!("agent {} up {}", reply.version, duration(reply.uptime_secs));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match &reply.last_check {
        Some(r) => print_table(r, false),
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
    println!(
        "launch reports: {}; dropped: {}",
        totals
            .iter()
            .map(|(a, n)| format!("{a} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
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
    let ids: Vec<String> = r.findings.iter().map(|f| printable(&f.id, 128)).collect();
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
        ids.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use launchguard_core::protocol::{Report, ReportFinding};
    use std::io::ErrorKind;

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
}

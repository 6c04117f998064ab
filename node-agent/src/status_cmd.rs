//! `launchguard status`: asks the running agent (over its socket) for the last check run, recent
//! launch reports and the counters.

use crate::check_cmd::{load_config, print_table};
use crate::server::StatusReply;
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
            "cannot reach the agent at {}: {e} (is launchguard-agent.service running? status needs root)",
            socket.display()
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
    println!("agent {} up {} s", reply.version, reply.uptime_secs);
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
        println!("{}", report_row(s));
    }
    ExitCode::from(code)
}

/// One report as a status row. Text from the report goes through the one sanitiser (the agent
/// already cleaned it; an older agent may not have); a report a non-root client sent says so with
/// the sender's uid from `SO_PEERCRED` (`from uid 1001`), so it cannot pass for slurmstepd's.
pub fn report_row(s: &crate::server::Stored) -> String {
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
        "{:>10}  job {:<12} uid {:<6} {:<5} {:<9} {}{from}",
        s.received,
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

    #[test]
    fn rows_neutralise_client_text_and_name_a_non_root_sender() {
        let s = crate::server::Stored {
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
        let row = report_row(&s);
        assert!(row.contains("launch.x<U+200B>"), "{row}");
        assert!(row.ends_with("(from uid 1001)"), "{row}");
        assert!(!row.contains('\n') && !row.contains('\u{202E}'), "{row}");
    }
}

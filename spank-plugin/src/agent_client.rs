//! Reports each launch's verdict to `launchguard agent` over its Unix socket (protocol:
//! `launchguard_core::protocol`). Fail-open by construction: one non-blocking `connect` (a full
//! backlog, a missing socket or a dead agent fail at once with EAGAIN/ENOENT/ECONNREFUSED), one
//! non-blocking `send` with `MSG_NOSIGNAL` (a wedged agent that stopped reading fills its buffer and
//! the send fails at once; no SIGPIPE), no reply awaited, no retry, no thread. Costs tens of
//! microseconds; nothing is printed to the user when the agent is away.

use launchguard_core::protocol::{Report, ReportFinding, VERSION};
use launchguard_core::{Finding, Policy};
use socket2::{Domain, SockAddr, Socket, Type};

/// Connects without blocking. The socket is close-on-exec (socket2's default), so the task's
/// program never inherits it.
pub fn connect(path: &str) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    s.set_nonblocking(true)?;
    s.connect(&SockAddr::unix(path)?)?;
    Ok(s)
}

/// Sends one whole line on a connected socket without blocking.
pub fn send_on(s: &Socket, line: &str) -> std::io::Result<()> {
    // `MSG_NOSIGNAL` (send(2)): a closed peer gives EPIPE instead of killing srun with SIGPIPE.
    let n = s.send_with_flags(line.as_bytes(), libc::MSG_NOSIGNAL)?;
    if n != line.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "partial send",
        ));
    }
    Ok(())
}

/// Connects and sends one line; any failure is returned for the caller to ignore.
pub fn send_line(path: &str, line: &str) -> std::io::Result<()> {
    send_on(&connect(path)?, line)
}

/// This node's hostname (short).
pub fn node_name() -> String {
    crate::host::hostname()
}

/// The effective uid of this process (geteuid(2), through [`crate::ffi::euid`]).
pub fn euid() -> u32 {
    crate::ffi::euid()
}

/// What a verdict did.
pub fn action(shown: &[Finding], reject: bool) -> &'static str {
    if reject {
        "rejected"
    } else if shown.is_empty() {
        "allowed"
    } else {
        "warned"
    }
}

/// One launch's verdict, as the report protocol carries it.
pub struct Verdict<'a> {
    /// `srun`, `step` or `task`.
    pub phase: &'a str,
    /// Job ID (none before allocation).
    pub job: Option<u64>,
    /// Step ID.
    pub step: Option<u64>,
    /// The job's user.
    pub uid: u32,
    /// Findings shown.
    pub shown: &'a [Finding],
    /// The launch was stopped.
    pub reject: bool,
}

/// The JSON line of a report.
pub fn report_line(policy: &Policy, v: &Verdict) -> String {
    let r = Report {
        v: VERSION,
        phase: v.phase.into(),
        job: v.job,
        step: v.step,
        uid: v.uid,
        node: node_name(),
        mode: policy.mode.as_str().into(),
        action: action(v.shown, v.reject).into(),
        findings: v
            .shown
            .iter()
            .take(16)
            .map(ReportFinding::from_finding)
            .collect(),
    };
    r.to_json_line()
}

/// The JSON line of a notice about a step that the user was not shown (action `allowed`), e.g.
/// `node.plugstack.order` for a container step judged before Pyxis entered the container.
pub fn notice_line(
    policy: &Policy,
    job: u64,
    step: u64,
    uid: u32,
    id: &str,
    message: &str,
) -> String {
    Report {
        v: VERSION,
        phase: "task".into(),
        job: Some(job),
        step: Some(step),
        uid,
        node: node_name(),
        mode: policy.mode.as_str().into(),
        action: "allowed".into(),
        findings: vec![ReportFinding::notice(id, message)],
    }
    .to_json_line()
}

/// Sends a report when the policy names an agent socket; never fails the caller.
pub fn report(policy: &Policy, v: &Verdict) {
    if let Some(path) = policy.agent_socket.as_deref() {
        let _ = send_line(path, &report_line(policy, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_blind_step_notice_is_one_allowed_task_report_with_the_finding() {
        let (policy, _) = launchguard_core::policy::parse_args(&["mode=warn"]);
        let line = notice_line(
            &policy,
            15,
            0,
            1001,
            "node.plugstack.order",
            "launchguard: x \"y\"",
        );
        assert!(
            line.ends_with("}\n") && line.matches('\n').count() == 1,
            "{line}"
        );
        for want in [
            "\"phase\":\"task\"",
            "\"job\":15,\"step\":0,\"uid\":1001",
            "\"action\":\"allowed\"",
            "\"id\":\"node.plugstack.order\",\"severity\":\"warning\",\"message\":\"launchguard: x \\\"y\\\"\"",
        ] {
            assert!(line.contains(want), "{want} in {line}");
        }
    }

    #[test]
    fn a_missing_socket_fails_fast_and_quietly() {
        let t = std::time::Instant::now();
        assert!(send_line("/nonexistent/launchguard.sock", "x\n").is_err());
        assert!(t.elapsed() < std::time::Duration::from_millis(50));
    }

    #[test]
    fn a_full_backlog_does_not_block() {
        let dir = std::env::temp_dir().join(format!("lg-client-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("s.sock");
        let _ = std::fs::remove_file(&p);
        // A listener with a backlog of 1 that never accepts, like a wedged agent (std's listener
        // would use the system's maximum backlog).
        let l = Socket::new(Domain::UNIX, Type::STREAM, None).unwrap();
        l.bind(&SockAddr::unix(&p).unwrap()).unwrap();
        l.listen(1).unwrap();
        let l = std::os::unix::net::UnixListener::from(std::os::fd::OwnedFd::from(l));
        let path = p.to_str().unwrap();
        // After the backlog fills, connect must fail at once instead of blocking.
        let t = std::time::Instant::now();
        let mut failures = 0;
        for _ in 0..50 {
            if send_line(path, "{}\n").is_err() {
                failures += 1;
            }
        }
        assert!(failures > 0, "the backlog never filled");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            t.elapsed()
        );
        // A line that got through is whole.
        let (mut c, _) = l.accept().unwrap();
        let mut b = [0u8; 3];
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"{}\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

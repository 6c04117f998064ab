//! The CLI on a closed pipe (`launchguard list-checks | head -c1`): every subcommand that prints
//! ends quietly with 141 (128 + SIGPIPE), as other command-line tools do, instead of a panic report
//! and 101, or an exit status that hides the closed pipe.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../nccl/tests/fixtures");

/// Runs `launchguard ARGS` with its stdout a pipe whose read end is closed before the child starts,
/// so its first write fails with EPIPE whatever the timing; returns the exit code and stderr.
fn closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let (r, w) = nix::unistd::pipe().expect("pipe");
    drop(r);
    let out = Command::new("timeout")
        .arg("120")
        .arg(env!("CARGO_BIN_EXE_launchguard"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(w))
        .stderr(Stdio::piped())
        .output()
        .expect("launchguard runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_quiet(args: &[&str]) {
    let (code, err) = closed_stdout(args);
    assert_eq!(code, Some(141), "launchguard {args:?}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "launchguard {args:?}: {err}"
    );
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lg-pipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_closed_stdout_ends_quietly_with_141() {
    assert_quiet(&["list-checks"]);
    assert_quiet(&["list-checks", "--json"]);
    assert_quiet(&["explain", "--list"]);
}

#[test]
fn every_reader_of_job_output_ends_quietly_on_a_closed_pipe() {
    let log = format!("{FIXTURES}/all_reduce_perf_2gpu_nccl_debug_info.log");
    let other = format!("{FIXTURES}/all_reduce_perf_2gpu_net_socket.log");
    assert_quiet(&["explain", &log]);
    assert_quiet(&["explain", "-v", &log]);
    assert_quiet(&["explain", "--json", &log]);
    for fmt in [None, Some("--json"), Some("--csv")] {
        let mut check = vec!["nccl", "check"];
        let mut outl = vec!["nccl", "outliers", "--all"];
        if let Some(f) = fmt {
            check.push(f);
            outl.push(f);
        }
        check.push(&log);
        outl.extend([log.as_str(), other.as_str()]);
        assert_quiet(&check);
        assert_quiet(&outl);
    }
}

#[test]
fn node_checks_and_check_args_end_quietly_on_a_closed_pipe() {
    let d = scratch("check");
    let cfg = d.join("launchguard.toml");
    std::fs::write(&cfg, "").unwrap();
    let cfg = cfg.to_str().unwrap();
    assert_quiet(&["check", "--config", cfg]);
    assert_quiet(&["check", "--json", "--config", cfg]);
    assert_quiet(&["check-args", "mode=warn"]);
    assert_quiet(&["check-args", "--json", "mode=warn"]);
    let _ = std::fs::remove_dir_all(&d);
}

/// `status` against a stand-in agent that answers one status request with a canned reply.
#[test]
fn status_ends_quietly_on_a_closed_pipe() {
    let d = scratch("status");
    let sock = d.join("agent.sock");
    let l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let reply = r#"{"version":"0","uptime_secs":5,"last_check":null,"reports":[],"reports_total":{"warned":1},"dropped_total":{}}"#;
    let serve = std::thread::spawn(move || {
        for _ in 0..2 {
            let (c, _) = l.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&c).read_line(&mut line).unwrap();
            (&c).write_all(format!("{reply}\n").as_bytes()).unwrap();
        }
    });
    let s = sock.to_str().unwrap();
    assert_quiet(&["status", "--socket", s]);
    assert_quiet(&["status", "--json", "--socket", s]);
    serve.join().unwrap();
    let _ = std::fs::remove_dir_all(Path::new(&d));
}

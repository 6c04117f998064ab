//! The CLI on a closed pipe (`launchguard list-checks | head -1`): it ends quietly with 141 (128 +
//! SIGPIPE), as other command-line tools do, instead of a panic report and 101.

use std::process::{Command, Stdio};

#[test]
fn a_closed_stdout_ends_quietly_with_141() {
    // The read end is closed before the child starts, so its first write fails with EPIPE whatever
    // the timing.
    let (r, w) = nix::unistd::pipe().expect("pipe");
    drop(r);
    let out = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .arg("list-checks")
        .stdout(Stdio::from(w))
        .stderr(Stdio::piped())
        .output()
        .expect("launchguard runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

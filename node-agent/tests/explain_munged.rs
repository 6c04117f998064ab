//! `launchguard explain` on what this host's real munged prints when its files are set up wrong
//! (issue 31): each case starts munged in the foreground on a temporary key, socket, PID file and
//! log (under `timeout`, so a munged that unexpectedly starts cannot hang the test), feeds its
//! output to `launchguard explain --json -` and wants the finding of the cause. munged's checks
//! follow munged(8) and the munge Installation Guide (key 0400/0600 and owned by munged's user,
//! no group/other-writable directory above its files without the sticky bit, a socket directory
//! everyone can search). A host without munged skips the cases and says so.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn munged() -> Option<PathBuf> {
    ["/usr/sbin/munged", "/usr/local/sbin/munged", "/sbin/munged"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// A fresh directory (mode 0755) for one case, with a valid 1024-byte key (mode 0400).
fn case_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lg-munged-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    let key = d.join("munge.key");
    let bytes: Vec<u8> = (0..1024u32).map(|i| (i * 7 + 3) as u8).collect();
    fs::write(&key, bytes).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o400)).unwrap();
    d
}

/// munged's arguments for a case: its key, socket and the files it writes, all in `d`.
fn args(d: &Path, key: &Path, socket: &Path, foreground: bool) -> Vec<String> {
    let mut a: Vec<String> = vec![];
    if foreground {
        a.push("--foreground".into());
    }
    for (k, v) in [
        ("--key-file", key.to_path_buf()),
        ("--socket", socket.to_path_buf()),
        (
            "--pid-file",
            d.join(if foreground { "pid.fg" } else { "pid" }),
        ),
        (
            "--log-file",
            d.join(if foreground { "log.fg" } else { "log" }),
        ),
        ("--seed-file", d.join("seed")),
    ] {
        a.push(format!("{k}={}", v.display()));
    }
    a
}

/// Runs munged in the foreground (at most 20 s) and returns what it printed.
fn run_munged(bin: &Path, a: &[String]) -> String {
    let out = Command::new("timeout")
        .arg("20")
        .arg(bin)
        .args(a)
        .stdin(Stdio::null())
        .output()
        .expect("timeout(1) runs munged");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    assert_ne!(out.status.code(), Some(124), "munged did not stop: {text}");
    text
}

/// The finding IDs `launchguard explain -` gives for `text`.
fn explain_ids(text: &str) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["explain", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn real_munged_refusals_are_explained_by_their_cause() {
    let Some(bin) = munged() else {
        eprintln!("skipped: no munged on this host");
        return;
    };
    let mut checked = 0;
    let mut check = |case: &str, text: String, want: &str| {
        let ids = explain_ids(&text);
        assert!(
            text.contains("Error:"),
            "{case}: munged printed no error: {text}"
        );
        assert_eq!(ids, [want], "{case}: munged said {text:?}");
        checked += 1;
    };

    // A key readable by its group.
    let d = case_dir("keymode");
    let key = d.join("munge.key");
    fs::set_permissions(&key, fs::Permissions::from_mode(0o640)).unwrap();
    let out = run_munged(&bin, &args(&d, &key, &d.join("sock"), true));
    check("key 0640", out, "node.munge.key_mode");

    // No key at all.
    let out = run_munged(
        &bin,
        &args(&d, &d.join("missing.key"), &d.join("sock"), true),
    );
    check("no key", out, "node.munge.key_present");
    fs::remove_dir_all(&d).unwrap();

    // The socket in a directory anyone may write, without the sticky bit.
    let d = case_dir("sockdir");
    let open = d.join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let out = run_munged(
        &bin,
        &args(&d, &d.join("munge.key"), &open.join("sock"), true),
    );
    check("socket dir 0777", out, "node.munge.dirs_secure");

    // The socket in a directory others cannot search.
    let closed = d.join("closed");
    fs::create_dir(&closed).unwrap();
    fs::set_permissions(&closed, fs::Permissions::from_mode(0o700)).unwrap();
    let out = run_munged(
        &bin,
        &args(&d, &d.join("munge.key"), &closed.join("sock"), true),
    );
    check("socket dir 0700", out, "node.munge.socket_dir_access");
    fs::remove_dir_all(&d).unwrap();

    // A second munged on a socket the first one holds. The first is started as a daemon: munged
    // returns only once the daemon has its socket (it waits on a pipe from the child).
    let d = case_dir("bound");
    let sock = d.join("sock");
    let st = Command::new(&bin)
        .args(args(&d, &d.join("munge.key"), &sock, false))
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "the first munged did not start");
    let pid = fs::read_to_string(d.join("pid"))
        .unwrap()
        .trim()
        .to_string();
    let out = run_munged(&bin, &args(&d, &d.join("munge.key"), &sock, true));
    let _ = Command::new("kill").arg(&pid).status();
    check("socket already bound", out, "node.munge.daemon");
    assert_eq!(checked, 5);
    let _ = fs::remove_dir_all(&d);
}

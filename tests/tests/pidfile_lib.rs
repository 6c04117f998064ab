//! `scripts/lib/pidfile.sh`, the pid-file helper every test cluster script stops its daemons with:
//! a pid file left from an earlier run (on a /run that survives reboots) must never end the unrelated
//! process that now holds its pid. A CI run lost the host's munged that way: the three-node cluster,
//! stopping its own munged, killed the one `scripts/cluster.sh up` had started a second before. Needs
//! only bash, `sleep` and `touch`; no cluster.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

fn lib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/lib/pidfile.sh")
}

/// Runs `. pidfile.sh; SCRIPT` in bash with FILE as $1; returns (status, stdout, stderr).
fn with_lib(script: &str, file: &Path) -> (i32, String, String) {
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(". '{}'; {script}", lib().display()))
        .arg("pidfile-test")
        .arg(file)
        .output()
        .expect("bash runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lg-pidfile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Sets FILE's mtime to `secs` seconds before now (as a file left by an earlier run).
fn age(file: &Path, secs: u64) {
    let st = Command::new("touch")
        .arg("-d")
        .arg(format!("-{secs} seconds"))
        .arg(file)
        .status()
        .expect("touch runs");
    assert!(st.success());
}

struct Sleeper(Child);
impl Sleeper {
    fn start(program: &Path) -> Sleeper {
        Sleeper(
            Command::new(program)
                .arg("600")
                .spawn()
                .expect("sleep starts"),
        )
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    fn running(&mut self) -> bool {
        self.0.try_wait().expect("wait").is_none()
    }
}
impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_stale_pid_file_never_ends_the_process_that_reused_its_pid() {
    let d = dir("stale");
    let f = d.join("munged.pid");
    let mut other = Sleeper::start(Path::new("sleep"));
    // The file names this pid but was written a minute before the process started.
    std::fs::write(&f, format!("{}\n", other.pid())).unwrap();
    age(&f, 60);
    let (rc, _, err) = with_lib("stop_pidfile \"$1\"", &f);
    assert_eq!(rc, 0, "{err}");
    assert!(
        other.running(),
        "stop_pidfile killed the unrelated process holding the stale pid"
    );
    assert!(!f.exists(), "the stale pid file is removed");
    std::fs::write(&f, format!("{}\n", other.pid())).unwrap();
    age(&f, 60);
    let (rc, out, err) = with_lib("pidfile_pid \"$1\"", &f);
    assert_eq!(
        (rc, out.as_str()),
        (1, ""),
        "a reused pid counted as the file's: {err}"
    );
    let (rc, _, err) = with_lib("pid_alive \"$1\"", &f);
    assert_eq!(rc, 1, "pid_alive believed a reused pid: {err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_process_a_pid_file_was_written_for_is_found_and_stopped() {
    let d = dir("own");
    // A command name with a space and a parenthesis, as /proc/PID/stat's second field may hold.
    let prog = d.join("lg sleep) x");
    std::fs::copy(
        Command::new("bash")
            .args(["-c", "command -v sleep"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .expect("sleep is on PATH"),
        &prog,
    )
    .unwrap();
    let mut own = Sleeper::start(&prog);
    let f = d.join("daemon.pid");
    std::fs::write(&f, format!("{}\n", own.pid())).unwrap();
    let (rc, out, err) = with_lib("pidfile_pid \"$1\"", &f);
    assert_eq!(
        (rc, out.trim()),
        (0, own.pid().to_string().as_str()),
        "{err}"
    );
    let (rc, _, err) = with_lib("stop_pidfile \"$1\"", &f);
    assert_eq!(rc, 0, "{err}");
    // stop_pidfile waits until the process has ended (a zombie has: this one is our child).
    let st = own.0.wait().expect("wait");
    assert!(!st.success(), "the process was ended by a signal: {st:?}");
    assert!(!f.exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_missing_or_malformed_pid_file_names_no_process_and_prints_nothing() {
    let d = dir("bad");
    let f = d.join("x.pid");
    let (rc, out, err) = with_lib("pidfile_pid \"$1\"", &f);
    assert_eq!(
        (rc, out.as_str(), err.as_str()),
        (1, "", ""),
        "missing file"
    );
    for content in [
        "",
        "\n",
        "abc\n",
        "12 34\n",
        "-1\n",
        "0\n",
        "1;rm -rf /\n",
        "99999999999999\n",
    ] {
        std::fs::write(&f, content).unwrap();
        age(&f, 3600);
        let (rc, out, err) = with_lib("pidfile_pid \"$1\"", &f);
        assert_eq!(
            (rc, out.as_str(), err.as_str()),
            (1, "", ""),
            "content {content:?}"
        );
        let (rc, _, err) = with_lib("stop_pidfile \"$1\"", &f);
        assert_eq!((rc, err.as_str()), (0, ""), "content {content:?}");
        assert!(!f.exists(), "content {content:?}: the file is removed");
    }
    let _ = std::fs::remove_dir_all(&d);
}

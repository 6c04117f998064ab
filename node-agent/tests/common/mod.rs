//! Helpers for the agent's integration tests: run the built `launchguard`, scratch directories, a
//! private munged, configs.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a command printed and how it exited.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The `launchguard` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_launchguard")
}

impl From<std::process::Output> for Out {
    fn from(o: std::process::Output) -> Self {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// Runs a command (argv), 60 s timeout.
pub fn cmd(argv: &[&str]) -> Out {
    let o = Command::new("timeout")
        .arg("60")
        .args(argv)
        .output()
        .expect("spawn");
    Out::from(o)
}

/// Runs `launchguard ARGS`.
pub fn lg(args: &[&str]) -> Out {
    let mut v = vec![bin()];
    v.extend_from_slice(args);
    cmd(&v)
}

/// A fresh scratch directory `/tmp/lg-agent-tests/<name>`, world-traversable.
pub fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from("/tmp/lg-agent-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let _ = cmd(&["chmod", "755", "/tmp/lg-agent-tests", d.to_str().unwrap()]);
    d
}

/// Writes a config file into `dir` and returns its path.
pub fn config(dir: &Path, text: &str) -> String {
    let p = dir.join("launchguard.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// `launchguard check --json --config CFG --only ONLY…` → (exit code, parsed report).
pub fn check(cfg: &str, only: &[&str]) -> (i32, Value) {
    let mut args = vec!["check", "--json", "--config", cfg];
    for o in only {
        args.push("--only");
        args.push(o);
    }
    let o = lg(&args);
    let v: Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {o:?}"));
    (o.code, v)
}

/// The status string of check `id` in a report.
pub fn status_of(rep: &Value, id: &str) -> String {
    rep["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {rep}"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The message of check `id`.
pub fn message_of(rep: &Value, id: &str) -> String {
    rep["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A private munged (own key, socket, pid file) run as the munge user, stopped on drop.
pub struct Munged {
    pub dir: PathBuf,
    pub key: PathBuf,
    pub socket: PathBuf,
    pub pid_file: PathBuf,
}

impl Munged {
    /// Creates a key (owner munge, 0400) and starts munged on it.
    pub fn start(name: &str) -> Munged {
        let dir = scratch(name);
        let etc = dir.join("etc");
        let run = dir.join("run");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::create_dir_all(&run).unwrap();
        let key = etc.join("munge.key");
        let o = cmd(&[
            "dd",
            "if=/dev/urandom",
            &format!("of={}", key.display()),
            "bs=128",
            "count=1",
        ]);
        assert_eq!(o.code, 0, "{o:?}");
        for (mode, p) in [("0700", &etc), ("0755", &run)] {
            assert_eq!(
                cmd(&["chown", "-R", "munge:munge", p.to_str().unwrap()]).code,
                0
            );
            assert_eq!(cmd(&["chmod", mode, p.to_str().unwrap()]).code, 0);
        }
        assert_eq!(cmd(&["chmod", "0400", key.to_str().unwrap()]).code, 0);
        let m = Munged {
            socket: run.join("munge.socket"),
            pid_file: run.join("munged.pid"),
            key,
            dir,
        };
        m.run();
        m
    }

    /// Starts munged (again).
    pub fn run(&self) {
        let o = self.try_run();
        assert_eq!(o.code, 0, "munged did not start: {o:?}");
    }

    /// Tries to start munged (again) on the same files; its output says why it refused.
    pub fn try_run(&self) -> Out {
        cmd(&[
            "runuser",
            "-u",
            "munge",
            "--",
            "munged",
            &format!("--key-file={}", self.key.display()),
            &format!("--socket={}", self.socket.display()),
            &format!("--pid-file={}", self.pid_file.display()),
            &format!("--log-file={}", self.dir.join("etc/munged.log").display()),
            &format!("--seed-file={}", self.dir.join("etc/munged.seed").display()),
        ])
    }

    /// Stops munged through its pid file and waits for it to exit.
    pub fn stop(&self) {
        if let Ok(pid) = std::fs::read_to_string(&self.pid_file) {
            let pid = pid.trim().to_string();
            let _ = cmd(&["kill", &pid]);
            // A loaded machine can take seconds to let munged write its seed and exit; the bound
            // only stops a hung test, the loop ends as soon as the process is gone (or a zombie).
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while std::time::Instant::now() < deadline {
                match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                    Ok(st)
                        if !st
                            .rsplit(')')
                            .next()
                            .unwrap_or("")
                            .trim_start()
                            .starts_with('Z') => {}
                    _ => break,
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }

    /// The `[munge]` config section for this munged.
    pub fn section(&self) -> String {
        format!(
            "[munge]\nkey = \"{}\"\nsocket = \"{}\"\npid_file = \"{}\"\n",
            self.key.display(),
            self.socket.display(),
            self.pid_file.display()
        )
    }
}

impl Drop for Munged {
    fn drop(&mut self) {
        self.stop();
    }
}

/// This machine's Slurm node (the one-node test cluster's NodeName).
pub fn node() -> String {
    launchguard_tests::node_name()
}

/// The node's (State, Reason) from `scontrol show node`.
pub fn state() -> (String, String) {
    let o = cmd(&["scontrol", "show", "node", &node()]);
    let mut st = String::new();
    let mut reason = String::new();
    for l in o.stdout.lines() {
        let l = l.trim();
        if let Some(r) = l.strip_prefix("Reason=") {
            reason = r.to_string();
        }
        for w in l.split_whitespace() {
            if let Some(s) = w.strip_prefix("State=") {
                st = s.to_string();
            }
        }
    }
    (st, reason)
}

/// `scontrol update NodeName=<node> State=RESUME`.
pub fn resume() {
    cmd(&[
        "scontrol",
        "update",
        &format!("NodeName={}", node()),
        "State=RESUME",
    ]);
}

/// Resumes the node on drop when it is drained (also when an assertion fails), so later tests
/// get a usable cluster.
pub struct ResumeOnDrop;
impl Drop for ResumeOnDrop {
    fn drop(&mut self) {
        if state().0.contains("DRAIN") {
            resume();
        }
    }
}

/// Builds the stand-in NVML (`tests/fixtures/nvml_standin/standin.c`, with the system's `cc`) as
/// `dir/libnvidia-ml.so.1` and returns the config lines that load it (`[gpu]`, the lock in `dir`).
/// Its GPU's answers are picked by `LG_STANDIN_NVML` in the environment of the process that loads it.
pub fn standin_nvml(dir: &Path) -> String {
    let lib = dir.join("libnvidia-ml.so.1");
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nvml_standin/standin.c"
    );
    let o = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(src)
        .output()
        .expect("cc (the stand-in NVML is built with the system's C compiler)");
    assert!(o.status.success(), "{o:?}");
    format!(
        "[gpu]\nnvml_library = \"{}\"\nnvml_lock = \"{}\"\n",
        lib.display(),
        dir.join("nvml.lock").display()
    )
}

/// Runs `launchguard ARGS` with `LG_STANDIN_NVML=mode` (60 s timeout).
pub fn lg_standin(mode: &str, args: &[&str]) -> Out {
    let o = Command::new("timeout")
        .arg("60")
        .arg(bin())
        .args(args)
        .env("LG_STANDIN_NVML", mode)
        .output()
        .expect("spawn");
    Out::from(o)
}

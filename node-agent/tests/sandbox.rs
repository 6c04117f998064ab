//! Issue 28: the agent runs in its unit's sandbox (`systemd/launchguard-agent.service`), and every
//! check family must judge the node there as unconfined root's `launchguard check` does. Each test
//! builds a state on which the two could differ (a parent under /tmp owned by another user with
//! mode 0700, root-only 0600 files, a read-only mount, a renamed host), runs the checks both ways
//! and compares every verdict and message. The sandbox is the unit file's own settings, applied by
//! `scripts/lib/unit-sandbox.sh` (systemd is not PID 1 here; `scripts/test-node.sh` runs the real
//! unit). A hardened copy of the unit (what a site's drop-in could add back: `PrivateTmp=yes`,
//! `ProtectHome=yes`, `ProtectKernelLogs=yes`, `ProtectHostname=yes`) shows that where the agent
//! cannot see a fact its check says UNKNOWN with the reason, never OK.
#![cfg(slurm_tests)] // needs root (unshare, mount, chown): LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs)

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const UNIT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../systemd/launchguard-agent.service"
);
const SANDBOX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../scripts/lib/unit-sandbox.sh"
);
/// Where the sandboxed commands run from: a copy of the binary (and of this test binary) outside
/// every path a sandbox may hide (`PrivateTmp=` hides /tmp and /var/tmp, `ProtectHome=` /home and
/// /root, where a checkout may live) and not on /run, which Debian mounts `noexec`. An installed
/// agent runs from /usr/bin, which every sandbox shows.
const EXEC_DIR: &str = "/var/lib/launchguard-test/sandbox-bin";

/// `src` copied into [`EXEC_DIR`] as `name` (through a temporary name and a rename, so a copy that
/// another run is executing is never rewritten in place); the copy's path.
fn exec_copy(src: &Path, name: &str) -> String {
    std::fs::create_dir_all(EXEC_DIR).unwrap();
    let dst = Path::new(EXEC_DIR).join(name);
    let tmp = Path::new(EXEC_DIR).join(format!(".{name}.{}", std::process::id()));
    std::fs::copy(src, &tmp)
        .unwrap_or_else(|e| panic!("copy {} to {}: {e}", src.display(), tmp.display()));
    std::fs::rename(&tmp, &dst).unwrap();
    dst.display().to_string()
}

/// The `launchguard` binary, as the sandboxes run it (a copy in [`EXEC_DIR`], made once).
fn sandbox_bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| exec_copy(Path::new(bin()), "launchguard"))
}

/// The other user who owns the 0700 parent (the issue's first enroot user).
const OTHER_UID: &str = "1002";

/// A test's state: configs and root-only files under /run (seen by every sandbox), a 0700
/// directory of uid 1002 under /tmp and one under /var/tmp, and a read-only mount; all removed on
/// drop.
struct State {
    /// `/run/lg-sandbox-tests/NAME`: configs.
    run: PathBuf,
    /// `/tmp/lg-sandbox-tests/NAME/locked`: mode 0700, owner uid 1002.
    tmp: PathBuf,
    /// `/var/tmp/lg-sandbox-tests/NAME/locked`: mode 0700, owner uid 1002.
    var_tmp: PathBuf,
    /// `/run/lg-sandbox-tests/NAME/ro`: a read-only bind mount of `/run/lg-sandbox-tests/NAME/ro-src`.
    ro: PathBuf,
}

impl State {
    fn new(name: &str) -> State {
        let run = Path::new("/run/lg-sandbox-tests").join(name);
        let top = |base: &str| Path::new(base).join("lg-sandbox-tests").join(name);
        let s = State {
            ro: run.join("ro"),
            tmp: top("/tmp").join("locked"),
            var_tmp: top("/var/tmp").join("locked"),
            run,
        };
        s.cleanup();
        for d in [&s.run, &s.tmp, &s.var_tmp, &s.ro, &s.run.join("ro-src")] {
            std::fs::create_dir_all(d).unwrap();
        }
        for d in [&s.tmp, &s.var_tmp] {
            assert_eq!(cmd(&["chown", OTHER_UID, d.to_str().unwrap()]).code, 0);
            assert_eq!(cmd(&["chmod", "0700", d.to_str().unwrap()]).code, 0);
        }
        let src = s.run.join("ro-src");
        std::fs::create_dir_all(src.join("enroot")).unwrap();
        cmd(&["chmod", "1777", src.join("enroot").to_str().unwrap()]);
        let o = cmd(&[
            "mount",
            "--bind",
            src.to_str().unwrap(),
            s.ro.to_str().unwrap(),
        ]);
        assert_eq!(o.code, 0, "{o:?}");
        let o = cmd(&["mount", "-o", "remount,bind,ro", s.ro.to_str().unwrap()]);
        assert_eq!(o.code, 0, "{o:?}");
        s
    }

    /// A root-only (0600) file under /run.
    fn root_file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.run.join(name);
        std::fs::write(&p, text).unwrap();
        cmd(&["chmod", "0600", p.to_str().unwrap()]);
        p
    }

    /// A file `mode` owned by `owner` in `dir`.
    fn file_in(&self, dir: &Path, name: &str, text: &str, owner: &str, mode: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        cmd(&["chown", owner, p.to_str().unwrap()]);
        cmd(&["chmod", mode, p.to_str().unwrap()]);
        p
    }

    fn config(&self, text: &str) -> String {
        let p = self.run.join("launchguard.toml");
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn cleanup(&self) {
        let _ = cmd(&["umount", self.ro.to_str().unwrap()]);
        for d in [&self.run, &self.tmp, &self.var_tmp] {
            let _ = std::fs::remove_dir_all(d.parent().filter(|_| d != &self.run).unwrap_or(d));
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// `launchguard check --json --config CFG --only ONLY…` in UNIT's sandbox.
fn check_in(unit: &str, cfg: &str, only: &[&str]) -> Value {
    let mut argv = vec![
        SANDBOX,
        unit,
        sandbox_bin(),
        "check",
        "--json",
        "--config",
        cfg,
    ];
    for o in only {
        argv.push("--only");
        argv.push(o);
    }
    let o = cmd(&argv);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {o:?}"))
}

/// Every check's (status, message) and every fact of a report.
fn verdicts(rep: &Value) -> BTreeMap<String, (String, String)> {
    let mut m: BTreeMap<String, (String, String)> = rep["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                (
                    c["status"].as_str().unwrap().to_string(),
                    c["message"].as_str().unwrap_or("").to_string(),
                ),
            )
        })
        .collect();
    if let Some(f) = rep["facts"].as_object() {
        for (k, v) in f {
            m.insert(format!("fact {k}"), (v.to_string(), String::new()));
        }
    }
    m
}

/// Runs the checks as unconfined root and in the unit's sandbox; asserts the same verdicts,
/// messages and facts, and returns root's report.
fn both_ways(cfg: &str, only: &[&str]) -> Value {
    let (_, root) = check(cfg, only);
    let sandboxed = check_in(UNIT, cfg, only);
    let (a, b) = (verdicts(&root), verdicts(&sandboxed));
    assert!(!a.is_empty(), "{root}");
    let diff: Vec<_> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: root {v:?}, agent's sandbox {:?}", b.get(k)))
        .collect();
    assert!(diff.is_empty(), "differences:\n{}", diff.join("\n"));
    root
}

/// The unit with the settings a site's drop-in could add back (written into `dir`).
fn hardened_unit(dir: &Path) -> String {
    let text = std::fs::read_to_string(UNIT).unwrap();
    let mut out = String::new();
    for l in text.lines() {
        let l = match l.split_once('=') {
            Some(("PrivateTmp", _)) => "PrivateTmp=yes",
            Some(("ProtectHome", _)) => "ProtectHome=yes",
            Some(("ProtectKernelLogs", _)) => "ProtectKernelLogs=yes",
            Some(("ProtectHostname", _)) => "ProtectHostname=yes",
            _ => l,
        };
        out.push_str(l);
        out.push('\n');
    }
    let p = dir.join("hardened.service");
    std::fs::write(&p, out).unwrap();
    p.display().to_string()
}

/// `node.enroot.*`: the issue's layout (data and cache under a 0700 parent of uid 1002 in /tmp
/// and /var/tmp, the runtime dir under it, enroot.conf root-only 0600, a drop-in 0600 of uid 1002
/// in that parent's twin), a path on a read-only mount and one under /home.
#[test]
fn enroot_paths_under_tmp_and_home_are_judged_as_root_judges_them() {
    let s = State::new("enroot");
    /// Removed on drop, also when an assertion fails.
    struct Home(PathBuf);
    impl Drop for Home {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let guard = Home(PathBuf::from(format!(
        "/home/lg-sandbox-tests-{}",
        std::process::id()
    )));
    let home = guard.0.clone();
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join("data")).unwrap();
    cmd(&["chown", OTHER_UID, home.join("data").to_str().unwrap()]);
    cmd(&["chmod", "0700", home.join("data").to_str().unwrap()]);
    let conf = s.root_file(
        "enroot.conf",
        &format!(
            "ENROOT_RUNTIME_PATH {t}/run/user-$(id -u)\nENROOT_DATA_PATH {t}/enroot-data/user-$(id -u)\nENROOT_CACHE_PATH {v}/enroot-cache/user-$(id -u)\n",
            t = s.tmp.display(),
            v = s.var_tmp.display()
        ),
    );
    std::fs::create_dir_all(s.run.join("enroot.conf.d")).unwrap();
    let cfg = s.config(&format!("[enroot]\nconf = \"{}\"\n", conf.display()));
    let rep = both_ways(&cfg, &["node.enroot"]);
    // Root's verdicts, which the sandbox shares: the 0700 parent of another user.
    assert_eq!(status_of(&rep, "node.enroot.storage"), "critical", "{rep}");
    assert!(
        message_of(&rep, "node.enroot.storage").contains(&format!("uid {OTHER_UID}")),
        "{rep}"
    );
    assert_eq!(status_of(&rep, "node.enroot.run_dir"), "critical", "{rep}");
    // Where the data lives under /home and the cache on a read-only mount, and a drop-in only
    // root and uid 1002 may read.
    std::fs::write(
        &conf,
        format!(
            "ENROOT_RUNTIME_PATH {}/enroot/user-$(id -u)\n",
            s.ro.display()
        ),
    )
    .unwrap();
    s.file_in(
        &s.run.join("enroot.conf.d"),
        "50-site.conf",
        &format!(
            "ENROOT_DATA_PATH {}/data/user-$(id -u)\nENROOT_CACHE_PATH {}/enroot/cache-$(id -u)\n",
            home.display(),
            s.ro.display()
        ),
        OTHER_UID,
        "0600",
    );
    let rep = both_ways(&cfg, &["node.enroot"]);
    let storage = message_of(&rep, "node.enroot.storage");
    assert!(storage.contains(&home.display().to_string()), "{rep}");
    assert_eq!(status_of(&rep, "node.enroot.run_dir"), "ok", "{rep}");
    // What a unit that hides /tmp and /home shows is not the node: UNKNOWN with the reason.
    let hard = hardened_unit(&s.run);
    for layout in [
        format!(
            "ENROOT_RUNTIME_PATH {t}/run/user-$(id -u)\nENROOT_DATA_PATH {t}/enroot-data/user-$(id -u)\n",
            t = s.tmp.display()
        ),
        format!("ENROOT_DATA_PATH {}/data/user-$(id -u)\n", home.display()),
    ] {
        std::fs::write(&conf, &layout).unwrap();
        let _ = std::fs::remove_dir_all(s.run.join("enroot.conf.d"));
        let (_, root) = check(&cfg, &["node.enroot"]);
        let rep = check_in(&hard, &cfg, &["node.enroot"]);
        let st = status_of(&root, "node.enroot.storage");
        assert!(st == "critical" || st == "warning", "{root}");
        assert_eq!(status_of(&rep, "node.enroot.storage"), "unknown", "{rep}");
        assert!(
            message_of(&rep, "node.enroot.storage").contains("the agent's sandbox shows another directory"),
            "{rep}"
        );
        if layout.contains("RUNTIME") {
            assert_eq!(status_of(&root, "node.enroot.run_dir"), "critical", "{root}");
            assert_eq!(status_of(&rep, "node.enroot.run_dir"), "unknown", "{rep}");
        }
    }
}

/// `node.munge.*`: a munged whose key (munge 0400) is in a 0700 directory of munge and whose socket
/// and pid file are under /tmp.
#[test]
fn munge_under_tmp_is_judged_as_root_judges_it() {
    let s = State::new("munge");
    let m = Munged::start("sandbox-munge");
    let cfg = s.config(&m.section());
    let rep = both_ways(&cfg, &["node.munge"]);
    assert_eq!(status_of(&rep, "node.munge.daemon"), "ok", "{rep}");
    assert_eq!(status_of(&rep, "node.munge.roundtrip"), "ok", "{rep}");
    // A unit with a private /tmp: not 'munged is not running' (CRITICAL, a drain), UNKNOWN.
    let rep = check_in(&hardened_unit(&s.run), &cfg, &["node.munge"]);
    for c in rep["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "unknown", "{c}");
    }
    m.stop();
}

/// `node.slurm_conf.*` and `node.plugstack.*`: slurm.conf, plugstack.conf (both root 0600) and a
/// plugin's .so in a 0700 directory of uid 1002 under /tmp, with a second line to a missing .so.
#[test]
fn slurm_conf_and_plugstack_under_tmp_are_judged_as_root_judges_them() {
    let s = State::new("slurm");
    let so = s.tmp.join("spank_launchguard.so");
    std::fs::copy(launchguard_tests::built_plugin(), &so).unwrap();
    let ps = s.file_in(
        &s.tmp,
        "plugstack.conf",
        &format!(
            "required {}\nrequired {}/spank_gone.so\n",
            so.display(),
            s.tmp.display()
        ),
        "root",
        "0600",
    );
    let real = std::fs::read_to_string("/etc/slurm/slurm.conf").unwrap();
    let text: String = real
        .lines()
        .filter(|l| !l.starts_with("PlugStackConfig"))
        .map(|l| format!("{l}\n"))
        .collect();
    let conf = s.file_in(
        &s.tmp,
        "slurm.conf",
        &format!("{text}PlugStackConfig={}\n", ps.display()),
        "root",
        "0600",
    );
    let cfg = s.config(&format!("slurm_conf = \"{}\"\n", conf.display()));
    let rep = both_ways(&cfg, &["node.slurm_conf", "node.plugstack"]);
    assert_eq!(
        status_of(&rep, "node.plugstack.required_so"),
        "critical",
        "{rep}"
    );
    assert!(message_of(&rep, "node.plugstack.required_so").contains("spank_gone.so"));
    assert!(!message_of(&rep, "node.plugstack.required_so").contains("spank_launchguard.so"));
    // A unit with a private /tmp: the stack and slurm.conf are not judged, never OK.
    let rep = check_in(
        &hardened_unit(&s.run),
        &cfg,
        &["node.slurm_conf", "node.plugstack"],
    );
    for c in rep["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "unknown", "{c}");
    }
}

/// `node.nccl_env.*`: a node-wide environment file 0600 of uid 1002 in its 0700 directory under
/// /var/tmp naming an interface the node does not have.
#[test]
fn nccl_env_files_under_var_tmp_are_judged_as_root_judges_them() {
    let s = State::new("nccl");
    let f = s.file_in(
        &s.var_tmp,
        "nccl.conf",
        "NCCL_SOCKET_IFNAME=lgnosuch0\n",
        OTHER_UID,
        "0600",
    );
    let cfg = s.config(&format!("[nccl_env]\nfiles = [\"{}\"]\n", f.display()));
    let rep = both_ways(&cfg, &["node.nccl_env"]);
    let bad: Vec<&Value> = rep["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] != "ok")
        .collect();
    assert!(
        bad.iter()
            .any(|c| c["message"].as_str().unwrap_or("").contains("lgnosuch0")),
        "{rep}"
    );
    // A unit with a private /var/tmp: the file is not looked at, so not OK.
    let rep = check_in(&hardened_unit(&s.run), &cfg, &["node.nccl_env"]);
    assert_eq!(status_of(&rep, "node.nccl_env.files"), "unknown", "{rep}");
    assert!(
        message_of(&rep, "node.nccl_env.files").contains("/var/tmp/lg-sandbox-tests"),
        "{rep}"
    );
}

/// The families that read /proc, /sys and /dev (hostname, pmix, devices, gpu, imex): the node's
/// own state, both ways.
#[test]
fn proc_sys_and_dev_families_are_judged_as_root_judges_them() {
    let s = State::new("proc");
    let cfg = s.config("");
    both_ways(
        &cfg,
        &[
            "node.hostname",
            "node.pmix",
            "node.devices",
            "node.gpu",
            "node.imex",
        ],
    );
}

/// `node.hostname.*` after the host is renamed while the agent runs: the unit's sandbox must see the
/// new name (`ProtectHostname=yes` froze the name of when the agent started). In a private UTS and
/// mount namespace with its own /etc/hosts: the old name resolves only to fe80:: (critical), the new
/// one to an IPv4 address.
#[test]
fn a_renamed_host_is_judged_by_its_new_name_in_the_units_sandbox() {
    let s = State::new("hostname");
    let hosts = s.root_file(
        "hosts",
        "127.0.0.1 localhost\nfe80::1 lgsbxold\n192.0.2.10 lgsbxnew\n",
    );
    cmd(&["chmod", "0644", hosts.to_str().unwrap()]);
    let cfg = s.config("");
    // The sandboxed check starts under the old name, says so, waits for the rename, then runs.
    let script = r#"
set -eu
mount --bind "$1" /etc/hosts
hostname lgsbxold
coproc S { "$2" "$3" sh -c 'echo started; read -r _; exec "$0" check --json --config "$1" --only node.hostname' "$4" "$5"; }
# (bash unsets S when the coprocess ends: keep its pipes on fds of our own.)
exec 3<&"${S[0]}" 4>&"${S[1]}"
read -r _ <&3
hostname lgsbxnew
echo go >&4
cat <&3 > "$6/sandboxed.json"
wait
"$4" check --json --config "$5" --only node.hostname > "$6/root.json" || true
"#;
    let run = |unit: &str| -> (Value, Value) {
        let o = cmd(&[
            "unshare",
            "--mount",
            "--uts",
            "--",
            "bash",
            "-c",
            script,
            "bash",
            hosts.to_str().unwrap(),
            SANDBOX,
            unit,
            sandbox_bin(),
            &cfg,
            s.run.to_str().unwrap(),
        ]);
        let read = |n: &str| -> Value {
            let t = std::fs::read_to_string(s.run.join(n)).unwrap_or_default();
            serde_json::from_str(&t).unwrap_or_else(|e| panic!("{n}: {e}: {t:?} {o:?}"))
        };
        (read("root.json"), read("sandboxed.json"))
    };
    let (root, sandboxed) = run(UNIT);
    assert_eq!(status_of(&root, "node.hostname.link_local"), "ok", "{root}");
    assert_eq!(verdicts(&root), verdicts(&sandboxed), "{root}\n{sandboxed}");
    // A unit with ProtectHostname=yes judges the name it started with.
    let (root, frozen) = run(&hardened_unit(&s.run));
    assert_eq!(status_of(&root, "node.hostname.link_local"), "ok", "{root}");
    assert_eq!(
        status_of(&frozen, "node.hostname.link_local"),
        "critical",
        "{frozen}"
    );
}

/// `node.gpu.xid` reads the kernel log; this machine has no GPU, so the gatherer itself
/// (`kernel_log` on the system's /dev/kmsg) runs in the sandbox: this test binary runs itself there
/// with `LG_SANDBOX_INNER=kmsg` and prints what it read.
#[test]
fn the_kernel_log_is_read_in_the_units_sandbox() {
    use launchguard_core::host::Roots;
    use launchguard_core::node::gpu::KernelLog;
    if std::env::var("LG_SANDBOX_INNER").as_deref() == Ok("kmsg") {
        let k = launchguard::gather::gpu::kernel_log(&Roots::system());
        println!(
            "KERNEL_LOG: {}",
            match k {
                KernelLog::Read { .. } => "read".to_string(),
                KernelLog::Unreadable(e) => format!("unreadable: {e}"),
                KernelLog::NotAsked => "not asked".to_string(),
            }
        );
        return;
    }
    // This test binary, run again inside the sandbox (from a copy the sandboxes can see).
    let exe = exec_copy(&std::env::current_exe().unwrap(), "sandbox-tests");
    let me = "the_kernel_log_is_read_in_the_units_sandbox";
    let s = State::new("kmsg");
    let run = |prefix: &[&str]| -> String {
        let mut argv: Vec<&str> = prefix.to_vec();
        argv.extend([
            "env",
            "LG_SANDBOX_INNER=kmsg",
            &exe,
            "--exact",
            me,
            "--nocapture",
            "--test-threads=1",
        ]);
        let o = cmd(&argv);
        o.stdout
            .lines()
            .find_map(|l| l.split_once("KERNEL_LOG: ").map(|(_, r)| r))
            .unwrap_or_else(|| panic!("{o:?}"))
            .to_string()
    };
    assert_eq!(run(&[]), "read");
    assert_eq!(run(&[SANDBOX, UNIT]), "read");
    let hard = run(&[SANDBOX, &hardened_unit(&s.run)]);
    assert!(hard.starts_with("unreadable: "), "{hard}");
}

//! Harness for launchguard's integration tests: they drive the real one-node Slurm that
//! `scripts/cluster.sh up` starts (munged, slurmctld, slurmd; two fake GPUs) and run real
//! `srun`/`sbatch` as root and as the non-root user `lgtest`.
//!
//! `LG_CLUSTER` picks the cluster, as for `scripts/cluster.sh`: `host` (default; the machine's Slurm,
//! 22.05 on Debian 12, cgroup v1 device constraints), `trixie` (Slurm 24.11 in the chroot at
//! `/srv/lg-trixie`, where every command runs through `chroot`), `sid` (Slurm 26.05 in the chroot at
//! `/srv/lg-sid`, likewise) or `arm64` (Debian 12's Slurm 22.05
//! for aarch64 in the chroot at `/srv/lg-arm64`, run by qemu-user; the plugin is the aarch64 build).
//! `LG_PLUGIN_SO` names another plugin file to install (scripts/test.sh points it at the one the
//! arm64 .deb installed). Paths below are as seen inside the
//! cluster; [`host_path`] maps them to this machine's filesystem.
//!
//! Tests that change the plugstack line take [`lock`] first, so they run one at a time even when the
//! test runner uses several threads.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, Once};

/// Where `scripts/cluster.sh install-plugin` puts the plugin; the plugstack line points here.
pub const PLUGIN_PATH: &str = "/usr/local/lib/launchguard/spank_launchguard.so";
/// launchguard's plugstack drop-in: the package's name, which sorts after Pyxis's `pyxis.conf`.
pub const DROPIN: &str = "/etc/slurm/plugstack.conf.d/zz-launchguard.conf";
/// The names the test clusters used before the drop-in took the package's name; removed wherever the
/// line is written or removed, so that a machine set up by an older checkout never lists launchguard
/// (or the hider) twice.
const OLD_DROPINS: [&str; 2] = [
    "/etc/slurm/plugstack.conf.d/50-launchguard.conf",
    "/etc/slurm/plugstack.conf.d/60-lgtest-hide.conf",
];
/// The test-only plugin that gives tasks a container-like view (`tests/spank-hide/lgtest_hide.c`).
pub const HIDER_PATH: &str = "/usr/local/lib/launchguard/lgtest_hide.so";
/// Its plugstack drop-in, ordered before launchguard's.
pub const HIDER_DROPIN: &str = "/etc/slurm/plugstack.conf.d/40-lgtest-hide.conf";
/// Its drop-in ordered after launchguard's (launchguard's `task_init` runs first, as when launchguard
/// is listed before Pyxis).
pub const HIDER_AFTER_DROPIN: &str = "/etc/slurm/plugstack.conf.d/zzz-lgtest-hide.conf";

/// The non-root user the cluster script creates.
pub const USER: &str = "lgtest";
/// A slurm.conf identical to the cluster's but with an empty plugstack: an srun that uses it behaves
/// like one on a login node without launchguard, so only slurmstepd's checks run.
pub const LOGIN_CONF: &str = "/tmp/lg-login/slurm.conf";
/// Scratch directory for job scripts and outputs (mode 1777).
pub const SCRATCH: &str = "/tmp/lg-tests";

/// The cluster's root filesystem on this machine: `""` for host, `/srv/lg-trixie` for trixie,
/// `/srv/lg-sid` for sid, `/srv/lg-arm64` for arm64.
pub fn rootfs() -> &'static str {
    match std::env::var("LG_CLUSTER").as_deref() {
        Ok("trixie") => "/srv/lg-trixie",
        Ok("sid") => "/srv/lg-sid",
        Ok("arm64") => "/srv/lg-arm64",
        Ok("host") | Err(_) => "",
        Ok(other) => panic!("LG_CLUSTER must be host, trixie, sid or arm64, not {other:?}"),
    }
}

/// True on the arm64 cluster, whose binaries run under qemu-user.
pub fn emulated() -> bool {
    std::env::var("LG_CLUSTER").as_deref() == Ok("arm64")
}

/// A path inside the cluster, as a path on this machine.
pub fn host_path(p: &str) -> String {
    format!("{}{p}", rootfs())
}

/// The plugin built for this cluster's Slurm release and architecture (see `scripts/cluster.sh
/// build-plugin`), or the file `LG_PLUGIN_SO` names.
pub fn built_plugin() -> PathBuf {
    if let Some(so) = std::env::var_os("LG_PLUGIN_SO") {
        return PathBuf::from(so);
    }
    let dir = match std::env::var("LG_CLUSTER").as_deref() {
        Ok("trixie") => "target/slurm-24.11/release",
        Ok("sid") => "target/slurm-26.05/release",
        Ok("arm64") => "target/aarch64-unknown-linux-gnu/release",
        _ => "target/release",
    };
    repo_root().join(dir).join("libspank_launchguard.so")
}

static LOCK: Mutex<()> = Mutex::new(());
static SETUP: Once = Once::new();

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Serialises tests that change the plugstack, and on first use checks the cluster, installs the
/// freshly built plugin and writes the login-node config. Panics with the command to run when the
/// cluster is not up.
pub fn lock() -> MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    SETUP.call_once(setup);
    g
}

fn sh(cmd: &str) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg(cmd)
        .env("R", rootfs())
        .output()
        .expect("bash runs")
}

fn setup() {
    let ping = run(As::Root, &[], &["scontrol", "ping"]);
    assert!(
        ping.code == 0,
        "no Slurm cluster answers ({ping:?}): run `LG_CLUSTER={} scripts/cluster.sh up` as root (scripts/test.sh does it)",
        std::env::var("LG_CLUSTER").unwrap_or_else(|_| "host".into())
    );
    let so = built_plugin();
    assert!(
        so.exists(),
        "{} is not built: run `scripts/cluster.sh build-plugin` (scripts/test.sh does it)",
        so.display()
    );
    let out = sh(&format!(
        "mkdir -p $R/usr/local/lib/launchguard && cp {} $R{PLUGIN_PATH}.tmp && chmod 755 $R{PLUGIN_PATH}.tmp && mv -f $R{PLUGIN_PATH}.tmp $R{PLUGIN_PATH} \
         && mkdir -p $R/tmp/lg-login $R{SCRATCH} && chmod 1777 $R{SCRATCH} \
         && sed 's#^PlugStackConfig=.*#PlugStackConfig=/tmp/lg-login/plugstack.conf#' $R/etc/slurm/slurm.conf > $R{LOGIN_CONF} \
         && : > $R/tmp/lg-login/plugstack.conf && chmod -R a+rX $R/tmp/lg-login",
        so.display()
    ));
    assert!(out.status.success(), "setup failed: {out:?}");
    let src = repo_root().join("tests/spank-hide/lgtest_hide.c");
    // The cluster's architecture: the arm64 chroot's slurmstepd loads only an aarch64 .so.
    let cc = if emulated() {
        "aarch64-linux-gnu-gcc"
    } else {
        "gcc"
    };
    // Only the cluster's Slurm headers, not its C library's: sid's libslurm-dev brings glibc headers
    // newer than this machine's, which do not mix with its compiler's own.
    let out = sh(&format!(
        "mkdir -p $R/tmp/lg-slurm-include && ln -sfn $R/usr/include/slurm $R/tmp/lg-slurm-include/slurm \
         && {cc} -shared -fPIC -O2 -Wall -I$R/tmp/lg-slurm-include -o $R{HIDER_PATH}.tmp {} && mv -f $R{HIDER_PATH}.tmp $R{HIDER_PATH}",
        src.display()
    ));
    assert!(
        out.status.success(),
        "building the test-only plugin failed: {out:?}"
    );
}

/// Lists launchguard in plugstack with these arguments (`required <plugin> <args>`), atomically, and
/// removes the test-only hider.
pub fn plugstack(args: &str) {
    let _ = std::fs::remove_file(host_path(HIDER_DROPIN));
    let _ = std::fs::remove_file(host_path(HIDER_AFTER_DROPIN));
    plugstack_line(&format!("required {PLUGIN_PATH} {args}"));
}

/// Lists the test-only hider (`hide=/dev/x`, `deny=c:195:0`) before launchguard, and launchguard
/// with `args`.
pub fn plugstack_with_hider(hider_args: &str, args: &str) {
    plugstack(args);
    let dropin = host_path(HIDER_DROPIN);
    let tmp = format!("{dropin}.tmp");
    std::fs::write(&tmp, format!("required {HIDER_PATH} {hider_args}\n")).expect("write hider");
    std::fs::rename(&tmp, &dropin).expect("rename hider");
}

/// Lists launchguard with `args`, then the test-only hider after it (`zzz-lgtest-hide.conf`, which sorts after `zz-launchguard.conf`).
pub fn plugstack_with_hider_after(hider_args: &str, args: &str) {
    plugstack(args);
    let dropin = host_path(HIDER_AFTER_DROPIN);
    let tmp = format!("{dropin}.tmp");
    std::fs::write(&tmp, format!("required {HIDER_PATH} {hider_args}\n")).expect("write hider");
    std::fs::rename(&tmp, &dropin).expect("rename hider");
}

/// This machine's short host name (the node name of the test clusters).
pub fn node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("hostname")
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Writes launchguard's plugstack drop-in with this exact line, atomically.
pub fn plugstack_line(line: &str) {
    for old in OLD_DROPINS {
        let _ = std::fs::remove_file(host_path(old));
    }
    let dropin = host_path(DROPIN);
    let tmp = format!("{dropin}.tmp");
    std::fs::write(&tmp, format!("{line}\n")).expect("write plugstack");
    std::fs::rename(&tmp, &dropin).expect("rename plugstack");
}

/// Removes launchguard (and the test-only hider) from plugstack.
pub fn no_plugstack() {
    let _ = std::fs::remove_file(host_path(HIDER_DROPIN));
    let _ = std::fs::remove_file(host_path(HIDER_AFTER_DROPIN));
    let _ = std::fs::remove_file(host_path(DROPIN));
    for old in OLD_DROPINS {
        let _ = std::fs::remove_file(host_path(old));
    }
}

/// What a command printed and how it exited.
#[derive(Debug, Clone)]
pub struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Lines of stderr that launchguard printed as findings.
    pub fn findings(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .chain(self.stdout.lines())
            .filter(|l| l.starts_with("launchguard: launch."))
            .collect()
    }

    /// Whether any output mentions launchguard at all.
    pub fn mentions_launchguard(&self) -> bool {
        self.stderr.contains("launchguard") || self.stdout.contains("launchguard")
    }
}

/// Who runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum As {
    /// root.
    Root,
    /// The non-root user [`USER`].
    User,
}

/// Runs a command line (argv) as `who`, in /tmp, with extra environment variables, with a 60 s
/// timeout so a hung launch fails the test instead of hanging it.
pub fn run(who: As, env: &[(&str, &str)], argv: &[&str]) -> Run {
    let mut c = Command::new("timeout");
    c.arg("60");
    if !rootfs().is_empty() {
        c.args(["chroot", rootfs()]);
    }
    if who == As::User {
        c.args(["runuser", "-u", USER, "--"]);
    }
    c.arg("env");
    for (k, v) in env {
        c.arg(format!("{k}={v}"));
    }
    c.args(argv);
    c.current_dir("/tmp");
    let out = c.output().expect("spawn");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `srun ARGS…` as `who`.
pub fn srun(who: As, args: &[&str]) -> Run {
    let mut argv = vec!["srun"];
    argv.extend_from_slice(args);
    run(who, &[], &argv)
}

/// Submits `script` with `sbatch -W` (waits for the job) as `who` with extra sbatch arguments, and
/// returns sbatch's own run and the job's output file (stdout and stderr together).
pub fn sbatch(who: As, name: &str, extra: &[&str], script: &str) -> (Run, String) {
    let path = format!("{SCRATCH}/{name}.sh");
    let out = format!("{SCRATCH}/{name}.out");
    let _ = std::fs::remove_file(host_path(&out));
    std::fs::write(host_path(&path), script).expect("write script");
    let mut argv = vec!["sbatch", "-W", "-o", out.as_str()];
    argv.extend_from_slice(extra);
    argv.push(path.as_str());
    let r = run(who, &[], &argv);
    let text = std::fs::read_to_string(host_path(&out)).unwrap_or_default();
    (r, text)
}

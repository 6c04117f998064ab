//! No unprivileged user can drain a node or steer root's hand through state they control, tested
//! through `launchguard health` against the real slurmctld with user `lgtest` as the attacker:
//! a directory swapped with a symlink to the munge key's directory (`renameat2(RENAME_EXCHANGE)`)
//! under `[munge] shared_paths`, a user's copy of the key, and a symlink planted at
//! ENROOT_DATA_PATH's parent in a sticky world-writable directory.
#![cfg(slurm_tests)] // needs a running Slurm and root: LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs)

mod common;
use common::*;
use std::path::Path;
use std::process::{Child, Command};

const ATTACKER: &str = "lgtest";

/// Runs `argv` as the attacker (setpriv: no root left, no supplementary groups).
fn as_attacker(argv: &[&str]) -> Out {
    let mut v = vec![
        "setpriv",
        "--reuid",
        ATTACKER,
        "--regid",
        ATTACKER,
        "--clear-groups",
        "--",
    ];
    v.extend_from_slice(argv);
    let o = cmd(&v);
    assert_eq!(o.code, 0, "{argv:?} as {ATTACKER}: {o:?}");
    o
}

/// The attacker's uid.
fn attacker_uid() -> String {
    cmd(&["id", "-u", ATTACKER]).stdout.trim().to_string()
}

/// A directory owned by the attacker (their home on a shared filesystem).
fn attacker_dir(p: &Path) {
    std::fs::create_dir_all(p).unwrap();
    assert_eq!(cmd(&["chown", ATTACKER, p.to_str().unwrap()]).code, 0);
}

/// The attacker's swap loop: exchanges `a` and `b` with renameat2(RENAME_EXCHANGE) until killed.
struct Swapper(Child);
impl Swapper {
    fn start(a: &Path, b: &Path) -> Swapper {
        let script = "import ctypes,sys\nlibc=ctypes.CDLL(None,use_errno=True)\na,b=sys.argv[1].encode(),sys.argv[2].encode()\nwhile libc.renameat2(-100,a,-100,b,2)==0: pass\nsys.exit('renameat2 failed')\n";
        let c = Command::new("setpriv")
            .args([
                "--reuid",
                ATTACKER,
                "--regid",
                ATTACKER,
                "--clear-groups",
                "--",
                "/usr/bin/python3",
                "-c",
                script,
            ])
            .arg(a)
            .arg(b)
            .spawn()
            .expect("start the swap loop");
        Swapper(c)
    }
    /// Still swapping (it exits only on a failed renameat2).
    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}
impl Drop for Swapper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const MUNGE_ONLY: &str = "disabled = [\"node.hostname\", \"node.slurm_conf\", \"node.pmix\", \"node.enroot\", \"node.plugstack\", \"node.nccl_env\", \"node.devices\", \"node.gpu\", \"node.imex\"]\n";

/// Issue 26 item 1. Inputs: a shared path holding lgtest's directory; lgtest swaps `l` (a directory
/// holding a 0644 128-byte `munge.key`) with `t` (a symlink to the key's directory) in a loop.
/// Before: `node.munge.shared_copy` reported a world-readable copy at `…/l/munge.key` in some runs,
/// `health` drained, and the fix `shred -u …/l/munge.key` resolved to the real key.
#[test]
fn a_swapped_symlink_to_the_key_directory_is_never_followed_nor_drains() {
    let _g = launchguard_tests::lock();
    let _r = ResumeOnDrop;
    assert!(!state().0.contains("DRAIN"), "node drained before the test");
    let m = Munged::start("u26-munge-race");
    let home = m.dir.join("home");
    let lgdir = home.join(ATTACKER);
    attacker_dir(&lgdir);
    let (l, t) = (lgdir.join("l"), lgdir.join("t"));
    let etc = m.dir.join("etc");
    as_attacker(&["mkdir", l.to_str().unwrap()]);
    as_attacker(&[
        "dd",
        "if=/dev/urandom",
        &format!("of={}", l.join("munge.key").display()),
        "bs=128",
        "count=1",
    ]);
    as_attacker(&["chmod", "0644", l.join("munge.key").to_str().unwrap()]);
    as_attacker(&["ln", "-s", etc.to_str().unwrap(), t.to_str().unwrap()]);
    let cfg = config(
        &m.dir,
        &format!(
            "{MUNGE_ONLY}{}shared_paths = [\"{}\"]\n",
            m.section(),
            home.display()
        ),
    );
    // The smallest, deterministic form: the shared path itself is lgtest's link to the key's
    // directory. Before: a copy "at …/t/munge.key" with the fix `shred -u …/t/munge.key`.
    let direct = config(
        &scratch("u26-munge-direct"),
        &format!(
            "{MUNGE_ONLY}{}shared_paths = [\"{}\"]\n",
            m.section(),
            t.display()
        ),
    );
    let (_, rep) = check(&direct, &["node.munge.shared_copy"]);
    assert_eq!(
        status_of(&rep, "node.munge.shared_copy"),
        "ok",
        "followed lgtest's link: {rep}"
    );

    let mut sw = Swapper::start(&l, &t);
    for i in 0..30 {
        let o = lg(&["health", "--config", &cfg]);
        assert!(
            !o.stdout.contains("shared_copy"),
            "run {i}: reported a copy through lgtest's swap: {o:?}"
        );
        assert!(!state().0.contains("DRAIN"), "run {i}: drained: {o:?}");
    }
    assert!(sw.alive(), "the swap loop stopped");
    drop(sw);
    assert!(
        std::fs::symlink_metadata(m.key.as_path())
            .unwrap()
            .file_type()
            .is_file(),
        "the real key is gone"
    );
}

/// Issue 26 items 1 and 2 (the rule): lgtest holds a real world-readable copy of the key in their
/// own directory. The finding stays CRITICAL (the key is exposed) but lgtest controls whether it is
/// there, so `health` does not drain, and the fix never names a path for root to remove. Before:
/// `drain: Reason=launchguard: node.munge.shared_copy: …` and the fix `shred -u <path>`.
#[test]
fn a_key_copy_a_user_controls_is_reported_not_drained_and_its_fix_runs_as_them() {
    let _g = launchguard_tests::lock();
    let _r = ResumeOnDrop;
    assert!(!state().0.contains("DRAIN"), "node drained before the test");
    let m = Munged::start("u26-munge-copy");
    let home = m.dir.join("home");
    let lgdir = home.join(ATTACKER);
    attacker_dir(&lgdir);
    let copy = lgdir.join("munge.key");
    std::fs::copy(&m.key, &copy).unwrap();
    assert_eq!(cmd(&["chown", ATTACKER, copy.to_str().unwrap()]).code, 0);
    assert_eq!(cmd(&["chmod", "0644", copy.to_str().unwrap()]).code, 0);
    let cfg = config(
        &m.dir,
        &format!(
            "{MUNGE_ONLY}{}shared_paths = [\"{}\"]\n",
            m.section(),
            home.display()
        ),
    );
    let (code, rep) = check(&cfg, &["node.munge.shared_copy"]);
    assert_eq!(code, 2, "{rep}");
    let msg = message_of(&rep, "node.munge.shared_copy");
    assert!(
        msg.contains(&format!("owner uid {}", attacker_uid())),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "runuser -u {ATTACKER} -- shred -u -- {}",
            copy.display()
        )),
        "{msg}"
    );
    assert!(!msg.contains("; shred -u"), "{msg}");
    let line = rep["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "node.munge.shared_copy")
        .unwrap()
        .clone();
    assert!(
        line["user_controlled"]
            .as_str()
            .is_some_and(|w| w.contains(ATTACKER)),
        "{line}"
    );

    let o = lg(&["health", "--config", &cfg]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(
        o.stdout
            .contains("node.munge.shared_copy is CRITICAL but not a drain reason"),
        "{o:?}"
    );
    assert!(!state().0.contains("DRAIN"), "drained: {o:?} {:?}", state());

    // The same copy owned by root in root's directory is root's doing: it drains.
    let admin = m.dir.join("admin");
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::rename(&copy, admin.join("munge.key")).unwrap();
    assert_eq!(
        cmd(&["chown", "root", admin.join("munge.key").to_str().unwrap()]).code,
        0
    );
    let cfg = config(
        &scratch("u26-munge-admin"),
        &format!(
            "{MUNGE_ONLY}{}shared_paths = [\"{}\"]\n",
            m.section(),
            admin.display()
        ),
    );
    let o = lg(&["health", "--config", &cfg]);
    assert!(
        o.stdout
            .contains("drain: Reason=launchguard: node.munge.shared_copy:"),
        "{o:?}"
    );
    assert!(state().0.contains("DRAIN"), "{:?}", state());
}

/// Issue 26 item 2. Input: ENROOT_DATA_PATH `<tmp>/enroot-data/user-$(id -u)` with `<tmp>` a
/// root-owned 1777 directory (as /tmp), and lgtest running `ln -s /nonexistent <tmp>/enroot-data`,
/// then removing it. Before: `drain: Reason=launchguard: node.enroot.storage: … is not a
/// directory`, and the user decided when it came and went.
#[test]
fn a_user_cannot_switch_a_drain_through_enroot_storage() {
    let _g = launchguard_tests::lock();
    let _r = ResumeOnDrop;
    assert!(!state().0.contains("DRAIN"), "node drained before the test");
    let d = scratch("u26-enroot");
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    assert_eq!(cmd(&["chmod", "1777", tmp.to_str().unwrap()]).code, 0);
    let data = tmp.join("enroot-data");
    let conf = d.join("enroot.conf");
    std::fs::write(
        &conf,
        format!(
            "ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)\nENROOT_DATA_PATH {}/user-$(id -u)\n",
            data.display()
        ),
    )
    .unwrap();
    let cfg = config(
        &d,
        &format!(
            "disabled = [\"node.hostname\", \"node.slurm_conf\", \"node.pmix\", \"node.munge\", \"node.plugstack\", \"node.nccl_env\", \"node.devices\", \"node.gpu\", \"node.imex\", \"node.enroot.run_dir\", \"node.enroot.tmpfiles\", \"node.enroot.nvidia_hook\", \"node.enroot.restrict_dev\", \"node.enroot.runtime_path\"]\n[enroot]\nconf = \"{}\"\n",
            conf.display()
        ),
    );
    as_attacker(&["ln", "-s", "/nonexistent", data.to_str().unwrap()]);
    let o = lg(&["health", "--config", &cfg]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(!state().0.contains("DRAIN"), "drained: {o:?}");
    let who = format!("uid {} ({ATTACKER})", attacker_uid());
    assert!(
        o.stdout.contains(&format!(
            "node.enroot.storage is CRITICAL but not a drain reason: it rests on state an unprivileged account controls ({who} owns"
        )),
        "{o:?}"
    );
    let (_, rep) = check(&cfg, &["node.enroot.storage"]);
    let msg = message_of(&rep, "node.enroot.storage");
    assert!(msg.contains(&who), "{msg}");
    assert!(
        msg.contains(&format!("'d {} 1777 root root -'", data.display())),
        "{msg}"
    );
    as_attacker(&["rm", data.to_str().unwrap()]);
    let o = lg(&["health", "--config", &cfg]);
    assert!(!state().0.contains("DRAIN"), "{o:?}");

    // The same fault made by root (a file at the path, root's, in root's sticky directory) is no
    // user's doing: it still drains.
    std::fs::write(&data, "").unwrap();
    let o = lg(&["health", "--config", &cfg]);
    assert!(
        o.stdout
            .contains("drain: Reason=launchguard: node.enroot.storage:"),
        "{o:?}"
    );
    assert!(state().0.contains("DRAIN"), "{:?}", state());
}

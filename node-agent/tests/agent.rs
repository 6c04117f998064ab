//! `launchguard agent` as a real daemon: sd_notify readiness, reports from real sruns (root and the
//! non-root `lgtest`) arriving in `launchguard status`, peer-credential attribution, hostile clients
//! (forged uid, garbage, overlong lines, connection floods) counted and harmless, the Prometheus
//! textfile, and srun going on unharmed when the agent is killed or wedged (SIGSTOP).
#![cfg(slurm_tests)] // needs a running Slurm and root: LG_SLURM_TESTS=1 (tests/slurm_tests_cfg.rs)

mod common;
use common::*;
use launchguard_tests::{lock, plugstack, srun, As};
use serde_json::Value;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Agent {
    child: Child,
    socket: PathBuf,
    dir: PathBuf,
}

impl Agent {
    /// Starts the agent with `extra` config lines and waits for READY=1 on a notify socket.
    fn start(name: &str, extra: &str) -> Agent {
        Agent::start_in(scratch(name), extra)
    }

    /// Starts an agent in an existing directory (its old socket, if any, left in place).
    fn start_in(dir: PathBuf, extra: &str) -> Agent {
        let socket = dir.join("agent.sock");
        let cfg = config(
            &dir,
            &format!(
                "{}textfile = \"{}\"\n{extra}",
                if extra.contains("interval_secs") {
                    ""
                } else {
                    "interval_secs = 1\n"
                },
                dir.join("launchguard.prom").display()
            ),
        );
        let notify = dir.join("notify.sock");
        let _ = std::fs::remove_file(&notify);
        let n = UnixDatagram::bind(&notify).unwrap();
        n.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let child = Command::new(bin())
            .args([
                "agent",
                "--stderr",
                "--config",
                &cfg,
                "--socket",
                socket.to_str().unwrap(),
            ])
            .env("NOTIFY_SOCKET", &notify)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("agent.log")).unwrap())
            .spawn()
            .unwrap();
        let mut buf = [0u8; 256];
        let len = n
            .recv(&mut buf)
            .expect("READY=1 from the agent within 20 s");
        assert!(String::from_utf8_lossy(&buf[..len]).contains("READY=1"));
        Agent { child, socket, dir }
    }

    fn status(&self) -> Value {
        let o = lg(&[
            "status",
            "--json",
            "--limit",
            "100",
            "--socket",
            self.socket.to_str().unwrap(),
        ]);
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"))
    }

    fn signal(&self, sig: &str) {
        cmd(&["kill", sig, &self.child.id().to_string()]);
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.signal("-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn reports(st: &Value) -> Vec<Value> {
    st["reports"].as_array().unwrap().clone()
}

/// Sends raw bytes as user `who` (root or lgtest) with python3, the way a hostile client would.
fn send_as(user: &str, socket: &Path, payload_py: &str) {
    let py = format!(
        "import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall({payload_py}); s.close()",
        socket.display()
    );
    let o = cmd(&["runuser", "-u", user, "--", "python3", "-c", &py]);
    assert_eq!(o.code, 0, "{o:?}");
}

#[test]
fn reports_from_real_sruns_arrive_attributed_and_hostile_clients_are_counted() {
    let _g = lock();
    let a = Agent::start("agent-reports", "");
    plugstack(&format!("mode=warn agent_socket={}", a.socket.display()));

    let good = srun(As::Root, &["-n1", "true"]);
    assert_eq!(good.code, 0, "{good:?}");
    let bad = srun(As::User, &["-n1", "--export=FOO=1", "/bin/true"]);
    assert!(
        bad.stderr.contains("launchguard: launch.export_all"),
        "{bad:?}"
    );

    let uid: u64 = cmd(&["id", "-u", "lgtest"]).stdout.trim().parse().unwrap();
    let mut st = a.status();
    for _ in 0..50 {
        if reports(&st)
            .iter()
            .filter(|r| r["report"]["phase"] == "step")
            .count()
            >= 2
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        st = a.status();
    }
    let rs = reports(&st);
    // srun's own warning, sent by the user's srun and attributed to its uid.
    let srun_side = rs
        .iter()
        .find(|r| r["report"]["phase"] == "srun" && r["report"]["uid"] == uid)
        .unwrap_or_else(|| panic!("no srun report: {st}"));
    assert_eq!(srun_side["peer_uid"], uid);
    assert_eq!(srun_side["report"]["action"], "warned");
    assert_eq!(
        srun_side["report"]["findings"][0]["id"],
        "launch.export_all"
    );
    // Every step, from slurmstepd as root, with its job and the job's user.
    let steps: Vec<&Value> = rs
        .iter()
        .filter(|r| r["report"]["phase"] == "step")
        .collect();
    assert!(
        steps
            .iter()
            .any(|r| r["report"]["uid"] == 0 && r["report"]["action"] == "allowed"),
        "{st}"
    );
    assert!(
        steps.iter().any(|r| r["report"]["uid"] == uid
            && r["peer_uid"] == 0
            && r["report"]["job"].as_u64().is_some()),
        "{st}"
    );

    // A user claiming someone else's uid, garbage, an overlong line, a future version: counted, not stored.
    let before = reports(&st).len();
    let forged = r#"{"v":1,"kind":"launch","phase":"srun","uid":0,"node":"x","mode":"warn","action":"allowed","findings":[]}"#;
    send_as("lgtest", &a.socket, &format!("b'{forged}\\n'"));
    send_as("lgtest", &a.socket, "b'not json\\n{\\x00\\xff}\\n'");
    send_as("lgtest", &a.socket, "b'x' * 70000 + b'\\n'");
    send_as("lgtest", &a.socket, "b'{\"v\":2,\"kind\":\"launch\"}\\n'");
    // A non-root user may not read the status.
    let o = cmd(&[
        "runuser",
        "-u",
        "lgtest",
        "--",
        bin(),
        "status",
        "--socket",
        a.socket.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 3, "{o:?}");
    assert!(o.stderr.contains("root only"), "{o:?}");
    std::thread::sleep(Duration::from_millis(300));
    let st = a.status();
    let d = &st["dropped_total"];
    assert_eq!(d["uid_mismatch"], 1, "{st}");
    assert_eq!(d["bad_json"], 2, "{st}");
    assert_eq!(d["too_long"], 1, "{st}");
    assert_eq!(d["bad_version"], 1, "{st}");
    assert_eq!(d["not_root"], 1, "{st}");
    assert_eq!(
        reports(&st).len(),
        before,
        "a refused report was stored: {st}"
    );

    // The textfile carries the counters and the check status.
    std::thread::sleep(Duration::from_millis(1500));
    let prom = std::fs::read_to_string(a.dir.join("launchguard.prom")).unwrap();
    assert!(
        prom.contains("launchguard_reports_total{action=\"warned\"}"),
        "{prom}"
    );
    assert!(
        prom.contains("launchguard_reports_dropped_total{reason=\"uid_mismatch\"} 1"),
        "{prom}"
    );
    assert!(
        prom.contains("launchguard_check_status{check=\"node.munge.key_mode\"}"),
        "{prom}"
    );
    plugstack("mode=warn");
}

#[test]
fn a_users_connection_flood_with_keepalives_is_capped_cut_and_counted_while_root_gets_answers() {
    let a = Agent::start(
        "agent-flood",
        "[reports]\nmax_connections = 16\nidle_timeout_secs = 1\n",
    );
    // 40 connections from one user, each sending a blank line every 0.2 s for 3 s.
    let py = format!(
        "import socket,time\nss=[]\nfor _ in range(40):\n  s=socket.socket(socket.AF_UNIX); s.connect('{}'); ss.append(s)\n\
         t=time.time()\nwhile time.time()-t<3:\n  for s in ss:\n    try: s.send(b'\\n')\n    except OSError: pass\n  time.sleep(0.2)\n",
        a.socket.display()
    );
    let mut flood = Command::new("runuser")
        .args(["-u", "lgtest", "--", "python3", "-c", &py])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // During the flood, root is answered at once (slots are reserved for root).
    let t = Instant::now();
    let st = a.status();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "status took {:?}",
        t.elapsed()
    );
    assert!(
        st["dropped_total"]["connections"].as_u64().unwrap() >= 30,
        "{st}"
    );
    let _ = flood.wait();
    let st = a.status();
    let d = &st["dropped_total"];
    // One uid holds at most max/16 (at least 4) connections; keep-alive newlines do not extend
    // the idle deadline, so those were cut too.
    assert!(d["connections"].as_u64().unwrap() >= 36, "{st}");
    assert!(d["idle"].as_u64().unwrap() >= 4, "{st}");
}

fn timed_srun() -> (Duration, i32, String) {
    let t = Instant::now();
    let r = srun(As::User, &["-n1", "echo", "ran"]);
    (t.elapsed(), r.code, r.stdout)
}

#[test]
fn srun_goes_on_when_the_agent_is_wedged_or_killed() {
    let _g = lock();
    let mut a = Agent::start("agent-down", "");
    plugstack(&format!("mode=warn agent_socket={}", a.socket.display()));
    let (base, code, out) = timed_srun();
    assert_eq!((code, out.trim()), (0, "ran"));

    // Wedged: the process is stopped, its socket still accepts into the backlog.
    a.signal("-STOP");
    for _ in 0..3 {
        let (t, code, out) = timed_srun();
        assert_eq!((code, out.trim()), (0, "ran"));
        assert!(
            t < base + Duration::from_millis(500),
            "srun took {t:?} with a wedged agent (baseline {base:?})"
        );
    }
    a.signal("-CONT");

    // Killed: the socket file is left behind with nobody listening.
    let _ = a.child.kill();
    let _ = a.child.wait();
    assert!(a.socket.exists());
    for _ in 0..3 {
        let (t, code, out) = timed_srun();
        assert_eq!((code, out.trim()), (0, "ran"));
        assert!(
            t < base + Duration::from_millis(500),
            "srun took {t:?} with a dead agent (baseline {base:?})"
        );
    }
    // And a second agent replaces the stale socket.
    let b = Agent::start_in(a.dir.clone(), "interval_secs = 3600\n");
    let first = b.status()["last_check"]["timestamp"].as_u64().unwrap();
    assert!(b.status()["last_check"]["checks"].as_array().unwrap().len() > 20);
    // On demand: --refresh runs the checks now.
    std::thread::sleep(Duration::from_millis(1100));
    let o = lg(&[
        "status",
        "--refresh",
        "--json",
        "--socket",
        b.socket.to_str().unwrap(),
    ]);
    let st: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    assert!(
        st["last_check"]["timestamp"].as_u64().unwrap() > first,
        "{st}"
    );
    plugstack("mode=warn");
}

#[test]
fn a_user_cannot_forge_slurmstepds_reports_and_their_own_text_is_shown_neutralised() {
    // No Slurm needed: the real agent and a real non-root client (lgtest).
    let a = Agent::start("agent-forged", "");
    let uid: u64 = cmd(&["id", "-u", "lgtest"]).stdout.trim().parse().unwrap();
    // The issue's forgery: a step report for root's job, in lgtest's own uid, and one in root's.
    for claimed in [uid, 0] {
        let forged = format!(
            r#"{{"v":1,"kind":"launch","phase":"step","job":4242,"step":0,"uid":{claimed},"node":"gpu-17","mode":"enforce","action":"rejected","findings":[{{"id":"launch.cpus_per_task","severity":"error","message":"forged"}}]}}"#
        );
        send_as("lgtest", &a.socket, &format!("b'{forged}\\n'"));
    }
    let task = format!(
        r#"{{"v":1,"kind":"launch","phase":"task","job":4242,"step":0,"uid":{uid},"node":"n","mode":"warn","action":"warned","findings":[]}}"#
    );
    send_as("lgtest", &a.socket, &format!("b'{task}\\n'"));
    // An srun report of lgtest's own, carrying a job claim and bidi/zero-width characters.
    let srun = format!(
        r#"{{"v":1,"kind":"launch","phase":"srun","job":4242,"step":0,"uid":{uid},"node":"n\u202e1-upg","mode":"warn","action":"warned","findings":[{{"id":"launch.export_all","severity":"error","message":"ok\u202egnp.exe\u200b done"}}]}}"#
    );
    send_as("lgtest", &a.socket, &format!("b'{srun}\\n'"));
    std::thread::sleep(Duration::from_millis(300));
    let st = a.status();
    assert_eq!(st["dropped_total"]["root_phase"], 3, "{st}");
    let rs = reports(&st);
    assert_eq!(rs.len(), 1, "only the srun report is stored: {st}");
    let r = &rs[0];
    assert_eq!(r["peer_uid"], uid);
    assert!(
        r["report"]["job"].is_null() && r["report"]["step"].is_null(),
        "{r}"
    );
    assert_eq!(r["report"]["node"], "n<U+202E>1-upg");
    assert_eq!(
        r["report"]["findings"][0]["message"],
        "ok<U+202E>gnp.exe<U+200B> done"
    );
    // The table names the sender; the log carries the sender's uid and no bidi character.
    let o = lg(&["status", "--socket", a.socket.to_str().unwrap()]);
    let row = o
        .stdout
        .lines()
        .find(|l| l.contains("launch.export_all"))
        .unwrap_or_else(|| panic!("{o:?}"));
    assert!(row.ends_with(&format!("(from uid {uid})")), "{row}");
    let log = std::fs::read_to_string(a.dir.join("agent.log")).unwrap();
    assert!(
        log.lines().any(|l| l
            .contains("report refused: only slurmstepd (root) sends step and task reports")
            && l.contains(&format!("peer_uid={uid}"))
            && l.contains("claimed_job=4242")),
        "{log}"
    );
    assert!(
        log.lines().any(|l| l.contains("launch warned")
            && l.contains(&format!("peer_uid={uid}"))
            && l.contains("ok<U+202E>gnp.exe<U+200B> done")),
        "{log}"
    );
    assert!(
        !log.contains('\u{202E}') && !log.contains('\u{200B}'),
        "{log}"
    );
}

#[test]
fn fat_reports_are_clipped_so_memory_stays_bounded() {
    let a = Agent::start("agent-fat", "");
    let rss = || -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", a.child.id()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    };
    let before = rss();
    // 1,200 lines of ~56 KB, each a report with 1,200 findings, from root (step) and lgtest (srun).
    let py = format!(
        "import socket,os\nf='{{\"id\":\"x\",\"severity\":\"error\",\"message\":\"m\"}}'\n\
         line=('{{\"v\":1,\"kind\":\"launch\",\"phase\":\"%s\",\"uid\":%d,\"node\":\"n\",\"mode\":\"warn\",\"action\":\"warned\",\"findings\":[' % ('step' if os.getuid() == 0 else 'srun', os.getuid()) + ','.join([f]*1200) + ']}}\\n').encode()\n\
         for _ in range(600):\n  s=socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(line); s.close()\n",
        a.socket.display()
    );
    for user in ["root", "lgtest"] {
        let o = cmd(&["runuser", "-u", user, "--", "python3", "-c", &py]);
        assert_eq!(o.code, 0, "{o:?}");
    }
    std::thread::sleep(Duration::from_millis(500));
    let st = a.status();
    let stored = reports(&st);
    assert!(!stored.is_empty(), "{st}");
    assert!(stored
        .iter()
        .all(|r| r["report"]["findings"].as_array().unwrap().len() <= 8));
    let after = rss();
    assert!(
        after < before + 30 * 1024,
        "RSS grew from {before} kB to {after} kB"
    );
}

/// The agent ran before the plugstack line was added (what the demo and a fresh install do): its
/// last run says "spank_launchguard.so is not listed … launches on this node are not checked". The
/// first step report from slurmstepd proves otherwise, and the agent checks again at once instead of
/// showing the stale warning above the launches until the next interval (here an hour).
#[test]
fn a_launch_report_clears_a_stale_not_listed_warning_at_once() {
    let _g = lock();
    launchguard_tests::no_plugstack();
    let a = Agent::start("agent-stale-order", "interval_secs = 3600\n");
    let order = |st: &Value| -> String {
        st["last_check"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "node.plugstack.order")
            .map(|c| c["status"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    assert_eq!(order(&a.status()), "warning", "{}", a.status());
    plugstack(&format!("mode=warn agent_socket={}", a.socket.display()));
    // Control: the line alone changes nothing until something makes the agent look again.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(order(&a.status()), "warning");
    let r = srun(As::Root, &["-n1", "true"]);
    assert_eq!(r.code, 0, "{r:?}");
    let until = Instant::now() + Duration::from_secs(10);
    let mut st = a.status();
    while order(&st) != "ok" && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
        st = a.status();
    }
    assert_eq!(
        order(&st),
        "ok",
        "still stale 10 s after a step report: {st}"
    );
    let log = std::fs::read_to_string(a.dir.join("agent.log")).unwrap();
    assert!(log.contains("contradicts node.plugstack.order"), "{log}");
}

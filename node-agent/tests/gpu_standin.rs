//! The GPU checks' NVML path end to end on a machine without an NVIDIA GPU: a stand-in
//! `libnvidia-ml.so.1` (`tests/fixtures/nvml_standin/standin.c`, built here with `cc`) loaded through
//! launchguard.toml's `[gpu] nvml_library` by the real binary. It answers like the real H200 (its
//! fixture's values) or with one fault, or never returns from `nvmlInit_v2` (a wedged GPU): then
//! `check`, `health` and the agent must give UNKNOWN with a reason within their deadlines, never
//! hang and never drain; and a process holding `[gpu] nvml_lock` (as one stuck in NVML would) must
//! keep the others out of NVML.

mod common;

use launchguard::gather::gpu::NVML_DEADLINE;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::bin;

/// A scratch directory with the stand-in library built in it and a config that loads it.
struct Standin {
    dir: PathBuf,
    cfg: PathBuf,
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn standin(name: &str) -> Standin {
    let dir = std::env::temp_dir().join(format!("lg-standin-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("launchguard.toml");
    // No slurm.conf: node.gpu.gres has nothing to hold against the stand-in's one GPU.
    std::fs::write(
        &cfg,
        format!(
            "slurm_conf = \"{}/absent-slurm.conf\"\n{}",
            dir.display(),
            common::standin_nvml(&dir)
        ),
    )
    .unwrap();
    Standin { dir, cfg }
}

/// Runs `launchguard ARGS --config CFG` with the stand-in in `mode`, under `timeout 60` (a hang
/// shows as exit 124, not as a hung test), and how long it took.
fn run(s: &Standin, mode: &str, args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let o = Command::new("timeout")
        .arg("60")
        .arg(bin())
        .args(args)
        .arg("--config")
        .arg(&s.cfg)
        .env("LG_STANDIN_NVML", mode)
        .output()
        .unwrap();
    assert_ne!(
        o.status.code(),
        Some(124),
        "launchguard {args:?} hung: {o:?}"
    );
    (o, t.elapsed())
}

fn check_json(s: &Standin, mode: &str) -> (Value, Duration) {
    let (o, took) = run(s, mode, &["check", "--json", "--only", "node.gpu"]);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    (v, took)
}

fn line<'a>(rep: &'a Value, id: &str) -> (&'a str, &'a str) {
    let c = rep["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {rep}"));
    (
        c["status"].as_str().unwrap(),
        c["message"].as_str().unwrap(),
    )
}

#[test]
fn the_standin_answers_like_the_h200_and_its_faults_are_judged() {
    let s = standin("faults");
    let (rep, _) = check_json(&s, "healthy");
    for id in [
        "node.gpu.nvml",
        "node.gpu.row_remap",
        "node.gpu.persistence",
    ] {
        assert_eq!(line(&rep, id).0, "ok", "{id}: {rep}");
    }
    assert_eq!(
        rep["facts"]["gpu_count"], "1 NVIDIA H200 (stand-in)",
        "{rep}"
    );
    let (rep, _) = check_json(&s, "remap_pending");
    let (st, msg) = line(&rep, "node.gpu.row_remap");
    assert_eq!(st, "critical");
    assert!(
        msg.starts_with(
            "launchguard: node.gpu.row_remap: a memory row remap is pending on GPU(s) 0; "
        ),
        "{msg}"
    );
    let (rep, _) = check_json(&s, "pm_off");
    assert_eq!(line(&rep, "node.gpu.persistence").0, "warning", "{rep}");
}

/// Smallest input: NVML's init never returns. `check`, `gpu` and `health --dry-run` each end soon
/// after NVML's deadline with node.gpu.nvml UNKNOWN and its reason; health would not drain.
#[test]
fn a_wedged_nvml_gives_unknown_and_never_hangs_check_gpu_or_health() {
    let s = standin("wedged");
    let (rep, took) = check_json(&s, "block");
    let (st, msg) = line(&rep, "node.gpu.nvml");
    assert_eq!(st, "unknown", "{rep}");
    assert!(
        msg.contains(&format!(
            "NVML did not answer within {} s",
            NVML_DEADLINE.as_secs()
        )),
        "{msg}"
    );
    assert!(
        took >= NVML_DEADLINE,
        "answered before NVML's deadline: {took:?}"
    );
    assert!(
        rep["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] != "critical"),
        "{rep}"
    );
    let (o, _) = run(&s, "block", &["gpu"]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("NVML did not answer within"));
    let (o, _) = run(
        &s,
        "block",
        &["health", "--dry-run", "--node", "lg-no-such-node"],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("would drain"), "{o:?}");
}

/// A process that holds the NVML lock (as one stuck inside NVML on a wedged GPU does) keeps the
/// next ones out of NVML: UNKNOWN naming the lock, not a second process wedged in the driver.
/// Released, NVML is asked again.
#[test]
fn a_held_nvml_lock_keeps_other_processes_out_of_nvml() {
    let s = standin("lock");
    let lock = std::fs::File::create(s.dir.join("nvml.lock")).unwrap();
    let held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| e)
        .unwrap();
    let (rep, _) = check_json(&s, "healthy");
    let (st, msg) = line(&rep, "node.gpu.nvml");
    assert_eq!(st, "unknown", "{rep}");
    assert!(
        msg.contains(&format!(
            "another launchguard process has held {} for over",
            s.dir.join("nvml.lock").display()
        )),
        "{msg}"
    );
    drop(held);
    let (rep, _) = check_json(&s, "healthy");
    assert_eq!(line(&rep, "node.gpu.nvml").0, "ok", "{rep}");
}

/// The agent with a wedged NVML: it stays up and answers `status`, its runs say node.gpu.nvml
/// UNKNOWN (the first after the deadline, later ones at once since the first call never returns),
/// and its textfile says 3 for that check and has no per-GPU series. With the healthy stand-in the
/// textfile has the GPU's series.
#[test]
fn the_agent_survives_a_wedged_nvml_and_its_textfile_has_per_gpu_series() {
    for (mode, expect) in [
        ("block", "launchguard_check_status{check=\"node.gpu.nvml\"} 3"),
        (
            "healthy",
            "launchguard_gpu_info{gpu=\"0\",uuid=\"GPU-00000000-0000-0000-0000-5ba4d1500000\",name=\"NVIDIA H200 (stand-in)\",pci_bus_id=\"00000000:00:06.0\"} 1",
        ),
    ] {
        let s = standin(&format!("agent-{mode}"));
        let prom = s.dir.join("launchguard.prom");
        let sock = s.dir.join("agent.sock");
        let mut cfg = std::fs::read_to_string(&s.cfg).unwrap();
        cfg = format!(
            "interval_secs = 1\ntextfile = \"{}\"\ndisabled = [\"node.munge\", \"node.hostname\", \"node.slurm_conf\", \"node.pmix\", \"node.memlock\", \"node.enroot\", \"node.plugstack\", \"node.nccl_env\", \"node.devices\", \"node.imex\"]\n{cfg}",
            prom.display()
        );
        std::fs::write(&s.cfg, cfg).unwrap();
        let mut agent = Command::new(bin())
            .args(["agent", "--stderr", "--socket"])
            .arg(&sock)
            .arg("--config")
            .arg(&s.cfg)
            .env("LG_STANDIN_NVML", mode)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        struct Kill<'a>(&'a mut std::process::Child);
        impl Drop for Kill<'_> {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let agent = Kill(&mut agent);
        // Wait on the condition (the textfile line), at most a minute.
        let until = Instant::now() + Duration::from_secs(60);
        let text = loop {
            let t = std::fs::read_to_string(&prom).unwrap_or_default();
            if t.lines().any(|l| l == expect) {
                break t;
            }
            assert!(
                Instant::now() < until,
                "no '{expect}' in the textfile within 60 s:\n{t}"
            );
            assert!(
                agent.0.try_wait().unwrap().is_none(),
                "the agent exited ({mode})"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        if mode == "block" {
            assert!(!text.contains("launchguard_gpu_info"), "{text}");
            // The agent answers while NVML stays wedged.
            let o = Command::new("timeout")
                .args(["20", bin(), "status", "--json", "--socket"])
                .arg(&sock)
                .output()
                .unwrap();
            // Exit 3: the last run's worst status is UNKNOWN (status mirrors it).
            assert_eq!(o.status.code(), Some(3), "{o:?}");
            let st: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(line(&st["last_check"], "node.gpu.nvml").0, "unknown", "{st}");
        } else {
            assert!(
                text.contains("launchguard_gpu_remapped_rows{gpu=\"0\",uuid=\"GPU-00000000-0000-0000-0000-5ba4d1500000\",cause=\"correctable\"} 46"),
                "{text}"
            );
        }
    }
}

//! Report ingestion: reports/s the agent sustains from many concurrent clients, and its memory after
//! 1M reports. Run: `cargo bench -p launchguard --bench ingest` (as root; `REPORTS=N`, `CLIENTS=N`).
//!
//! Two client shapes, side by side: one connection per report (what spank_launchguard.so does: connect,
//! send one line, close) and persistent connections streaming lines. Each client thread sends a fixed
//! share; the clock stops when the agent's own counter (`launchguard status`) reaches the total, so
//! what is measured is reports accepted, not bytes written. Targets (issue 4): >= 20,000/s, <= 30 MB RSS.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LINE: &str = r#"{"v":1,"kind":"launch","phase":"step","job":123456,"step":0,"uid":1000,"node":"gpu-017","mode":"warn","action":"warned","findings":[{"id":"launch.cpus_per_task","severity":"error","message":"launchguard: launch.cpus_per_task: this GPU step gets 1 CPU per task: srun has no -c/--cpus-per-task; NCCL bandwidth drops to 1/4-1/10 with no error; add --cpus-per-task=24 to srun (192 CPUs / 8 GPUs)"}]}"#;

fn accepted(sock: &Path) -> u64 {
    let mut s = UnixStream::connect(sock).unwrap();
    s.write_all(b"{\"v\":1,\"kind\":\"status\",\"limit\":0}\n")
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(s), &mut line).unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    v["reports_total"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum()
}

fn rss_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn run(shape: &str, total: u64, clients: u64) -> (f64, u64, u64) {
    let dir = PathBuf::from(format!("/tmp/lg-bench-ingest-{shape}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("agent.sock");
    let cfg = dir.join("launchguard.toml");
    // Checks once an hour: the bench measures ingestion only.
    std::fs::write(
        &cfg,
        "interval_secs = 3600\ntextfile = \"\"\n[reports]\nmax_connections = 1024\n",
    )
    .unwrap();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args([
            "agent",
            "--stderr",
            "--config",
            cfg.to_str().unwrap(),
            "--socket",
            sock.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if UnixStream::connect(&sock).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let rss_start = rss_kb(agent.id(), "VmRSS:");
    let per = total / clients;
    let t = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let sock = sock.clone();
            let shape = shape.to_string();
            std::thread::spawn(move || {
                let line = format!("{LINE}\n");
                if shape == "per-report" {
                    let mut sent = 0;
                    while sent < per {
                        match UnixStream::connect(&sock) {
                            Ok(mut s) => {
                                if s.write_all(line.as_bytes()).is_ok() {
                                    sent += 1;
                                }
                            }
                            Err(_) => std::thread::sleep(Duration::from_micros(200)),
                        }
                    }
                } else {
                    let mut s = UnixStream::connect(&sock).unwrap();
                    let batch = line.repeat(64);
                    for _ in 0..per / 64 {
                        s.write_all(batch.as_bytes()).unwrap();
                    }
                    for _ in 0..per % 64 {
                        s.write_all(line.as_bytes()).unwrap();
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let want = per * clients;
    while accepted(&sock) < want {
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            t.elapsed() < Duration::from_secs(600),
            "agent stopped accepting"
        );
    }
    let secs = t.elapsed().as_secs_f64();
    let rss = rss_kb(agent.id(), "VmRSS:");
    let hwm = rss_kb(agent.id(), "VmHWM:");
    let _ = agent.kill();
    let _ = agent.wait();
    eprintln!("  ({shape}: RSS {rss_start} kB before the reports)");
    (want as f64 / secs, rss, hwm)
}

fn main() {
    let total: u64 = std::env::var("REPORTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let clients: u64 = std::env::var("CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    println!(
        "{total} reports from {clients} concurrent clients, {} bytes each",
        LINE.len() + 1
    );
    println!(
        "{:<32} {:>12} {:>10} {:>10} {:>14}",
        "client shape", "reports/s", "RSS MB", "peak MB", "vs 20,000/s"
    );
    for shape in ["per-report", "persistent"] {
        let (rate, rss, hwm) = run(shape, total, clients);
        println!(
            "{:<32} {:>12.0} {:>10.1} {:>10.1} {:>13.1}x",
            if shape == "per-report" {
                "connect+send+close per report"
            } else {
                "persistent connections"
            },
            rate,
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0,
            rate / 20_000.0
        );
    }
}

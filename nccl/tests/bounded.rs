//! Issue 15: no input may take unbounded memory or time. Non-regular files are refused without
//! blocking, long lines and oversized JSON are capped, and the per-line cost does not grow with
//! the number of hosts, processes or ranks (the budgets below are 20-100x what the scan takes).

use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use launchguard_nccl::file::parse_path;
use launchguard_nccl::parse::{parse_bytes, parse_reader, ParseError, MAX_JSON};

/// Runs `f` on a thread; fails the test if it does not return within `secs`.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("did not finish in time (blocked or unbounded)")
}

#[test]
fn fifo_is_refused_without_blocking() {
    let dir = std::env::temp_dir().join(format!("lg-nccl-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("pipe");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(ok.success());
    let f2 = fifo.clone();
    let r = within(10, move || parse_path(&f2));
    assert_eq!(r, Err(ParseError::NotRegular("a FIFO (named pipe)".into())));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn endless_devices_are_refused() {
    for dev in ["/dev/zero", "/dev/urandom"] {
        let r = within(10, move || parse_path(std::path::Path::new(dev)));
        assert_eq!(
            r,
            Err(ParseError::NotRegular("a character device".into())),
            "{dev}"
        );
    }
}

/// A reader of `len` bytes: `head`, then `fill` repeated.
struct Gen {
    head: Vec<u8>,
    fill: u8,
    left: u64,
    read: u64,
}

impl Read for Gen {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let n = buf.len().min(self.left as usize);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            let at = (self.read as usize) + i;
            *b = *self.head.get(at).unwrap_or(&self.fill);
        }
        self.left -= n as u64;
        self.read += n as u64;
        Ok(n)
    }
}

#[test]
fn a_100_mb_line_without_newline_is_skipped_not_held() {
    // 100 MiB of 'x' without a newline: skipped (counted), never held whole.
    let g = Gen {
        head: b"gpu-1:1:1 [0] NCCL INFO Using network Socket\n".to_vec(),
        fill: b'x',
        left: 100 << 20,
        read: 0,
    };
    let p = within(60, move || parse_reader(g)).unwrap();
    assert_eq!(p.long_lines, 1);
    assert_eq!(p.facts.networks, vec!["Socket"]);
}

#[test]
fn endless_json_stops_at_the_cap() {
    let total = (MAX_JSON as u64) + (16 << 20);
    let g = Gen {
        head: br#"{"results":["#.to_vec(),
        fill: b' ',
        left: total,
        read: 0,
    };
    let r = within(60, move || parse_reader(g));
    assert!(
        matches!(r, Err(ParseError::TooLarge(n)) if n > MAX_JSON as u64),
        "{r:?}"
    );
}

fn timed<T>(what: &str, budget_s: f64, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let v = f();
    let s = t.elapsed().as_secs_f64();
    assert!(s < budget_s, "{what}: {s:.2} s, budget {budget_s} s");
    v
}

#[test]
fn distinct_hosts_and_pids_cost_the_same_per_line() {
    // 200,000 lines, each from another host and pid: quadratic lookups take minutes here.
    let mut text = String::new();
    for i in 0..200_000u32 {
        text.push_str(&format!(
            "gpu-{i:06}:{}:{} [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA\n",
            10_000 + i,
            20_000 + i
        ));
    }
    let p = timed("200k hosts", 10.0, || parse_bytes(text.as_bytes()).unwrap());
    assert_eq!(p.facts.hosts.len(), 200_000);
    assert_eq!(p.facts.process_count(), 200_000);
    assert_eq!(p.facts.gdrdma_connections, 200_000);
}

#[test]
fn many_rank_lines_cost_the_same_per_line() {
    let mut text =
        String::from("# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n");
    for i in 0..100_000u32 {
        text.push_str(&format!(
            "#  Rank {i:5} Group  0 Pid {:6} on gpu-{:05} device  {} [0000:10:00] NVIDIA H100\n",
            1000 + i,
            i / 8,
            i % 8
        ));
    }
    let p = timed("100k rank lines", 10.0, || {
        parse_bytes(text.as_bytes()).unwrap()
    });
    assert_eq!(p.facts.ranks.len(), 100_000);
    assert_eq!(p.facts.hosts.len(), 12_500);
}

#[test]
fn json_with_100k_device_hosts_is_linear() {
    let mut doc = String::from(
        r#"{"version":3,"args":["./all_reduce_perf"],"config":{"nthreads":1,"ngpus":8,"devices":["#,
    );
    for i in 0..100_000u32 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(
            r#"{{"rank":{},"group":0,"pid":{},"hostname":"gpu-{i:06}","device":0,"device_hex":"0000:10:00","device_info":"NVIDIA H100"}}"#,
            i * 8,
            1000 + i
        ));
    }
    doc.push_str(r#"]},"results":[]}"#);
    let p = timed("100k JSON device hosts", 10.0, || {
        parse_bytes(doc.as_bytes()).unwrap()
    });
    assert_eq!(p.facts.hosts.len(), 100_000);
    assert_eq!(p.facts.rank_count(), Some(800_000));
}

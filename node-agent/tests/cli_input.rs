//! Files named on the command line go through one bounded reader: a device or FIFO is refused at
//! once, a file over the limit is refused by its size naming the file and the limit, and an error
//! quotes at most a short excerpt of the file with its control characters made visible.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../nccl/tests/fixtures");

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// `launchguard ARGS` under `timeout 60` (a hang fails the test instead of stalling it).
fn lg(args: &[&str]) -> Out {
    let t = Instant::now();
    let o = Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_launchguard"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("launchguard runs");
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        took: t.elapsed(),
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lg-input-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn log() -> String {
    format!("{FIXTURES}/all_reduce_perf_2gpu_nccl_debug_info.log")
}

#[test]
fn a_device_or_fifo_baseline_is_refused_at_once() {
    // Before: /dev/zero grew without limit, a FIFO without a writer hung.
    let d = scratch("fifo");
    let fifo = d.join("baseline");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for (path, what) in [
        ("/dev/zero", "a character device, not a regular file"),
        (
            fifo.to_str().unwrap(),
            "a FIFO (named pipe), not a regular file",
        ),
    ] {
        let o = lg(&["nccl", "check", "--sku", "x", "--baseline", path, &log()]);
        assert_eq!(o.code, Some(3), "{path}: {}", o.stderr);
        assert!(
            o.stderr
                .contains(&format!("cannot read baseline '{path}': {what}")),
            "{path}: {}",
            o.stderr
        );
        assert!(o.took < Duration::from_secs(20), "{path}: {:?}", o.took);
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_large_baseline_is_refused_by_its_size_and_never_echoed() {
    // Before: a 2 MiB one-line file was read whole and quoted whole in the error.
    let d = scratch("large");
    let big = d.join("baseline");
    std::fs::write(&big, "\u{1b}]52;c;SGVsbG8=\u{7}".repeat(200_000)).unwrap();
    let o = lg(&[
        "nccl",
        "check",
        "--sku",
        "x",
        "--baseline",
        big.to_str().unwrap(),
        &log(),
    ]);
    assert_eq!(o.code, Some(3), "{}", o.stderr);
    assert!(
        o.stderr.contains("larger than the 1 MiB limit"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.len() < 1000, "{} bytes on stderr", o.stderr.len());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_baseline_line_is_quoted_short_and_printable() {
    // Before: the whole line was quoted with its escapes raw (OSC 52 writes the clipboard).
    let d = scratch("bad");
    let f = d.join("baseline");
    let line = format!(
        "p5 all_reduce \u{1b}]52;c;SGVsbG8=\u{7}\u{202e}{}\n",
        "x".repeat(5000)
    );
    std::fs::write(&f, line).unwrap();
    let o = lg(&[
        "nccl",
        "check",
        "--sku",
        "p5",
        "--baseline",
        f.to_str().unwrap(),
        &log(),
    ]);
    assert_eq!(o.code, Some(3), "{}", o.stderr);
    assert!(
        o.stderr.contains("line 1: expected: sku collective"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("<U+202E>"), "{}", o.stderr);
    assert!(
        !o.stderr.contains('\u{1b}')
            && !o.stderr.contains('\u{7}')
            && !o.stderr.contains('\u{202e}'),
        "{:?}",
        o.stderr
    );
    assert!(o.stderr.len() < 1000, "{} bytes on stderr", o.stderr.len());
    assert!(o.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_baseline_on_stdin_is_read_up_to_the_limit() {
    let o = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["nccl", "check", "--sku", "x", "--baseline", "-", &log()])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("cannot read baseline '-': larger than the 1 MiB limit"),
        "{err}"
    );
}

/// A large nccl-tests `-J` file (`devices` devices, `rows` result rows) as nccl-tests writes it.
fn big_json(path: &std::path::Path, devices: u32, rows: u32) -> u64 {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write!(f, r#"{{"version":3,"args":["./build/all_reduce_perf","-b","8"],"env":[],"nccl_version":22809,"config":{{"nthreads":1,"ngpus":8,"devices":["#).unwrap();
    for i in 0..devices {
        let sep = if i > 0 { "," } else { "" };
        write!(f, r#"{sep}{{"rank":{},"group":0,"pid":{},"hostname":"gpu-{i:06}","device":0,"device_hex":"0000:10:00","device_info":"NVIDIA H100"}}"#, i * 8, 1000 + i).unwrap();
    }
    write!(f, r#"]}},"results":["#).unwrap();
    for i in 0..rows {
        let sep = if i > 0 { "," } else { "" };
        let size = 8u64 << (i % 32);
        write!(f, r#"{sep}{{"size":{size},"count":{},"type":"float","redop":"sum","root":"    -1","out_of_place":{{"time":{:.6},"alg_bw":330.370000,"bus_bw":330.370000,"nwrong":0.000000}},"in_place":{{"time":15.830000,"alg_bw":328.290000,"bus_bw":328.290000,"nwrong":0.000000}},"actual_iterations":20,"experiment_name":""}}"#, size / 4, 14.85 + f64::from(i)).unwrap();
    }
    writeln!(f, r#"],"out_of_bounds":{{"count":0,"okay":"true"}},"average_bus_bandwidth":{{"bandwidth":86.7146,"okay":"unchecked"}},"errors":[]}}"#).unwrap();
    f.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn a_large_json_result_takes_a_small_multiple_of_its_size() {
    // Before: a 51 MB -J file took 597 MB (11.6x): the file was held whole and parsed into a tree.
    let d = scratch("json");
    let f = d.join("big.json");
    let size = big_json(&f, 20_000, 160_000);
    assert!(size > 45 << 20, "{size} bytes");
    let o = Command::new(env!("CARGO_BIN_EXE_launchguard"))
        .args(["nccl", "check", f.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("160000 rows"));
    // The largest resident set of any child of this test process: the other tests' children are a
    // few MiB, so this is the big file's run.
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let max_rss = ru.max_rss() as u64 * 1024;
    assert!(
        max_rss < 3 * size,
        "{} MiB resident for a {} MiB file",
        max_rss >> 20,
        size >> 20
    );
    let _ = std::fs::remove_dir_all(&d);
}

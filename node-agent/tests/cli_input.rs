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


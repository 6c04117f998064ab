//! Nothing a job printed reaches the admin's terminal raw: host names from `#  Rank` lines, file
//! names and the example line of `explain -v` arrive with their terminal escapes (OSC 52 writes the
//! clipboard, `ESC [2J` clears the screen) and bidi overrides (U+202E) shown as `<U+001B>`,
//! `<U+202E>`; CSV cells that a spreadsheet would run as a formula start with `'`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../nccl/tests/fixtures");

/// OSC 52 clipboard write, a screen clear, a C1 CSI and a right-to-left override.
const EVIL: &str = "\u{1b}]52;c;SGk=\u{7}\u{1b}[2J\u{9b}31m\u{202e}";

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lg-esc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `launchguard ARGS` run in `dir`; stdout.
fn lg_in(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_launchguard"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("launchguard runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_raw_free(&err);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn assert_raw_free(out: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
        assert!(!out.contains(c), "{c:?} reached the terminal: {out:?}");
    }
}

/// Two nccl-tests outputs whose `#  Rank` lines name `host` (the second one slower).
fn results_naming(dir: &Path, host: &str, names: [&str; 2]) {
    let text =
        std::fs::read_to_string(format!("{FIXTURES}/all_reduce_perf_2gpu_plain.log")).unwrap();
    let text = text.replace(" on         vm device", &format!(" on {host} device"));
    std::fs::write(dir.join(names[0]), &text).unwrap();
    let slow = text.replace("470.94  285.00  285.00", "670.94  200.00  200.00");
    std::fs::write(dir.join(names[1]), slow).unwrap();
}

#[test]
fn outliers_show_escapes_in_host_and_file_names() {
    let d = scratch("outliers");
    let host = format!("vm{EVIL}");
    let bad_name = format!("run{EVIL}.out");
    results_naming(&d, &host, ["a.out", &bad_name]);
    let text = lg_in(&d, &["nccl", "outliers", "--all", "a.out", &bad_name]);
    assert_raw_free(&text);
    assert!(
        text.contains("vm<U+001B>]52;c;SGk=<U+0007><U+001B>[2J<U+009B>31m<U+202E>"),
        "{text}"
    );
    assert!(text.contains("'run<U+001B>]52"), "{text}");
    let csv = lg_in(
        &d,
        &["nccl", "outliers", "--all", "--csv", "a.out", &bad_name],
    );
    assert_raw_free(&csv);
    assert!(csv.contains("<U+202E>"), "{csv}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn csv_cells_never_start_a_formula() {
    let d = scratch("csv");
    results_naming(&d, "=1+2", ["=cmd.out", "@b.out"]);
    let csv = lg_in(
        &d,
        &["nccl", "outliers", "--all", "--csv", "=cmd.out", "@b.out"],
    );
    for line in csv.lines().skip(1) {
        assert!(line.starts_with('\''), "{line}");
        assert!(
            line.ends_with(",'=1+2;'=1+2") || line.ends_with(",'=1+2"),
            "{line}"
        );
    }
    let csv = lg_in(&d, &["nccl", "check", "--csv", "=cmd.out"]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(!rows.is_empty(), "{csv}");
    for line in rows {
        assert!(line.starts_with("'=cmd.out,"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn check_shows_escapes_in_file_and_host_names() {
    let d = scratch("check");
    let bad_name = format!("run{EVIL}.out");
    results_naming(&d, &format!("vm{EVIL}"), ["a.out", &bad_name]);
    let text = lg_in(&d, &["nccl", "check", &bad_name]);
    assert_raw_free(&text);
    assert!(text.contains("== 'run<U+001B>]52;c;SGk=<U+0007>"), "{text}");
    assert!(text.contains("(vm<U+001B>]52"), "{text}");
    // JSON escapes control characters itself
    let json = lg_in(&d, &["nccl", "check", "--json", &bad_name]);
    assert!(
        !json.contains('\u{1b}') && json.contains("\\u001b"),
        "{json}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn explain_verbose_shows_the_example_line_escaped() {
    let d = scratch("explain");
    let line = format!(
        "slurmstepd: error: execve(): /opt/app/bin/solver{EVIL}: No such file or directory\n"
    );
    std::fs::write(d.join("job.out"), line).unwrap();
    let text = lg_in(&d, &["explain", "-v", "job.out"]);
    assert_raw_free(&text);
    assert!(
        text.contains("line 1: slurmstepd: error: execve(): /opt/app/bin/solver<U+001B>]52"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

//! Small I/O helpers with bounds: file reads capped in size and child processes with a deadline
//! (both shared with the plugin and the sweep: `launchguard_core::host`), line reading and
//! last-component globs.

use launchguard_core::host::process::{self, Limits};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// `statfs` magic numbers of network and cluster filesystems.
pub const NETWORK_FS: &[(i64, &str)] = &[
    (0x6969, "nfs"),
    (0x0BD0_0BD0, "lustre"),
    (0xFF53_4D42, "cifs"),
    (0xFE53_4D42, "smb2"),
    (0x4750_4653, "gpfs"),
    (0x6573_5546, "fuse"),
    (0x00C3_6400, "ceph"),
    (0xA501_FCF5, "beegfs"),
];

/// Largest config file read (bytes); a larger one is read up to this size.
pub const MAX_READ: u64 = 4 << 20;

pub use launchguard_core::host::files::{open_regular, read_bytes, read_regular, read_whole};

/// Calls `f(line, cut)` for every line of `r`, without its `\n` or `\r\n`, holding at most `max`
/// bytes of a line: the rest of a longer line is skipped and `cut` is true. Memory stays at `max`
/// bytes whatever the input (an endless line included). Returns the bytes read.
pub fn for_each_line<R: BufRead>(
    mut r: R,
    max: usize,
    mut f: impl FnMut(&[u8], bool),
) -> std::io::Result<u64> {
    let mut buf = Vec::with_capacity(max.min(8 << 10));
    let mut total = 0u64;
    loop {
        buf.clear();
        let n = (&mut r).take(max as u64).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
        let mut cut = false;
        if buf.last() != Some(&b'\n') && n == max {
            // Skip the rest of this line.
            loop {
                let avail = match r.fill_buf() {
                    Ok(a) => a,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if avail.is_empty() {
                    break;
                }
                cut = true;
                match avail.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        r.consume(i + 1);
                        total += i as u64 + 1;
                        break;
                    }
                    None => {
                        let l = avail.len();
                        r.consume(l);
                        total += l as u64;
                    }
                }
            }
        }
        let mut line = buf.as_slice();
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l;
        }
        if let Some(l) = line.strip_suffix(b"\r") {
            line = l;
        }
        f(line, cut);
    }
}

/// Reads a text file of at most [`MAX_READ`] bytes (lossy UTF-8).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    read_bytes(path, MAX_READ).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// `Ok(None)` for a missing file, `Ok(Some(text))`, or the error as a string.
pub fn read_optional(path: &Path) -> Result<Option<String>, String> {
    match read_text(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// Expands a `*`/`?` glob in the last path component (sorted, as plugstack and profile.d order them);
/// a pattern without wildcards is returned as is if it exists.
pub fn glob_last(pattern: &Path) -> Vec<PathBuf> {
    let name = pattern
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        return if pattern.exists() {
            vec![pattern.to_path_buf()]
        } else {
            vec![]
        };
    }
    let dir = pattern.parent().unwrap_or(Path::new("/"));
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| wildcard(&name, &e.file_name().to_string_lossy()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// `*` and `?` matching, as the shell does for one path component (no leading-dot special case
/// beyond not matching `.`/`..`).
pub fn wildcard(pat: &str, s: &str) -> bool {
    if s == "." || s == ".." {
        return false;
    }
    let (p, t): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// What a command the agent starts is for: each has its own deadline ([`child_deadline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    /// `slurmd -V` (the `slurm_version` fact): answered once per installed binary, then kept in
    /// the disk cache; a local program with nothing to wait for but the CPU.
    SlurmdVersion,
    /// `scontrol show config` (the running Slurm's PlugStackConfig): an RPC to slurmctld, kept 10
    /// minutes; a miss (no answer) is not kept, so a controller that does not answer costs every run
    /// this deadline before slurm.conf's own `PlugStackConfig` is taken.
    ScontrolShowConfig,
}

/// How long the agent waits for `child` in a check family that has `check_timeout` in all
/// (launchguard.toml's `check_timeout_secs`, 10 s by default): the deadline follows the family's
/// budget, not a fixed figure, so a node whose programs start slowly (an emulated arm64 node under
/// qemu-user, a VM under QEMU's TCG, a host at a load of 20) can be given more time by that one
/// setting, and the child is killed before the family's own timeout so the family still reports.
/// - `slurmd -V`: the budget less 1 s (at least half of it): 9 s by default. Paid once per binary.
/// - `scontrol show config`: half the budget, 5 s by default: its miss costs every run.
///
/// `launchguard health`'s own scontrol calls (20 s) run outside any family and are not decided
/// here; the SPANK plugin's timeouts are its own and stay short (srun is never slowed).
pub fn child_deadline(child: Child, check_timeout: Duration) -> Duration {
    match child {
        Child::SlurmdVersion => check_timeout
            .saturating_sub(Duration::from_secs(1))
            .max(check_timeout / 2),
        Child::ScontrolShowConfig => check_timeout / 2,
    }
}

/// A finished child: exit success, stdout, stderr.
pub struct Output {
    /// Exited 0.
    pub ok: bool,
    /// Standard output (at most 64 KiB kept).
    pub stdout: Vec<u8>,
    /// Standard error (at most 64 KiB kept).
    pub stderr: String,
}

/// Runs `cmd` with `input` on stdin and a deadline ([`launchguard_core::host::process::run`] with
/// [`Limits::probe`]: 64 KiB of each stream kept); the child is killed at the deadline.
/// Errors: could not start, timed out (message says which).
pub fn run(mut cmd: Command, input: Option<&[u8]>, deadline: Duration) -> Result<Output, String> {
    let f =
        process::run(&mut cmd, input, &Limits::probe(deadline), None).map_err(|e| e.to_string())?;
    if f.timed_out {
        return Err(format!(
            "{:?} did not finish within {} ms",
            cmd.get_program(),
            deadline.as_millis()
        ));
    }
    Ok(Output {
        ok: f.ok(),
        stdout: f.stdout,
        stderr: String::from_utf8_lossy(&f.stderr).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_deadline_follows_the_families_budget() {
        let s = Duration::from_secs;
        // the defaults (check_timeout_secs = 10): 3 s each before
        assert_eq!(child_deadline(Child::SlurmdVersion, s(10)), s(9));
        assert_eq!(child_deadline(Child::ScontrolShowConfig, s(10)), s(5));
        // the longest budget (14 s) gives more; every deadline ends inside the family's budget
        assert_eq!(child_deadline(Child::SlurmdVersion, s(14)), s(13));
        for t in 1..=crate::config::MAX_CHECK_TIMEOUT {
            for c in [Child::SlurmdVersion, Child::ScontrolShowConfig] {
                let d = child_deadline(c, s(t));
                assert!(d < s(t) && d >= s(t) / 2, "{c:?} {t} s: {d:?}");
            }
        }
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("*.conf", "50-launchguard.conf"));
        assert!(!wildcard("*.conf", "50-launchguard.conf.dpkg-old"));
        assert!(wildcard("a?c*", "abcdef"));
        assert!(!wildcard("*", ".."));
    }

    #[test]
    fn lines_are_capped_and_split_on_any_line_end() {
        let mut got = vec![];
        let data = b"a\r\nbbbbbbbbbb\ncc\n\ndd";
        let n = for_each_line(&data[..], 4, |l, cut| got.push((l.to_vec(), cut))).unwrap();
        assert_eq!(n, data.len() as u64);
        let want: Vec<(Vec<u8>, bool)> = vec![
            (b"a".to_vec(), false),
            (b"bbbb".to_vec(), true),
            (b"cc".to_vec(), false),
            (b"".to_vec(), false),
            (b"dd".to_vec(), false),
        ];
        assert_eq!(got, want);
        // A line exactly `max` long with its newline is not cut.
        let mut got = vec![];
        for_each_line(&b"abc\nx"[..], 4, |l, cut| got.push((l.to_vec(), cut))).unwrap();
        assert_eq!(got, vec![(b"abc".to_vec(), false), (b"x".to_vec(), false)]);
    }

    #[test]
    fn a_hung_child_is_killed_at_the_deadline() {
        let e = run(
            Command::new("/nonexistent/lg"),
            None,
            Duration::from_secs(1),
        )
        .err()
        .unwrap();
        assert!(e.starts_with("cannot run \"/nonexistent/lg\": "), "{e}");
        let mut c = Command::new("sleep");
        c.arg("5");
        let t = std::time::Instant::now();
        let e = run(c, None, Duration::from_millis(100)).err().unwrap();
        assert_eq!(e, "\"sleep\" did not finish within 100 ms");
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}

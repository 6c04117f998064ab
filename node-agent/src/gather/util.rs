//! Small I/O helpers with bounds: file reads capped in size, child processes with a deadline, and
//! last-component globs.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Largest config file read (bytes); a larger one is read up to this size.
pub const MAX_READ: u64 = 4 << 20;

/// Opens a regular file for reading without blocking: `O_NONBLOCK` (a FIFO or a device named by
/// mistake, or swapped in after a `stat`, cannot hang the caller), then `fstat` must say regular
/// file. `nofollow` adds `O_NOFOLLOW` for the last component.
fn open_regular(path: &Path, nofollow: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = nix::fcntl::OFlag::O_NONBLOCK;
    if nofollow {
        flags |= nix::fcntl::OFlag::O_NOFOLLOW;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// Reads at most `max` bytes of a regular file, without blocking on a FIFO or device (refused:
/// `/dev/zero` named by mistake costs nothing).
pub fn read_bytes(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let f = open_regular(path, false)?;
    let mut buf = vec![];
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Reads a whole regular file of at most `max` bytes (a config: a cut file would mean something
/// else), without blocking on a FIFO or device: larger files are refused with `FileTooLarge`-like
/// `InvalidData` naming the cap.
pub fn read_whole(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let f = open_regular(path, false)?;
    let mut buf = vec![];
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} KiB", max / 1024),
        ));
    }
    Ok(buf)
}

/// Reads a regular file of at most `max` bytes without following a final symlink and without
/// blocking on a FIFO or device swapped in after the `stat` (`O_NOFOLLOW|O_NONBLOCK`, then `fstat`).
pub fn read_regular(p: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let f = open_regular(p, true)?;
    let mut buf = vec![];
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
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

/// A finished child: exit success, stdout, stderr.
pub struct Output {
    /// Exited 0.
    pub ok: bool,
    /// Standard output (at most 64 KiB kept).
    pub stdout: Vec<u8>,
    /// Standard error (at most 64 KiB kept).
    pub stderr: String,
}

/// Runs `cmd` with `input` on stdin and a deadline; the child is killed at the deadline.
/// Errors: could not start, timed out (message says which).
pub fn run(mut cmd: Command, input: Option<&[u8]>, deadline: Duration) -> Result<Output, String> {
    let what = format!("{:?}", cmd.get_program());
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        use std::io::Write;
        let _ = stdin.write_all(data);
    }
    let start = Instant::now();
    let mut sleep = Duration::from_micros(50);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = vec![];
                let mut err = vec![];
                if let Some(o) = child.stdout.as_mut() {
                    let _ = o.take(64 << 10).read_to_end(&mut out);
                }
                if let Some(e) = child.stderr.as_mut() {
                    let _ = e.take(64 << 10).read_to_end(&mut err);
                }
                return Ok(Output {
                    ok: status.success(),
                    stdout: out,
                    stderr: String::from_utf8_lossy(&err).into_owned(),
                });
            }
            Ok(None) if start.elapsed() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{what} did not finish within {} ms",
                    deadline.as_millis()
                ));
            }
            Ok(None) => {
                std::thread::sleep(sleep);
                sleep = (sleep * 2).min(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("waiting for {what}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wildcard("*.conf", "50-launchguard.conf"));
        assert!(!wildcard("*.conf", "50-launchguard.conf.dpkg-old"));
        assert!(wildcard("a?c*", "abcdef"));
        assert!(!wildcard("*", ".."));
    }

    #[test]
    fn a_hung_child_is_killed_at_the_deadline() {
        let mut c = Command::new("sleep");
        c.arg("5");
        let t = Instant::now();
        let e = run(c, None, Duration::from_millis(100)).err().unwrap();
        assert!(e.contains("did not finish"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}

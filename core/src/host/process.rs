//! Child processes under a deadline, without threads or an async runtime: the child's pipes are
//! made non-blocking and polled with its exit status (every 50 µs at first, backing off to 5 ms),
//! so a full pipe never blocks it and a hung child never holds the caller past the deadline (plus
//! the grace period for `SIGTERM`, plus `linger`).

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How to run a child.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Wall time from the spawn after which the child is signalled.
    pub deadline: Duration,
    /// At the deadline: `None` kills the child at once (`SIGKILL`); `Some(g)` sends `SIGTERM`
    /// (srun then cancels its step) and `SIGKILL` `g` later if it is still there.
    pub term_grace: Option<Duration>,
    /// Bytes kept of stdout and of stderr each; the rest is read and dropped.
    pub max_output: usize,
    /// After the child exits, how long to keep reading pipes that a grandchild still holds open.
    pub linger: Duration,
    /// Told the child's pid with `true` once it is spawned and with `false` right after it is reaped
    /// (on every path): until then the pid names this child (an unreaped child's pid cannot be
    /// reused), so another thread of the caller may signal it while announced. `None`: nobody is told.
    pub on_child: Option<fn(u32, bool)>,
    /// Judges each complete line of stderr as it arrives: `true` ends the child early, as at the
    /// deadline (`SIGTERM`, then `SIGKILL` after [`Limits::term_grace`]) with [`Finished::stopped`]
    /// set; for `srun`, whose `Job step aborted: Waiting up to N seconds` would otherwise hold the
    /// caller until slurmctld notices the node that refused the launch. `None`: never.
    pub stop_on_stderr: Option<fn(&str) -> bool>,
}

impl Limits {
    /// Killed at `deadline`, 64 KiB of each stream kept, 200 ms of lingering output read: for
    /// short probes (`munge`, `scontrol`, `slurmd -C`).
    pub fn probe(deadline: Duration) -> Limits {
        Limits {
            deadline,
            term_grace: None,
            max_output: 64 << 10,
            linger: Duration::from_millis(200),
            on_child: None,
            stop_on_stderr: None,
        }
    }

    /// `SIGTERM` at `deadline` (srun then cancels its step) and `SIGKILL` 2 s later, all output
    /// kept, 2 s of lingering output read: for Slurm clients that run jobs (`srun`, `sbatch`,
    /// `sinfo` in the sweep).
    pub fn slurm_client(deadline: Duration) -> Limits {
        Limits {
            deadline,
            term_grace: Some(Duration::from_secs(2)),
            max_output: usize::MAX,
            linger: Duration::from_secs(2),
            on_child: None,
            stop_on_stderr: None,
        }
    }
}

/// What a child did.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status (`None`: it could not be waited for after the kill).
    pub status: Option<ExitStatus>,
    /// Standard output, at most [`Limits::max_output`] bytes (empty when streamed by lines).
    pub stdout: Vec<u8>,
    /// Standard error, at most [`Limits::max_output`] bytes.
    pub stderr: Vec<u8>,
    /// Whether the deadline passed and the child was signalled.
    pub timed_out: bool,
    /// Whether a stderr line met [`Limits::stop_on_stderr`] and the child was signalled for it.
    pub stopped: bool,
    /// Wall time from the spawn to the end of reading.
    pub elapsed: Duration,
}

impl Finished {
    /// Exited with code 0.
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The exit code (`None`: killed by a signal, ours after the deadline included).
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Why a child could not be run or waited for.
#[derive(Debug)]
pub enum RunError {
    /// The spawn failed (`program` is the `{:?}` form of the program).
    Spawn {
        /// The program, quoted.
        program: String,
        /// The spawn's error.
        source: std::io::Error,
    },
    /// `waitpid` failed.
    Wait {
        /// The program, quoted.
        program: String,
        /// The error.
        source: std::io::Error,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn { program, source } => write!(f, "cannot run {program}: {source}"),
            RunError::Wait { program, source } => write!(f, "waiting for {program}: {source}"),
        }
    }
}

impl std::error::Error for RunError {}

fn nonblocking(fd: &impl AsRawFd) {
    if let Ok(fl) = fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL) {
        let fl = OFlag::from_bits_truncate(fl) | OFlag::O_NONBLOCK;
        let _ = fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(fl));
    }
}

/// One output pipe being read.
struct Stream<R> {
    pipe: Option<R>,
    kept: Vec<u8>,
    max: usize,
    /// Streaming by lines: the current partial line.
    line: Option<Vec<u8>>,
}

impl<R: Read> Stream<R> {
    fn new(pipe: Option<R>, max: usize, by_lines: bool) -> Stream<R> {
        Stream {
            pipe,
            kept: vec![],
            max,
            line: by_lines.then(Vec::new),
        }
    }

    /// Reads what is there (at most 1 MiB, so a flood cannot keep us from the deadline); lines go to
    /// `on_line`. Returns whether anything was read.
    fn pump(&mut self, on_line: &mut Option<&mut dyn FnMut(&str)>) -> bool {
        let Some(mut p) = self.pipe.take() else {
            return false;
        };
        let mut buf = [0u8; 16 << 10];
        let mut got = 0usize;
        let mut open = true;
        while got < 1 << 20 {
            match p.read(&mut buf) {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(n) => {
                    got += n;
                    self.take(&buf[..n], on_line);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    open = false;
                    break;
                }
            }
        }
        if open {
            self.pipe = Some(p);
        } else {
            self.flush(on_line);
        }
        got > 0
    }

    fn take(&mut self, data: &[u8], on_line: &mut Option<&mut dyn FnMut(&str)>) {
        match (self.line.as_mut(), on_line.as_mut()) {
            (Some(line), Some(f)) => {
                for chunk in data.split_inclusive(|b| *b == b'\n') {
                    line.extend_from_slice(chunk);
                    if chunk.ends_with(b"\n") {
                        emit(line, f);
                    } else if line.len() > self.max {
                        // An endless line: keep its first `max` bytes only.
                        line.truncate(self.max);
                    }
                }
            }
            _ => {
                let room = self.max.saturating_sub(self.kept.len());
                self.kept.extend_from_slice(&data[..data.len().min(room)]);
            }
        }
    }

    fn flush(&mut self, on_line: &mut Option<&mut dyn FnMut(&str)>) {
        if let (Some(line), Some(f)) = (self.line.as_mut(), on_line.as_mut()) {
            if !line.is_empty() {
                emit(line, f);
            }
        }
    }
}

fn emit(line: &mut Vec<u8>, f: &mut &mut dyn FnMut(&str)) {
    let s = String::from_utf8_lossy(line);
    f(s.trim_end_matches(['\n', '\r']));
    line.clear();
}

/// Sends `SIGKILL` to `pid`, for a pid a [`Limits::on_child`] hook was told is running (errors, e.g.
/// a child that has just exited, are ignored).
pub fn sigkill(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Runs `cmd` with `input` on its stdin (none: `/dev/null`) under `limits`, returning its exit
/// status, what it printed and whether it was killed at the deadline. With `on_line`, each stdout
/// line (without its `\n`/`\r\n`, lossily decoded) is handed over as it arrives and
/// [`Finished::stdout`] stays empty. The command's own stdio settings are replaced.
///
/// Errors: [`RunError::Spawn`] when it cannot start, [`RunError::Wait`] when waiting fails. A child
/// past its deadline is not an error: [`Finished::timed_out`] says so.
pub fn run(
    cmd: &mut Command,
    input: Option<&[u8]>,
    limits: &Limits,
    mut on_line: Option<&mut dyn FnMut(&str)>,
) -> Result<Finished, RunError> {
    let program = format!("{:?}", cmd.get_program());
    let start = Instant::now();
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| RunError::Spawn {
            program: program.clone(),
            source,
        })?;
    let pid = child.id();
    if let Some(f) = limits.on_child {
        f(pid, true);
    }
    let withdraw = || {
        if let Some(f) = limits.on_child {
            f(pid, false);
        }
    };
    let mut stdin = child.stdin.take();
    let mut pending = input.unwrap_or_default();
    if let Some(s) = &stdin {
        nonblocking(s);
    }
    let mut out = Stream::new(child.stdout.take(), limits.max_output, on_line.is_some());
    let mut err = Stream::new(child.stderr.take(), limits.max_output, false);
    if let Some(p) = &out.pipe {
        nonblocking(p);
    }
    if let Some(p) = &err.pipe {
        nonblocking(p);
    }
    let mut timed_out = false;
    let mut stopped = false;
    // Bytes of stderr already judged by `stop_on_stderr` (only complete lines are).
    let mut judged = 0usize;
    let mut termed_at: Option<Instant> = None;
    let mut sleep = Duration::from_micros(50);
    let status = loop {
        // Feed stdin as the child takes it; at the end (or when it stops reading), close it.
        if let Some(s) = stdin.as_mut() {
            loop {
                if pending.is_empty() {
                    stdin = None;
                    break;
                }
                match s.write(pending) {
                    Ok(0) => {
                        stdin = None;
                        break;
                    }
                    Ok(n) => pending = &pending[n..],
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => {
                        stdin = None;
                        break;
                    }
                }
            }
        }
        let read = out.pump(&mut on_line) | err.pump(&mut None);
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(source) => {
                let _ = child.kill();
                let _ = child.wait();
                withdraw();
                return Err(RunError::Wait { program, source });
            }
        }
        if let Some(stop) = limits.stop_on_stderr.filter(|_| !stopped) {
            if let Some(end) = err.kept[judged..].iter().rposition(|b| *b == b'\n') {
                let lines = String::from_utf8_lossy(&err.kept[judged..judged + end]).into_owned();
                judged += end + 1;
                stopped = lines.lines().any(stop);
            }
        }
        let now = Instant::now();
        if stopped || now.duration_since(start) >= limits.deadline {
            timed_out |= !stopped;
            match (limits.term_grace, termed_at) {
                (Some(_), None) => {
                    termed_at = Some(now);
                    if let Ok(pid) = i32::try_from(child.id()) {
                        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
                    }
                }
                (Some(g), Some(t)) if now.duration_since(t) < g => {}
                _ => {
                    let _ = child.kill();
                    break child.wait().ok();
                }
            }
        }
        if read {
            sleep = Duration::from_micros(50);
        } else {
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(Duration::from_millis(5));
        }
    };
    withdraw();
    drop(stdin);
    // What the pipes still hold after the exit; bounded, as a grandchild may keep them open.
    let until = Instant::now() + limits.linger;
    let mut sleep = Duration::from_micros(50);
    while out.pipe.is_some() || err.pipe.is_some() {
        let read = out.pump(&mut on_line) | err.pump(&mut None);
        if Instant::now() >= until {
            break;
        }
        if !read {
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(Duration::from_millis(5));
        }
    }
    out.flush(&mut on_line);
    Ok(Finished {
        status,
        stdout: out.kept,
        stderr: err.kept,
        timed_out,
        stopped,
        elapsed: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_hung_child_is_killed_at_the_deadline() {
        let t = Instant::now();
        let f = run(
            Command::new("sleep").arg("5"),
            None,
            &Limits::probe(Duration::from_millis(100)),
            None,
        )
        .unwrap();
        assert!(f.timed_out && !f.ok() && f.code().is_none());
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }

    #[test]
    fn sigterm_comes_first_and_sigkill_after_the_grace() {
        // A child that ignores SIGTERM is killed after the grace; one that does not ends at SIGTERM.
        let limits = Limits {
            deadline: Duration::from_millis(100),
            term_grace: Some(Duration::from_millis(300)),
            max_output: 1 << 20,
            linger: Duration::from_millis(100),
            on_child: None,
            stop_on_stderr: None,
        };
        let t = Instant::now();
        let f = run(&mut sh("trap '' TERM; sleep 5"), None, &limits, None).unwrap();
        assert!(f.timed_out);
        let e = t.elapsed();
        assert!(
            e >= Duration::from_millis(400) && e < Duration::from_secs(3),
            "{e:?}"
        );
        let f = run(
            &mut sh("trap 'echo term; exit 7' TERM; sleep 5 & wait"),
            None,
            &limits,
            None,
        )
        .unwrap();
        assert!(f.timed_out);
        assert_eq!(f.code(), Some(7));
        assert_eq!(f.stdout, b"term\n");
    }

    #[test]
    fn a_stderr_line_can_end_the_child_early_and_is_kept() {
        fn aborted(l: &str) -> bool {
            l.contains("step aborted")
        }
        let limits = Limits {
            stop_on_stderr: Some(aborted),
            term_grace: Some(Duration::from_millis(300)),
            ..Limits::slurm_client(Duration::from_secs(20))
        };
        let t = Instant::now();
        let f = run(
            &mut sh("echo out; echo 'half a line' >&2; sleep 0.2; echo 'srun: Job step aborted: Waiting up to 32 seconds' >&2; exec sleep 20"),
            None,
            &limits,
            None,
        )
        .unwrap();
        assert!(f.stopped && !f.timed_out, "{f:?}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(f.stdout, b"out\n");
        assert!(String::from_utf8_lossy(&f.stderr).ends_with("Waiting up to 32 seconds\n"));
        // No matching line: runs to its end.
        let f = run(&mut sh("echo fine >&2"), None, &limits, None).unwrap();
        assert!(f.ok() && !f.stopped && !f.timed_out);
    }

    #[test]
    fn slurm_clients_keep_all_their_output() {
        let f = run(
            &mut sh("head -c 200000 /dev/zero"),
            None,
            &Limits::slurm_client(Duration::from_secs(10)),
            None,
        )
        .unwrap();
        assert!(f.ok());
        assert_eq!(f.stdout.len(), 200_000);
    }

    #[test]
    fn a_large_output_never_blocks_the_child_and_is_capped() {
        // 1 MiB on each stream: more than a pipe holds, so an unread pipe would stall the child.
        let f = run(
            &mut sh("head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2; echo done >&2"),
            None,
            &Limits::probe(Duration::from_secs(10)),
            None,
        )
        .unwrap();
        assert!(f.ok() && !f.timed_out);
        assert_eq!(f.stdout.len(), 64 << 10);
        assert_eq!(f.stderr.len(), 64 << 10);
    }

    #[test]
    fn stdin_is_fed_and_lines_stream_before_the_end() {
        let f = run(
            &mut Command::new("cat"),
            Some(b"a\nb"),
            &Limits::probe(Duration::from_secs(5)),
            None,
        )
        .unwrap();
        assert!(f.ok());
        assert_eq!(f.stdout, b"a\nb");
        let mut lines = vec![];
        let mut first_at = None;
        let t = Instant::now();
        let mut on = |l: &str| {
            first_at.get_or_insert(t.elapsed());
            lines.push(l.to_string());
        };
        let f = run(
            &mut sh("printf 'one\\r\\n'; sleep 0.5; printf 'two\\nthree'"),
            None,
            &Limits::probe(Duration::from_secs(5)),
            Some(&mut on),
        )
        .unwrap();
        assert!(f.ok() && f.stdout.is_empty());
        assert_eq!(lines, ["one", "two", "three"]);
        assert!(
            first_at.unwrap() < Duration::from_millis(400),
            "{first_at:?}"
        );
    }

    #[test]
    fn a_missing_program_is_a_spawn_error_naming_it() {
        let e = run(
            &mut Command::new("/nonexistent/lg-prog"),
            None,
            &Limits::probe(Duration::from_secs(1)),
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot run \"/nonexistent/lg-prog\": "),
            "{e}"
        );
    }

    #[test]
    fn a_grandchild_holding_the_pipes_does_not_hold_the_caller() {
        let t = Instant::now();
        let f = run(
            &mut sh("sleep 5 & echo started"),
            None,
            &Limits::probe(Duration::from_secs(5)),
            None,
        )
        .unwrap();
        assert!(f.ok() && !f.timed_out);
        assert_eq!(f.stdout, b"started\n");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
}

//! The Slurm jobs a sweep owns, and cancelling them on every way out: a normal end, an error,
//! Ctrl-C (SIGINT), SIGTERM or SIGHUP, and a job-creating command (`sbatch`, `srun`) that was killed
//! or failed after slurmctld may already have accepted its job.
//!
//! Ownership is by job ID only: an ID is recorded the moment `sbatch --parsable` prints it
//! ([`own`]), and forgotten once Slurm reports the job ended ([`release`]). A job whose ID never
//! reached us (its `sbatch` was killed at our deadline or by a signal after slurmctld accepted it)
//! carries this process' job name, unique per run (`lg-nccl-<pid>-<nonce>`, [`job_name`]); the
//! cleanup asks `squeue --name=<that name> --user=<us>` for the IDs and cancels exactly those. No
//! job is ever cancelled by user or partition.
//!
//! The signal thread (signal-hook's iterator: the handler itself only writes to a pipe) stops new
//! submissions, waits briefly for a submission in flight to print its ID, kills the Slurm clients
//! still running (a signal sent to the sweep alone does not reach them: an `sbatch` stuck before
//! slurmctld answered would otherwise submit its job after we exit), gives slurmctld a moment for a
//! request such a client had already sent, cancels, and exits with 128 + the signal number, as a
//! shell reports a process killed by it.

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::children;
use crate::slurm;

#[derive(Default)]
struct Owned {
    /// Job IDs sbatch printed that have not been seen ending.
    ids: BTreeSet<String>,
    /// This run's job names.
    names: BTreeSet<String>,
    /// A job-creating command ended without telling us its job's fate: look jobs up by name.
    unsure: bool,
}

static OWNED: Mutex<Owned> = Mutex::new(Owned {
    ids: BTreeSet::new(),
    names: BTreeSet::new(),
    unsure: false,
});
static EXITING: AtomicBool = AtomicBool::new(false);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

fn owned() -> std::sync::MutexGuard<'static, Owned> {
    OWNED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A job name unique to this run (`<prefix>-<pid>-<nonce>`), recorded as ours.
pub fn job_name(prefix: &str) -> String {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or(0);
    let name = format!("{prefix}-{}-{nonce:08x}", std::process::id());
    owned().names.insert(name.clone());
    name
}

/// Records a job ID sbatch printed.
pub fn own(id: &str) {
    if !id.is_empty() {
        owned().ids.insert(id.to_string());
    }
}

/// Forgets a job Slurm reported ended (or that we cancelled).
pub fn release(id: &str) {
    owned().ids.remove(id);
}

/// Says that a job-creating command ended without a job ID or a clean exit (killed at its deadline,
/// refused after a timeout): its job, if slurmctld accepted one, is found by name at cleanup.
pub fn unsure() {
    owned().unsure = true;
}

/// Whether a signal asked us to stop (no new jobs are submitted then).
pub fn exiting() -> bool {
    EXITING.load(Ordering::SeqCst)
}

/// Held while a job-creating command runs; `None` when the sweep is exiting (submit nothing).
pub struct Submitting(());

impl Submitting {
    /// Starts a submission, unless a signal arrived.
    pub fn start() -> Option<Submitting> {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        if exiting() {
            IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Submitting(()))
    }
}

impl Drop for Submitting {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The job IDs in `squeue -h -o '%i|%j'` output whose name is one of `names`.
pub fn ids_named(squeue: &str, names: &BTreeSet<String>) -> Vec<String> {
    squeue
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, n)| names.contains(n.trim()))
        .map(|(id, _)| id.trim().to_string())
        .filter(|id| !id.is_empty())
        .collect()
}

/// Cancels every job this run owns: the recorded IDs, and (after a signal or an unsure submission)
/// the IDs squeue lists under this run's names. Returns the IDs cancelled. Bounded by `budget`.
pub fn cancel_owned(budget: Duration, by_name: bool) -> Vec<String> {
    let until = Instant::now() + budget;
    let left = || {
        until
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(500))
    };
    let (mut ids, names, unsure) = {
        let o = owned();
        (o.ids.clone(), o.names.clone(), o.unsure)
    };
    if (by_name || unsure) && !names.is_empty() {
        let user = current_user();
        let list: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut c = Command::new("squeue");
        c.args(["-h", "-t", "all", "-o", "%i|%j", "--user", &user])
            .arg(format!("--name={}", list.join(",")));
        if let Ok(o) = slurm::run(&mut c, left().min(Duration::from_secs(10))) {
            if o.code == Some(0) {
                // Finished jobs are listed too (-t all); scancel of an ended job is harmless.
                ids.extend(ids_named(&o.stdout, &names));
            }
        }
    }
    if ids.is_empty() {
        return Vec::new();
    }
    let ids: Vec<String> = ids.into_iter().collect();
    cancel_within(&ids, left().min(Duration::from_secs(10)));
    ids
}

/// `scancel IDS`, forgetting them only when scancel answered in time and exited 0: a failed or
/// timed-out cancel keeps them owned, so the next cleanup (the [`Guard`] at the latest) tries again.
/// Returns whether it succeeded.
pub fn cancel(ids: &[String]) -> bool {
    cancel_within(ids, Duration::from_secs(10))
}

fn cancel_within(ids: &[String], timeout: Duration) -> bool {
    if ids.is_empty() {
        return true;
    }
    let done = matches!(
        slurm::run(Command::new("scancel").args(ids), timeout),
        Ok(o) if o.code == Some(0) && !o.timed_out
    );
    if done {
        let mut o = owned();
        for id in ids {
            o.ids.remove(id);
        }
    }
    done
}

/// Our real uid, as squeue's `--user` takes it (numeric: `$USER` may name someone else after `su`,
/// or be unset). The owner of `/proc/self` is this process' effective uid, which is what Slurm
/// records as a job's owner.
fn current_user() -> String {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid().to_string())
        .unwrap_or_else(|_| "0".into())
}

/// Cancels what is still owned when dropped: every return and early error of a sweep, and an
/// unwinding panic.
pub struct Guard(());

impl Guard {
    /// Arms the cleanup for this sweep and starts the signal thread (once per process).
    pub fn arm() -> Guard {
        static HANDLERS: std::sync::Once = std::sync::Once::new();
        HANDLERS.call_once(install_signal_thread);
        Guard(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        cancel_owned(Duration::from_secs(15), false);
        // After a signal the signal thread ends the process (it kills our Slurm clients, so the
        // sweep may return early with an error of its own): wait for it, so the exit status is
        // 128 + the signal and its "stopped; cancelled …" line is printed, not the sweep's error.
        // Bounded: the thread's own steps take at most ~30 s.
        let until = Instant::now() + Duration::from_secs(60);
        while exiting() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn install_signal_thread() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("launchguard: sweep: cannot handle signals ({e}); an interrupted sweep may leave its jobs to their time limit");
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            children::on_signal_thread();
            EXITING.store(true, Ordering::SeqCst);
            // A submission in flight prints its job ID within milliseconds; a hung one is found by
            // name below.
            let until = Instant::now() + Duration::from_secs(3);
            while IN_FLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            // What is still running cannot submit after we are gone; a request it had already sent
            // is handled by slurmctld within this second and then found by name below.
            if children::kill_all() > 0 {
                std::thread::sleep(Duration::from_secs(1));
            }
            let name = match sig {
                SIGINT => "SIGINT",
                SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            let ids = cancel_owned(Duration::from_secs(15), true);
            // Written without panicking: after SIGHUP the terminal may be gone (EIO), and a panic
            // here would skip the exit below.
            use std::io::Write;
            let mut err = std::io::stderr();
            if ids.is_empty() {
                let _ = writeln!(
                    err,
                    "launchguard: sweep: {name}: stopped; no job of this sweep was left"
                );
            } else {
                let _ = writeln!(
                    err,
                    "launchguard: sweep: {name}: stopped; cancelled this sweep's jobs {}",
                    ids.join(",")
                );
            }
            std::process::exit(128 + sig);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_jobs_under_our_names_are_picked() {
        let names: BTreeSet<String> = ["lg-nccl-42-0000beef".to_string()].into();
        let q = "101|lg-nccl-42-0000beef\n102|lg-nccl-42-0000beee\n103|someone-else\n104| lg-nccl-42-0000beef \n|lg-nccl-42-0000beef\n";
        assert_eq!(ids_named(q, &names), vec!["101", "104"]);
    }

    #[test]
    fn names_are_unique_per_call_and_carry_the_pid() {
        let a = job_name("lg-test");
        std::thread::sleep(Duration::from_millis(2));
        let b = job_name("lg-test");
        assert!(
            a.starts_with(&format!("lg-test-{}-", std::process::id())),
            "{a}"
        );
        assert_ne!(a, b);
    }

    #[test]
    fn a_submission_is_refused_once_exiting() {
        assert!(Submitting::start().is_some());
        assert_eq!(IN_FLIGHT.load(Ordering::SeqCst), 0);
    }
}

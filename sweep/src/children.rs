//! The Slurm clients the sweep is running now, so that the signal thread can kill them: an `sbatch`
//! stuck before slurmctld answered would otherwise submit its job after the sweep has exited (a
//! signal sent to the sweep alone does not reach its children). Fed by the process runner's
//! [`launchguard_core::host::process::Limits::on_child`] hook ([`child`]); used by `cleanup`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Pids of the Slurm clients running now (see [`child`]).
static CHILDREN: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
/// Set (under the CHILDREN lock) once the signal thread killed the clients: a client the sweep's
/// other threads start later is killed the moment it is announced.
static KILLING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// True on the signal thread, whose own squeue and scancel must run.
    static SIGNAL_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as the signal thread: the clients it starts are never killed here.
pub fn on_signal_thread() {
    SIGNAL_THREAD.with(|t| t.set(true));
}

/// The process runner's [`launchguard_core::host::process::Limits::on_child`] hook for every Slurm
/// client the sweep runs: `running` is true from the spawn to the reaping.
pub fn child(pid: u32, running: bool) {
    let mut c = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    if running {
        c.insert(pid);
        if KILLING.load(Ordering::SeqCst) && !SIGNAL_THREAD.with(|t| t.get()) {
            launchguard_core::host::process::sigkill(pid);
        }
    } else {
        c.remove(&pid);
    }
}

/// Kills the Slurm clients still running, and every one started from now on by another thread;
/// returns how many were running. The lock is held while killing, so no pid is withdrawn (and
/// reaped, and reused) in between.
pub fn kill_all() -> usize {
    let c = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    KILLING.store(true, Ordering::SeqCst);
    for &pid in c.iter() {
        launchguard_core::host::process::sigkill(pid);
    }
    c.len()
}

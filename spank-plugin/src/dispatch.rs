//! The five SPANK callbacks the plugin exports, and where each one goes: the module for its context
//! (the Pyxis layout: one file per side). Each exported symbol hands Slurm's arguments to
//! [`ffi::guard`] (panics caught, verdict turned into SPANK's return code); each function below
//! returns `true` to let the launch go on and `false` to stop it.
//!
//! No `slurm_spank_job_prolog`/`epilog` is exported on purpose (see [`crate::ffi`]).

use crate::ffi::{self, Context, RawArgv, RawSpank, Spank};
use std::ffi::c_int;

// `#[no_mangle]` counts as unsafe code for the `unsafe_code` lint (two exported symbols of one name
// would clash at link time); these five are the names Slurm's SPANK loader looks up (spank.h), and
// they hold no `unsafe` block: every raw pointer is read in `ffi`.

/// SPANK callback: when the plugin stack is loaded, before option processing, in every context.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn slurm_spank_init(sp: RawSpank, ac: c_int, av: RawArgv) -> c_int {
    ffi::guard("init", sp, ac, av, init)
}

/// SPANK callback: after option processing, in srun, sbatch/salloc and slurmstepd.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn slurm_spank_init_post_opt(sp: RawSpank, ac: c_int, av: RawArgv) -> c_int {
    ffi::guard("init_post_opt", sp, ac, av, init_post_opt)
}

/// SPANK callback: in slurmstepd, once per step on each node, as root before the tasks fork.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn slurm_spank_user_init(sp: RawSpank, ac: c_int, av: RawArgv) -> c_int {
    ffi::guard("user_init", sp, ac, av, user_init)
}

/// SPANK callback: in each forked task, as root, inside the step's cgroup, before the user's code.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn slurm_spank_task_init_privileged(sp: RawSpank, ac: c_int, av: RawArgv) -> c_int {
    ffi::guard("task_init_privileged", sp, ac, av, task_init_privileged)
}

/// SPANK callback: in each task, as the user, just before execve (inside the container when listed
/// after Pyxis).
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn slurm_spank_task_init(sp: RawSpank, ac: c_int, av: RawArgv) -> c_int {
    ffi::guard("task_init", sp, ac, av, task_init)
}

/// `slurm_spank_init`: srun only ([`crate::srun::init`], the pmix check on releases whose srun loads
/// its MPI plugin before `init_post_opt`); nothing elsewhere.
pub fn init(sp: &Spank) -> bool {
    match sp.context() {
        Context::Local => crate::srun::init(sp),
        _ => true,
    }
}

/// `slurm_spank_init_post_opt`: srun → [`crate::srun`], sbatch/salloc → [`crate::allocator`].
/// In slurmstepd nothing happens here: messages from remote `init_post_opt` never reach the user and a
/// rejection there leaves srun's exit code 0 (docs/spank.md, "Rejecting and warning"), so the step is judged in `user_init`.
pub fn init_post_opt(sp: &Spank) -> bool {
    match sp.context() {
        Context::Local => crate::srun::init_post_opt(sp),
        Context::Allocator => crate::allocator::init_post_opt(sp),
        _ => true,
    }
}

/// `slurm_spank_user_init` (slurmstepd only).
pub fn user_init(sp: &Spank) -> bool {
    match sp.context() {
        Context::Remote => crate::stepd::user_init(sp),
        _ => true,
    }
}

/// `slurm_spank_task_init_privileged` (slurmstepd's task child only).
pub fn task_init_privileged(sp: &Spank) -> bool {
    match sp.context() {
        Context::Remote => crate::stepd::task_init_privileged(sp),
        _ => true,
    }
}

/// `slurm_spank_task_init` (slurmstepd's task child only).
pub fn task_init(sp: &Spank) -> bool {
    match sp.context() {
        Context::Remote => crate::stepd::task_init(sp),
        _ => true,
    }
}

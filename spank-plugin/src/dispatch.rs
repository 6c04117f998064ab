//! Hands each SPANK callback to the module for its context (the Pyxis layout: one file per side).
//! Each function returns `true` to let the launch go on and `false` to stop it.

use crate::ffi::{Context, Spank};

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

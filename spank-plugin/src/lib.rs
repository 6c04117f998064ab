//! `spank_launchguard.so`: launchguard's SPANK plugin.
//!
//! Listed in `plugstack.conf` next to Pyxis, it checks every launch and tells the user, on their
//! terminal, what is wrong and how to fix it, before GPU time is wasted:
//!
//! | process (context)              | callback               | module        |
//! |--------------------------------|------------------------|---------------|
//! | srun (local)                   | `init_post_opt`        | [`srun`]      |
//! | sbatch, salloc (allocator)     | `init_post_opt`        | [`allocator`] |
//! | slurmstepd (remote), per node  | `user_init`            | [`stepd`]     |
//! | slurmstepd task child (remote) | `task_init_privileged` | [`stepd`]     |
//! | the task, as the user (remote) | `task_init`            | [`stepd`]     |
//!
//! All `unsafe` lives in [`ffi`] (the crate denies `unsafe_code` and allows it there only; the four
//! exported callbacks in [`dispatch`] carry an item allow for their `#[no_mangle]`). The plugin starts no threads, makes no network calls (its one
//! message per launch goes to the local agent's Unix socket, non-blocking: [`agent_client`]), and fails open:
//! a panic or an unreadable fact lets the launch go on.

#![deny(unsafe_code)]

pub mod agent_client;
pub mod allocator;
pub mod dispatch;
pub mod enroot;
#[allow(unsafe_code)]
pub mod ffi;
pub mod gather;
pub mod host;
pub mod mpi;
pub mod srun;
pub mod stepd;
pub mod user_lines;

//! launchguard's shared check logic.
//!
//! Everything here is pure: callers gather facts (srun's argv, environment variables, SPANK items, node
//! facts) and hand them in; the evaluators return [`Finding`]s. The SPANK plugin (`spank_launchguard.so`)
//! and the `launchguard` binary use the same evaluators and the same finding IDs, so one rule lives in one
//! place. No `unsafe`, no threads, and no I/O outside [`host`] (features `host` and `process`: the
//! bounded, non-blocking reads and deadline-bound children the plugin and the agent share): this
//! crate is linked into every `srun` and `slurmstepd`.
#![forbid(unsafe_code)]

pub mod argv;
pub mod checks;
pub mod fabric;
pub mod finding;
pub mod glob;
pub mod gres;
#[cfg(feature = "host")]
pub mod host;
pub mod hostlist;
pub mod node;
pub mod policy;
pub mod profile;
pub mod protocol;
pub mod release;
pub mod report;
pub mod rlimit;
pub mod slurm_conf;
pub mod text;

pub use finding::{CheckKind, Finding};
pub use policy::{Mode, Policy};
pub use release::SlurmRelease;

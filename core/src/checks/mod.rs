//! Launch checks: pure evaluators over gathered facts, one check family per file.
//!
//! The plugin gathers facts in three places (docs/spank.md, "Who runs which callback"):
//! - srun, before allocation (`init_post_opt`, local context): srun's argv and its own environment;
//! - sbatch/salloc (`init_post_opt`, allocator context): their argv, environment and `#SBATCH` lines;
//! - slurmstepd (`user_init` / `task_init_privileged`, remote context): SPANK items such as
//!   `S_STEP_CPUS_PER_TASK` and the job's environment.
//!
//! Each evaluator returns every finding regardless of mode; [`judge`] applies the [`Policy`].

pub mod cpus_per_task;
pub mod devices;
pub mod enroot;
pub mod env;
pub mod export;
pub mod gpu_options;
pub mod gpus;
pub mod imex;
pub mod marker;
pub mod memlock;
pub mod nccl_env;
pub mod pmix;

use crate::finding::{Finding, Severity};
use crate::policy::{Mode, Policy};

pub use env::Env;

/// Facts about the node that shape advice (`min_cpus_per_task=auto` is CPUs ÷ GPUs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// CPUs of the node (or of the allocation on it), if known.
    pub cpus: Option<u32>,
    /// GPUs of the node (or of the allocation on it), if known.
    pub gpus: Option<u32>,
}

/// What the plugin does with a set of findings under a policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Findings to print, one line each (checks in `off` mode are dropped).
    pub shown: Vec<Finding>,
    /// True when a check in `enforce` mode produced an error-severity finding: the launch must stop.
    pub reject: bool,
}

/// Applies the policy: drops findings of checks that are `off`, and rejects when an `enforce` check
/// has an [`Severity::Error`] finding.
pub fn judge(findings: Vec<Finding>, policy: &Policy) -> Verdict {
    let mut v = Verdict::default();
    for f in findings {
        match policy.mode_for(f.check) {
            Mode::Off => continue,
            Mode::Enforce if f.severity == Severity::Error => v.reject = true,
            _ => {}
        }
        v.shown.push(f);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::CheckKind;
    use crate::policy::parse_args;

    fn f(check: CheckKind, severity: Severity) -> Finding {
        Finding {
            check,
            severity,
            what: "w".into(),
            why: "y".into(),
            fix: "f".into(),
        }
    }

    #[test]
    fn judge_applies_modes_per_check() {
        let findings = vec![
            f(CheckKind::CpusPerTask, Severity::Error),
            f(CheckKind::ExportSplit, Severity::Warning),
        ];
        let table: &[(&[&str], usize, bool)] = &[
            (&[], 2, false),
            (&["mode=off"], 0, false),
            (&["mode=enforce"], 2, true),
            (&["mode=enforce", "cpus_per_task=warn"], 2, false),
            (&["mode=warn", "cpus_per_task=enforce"], 2, true),
            (&["mode=enforce", "cpus_per_task=off"], 1, false),
        ];
        for (args, shown, reject) in table {
            let (p, _) = parse_args(args);
            let v = judge(findings.clone(), &p);
            assert_eq!(v.shown.len(), *shown, "{args:?}");
            assert_eq!(v.reject, *reject, "{args:?}");
        }
    }

    #[test]
    fn warnings_never_reject() {
        let (p, _) = parse_args(&["mode=enforce"]);
        let v = judge(vec![f(CheckKind::ExportSplit, Severity::Warning)], &p);
        assert!(!v.reject);
        assert_eq!(v.shown.len(), 1);
    }
}

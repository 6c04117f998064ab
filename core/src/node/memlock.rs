//! `node.memlock.*`: the locked-memory limit (`RLIMIT_MEMLOCK`) that slurmd passes on to every task
//! of an RDMA node.
//!
//! NCCL's IB and EFA transports, UCX and libfabric register (pin) host memory with the NIC; the
//! kernel charges it to the task's `RLIMIT_MEMLOCK`, and registration fails (`ibv_reg_mr … Cannot
//! allocate memory`, libfabric `fi_mr_reg` `-ENOMEM`) when the limit is low. NVIDIA's MLNX_OFED/DOCA
//! user manual and AWS's EFA user guide both ask for `unlimited`. A task's limits come from slurmd:
//! slurmstepd is slurmd's child, and a task can be raised to a propagated limit no higher than
//! slurmd's hard limit; systemd starts slurmd with the unit's `LimitMEMLOCK=` (Debian's and
//! SchedMD's slurmd.service set `infinity`), not `/etc/security/limits.conf`. By default
//! (`PropagateResourceLimits=ALL`, slurm.conf(5)) Slurm copies the submitting shell's *soft* limits
//! into the task, so a login node's 8 MiB default reaches the job; Slurm's FAQ ("Why are my
//! InfiniBand/RDMA jobs failing…") gives `PropagateResourceLimitsExcept=MEMLOCK`.

use super::{Outcome, Status};
pub use crate::rlimit::{parse_limits, Limit};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.memlock.slurmd",
        "on an RDMA node, slurmd runs with an unlimited locked-memory limit (its tasks inherit it)",
    ),
    (
        "node.memlock.propagation",
        "on an RDMA node, slurm.conf does not copy the submit host's locked-memory limit into tasks",
    ),
];

/// Whether Slurm copies the submit host's `RLIMIT_MEMLOCK` into tasks, from slurm.conf's
/// `PropagateResourceLimits` (default `ALL`; `NONE` or a comma list of `AS CORE CPU DATA FSIZE
/// MEMLOCK NOFILE NPROC RSS STACK`) and `PropagateResourceLimitsExcept` (a list to leave out),
/// slurm.conf(5). Either may be given per partition too; this reads the global lines.
pub fn propagates_memlock(propagate: Option<&str>, except: Option<&str>) -> bool {
    let has = |list: &str, what: &str| {
        list.split(',')
            .map(str::trim)
            .any(|x| x.eq_ignore_ascii_case(what))
    };
    if let Some(e) = except {
        return !(has(e, "MEMLOCK") || has(e, "ALL"));
    }
    match propagate {
        None => true,
        Some(p) => has(p, "ALL") || has(p, "MEMLOCK"),
    }
}

/// slurmd as the limit check sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slurmd {
    /// A live slurmd and its `(soft, hard)` locked-memory limits.
    Running {
        /// Its pid.
        pid: u32,
        /// Soft limit.
        soft: Limit,
        /// Hard limit.
        hard: Limit,
    },
    /// Not found or unreadable; says what was seen.
    Unknown(String),
}

/// Everything the memlock family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemlockFacts {
    /// RDMA NICs of the node (`/sys/class/infiniband` names); empty: the family does not apply.
    pub rdma_nics: Vec<String>,
    /// slurmd's limits.
    pub slurmd: Slurmd,
    /// Whether slurmd's parent is systemd (pid 1), which decides the fix's wording.
    pub under_systemd: bool,
    /// slurm.conf's `PropagateResourceLimits`, if set.
    pub propagate: Option<String>,
    /// slurm.conf's `PropagateResourceLimitsExcept`, if set.
    pub propagate_except: Option<String>,
}

const WHY_REG: &str = "RDMA transports (NCCL over IB or EFA, UCX, libfabric) pin host memory against this limit, so registration fails ('ibv_reg_mr … Cannot allocate memory') and multi-node jobs fail or fall back to TCP";

/// Judges the memlock family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &MemlockFacts) -> Vec<Outcome> {
    if f.rdma_nics.is_empty() {
        return CHECKS
            .iter()
            .map(|(id, _)| Outcome::ok(id))
            .collect::<Vec<_>>();
    }
    let nics = f.rdma_nics.join(",");
    let mut out = vec![];
    let mut hard_ok = true;
    out.push(match &f.slurmd {
        Slurmd::Unknown(why) => {
            hard_ok = false;
            Outcome::unknown("node.memlock.slurmd", format!("slurmd's limits: {why}"))
        }
        Slurmd::Running { pid, hard, .. } if hard.finite() => {
            hard_ok = false;
            let fix = if f.under_systemd {
                "add LimitMEMLOCK=infinity under [Service] with `systemctl edit slurmd`, then `systemctl restart slurmd`".to_string()
            } else {
                "start slurmd from a shell or unit that first raises the limit (`ulimit -l unlimited`, or LimitMEMLOCK=infinity in its systemd unit), then restart it".to_string()
            };
            Outcome::new(
                "node.memlock.slurmd",
                Status::Critical,
                format!(
                    "slurmd (pid {pid}) runs with a locked-memory hard limit of {} on a node with RDMA NICs ({nics})",
                    hard.human()
                ),
                format!("no task can be raised above slurmd's hard limit; {WHY_REG}"),
                fix,
            )
        }
        Slurmd::Running { .. } => Outcome::ok("node.memlock.slurmd"),
    });
    let soft_now = match &f.slurmd {
        Slurmd::Running { soft, .. } => Some(*soft),
        Slurmd::Unknown(_) => None,
    };
    out.push(
        if propagates_memlock(f.propagate.as_deref(), f.propagate_except.as_deref()) {
            let set = match (&f.propagate, &f.propagate_except) {
                (_, Some(e)) => format!("PropagateResourceLimitsExcept={e}"),
                (Some(p), None) => format!("PropagateResourceLimits={p}"),
                (None, None) => "PropagateResourceLimits is unset (default ALL)".into(),
            };
            Outcome::new(
                "node.memlock.propagation",
                Status::Warning,
                format!("slurm.conf copies the submit shell's locked-memory limit into tasks ({set})"),
                format!("a login node's default (often 64 KiB or 8 MiB) then caps every task on this RDMA node even though slurmd's is {}; {WHY_REG}",
                    soft_now.map(Limit::human).unwrap_or_else(|| "unknown".into())),
                "set PropagateResourceLimitsExcept=MEMLOCK in slurm.conf and run `scontrol reconfigure` (Slurm FAQ); users can meanwhile run `ulimit -l unlimited` before srun",
            )
        } else if hard_ok && soft_now.is_some_and(Limit::finite) {
            let soft = soft_now.map(Limit::human).unwrap_or_default();
            Outcome::new(
                "node.memlock.propagation",
                Status::Warning,
                format!(
                    "tasks get slurmd's soft locked-memory limit of {soft} (MEMLOCK is not propagated)"
                ),
                WHY_REG,
                "raise slurmd's soft limit too (LimitMEMLOCK=infinity sets both), then restart slurmd",
            )
        } else {
            Outcome::ok("node.memlock.propagation")
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str =
        "Limit                     Soft Limit           Hard Limit           Units     \n\
Max stack size            8388608              unlimited            bytes     \n\
Max locked memory         8388608              8388608              bytes     \n\
Max file locks            unlimited            unlimited            locks     \n";

    fn facts(soft: Limit, hard: Limit, except: Option<&str>) -> MemlockFacts {
        MemlockFacts {
            rdma_nics: vec!["mlx5_0".into()],
            slurmd: Slurmd::Running {
                pid: 42,
                soft,
                hard,
            },
            under_systemd: true,
            propagate: None,
            propagate_except: except.map(String::from),
        }
    }

    #[test]
    fn proc_limits_rows_parse() {
        assert_eq!(
            parse_limits(LIMITS),
            Some((Limit::Bytes(8 << 20), Limit::Bytes(8 << 20)))
        );
        let unl = LIMITS.replace("8388608              8388608", "unlimited  unlimited");
        assert_eq!(
            parse_limits(&unl),
            Some((Limit::Unlimited, Limit::Unlimited))
        );
        assert_eq!(parse_limits("Max locked memory  abc  1 bytes"), None);
        assert_eq!(parse_limits(""), None);
        assert_eq!(Limit::Bytes(64 << 10).human(), "64 KiB");
        assert_eq!(Limit::Bytes(1000).human(), "1000 B");
    }

    #[test]
    fn propagation_follows_slurm_conf() {
        assert!(propagates_memlock(None, None));
        assert!(propagates_memlock(Some("ALL"), None));
        assert!(propagates_memlock(Some("NOFILE,MEMLOCK"), None));
        assert!(!propagates_memlock(Some("NONE"), None));
        assert!(!propagates_memlock(Some("NOFILE"), None));
        assert!(!propagates_memlock(None, Some("MEMLOCK")));
        assert!(!propagates_memlock(None, Some("nofile, memlock")));
        assert!(propagates_memlock(None, Some("NOFILE")));
    }

    #[test]
    fn finite_hard_limit_of_slurmd_is_critical_on_rdma_nodes() {
        let out = judge(&facts(Limit::Bytes(8 << 20), Limit::Bytes(8 << 20), None));
        assert_eq!(out[0].status, Status::Critical);
        assert!(out[0].what.contains("8 MiB"), "{:?}", out[0]);
        assert!(out[0].fix.contains("LimitMEMLOCK=infinity"));
        assert_eq!(out[1].status, Status::Warning);
        assert!(out[1].fix.contains("PropagateResourceLimitsExcept=MEMLOCK"));
    }

    #[test]
    fn unlimited_slurmd_with_memlock_excepted_passes() {
        let out = judge(&facts(Limit::Unlimited, Limit::Unlimited, Some("MEMLOCK")));
        assert!(out.iter().all(|o| o.status == Status::Ok), "{out:?}");
        // Not excepted: the submit host's soft limit reaches the task.
        let out = judge(&facts(Limit::Unlimited, Limit::Unlimited, None));
        assert_eq!(out[0].status, Status::Ok);
        assert_eq!(out[1].status, Status::Warning);
        // Excepted, but slurmd's own soft limit is low: tasks get it.
        let out = judge(&facts(
            Limit::Bytes(64 << 10),
            Limit::Unlimited,
            Some("MEMLOCK"),
        ));
        assert_eq!(out[1].status, Status::Warning);
        assert!(out[1].what.contains("64 KiB"), "{:?}", out[1]);
    }

    #[test]
    fn nodes_without_rdma_are_not_judged_and_unknown_slurmd_never_passes() {
        let mut f = facts(Limit::Bytes(1), Limit::Bytes(1), None);
        f.rdma_nics.clear();
        assert!(judge(&f).iter().all(|o| o.status == Status::Ok));
        let mut f = facts(Limit::Unlimited, Limit::Unlimited, Some("MEMLOCK"));
        f.slurmd = Slurmd::Unknown("no slurmd process".into());
        assert_eq!(judge(&f)[0].status, Status::Unknown);
    }
}

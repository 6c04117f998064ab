//! Facts for `node.memlock.*`: the RDMA NICs (sysfs), slurmd's locked-memory limits from
//! `/proc/<pid>/limits` (slurmd found through slurm.conf's `SlurmdPidFile`, default
//! `/var/run/slurmd.pid`, with `%n`/`%h` expanded as slurm.conf(5) says), whether systemd started it
//! (its parent is pid 1 and pid 1 is systemd), and slurm.conf's `PropagateResourceLimits[Except]`.

use super::Ctx;
use launchguard_core::host::rdma;
use launchguard_core::node::memlock::{parse_limits, MemlockFacts, Slurmd};
use launchguard_core::slurm_conf::SlurmConf;

/// Gathers the memlock family's facts.
pub fn gather(ctx: &Ctx) -> MemlockFacts {
    let rdma_nics: Vec<String> = rdma::nics(&ctx.roots.sys, 64)
        .into_iter()
        .map(|n| n.name)
        .collect();
    if rdma_nics.is_empty() {
        return MemlockFacts {
            rdma_nics,
            slurmd: Slurmd::Unknown("not asked (no RDMA NIC)".into()),
            under_systemd: false,
            propagate: None,
            propagate_except: None,
        };
    }
    let (_, conf) = ctx.slurm_conf();
    let conf = conf.ok();
    let (slurmd, under_systemd) = slurmd(ctx, conf.as_ref());
    MemlockFacts {
        rdma_nics,
        slurmd,
        under_systemd,
        propagate: conf
            .as_ref()
            .and_then(|c| c.get("PropagateResourceLimits"))
            .map(String::from),
        propagate_except: conf
            .as_ref()
            .and_then(|c| c.get("PropagateResourceLimitsExcept"))
            .map(String::from),
    }
}

/// slurmd's limits and whether systemd is its parent.
fn slurmd(ctx: &Ctx, conf: Option<&SlurmConf>) -> (Slurmd, bool) {
    let (pid, stat) = match super::slurmd::find(ctx, conf) {
        Ok(x) => x,
        Err(e) => return (Slurmd::Unknown(e), false),
    };
    let proc = ctx.roots.proc.join(pid.to_string());
    let ppid = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
        .and_then(|p| p.parse::<u32>().ok());
    let pid1_systemd = super::util::read_bytes(&ctx.roots.proc.join("1/comm"), 64)
        .map(|b| String::from_utf8_lossy(&b).trim() == "systemd")
        .unwrap_or(false);
    let limits = super::util::read_bytes(&proc.join("limits"), 8192)
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let slurmd = match limits.as_deref().map(parse_limits) {
        Ok(Some((soft, hard))) => Slurmd::Running { pid, soft, hard },
        Ok(None) => Slurmd::Unknown(format!("/proc/{pid}/limits has no 'Max locked memory' row")),
        Err(e) => Slurmd::Unknown(format!("/proc/{pid}/limits: {e}")),
    };
    (slurmd, ppid == Some(1) && pid1_systemd)
}

/// Against this machine's real slurmd (the one-node test cluster) with an RDMA NIC in a fixture
/// sysfs: the agent's verdict on slurmd's hard limit matches what a real task gets (`srun ulimit
/// -Hl`), which is the claim the finding makes (no task goes above slurmd's hard limit).
#[cfg(all(test, slurm_tests))]
mod real_slurmd {
    use super::*;
    use crate::config::Config;
    use launchguard_core::host::Roots;
    use launchguard_core::node::memlock::{judge, Limit};
    use launchguard_core::node::Status;

    #[test]
    fn slurmds_hard_limit_is_what_its_tasks_get_and_is_judged_so() {
        let base = std::env::temp_dir().join(format!("lg-memlock-{}", std::process::id()));
        let nic = base.join("sys/class/infiniband/mlx5_0/ports/1");
        std::fs::create_dir_all(&nic).unwrap();
        std::fs::write(nic.join("state"), "4: ACTIVE\n").unwrap();
        let roots = Roots {
            sys: base.join("sys"),
            ..Roots::system()
        };
        let ctx = Ctx::with_roots(Config::default(), roots);
        let f = gather(&ctx);
        let _ = std::fs::remove_dir_all(&base);
        assert_eq!(f.rdma_nics, vec!["mlx5_0".to_string()]);
        let Slurmd::Running { hard, .. } = f.slurmd.clone() else {
            panic!("the cluster's slurmd was not found: {:?}", f.slurmd);
        };
        let o = std::process::Command::new("srun")
            .args(["-n1", "bash", "-c", "ulimit -Hl"])
            .output()
            .expect("srun runs");
        assert!(o.status.success(), "{o:?}");
        let task = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let task_hard = match task.as_str() {
            "unlimited" => Limit::Unlimited,
            k => Limit::Bytes(k.parse::<u64>().expect("KiB") * 1024),
        };
        assert_eq!(task_hard, hard, "a task's hard limit is slurmd's");
        let out = judge(&f);
        if hard.finite() {
            assert_eq!(out[0].status, Status::Critical, "{out:?}");
            assert!(out[0].what.contains(&hard.human()), "{:?}", out[0]);
        } else {
            assert_eq!(out[0].status, Status::Ok, "{out:?}");
        }
    }
}

//! `launch.gpu_options`: GPU task options that make the job's later steps fail.
//!
//! `--ntasks-per-gpu` with `--cpus-per-task` on sbatch or salloc: from Slurm 23.11.7 (when `-c` also
//! became part of the task's TRES) the allocation exports `SLURM_TRES_PER_TASK=cpu=N` next to
//! `SLURM_NTASKS_PER_GPU`, and srun up to 25.05.0 refuses any `SLURM_TRES_PER_TASK` there
//! (`srun: fatal: SLURM_TRES_PER_TASK is mutually exclusive with --ntasks-per-gpu and
//! SLURM_NTASKS_PER_GPU`), so every plain `srun` in the job dies. Slurm 25.05.1 only refuses it when
//! it names GPUs (SchedMD ticket 17913, its changelog: "Fix interactive step being rejected by
//! incorrect validation of SLURM_TRES_PER_TASK and NTASKS_PER_GPUS environment variables").
//! Reproduced here on Debian's Slurm 24.11.5; 22.05 does not export `SLURM_TRES_PER_TASK`, and
//! Debian's 26.05.5 runs the plain `srun` (tests/tests/launch.rs on each).

use crate::argv::ParsedArgv;
use crate::finding::{CheckKind, Finding, Severity};
use crate::SlurmRelease;

/// Whether this release's srun refuses an inherited `SLURM_TRES_PER_TASK=cpu=N` next to
/// `SLURM_NTASKS_PER_GPU`: `Some(true)` from 23.11.7 through 25.05.0, `Some(false)` outside, `None`
/// when the micro release decides and is unknown.
pub fn refuses_tres_per_task(release: SlurmRelease, micro: Option<u16>) -> Option<bool> {
    let r = |a, b| SlurmRelease::new(a, b);
    if release < r(23, 11) || release > r(25, 5) {
        return Some(false);
    }
    if release == r(23, 11) {
        return micro.map(|m| m >= 7);
    }
    if release == r(25, 5) {
        return micro.map(|m| m == 0);
    }
    Some(true)
}

/// Judges an sbatch/salloc request (its command line, then its `#SBATCH` lines) on `release`
/// (`micro`: the third number of the running version, if known). Warnings only: the allocation
/// itself succeeds.
pub fn check_allocation(
    argv: &ParsedArgv,
    script: Option<&ParsedArgv>,
    release: SlurmRelease,
    micro: Option<u16>,
) -> Vec<Finding> {
    let get = |name: &str| {
        argv.value(name)
            .or_else(|| script.and_then(|s| s.value(name)))
            .map(str::to_string)
    };
    let (Some(ntg), Some(cpt)) = (get("ntasks-per-gpu"), get("cpus-per-task")) else {
        return vec![];
    };
    let Some(refuses) = refuses_tres_per_task(release, micro) else {
        return finding(
            &ntg,
            &cpt,
            release,
            micro,
            "may fail (Slurm 23.11.7 to 25.05.0 refuse it)",
        );
    };
    if !refuses {
        return vec![];
    }
    finding(&ntg, &cpt, release, micro, "fails")
}

fn finding(
    ntg: &str,
    cpt: &str,
    release: SlurmRelease,
    micro: Option<u16>,
    fails: &str,
) -> Vec<Finding> {
    let version = match micro {
        Some(m) => format!("{release}.{m}"),
        None => release.to_string(),
    };
    vec![Finding {
        check: CheckKind::GpuOptions,
        severity: Severity::Warning,
        what: format!(
            "with --ntasks-per-gpu={ntg} and --cpus-per-task={cpt}, every plain srun inside this job {fails} on Slurm {version}"
        ),
        why: format!(
            "the job gets SLURM_TRES_PER_TASK=cpu={cpt} beside SLURM_NTASKS_PER_GPU, and srun stops with 'SLURM_TRES_PER_TASK is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU'"
        ),
        fix: "run `unset SLURM_TRES_PER_TASK` in the script before srun (srun still takes -c from SLURM_CPUS_PER_TASK), or ask for --gpus-per-node=N --ntasks-per-node=N instead of --ntasks-per-gpu (fixed in Slurm 25.05.1)".into(),
    }]
}

/// `--gpus-per-task=G` with several tasks on a node, without `--gpu-bind=none`: srun(1) says
/// `--gpus-per-task` "will implicitly set --gpu-bind=per_task:<gpus_per_task>" (22.05; from 23.x
/// `--tres-bind=gres/gpu:per_task:<gpus_per_task>`), so each task's CUDA_VISIBLE_DEVICES holds its own
/// G GPUs, numbered from 0. Code that selects `cuda:LOCAL_RANK` then dies on every task whose local
/// rank is G or more (`CUDA error: invalid device ordinal`), and the tasks cannot see each other's
/// GPUs, so NCCL cannot set up CUDA peer-to-peer (NVLink) between them. A warning: code that uses
/// device 0 (or the visible devices) runs.
///
/// `argv` is the command line (srun, sbatch or salloc), `script` sbatch's `#SBATCH` lines; `nodes`
/// the job's node count when the command line does not give one (SLURM_JOB_NUM_NODES inside an
/// allocation).
pub fn check_gpus_per_task(
    argv: &ParsedArgv,
    script: Option<&ParsedArgv>,
    nodes: Option<u64>,
) -> Vec<Finding> {
    let get = |name: &str| {
        argv.value(name)
            .or_else(|| script.and_then(|s| s.value(name)))
            .map(str::to_string)
    };
    let num = |name: &str| get(name).and_then(|v| v.trim().parse::<u64>().ok());
    let Some(gpt) = get("gpus-per-task") else {
        return vec![];
    };
    // `--gpus-per-task=a100:1`: the count is after the last colon.
    let Some(g) = gpt.rsplit(':').next().and_then(|n| n.parse::<u64>().ok()) else {
        return vec![];
    };
    let unbound = |v: Option<String>| {
        v.is_some_and(|b| {
            let b = b.to_ascii_lowercase();
            b == "none" || b.ends_with("gpu:none") || b.contains("gres/gpu:none")
        })
    };
    if unbound(get("gpu-bind")) || unbound(get("tres-bind")) {
        return vec![];
    }
    // Tasks per node: --ntasks-per-node, else -n over -N (the whole count when one node).
    let nodes_given = get("nodes")
        .and_then(|n| {
            n.split('-')
                .next()
                .and_then(|n| n.trim().parse::<u64>().ok())
        })
        .or(nodes);
    let per_node = num("ntasks-per-node").or_else(|| {
        let n = num("ntasks")?;
        let nodes = nodes_given?;
        (nodes > 0).then(|| n.div_ceil(nodes))
    });
    let Some(per_node) = per_node.filter(|t| *t > 1) else {
        return vec![];
    };
    vec![Finding {
        check: CheckKind::GpuOptions,
        severity: Severity::Warning,
        what: format!(
            "--gpus-per-task={gpt} with {per_node} tasks per node binds each task to its own {g} GPU{} (numbered from 0)",
            if g == 1 { "" } else { "s" }
        ),
        why: format!(
            "Slurm implies --gpu-bind=per_task:{g} (--tres-bind=gres/gpu:per_task:{g} from 23.x), so each task's CUDA_VISIBLE_DEVICES lists only its own: code that selects cuda:LOCAL_RANK dies with 'CUDA error: invalid device ordinal' on every task with LOCAL_RANK {g} or more, and the tasks cannot see each other's GPUs, so NCCL cannot use CUDA peer-to-peer (NVLink) between them"
        ),
        fix: "add --gpu-bind=none (every task then sees the node's GPUs of the step, so cuda:LOCAL_RANK works and P2P stays), or ask for --gpus-per-node with --ntasks-per-node instead, or select cuda:0 (the one GPU CUDA_VISIBLE_DEVICES leaves each task)".into(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::{parse, Tool};

    fn sbatch(words: &[&str]) -> ParsedArgv {
        let v: Vec<String> = std::iter::once("sbatch")
            .chain(words.iter().copied())
            .map(String::from)
            .collect();
        parse(Tool::Sbatch, &v)
    }

    #[test]
    fn the_releases_that_refuse_follow_slurms_history() {
        let r = SlurmRelease::new;
        assert_eq!(refuses_tres_per_task(r(22, 5), Some(8)), Some(false));
        assert_eq!(refuses_tres_per_task(r(23, 2), None), Some(false));
        assert_eq!(refuses_tres_per_task(r(23, 11), Some(6)), Some(false));
        assert_eq!(refuses_tres_per_task(r(23, 11), Some(7)), Some(true));
        assert_eq!(refuses_tres_per_task(r(23, 11), None), None);
        assert_eq!(refuses_tres_per_task(r(24, 5), None), Some(true));
        assert_eq!(refuses_tres_per_task(r(24, 11), Some(5)), Some(true));
        assert_eq!(refuses_tres_per_task(r(25, 5), Some(0)), Some(true));
        assert_eq!(refuses_tres_per_task(r(25, 5), Some(1)), Some(false));
        assert_eq!(refuses_tres_per_task(r(26, 5), None), Some(false));
    }

    #[test]
    fn ntasks_per_gpu_with_c_warns_on_24_11_from_the_line_or_the_script() {
        let r2411 = SlurmRelease::new(24, 11);
        let f = check_allocation(
            &sbatch(&["--ntasks-per-gpu=1", "-c", "2", "x.sh"]),
            None,
            r2411,
            Some(5),
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].what.contains("Slurm 24.11.5"), "{}", f[0].what);
        assert!(f[0].why.contains("SLURM_TRES_PER_TASK=cpu=2"));
        assert!(f[0].fix.contains("unset SLURM_TRES_PER_TASK"));
        let script = sbatch(&["--ntasks-per-gpu=1"]);
        assert_eq!(
            check_allocation(
                &sbatch(&["--cpus-per-task=4", "x.sh"]),
                Some(&script),
                r2411,
                None
            )
            .len(),
            1
        );
        // 22.05 and 26.05 run such jobs; no -c, no finding.
        assert!(check_allocation(
            &sbatch(&["--ntasks-per-gpu=1", "-c2"]),
            None,
            SlurmRelease::new(22, 5),
            Some(8)
        )
        .is_empty());
        assert!(check_allocation(
            &sbatch(&["--ntasks-per-gpu=1", "-c2"]),
            None,
            SlurmRelease::new(26, 5),
            Some(3)
        )
        .is_empty());
        assert!(
            check_allocation(&sbatch(&["--ntasks-per-gpu=1"]), None, r2411, Some(5)).is_empty()
        );
    }

    fn srun(words: &[&str]) -> ParsedArgv {
        let v: Vec<String> = std::iter::once("srun")
            .chain(words.iter().copied())
            .map(String::from)
            .collect();
        parse(Tool::Srun, &v)
    }

    /// Issue 24 item 5: --gpus-per-task=1 with several tasks per node gives every task device 0.
    #[test]
    fn gpus_per_task_with_several_tasks_per_node_warns_unless_unbound() {
        let f = check_gpus_per_task(
            &srun(&["--gpus-per-task=1", "--ntasks-per-node=4", "python", "t.py"]),
            None,
            None,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(
            f[0].what,
            "--gpus-per-task=1 with 4 tasks per node binds each task to its own 1 GPU (numbered from 0)"
        );
        assert!(f[0].why.contains("'CUDA error: invalid device ordinal'"));
        assert!(f[0].fix.starts_with("add --gpu-bind=none"));
        // -n over -N, from the command line or the allocation's node count.
        assert_eq!(
            check_gpus_per_task(&srun(&["-n8", "-N2", "--gpus-per-task=1", "x"]), None, None).len(),
            1
        );
        assert_eq!(
            check_gpus_per_task(&srun(&["-n8", "--gpus-per-task=1", "x"]), None, Some(2)).len(),
            1
        );
        // One task per node, an unknown spread, or binding turned off: nothing.
        for words in [
            &["-n2", "-N2", "--gpus-per-task=1", "x"][..],
            &["-n8", "--gpus-per-task=1", "x"][..],
            &[
                "--ntasks-per-node=4",
                "--gpus-per-task=1",
                "--gpu-bind=none",
                "x",
            ][..],
            &[
                "--ntasks-per-node=4",
                "--gpus-per-task=1",
                "--tres-bind=gres/gpu:none",
                "x",
            ][..],
            &["--ntasks-per-node=4", "--gpus-per-node=4", "x"][..],
        ] {
            assert!(
                check_gpus_per_task(&srun(words), None, None).is_empty(),
                "{words:?}"
            );
        }
        // sbatch: from the #SBATCH lines.
        let script = sbatch(&["--gpus-per-task=1", "--ntasks-per-node=8"]);
        assert_eq!(
            check_gpus_per_task(&sbatch(&["x.sh"]), Some(&script), None).len(),
            1
        );
    }
}

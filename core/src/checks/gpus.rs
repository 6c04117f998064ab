//! Does a launch get GPUs? From srun's options (`--gres=gpu…`, `--gpus…`, `-G`, `--tres-per-task`)
//! or, inside an allocation, from the variables srun inherits (a step gets all of the job's GRES on
//! its nodes unless it asks otherwise: srun(1) `--gres`). In slurmstepd, from the step's own
//! `SLURM_STEP_GPUS` / `CUDA_VISIBLE_DEVICES`.

use super::env::{parse_count, Env};
use crate::argv::ParsedArgv;

/// Whether a launch gets GPUs, as far as its command line and environment tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuRequest {
    /// The launch gets GPUs (the count when known).
    Yes(Option<u32>),
    /// The launch gets no GPUs.
    No,
}

impl GpuRequest {
    /// True for [`GpuRequest::Yes`].
    pub fn is_gpu(self) -> bool {
        matches!(self, GpuRequest::Yes(_))
    }
}

/// Count in a GPU spec such as `gpu:8`, `gpu:h100:8`, `gres/gpu:2`, `8`, `h100:8`, `gpu`
/// (no count means 1). Returns `None` when the spec is not about GPUs.
fn gpu_count_in_gres(spec: &str) -> Option<u32> {
    let spec = spec.trim();
    let spec = spec.strip_prefix("gres/").unwrap_or(spec);
    let mut parts = spec.split(':');
    if parts.next()? != "gpu" {
        return None;
    }
    let last = spec.rsplit(':').next().unwrap_or("");
    if spec == "gpu" || last.parse::<u64>().is_err() {
        return Some(1); // `gpu` or `gpu:type`: one GPU
    }
    Some(last.parse::<u32>().unwrap_or(u32::MAX))
}

/// Count in `--gpus`-style values: `8`, `h100:8`, `h100:4,a100:2`.
fn gpu_count_in_gpus(spec: &str) -> Option<u32> {
    let mut total: u32 = 0;
    let mut any = false;
    for item in spec.split(',') {
        let n = item.rsplit(':').next()?.trim().parse::<u32>().ok()?;
        total = total.saturating_add(n);
        any = true;
    }
    any.then_some(total)
}

/// GPUs requested by srun's own options, if any option speaks about them.
fn from_options(argv: &ParsedArgv) -> Option<GpuRequest> {
    let mut verdict = None;
    for opt in &argv.opts {
        let Some(val) = opt.value.as_deref() else {
            continue;
        };
        let got = match opt.name.as_str() {
            "gres" => {
                if val.eq_ignore_ascii_case("none") {
                    Some(GpuRequest::No)
                } else {
                    let n: Option<u32> = val
                        .split(',')
                        .filter_map(gpu_count_in_gres)
                        .reduce(|a, b| a.saturating_add(b));
                    Some(match n {
                        Some(0) | None => GpuRequest::No,
                        Some(n) => GpuRequest::Yes(Some(n)),
                    })
                }
            }
            "gpus" | "gpus-per-node" | "gpus-per-task" | "gpus-per-socket" => {
                Some(match gpu_count_in_gpus(val) {
                    Some(0) => GpuRequest::No,
                    Some(n) => GpuRequest::Yes(Some(n)),
                    None => GpuRequest::Yes(None),
                })
            }
            "tres-per-task" => val.split(',').find_map(gpu_count_in_gres).map(|n| {
                if n == 0 {
                    GpuRequest::No
                } else {
                    GpuRequest::Yes(Some(n))
                }
            }),
            _ => None,
        };
        if got.is_some() {
            verdict = got; // later options win
        }
    }
    verdict
}

/// Whether an srun launch gets GPUs: its options first, then the GPU variables it inherits from the
/// allocation (`SLURM_GPUS*` inputs, `SLURM_JOB_GPUS`, `SLURM_GPUS_ON_NODE`).
pub fn srun_gpu_request(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> GpuRequest {
    if let Some(r) = from_options(argv) {
        return r;
    }
    for var in [
        "SLURM_GPUS",
        "SLURM_GPUS_PER_NODE",
        "SLURM_GPUS_PER_TASK",
        "SLURM_GPUS_PER_SOCKET",
    ] {
        if let Some(v) = env.get(var) {
            match gpu_count_in_gpus(&v) {
                Some(0) => {}
                Some(n) => return GpuRequest::Yes(Some(n)),
                None => return GpuRequest::Yes(None),
            }
        }
    }
    if let Some(n) = env.get("SLURM_GPUS_ON_NODE").and_then(|v| parse_count(&v)) {
        return GpuRequest::Yes(Some(n));
    }
    if let Some(list) = env.get("SLURM_JOB_GPUS") {
        let n = count_list(&list);
        if n > 0 {
            return GpuRequest::Yes(Some(n));
        }
    }
    GpuRequest::No
}

/// Number of entries in a device list such as `0,1,2` or `GPU-uuid,GPU-uuid`. `NoDevFiles` and empty
/// lists count as zero.
pub fn count_list(list: &str) -> u32 {
    let list = list.trim();
    if list.is_empty() || list.eq_ignore_ascii_case("NoDevFiles") {
        return 0;
    }
    list.split(',').filter(|s| !s.trim().is_empty()).count() as u32
}

/// GPUs of a running step on this node, from its environment: `SLURM_STEP_GPUS`, then
/// `CUDA_VISIBLE_DEVICES`, then `SLURM_GPUS_ON_NODE`.
pub fn step_gpu_count(env: &(impl Env + ?Sized)) -> u32 {
    if let Some(l) = env.get("SLURM_STEP_GPUS") {
        return count_list(&l);
    }
    if let Some(l) = env.get("CUDA_VISIBLE_DEVICES") {
        return count_list(&l);
    }
    env.get("SLURM_GPUS_ON_NODE")
        .and_then(|v| parse_count(&v))
        .unwrap_or(0)
}

/// The partition's node size from `sinfo -h -o '%P %c %G'` (partition, CPUs per node, GRES), for the
/// `-c` advice srun gives on a login node that has no GPUs itself. `partition` is the one the job
/// asks for (`-p`; the first of a list), else the default one (sinfo marks it `*`). Known only when
/// every node line of that partition has the same CPUs and GPUs (e.g. `gpu 192 gpu:h100:8(S:0-1)`).
pub fn partition_node_facts(sinfo: &str, partition: Option<&str>) -> super::NodeFacts {
    let want = partition.and_then(|p| p.split(',').next()).map(str::trim);
    let mut seen: Option<(u32, u32)> = None;
    for line in sinfo.lines().take(10_000) {
        let mut w = line.split_whitespace();
        let (Some(part), Some(cpus), Some(gres)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let is_default = part.ends_with('*');
        let part = part.trim_end_matches('*');
        let mine = match want {
            Some(p) => p == part,
            None => is_default,
        };
        if !mine {
            continue;
        }
        let Some(cpus) = parse_count(cpus) else {
            return super::NodeFacts::default();
        };
        let gpus = gres
            .split(',')
            .filter_map(|g| gpu_count_in_gres(g.split('(').next().unwrap_or(g)))
            .fold(0u32, u32::saturating_add);
        if gpus == 0 || seen.is_some_and(|s| s != (cpus, gpus)) {
            return super::NodeFacts::default();
        }
        seen = Some((cpus, gpus));
    }
    match seen {
        Some((c, g)) => super::NodeFacts {
            cpus: Some(c),
            gpus: Some(g),
        },
        None => super::NodeFacts::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::{parse, Tool};

    fn req(argv: &[&str], env: &[(&str, &str)]) -> GpuRequest {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        srun_gpu_request(&parse(Tool::Srun, &argv), env)
    }

    #[test]
    fn gpu_steps_are_recognised_from_every_spelling() {
        type Row<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], GpuRequest);
        let table: &[Row] = &[
            (
                &["srun", "--gres=gpu:8", "x"],
                &[],
                GpuRequest::Yes(Some(8)),
            ),
            (
                &["srun", "--gres=gpu:h100:4", "x"],
                &[],
                GpuRequest::Yes(Some(4)),
            ),
            (&["srun", "--gres=gpu", "x"], &[], GpuRequest::Yes(Some(1))),
            (
                &["srun", "--gres=gres/gpu:2,shard:1", "x"],
                &[],
                GpuRequest::Yes(Some(2)),
            ),
            (&["srun", "--gres=gpu:0", "x"], &[], GpuRequest::No),
            (
                &["srun", "--gres=none", "x"],
                &[("SLURM_JOB_GPUS", "0,1")],
                GpuRequest::No,
            ),
            (&["srun", "--gres=shard:2", "x"], &[], GpuRequest::No),
            (&["srun", "--gpus=8", "x"], &[], GpuRequest::Yes(Some(8))),
            (&["srun", "-G", "2", "x"], &[], GpuRequest::Yes(Some(2))),
            (&["srun", "-G2", "x"], &[], GpuRequest::Yes(Some(2))),
            (
                &["srun", "--gpus-per-node=h100:8", "x"],
                &[],
                GpuRequest::Yes(Some(8)),
            ),
            (
                &["srun", "--gpus-per-task=1", "x"],
                &[],
                GpuRequest::Yes(Some(1)),
            ),
            (
                &["srun", "--tres-per-task=gres/gpu:1", "x"],
                &[],
                GpuRequest::Yes(Some(1)),
            ),
            (&["srun", "x"], &[], GpuRequest::No),
            (
                &["srun", "x"],
                &[("SLURM_JOB_GPUS", "0,1")],
                GpuRequest::Yes(Some(2)),
            ),
            (
                &["srun", "x"],
                &[("SLURM_GPUS_ON_NODE", "8")],
                GpuRequest::Yes(Some(8)),
            ),
            (
                &["srun", "x"],
                &[("SLURM_GPUS_PER_NODE", "4")],
                GpuRequest::Yes(Some(4)),
            ),
            (
                &["srun", "x"],
                &[("SLURM_GPUS_ON_NODE", "abc")],
                GpuRequest::No,
            ),
            (&["srun", "x", "--gres=gpu:8"], &[], GpuRequest::No),
        ];
        for (argv, env, want) in table {
            assert_eq!(req(argv, env), *want, "{argv:?} {env:?}");
        }
    }

    #[test]
    fn step_gpus_come_from_the_step_environment() {
        let e: &[(&str, &str)] = &[("SLURM_STEP_GPUS", "0,1"), ("CUDA_VISIBLE_DEVICES", "0")];
        assert_eq!(step_gpu_count(e), 2);
        let e: &[(&str, &str)] = &[("CUDA_VISIBLE_DEVICES", "NoDevFiles")];
        assert_eq!(step_gpu_count(e), 0);
        let e: &[(&str, &str)] = &[];
        assert_eq!(step_gpu_count(e), 0);
    }

    #[test]
    fn partition_size_from_sinfo() {
        use super::super::NodeFacts;
        let out = "cpu* 64 (null)\ngpu 192 gpu:h100:8(S:0-1)\ngpu 192 gpu:h100:8(S:0-1),nic:1\nmixed 96 gpu:4\nmixed 192 gpu:8\n";
        let f = |p| partition_node_facts(out, p);
        assert_eq!(
            f(Some("gpu")),
            NodeFacts {
                cpus: Some(192),
                gpus: Some(8)
            }
        );
        assert_eq!(
            f(Some("gpu,cpu")),
            NodeFacts {
                cpus: Some(192),
                gpus: Some(8)
            }
        );
        assert_eq!(
            f(None),
            NodeFacts::default(),
            "the default partition has no GPUs"
        );
        assert_eq!(
            f(Some("mixed")),
            NodeFacts::default(),
            "nodes differ: no single number"
        );
        assert_eq!(f(Some("nope")), NodeFacts::default());
        assert_eq!(
            partition_node_facts("debug* 4 gpu:2\n", None),
            NodeFacts {
                cpus: Some(4),
                gpus: Some(2)
            }
        );
        assert_eq!(
            partition_node_facts("garbage\n\u{0}", None),
            NodeFacts::default()
        );
    }
}

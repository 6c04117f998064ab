//! srun/sbatch argv, the environment srun inherits, and the srun→slurmstepd marker: every evaluator
//! must return without panicking on any input, and every finding must render as one line.
#![no_main]

use launchguard_core::argv::{parse, split_cmdline, Tool};
use launchguard_core::checks::marker::SrunMarker;
use launchguard_core::checks::{cpus_per_task, export, NodeFacts};
use launchguard_core::policy::parse_args;
use launchguard_core::SlurmRelease;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Layout: <argv bytes, NUL-separated> 0xff <env as NAME=VALUE lines> 0xff <marker>
    let mut parts = data.splitn(3, |b| *b == 0xff);
    let argv_raw = parts.next().unwrap_or_default();
    let env_raw = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let marker_raw = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();

    let mut argv = split_cmdline(argv_raw, 512);
    argv.insert(0, "srun".into());
    let env: Vec<(String, String)> = env_raw
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = |n: &str| env.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let (policy, _) = parse_args(&["mode=enforce", "gpu_steps_only=no"]);
    let node = NodeFacts { cpus: Some(192), gpus: Some(8) };
    for tool in [Tool::Srun, Tool::Sbatch, Tool::Salloc] {
        let p = parse(tool, &argv);
        assert!(p.operands.len() < argv.len().max(1));
        for rel in [SlurmRelease::new(22, 5), SlurmRelease::new(24, 11)] {
            let (f, _) = cpus_per_task::check_srun(rel, &p, &lookup, || node, &policy);
            for f in f.iter().chain(export::check_srun(&p, &lookup).iter()) {
                assert!(!f.to_string().contains('\n'));
            }
        }
        for f in export::check_allocation(tool, &p, Some(&p), &lookup) {
            assert!(!f.to_string().contains('\n'));
        }
    }
    if let Some(m) = SrunMarker::decode(&marker_raw) {
        assert_eq!(SrunMarker::decode(&m.encode()).map(|x| x.cpus), Some(m.cpus));
    }
});

//! The files the plugin reads on the node: enroot.conf, gres.conf (with hostlist expressions) and the
//! admin's NCCL rules. Any bytes must parse without panicking, every finding and problem must be one
//! line, and expansion must stay bounded.
#![no_main]

use launchguard_core::checks::enroot;
use launchguard_core::checks::nccl_env::{self, Fabric};
use launchguard_core::{gres, hostlist};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(p) = enroot::runtime_path_from_conf(&text) {
        if let Some(dir) = enroot::shared_dir(&p) {
            assert!(dir.starts_with('/'));
        }
    }
    let files = gres::gpu_files(&text, "vm");
    assert!(files.len() <= 64 * hostlist::MAX_NAMES);
    if let Some(names) = hostlist::expand(text.lines().next().unwrap_or("")) {
        assert!(names.len() <= hostlist::MAX_NAMES);
    }
    let (rules, problems) = nccl_env::parse_rules(&text, "/etc/launchguard/nccl-rules.conf");
    for p in &problems {
        assert!(!p.contains('\n'));
    }
    let vars: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let ifs = vec!["lo".to_string(), "ens5".to_string()];
    let mut all = nccl_env::builtin_rules();
    all.extend(rules);
    for fabric in [Some(Fabric::Efa), Some(Fabric::Ib), None] {
        for f in nccl_env::check(&vars, fabric, Some(&ifs), &all) {
            assert!(!f.to_string().contains('\n'));
        }
    }
});

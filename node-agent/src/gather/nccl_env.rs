//! Facts for `node.nccl_env.*`: the node-wide environment files, the fabric, the interfaces and the
//! NCCL rules (builtin plus the admin's file, the same the plugin uses).

use super::util;
use super::Ctx;
use launchguard_core::checks::nccl_env::{self, builtin_rules, detect_fabric, Fabric};
use launchguard_core::node::nccl_env::NcclEnvFacts;
use std::path::Path;

/// Gathers the nccl_env family's facts.
pub fn gather(ctx: &Ctx) -> NcclEnvFacts {
    let c = &ctx.cfg.nccl_env;
    let mut files = vec![];
    let mut hidden = vec![];
    for pat in &c.files {
        if let Some(why) = Path::new(pat)
            .parent()
            .and_then(|d| super::view::hidden(ctx, d))
        {
            hidden.push(why);
            continue;
        }
        for f in util::glob_last(Path::new(pat)) {
            if let Ok(t) = util::read_text(&f) {
                files.push((f.display().to_string(), t));
            }
        }
    }
    let mut rules = builtin_rules();
    if let Ok(Some(t)) = util::read_optional(&c.rules) {
        rules.extend(nccl_env::parse_rules(&t, &c.rules.display().to_string()).0);
    }
    let fabric = match c.fabric.as_str() {
        "efa" => Some(Fabric::Efa),
        "ib" => Some(Fabric::Ib),
        _ => {
            let drivers: Vec<String> = super::devices::hcas(&ctx.roots)
                .into_iter()
                .map(|(_, d)| d)
                .collect();
            detect_fabric(&drivers)
        }
    };
    let interfaces = std::fs::read_dir(ctx.roots.sys.join("class/net"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    NcclEnvFacts {
        files,
        fabric,
        interfaces,
        rules,
        hidden,
    }
}

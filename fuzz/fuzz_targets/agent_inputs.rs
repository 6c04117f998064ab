//! What the agent reads from others: socket lines (any client), its config file, slurm.conf (with
//! includes), enroot.conf, plugstack.conf and node-wide environment files. None may panic, hang or
//! allocate without bound; each returns an error or problems instead.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let _ = launchguard::protocol::decode(data);
    let text = String::from_utf8_lossy(data);
    let _ = launchguard::config::Config::parse(&text, Path::new("fuzz.toml"));
    // Includes resolve to the same text under new names (no loop to name), which the parser must
    // cut off by its depth and total limits.
    let mut n = 0u32;
    let mut inc = |_: &str, _: &str| {
        n += 1;
        Ok((format!("inc{n}.conf"), text.to_string()))
    };
    let c = launchguard_core::slurm_conf::parse(&text, "slurm.conf", &mut inc);
    let _ = c.node("vm");
    let _ = c.node_count();
    let _ = launchguard_core::node::enroot::parse_conf(&text);
    let _ = launchguard_core::node::plugstack::parse(&text, "plugstack.conf");
    let _ = launchguard_core::node::nccl_env::assignments(&text);
});

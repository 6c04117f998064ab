//! slurmd as the gatherers find it: its pid from slurm.conf's `SlurmdPidFile` (default
//! `/var/run/slurmd.pid`, with `%n`/`%h` expanded as slurm.conf(5) says), checked against
//! `/proc/<pid>/stat`. Shared by `node.memlock.*` (slurmd's limits) and [`super::view`] (slurmd's mount
//! table is the node's view: jobs run there).

use super::Ctx;
use launchguard_core::slurm_conf::SlurmConf;
use std::path::Path;

/// slurm.conf(5)'s default `SlurmdPidFile`.
const DEFAULT_PID_FILE: &str = "/var/run/slurmd.pid";

/// slurmd's pid and `/proc/<pid>/stat` text, or what was seen instead (for messages).
/// `conf` is slurm.conf as the caller parsed it (`None`: defaults).
pub fn find(ctx: &Ctx, conf: Option<&SlurmConf>) -> Result<(u32, String), String> {
    let node = ctx.slurm_node_name(conf);
    let host = ctx.short_hostname();
    let pid_file = conf
        .and_then(|c| c.get("SlurmdPidFile"))
        .unwrap_or(DEFAULT_PID_FILE)
        .replace("%n", &node)
        .replace("%h", &host);
    let pid_file = Path::new(&pid_file);
    let b = super::util::read_bytes(pid_file, 64)
        .map_err(|e| format!("{}: {e} (is slurmd running?)", pid_file.display()))?;
    let pid: u32 = String::from_utf8_lossy(&b)
        .trim()
        .parse()
        .map_err(|_| format!("{} holds no pid", pid_file.display()))?;
    let stat = super::util::read_bytes(&ctx.roots.proc.join(format!("{pid}/stat")), 4096)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if !stat.contains("(slurmd)") {
        return Err(format!(
            "pid {pid} from {} is not a live slurmd",
            pid_file.display()
        ));
    }
    Ok((pid, stat))
}

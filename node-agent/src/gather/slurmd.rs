//! slurmd as the gatherers find it: its pid from slurm.conf's `SlurmdPidFile` (default
//! `/var/run/slurmd.pid`, with `%n`/`%h` expanded as slurm.conf(5) says), checked against
//! `/proc/<pid>/stat`. Shared by `node.memlock.*` (slurmd's limits) and [`super::view`] (slurmd's mount
//! table is the node's view: jobs run there).

use super::Ctx;
use launchguard_core::slurm_conf::SlurmConf;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

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

/// Slurm's version from the installed `slurmd -V`, asked once per binary: cached in this process by
/// its mtime, and between runs in [`super::disk_cache`] under the binary's stat.
pub fn version() -> String {
    use std::os::unix::fs::MetadataExt;
    static CACHE: Mutex<Option<(i64, String)>> = Mutex::new(None);
    let bin = ["/usr/sbin/slurmd", "/usr/local/sbin/slurmd"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(bin) = bin else {
        return "absent".into();
    };
    let mtime = std::fs::metadata(bin).map(|m| m.mtime()).unwrap_or(0);
    let mut c = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((t, v)) = c.as_ref() {
        if *t == mtime {
            return v.clone();
        }
    }
    let key = super::disk_cache::stat_key(std::path::Path::new(bin));
    if let Some(v) = key
        .as_deref()
        .and_then(|k| super::disk_cache::get("slurmd-version", k, None))
    {
        *c = Some((mtime, v.clone()));
        return v;
    }
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("-V");
    let v = match super::util::run(cmd, None, Duration::from_secs(3)) {
        Ok(o) => String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .last()
            .unwrap_or("unknown")
            .to_string(),
        Err(e) => format!("unknown: {e}"),
    };
    if let (Some(k), false) = (key, v.starts_with("unknown")) {
        super::disk_cache::put("slurmd-version", &k, &v);
    }
    *c = Some((mtime, v.clone()));
    v
}

//! Slurm's version as the installed `slurmd -V` prints it (`slurm-wlm 24.11.5`: the last word), for
//! the `slurm_version` fact and for advice that differs by release (the pmix plugin's source on
//! Debian, [`launchguard_core::host::mpi::plugin_source`]). Asked once per binary: cached in this
//! process by its mtime, and between runs in [`super::disk_cache`] under the binary's stat.

use super::util::{child_deadline, Child};
use super::Ctx;
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;
use std::time::Duration;

/// The version (`24.11.5`), `absent` when no slurmd is installed, or `unknown: <why>` when it did not
/// answer (not cached: asked again next time).
pub fn get(ctx: &Ctx) -> String {
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
    let deadline = child_deadline(
        Child::SlurmdVersion,
        Duration::from_secs(ctx.cfg.check_timeout_secs),
    );
    let v = match super::util::run(cmd, None, deadline) {
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

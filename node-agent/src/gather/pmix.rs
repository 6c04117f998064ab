//! Facts for `node.pmix.*`: the MPI plugins in PluginDir (what `srun --mpi=list` offers) and, for each
//! `mpi_pmix*.so`, whether the PMIx library it loads at run time exists ([`mpi`]: `libpmix.so` up to
//! Slurm 23.02.4, `libpmix.so.2` after, from the PMIx directory Slurm was built with). The plugin's
//! strings are read once per plugin file (cached by mtime in the agent, and between runs by its stat
//! in [`super::disk_cache`]).

use super::Ctx;
use launchguard_core::host::mpi::{self, PluginStrings};
use launchguard_core::node::pmix::{PmixFacts, PmixPlugin};
use launchguard_core::slurm_conf::SlurmConf;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where distributions put Slurm's plugins ([`launchguard_core::host::mpi::PLUGIN_DIRS`]).
pub use launchguard_core::host::mpi::PLUGIN_DIRS;

/// Slurm's plugin directories: the config's, slurm.conf's `PluginDir` (colon-separated), or the first
/// distribution directory that exists.
/// `conf` is slurm.conf as the caller already parsed it.
pub fn plugin_dirs(ctx: &Ctx, conf: Option<&SlurmConf>) -> Vec<PathBuf> {
    if let Some(d) = &ctx.cfg.plugin_dir {
        return vec![d.clone()];
    }
    mpi::plugin_dirs(conf.and_then(|c| c.get("PluginDir")))
}

/// [`mpi::scan_plugin`], kept between runs in [`super::disk_cache`] under the plugin's stat (a
/// rebuilt or replaced plugin has another inode, size or mtime, and is scanned again). The entry is
/// the library name on its first line, then one directory a line.
fn scan_cached(so: &Path) -> PluginStrings {
    let Some(key) = super::disk_cache::stat_key(so) else {
        return mpi::scan_plugin(so);
    };
    let name = format!(
        "pmix-lib-{}",
        so.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .replace(
                |c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '_',
                "-"
            )
    );
    if let Some(v) = super::disk_cache::get(&name, &key, None) {
        let mut lines = v.lines();
        if let Some(lib) = lines.next().filter(|l| l.starts_with("libpmix")) {
            return PluginStrings {
                lib: lib.to_string(),
                dirs: lines.filter(|l| !l.is_empty()).map(String::from).collect(),
            };
        }
    }
    let s = mpi::scan_plugin(so);
    let mut text = s.lib.clone();
    for d in &s.dirs {
        text.push('\n');
        text.push_str(d);
    }
    super::disk_cache::put(&name, &key, &text);
    s
}

/// Gathers the pmix family's facts.
pub fn gather(ctx: &Ctx) -> PmixFacts {
    let (_, conf) = ctx.slurm_conf();
    let conf = conf.ok();
    let dirs = plugin_dirs(ctx, conf.as_ref());
    let mut types = vec![];
    let mut plugins = vec![];
    let mut scanned: Vec<PathBuf> = vec![];
    let mut lib_name = mpi::DEFAULT_LIB.to_string();
    for p in mpi::list(&dirs) {
        // mpi_pmix.so is usually a link to mpi_pmix_vN.so: judge each file once.
        let real = std::fs::canonicalize(&p.path).unwrap_or_else(|_| p.path.clone());
        if p.mpi_type.starts_with("pmix") && !scanned.contains(&real) {
            scanned.push(real);
            let strings = strings(ctx, &p.path);
            lib_name = strings.lib.clone();
            plugins.push(PmixPlugin {
                path: p.path.display().to_string(),
                lib_name: strings.lib.clone(),
                lib: mpi::find_lib(&ctx.roots.etc, &strings),
            });
        }
        types.push(p.mpi_type);
    }
    let mpi_default = conf
        .as_ref()
        .and_then(|c| c.get("MpiDefault").map(String::from));
    // Where the plugin comes from differs by distribution and release (Debian's Slurm 26.05.5-1 and
    // later carry none): asked of slurmd only when no pmix plugin is offered, for the fix.
    let plugin_source = if types.iter().any(|t: &String| t.starts_with("pmix")) {
        ""
    } else {
        launchguard_core::checks::pmix::plugin_source(
            ctx.roots.etc.join("debian_version").exists(),
            launchguard_core::checks::pmix::version_triple(&super::slurmd_version::get(ctx)),
        )
    };
    PmixFacts {
        plugin_dir: dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":"),
        mpi_types: types,
        plugins,
        mpi_default,
        lib_package: mpi::lib_package(&ctx.roots.etc, &lib_name),
        plugin_source,
    }
}

/// The plugin's strings, cached in the agent by (path, mtime, size).
fn strings(ctx: &Ctx, so: &Path) -> PluginStrings {
    let md = std::fs::metadata(so).ok();
    let key = md.as_ref().map(|m| (m.mtime(), m.size())).unwrap_or((0, 0));
    let mut cache = ctx.pmix_cache.lock().unwrap_or_else(|p| p.into_inner());
    match cache.iter().find(|(p, t, s, _)| p == so && (*t, *s) == key) {
        Some((_, _, _, d)) => d.clone(),
        None => {
            let d = scan_cached(so);
            cache.retain(|(p, ..)| p != so);
            cache.push((so.to_path_buf(), key.0, key.1, d.clone()));
            d
        }
    }
}

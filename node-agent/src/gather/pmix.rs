//! Facts for `node.pmix.*`: the MPI plugins in PluginDir (what `srun --mpi=list` offers) and, for each
//! `mpi_pmix*.so`, whether the PMIx library it loads at run time exists ([`mpi`]: `libpmix.so` up to
//! Slurm 23.02.4, `libpmix.so.2` after, from the PMIx directory Slurm was built with). The plugin's
//! strings are read once per plugin file (cached by mtime in the agent, and between runs by its stat
//! in [`super::disk_cache`]).

use super::Ctx;
use launchguard_core::host::mpi::{self, MpiPlugin, PluginStrings};
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

/// A name for a cache entry about `path`: its bytes other than letters, digits, `.` and `_` as `-`.
fn entry_name(prefix: &str, path: &Path) -> String {
    let p = path.to_string_lossy().replace(
        |c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '_',
        "-",
    );
    format!("{prefix}{p}")
}

/// [`mpi::list`] of each directory, kept between runs in [`super::disk_cache`] under the
/// directory's stat (device, inode, size, mtime and ctime in ns): adding, removing or renaming an
/// entry changes the directory's mtime and ctime, so a changed listing is a miss. A plugin replaced
/// in place keeps its name, and its strings are keyed on its own stat ([`scan_cached`]). A
/// directory changed within the last two seconds is listed but not kept (a file system with
/// coarse timestamps could change it again under the same stat). Slurm's PluginDir holds about 350
/// plugins on a Debian node: reading it was the largest part of this family's time.
fn list_cached(dirs: &[PathBuf]) -> Vec<MpiPlugin> {
    let mut out = vec![];
    for d in dirs {
        let one = std::slice::from_ref(d);
        let Some(key) = super::disk_cache::stat_key(d) else {
            out.extend(mpi::list(one));
            continue;
        };
        let name = entry_name("mpi-list-", d);
        if let Some(v) = super::disk_cache::get(&name, &key, None) {
            out.extend(v.lines().filter(|t| !t.is_empty()).map(|t| MpiPlugin {
                mpi_type: t.to_string(),
                path: d.join(format!("mpi_{t}.so")),
            }));
            continue;
        }
        let listed = mpi::list(one);
        let settled = std::fs::metadata(d)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= std::time::Duration::from_secs(2));
        // One type a line: a name with a line break in it (never a real plugin) is not kept.
        if settled && !listed.iter().any(|p| p.mpi_type.contains('\n')) {
            let types: Vec<&str> = listed.iter().map(|p| p.mpi_type.as_str()).collect();
            super::disk_cache::put(&name, &key, &types.join("\n"));
        }
        out.extend(listed);
    }
    out
}

/// [`mpi::scan_plugin`], kept between runs in [`super::disk_cache`] under the plugin's stat (a
/// rebuilt or replaced plugin has another inode, size or mtime, and is scanned again). The entry is
/// the library name on its first line, then one directory a line.
fn scan_cached(so: &Path) -> PluginStrings {
    let Some(key) = super::disk_cache::stat_key(so) else {
        return mpi::scan_plugin(so);
    };
    let name = entry_name("pmix-lib-", Path::new(so.file_name().unwrap_or_default()));
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
    for p in list_cached(&dirs) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn types(v: &[MpiPlugin]) -> Vec<&str> {
        v.iter().map(|p| p.mpi_type.as_str()).collect()
    }

    /// A plugin directory's listing is the directory's own, kept or not: kept (as root) once the
    /// directory has not changed for two seconds, and read again as soon as an entry is added.
    #[test]
    fn a_kept_plugin_listing_follows_the_directory() {
        let d = std::env::temp_dir().join(format!("lg-mpi-list-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        for f in [
            "mpi_pmix.so",
            "mpi_none.so",
            "libother.so",
            "mpi_pmix_v5.so",
        ] {
            std::fs::write(d.join(f), b"").unwrap();
        }
        let dirs = vec![d.clone()];
        let entry = Path::new(super::super::disk_cache::DIR).join(entry_name("mpi-list-", &d));
        // Just written: listed, not kept.
        let fresh = list_cached(&dirs);
        assert_eq!(types(&fresh), ["none", "pmix", "pmix_v5"]);
        assert_eq!(fresh[1].path, d.join("mpi_pmix.so"));
        assert!(!entry.exists(), "a directory changed just now is not kept");
        // Settled (mtime a minute back): kept as root, and what is read back is the same list.
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        let settle = || std::fs::File::open(&d).unwrap().set_modified(past).unwrap();
        settle();
        assert_eq!(list_cached(&dirs), fresh);
        if nix::unistd::geteuid().is_root() {
            assert!(entry.exists(), "a settled directory's listing is kept");
            assert_eq!(list_cached(&dirs), fresh, "the kept listing");
        }
        // A plugin added: the directory's stat changed, so the kept listing is not used.
        std::fs::write(d.join("mpi_pmi2.so"), b"").unwrap();
        settle();
        assert_eq!(
            types(&list_cached(&dirs)),
            ["none", "pmi2", "pmix", "pmix_v5"]
        );
        std::fs::remove_file(d.join("mpi_pmix_v5.so")).unwrap();
        assert_eq!(types(&list_cached(&dirs)), ["none", "pmi2", "pmix"]);
        // A name with a line break (the entry's separator) is listed but never kept.
        let _ = std::fs::remove_file(&entry);
        std::fs::write(d.join("mpi_x\ny.so"), b"").unwrap();
        settle();
        assert_eq!(types(&list_cached(&dirs)), ["none", "pmi2", "pmix", "x\ny"]);
        assert!(
            !entry.exists(),
            "a listing with a line break in a name is not kept"
        );
        let _ = std::fs::remove_file(&entry);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

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

/// A name for a cache entry about `path`: `prefix` and the path made fit for a file name.
fn entry_name(prefix: &str, path: &Path) -> String {
    format!(
        "{prefix}{}",
        super::disk_cache::name_part(&path.to_string_lossy())
    )
}

/// [`mpi::list`] of each directory, kept between runs in [`super::disk_cache`] under the
/// directory's stat (device, inode, size, mtime and ctime in ns): adding, removing or renaming an
/// entry changes the directory's ctime (which, unlike mtime, no tool can set back), so a changed
/// listing is a miss. A plugin replaced in place keeps its name, and its strings are keyed on its
/// own stat ([`scan_cached`]). Slurm's PluginDir holds about 350 plugins on a Debian node: reading
/// it was the largest part of this family's time.
fn list_cached(dirs: &[PathBuf]) -> Vec<MpiPlugin> {
    list_cached_at(dirs, std::time::SystemTime::now())
}

/// Longest listing kept (a bigger one is listed every run; the cache reads at most 64 KiB).
const MAX_KEPT_LISTING: usize = 32 << 10;

/// [`list_cached`] with the time it is: a listing is kept only when it is sure to be the
/// directory's as its stat names it: read whole and without error, every name read back to the
/// same path (UTF-8, no line break, not empty), the directory's stat the same before and after
/// the reading, and its ctime at least two seconds before `now` (a file system whose timestamps
/// are coarser than a change could otherwise show the same stat after one).
fn list_cached_at(dirs: &[PathBuf], now: std::time::SystemTime) -> Vec<MpiPlugin> {
    let mut out = vec![];
    for d in dirs {
        let Some(key) = super::disk_cache::stat_key(d) else {
            out.extend(mpi::list(std::slice::from_ref(d)));
            continue;
        };
        let name = entry_name("mpi-list-", d);
        if let Some(v) = super::disk_cache::get(&name, &key, None) {
            out.extend(v.lines().map(|t| MpiPlugin {
                mpi_type: t.to_string(),
                path: d.join(format!("mpi_{t}.so")),
            }));
            continue;
        }
        let Ok((listed, complete)) = mpi::list_dir(d) else {
            continue;
        };
        let text = listed
            .iter()
            .map(|p| p.mpi_type.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let faithful = listed.iter().all(|p| {
            !p.mpi_type.is_empty()
                && !p.mpi_type.contains(['\n', '\r'])
                && p.path == d.join(format!("mpi_{}.so", p.mpi_type))
        });
        // One stat after the reading: unchanged since the key was taken, and changed long enough ago.
        let settled = std::fs::metadata(d).is_ok_and(|m| {
            let changed = std::time::UNIX_EPOCH
                + std::time::Duration::new(m.ctime().max(0) as u64, m.ctime_nsec() as u32);
            super::disk_cache::stat_key_of(d, &m) == key
                && now
                    .duration_since(changed)
                    .is_ok_and(|age| age >= std::time::Duration::from_secs(2))
        });
        if complete && faithful && settled && text.len() <= MAX_KEPT_LISTING {
            super::disk_cache::put(&name, &key, &text);
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
    /// directory's ctime is two seconds old, never when a name would not read back to its path, and
    /// read again as soon as an entry is added or removed.
    #[test]
    fn a_kept_plugin_listing_follows_the_directory() {
        let d = std::env::temp_dir().join(format!("lg-mpi-list-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        let entry = Path::new(super::super::disk_cache::DIR).join(entry_name("mpi-list-", &d));
        let _ = std::fs::remove_file(&entry);
        for f in [
            "mpi_pmix.so",
            "mpi_none.so",
            "libother.so",
            "mpi_pmix_v5.so",
        ] {
            std::fs::write(d.join(f), b"").unwrap();
        }
        let dirs = vec![d.clone()];
        let now = std::time::SystemTime::now;
        let later = || now() + std::time::Duration::from_secs(60);
        let root = nix::unistd::geteuid().is_root();
        // Just changed: listed, not kept.
        let fresh = list_cached_at(&dirs, now());
        assert_eq!(types(&fresh), ["none", "pmix", "pmix_v5"]);
        assert_eq!(fresh[1].path, d.join("mpi_pmix.so"));
        assert!(!entry.exists(), "a directory changed just now is not kept");
        // A minute on: kept as root, and what is read back is the same list.
        assert_eq!(list_cached_at(&dirs, later()), fresh);
        assert_eq!(
            entry.exists(),
            root,
            "a settled directory's listing is kept as root"
        );
        assert_eq!(list_cached_at(&dirs, later()), fresh, "the kept listing");
        // A plugin added, then one removed: each is a miss. A real change comes at least two seconds
        // after the kept stat (nothing younger is kept), so its times differ from it even where the
        // file system's timestamps are coarse; here `later` is faked, so each change also sets the
        // directory's mtime to a time of its own.
        let stamp = |secs: u64| {
            std::fs::File::open(&d)
                .unwrap()
                .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
                .unwrap()
        };
        std::fs::write(d.join("mpi_pmi2.so"), b"").unwrap();
        stamp(1_000_000);
        let added = list_cached_at(&dirs, later());
        assert_eq!(types(&added), ["none", "pmi2", "pmix", "pmix_v5"]);
        std::fs::remove_file(d.join("mpi_pmix_v5.so")).unwrap();
        stamp(2_000_000);
        assert_eq!(
            types(&list_cached_at(&dirs, later())),
            ["none", "pmi2", "pmix"]
        );
        // Names that would not read back as listed (a line break, an empty type) are never kept.
        for odd in ["mpi_x\ny.so", "mpi_.so"] {
            let _ = std::fs::remove_file(&entry);
            std::fs::write(d.join(odd), b"").unwrap();
            stamp(3_000_000 + odd.len() as u64);
            let got = list_cached_at(&dirs, later());
            assert!(got.iter().any(|p| p.path == d.join(odd)), "{odd} is listed");
            assert!(!entry.exists(), "a listing with {odd:?} is not kept");
            std::fs::remove_file(d.join(odd)).unwrap();
        }
        let _ = std::fs::remove_file(&entry);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

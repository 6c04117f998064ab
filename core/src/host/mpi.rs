//! Slurm's MPI plugins on this host, as srun and slurmstepd load them: the `mpi_<type>.so` files in
//! PluginDir (what `srun --mpi=list` offers) and, for a pmix plugin, the PMIx library it `dlopen()`s
//! at run time. Shared by the agent (`node.pmix.*`) and the plugin's srun side (`launch.pmix`).
//!
//! Slurm's `mpi/pmix` (`src/plugins/mpi/pmix/mpi_pmix.c`, `_libpmix_open`) opens
//! `<PMIx dir it was built with>/<library>` when configured with a PMIx directory (no fall-back to the
//! loader's path), else `<library>` through the loader's path. The library is `libpmix.so` up to
//! Slurm 23.02.4 and `libpmix.so.2` from 23.02.5 on ("Fix runtime linking"): Debian's 22.05 needs
//! libpmix-dev's unversioned link, 24.11 and later only the runtime package. Both the directory and
//! the name are read from the plugin's own strings, so the release needs no table.

use std::path::{Path, PathBuf};

/// Debian's multiarch directory of the architecture this binary was built for (`x86_64-linux-gnu` or
/// `aarch64-linux-gnu`, as on Grace nodes).
#[cfg(target_arch = "aarch64")]
const MULTIARCH: &str = "/usr/lib/aarch64-linux-gnu";
#[cfg(not(target_arch = "aarch64"))]
const MULTIARCH: &str = "/usr/lib/x86_64-linux-gnu";

/// Where distributions put Slurm's plugins, tried in order when neither the caller nor slurm.conf
/// says: Debian's multiarch `slurm-wlm` of this architecture first.
#[cfg(target_arch = "aarch64")]
pub const PLUGIN_DIRS: &[&str] = &[
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
    "/usr/local/lib/slurm",
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
];
/// Where distributions put Slurm's plugins, tried in order when neither the caller nor slurm.conf
/// says: Debian's multiarch `slurm-wlm` of this architecture first.
#[cfg(not(target_arch = "aarch64"))]
pub const PLUGIN_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
    "/usr/local/lib/slurm",
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
];

/// Directories the dynamic loader searches besides ld.so.cache.
const LIB_DIRS: &[&str] = &["/lib", "/usr/lib", "/lib64", "/usr/lib64", MULTIARCH];

/// The library name a pmix plugin opens when its strings name none (Slurm before 23.02.5).
pub const DEFAULT_LIB: &str = "libpmix.so";

/// What a pmix plugin's strings say about the library it opens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginStrings {
    /// Absolute `…pmix…/lib` (or `/lib64`) directories named in it: the PMIx directory Slurm was
    /// built with.
    pub dirs: Vec<String>,
    /// `libpmix.so.2` when the plugin names it, else [`DEFAULT_LIB`].
    pub lib: String,
}

/// Reads a pmix plugin's printable strings (at most 64 MiB of it: Slurm plugins are a few hundred
/// KB). An unreadable plugin gives no directories and [`DEFAULT_LIB`].
pub fn scan_plugin(so: &Path) -> PluginStrings {
    let Ok(bytes) = super::files::read_bytes(so, 64 << 20) else {
        return PluginStrings {
            dirs: vec![],
            lib: DEFAULT_LIB.into(),
        };
    };
    scan_bytes(&bytes)
}

/// [`scan_plugin`] over the plugin's bytes.
pub fn scan_bytes(bytes: &[u8]) -> PluginStrings {
    let mut out = PluginStrings {
        dirs: vec![],
        lib: DEFAULT_LIB.into(),
    };
    for s in bytes.split(|b| !(0x20..0x7f).contains(b)) {
        if s == b"libpmix.so.2" {
            out.lib = "libpmix.so.2".into();
        }
        if s.len() > 4
            && s[0] == b'/'
            && s.windows(4).any(|w| w == b"pmix")
            && (s.ends_with(b"/lib") || s.ends_with(b"/lib64"))
        {
            let s = String::from_utf8_lossy(s).into_owned();
            if !out.dirs.contains(&s) {
                out.dirs.push(s);
            }
        }
    }
    out
}

/// Slurm's plugin directories: `configured` (colon-separated, slurm.conf's `PluginDir`), or the
/// first of [`PLUGIN_DIRS`] that exists.
pub fn plugin_dirs(configured: Option<&str>) -> Vec<PathBuf> {
    if let Some(d) = configured {
        return d.split(':').map(PathBuf::from).collect();
    }
    PLUGIN_DIRS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_dir())
        .into_iter()
        .collect()
}

/// One `mpi_<type>.so` in a plugin directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiPlugin {
    /// The type (`pmix`, `pmix_v4`, `pmi2`, `none`…), as `srun --mpi=list` shows it.
    pub mpi_type: String,
    /// The file.
    pub path: PathBuf,
}

/// The MPI plugins in `dirs`, sorted by type within each directory (at most 4096 entries read per
/// directory; a directory that cannot be read, or an entry that cannot, is skipped).
pub fn list(dirs: &[PathBuf]) -> Vec<MpiPlugin> {
    let mut out = vec![];
    for d in dirs {
        if let Ok((names, _)) = list_dir(d) {
            out.extend(names);
        }
    }
    out
}

/// The MPI plugins in one directory, sorted by type (at most 4096 entries read), and whether every
/// entry read could be (`false`: an entry was skipped, so the list may lack a plugin). `Err`: the
/// directory cannot be read.
pub fn list_dir(d: &Path) -> std::io::Result<(Vec<MpiPlugin>, bool)> {
    let mut complete = true;
    let mut names: Vec<MpiPlugin> = std::fs::read_dir(d)?
        .take(4096)
        .filter_map(|e| {
            let Ok(e) = e else {
                complete = false;
                return None;
            };
            let n = e.file_name().to_string_lossy().into_owned();
            let t = n.strip_prefix("mpi_")?.strip_suffix(".so")?.to_string();
            Some(MpiPlugin {
                mpi_type: t,
                path: e.path(),
            })
        })
        .collect();
    names.sort_by(|a, b| a.mpi_type.cmp(&b.mpi_type));
    Ok((names, complete))
}

/// Paths ld.so.cache (under `etc`) maps `name` to that exist (the cache stores the full path of
/// every entry as a NUL-terminated string; an entry whose file is gone does not load).
fn in_ld_cache(etc: &Path, name: &str) -> Option<String> {
    let c = super::files::read_bytes(&etc.join("ld.so.cache"), 64 << 20).ok()?;
    let suffix = format!("/{name}");
    c.split(|b| *b == 0)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .filter(|s| s.starts_with('/') && s.ends_with(&suffix))
        .find(|s| Path::new(s).exists())
        .map(|s| format!("{s} (ld.so.cache)"))
}

/// Where the plugin described by `strings` finds its library: `Ok(path)` or `Err(places
/// searched)`. With a built-in PMIx directory only `<dir>/<lib>` counts (Slurm does not fall back
/// to the loader's path); without one, the loader's directories and ld.so.cache (under `etc`).
pub fn find_lib(etc: &Path, strings: &PluginStrings) -> Result<String, Vec<String>> {
    let mut searched = vec![];
    let search: Vec<&str> = if strings.dirs.is_empty() {
        LIB_DIRS.to_vec()
    } else {
        strings.dirs.iter().map(String::as_str).collect()
    };
    for d in search {
        let cand = Path::new(d).join(&strings.lib);
        if cand.exists() {
            return Ok(cand.display().to_string());
        }
        searched.push(cand.display().to_string());
    }
    if strings.dirs.is_empty() {
        if let Some(p) = in_ld_cache(etc, &strings.lib) {
            return Ok(p);
        }
        searched.push("ld.so.cache".into());
    }
    Err(searched)
}

/// The package that provides `lib` on this distribution (for a fix), judged by `<etc>/debian_version`.
pub fn lib_package(etc: &Path, lib: &str) -> &'static str {
    let debian = etc.join("debian_version").exists();
    match (debian, lib == DEFAULT_LIB) {
        (true, true) => {
            "libpmix-dev (it provides the unversioned libpmix.so this Slurm's pmix plugin opens)"
        }
        (true, false) => "libpmix2 (on Debian 13 and later: libpmix2t64)",
        (false, true) => {
            "pmix and pmix-devel (for the unversioned libpmix.so this Slurm's pmix plugin opens)"
        }
        (false, false) => "pmix",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_name_and_directory_come_from_the_plugins_strings() {
        let old = b"\0_libpmix_open\0libpmix.so\0/usr/lib/x86_64-linux-gnu/pmix2/lib\0/usr/lib/x86_64-linux-gnu/pmix2/lib\0";
        let s = scan_bytes(old);
        assert_eq!(s.lib, "libpmix.so");
        assert_eq!(s.dirs, vec!["/usr/lib/x86_64-linux-gnu/pmix2/lib"]);
        let new = b"\0libpmix.so.2\0/opt/pmix-5/lib\0pmixp_libpmix_init\0";
        let s = scan_bytes(new);
        assert_eq!(s.lib, "libpmix.so.2");
        assert_eq!(s.dirs, vec!["/opt/pmix-5/lib"]);
    }

    #[test]
    fn a_built_in_directory_is_the_only_place_searched() {
        let d = std::env::temp_dir().join(format!("lg-mpi-{}", std::process::id()));
        let lib = d.join("pmix/lib");
        std::fs::create_dir_all(&lib).unwrap();
        let s = PluginStrings {
            dirs: vec![lib.display().to_string()],
            lib: "libpmix.so.2".into(),
        };
        assert_eq!(
            find_lib(&d, &s),
            Err(vec![lib.join("libpmix.so.2").display().to_string()])
        );
        // the unversioned link of a -dev package does not help a plugin that opens .so.2
        std::fs::write(lib.join("libpmix.so"), "").unwrap();
        assert!(find_lib(&d, &s).is_err());
        std::fs::write(lib.join("libpmix.so.2"), "").unwrap();
        assert_eq!(
            find_lib(&d, &s),
            Ok(lib.join("libpmix.so.2").display().to_string())
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}

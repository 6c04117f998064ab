//! Facts for `node.pmix.*`: the MPI plugins in PluginDir (what `srun --mpi=list` offers) and, for each
//! `mpi_pmix*.so`, whether the `libpmix.so` it loads at run time exists. Slurm's pmix plugin first
//! tries `<PMIx dir it was built with>/lib/libpmix.so`, then `libpmix.so` on the loader's path; the
//! built-in directory is read from the plugin's strings once per plugin file (cached by mtime in
//! the agent, and between runs by its stat in [`super::disk_cache`]).

use super::Ctx;
use launchguard_core::node::pmix::{PmixFacts, PmixPlugin};
use launchguard_core::slurm_conf::SlurmConf;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Debian's multiarch directory of the architecture this binary was built for (`x86_64-linux-gnu` or
/// `aarch64-linux-gnu`, as on Grace nodes).
#[cfg(target_arch = "aarch64")]
const MULTIARCH: &str = "/usr/lib/aarch64-linux-gnu";
#[cfg(not(target_arch = "aarch64"))]
const MULTIARCH: &str = "/usr/lib/x86_64-linux-gnu";

/// Where distributions put Slurm's plugins, tried in order when neither the config nor slurm.conf
/// says: Debian's multiarch `slurm-wlm` of this architecture first.
#[cfg(target_arch = "aarch64")]
pub const PLUGIN_DIRS: &[&str] = &[
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
    "/usr/local/lib/slurm",
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
];
/// Where distributions put Slurm's plugins, tried in order when neither the config nor slurm.conf
/// says: Debian's multiarch `slurm-wlm` of this architecture first.
#[cfg(not(target_arch = "aarch64"))]
pub const PLUGIN_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
    "/usr/local/lib/slurm",
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
];

/// Directories the dynamic loader searches for an unversioned `libpmix.so` besides ld.so.cache.
const LIB_DIRS: &[&str] = &["/lib", "/usr/lib", "/lib64", "/usr/lib64", MULTIARCH];

/// Slurm's plugin directories: the config's, slurm.conf's `PluginDir` (colon-separated), or the first
/// distribution directory that exists.
/// `conf` is slurm.conf as the caller already parsed it.
pub fn plugin_dirs(ctx: &Ctx, conf: Option<&SlurmConf>) -> Vec<PathBuf> {
    if let Some(d) = &ctx.cfg.plugin_dir {
        return vec![d.clone()];
    }
    if let Some(c) = conf {
        if let Some(d) = c.get("PluginDir") {
            return d.split(':').map(PathBuf::from).collect();
        }
    }
    PLUGIN_DIRS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_dir())
        .into_iter()
        .collect()
}

/// Absolute paths (`/…pmix…`) embedded in a plugin, candidates for the PMIx library directory.
fn embedded_dirs(so: &Path) -> Vec<String> {
    // Slurm plugins are a few hundred KB; 64 MiB bounds a wrong file.
    let Ok(bytes) = super::util::read_bytes(so, 64 << 20) else {
        return vec![];
    };
    let mut out = vec![];
    for s in bytes.split(|b| !(0x20..0x7f).contains(b)) {
        if s.len() > 4
            && s[0] == b'/'
            && s.windows(4).any(|w| w == b"pmix")
            && (s.ends_with(b"/lib") || s.ends_with(b"/lib64"))
        {
            let s = String::from_utf8_lossy(s).into_owned();
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// [`embedded_dirs`], kept between runs in [`super::disk_cache`] under the plugin's stat (a rebuilt
/// or replaced plugin has another inode, size or mtime, and is scanned again).
fn embedded_dirs_cached(so: &Path) -> Vec<String> {
    let Some(key) = super::disk_cache::stat_key(so) else {
        return embedded_dirs(so);
    };
    let name = format!(
        "pmix-dirs-{}",
        so.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .replace(
                |c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '_',
                "-"
            )
    );
    if let Some(v) = super::disk_cache::get(&name, &key, None) {
        return v
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
    }
    let d = embedded_dirs(so);
    super::disk_cache::put(&name, &key, &d.join("\n"));
    d
}

/// Paths ld.so.cache maps `name` to that exist (the cache stores the full path of every entry as a
/// NUL-terminated string; an entry whose file is gone does not load).
fn in_ld_cache(roots: &launchguard_core::host::Roots, name: &str) -> Option<String> {
    let c = super::util::read_bytes(&roots.etc.join("ld.so.cache"), 64 << 20).ok()?;
    let suffix = format!("/{name}");
    c.split(|b| *b == 0)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .filter(|s| s.starts_with('/') && s.ends_with(&suffix))
        .find(|s| Path::new(s).exists())
        .map(|s| format!("{s} (ld.so.cache)"))
}

/// Gathers the pmix family's facts.
pub fn gather(ctx: &Ctx) -> PmixFacts {
    let (_, conf) = ctx.slurm_conf();
    let conf = conf.ok();
    let dirs = plugin_dirs(ctx, conf.as_ref());
    let mut types = vec![];
    let mut plugins = vec![];
    for d in &dirs {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        let mut names: Vec<(String, PathBuf)> = rd
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let t = n.strip_prefix("mpi_")?.strip_suffix(".so")?.to_string();
                Some((t, e.path()))
            })
            .collect();
        names.sort();
        let mut scanned: Vec<PathBuf> = vec![];
        for (t, path) in names {
            // mpi_pmix.so is usually a link to mpi_pmix_vN.so: judge each file once.
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if t.starts_with("pmix") && !scanned.contains(&real) {
                scanned.push(real);
                let lib = find_lib(ctx, &path);
                plugins.push(PmixPlugin {
                    path: path.display().to_string(),
                    lib,
                });
            }
            types.push(t);
        }
    }
    let mpi_default = conf
        .as_ref()
        .and_then(|c| c.get("MpiDefault").map(String::from));
    PmixFacts {
        plugin_dir: dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":"),
        mpi_types: types,
        plugins,
        mpi_default,
        lib_package: if ctx.roots.etc.join("debian_version").exists() {
            "libpmix-dev (it provides the libpmix.so the plugin loads)"
        } else {
            "pmix (and pmix-devel for the unversioned libpmix.so)"
        },
    }
}

fn find_lib(ctx: &Ctx, so: &Path) -> Result<String, Vec<String>> {
    let md = std::fs::metadata(so).ok();
    let key = md.as_ref().map(|m| (m.mtime(), m.size())).unwrap_or((0, 0));
    let dirs = {
        let mut cache = ctx.pmix_cache.lock().unwrap_or_else(|p| p.into_inner());
        match cache.iter().find(|(p, t, s, _)| p == so && (*t, *s) == key) {
            Some((_, _, _, d)) => d.clone(),
            None => {
                let d = embedded_dirs_cached(so);
                cache.retain(|(p, ..)| p != so);
                cache.push((so.to_path_buf(), key.0, key.1, d.clone()));
                d
            }
        }
    };
    let mut searched = vec![];
    // Slurm built with a PMIx directory dlopen()s only <dir>/libpmix.so; the loader's search path is
    // used only by a plugin built without one.
    let search: Vec<&str> = if dirs.is_empty() {
        LIB_DIRS.to_vec()
    } else {
        dirs.iter().map(String::as_str).collect()
    };
    for d in search {
        let cand = Path::new(d).join("libpmix.so");
        if cand.exists() {
            return Ok(cand.display().to_string());
        }
        searched.push(d.to_string());
    }
    if dirs.is_empty() {
        if let Some(p) = in_ld_cache(&ctx.roots, "libpmix.so") {
            return Ok(p);
        }
        searched.push("ld.so.cache".into());
    }
    Err(searched)
}

//! Facts for `node.plugstack.*`: the plugstack file the running Slurm reads (see [`path`]) with its
//! includes, the state of each plugin's .so (exists, an ELF shared object), plugins listed in other
//! plugstack files that Slurm does not read, and where Pyxis's runtime_path lives.

use super::disk_cache;
use super::util;
use super::Ctx;
use launchguard_core::glob;
use launchguard_core::node::plugstack::{
    parse, pyxis_runtime_path, user_denied, Entry, Line, Listed, PathMode, PlugstackFacts,
    RuntimeFs, SoState, StackFile, UnlistedDir, KNOWN_BY_OPTIONS,
};
use launchguard_core::slurm_conf::SlurmConf;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Include depth followed.
const MAX_DEPTH: usize = 8;

/// Whether `p` looks loadable: readable, ELF, `ET_DYN` (a shared object).
pub fn so_state(p: &Path) -> SoState {
    let mut head = [0u8; 18];
    // Regular files only, opened without blocking: a FIFO named in plugstack.conf cannot hang it.
    match super::util::open_regular(p, true) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            SoState::Missing(p.display().to_string())
        }
        Err(e) => SoState::Broken(e.to_string()),
        Ok(mut f) => match f.read_exact(&mut head) {
            Err(_) => SoState::Broken("shorter than an ELF header".into()),
            Ok(()) if &head[..4] != b"\x7fELF" => SoState::Broken("not an ELF file".into()),
            Ok(()) if u16::from_le_bytes([head[16], head[17]]) != 3 => {
                SoState::Broken("not a shared object (ELF type is not DYN)".into())
            }
            Ok(()) => SoState::Loadable,
        },
    }
}

/// How long an answer of `scontrol show config` is reused (the agent runs the checks every minute
/// on every node: the controller is asked at most this often per node).
const SCONTROL_TTL: Duration = Duration::from_secs(600);

/// The value of `key` in `scontrol show config` output (`Key = value` lines); `None` when absent,
/// empty or `(null)`.
pub fn show_config_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        let v = v.trim();
        (k.trim() == key && !v.is_empty() && v != "(null)").then(|| v.to_string())
    })
}

/// The running Slurm's PlugStackConfig (`scontrol show config`, 3 s deadline, cached for
/// [`SCONTROL_TTL`] in this process and, through [`disk_cache`], between runs while slurm.conf's
/// stat is unchanged); `None` when the controller cannot be asked.
fn scontrol_plugstack(ctx: &Ctx, slurm_conf: &Path) -> Option<String> {
    let mut cache = ctx
        .scontrol_plugstack
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some((at, v)) = cache.as_ref() {
        if at.elapsed() < SCONTROL_TTL {
            return v.clone();
        }
    }
    // Between runs: the same TTL, and only while slurm.conf is the same file, unchanged.
    let key = disk_cache::stat_key(slurm_conf);
    if let Some(v) = key
        .as_deref()
        .and_then(|k| disk_cache::get("scontrol-plugstack", k, Some(SCONTROL_TTL)))
    {
        let v = (!v.is_empty()).then_some(v);
        *cache = Some((Instant::now(), v.clone()));
        return v;
    }
    let mut c = Command::new("scontrol");
    c.args(["show", "config"]).env("SLURM_CONF", slurm_conf);
    let deadline = util::child_deadline(
        util::Child::ScontrolShowConfig,
        Duration::from_secs(ctx.cfg.check_timeout_secs),
    );
    let out = util::run(c, None, deadline).ok().filter(|o| o.ok);
    let v = out
        .as_ref()
        .and_then(|o| show_config_value(&String::from_utf8_lossy(&o.stdout), "PlugStackConfig"));
    // Only an answer is kept (a controller that did not answer is asked again next run).
    if let (Some(k), Some(_)) = (key, &out) {
        disk_cache::put("scontrol-plugstack", &k, v.as_deref().unwrap_or(""));
    }
    *cache = Some((Instant::now(), v.clone()));
    v
}

/// Whether slurm.conf is a configless slurmd's cached copy (Slurm's configless guide: slurmd keeps
/// the controller's files in its spool's `conf-cache/`, linked from `/run/slurm/conf/`).
pub fn is_configless(slurm_conf: &Path) -> bool {
    let dir = slurm_conf.parent().unwrap_or(Path::new("/"));
    dir.ends_with("conf-cache") || dir.ends_with("slurm/conf")
}

/// The plugstack file the running Slurm reads, and where that came from:
/// - a configless slurmd reads the controller's plugstack.conf from its cache, beside slurm.conf;
/// - otherwise, unless launchguard.toml names slurm_conf (then that file is taken as the running
///   one) or this runs inside a job step, the running Slurm's own answer (`scontrol show config`);
/// - else slurm.conf's `PlugStackConfig`, else plugstack.conf beside slurm.conf (slurm.conf(5)).
pub fn path(ctx: &Ctx, conf: Option<&SlurmConf>) -> (PathBuf, String) {
    let slurm_conf = ctx.cfg.slurm_conf_path();
    if is_configless(&slurm_conf) {
        return (
            ctx.slurm_dir().join("plugstack.conf"),
            format!("configless slurmd's cache beside {}", slurm_conf.display()),
        );
    }
    // Inside a job step (a `launchguard sweep`), every node would ask the controller at once: the
    // step's slurm.conf is slurmd's own there.
    let in_step = std::env::var_os("SLURM_JOB_ID").is_some();
    if ctx.cfg.slurm_conf.is_none() && !in_step {
        if let Some(p) = scontrol_plugstack(ctx, &slurm_conf) {
            return (PathBuf::from(p), "scontrol show config".into());
        }
    }
    match conf.and_then(|c| c.get("PlugStackConfig")) {
        Some(p) => (
            PathBuf::from(p),
            format!("PlugStackConfig in {}", slurm_conf.display()),
        ),
        None => (
            ctx.slurm_dir().join("plugstack.conf"),
            format!("the default beside {}", slurm_conf.display()),
        ),
    }
}

/// Other plugstack files an admin may have edited: the usual paths and `plugstack.conf.d/*.conf`
/// beside them and beside the file Slurm reads.
fn candidates(
    ctx: &Ctx,
    real: &Path,
    conf: Option<&SlurmConf>,
    memo: &mut PathMemo,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = vec![
        "/etc/slurm".into(),
        "/etc/slurm-llnl".into(),
        ctx.slurm_dir(),
    ];
    if let Some(d) = real.parent() {
        dirs.push(d.to_path_buf());
    }
    let mut out: Vec<PathBuf> = vec![];
    if let Some(p) = conf.and_then(|c| c.get("PlugStackConfig")) {
        out.push(PathBuf::from(p));
    }
    for d in dirs {
        out.push(d.join("plugstack.conf"));
        out.extend(util::glob_last(&d.join("plugstack.conf.d").join("*.conf")));
    }
    let mut canon = |p: &Path| memo.canonical(p).unwrap_or_else(|| p.to_path_buf());
    let real = canon(real);
    let mut seen = vec![real];
    out.retain(|p| {
        let c = canon(p);
        if seen.contains(&c) || !p.is_file() {
            return false;
        }
        seen.push(c);
        true
    });
    out
}

/// Where a directory (or its deepest existing ancestor) lives: network filesystem or tmpfs size.
fn runtime_fs(path: &str) -> RuntimeFs {
    let mut cur = PathBuf::from(path);
    while !cur.exists() && cur.pop() {}
    let mut out = RuntimeFs {
        path: path.to_string(),
        ..RuntimeFs::default()
    };
    if let Ok(s) = nix::sys::statfs::statfs(&cur) {
        // f_type is a c_long (i64 here, i32 on 32-bit targets).
        #[allow(clippy::unnecessary_cast)]
        let magic = s.filesystem_type().0 as i64;
        out.network = super::util::NETWORK_FS
            .iter()
            .find(|(m, _)| *m == magic)
            .map(|(_, n)| (*n).to_string());
        if magic == 0x0102_1994 {
            let bsize = u64::try_from(s.block_size()).unwrap_or(0);
            // fsblkcnt_t is u64 here but u32 on some 32-bit targets.
            #[allow(clippy::useless_conversion)]
            let blocks = u64::from(s.blocks());
            out.tmpfs_bytes = Some(blocks.saturating_mul(bsize));
        }
    }
    out
}

/// What walking a plugstack file and its includes found.
#[derive(Default)]
struct Walked {
    entries: Vec<(Entry, SoState)>,
    problems: Vec<String>,
    files: Vec<StackFile>,
    listed: Vec<Listed>,
    unlisted: Vec<UnlistedDir>,
    /// Whether an include was not followed ([`MAX_DEPTH`]): then a file walked here may list more
    /// than this walk saw.
    cut: bool,
    memo: PathMemo,
}

/// The answers of `canonicalize` and `metadata` within one [`gather`]: every plugstack file, .so
/// and include directory is resolved, and every directory above them stat'ed, once per gathering
/// instead of once per question (the same `/etc/slurm`, `/etc` and `/` for each file). Lifetime: one
/// [`gather`] call; nothing is kept past it, so the next run sees the files as they are then.
#[derive(Default)]
struct PathMemo {
    canon: std::collections::HashMap<PathBuf, Option<PathBuf>>,
    meta: std::collections::HashMap<PathBuf, Option<std::fs::Metadata>>,
}

impl PathMemo {
    /// `std::fs::canonicalize(p)`, asked once per path.
    fn canonical(&mut self, p: &Path) -> Option<PathBuf> {
        self.canon
            .entry(p.to_path_buf())
            .or_insert_with(|| std::fs::canonicalize(p).ok())
            .clone()
    }

    /// `std::fs::metadata(p)` (symlinks followed), asked once per path.
    fn metadata(&mut self, p: &Path) -> Option<std::fs::Metadata> {
        self.meta
            .entry(p.to_path_buf())
            .or_insert_with(|| std::fs::metadata(p).ok())
            .clone()
    }
}

/// `uid:gid` for messages, `root` for 0.
fn owner(md: &std::fs::Metadata) -> String {
    let n = |id: u32| {
        if id == 0 {
            "root".to_string()
        } else {
            id.to_string()
        }
    };
    format!("{}:{}", n(md.uid()), n(md.gid()))
}

fn path_mode(p: &Path, md: &std::fs::Metadata) -> PathMode {
    PathMode {
        path: p.display().to_string(),
        mode: md.mode() & 0o7777,
        owner: owner(md),
    }
}

/// What stops a user from reading `p` (or listing it, when `list_dir`), from the modes of `p` and
/// of the directories above it, symlinks resolved; `None` when a user can, or when `p` cannot be
/// examined (a missing file is judged elsewhere).
fn seat(memo: &mut PathMemo, p: &Path, list_dir: bool) -> Option<(String, String)> {
    let canon = memo.canonical(p)?;
    let md = memo.metadata(&canon)?;
    let mut dirs = vec![];
    let mut cur = canon.parent();
    while let Some(d) = cur {
        let dm = memo.metadata(d)?;
        dirs.push(path_mode(d, &dm));
        cur = d.parent();
    }
    // Nearest first, so the message names the directory users meet first from the file up.
    user_denied(&dirs, Some(&path_mode(&canon, &md)), list_dir)
}

/// Expands an absolute glob(3) pattern as Slurm's `include` does (`glob(pattern, 0, …)`: every
/// component may hold `*`, `?`, `[…]`; a leading dot needs a literal one; the matches sorted).
/// Returns the matches and the directories the expansion had to list.
pub fn expand(pattern: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut cur = vec![PathBuf::from("/")];
    let mut listed = vec![];
    for comp in pattern.split('/').filter(|c| !c.is_empty()) {
        let mut next = vec![];
        for base in cur {
            if !glob::has_magic(comp) {
                next.push(base.join(glob::unquote(comp)));
                continue;
            }
            listed.push(base.clone());
            let Ok(rd) = std::fs::read_dir(&base) else {
                continue;
            };
            for e in rd.flatten() {
                let name = e.file_name();
                if glob::matches(comp, &name.to_string_lossy()) {
                    next.push(base.join(name));
                }
            }
        }
        cur = next;
    }
    cur.retain(|p| p.symlink_metadata().is_ok());
    cur.sort();
    (cur, listed)
}

/// The name a plugin goes by: a [`KNOWN_BY_OPTIONS`] name when its .so holds all that plugin's
/// option names, else its file name.
///
/// Kept between runs in [`disk_cache`] under the .so's stat ([`disk_cache::stat_key`]: device,
/// inode, size, mtime and ctime in nanoseconds): the answer depends on the file's bytes alone, and
/// a rebuilt, rewritten, replaced or renamed-over .so has another stat, so it is read again. Reading
/// the whole .so (a MB or more) was most of a check run's wall time. A .so that could not be read
/// is not stored.
fn identify(so: &Path) -> String {
    let base = so
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let key = disk_cache::stat_key(so);
    let entry = cache_name(so);
    if let Some(v) = key
        .as_deref()
        .and_then(|k| disk_cache::get(&entry, k, None))
    {
        return v;
    }
    let Some(known) = known_by_options(so) else {
        return base;
    };
    let name = known.map_or(base, str::to_string);
    if let Some(k) = key {
        disk_cache::put(&entry, &k, &name);
    }
    name
}

/// The [`disk_cache`] entry name of a .so: its file name (letters, digits, `.`, `_`) and a hash of
/// its whole path (two plugins of one name in two directories get two entries).
fn cache_name(so: &Path) -> String {
    use sha2::{Digest, Sha256};
    let name: String = so
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .chars()
        .take(64)
        .collect();
    let base = disk_cache::name_part(&name);
    let h = Sha256::digest(so.as_os_str().as_encoded_bytes());
    format!(
        "plugstack-so-{base}-{:x}",
        u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]])
    )
}

/// Which [`KNOWN_BY_OPTIONS`] plugin the .so is (`Some(None)`: none of them), or `None` when it
/// could not be read. An option name counts when the .so holds it as a C string (followed by NUL).
fn known_by_options(so: &Path) -> Option<Option<&'static str>> {
    // SPANK plugins are a few MB at most; 64 MiB bounds a wrong file.
    let bytes = super::util::read_bytes(so, 64 << 20).ok()?;
    let holds = |needle: &str| {
        let mut c = needle.as_bytes().to_vec();
        c.push(0);
        memchr::memmem::find(&bytes, &c).is_some()
    };
    Some(
        KNOWN_BY_OPTIONS
            .iter()
            .find(|(_, opts)| opts.iter().all(|o| holds(o)))
            .map(|(n, _)| *n),
    )
}

fn walk(
    file: &Path,
    via: Option<(String, String)>,
    plugin_dirs: &[PathBuf],
    w: &mut Walked,
    depth: usize,
) {
    w.files.push(StackFile {
        path: file.display().to_string(),
        via,
        user_denied: seat(&mut w.memo, file, false),
    });
    let Ok(text) = util::read_text(file) else {
        if !file.is_dir() {
            w.problems.push(format!("{}: cannot read", file.display()));
        }
        return;
    };
    let (lines, p) = parse(&text, &file.display().to_string());
    w.problems.extend(p);
    for l in lines {
        match l {
            Line::Plugin(e) => {
                let (st, so) = if e.path.starts_with('/') {
                    (so_state(Path::new(&e.path)), PathBuf::from(&e.path))
                } else {
                    plugin_dirs
                        .iter()
                        .map(|d| (so_state(&d.join(&e.path)), d.join(&e.path)))
                        .find(|(s, _)| *s == SoState::Loadable)
                        .unwrap_or_else(|| {
                            (SoState::Missing(e.path.clone()), PathBuf::from(&e.path))
                        })
                };
                let real = w.memo.canonical(&so).unwrap_or_else(|| so.clone());
                w.listed.push(Listed {
                    at: e.at.clone(),
                    required: e.required,
                    so: real.display().to_string(),
                    name: identify(&real),
                    user_denied: if st == SoState::Loadable {
                        seat(&mut w.memo, &real, false)
                    } else {
                        None
                    },
                });
                w.entries.push((e, st));
            }
            Line::Include { at, pattern: g } if depth < MAX_DEPTH => {
                let pat = include_pattern(file, &g);
                let (matched, listed) = expand(&pat);
                let first_listed = w.listed.len();
                for f in matched {
                    walk(
                        &f,
                        Some((at.clone(), pat.clone())),
                        plugin_dirs,
                        w,
                        depth + 1,
                    );
                }
                for dir in listed {
                    if let Some(why) = seat(&mut w.memo, &dir, true) {
                        let inside = format!("{}/", dir.display());
                        let mut plugins: Vec<String> = w.listed[first_listed..]
                            .iter()
                            .filter(|l| l.at.starts_with(&inside))
                            .map(|l| l.name.clone())
                            .collect();
                        plugins.dedup();
                        w.unlisted.push(UnlistedDir {
                            at: at.clone(),
                            dir: dir.display().to_string(),
                            why,
                            plugins,
                        });
                    }
                }
            }
            Line::Include { pattern: g, .. } => {
                w.cut = true;
                w.problems
                    .push(format!("include {g}: nested more than {MAX_DEPTH} deep"));
            }
        }
    }
}

/// An `include` pattern of `file` as Slurm resolves it: as written when absolute, else relative to
/// the directory of the file that holds the line.
fn include_pattern(file: &Path, pattern: &str) -> String {
    if pattern.starts_with('/') {
        pattern.to_string()
    } else {
        let base = file.parent().unwrap_or(Path::new("/"));
        base.join(pattern).display().to_string()
    }
}

/// The plugin lines of a plugstack file and its includes, in load order, as [`walk`] finds them
/// (the same includes followed to the same depth) but without examining any .so or directory:
/// what a file Slurm does not read would load is all [`gather`] asks of it.
fn plugin_lines(file: &Path, depth: usize, out: &mut Vec<Entry>) {
    let Ok(text) = util::read_text(file) else {
        return;
    };
    for l in parse(&text, &file.display().to_string()).0 {
        match l {
            Line::Plugin(e) => out.push(e),
            Line::Include { pattern: g, .. } if depth < MAX_DEPTH => {
                for f in expand(&include_pattern(file, &g)).0 {
                    plugin_lines(&f, depth + 1, out);
                }
            }
            Line::Include { .. } => {}
        }
    }
}

/// The plugstack family's facts, gathered once per check run ([`Ctx::plugstack`]): the plugstack
/// family judges them and the enroot family reads launchguard's own line from them.
pub fn gather(ctx: &Ctx) -> std::sync::Arc<PlugstackFacts> {
    ctx.plugstack()
}

/// Gathers the plugstack family's facts now.
pub(super) fn gather_now(ctx: &Ctx) -> PlugstackFacts {
    let (_, conf) = ctx.slurm_conf();
    let conf = conf.ok();
    let (p, source) = path(ctx, conf.as_ref());
    let dirs = super::pmix::plugin_dirs(ctx, conf.as_ref());
    let mut w = Walked::default();
    let entries = match util::read_optional(&p) {
        Err(e) => Err(e),
        Ok(None) => Ok(vec![]),
        Ok(Some(_)) => {
            walk(&p, None, &dirs, &mut w, 0);
            Ok(std::mem::take(&mut w.entries))
        }
    };
    let base = |e: &Entry| e.path.rsplit('/').next().unwrap_or("").to_string();
    let loaded: Vec<String> = match &entries {
        Ok(e) => e.iter().map(|(e, _)| base(e)).collect(),
        Err(_) => vec![],
    };
    let mut unread: Vec<Entry> = vec![];
    if entries.is_ok() {
        // A candidate the walk above read whole (no include cut at MAX_DEPTH) lists only plugins
        // already loaded: it cannot add to `unread`, so it is not read again.
        let walked: Vec<String> = if w.cut {
            vec![]
        } else {
            w.files.iter().map(|f| f.path.clone()).collect()
        };
        for f in candidates(ctx, &p, conf.as_ref(), &mut w.memo) {
            if walked.contains(&f.display().to_string()) {
                continue;
            }
            let mut other = vec![];
            plugin_lines(&f, 0, &mut other);
            for e in other {
                let b = base(&e);
                if !loaded.contains(&b) && !unread.iter().any(|u| base(u) == b) {
                    unread.push(e);
                }
            }
        }
    }
    let pyxis_runtime = match &entries {
        Ok(e) => {
            let list: Vec<Entry> = e.iter().map(|(e, _)| e.clone()).collect();
            pyxis_runtime_path(&list).map(|rp| runtime_fs(&rp))
        }
        Err(_) => None,
    };
    // What the agent's unit may show otherwise than the node: the file and every plugin's .so.
    let hidden = std::iter::once(p.clone())
        .chain(
            entries
                .iter()
                .flatten()
                .map(|(e, _)| PathBuf::from(&e.path)),
        )
        .find_map(|f| super::view::hidden(ctx, &f));
    PlugstackFacts {
        hidden,
        path: p.display().to_string(),
        entries,
        problems: w.problems,
        source,
        unread,
        pyxis_runtime,
        files: w.files,
        listed: w.listed,
        unlisted_dirs: w.unlisted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name is read from the .so's bytes, and (as root, where it is kept between runs) a
    /// rewritten .so is read again: the kept answer never outlives the file it was read from.
    #[test]
    fn a_plugin_is_named_by_its_options_and_a_rewritten_so_is_read_again() {
        let d = std::env::temp_dir().join(format!("lg-identify-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        let so = d.join("spank_x.so");
        let pyxis = b"\x7fELF..container-image\0container-mounts\0container-workdir\0..";
        std::fs::write(&so, pyxis).unwrap();
        assert_eq!(identify(&so), "pyxis");
        assert_eq!(identify(&so), "pyxis", "the kept answer");
        // One option name only as part of a longer string: not that plugin.
        std::fs::write(
            &so,
            b"container-image\0container-mounts-x\0container-workdir\0",
        )
        .unwrap();
        assert_eq!(identify(&so), "spank_x.so");
        std::fs::write(&so, pyxis).unwrap();
        assert_eq!(identify(&so), "pyxis");
        // Unreadable (a directory in its place): the file name, and nothing kept.
        std::fs::remove_file(&so).unwrap();
        std::fs::create_dir(&so).unwrap();
        assert_eq!(identify(&so), "spank_x.so");
        if nix::unistd::geteuid().is_root() {
            let k = disk_cache::stat_key(&so).unwrap();
            assert_eq!(disk_cache::get(&cache_name(&so), &k, None), None);
        }
        std::fs::remove_dir_all(&d).unwrap();
        let _ = std::fs::remove_file(Path::new(disk_cache::DIR).join(cache_name(&so)));
    }

    /// Plugins in a `plugstack.conf.d/*.conf` that plugstack.conf does not include are `unread`;
    /// those of an included one are not (it is walked once, as part of the file Slurm reads), and
    /// a file included below [`MAX_DEPTH`] is read again from the top, where its plugins show.
    #[test]
    fn plugins_of_files_slurm_does_not_read_are_unread_and_included_ones_are_not() {
        let d = std::env::temp_dir().join(format!("lg-plugstack-unread-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("plugstack.conf.d")).unwrap();
        let w = |f: &str, t: String| std::fs::write(d.join(f), t).unwrap();
        let dd = d.display();
        w(
            "slurm.conf",
            format!("PlugStackConfig={dd}/plugstack.conf\nPluginDir={dd}\n"),
        );
        w(
            "plugstack.conf",
            format!("include {dd}/plugstack.conf.d/in-*.conf\n"),
        );
        w(
            "plugstack.conf.d/in-a.conf",
            "optional spank_included.so\n".into(),
        );
        w(
            "plugstack.conf.d/other.conf",
            "optional spank_elsewhere.so\n".into(),
        );
        let cfg = crate::config::Config {
            slurm_conf: Some(d.join("slurm.conf")),
            ..crate::config::Config::default()
        };
        let ctx = Ctx::new(cfg);
        let names = |f: &PlugstackFacts| {
            f.unread
                .iter()
                .map(|e| e.path.clone())
                .filter(|p| p.starts_with("spank_included") || p.starts_with("spank_elsewhere"))
                .collect::<Vec<_>>()
        };
        let f = gather(&ctx);
        assert_eq!(names(&f), vec!["spank_elsewhere.so"], "{:?}", f.unread);
        let loaded: Vec<&str> = f
            .entries
            .as_ref()
            .unwrap()
            .iter()
            .map(|(e, _)| e.path.as_str())
            .collect();
        assert_eq!(loaded, vec!["spank_included.so"]);
        // A chain of includes deeper than the walk follows: in-a.conf includes deep-1.conf, which
        // includes deep-2.conf, … deep-8.conf (depth 9 from plugstack.conf, not reached; depth 8
        // from in-a.conf read as a candidate) lists a plugin.
        w(
            "plugstack.conf.d/in-a.conf",
            format!("optional spank_included.so\ninclude {dd}/deep-1.conf\n"),
        );
        for i in 1..8 {
            w(
                &format!("deep-{i}.conf"),
                format!("include {dd}/deep-{}.conf\n", i + 1),
            );
        }
        w("deep-8.conf", "optional spank_included_deep.so\n".into());
        let f = gather(&ctx);
        assert!(
            f.problems.iter().any(|p| p.contains("nested more than")),
            "{:?}",
            f.problems
        );
        let unread: Vec<&str> = f.unread.iter().map(|e| e.path.as_str()).collect();
        assert!(unread.contains(&"spank_included_deep.so"), "{unread:?}");
        assert!(!unread.contains(&"spank_included.so"), "{unread:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_fifo_named_as_the_plugin_is_refused_without_blocking() {
        // Before: File::open on a FIFO without a writer blocked the node check.
        let dir = std::env::temp_dir().join(format!("lg-plugstack-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("spank_launchguard.so");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        match so_state(&fifo) {
            SoState::Broken(e) => assert!(e.contains("FIFO"), "{e}"),
            s => panic!("{s:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn show_config_values() {
        let t = "Configuration data as of 2026-12-01T03:00:00\nPlugStackConfig         = /etc/slurm/plugstack.conf\nSlurmctldPlugstack      = (null)\n";
        assert_eq!(
            show_config_value(t, "PlugStackConfig").as_deref(),
            Some("/etc/slurm/plugstack.conf")
        );
        assert_eq!(show_config_value(t, "SlurmctldPlugstack"), None);
        assert_eq!(show_config_value(t, "Plug"), None);
    }

    #[test]
    fn configless_copies_are_recognised() {
        assert!(is_configless(Path::new(
            "/var/spool/slurmd/conf-cache/slurm.conf"
        )));
        assert!(is_configless(Path::new("/run/slurm/conf/slurm.conf")));
        assert!(!is_configless(Path::new("/etc/slurm/slurm.conf")));
    }

    #[test]
    fn a_small_tmpfs_is_measured() {
        // /dev/shm is a tmpfs on every Linux this runs on.
        let f = runtime_fs("/dev/shm/lg-no-such-dir/pyxis");
        assert!(f.tmpfs_bytes.is_some(), "{f:?}");
        assert_eq!(f.network, None);
    }

    /// glob(3) as Slurm's include runs it: sorted, a leading dot never matched by `*`, every
    /// other name (backups included) matched, wildcards in a middle component too.
    #[test]
    fn includes_expand_as_glob_does() {
        let dir = std::env::temp_dir().join(format!("lg-plugstack-glob-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a.d")).unwrap();
        std::fs::create_dir_all(dir.join("b.d")).unwrap();
        for f in [
            "a.d/zz.conf",
            "a.d/10.conf",
            "a.d/10.conf~",
            "a.d/.10.conf.swp",
            "b.d/x.conf",
        ] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let d = dir.display();
        let names = |pat: String| {
            let (m, listed) = expand(&pat);
            (
                m.iter()
                    .map(|p| p.strip_prefix(&dir).unwrap().display().to_string())
                    .collect::<Vec<_>>(),
                listed.len(),
            )
        };
        assert_eq!(
            names(format!("{d}/a.d/*.conf")),
            (vec!["a.d/10.conf".into(), "a.d/zz.conf".into()], 1)
        );
        assert_eq!(
            names(format!("{d}/a.d/*")).0,
            vec!["a.d/10.conf", "a.d/10.conf~", "a.d/zz.conf"]
        );
        assert_eq!(names(format!("{d}/a.d/.*")).0, vec!["a.d/.10.conf.swp"]);
        assert_eq!(names(format!("{d}/*.d/x.conf")).0, vec!["b.d/x.conf"]);
        assert_eq!(
            names(format!("{d}/a.d/10.conf")),
            (vec!["a.d/10.conf".into()], 0)
        );
        assert_eq!(names(format!("{d}/a.d/none")).0, Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

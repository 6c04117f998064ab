//! Facts for `node.enroot.*`: enroot.conf, the runtime directory's state, tmpfiles.d entries, the
//! filesystems under the cache and data paths (`statfs`), and whether the node has EFA.

use super::nofollow::{self, WalkError};
use super::util;
use super::Ctx;
use launchguard_core::checks::enroot::{shared_dir, DirState};
use launchguard_core::host::Roots;
use launchguard_core::node::enroot::{
    fixed_part, hooks_dir, parse_conf, runtime_path, EnrootFacts, Fs, NvidiaHook, Storage,
};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// tmpfiles.d directories, as systemd-tmpfiles reads them.
const TMPFILES_DIRS: &[&str] = &[
    "/etc/tmpfiles.d",
    "/run/tmpfiles.d",
    "/usr/lib/tmpfiles.d",
    "/lib/tmpfiles.d",
];

/// `lstat` of a directory as [`DirState`].
pub fn dir_state(p: &Path) -> DirState {
    match p.symlink_metadata() {
        Err(_) => DirState::Missing,
        Ok(m) if !m.is_dir() => DirState::NotDir,
        Ok(m) => DirState::Dir {
            mode: m.mode() & 0o7777,
            uid: m.uid(),
        },
    }
}

/// Whether the node has an EFA device (under `<sys>/class/infiniband`).
pub fn has_efa(roots: &Roots) -> bool {
    super::devices::hcas(roots).iter().any(|(_, d)| d == "efa")
}

fn tmpfiles_has(dir: &str) -> bool {
    TMPFILES_DIRS.iter().any(|d| {
        util::glob_last(&Path::new(d).join("*.conf"))
            .iter()
            .any(|f| {
                util::read_text(f).is_ok_and(|t| {
                    t.lines().any(|l| {
                        let w: Vec<&str> = l.split_whitespace().collect();
                        w.len() >= 3
                            && matches!(w[0], "d" | "D")
                            && w[1].trim_end_matches('/') == dir
                            && w[2] == "1777"
                    })
                })
            })
    })
}

/// The deepest existing directory of `p` (`p` itself when it exists).
fn existing_ancestor(p: &Path) -> Option<PathBuf> {
    let mut cur = p.to_path_buf();
    while !cur.exists() {
        if !cur.pop() {
            return None;
        }
    }
    Some(cur)
}

/// The filesystem of an existing path: a network filesystem by its `statfs` magic, else the root
/// filesystem when it is on `/`'s device, else another local one.
pub fn fs_of(cur: &Path) -> Fs {
    let root_dev = std::fs::metadata("/").map(|m| m.dev()).ok();
    let dev = std::fs::metadata(cur).map(|m| m.dev()).ok();
    match nix::sys::statfs::statfs(cur) {
        Ok(s) => {
            // f_type is a c_long (i64 here, i32 on 32-bit targets).
            #[allow(clippy::unnecessary_cast)]
            let magic = s.filesystem_type().0 as i64;
            if let Some((_, name)) = util::NETWORK_FS.iter().find(|(m, _)| *m == magic) {
                Fs::Network((*name).into())
            } else if dev.is_some() && dev == root_dev {
                Fs::Root
            } else {
                Fs::Local
            }
        }
        Err(e) => Fs::Unknown(e.to_string()),
    }
}

/// One storage path: its fixed part's state, the deepest existing directory, its filesystem, and
/// who other than root controls the fixed part. The fixed part is walked from `/` without following
/// anyone's symlinks ([`nofollow::walk_dir`]) and judged on what the walk opened, so a user's
/// `ln -s /nonexistent` at a parent is reported as theirs, not followed.
fn storage(key: &str, path: &str) -> Option<Storage> {
    let fixed = fixed_part(path)?;
    let link_state = |l: &nofollow::Link| DirState::Dir {
        mode: l.mode,
        uid: l.uid,
    };
    // The first directory of a walked chain that others cannot search.
    let blocked = |chain: &[nofollow::Link]| {
        chain
            .iter()
            .find(|l| l.mode & 0o001 == 0)
            .map(|l| (l.path.clone(), l.mode, l.uid))
    };
    let mut unsearchable = None;
    let (base, anc, controlled_by) = match nofollow::walk_dir(Path::new(&fixed)) {
        Ok(w) => {
            unsearchable = blocked(&w.chain);
            let (last, above) = w.chain.split_last()?;
            (
                link_state(last),
                (w.path.display().to_string(), link_state(last)),
                nofollow::controlled_by(above, last.uid),
            )
        }
        Err(WalkError::Missing { parent, name }) => {
            unsearchable = blocked(&parent.chain);
            let last = parent.chain.last()?;
            let who = if last.uid != 0 || last.mode & 0o022 != 0 {
                Some(format!(
                    "'{}' does not exist and {} can create it",
                    Path::new(&parent.path).join(&name).display(),
                    if last.uid != 0 {
                        nofollow::account(last.uid)
                    } else {
                        "every account that can write its parent".into()
                    }
                ))
            } else {
                nofollow::controlled_by(&parent.chain, 0)
            };
            (
                DirState::Missing,
                (parent.path.clone(), link_state(last)),
                who,
            )
        }
        Err(WalkError::Symlink { at, uid, parent } | WalkError::NotDir { at, uid, parent }) => {
            let last = parent.chain.last()?;
            let who = match nofollow::controlled_by(&parent.chain, uid) {
                Some(_) if uid != 0 => Some(format!("{} owns '{at}'", nofollow::account(uid))),
                w => w,
            };
            (
                DirState::NotDir,
                (parent.path.clone(), link_state(last)),
                who,
            )
        }
        Err(WalkError::Other(e)) => {
            tracing::debug!("{key} {path}: {e}");
            let anc = existing_ancestor(Path::new(&fixed))?;
            (
                dir_state(Path::new(&fixed)),
                (anc.display().to_string(), dir_state(&anc)),
                None,
            )
        }
    };
    Some(Storage {
        key: key.into(),
        path: path.into(),
        fs: fs_of(Path::new(&anc.0)),
        base,
        ancestor: anc,
        controlled_by,
        unsearchable,
    })
}

/// Directories searched for `nvidia-container-cli` (the PATH of a Slurm step and of root).
const BIN_DIRS: &[&str] = &["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/sbin"];

/// enroot's NVIDIA hook: GPUs present (`<proc>/driver/nvidia/gpus`, `<dev>/nvidia0`), the hook
/// executable in `hooks.d` beside enroot.conf, the cli.
pub fn nvidia_hook(roots: &Roots, conf_path: &Path) -> NvidiaHook {
    let gpu = std::fs::read_dir(roots.proc.join("driver/nvidia/gpus"))
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
        || roots.dev.join("nvidia0").exists();
    let hook = Path::new(&hooks_dir(&conf_path.display().to_string())).join("98-nvidia.sh");
    let hook = std::fs::metadata(&hook)
        .ok()
        .filter(|m| m.is_file() && m.mode() & 0o111 != 0)
        .map(|_| hook.display().to_string());
    let cli = BIN_DIRS
        .iter()
        .map(|d| Path::new(d).join("nvidia-container-cli"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string());
    NvidiaHook { gpu, hook, cli }
}

/// Gathers the enroot family's facts.
pub fn gather(ctx: &Ctx) -> EnrootFacts {
    let conf_path = ctx.cfg.enroot.conf.clone();
    let mut conf = match util::read_optional(&conf_path) {
        // No enroot.conf: enroot still runs with its defaults if installed.
        Ok(None) if Path::new("/usr/bin/enroot").exists() => Ok(Some(String::new())),
        other => other,
    };
    // enroot reads enroot.conf.d/*.conf after enroot.conf; later settings win.
    if let Ok(Some(text)) = &mut conf {
        let dropins = conf_path.with_extension("conf.d").join("*.conf");
        for f in util::glob_last(&dropins) {
            if let Ok(t) = util::read_text(&f) {
                text.push('\n');
                text.push_str(&t);
            }
        }
    }
    let pairs = match &conf {
        Ok(Some(t)) => parse_conf(t).0,
        _ => vec![],
    };
    let dir = shared_dir(&runtime_path(&pairs));
    // The last setting of each key wins (enroot sources the files in order).
    let storage: Vec<Storage> = ["ENROOT_CACHE_PATH", "ENROOT_DATA_PATH"]
        .iter()
        .filter_map(|k| pairs.iter().rev().find(|(pk, _)| pk == k))
        .filter_map(|(k, v)| storage(k, v))
        .collect();
    // What the agent's unit may show otherwise than the node (its own /tmp, a hidden /home).
    let hidden = dir
        .iter()
        .cloned()
        .chain(storage.iter().filter_map(|s| fixed_part(&s.path)))
        .filter_map(|p| super::view::hidden(ctx, Path::new(&p)).map(|why| (p, why)))
        .collect();
    EnrootFacts {
        conf_path: conf_path.display().to_string(),
        conf,
        run_dir: dir.as_ref().map(|d| (d.clone(), dir_state(Path::new(d)))),
        tmpfiles: dir.as_deref().is_some_and(tmpfiles_has),
        storage,
        efa: has_efa(&ctx.roots),
        plugin_repairs: dir
            .as_deref()
            .is_some_and(|d| plugin_repairs(ctx, &conf_path, d)),
        nvidia: nvidia_hook(&ctx.roots, &conf_path),
        hidden,
    }
}

/// Whether plugstack lists launchguard with `enroot_runtime` on and `enroot_repair=yes`, judging
/// this same directory: its `enroot_runtime_path=` names it, or it reads this same enroot.conf.
fn plugin_repairs(ctx: &Ctx, conf_path: &Path, dir: &str) -> bool {
    use launchguard_core::{policy::parse_args, CheckKind, Mode};
    let facts = super::plugstack::gather(ctx);
    let Ok(entries) = &facts.entries else {
        return false;
    };
    entries
        .iter()
        .find(|(e, _)| e.path.ends_with("spank_launchguard.so"))
        .is_some_and(|(e, _)| {
            let (p, _) = parse_args(&e.args);
            let same = match &p.enroot_runtime_path {
                Some(rp) => shared_dir(rp).as_deref() == Some(dir),
                None => Path::new(&p.enroot_conf) == conf_path,
            };
            same && p.enroot_repair && p.mode_for(CheckKind::EnrootRuntime) != Mode::Off
        })
}

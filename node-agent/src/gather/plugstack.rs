//! Facts for `node.plugstack.*`: plugstack.conf (slurm.conf's `PlugStackConfig`, else beside
//! slurm.conf) with its includes, and the state of each plugin's .so (exists, an ELF shared object).

use super::util;
use super::Ctx;
use launchguard_core::node::plugstack::{parse, Entry, Line, PlugstackFacts, SoState};
use launchguard_core::slurm_conf::SlurmConf;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Include depth followed.
const MAX_DEPTH: usize = 8;

/// Whether `p` looks loadable: readable, ELF, `ET_DYN` (a shared object).
pub fn so_state(p: &Path) -> SoState {
    let mut head = [0u8; 18];
    match std::fs::File::open(p) {
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

/// plugstack.conf's path: slurm.conf's `PlugStackConfig`, else beside slurm.conf.
pub fn path(ctx: &Ctx, conf: Option<&SlurmConf>) -> PathBuf {
    match conf.and_then(|c| c.get("PlugStackConfig")) {
        Some(p) => PathBuf::from(p),
        None => ctx.slurm_dir().join("plugstack.conf"),
    }
}

fn walk(
    file: &Path,
    plugin_dirs: &[PathBuf],
    out: &mut Vec<(Entry, SoState)>,
    problems: &mut Vec<String>,
    depth: usize,
) {
    let Ok(text) = util::read_text(file) else {
        problems.push(format!("{}: cannot read", file.display()));
        return;
    };
    let (lines, p) = parse(&text, &file.display().to_string());
    problems.extend(p);
    for l in lines {
        match l {
            Line::Plugin(e) => {
                let st = if e.path.starts_with('/') {
                    so_state(Path::new(&e.path))
                } else {
                    plugin_dirs
                        .iter()
                        .map(|d| so_state(&d.join(&e.path)))
                        .find(|s| *s == SoState::Loadable)
                        .unwrap_or_else(|| SoState::Missing(e.path.clone()))
                };
                out.push((e, st));
            }
            Line::Include(g) if depth < MAX_DEPTH => {
                let base = file.parent().unwrap_or(Path::new("/"));
                let pat = if g.starts_with('/') {
                    PathBuf::from(&g)
                } else {
                    base.join(&g)
                };
                for f in util::glob_last(&pat) {
                    walk(&f, plugin_dirs, out, problems, depth + 1);
                }
            }
            Line::Include(g) => {
                problems.push(format!("include {g}: nested more than {MAX_DEPTH} deep"))
            }
        }
    }
}

/// Gathers the plugstack family's facts.
pub fn gather(ctx: &Ctx) -> PlugstackFacts {
    let (_, conf) = ctx.slurm_conf();
    let conf = conf.ok();
    let p = path(ctx, conf.as_ref());
    let dirs = super::pmix::plugin_dirs(ctx, conf.as_ref());
    let mut entries = vec![];
    let mut problems = vec![];
    let entries = match util::read_optional(&p) {
        Err(e) => Err(e),
        Ok(None) => Ok(entries),
        Ok(Some(_)) => {
            walk(&p, &dirs, &mut entries, &mut problems, 0);
            Ok(entries)
        }
    };
    PlugstackFacts {
        path: p.display().to_string(),
        entries,
        problems,
    }
}

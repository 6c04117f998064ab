//! Facts for `node.munge.dirs_secure` and `node.munge.socket_dir_access`: munged's options (from the
//! running munged's `/proc/<pid>/cmdline`, else the `OPTIONS=` line of `/etc/default/munge` or
//! `/etc/sysconfig/munge` that its unit reads), the directories above each of its files (realpath of
//! the file's directory, then `lstat` of each directory up to `/`, as munged walks them), and
//! munge.service's `RuntimeDirectoryMode=`.

use super::Ctx;
use launchguard_core::node::munge_paths::{Dir, MungePathFacts, Role, Walk};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// munged(8)'s built-in seed file.
const DEFAULT_SEED: &str = "/var/lib/munge/munged.seed";
/// munged(8)'s built-in log file.
const DEFAULT_LOG: &str = "/var/log/munge/munged.log";

/// munged's options that matter here.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Options {
    /// `--key-file`.
    pub key: Option<String>,
    /// `--socket` / `-S`.
    pub socket: Option<String>,
    /// `--pid-file`.
    pub pid: Option<String>,
    /// `--seed-file`.
    pub seed: Option<String>,
    /// `--log-file`.
    pub log: Option<String>,
    /// `--trusted-group`.
    pub trusted_group: Option<String>,
    /// `-f` / `--force`.
    pub force: bool,
    /// `--syslog` (no log file).
    pub syslog: bool,
}

/// Parses munged's arguments (`--opt=value`, `--opt value`, `-S value`, `-f`); unknown ones are
/// skipped.
pub fn parse_options<S: AsRef<str>>(args: &[S]) -> Options {
    let mut o = Options::default();
    let mut it = args.iter().map(AsRef::as_ref).peekable();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a, None),
        };
        let slot = match name {
            "--key-file" => &mut o.key,
            "--socket" | "-S" => &mut o.socket,
            "--pid-file" => &mut o.pid,
            "--seed-file" => &mut o.seed,
            "--log-file" => &mut o.log,
            "--trusted-group" => &mut o.trusted_group,
            "-f" | "--force" => {
                o.force = true;
                continue;
            }
            "--syslog" => {
                o.syslog = true;
                continue;
            }
            _ => continue,
        };
        *slot = inline.or_else(|| it.next().map(String::from));
    }
    o
}

/// munged's arguments and effective uid: the running munged's (through its pid file), else the
/// options its unit would pass and the `munge` user's uid.
fn options(ctx: &Ctx) -> (Options, Option<u32>) {
    let pid = super::util::read_bytes(&ctx.cfg.munge.pid_file, 64)
        .ok()
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<u32>().ok());
    if let Some(pid) = pid {
        let dir = ctx.roots.proc.join(pid.to_string());
        let cmdline = super::util::read_bytes(&dir.join("cmdline"), 64 << 10).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.first().is_some_and(|a| a.ends_with("munged")) {
            let euid = super::util::read_bytes(&dir.join("status"), 64 << 10)
                .ok()
                .and_then(|b| {
                    String::from_utf8_lossy(&b)
                        .lines()
                        .find_map(|l| l.strip_prefix("Uid:"))
                        .and_then(|u| u.split_whitespace().nth(1)?.parse().ok())
                });
            return (parse_options(&args[1..]), euid);
        }
    }
    let mut o = Options::default();
    for f in ["default/munge", "sysconfig/munge"] {
        if let Ok(t) = super::util::read_bytes(&ctx.roots.etc.join(f), 64 << 10) {
            let t = String::from_utf8_lossy(&t).into_owned();
            if let Some(v) = t
                .lines()
                .filter_map(|l| l.trim().strip_prefix("OPTIONS="))
                .next_back()
            {
                let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
                o = parse_options(&v.split_whitespace().collect::<Vec<_>>());
            }
        }
    }
    (o, ctx.munge_uid())
}

/// The directories above `file`: realpath of its directory, then each parent up to `/` (`lstat`).
pub fn walk(file: &Path) -> Result<Vec<Dir>, String> {
    let parent = file.parent().filter(|p| !p.as_os_str().is_empty());
    let start = std::fs::canonicalize(parent.unwrap_or(Path::new("/")))
        .map_err(|e| format!("{}: {e}", parent.unwrap_or(Path::new("/")).display()))?;
    let mut out = vec![];
    let mut cur: Option<&Path> = Some(&start);
    while let Some(p) = cur {
        let md = std::fs::symlink_metadata(p).map_err(|e| format!("{}: {e}", p.display()))?;
        out.push(Dir {
            path: p.display().to_string(),
            uid: md.uid(),
            gid: md.gid(),
            mode: md.mode() & 0o7777,
            is_dir: md.file_type().is_dir(),
        });
        cur = p.parent();
    }
    Ok(out)
}

/// munge.service's `RuntimeDirectoryMode=` when its `RuntimeDirectory=` names `munge`: the unit file
/// from the first of `/etc`, `/run`, `/usr/lib`, `/lib` that has it, then its drop-ins in name order
/// (the last setting wins, systemd.unit(5)).
fn runtime_dir_mode(ctx: &Ctx) -> Option<u32> {
    let etc = &ctx.roots.etc;
    let bases: Vec<PathBuf> = vec![
        etc.join("systemd/system"),
        "/run/systemd/system".into(),
        "/usr/lib/systemd/system".into(),
        "/lib/systemd/system".into(),
    ];
    let mut files: Vec<PathBuf> = bases
        .iter()
        .map(|b| b.join("munge.service"))
        .find(|p| p.is_file())
        .into_iter()
        .collect();
    let mut drop_ins: Vec<PathBuf> = bases
        .iter()
        .filter_map(|b| std::fs::read_dir(b.join("munge.service.d")).ok())
        .flat_map(|rd| rd.filter_map(Result::ok).take(64).map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    drop_ins.sort_by_key(|p| p.file_name().map(|n| n.to_owned()));
    files.extend(drop_ins);
    let (mut dir, mut mode) = (false, None);
    for f in files {
        let Ok(b) = super::util::read_bytes(&f, 64 << 10) else {
            continue;
        };
        for l in String::from_utf8_lossy(&b).lines() {
            if let Some(v) = l.trim().strip_prefix("RuntimeDirectory=") {
                dir = v.split_whitespace().any(|d| d == "munge");
            } else if let Some(v) = l.trim().strip_prefix("RuntimeDirectoryMode=") {
                mode = u32::from_str_radix(v.trim(), 8).ok();
            }
        }
    }
    if dir {
        Some(mode.unwrap_or(0o755))
    } else {
        None
    }
}

/// Gathers this family's facts.
pub fn gather(ctx: &Ctx) -> MungePathFacts {
    let (o, euid) = options(ctx);
    let m = &ctx.cfg.munge;
    let path =
        |opt: &Option<String>, dflt: &Path| opt.clone().map(PathBuf::from).unwrap_or(dflt.into());
    let mut files = vec![
        (Role::Key, path(&o.key, &m.key)),
        (Role::Pid, path(&o.pid, &m.pid_file)),
        (Role::Socket, path(&o.socket, &m.socket)),
        (Role::Seed, path(&o.seed, Path::new(DEFAULT_SEED))),
    ];
    if !o.syslog {
        files.push((Role::Log, path(&o.log, Path::new(DEFAULT_LOG))));
    }
    let trusted_gid = o.trusted_group.as_deref().and_then(|g| {
        g.parse::<u32>().ok().or_else(|| {
            nix::unistd::Group::from_name(g)
                .ok()
                .flatten()
                .map(|x| x.gid.as_raw())
        })
    });
    MungePathFacts {
        walks: files
            .into_iter()
            .map(|(role, f)| Walk {
                role,
                file: f.display().to_string(),
                dirs: walk(&f),
            })
            .collect(),
        munge_uid: euid.unwrap_or(0),
        trusted_gid,
        force: o.force,
        runtime_dir_mode: runtime_dir_mode(ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn munged_options_parse_in_every_spelling() {
        let o = parse_options(&[
            "--key-file=/k",
            "-S",
            "/s",
            "--pid-file",
            "/p",
            "--force",
            "--trusted-group=adm",
            "--syslog",
            "--num-threads=4",
        ]);
        assert_eq!(o.key.as_deref(), Some("/k"));
        assert_eq!(o.socket.as_deref(), Some("/s"));
        assert_eq!(o.pid.as_deref(), Some("/p"));
        assert_eq!(o.trusted_group.as_deref(), Some("adm"));
        assert!(o.force && o.syslog);
        assert_eq!(parse_options(&["-S"]).socket, None);
    }

    #[test]
    fn the_walk_goes_from_the_files_directory_up_to_the_root() {
        let w = walk(Path::new("/etc/hostname")).unwrap();
        let paths: Vec<&str> = w.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["/etc", "/"]);
        assert!(walk(Path::new("/nonexistent-lg/x")).is_err());
    }
}

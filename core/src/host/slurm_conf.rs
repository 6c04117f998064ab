//! slurm.conf read from disk with its `Include` files, the way Slurm's daemons and commands read
//! it: the one reader the SPANK plugin (srun's `launch.pmix`) and the agent (`node.*`) share.
//!
//! Where a relative include name is looked up (Slurm's `src/common/parse_config.c` and
//! `read_config.c`): beside slurm.conf (the directory of `SLURM_CONF`, or of the default file) on
//! 23.02 and later; beside the file whose line names it on 22.05 and older
//! ([`SlurmRelease::include_beside_including_file`]). An absolute name is used as is. No glob is
//! expanded (see [`crate::slurm_conf`]). Every file is read with [`files::read_whole`]: regular
//! files only, opened without blocking, at most [`MAX_FILE`] bytes each.

use super::files;
use crate::release::SlurmRelease;
use crate::slurm_conf::{self, SlurmConf};
use std::path::{Path, PathBuf};

/// Largest slurm.conf or included file read, in bytes.
pub const MAX_FILE: u64 = 4 << 20;

/// Reads `path` and the files its `Include` lines name, as `release` does (`None`: the rule of
/// 23.02 and later). Errors: the main file's own (`NotFound`, `PermissionDenied`, too large…); an
/// include that cannot be read is not an error here but an entry of
/// [`SlurmConf::include_errors`] naming the file and the operating system's reason.
pub fn read(path: &Path, release: Option<SlurmRelease>) -> std::io::Result<SlurmConf> {
    let main = text(path)?;
    let conf_dir = dir_of(path);
    let beside_includer = release.is_some_and(|r| r.include_beside_including_file());
    let mut include = |name: &str, from: &str| -> Result<(String, String), String> {
        let p = if name.starts_with('/') {
            PathBuf::from(name)
        } else if beside_includer {
            dir_of(Path::new(from)).join(name)
        } else {
            conf_dir.join(name)
        };
        text(&p)
            .map(|t| (p.display().to_string(), t))
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    Ok(slurm_conf::parse(
        &main,
        &path.display().to_string(),
        &mut include,
    ))
}

fn text(p: &Path) -> std::io::Result<String> {
    files::read_whole(p, MAX_FILE).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn dir_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lg-conf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("conf.d")).unwrap();
        d
    }

    #[test]
    fn relative_includes_follow_the_release_rule() {
        let d = tmp("rel");
        std::fs::write(
            d.join("slurm.conf"),
            "ClusterName=c\nInclude conf.d/a.conf\n",
        )
        .unwrap();
        std::fs::write(d.join("conf.d/a.conf"), "Include b.conf\n").unwrap();
        std::fs::write(d.join("b.conf"), "MpiDefault=pmix\n").unwrap();
        std::fs::write(d.join("conf.d/b.conf"), "MpiDefault=pmi2\n").unwrap();
        let main = d.join("slurm.conf");
        // 23.02 and later: beside slurm.conf.
        let c = read(&main, Some(SlurmRelease::new(24, 11))).unwrap();
        assert_eq!(c.get("MpiDefault"), Some("pmix"), "{:?}", c.problems);
        assert_eq!(read(&main, None).unwrap().get("MpiDefault"), Some("pmix"));
        // 22.05: beside the including file.
        let c = read(&main, Some(SlurmRelease::new(22, 5))).unwrap();
        assert_eq!(c.get("MpiDefault"), Some("pmi2"), "{:?}", c.problems);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_unreadable_or_missing_include_is_named_with_its_reason() {
        let d = tmp("bad");
        std::fs::write(
            d.join("slurm.conf"),
            "Include gone.conf\nInclude conf.d\nInclude secret.conf\n",
        )
        .unwrap();
        std::fs::write(d.join("secret.conf"), "MpiDefault=pmix\n").unwrap();
        std::fs::set_permissions(
            d.join("secret.conf"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
        let c = read(&d.join("slurm.conf"), None).unwrap();
        let e = &c.include_errors;
        assert!(
            e[0].contains("gone.conf: No such file or directory"),
            "{e:?}"
        );
        assert!(e[1].contains("a directory, not a regular file"), "{e:?}");
        if nix_is_root() {
            // root reads a mode-0 file: no error.
            assert_eq!(e.len(), 2, "{e:?}");
        } else {
            assert!(e[2].contains("secret.conf: Permission denied"), "{e:?}");
        }
        // The main file missing is the caller's error.
        assert_eq!(
            read(&d.join("nothere.conf"), None).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn nix_is_root() -> bool {
        std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(false)
    }
}

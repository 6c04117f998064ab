//! Walking paths as root without following anyone else's symlinks, and who controls a path.
//!
//! The agent runs as root and looks into directories users can write (`[munge] shared_paths`,
//! enroot's data path in `/tmp`, the textfile's directory). A check that `lstat`s a path and then
//! opens it by name follows whatever a user swapped in between (`renameat2(RENAME_EXCHANGE)` of a
//! directory and a symlink to `/etc/munge`). So every path is walked from `/` one component at a
//! time with `openat(…, O_NOFOLLOW | O_DIRECTORY)`, each decision is made on the opened descriptor
//! (`fstat`), and files are read through the descriptor that was judged. A symlink in the configured
//! part of a path is followed only when root owns it and the directory holding it is root's alone
//! (as `fs.protected_symlinks`, proc(5), but stricter); below that, never. The `nix` crate gives
//! the calls; a raw descriptor from `openat` becomes a [`File`] through `dup3` onto a descriptor a
//! `File` already owns, so no `unsafe` is needed here.

use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, OFlag};
use nix::sys::stat::{fstatat, Mode, SFlag};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Most symlinks followed while walking one configured path (as the kernel's 40, but smaller).
const MAX_HOPS: usize = 8;

/// Turns a descriptor returned by `openat` into a [`File`] that closes it: `dup3` it (with
/// `O_CLOEXEC`) onto the descriptor of a `File` opened on `/dev/null`, then close the original.
fn adopt(raw: RawFd) -> std::io::Result<File> {
    let holder = File::open("/dev/null");
    let r = holder.and_then(|f| {
        nix::unistd::dup3(raw, f.as_raw_fd(), OFlag::O_CLOEXEC)?;
        Ok(f)
    });
    let _ = nix::unistd::close(raw);
    r
}

/// `openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC)` as a [`File`]; `name` is one path component.
/// A symlink gives `ELOOP` (or `ENOTDIR` with `O_DIRECTORY`).
pub fn open_at(dir: &File, name: &OsStr, flags: OFlag) -> std::io::Result<File> {
    if name.is_empty() || name == "." || name == ".." || name.as_bytes().contains(&b'/') {
        return Err(Errno::EINVAL.into());
    }
    let raw = openat(
        Some(dir.as_raw_fd()),
        name,
        flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    adopt(raw)
}

/// Creates the file `name` under `dir` with `mode` (`O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW`): an
/// existing entry, a symlink included, gives `EEXIST` and is never followed.
pub fn create_at(dir: &File, name: &OsStr, mode: u32) -> std::io::Result<File> {
    if name.is_empty() || name == "." || name == ".." || name.as_bytes().contains(&b'/') {
        return Err(Errno::EINVAL.into());
    }
    let raw = openat(
        Some(dir.as_raw_fd()),
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(mode),
    )?;
    adopt(raw)
}

/// Opens the directory `name` under `dir` (`O_RDONLY | O_DIRECTORY | O_NOFOLLOW`).
pub fn open_dir_at(dir: &File, name: &OsStr) -> std::io::Result<File> {
    open_at(dir, name, OFlag::O_RDONLY | OFlag::O_DIRECTORY)
}

/// The first `max` entries of an open directory (without `.` and `..`) with their `d_type` when the
/// filesystem gives one. Read through a second descriptor of the same directory
/// (`openat(dir, ".")`), never by path.
pub fn entries(dir: &File, max: usize) -> std::io::Result<Vec<(OsString, Option<Type>)>> {
    let mut d = Dir::openat(
        Some(dir.as_raw_fd()),
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = vec![];
    for e in d.iter() {
        if out.len() >= max {
            break;
        }
        let e = e?;
        let name = OsStr::from_bytes(e.file_name().to_bytes());
        if name != "." && name != ".." {
            out.push((name.to_os_string(), e.file_type()));
        }
    }
    Ok(out)
}

/// The type of entry `name` in `dir` without following it (`fstatat(AT_SYMLINK_NOFOLLOW)`): only to
/// skip devices and FIFOs before an open; what is read is judged by `fstat` of the opened file.
pub fn entry_type(dir: &File, name: &OsStr) -> Option<Type> {
    let st = fstatat(
        Some(dir.as_raw_fd()),
        name,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .ok()?;
    let fmt = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
    Some(match fmt {
        SFlag::S_IFDIR => Type::Directory,
        SFlag::S_IFREG => Type::File,
        SFlag::S_IFLNK => Type::Symlink,
        SFlag::S_IFIFO => Type::Fifo,
        SFlag::S_IFSOCK => Type::Socket,
        SFlag::S_IFCHR => Type::CharacterDevice,
        _ => Type::BlockDevice,
    })
}

/// One directory on a walked path, as `fstat` of its open descriptor saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The directory's path as walked (no symlinks in it).
    pub path: String,
    /// Owner uid.
    pub uid: u32,
    /// Group gid.
    pub gid: u32,
    /// `st_mode & 0o7777`.
    pub mode: u32,
}

impl Link {
    /// Reads owner and mode of an open directory.
    pub fn of(f: &File, path: &Path) -> std::io::Result<Link> {
        let m = f.metadata()?;
        Ok(Link {
            path: path.display().to_string(),
            uid: m.uid(),
            gid: m.gid(),
            mode: m.mode() & 0o7777,
        })
    }

    /// Root's alone: owned by root, writable by nobody else.
    fn roots_alone(&self) -> bool {
        self.uid == 0 && self.mode & 0o022 == 0
    }
}

/// An open directory reached from `/` without following anyone's symlinks.
#[derive(Debug)]
pub struct Walked {
    /// The open directory.
    pub dir: File,
    /// Its path as walked: root's symlinks resolved, so it names no symlink.
    pub path: PathBuf,
    /// Every directory from `/` to it (both included).
    pub chain: Vec<Link>,
}

/// Why a walk stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkError {
    /// A component is missing: the deepest directory reached and the missing name.
    Missing { parent: Reached, name: String },
    /// A component is a symlink launchguard does not follow: where, its owner, and the directory
    /// holding it.
    Symlink {
        at: String,
        uid: u32,
        parent: Reached,
    },
    /// A component is not a directory: where, its owner, and the directory holding it.
    NotDir {
        at: String,
        uid: u32,
        parent: Reached,
    },
    /// Any other failure (`EACCES`, `ELOOP` from too many root symlinks, a relative path…).
    Other(String),
}

/// The part of a [`Walked`] kept in an error (the descriptor is not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// The deepest directory reached.
    pub path: String,
    /// Its chain from `/`.
    pub chain: Vec<Link>,
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WalkError::Missing { parent, name } => {
                write!(
                    f,
                    "'{}/{name}' does not exist",
                    parent.path.trim_end_matches('/')
                )
            }
            WalkError::Symlink { at, uid, .. } => {
                write!(f, "'{at}' is a symlink owned by {}", account(*uid))
            }
            WalkError::NotDir { at, .. } => write!(f, "'{at}' is not a directory"),
            WalkError::Other(e) => f.write_str(e),
        }
    }
}

/// `uid N (name)`, or `uid N` when the account has no name.
pub fn account(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("uid {uid} ({})", u.name),
        _ => format!("uid {uid}"),
    }
}

fn io(e: impl std::fmt::Display, at: &Path) -> WalkError {
    WalkError::Other(format!("{}: {e}", at.display()))
}

/// Opens directory `path` walking from `/` ([module docs](self)). `..` is refused; a symlink is
/// followed only when root owns it and the directory holding it is root's alone, at most
/// [`MAX_HOPS`] times.
pub fn walk_dir(path: &Path) -> Result<Walked, WalkError> {
    walk(path, MAX_HOPS)
}

/// Like [`walk_dir`], but no symlink is followed at all (a place root writes to).
pub fn walk_dir_strict(path: &Path) -> Result<Walked, WalkError> {
    walk(path, 0)
}

fn walk(path: &Path, max_hops: usize) -> Result<Walked, WalkError> {
    if !path.is_absolute() {
        return Err(WalkError::Other(format!(
            "'{}' is not an absolute path",
            path.display()
        )));
    }
    let mut todo: Vec<OsString> = comps(path)?;
    todo.reverse();
    let mut hops = 0;
    let root = || -> Result<(File, PathBuf, Vec<Link>), WalkError> {
        let f = File::open("/").map_err(|e| io(e, Path::new("/")))?;
        let l = Link::of(&f, Path::new("/")).map_err(|e| io(e, Path::new("/")))?;
        Ok((f, PathBuf::from("/"), vec![l]))
    };
    let (mut dir, mut at, mut chain) = root()?;
    while let Some(name) = todo.pop() {
        let next = at.join(&name);
        match open_dir_at(&dir, &name) {
            Ok(f) => {
                chain.push(Link::of(&f, &next).map_err(|e| io(e, &next))?);
                dir = f;
                at = next;
            }
            Err(e) if e.raw_os_error() == Some(Errno::ENOENT as i32) => {
                return Err(WalkError::Missing {
                    parent: Reached {
                        path: at.display().to_string(),
                        chain,
                    },
                    name: name.to_string_lossy().into_owned(),
                })
            }
            Err(e)
                if e.raw_os_error() == Some(Errno::ELOOP as i32)
                    || e.raw_os_error() == Some(Errno::ENOTDIR as i32) =>
            {
                let st = fstatat(
                    Some(dir.as_raw_fd()),
                    name.as_os_str(),
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                )
                .map_err(|e| io(e, &next))?;
                let shown = next.display().to_string();
                let parent = Reached {
                    path: at.display().to_string(),
                    chain: chain.clone(),
                };
                if st.st_mode & SFlag::S_IFMT.bits() != SFlag::S_IFLNK.bits() {
                    return Err(WalkError::NotDir {
                        at: shown,
                        uid: st.st_uid,
                        parent,
                    });
                }
                let holder_trusted = chain.last().is_some_and(Link::roots_alone);
                if st.st_uid != 0 || !holder_trusted || max_hops == 0 {
                    return Err(WalkError::Symlink {
                        at: shown,
                        uid: st.st_uid,
                        parent,
                    });
                }
                hops += 1;
                if hops > max_hops {
                    return Err(WalkError::Other(format!(
                        "more than {max_hops} symlinks under '{shown}'"
                    )));
                }
                let target = readlinkat(Some(dir.as_raw_fd()), name.as_os_str())
                    .map_err(|e| io(e, &next))?;
                let target = PathBuf::from(target);
                let mut more = comps(&target)?;
                more.reverse();
                todo.extend(more);
                if target.is_absolute() {
                    (dir, at, chain) = root()?;
                }
            }
            Err(e) => return Err(io(e, &next)),
        }
    }
    Ok(Walked {
        dir,
        path: at,
        chain,
    })
}

/// The normal components of a path; `..` refused (a walk never goes back up).
fn comps(p: &Path) -> Result<Vec<OsString>, WalkError> {
    let mut out = vec![];
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n.to_os_string()),
            Component::ParentDir => {
                return Err(WalkError::Other(format!("'{}' contains '..'", p.display())))
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Who, other than root, can change what a path resolves to: the first directory of `chain` (from
/// `/` down to the directory holding the entry) that an unprivileged account can write, judged with
/// the owner of the entry below it (`leaf_uid`: the entry's own owner). A directory owned by a user
/// is theirs; a group- or world-writable one lets others rename its entries, unless it is sticky
/// and the entry below is root's (unlink(2), `EPERM` under the sticky bit). An entry owned by a
/// user is theirs. `None`: only root can change it.
pub fn controlled_by(chain: &[Link], leaf_uid: u32) -> Option<String> {
    controller(chain, leaf_uid).map(|c| c.text)
}

/// Who controls a path ([`controlled_by`]): the account, when one user does, and the words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// The one account that controls it (`None`: a group or every account).
    pub uid: Option<u32>,
    /// E.g. `uid 1001 (alice) owns '/home/alice'`.
    pub text: String,
}

/// [`controlled_by`] with the controlling account's uid.
pub fn controller(chain: &[Link], leaf_uid: u32) -> Option<Control> {
    let user = |uid: u32, what: String| Control {
        uid: Some(uid),
        text: format!("{} owns {what}", account(uid)),
    };
    let many = |text: String| Control { uid: None, text };
    for (i, d) in chain.iter().enumerate() {
        if d.uid != 0 {
            return Some(user(d.uid, format!("'{}'", d.path)));
        }
        let (below, below_path) = match chain.get(i + 1) {
            Some(n) => (n.uid, format!("'{}'", n.path)),
            None => (leaf_uid, "it".to_string()),
        };
        let sticky = d.mode & 0o1000 != 0;
        let others_write = d.mode & 0o002 != 0 || (d.mode & 0o020 != 0 && d.gid != 0);
        if others_write && sticky && below != 0 {
            // Under the sticky bit only the entry's owner (and the directory's) can rename it.
            return Some(user(below, below_path));
        }
        if d.mode & 0o002 != 0 && !sticky {
            return Some(many(format!("every account can write '{}'", d.path)));
        }
        if d.mode & 0o020 != 0 && d.gid != 0 && !sticky {
            return Some(many(format!("group gid {} can write '{}'", d.gid, d.path)));
        }
    }
    (leaf_uid != 0).then(|| user(leaf_uid, "it".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(path: &str, uid: u32, mode: u32) -> Link {
        Link {
            path: path.into(),
            uid,
            gid: 0,
            mode,
        }
    }

    #[test]
    fn who_controls_a_path() {
        let root = link("/", 0, 0o755);
        let tmp = link("/tmp", 0, 0o1777);
        // A root-owned entry in sticky /tmp: root's alone.
        assert_eq!(
            controlled_by(&[root.clone(), tmp.clone(), link("/tmp/d", 0, 0o755)], 0),
            None
        );
        // A user's directory in /tmp: theirs.
        let got = controlled_by(&[root.clone(), tmp.clone(), link("/tmp/d", 4242, 0o755)], 0);
        assert!(got.unwrap().starts_with("uid 4242"));
        // A user's file directly in sticky /tmp: theirs.
        assert_eq!(
            controlled_by(&[root.clone(), tmp.clone()], 4242).as_deref(),
            Some("uid 4242 owns it")
        );
        // A world-writable directory without the sticky bit: everyone's.
        assert_eq!(
            controlled_by(&[root.clone(), link("/scratch", 0, 0o777)], 0).as_deref(),
            Some("every account can write '/scratch'")
        );
    }

    #[test]
    fn a_walk_reaches_a_root_path_and_records_its_chain() {
        let w = walk_dir(Path::new("/usr/bin")).unwrap();
        assert_eq!(w.chain.first().unwrap().path, "/");
        assert!(w.chain.len() >= 2);
        assert!(w.dir.metadata().unwrap().is_dir());
        assert!(matches!(
            walk_dir(Path::new("/usr/../etc")),
            Err(WalkError::Other(_))
        ));
        assert!(matches!(
            walk_dir(Path::new("/nonexistent-lg-dir/x")),
            Err(WalkError::Missing { .. })
        ));
    }
}

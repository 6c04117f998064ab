//! Answers of slow commands kept between `launchguard check` runs (`slurmd -V`, `scontrol show
//! config`): each was a process start, and together they were most of a check's wall time.
//!
//! Staleness rule: an entry is stored with a key that names everything its answer depends on (the
//! stat of the binary or of slurm.conf: device, inode, size, mtime and ctime in nanoseconds),
//! prefixed with this boot's id (`/proc/sys/kernel/random/boot_id`, random(4): a new random UUID at
//! every boot, so an entry is never trusted on another host or after a reboot, even where the
//! directory outlived the boot or was copied with a node image), and the time it was written; it is
//! used only when the key is byte-for-byte the caller's current key and, where the caller gives a
//! maximum age, when it is younger than that. Anything else (another key, a cut or garbled entry,
//! an unparsable time) is a miss: the command runs again and its answer replaces the entry.
//!
//! Safety: only root uses it (the answers feed root's checks). The directory is
//! `/run/launchguard/cache` (tmpfs: gone at reboot), created 0700; it and `/run/launchguard` must be
//! real directories owned by root and not writable by group or others, else nothing is read or
//! written. Entries are opened with `O_NOFOLLOW` and must be regular root-owned files; they are
//! written to a fresh temporary file and renamed into place, so a reader never sees half an entry.

use nix::libc;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where entries live.
pub const DIR: &str = "/run/launchguard/cache";

/// Largest entry read, in bytes.
const MAX_ENTRY: u64 = 64 << 10;

/// The stat of `path` as a cache key part: `path dev ino size mtime_ns ctime_ns`; `None` when it
/// cannot be stat'ed.
pub fn stat_key(path: &Path) -> Option<String> {
    Some(stat_key_of(path, &std::fs::metadata(path).ok()?))
}

/// [`stat_key`] from a stat the caller already has (`m`, the metadata of `path`).
pub fn stat_key_of(path: &Path, m: &std::fs::Metadata) -> String {
    format!(
        "{} {} {} {} {}.{} {}.{}",
        path.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

/// `text` made fit for an entry's file name: letters, digits, `.` and `_` kept, every other
/// character `-`.
pub fn name_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The cached answer for `name` when it was stored under exactly `key` and, with `max_age`, is
/// younger than that; `None` otherwise (also when not root or the directory is not safe).
pub fn get(name: &str, key: &str, max_age: Option<Duration>) -> Option<String> {
    let dir = safe_dir(false)?;
    let key = format!("{} {key}", boot_id()?);
    get_in(&dir, name, &key, max_age, SystemTime::now())
}

/// Stores `value` for `name` under `key` (best effort: errors are only logged at debug level).
pub fn put(name: &str, key: &str, value: &str) {
    let (Some(dir), Some(boot)) = (safe_dir(true), boot_id()) else {
        return;
    };
    let key = format!("{boot} {key}");
    if let Err(e) = put_in(&dir, name, &key, value, SystemTime::now()) {
        tracing::debug!("cache {name}: not stored: {e}");
    }
}

/// This boot's id (random(4)'s `boot_id`), read once per process; `None` when unreadable (then
/// nothing is cached).
fn boot_id() -> Option<&'static str> {
    static ID: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let b = super::util::read_bytes(Path::new("/proc/sys/kernel/random/boot_id"), 64).ok()?;
        let id = String::from_utf8_lossy(&b).trim().to_string();
        (!id.is_empty() && !id.contains(char::is_whitespace)).then_some(id)
    })
    .as_deref()
}

fn get_in(
    dir: &Path,
    name: &str,
    key: &str,
    max_age: Option<Duration>,
    now: SystemTime,
) -> Option<String> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(name))
        .ok()?;
    let m = f.metadata().ok()?;
    if !m.is_file() || m.uid() != 0 || m.mode() & 0o022 != 0 {
        return None;
    }
    let mut text = String::new();
    f.take(MAX_ENTRY).read_to_string(&mut text).ok()?;
    let (stored_key, rest) = text.split_once('\n')?;
    let (written, value) = rest.split_once('\n')?;
    if stored_key != key {
        return None;
    }
    if let Some(max) = max_age {
        let written = UNIX_EPOCH + Duration::from_secs(written.parse().ok()?);
        let age = now.duration_since(written).ok()?;
        if age >= max {
            return None;
        }
    }
    Some(value.to_string())
}

fn put_in(dir: &Path, name: &str, key: &str, value: &str, now: SystemTime) -> std::io::Result<()> {
    if key.contains('\n') {
        return Err(std::io::Error::other("a key holds a newline"));
    }
    let secs = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    let r = f
        .write_all(format!("{key}\n{secs}\n{value}").as_bytes())
        .and_then(|_| std::fs::rename(&tmp, dir.join(name)));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// The cache directory when this process is root and it (and its parent) are root's own real
/// directories, writable by no one else; with `create`, made when missing.
fn safe_dir(create: bool) -> Option<PathBuf> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let dir = PathBuf::from(DIR);
    let parent = dir.parent()?;
    if create {
        use std::os::unix::fs::DirBuilderExt;
        if std::fs::symlink_metadata(parent).is_err() {
            let _ = std::fs::DirBuilder::new().mode(0o755).create(parent);
        }
        if std::fs::symlink_metadata(&dir).is_err() {
            let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        }
    }
    [parent, dir.as_path()]
        .iter()
        .all(|p| owned_dir(p))
        .then_some(dir)
}

fn owned_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir() && m.uid() == 0 && m.mode() & 0o022 == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lg-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        d
    }

    #[test]
    fn an_entry_is_used_only_under_its_key_and_age() {
        let d = tmp("key");
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        put_in(&d, "v", "k1", "22.05.8", t0).unwrap();
        let age = Some(Duration::from_secs(600));
        let at = |s| t0 + Duration::from_secs(s);
        if !nix::unistd::geteuid().is_root() {
            // Files of another owner are never trusted; as a user, the entry is not root's.
            assert_eq!(get_in(&d, "v", "k1", None, at(1)), None);
            return;
        }
        assert_eq!(
            get_in(&d, "v", "k1", age, at(599)).as_deref(),
            Some("22.05.8")
        );
        assert_eq!(get_in(&d, "v", "k2", age, at(1)), None, "another key");
        assert_eq!(get_in(&d, "v", "k1", age, at(600)), None, "too old");
        assert_eq!(
            get_in(&d, "v", "k1", None, at(99_999)).as_deref(),
            Some("22.05.8")
        );
        // A garbled entry (cut short, another format) is a miss, and the next answer replaces it.
        std::fs::write(d.join("v"), "k1\nnot-a-time\n22.05.8").unwrap();
        assert_eq!(get_in(&d, "v", "k1", age, at(1)), None, "garbled time");
        std::fs::write(d.join("v"), "k1").unwrap();
        assert_eq!(get_in(&d, "v", "k1", None, at(1)), None, "cut short");
        put_in(&d, "v", "k1", "22.05.9", t0).unwrap();
        assert_eq!(
            get_in(&d, "v", "k1", age, at(1)).as_deref(),
            Some("22.05.9")
        );
        // Another boot's entry (the key starts with the boot id) is a miss.
        let id = boot_id().unwrap();
        assert_eq!(id.len(), 36, "{id}");
        put_in(&d, "b", "00000000-0000-0000-0000-000000000000 k1", "x", t0).unwrap();
        assert_eq!(get_in(&d, "b", &format!("{id} k1"), None, at(1)), None);
        // A symlink in the entry's place is not followed.
        std::fs::remove_file(d.join("v")).unwrap();
        put_in(&d, "w", "k1", "x", t0).unwrap();
        std::os::unix::fs::symlink(d.join("w"), d.join("v")).unwrap();
        assert_eq!(get_in(&d, "v", "k1", None, at(1)), None);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

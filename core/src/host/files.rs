//! Bounded file reads that never block: a file is opened `O_NONBLOCK` and refused unless it is a
//! regular file, so a FIFO or device named by mistake (or swapped in after a `stat`) costs nothing,
//! and at most a given number of bytes is read.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

fn not_regular(m: &std::fs::Metadata) -> std::io::Error {
    let what = if m.is_dir() {
        "a directory, not a regular file"
    } else {
        "not a regular file"
    };
    std::io::Error::new(std::io::ErrorKind::InvalidInput, what)
}

/// Opens a regular file for reading without blocking on a FIFO or device: one that `stat`s as a
/// FIFO, device, socket or directory is not opened (opening some devices has effects). That check
/// narrows, but cannot close, the window in which the path is swapped for something else before the
/// open; so the open itself is `O_NONBLOCK | O_NOCTTY` (a swapped-in FIFO does not block, a tty does
/// not become our controlling terminal) and is `fstat`ed, and anything but a regular file is refused
/// before a byte is read. The paths read are root-owned configuration and kernel files. `follow`:
/// whether a final symlink is followed (`O_NOFOLLOW` when not, which fails with `ELOOP`).
///
/// Errors: the open's own (`NotFound`, `PermissionDenied`, `ELOOP`…), or `InvalidInput` "not a
/// regular file" / "a directory, not a regular file".
pub fn open_regular(p: &Path, follow: bool) -> std::io::Result<std::fs::File> {
    let pre = if follow {
        std::fs::metadata(p)
    } else {
        std::fs::symlink_metadata(p)
    };
    if let Ok(m) = pre {
        let ft = m.file_type();
        if ft.is_dir()
            || ft.is_fifo()
            || ft.is_char_device()
            || ft.is_block_device()
            || ft.is_socket()
        {
            return Err(not_regular(&m));
        }
    }
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(p)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(not_regular(&m));
    }
    Ok(f)
}

/// Reads at most `max` bytes of a regular file ([`open_regular`], following symlinks); a longer file
/// is read up to `max`.
pub fn read_bytes(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_open(open_regular(path, true)?, max)
}

/// Like [`read_bytes`], but a final symlink is not followed (`ELOOP`).
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_open(open_regular(path, false)?, max)
}

/// Reads a whole regular file of at most `max` bytes (a config: a cut file would mean something
/// else). Errors: as [`open_regular`], and `InvalidData` "larger than N KiB" for a larger file.
pub fn read_whole(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let buf = read_open(open_regular(path, true)?, max + 1)?;
    if buf.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} KiB", max / 1024),
        ));
    }
    Ok(buf)
}

/// A regular file's text (lossily decoded), at most `max` bytes of it; `None` when it is missing,
/// unreadable or not a regular file.
pub fn read_small(path: &Path, max: u64) -> Option<String> {
    read_bytes(path, max)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn read_open(f: std::fs::File, max: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![];
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifos_devices_and_directories_are_refused_without_blocking() {
        for p in ["/dev/zero", "/dev/null", "/"] {
            let e = open_regular(Path::new(p), true).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{p}: {e}");
        }
        assert_eq!(
            open_regular(Path::new("/"), true).unwrap_err().to_string(),
            "a directory, not a regular file"
        );
        let dir = std::env::temp_dir().join(format!("lg-core-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        // mkfifo(1): core has no unsafe and no nix for mkfifo(3).
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(st.success());
        // Opening a FIFO with no writer must not block.
        let e = open_regular(&fifo, true).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert_eq!(read_small(&fifo, 10), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(open_regular(Path::new("/proc/self/status"), true).is_ok());
    }

    #[test]
    fn reads_are_capped_and_whole_reads_refuse_larger_files() {
        let dir = std::env::temp_dir().join(format!("lg-core-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_bytes(&f, 4).unwrap(), b"0123");
        assert_eq!(read_small(&f, 100).as_deref(), Some("0123456789"));
        assert_eq!(read_whole(&f, 10).unwrap().len(), 10);
        let e = read_whole(&f, 9).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert_eq!(read_bytes(&link, 100).unwrap().len(), 10);
        assert_eq!(
            read_regular(&link, 100).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        assert_eq!(read_small(&dir.join("missing"), 10), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

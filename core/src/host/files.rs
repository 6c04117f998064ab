//! Bounded file reads that never block: a file is opened `O_NONBLOCK` and refused unless it is a
//! regular file, so a FIFO or device named by mistake (or swapped in after a `stat`) costs nothing,
//! and at most a given number of bytes is read.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

fn not_regular(m: &std::fs::Metadata) -> std::io::Error {
    let ft = m.file_type();
    let what = if ft.is_dir() {
        "a directory, not a regular file"
    } else if ft.is_fifo() {
        "a FIFO (named pipe), not a regular file"
    } else if ft.is_char_device() {
        "a character device, not a regular file"
    } else if ft.is_block_device() {
        "a block device, not a regular file"
    } else if ft.is_socket() {
        "a socket, not a regular file"
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
/// else). Errors: as [`open_regular`], and `InvalidData` "larger than the N KiB limit" for a larger
/// file (refused by its size before a byte is read when `fstat` shows it).
pub fn read_whole(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let f = open_regular(path, true)?;
    if f.metadata()?.len() > max {
        return Err(too_large(max));
    }
    let buf = read_open(f, max + 1)?;
    if buf.len() as u64 > max {
        return Err(too_large(max));
    }
    Ok(buf)
}

fn too_large(max: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("larger than the {} limit", size_text(max)),
    )
}

/// `64 MiB`, `16 KiB`, `100 bytes`: a limit as error messages give it.
pub fn size_text(n: u64) -> String {
    if n >= 1 << 20 && n.trailing_zeros() >= 20 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.trailing_zeros() >= 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// The one reader of the files a user names on the command line (logs, results, baselines,
/// configs, `-J` JSON, `explain` input): `-` is standard input, anything else must be a regular
/// file ([`open_regular`]: a FIFO, device, socket or directory is refused at once, without blocking).
/// Callers that stream (line scanners) read it in chunks, so memory stays flat whatever its size;
/// callers that need the whole file use [`read_input`].
pub fn open_input(path: &Path) -> std::io::Result<Box<dyn std::io::Read>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    Ok(Box::new(open_regular(path, true)?))
}

/// A whole input of at most `max` bytes, by [`open_input`] (`-` reads standard input up to the
/// limit). Errors: [`open_regular`]'s, and `InvalidData` "larger than the N MiB limit" (a regular
/// file by its size, before a byte is read; standard input once `max + 1` bytes arrived).
pub fn read_input(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let buf = read_open(std::io::stdin().lock(), max + 1)?;
        if buf.len() as u64 > max {
            return Err(too_large(max));
        }
        return Ok(buf);
    }
    read_whole(path, max)
}

/// A path as error messages and reports show it: control and invisible characters made visible
/// ([`crate::text::printable`]), at most 200 characters.
pub fn shown_path(path: &Path) -> String {
    crate::text::printable(&path.to_string_lossy(), 200)
}

/// A regular file's text (lossily decoded), at most `max` bytes of it; `None` when it is missing,
/// unreadable or not a regular file.
pub fn read_small(path: &Path, max: u64) -> Option<String> {
    read_bytes(path, max)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn read_open(f: impl Read, max: u64) -> std::io::Result<Vec<u8>> {
    // Room for a typical config or kernel file up front: `read_to_end` then reads straight into it
    // (one read and the EOF read) instead of probing with 32 bytes and doubling, which for a
    // `/proc` seq file such as mountinfo made the kernel format the table again for each read.
    let mut buf = Vec::with_capacity(max.min(READ_CHUNK) as usize);
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The buffer [`read_open`] starts with, in bytes (files stat as 0 bytes in `/proc` and `/sys`, so
/// no size hint is taken from `fstat`).
const READ_CHUNK: u64 = 16 << 10;

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

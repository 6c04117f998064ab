//! One big file on every core: the file is cut into pieces at line boundaries, each piece is
//! scanned from a fresh [`Scanner`] on its own thread (rayon), and the pieces are joined in file
//! order. The result is exactly the sequential scan's:
//! - a piece whose lines do not depend on what came before it (no nccl-tests or PyTorch table
//!   open at its start, none begun or closed in it; see [`Scanner::can_append`]) is appended:
//!   counts add up, first-seen lists keep file order and their caps, the last value of a setting
//!   wins;
//! - any other piece (a table, a footer, a bound of hosts reached, a provider line that takes the
//!   previous line's host) is read again, in order, by the one sequential scanner, which then
//!   holds exactly the state a plain scan would have there.
//!
//! Memory stays flat: each piece is read through its own 128 KiB buffer with `pread` (no mapping
//! of the file), and pieces are scanned in waves of a few per thread, joined, then dropped.

use std::fs::File;
use std::os::unix::fs::FileExt;

use rayon::prelude::*;

use crate::parse::{Scanner, CHUNK};
use crate::parsed::{ParseError, Parsed};

/// Piece size for real files (bytes): large enough that joining is noise, small enough that
/// a piece read again (the one holding the results table) costs little.
pub const PIECE: u64 = 8 << 20;

/// Files smaller than this are read by one thread (bytes).
pub const MIN_PARALLEL: u64 = 32 << 20;

/// Scans the regular file `f` of `len` bytes (text, not JSON) in pieces of about `piece` bytes
/// on rayon's threads. Errors: a read error ([`ParseError::Io`]), and what [`Scanner::finish`]
/// says of the whole.
pub fn scan_file(f: &File, len: u64, piece: u64) -> Result<Parsed, ParseError> {
    let io = |e: std::io::Error| ParseError::Io(e.to_string());
    let bounds = boundaries(f, len, piece.max(1)).map_err(io)?;
    let ranges: Vec<(u64, u64)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let wave = 4 * rayon::current_num_threads().max(1);
    let mut all = Scanner::new();
    let mut fresh = true;
    for group in ranges.chunks(wave) {
        let pieces: Vec<Result<Scanner, std::io::Error>> = group
            .par_iter()
            .map(|&(a, b)| {
                let mut s = Scanner::new();
                read_range(f, a, b, &mut s)?;
                if b == len {
                    s.end_piece();
                }
                Ok(s)
            })
            .collect();
        for (p, &(a, b)) in pieces.into_iter().zip(group) {
            let p = p.map_err(io)?;
            if fresh {
                all = p;
                fresh = false;
            } else if all.can_append(&p) {
                all.append(p);
            } else {
                read_range(f, a, b, &mut all).map_err(io)?;
            }
        }
    }
    all.finish()
}

/// Feeds bytes `a..b` of `f` to `s`.
fn read_range(f: &File, a: u64, b: u64, s: &mut Scanner) -> std::io::Result<()> {
    let (mut store, off) = crate::parse::line_aligned_buf(CHUNK);
    let buf = &mut store[off..off + CHUNK];
    let mut at = a;
    while at < b {
        let want = ((b - at) as usize).min(CHUNK);
        let n = match f.read_at(&mut buf[..want], at) {
            Ok(0) => break, // the file shrank: read what is there
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        s.feed(&buf[..n]);
        at += n as u64;
    }
    Ok(())
}

/// Piece starts: 0, then for each multiple of `piece` the byte after the first newline at or
/// after it, then `len`; strictly increasing.
fn boundaries(f: &File, len: u64, piece: u64) -> std::io::Result<Vec<u64>> {
    let mut out = vec![0];
    let mut buf = vec![0u8; 64 << 10];
    let mut target = piece;
    while target < len {
        let mut at = target.max(*out.last().unwrap_or(&0));
        let next = loop {
            if at >= len {
                break len;
            }
            let want = ((len - at) as usize).min(buf.len());
            let n = f.read_at(&mut buf[..want], at)?;
            if n == 0 {
                break len;
            }
            if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                break at + i as u64 + 1;
            }
            at += n as u64;
        };
        if next > *out.last().unwrap_or(&0) && next < len {
            out.push(next);
        }
        target = (target + piece).max(next);
    }
    out.push(len);
    out.dedup();
    Ok(out)
}

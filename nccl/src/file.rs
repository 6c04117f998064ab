//! One log or `-J` file by path: the sequential scanner ([`crate::parse`]) or, for a big regular
//! text file, the same scan in pieces on every core ([`crate::parallel`]), with the same result.

use crate::parse::{looks_like_json, parse_reader, CHUNK};
use crate::parsed::{ParseError, Parsed};
use std::path::Path;

/// Parses a file by path; `-` reads standard input.
///
/// The file is opened by the CLI's one input reader ([`launchguard_core::host::files`]): anything
/// but a regular file is refused ([`ParseError::NotRegular`]) before a byte is read (opened with
/// `O_NONBLOCK`, so a FIFO without a writer cannot hang the open, and its type is taken from the
/// open descriptor). Text is scanned in chunks; JSON is streamed and refused past [`MAX_JSON`].
///
/// A regular text file of [`crate::parallel::MIN_PARALLEL`] bytes or more is scanned on all of
/// rayon's threads ([`crate::parallel`]), with the same result.
pub fn parse_path(path: &Path) -> Result<Parsed, ParseError> {
    parse_path_in(path, None)
}

/// [`parse_path`], but a regular text file of any size is scanned in pieces of `piece` bytes on
/// rayon's threads ([`crate::parallel::scan_file`]); for tests of the parallel scan.
pub fn parse_path_in_pieces(path: &Path, piece: u64) -> Result<Parsed, ParseError> {
    parse_path_in(path, Some(piece))
}

fn parse_path_in(path: &Path, piece: Option<u64>) -> Result<Parsed, ParseError> {
    use std::os::unix::fs::FileExt;
    if path.as_os_str() == "-" {
        return parse_reader(std::io::stdin().lock());
    }
    let f = match launchguard_core::host::files::open_regular(path, true) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            let kind = e.to_string();
            let kind = kind.trim_end_matches(", not a regular file");
            return if kind.starts_with("a directory") {
                Err(ParseError::Io("it is a directory".into()))
            } else {
                Err(ParseError::NotRegular(kind.into()))
            };
        }
        Err(e) => return Err(ParseError::Io(e.to_string())),
    };
    let len = f
        .metadata()
        .map_err(|e| ParseError::Io(e.to_string()))?
        .len();
    let piece = piece.or_else(|| {
        (len >= crate::parallel::MIN_PARALLEL && rayon::current_num_threads() > 1)
            .then_some(crate::parallel::PIECE)
    });
    if let Some(piece) = piece {
        // JSON is told from the first chunk, as parse_reader tells it.
        let mut head = vec![0u8; CHUNK];
        let n = loop {
            match f.read_at(&mut head, 0) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r.map_err(|e| ParseError::Io(e.to_string()))?,
            }
        };
        if !looks_like_json(&head[..n]) {
            return crate::parallel::scan_file(&f, len, piece);
        }
    }
    parse_reader(f)
}

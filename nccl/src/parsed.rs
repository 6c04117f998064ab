//! What reading one file yields ([`Parsed`]) and why a file could not be read ([`ParseError`]),
//! with the size limits both readers share. The text scanner ([`crate::parse`]) and the `-J` JSON
//! reader ([`crate::json`]) both produce these, so neither imports the other for its types.

use std::fmt;

use serde::Serialize;

use crate::log::LogFacts;
use crate::table::Table;

/// Longest line read, in bytes (1 MiB); longer lines are skipped and counted.
pub const MAX_LINE: usize = 1 << 20;

/// Largest nccl-tests `-J` JSON document read, in bytes (64 MiB; a 4,096-process run with
/// per-iteration timing writes a few MiB).
pub const MAX_JSON: usize = 64 << 20;

/// Everything read from one file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Parsed {
    /// Result tables in file order (one per collective run; a file may hold several).
    pub tables: Vec<Table>,
    /// Facts from the NCCL log lines and the nccl-tests header.
    pub facts: LogFacts,
    /// Lines read.
    pub lines: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Lines skipped because they were not text (NUL bytes or invalid UTF-8).
    pub binary_lines: usize,
    /// The file was nccl-tests `-J` JSON that ended before it was closed (the run died).
    pub json_truncated: bool,
    /// Lines longer than [`MAX_LINE`], skipped.
    pub long_lines: usize,
    /// An `Out of bounds values : N` line that belongs to no table read (a footer pasted alone,
    /// or after a table this reader could not see): N, the largest seen.
    pub stray_out_of_bounds: Option<u64>,
}

impl Parsed {
    /// All rows of all tables.
    pub fn row_count(&self) -> usize {
        self.tables.iter().map(|t| t.rows.len()).sum()
    }

    /// The hosts this run covered: from `# Rank` lines, NCCL line prefixes, else `name: i-…` lines.
    pub fn hosts(&self) -> Vec<String> {
        if !self.facts.hosts.is_empty() {
            return self.facts.hosts.clone();
        }
        self.facts
            .instance_ids
            .iter()
            .map(|(h, _)| h.clone())
            .collect()
    }
}

/// Why a file could not be analysed at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum ParseError {
    /// The file could not be opened or read.
    Io(String),
    /// The file is empty.
    Empty,
    /// The file is not text (NUL bytes or invalid UTF-8) and nothing in it was recognised.
    Binary,
    /// Text, but no nccl-tests table, header or NCCL log line in it.
    Unrecognised,
    /// It starts like nccl-tests JSON but is not valid JSON, even after closing a cut-off end.
    Json(String),
    /// The path is not a regular file (a FIFO, a device, a socket): it may never end.
    NotRegular(String),
    /// nccl-tests JSON larger than [`MAX_JSON`] bytes.
    TooLarge(u64),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Io(e) => write!(f, "cannot read it: {e}"),
            ParseError::Empty => write!(f, "it is empty"),
            ParseError::Binary => write!(f, "it is not text (binary data)"),
            ParseError::Unrecognised => write!(
                f,
                "no nccl-tests table, nccl-tests header or NCCL log line in it"
            ),
            ParseError::Json(e) => write!(f, "it is not valid nccl-tests JSON: {e}"),
            ParseError::NotRegular(kind) => {
                write!(f, "it is {kind}, not a regular file, so it may never end")
            }
            ParseError::TooLarge(n) => write!(
                f,
                "it starts like nccl-tests JSON but is larger than {} MiB ({n} bytes or more)",
                MAX_JSON >> 20
            ),
        }
    }
}

impl std::error::Error for ParseError {}

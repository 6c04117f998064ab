//! One file in, one [`Parsed`] out: the single-pass line scanner that feeds the table reader
//! ([`crate::table`]) and the log reader ([`crate::log`]), or the JSON reader ([`crate::json`]).
//!
//! Reads in fixed-size chunks, so a multi-gigabyte NCCL_DEBUG=INFO log is scanned in constant memory.
//! Handles CRLF line ends, `srun --label` (`0: `) and `mpirun --tag-output` (`[1,0]<stdout>:`)
//! prefixes, NCCL INFO lines interleaved with table rows (connections are made lazily on the first
//! collective, see `../shared/fixtures/nccl/README.md`), several tables in one file, and files cut
//! anywhere. Bad input gives a [`ParseError`], never a panic.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::log::LogFacts;
use crate::table::{self, Columns, Footer, Layout, Table};

/// Chunk size for streaming reads, in bytes.
const CHUNK: usize = 1 << 20;

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
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole file held in memory (text table/log or `-J` JSON).
pub fn parse_bytes(data: &[u8]) -> Result<Parsed, ParseError> {
    if looks_like_json(data) {
        return crate::json::parse_json(data);
    }
    let mut s = Scanner::new();
    s.feed(data);
    s.finish()
}

/// Parses from a reader in 1 MiB chunks (constant memory for text; JSON is read whole).
pub fn parse_reader<R: Read>(mut r: R) -> Result<Parsed, ParseError> {
    let mut buf = vec![0u8; CHUNK];
    let mut s = Scanner::new();
    let mut first = true;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ParseError::Io(e.to_string())),
        };
        if first {
            first = false;
            if looks_like_json(&buf[..n]) {
                let mut all = buf[..n].to_vec();
                r.read_to_end(&mut all)
                    .map_err(|e| ParseError::Io(e.to_string()))?;
                return crate::json::parse_json(&all);
            }
        }
        s.feed(&buf[..n]);
    }
    s.finish()
}

/// Parses a file by path; `-` reads standard input.
pub fn parse_path(path: &Path) -> Result<Parsed, ParseError> {
    if path.as_os_str() == "-" {
        return parse_reader(std::io::stdin().lock());
    }
    let f = std::fs::File::open(path).map_err(|e| ParseError::Io(e.to_string()))?;
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(ParseError::Io("it is a directory".into()));
    }
    parse_reader(f)
}

fn looks_like_json(data: &[u8]) -> bool {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    data.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}

/// Strips what launchers put in front of every line: `srun --label`'s `12: ` and
/// `mpirun --tag-output`'s `[1,0]<stdout>:`.
pub fn strip_launcher_prefix(line: &str) -> &str {
    let t = line.trim_start_matches(' ');
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && t.as_bytes().get(digits) == Some(&b':') {
        let rest = &t[digits + 1..];
        if rest.is_empty() {
            return rest;
        }
        if let Some(r) = rest.strip_prefix(' ') {
            return r;
        }
    }
    if t.starts_with("[") {
        if let Some(i) = t.find("]<std") {
            if let Some(j) = t[i..].find(">:") {
                return &t[i + j + 2..];
            }
        }
    }
    line
}

/// The streaming scanner behind [`parse_bytes`] and [`parse_reader`]: feed it chunks, then finish.
#[derive(Debug, Default)]
pub struct Scanner {
    parsed: Parsed,
    columns: Option<Columns>,
    /// The last table still takes rows (header seen, footer not yet).
    open: bool,
    /// After a PyTorch `op bytes …` header.
    torch: bool,
    pending_collective: Option<String>,
    carry: Vec<u8>,
}

impl Scanner {
    /// A scanner with nothing read yet.
    pub fn new() -> Scanner {
        Scanner::default()
    }

    /// Feeds the next chunk of the file; lines may straddle chunks.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.parsed.bytes += chunk.len() as u64;
        let mut rest = chunk;
        if !self.carry.is_empty() {
            match rest.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let mut line = std::mem::take(&mut self.carry);
                    line.extend_from_slice(&rest[..i]);
                    self.line(&line);
                    rest = &rest[i + 1..];
                }
                None => {
                    self.carry.extend_from_slice(rest);
                    return;
                }
            }
        }
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.line(&rest[..i]);
            rest = &rest[i + 1..];
        }
        self.carry.extend_from_slice(rest);
    }

    /// Ends the file: reads a last line without newline and says whether anything was found.
    pub fn finish(mut self) -> Result<Parsed, ParseError> {
        if !self.carry.is_empty() {
            let line = std::mem::take(&mut self.carry);
            self.line(&line);
        }
        let p = self.parsed;
        if p.bytes == 0 {
            return Err(ParseError::Empty);
        }
        if p.tables.is_empty() && p.facts.is_empty() {
            return Err(if p.binary_lines > 0 {
                ParseError::Binary
            } else {
                ParseError::Unrecognised
            });
        }
        Ok(p)
    }

    fn line(&mut self, raw: &[u8]) {
        self.parsed.lines += 1;
        let line_no = self.parsed.lines;
        if raw.contains(&0) {
            self.parsed.binary_lines += 1;
            return;
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            self.parsed.binary_lines += 1;
            return;
        };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = strip_launcher_prefix(line);
        if line.starts_with('#') {
            self.comment(line, line_no);
            return;
        }
        if self.open {
            if let Some(cols) = &self.columns {
                match cols.parse_row(line, line_no) {
                    Ok(Some(row)) => {
                        if let Some(t) = self.parsed.tables.last_mut() {
                            t.rows.push(row);
                        }
                        return;
                    }
                    Err(()) => {
                        if let Some(t) = self.parsed.tables.last_mut() {
                            t.malformed_rows.push(line_no);
                        }
                        return;
                    }
                    Ok(None) => {}
                }
            }
        }
        if self.torch {
            if let Some((op, row)) = table::parse_torch_row(line, line_no) {
                let tables = &mut self.parsed.tables;
                let i = match tables
                    .iter()
                    .position(|t| t.layout == Layout::Torch && t.collective.as_ref() == Some(&op))
                {
                    Some(i) => i,
                    None => {
                        tables.push(Table::new(Some(op), Layout::Torch, line_no));
                        tables.len() - 1
                    }
                };
                tables[i].rows.push(row);
                return;
            }
        }
        self.parsed.facts.scan_line(line);
    }

    fn comment(&mut self, line: &str, line_no: usize) {
        let body = line[1..].trim_start();
        if let Some(name) = body.strip_prefix("Collective test starting:") {
            self.pending_collective = Some(name.trim().to_string());
            return;
        }
        if body.starts_with("size") {
            if let Some(cols) = Columns::from_header(line) {
                let t = Table::new(self.pending_collective.take(), cols.layout(), line_no);
                self.parsed.tables.push(t);
                self.columns = Some(cols);
                self.open = true;
                self.torch = false;
                return;
            }
        }
        if body.starts_with("Out of bounds") || body.starts_with("Avg bus bandwidth") {
            if let Some(t) = self.parsed.tables.last_mut() {
                let footer = t.footer.get_or_insert_with(Footer::default);
                table::parse_footer_line(line, footer);
                self.open = false;
            }
            return;
        }
        if table::is_torch_header(line) {
            self.torch = true;
            self.open = false;
            return;
        }
        self.parsed.facts.scan_comment(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_prefixes_are_stripped() {
        assert_eq!(
            strip_launcher_prefix("0: # Out of bounds"),
            "# Out of bounds"
        );
        assert_eq!(
            strip_launcher_prefix("[1,0]<stdout>:vm:1:2 [0] NCCL INFO x"),
            "vm:1:2 [0] NCCL INFO x"
        );
        let row = "     1048576        262144     float";
        assert_eq!(strip_launcher_prefix(row), row);
        assert_eq!(
            strip_launcher_prefix("vm:1418:1418 [0]"),
            "vm:1418:1418 [0]"
        );
    }

    #[test]
    fn chunk_boundaries_do_not_change_the_result() {
        let text =
            "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n\
                    1024 256 float sum -1 19.54 0.05 0.05 0 17.94 0.06 0.06 0\r\n\
                    2048 512 float sum -1 17.52 0.12 0.12 0 18.11 0.11 0.11 0\n\
                    # Out of bounds values : 0 OK\n";
        let whole = parse_bytes(text.as_bytes()).unwrap();
        for split in 1..text.len() {
            let mut s = Scanner::new();
            s.feed(&text.as_bytes()[..split]);
            s.feed(&text.as_bytes()[split..]);
            assert_eq!(s.finish().unwrap(), whole, "split at {split}");
        }
        assert_eq!(whole.tables[0].rows.len(), 2);
    }
}

//! One file in, one [`Parsed`] out: the single-pass line scanner that feeds the table reader
//! ([`crate::table`]) and the log reader ([`crate::log`]), or the JSON reader ([`crate::json`]).
//!
//! Reads in fixed-size chunks, so a multi-gigabyte NCCL_DEBUG=INFO log is scanned in constant memory.
//! Handles CRLF line ends, `srun --label` (`0: `), PyTorch's `[rank0]:`, pdsh-style `host: ` and
//! `mpirun --tag-output` (`[1,0]<stdout>:`) prefixes, NCCL INFO lines interleaved with table rows
//! (connections are made lazily on the first collective, see `nccl/tests/fixtures/README.md`),
//! several tables in one file, older nccl-tests tables whose header and footer lines have no `#`,
//! and files cut anywhere. Bad input gives a [`ParseError`], never a panic.
//!
//! Limits, so that no input can take unbounded memory or time:
//! - a line longer than [`MAX_LINE`] (1 MiB) is skipped and counted ([`Parsed::long_lines`]); NCCL
//!   and nccl-tests lines are far shorter;
//! - `-J` JSON larger than [`MAX_JSON`] (64 MiB) is refused ([`ParseError::TooLarge`]);
//! - a path must name a regular file ([`ParseError::NotRegular`] for FIFOs, devices, sockets;
//!   opened without blocking; [`crate::file`]); read pipes and endless streams through `-`
//!   (standard input), whose memory stays bounded by the two caps above.

use std::io::Read;

pub use crate::parsed::{ParseError, Parsed, MAX_JSON, MAX_LINE};
use crate::table::{self, Columns, Footer, Layout, Table};

/// Chunk size for streaming reads, in bytes (small enough to stay in a core's L2 cache).
pub(crate) const CHUNK: usize = 128 << 10;

/// A zeroed read buffer of `len` bytes that starts on a 64-byte (cache line) boundary, and the
/// offset of that start in the vector. The kernel copies a file into it with `rep movsb`, which on
/// some x86-64 cores runs several times slower into a destination 16 bytes off a cache line (what
/// a plain `vec![0; 128 KiB]` from malloc's mmap gets): a quarter of a one-core scan's CPU time
/// on an AMD EPYC VM, measured with `perf`.
pub(crate) fn line_aligned_buf(len: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; len + 64];
    let off = v.as_ptr().align_offset(64).min(64);
    (v, off)
}

/// Parses a whole file held in memory (text table/log or `-J` JSON).
pub fn parse_bytes(data: &[u8]) -> Result<Parsed, ParseError> {
    if looks_like_json(data) {
        if data.len() > MAX_JSON {
            return Err(ParseError::TooLarge(data.len() as u64));
        }
        return crate::json::parse_json(data);
    }
    let mut s = Scanner::new();
    s.feed(data);
    s.finish()
}

/// Parses from a reader in 1 MiB chunks (constant memory for text; JSON is streamed, keeping only
/// its devices and rows).
pub fn parse_reader<R: Read>(mut r: R) -> Result<Parsed, ParseError> {
    let (mut store, off) = line_aligned_buf(CHUNK);
    let buf = &mut store[off..off + CHUNK];
    let mut s = Scanner::new();
    let mut first = true;
    loop {
        let n = match r.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ParseError::Io(e.to_string())),
        };
        if first {
            first = false;
            if looks_like_json(&buf[..n]) {
                let head = buf[..n].to_vec();
                return crate::json::parse_json_reader(std::io::Cursor::new(head).chain(r));
            }
        }
        s.feed(&buf[..n]);
    }
    s.finish()
}

/// Index of the first `\n` (SIMD search: this is the scan's innermost loop).
fn memchr_nl(data: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', data)
}

/// Index of the first `\n` in `b` at or after `from`, sixteen bytes at a time in two 64-bit
/// words (the classic "has a zero byte" test on the word XOR `\n`: the lowest flagged byte is the
/// first match). Lines of an NCCL log are 50–150 bytes: a library search per line paid its call
/// and setup on every line and was a sixth of a one-core scan.
#[inline]
pub(crate) fn next_newline(b: &[u8], from: usize) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let flag = |w: u64| {
        let x = w ^ NL;
        x.wrapping_sub(LO) & !x & HI
    };
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    let mut i = from;
    while i + 16 <= b.len() {
        let (z1, z2) = (flag(word(i)), flag(word(i + 8)));
        if z1 | z2 != 0 {
            return Some(if z1 != 0 {
                i + (z1.trailing_zeros() / 8) as usize
            } else {
                i + 8 + (z2.trailing_zeros() / 8) as usize
            });
        }
        i += 16;
    }
    b.get(i..)?.iter().position(|&c| c == b'\n').map(|p| i + p)
}

pub(crate) fn looks_like_json(data: &[u8]) -> bool {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    data.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}

/// Strips what launchers put in front of every line, repeatedly (a launcher label in front of a
/// rank label): `srun --label`'s `12: `, PyTorch's `[rank3]:`, `mpirun --tag-output`'s
/// `[1,0]<stdout>:`, and a pdsh-style `host: ` in front of an nccl-tests header, footer or row.
/// NCCL lines need none of this: their prefix is found wherever it is ([`crate::log`]).
pub fn strip_launcher_prefix(line: &str) -> &str {
    // Fast path, most lines: a line that starts with a letter can only carry a pdsh `host: `, whose
    // first word ends with `:`.
    let b = line.as_bytes();
    if b.first().is_some_and(u8::is_ascii_alphabetic) {
        match memchr::memchr(b' ', b) {
            Some(i) if i > 1 && b[i - 1] == b':' => {}
            _ => return line,
        }
    }
    let mut cur = line;
    for _ in 0..3 {
        let next = strip_one_prefix(cur);
        if next.len() == cur.len() {
            break;
        }
        cur = next;
    }
    cur
}

fn strip_one_prefix(line: &str) -> &str {
    let t = line.trim_start_matches(' ');
    if let Some(r) = t.strip_prefix("[rank") {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            if let Some(rest) = r[digits..].strip_prefix("]:") {
                return rest.strip_prefix(' ').unwrap_or(rest);
            }
        }
    }
    // pdsh / clush `host: ` before a table line (not before `host: i-0123…` instance lines): the
    // first word ends with `:` and a space follows.
    let first_word = t.as_bytes().iter().position(|&b| b == b' ').unwrap_or(0);
    if let Some((label, rest)) = (first_word > 1 && t.as_bytes()[first_word - 1] == b':')
        .then(|| (&t[..first_word - 1], &t[first_word + 1..]))
    {
        let hostish = !label.is_empty()
            && label.len() <= 64
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
            && !label.bytes().all(|b| b.is_ascii_digit());
        let r = rest.trim_start();
        let tableish = r.starts_with('#')
            || r.split_ascii_whitespace()
                .next()
                .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
                && r.split_ascii_whitespace().nth(3).is_some();
        if hostish && tableish {
            return rest;
        }
    }
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
        if let Some(i) = crate::log::find_str!(t, "]<std") {
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
    /// The current line passed [`MAX_LINE`]: drop bytes until its newline.
    skipping: bool,
    /// A footer line was read (it closes the last table, wherever that began).
    footers: bool,
    /// Read every line the general way (tests compare it with the fast path for NCCL lines).
    general_only: bool,
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
        if self.skipping || !self.carry.is_empty() {
            match memchr_nl(rest) {
                Some(i) => {
                    if self.skipping {
                        self.skipping = false;
                        self.long_line();
                    } else if self.carry.len() + i > MAX_LINE {
                        self.carry.clear();
                        self.long_line();
                    } else {
                        let mut line = std::mem::take(&mut self.carry);
                        line.extend_from_slice(&rest[..i]);
                        self.line(&line);
                        line.clear();
                        self.carry = line; // keep the allocation
                    }
                    rest = &rest[i + 1..];
                }
                None => {
                    self.keep(rest);
                    return;
                }
            }
        }
        let end = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
        self.whole_lines(&rest[..end]);
        self.keep(&rest[end..]);
    }

    /// Reads `block`, a run of whole lines each ending in `\n`. The NUL and UTF-8 checks are made
    /// once for the block (a SIMD pass each); only a block that fails them is checked line by line.
    fn whole_lines(&mut self, block: &[u8]) {
        let text = match memchr::memchr(0, block) {
            None => std::str::from_utf8(block).ok(),
            Some(_) => None,
        };
        let mut start = 0;
        match text {
            Some(text) => {
                while let Some(i) = next_newline(block, start) {
                    if i - start > MAX_LINE {
                        self.long_line();
                    } else {
                        self.text_line(&text[start..i]);
                    }
                    start = i + 1;
                }
            }
            None => {
                for i in memchr::memchr_iter(b'\n', block) {
                    if i - start > MAX_LINE {
                        self.long_line();
                    } else {
                        self.line(&block[start..i]);
                    }
                    start = i + 1;
                }
            }
        }
    }

    /// Keeps the start of a line that continues in the next chunk, up to [`MAX_LINE`].
    fn keep(&mut self, part: &[u8]) {
        if self.skipping {
            return;
        }
        if self.carry.len() + part.len() > MAX_LINE {
            self.carry = Vec::new();
            self.skipping = true;
        } else {
            self.carry.extend_from_slice(part);
        }
    }

    fn long_line(&mut self) {
        self.parsed.lines += 1;
        self.parsed.long_lines += 1;
    }

    /// Reads a last line without newline.
    fn end_line(&mut self) {
        if self.skipping {
            self.skipping = false;
            self.long_line();
        } else if !self.carry.is_empty() {
            let line = std::mem::take(&mut self.carry);
            self.line(&line);
        }
    }

    /// Whether `later`, a scanner that read the lines right after this one's from a fresh start,
    /// can be appended ([`Scanner::append`]) with the result reading them here would give: this
    /// one is between tables and lines (no table open, no PyTorch table, no partial line), `later`
    /// met no table header, footer or PyTorch header, and its facts can be appended
    /// ([`LogFacts::can_append`](crate::log::LogFacts)).
    pub(crate) fn can_append(&self, later: &Scanner) -> bool {
        !self.open
            && !self.torch
            && self.carry.is_empty()
            && !self.skipping
            && later.carry.is_empty()
            && !later.skipping
            && !later.open
            && !later.torch
            && !later.footers
            && later.pending_collective.is_none()
            && later.parsed.tables.is_empty()
            && later.parsed.stray_out_of_bounds.is_none()
            && self.parsed.facts.can_append(&later.parsed.facts)
    }

    /// Appends what `later` read (see [`Scanner::can_append`]).
    pub(crate) fn append(&mut self, later: Scanner) {
        let p = later.parsed;
        self.parsed.lines += p.lines;
        self.parsed.bytes += p.bytes;
        self.parsed.binary_lines += p.binary_lines;
        self.parsed.long_lines += p.long_lines;
        self.parsed.facts.append(p.facts);
    }

    /// Reads the last line of a piece that ends without newline (the file's end).
    pub(crate) fn end_piece(&mut self) {
        self.end_line();
    }

    /// Ends the file: reads a last line without newline and says whether anything was found.
    pub fn finish(mut self) -> Result<Parsed, ParseError> {
        self.end_line();
        let p = self.parsed;
        if p.bytes == 0 {
            return Err(ParseError::Empty);
        }
        if p.tables.is_empty() && p.facts.is_empty() && p.stray_out_of_bounds.is_none() {
            return Err(
                if p.binary_lines > 0 || (p.long_lines > 0 && p.lines == p.long_lines) {
                    ParseError::Binary
                } else {
                    ParseError::Unrecognised
                },
            );
        }
        Ok(p)
    }

    fn line(&mut self, raw: &[u8]) {
        if memchr::memchr(0, raw).is_some() {
            self.parsed.lines += 1;
            self.parsed.binary_lines += 1;
            return;
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            self.parsed.lines += 1;
            self.parsed.binary_lines += 1;
            return;
        };
        self.text_line(line);
    }

    /// One line known to be text without NUL.
    fn text_line(&mut self, line: &str) {
        self.parsed.lines += 1;
        let line_no = self.parsed.lines;
        let line = line.strip_suffix('\r').unwrap_or(line);
        // Most lines of a big log: `host:pid:tid [d] NCCL INFO …` outside any table.
        if !self.open
            && !self.torch
            && !self.general_only
            && self.parsed.facts.scan_plain_nccl_line(line)
        {
            return;
        }
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
        if !self.parsed.facts.scan_line(line) {
            self.plain(line, line_no);
        }
    }

    /// A line that is neither `#`-comment, table row nor NCCL line: the header and footer of older
    /// nccl-tests tables, printed without `#`, and an `Out of bounds values` line anywhere.
    fn plain(&mut self, line: &str, line_no: usize) {
        let body = line.trim_start();
        if body.starts_with("size") {
            if let Some(cols) = Columns::from_header(body) {
                self.open_table(cols, line_no);
            }
            return;
        }
        if let Some(i) = line.find("Out of bounds values") {
            self.footer(&line[i..]);
        } else if let Some(i) = line.find("Avg bus bandwidth") {
            self.footer(&line[i..]);
        }
    }

    fn open_table(&mut self, cols: Columns, line_no: usize) {
        let t = Table::new(self.pending_collective.take(), cols.layout(), line_no);
        self.parsed.tables.push(t);
        self.columns = Some(cols);
        self.open = true;
        self.torch = false;
    }

    /// `Out of bounds values : N OK|FAILED` or `Avg bus bandwidth : X` (with or without `#`): the
    /// last table's footer; an out-of-bounds count with no table is kept on its own.
    fn footer(&mut self, text: &str) {
        self.footers = true;
        match self.parsed.tables.last_mut() {
            Some(t) => {
                let footer = t.footer.get_or_insert_with(Footer::default);
                table::parse_footer_line(text, footer);
                self.open = false;
            }
            None => {
                let mut f = Footer::default();
                table::parse_footer_line(text, &mut f);
                if let Some(n) = f.out_of_bounds {
                    self.parsed.stray_out_of_bounds = self.parsed.stray_out_of_bounds.max(Some(n));
                }
            }
        }
    }

    fn comment(&mut self, line: &str, line_no: usize) {
        let body = line[1..].trim_start();
        if let Some(name) = body.strip_prefix("Collective test starting:") {
            self.pending_collective = Some(name.trim().to_string());
            return;
        }
        if body.starts_with("size") {
            if let Some(cols) = Columns::from_header(line) {
                self.open_table(cols, line_no);
                return;
            }
        }
        if body.starts_with("Out of bounds") || body.starts_with("Avg bus bandwidth") {
            self.footer(body);
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

    /// Parses `data` with the fast path for plain NCCL lines off.
    fn parse_general(data: &[u8]) -> Result<Parsed, ParseError> {
        let mut s = Scanner {
            general_only: true,
            ..Scanner::default()
        };
        s.feed(data);
        s.finish()
    }

    /// The line-by-line reference: every line read the general way, nothing cached between
    /// lines (no `host:pid` memo, no list of interface lists read), fed a line at a time.
    fn parse_reference(data: &[u8]) -> Result<Parsed, ParseError> {
        let mut s = Scanner {
            general_only: true,
            ..Scanner::default()
        };
        s.parsed.facts = crate::log::LogFacts::without_line_cache();
        for line in data.split_inclusive(|&b| b == b'\n') {
            s.feed(line);
        }
        s.finish()
    }

    /// `nccl check`'s verdict (findings and exit code) of a parse.
    fn verdict(p: &Result<Parsed, ParseError>) -> String {
        use crate::verdict::{check, CheckOptions};
        match p {
            Ok(p) => {
                let r = check("f", p, &CheckOptions::default());
                format!("{:?}", (r.verdict, &r.findings, &r.tables))
            }
            Err(e) => format!("{e:?}"),
        }
    }

    /// The fast path gives the general path's whole parse (private bookkeeping included), read
    /// at once and fed in two chunks cut inside a line.
    fn same_both_ways(name: &str, data: &[u8]) {
        if looks_like_json(data) {
            return;
        }
        let general = parse_general(data);
        assert_eq!(parse_bytes(data), general, "{name}");
        for cut in [1, data.len() / 3, data.len() / 2 + 7] {
            let cut = cut.min(data.len());
            let mut s = Scanner::new();
            s.feed(&data[..cut]);
            s.feed(&data[cut..]);
            assert_eq!(s.finish(), general, "{name} cut at byte {cut}");
        }
    }

    fn fixture_files() -> Vec<std::path::PathBuf> {
        let mut out = vec![];
        let mut stack =
            vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
        out.sort();
        assert!(out.len() > 20, "{out:?}");
        out
    }

    #[test]
    fn the_fast_path_reads_every_fixture_as_the_general_path_does() {
        let mut all = vec![];
        for f in fixture_files() {
            let data = std::fs::read(&f).unwrap();
            same_both_ways(&f.display().to_string(), &data);
            if !looks_like_json(&data) {
                all.extend(data);
            }
        }
        // All of them joined, twice: hosts, prefixes and tables met again after other files.
        let twice = [all.as_slice(), all.as_slice()].concat();
        same_both_ways("all fixtures joined", &twice);
    }

    /// Lines of `procs` processes on `hosts` hosts, interleaved (more processes than the
    /// `host:pid` memo has slots, pids that collide in it), each thread with its own tid.
    fn interleaved(hosts: usize, procs: usize, lines: usize) -> String {
        let mut out = String::new();
        for i in 0..lines {
            let p = (i * 7 + i / 3) % procs;
            let (h, pid, tid) = (p % hosts, 1000 + p * 16, 5000 + i % 5);
            let msg = match i % 5 {
                0 => format!(
                    "Channel {:02}/0 : 0[0] -> 1[1] via NET/Socket/{}",
                    i % 32,
                    i % 2
                ),
                1 => "cudaDriverVersion 12040".to_string(),
                2 => format!("comm 0x1 rank {p} nRanks {procs} nNodes {hosts} localRanks 1"),
                3 => "NET/Socket : Using [0]eth0:192.0.2.2<0>".to_string(),
                _ => format!("Channel {:02}/0 : 1[1] -> 0[0] via P2P/CUMEM", i % 32),
            };
            out.push_str(&format!(
                "gpu-{h:02}:{pid}:{tid} [{}] NCCL INFO {msg}\n",
                p % 8
            ));
            if i % 97 == 0 {
                out.push_str(&format!("#  Rank {p:>3} Group  0 Pid {pid} on gpu-{h:02} device  0 [0000:10:00] NVIDIA H100\n"));
            }
        }
        out
    }

    #[test]
    fn the_fast_path_gives_the_line_by_line_references_parse_and_verdict() {
        let mut inputs: Vec<(String, Vec<u8>)> = fixture_files()
            .into_iter()
            .map(|f| {
                let data = std::fs::read(&f).unwrap();
                (f.display().to_string(), data)
            })
            .filter(|(_, d)| !looks_like_json(d))
            .collect();
        for (h, p) in [(1, 1), (2, 2), (1, 3), (4, 40), (50, 400)] {
            inputs.push((
                format!("{p} processes on {h} hosts"),
                interleaved(h, p, 5000).into_bytes(),
            ));
        }
        let all: Vec<u8> = inputs.iter().flat_map(|(_, d)| d.clone()).collect();
        inputs.push(("all of them joined".into(), all));
        for (name, data) in &inputs {
            let reference = parse_reference(data);
            let fast = parse_bytes(data);
            assert_eq!(fast, reference, "{name}");
            assert_eq!(verdict(&fast), verdict(&reference), "{name}");
            if let Ok(p) = &reference {
                // Every process was told apart (none lost to a memo collision).
                if name.contains("processes on") {
                    let n: usize = name.split(' ').next().unwrap().parse().unwrap();
                    assert_eq!(p.facts.process_count(), n, "{name}");
                }
            }
        }
    }

    #[test]
    fn every_warn_rule_example_reaches_its_rule_through_the_fast_path() {
        use crate::verdict::{check, CheckOptions};
        use crate::warn_rules::{explain, RULES};
        let mut fast = 0;
        for r in RULES {
            for e in r.examples {
                // Alone, after an INFO line of its own prefix (the prefix is not read again), and
                // twice with a launcher label in front (the general path).
                let prefix = e.split(" NCCL WARN ").next().unwrap();
                let info = format!("{prefix} NCCL INFO cudaDriverVersion 13000");
                for text in [
                    format!("{e}\n"),
                    format!("{info}\n{e}\n{e}\n"),
                    format!("3: {info}\n3: {e}\n"),
                ] {
                    same_both_ways(e, text.as_bytes());
                    let p = parse_bytes(text.as_bytes()).unwrap();
                    assert!(p.facts.warn_count > 0, "{e}");
                    assert_eq!(explain(&p.facts.warns[0]).map(|x| x.id), Some(r.id), "{e}");
                    let report = check("f", &p, &CheckOptions::default());
                    assert!(
                        report.findings.iter().any(|f| f.id == r.id),
                        "{e}: {:?}",
                        report.findings
                    );
                }
                // The line has the shape the fast path takes, and it takes it.
                let words: Vec<&str> = e.splitn(4, ' ').collect();
                if words.len() == 4
                    && words[0].matches(':').count() == 2
                    && words[1].starts_with('[')
                    && words[2] == "NCCL"
                {
                    assert!(
                        crate::log::LogFacts::default().scan_plain_nccl_line(e),
                        "{e}"
                    );
                    fast += 1;
                }
            }
        }
        assert!(fast > 0);
    }

    #[test]
    fn next_newline_finds_what_memchr_finds() {
        let mut data = vec![];
        for n in 0..300usize {
            data.extend(std::iter::repeat(b'a' + (n % 26) as u8).take(n % 41));
            data.push(if n % 7 == 0 { 0x8a } else { b'\n' });
            data.push(0xff);
        }
        for from in 0..data.len() + 2 {
            let want = data
                .get(from..)
                .and_then(|r| memchr::memchr(b'\n', r))
                .map(|i| from + i);
            assert_eq!(next_newline(&data, from), want, "from {from}");
        }
    }

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
    fn a_line_without_newline_is_not_held_past_the_cap() {
        let mut s = Scanner::new();
        let chunk = vec![b'x'; CHUNK];
        for _ in 0..64 {
            s.feed(&chunk);
            assert!(s.carry.capacity() <= 2 * MAX_LINE, "{}", s.carry.capacity());
        }
        s.feed(b"\nNCCL INFO Using network Socket\n");
        let p = s.finish().unwrap();
        assert_eq!((p.long_lines, p.lines), (1, 2));
        assert_eq!(p.facts.networks, vec!["Socket"]);
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

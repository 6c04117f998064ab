//! The nccl-tests results table: its header layout, its rows and its footer.
//!
//! Pure functions over one (already normalised) line at a time; the file-level state machine that
//! decides which line is a header, a row or a footer lives in [`crate::parse`].
//!
//! Layouts handled, all read from the header line rather than assumed:
//! - current (nccl-tests >= 2.13, e.g. 2.19.6 in `nccl/tests/fixtures/`):
//!   `size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong`;
//! - older (< 2.13, as in AWS's EFA tutorials and many public bug reports): no `root` column on
//!   reductions (`root` instead of `redop` on rooted collectives) and an `error` column holding the
//!   largest relative error (`2e-07`) instead of the `#wrong` count;
//! - `-R`/per-iteration variants with extra columns (`i_min i_max i_p99 i_cv%`), `cputime` instead of
//!   `time`, and a trailing timestamp: extra columns are kept out of the way by name.
//!
//! `N/A` in a `#wrong` column means nccl-tests did not check that half (alltoall in-place, `-c 0`).

use serde::Serialize;

/// How the correctness column of one half of a row reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Correctness {
    /// `#wrong`: number of wrong elements (current layout; printed with `%g`, so `1e+06` is read too).
    Wrong(u64),
    /// `error`: largest relative error of the older layout (e.g. `2e-07`); judged by the footer's
    /// out-of-bounds count, not by itself.
    MaxError(f64),
    /// `N/A`: nccl-tests did not check this half.
    NotChecked,
}

/// One half (out-of-place or in-place) of a result row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measurement {
    /// Time per collective, in microseconds (us).
    pub time_us: f64,
    /// Algorithm bandwidth, size / time, in GB/s (10^9 bytes per second).
    pub algbw: f64,
    /// Bus bandwidth, algbw corrected for the collective's traffic pattern, in GB/s.
    pub busbw: f64,
    /// The `#wrong` (or older `error`) column.
    pub correctness: Correctness,
}

impl Measurement {
    /// Number of wrong elements, when the row was checked with the current layout.
    pub fn wrong(&self) -> Option<u64> {
        match self.correctness {
            Correctness::Wrong(n) => Some(n),
            _ => None,
        }
    }
}

/// One row of a results table: one message size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Message size in bytes (the `size` column; 0 when `count` rounds down, as alltoall's first rows).
    pub size: u64,
    /// Element count (the `count` column).
    pub count: u64,
    /// Data type (`float`, `half`, ...).
    #[serde(rename = "type")]
    pub dtype: String,
    /// Reduction op (`sum`, `none`, ...); absent on rooted collectives of the older layout.
    pub redop: Option<String>,
    /// Root rank (`-1` for rootless collectives); absent in the older layout's reductions.
    pub root: Option<i64>,
    /// Out-of-place half; absent when nccl-tests printed only the in-place half (trace replay).
    pub out_of_place: Option<Measurement>,
    /// In-place half; absent when the table has no in-place block (PyTorch-style tables).
    pub in_place: Option<Measurement>,
    /// 1-based line number in the file (0 for rows read from JSON).
    pub line: usize,
}

impl Row {
    /// The requested half of this row.
    pub fn half(&self, placement: Placement) -> Option<&Measurement> {
        match placement {
            Placement::OutOfPlace => self.out_of_place.as_ref(),
            Placement::InPlace => self.in_place.as_ref(),
        }
    }
}

/// Out-of-place (nccl-tests' left block, the one outlier scripts usually read) or in-place (right block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Separate send and receive buffers: the left block.
    OutOfPlace,
    /// Receive buffer = send buffer: the right block.
    InPlace,
}

impl Placement {
    /// `out-of-place` / `in-place`.
    pub fn label(self) -> &'static str {
        match self {
            Placement::OutOfPlace => "out-of-place",
            Placement::InPlace => "in-place",
        }
    }
}

/// Which table format a [`Table`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// nccl-tests >= 2.13 text table (`root` and `#wrong` columns).
    Current,
    /// nccl-tests < 2.13 text table (`error` column, no `root` on reductions).
    Legacy,
    /// nccl-tests `-J` JSON output.
    Json,
    /// A PyTorch measurement table (`op bytes time_ms algbw busbw`), one table per op.
    Torch,
}

/// The two summary lines nccl-tests prints after a table.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Footer {
    /// `# Out of bounds values : N OK|FAILED`: N.
    pub out_of_bounds: Option<u64>,
    /// `# Avg bus bandwidth : X`: X in GB/s, averaged over every size (misleading alone: small sizes are latency-bound).
    pub avg_busbw: Option<f64>,
    /// The `OK`/`FAILED` nccl-tests appends to the average when run with `-G <expected>`.
    pub avg_busbw_check_ok: Option<bool>,
}

/// One results table (one collective run) found in a file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Collective as nccl-tests names it (`all_reduce_perf`), from `# Collective test starting:`
    /// (nccl-tests >= 2.19), the JSON `args`, or the PyTorch op; `None` when the file does not say.
    pub collective: Option<String>,
    /// Format it was read from.
    pub layout: Layout,
    /// Rows in file order.
    pub rows: Vec<Row>,
    /// The footer, `None` when the table ends without one (truncated or killed run).
    pub footer: Option<Footer>,
    /// 1-based line number of the header line (0 for JSON).
    pub header_line: usize,
    /// Rows that looked like data but could not be read (line numbers), e.g. cut mid-line.
    pub malformed_rows: Vec<usize>,
}

impl Table {
    /// An empty table of the given layout.
    pub fn new(collective: Option<String>, layout: Layout, header_line: usize) -> Table {
        Table {
            collective,
            layout,
            rows: Vec::new(),
            footer: None,
            header_line,
            malformed_rows: Vec::new(),
        }
    }

    /// The largest message size in the table, in bytes.
    pub fn max_size(&self) -> Option<u64> {
        self.rows.iter().map(|r| r.size).max()
    }

    /// The rows at `size` bytes (more than one with `-d all`/`-o all`, or sizes that round to 0).
    pub fn rows_at(&self, size: u64) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.size == size)
    }

    /// Collective name without nccl-tests' `_perf` suffix (`all_reduce`), for baseline matching.
    pub fn collective_base(&self) -> Option<&str> {
        self.collective
            .as_deref()
            .map(|c| c.strip_suffix("_perf").unwrap_or(c))
    }
}

/// Column positions of one half (out-of-place or in-place) of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    start: usize,
    len: usize,
    time: usize,
    algbw: usize,
    busbw: usize,
    check: Option<(usize, CheckColumn)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CheckColumn {
    Wrong,
    Error,
}

/// Where each column of a text table sits, read from its header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    size: usize,
    count: Option<usize>,
    dtype: Option<usize>,
    redop: Option<usize>,
    root: Option<usize>,
    prefix_len: usize,
    out_of_place: Block,
    in_place: Option<Block>,
    legacy: bool,
}

impl Columns {
    /// Reads a header line such as
    /// `#       size         count      type   redop    root     time   algbw   busbw  #wrong ...`.
    /// Returns `None` when the line is not a results header.
    pub fn from_header(line: &str) -> Option<Columns> {
        let t = line.trim_start();
        let body = t.strip_prefix('#').unwrap_or(t);
        let tokens: Vec<&str> = body.split_ascii_whitespace().collect();
        if tokens.first() != Some(&"size") || !tokens.contains(&"busbw") {
            return None;
        }
        let is_time = |t: &str| t == "time" || t == "cputime";
        let first_time = tokens.iter().position(|t| is_time(t))?;
        let prefix = &tokens[..first_time];
        let find = |name: &str| prefix.iter().position(|t| *t == name);
        let second_time = tokens[first_time + 1..]
            .iter()
            .position(|t| is_time(t))
            .map(|p| p + first_time + 1);
        let end = tokens
            .iter()
            .position(|t| *t == "timestamp")
            .unwrap_or(tokens.len());
        let oop = Block::from_tokens(&tokens, first_time, second_time.unwrap_or(end))?;
        let ip = match second_time {
            Some(s) if s < end => Some(Block::from_tokens(&tokens, s, end)?),
            _ => None,
        };
        let legacy = matches!(oop.check, Some((_, CheckColumn::Error))) || find("root").is_none();
        Some(Columns {
            size: 0,
            count: find("count"),
            dtype: find("type"),
            redop: find("redop"),
            root: find("root"),
            prefix_len: first_time,
            out_of_place: oop,
            in_place: ip,
            legacy,
        })
    }

    /// The layout this header belongs to.
    pub fn layout(&self) -> Layout {
        if self.legacy {
            Layout::Legacy
        } else {
            Layout::Current
        }
    }

    /// Reads one data row. `Ok(None)`: not a data row (first field is not a size); `Err(())`: it
    /// starts like one but its fields do not fit the header (cut or garbled line).
    #[allow(clippy::result_unit_err)]
    pub fn parse_row(&self, line: &str, line_no: usize) -> Result<Option<Row>, ()> {
        let mut tokens = [""; 48];
        let mut n = 0;
        for t in line.split_ascii_whitespace() {
            if n == tokens.len() {
                break;
            }
            tokens[n] = t;
            n += 1;
        }
        let tokens = &tokens[..n];
        let Some(first) = tokens.first() else {
            return Ok(None);
        };
        if !first.bytes().all(|b| b.is_ascii_digit()) {
            return Ok(None);
        }
        let size: u64 = first.parse().map_err(|_| ())?;
        let full =
            self.prefix_len + self.out_of_place.len + self.in_place.map(|b| b.len).unwrap_or(0);
        let (oop, ip) = if tokens.len() >= full {
            let oop = self.out_of_place.read(tokens, 0)?;
            let ip = match self.in_place {
                Some(b) => Some(b.read(tokens, 0)?),
                None => None,
            };
            (Some(oop), ip)
        } else if let Some(b) = self.in_place.filter(|_| {
            // nccl-tests prints blanks instead of the out-of-place half in trace replay.
            tokens.len() + self.out_of_place.len == full
        }) {
            (None, Some(b.read(tokens, self.out_of_place.len)?))
        } else {
            return Err(());
        };
        let field = |i: Option<usize>| i.and_then(|i| tokens.get(i).copied());
        Ok(Some(Row {
            size,
            count: match field(self.count) {
                Some(c) => c.parse().map_err(|_| ())?,
                None => 0,
            },
            dtype: field(self.dtype).unwrap_or("").to_string(),
            redop: field(self.redop).map(str::to_string),
            root: match field(self.root) {
                Some(r) => Some(r.parse().map_err(|_| ())?),
                None => None,
            },
            out_of_place: oop,
            in_place: ip,
            line: line_no,
        }))
    }
}

impl Block {
    fn from_tokens(tokens: &[&str], start: usize, end: usize) -> Option<Block> {
        let rel = |name: &str| tokens[start..end].iter().position(|t| *t == name);
        let check = rel("#wrong")
            .map(|i| (i, CheckColumn::Wrong))
            .or_else(|| rel("error").map(|i| (i, CheckColumn::Error)));
        Some(Block {
            start,
            len: end - start,
            time: 0,
            algbw: rel("algbw")?,
            busbw: rel("busbw")?,
            check,
        })
    }

    /// Reads this block from a row's tokens; `shift` moves it left (missing out-of-place half).
    fn read(&self, tokens: &[&str], shift: usize) -> Result<Measurement, ()> {
        let at = |i: usize| tokens.get(self.start - shift + i).copied().ok_or(());
        let num = |i: usize| -> Result<f64, ()> { parse_float(at(i)?).ok_or(()) };
        let correctness = match self.check {
            None => Correctness::NotChecked,
            Some((i, kind)) => {
                let t = at(i)?;
                if t == "N/A" {
                    Correctness::NotChecked
                } else {
                    let v = parse_float(t).ok_or(())?;
                    match kind {
                        CheckColumn::Wrong if v >= 0.0 => Correctness::Wrong(v.round() as u64),
                        CheckColumn::Wrong => return Err(()),
                        CheckColumn::Error => Correctness::MaxError(v),
                    }
                }
            }
        };
        Ok(Measurement {
            time_us: num(self.time)?,
            algbw: num(self.algbw)?,
            busbw: num(self.busbw)?,
            correctness,
        })
    }
}

/// Parses a number as nccl-tests prints it (`%.2f`, `%.1e`, `%g`); rejects NaN-like words.
pub fn parse_float(t: &str) -> Option<f64> {
    let first = *t.as_bytes().first()?;
    if !(first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.') {
        return None;
    }
    t.parse().ok().filter(|v: &f64| v.is_finite())
}

/// Reads a footer line: `# Out of bounds values : 0 OK` or `# Avg bus bandwidth    : 86.7146 [OK]`
/// (older nccl-tests print them without `#`).
/// Returns `true` when the line was a footer line (and updated `footer`).
pub fn parse_footer_line(line: &str, footer: &mut Footer) -> bool {
    let t = line.trim_start();
    let body = t.strip_prefix('#').unwrap_or(t).trim_start();
    if let Some(rest) = body.strip_prefix("Out of bounds values") {
        let mut it = rest
            .trim_start()
            .trim_start_matches(':')
            .split_ascii_whitespace();
        footer.out_of_bounds = it.next().and_then(|v| v.parse().ok());
        return true;
    }
    if let Some(rest) = body.strip_prefix("Avg bus bandwidth") {
        let mut it = rest
            .trim_start()
            .trim_start_matches(':')
            .split_ascii_whitespace();
        footer.avg_busbw = it.next().and_then(parse_float);
        footer.avg_busbw_check_ok = match it.next() {
            Some("OK") => Some(true),
            Some("FAILED") => Some(false),
            _ => None,
        };
        return true;
    }
    false
}

/// Reads the header of a PyTorch measurement table
/// (`#             op        bytes    time_ms  algbw_GB/s  busbw_GB/s`).
pub fn is_torch_header(line: &str) -> bool {
    let mut it = line
        .strip_prefix('#')
        .unwrap_or("")
        .split_ascii_whitespace();
    it.next() == Some("op") && it.next() == Some("bytes") && it.next() == Some("time_ms")
}

/// Reads one PyTorch measurement row (`all_reduce 1073741824 3.262 329.21 329.21`): the op, and the
/// row with `time_ms` converted to microseconds and no in-place half.
pub fn parse_torch_row(line: &str, line_no: usize) -> Option<(String, Row)> {
    let mut it = line.split_ascii_whitespace();
    let op = it.next()?;
    if !op.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let size: u64 = it.next()?.parse().ok()?;
    let time_ms = parse_float(it.next()?)?;
    let algbw = parse_float(it.next()?)?;
    let busbw = parse_float(it.next()?)?;
    if it.next().is_some() {
        return None;
    }
    Some((
        op.to_string(),
        Row {
            size,
            count: 0,
            dtype: String::new(),
            redop: None,
            root: None,
            out_of_place: Some(Measurement {
                time_us: time_ms * 1000.0,
                algbw,
                busbw,
                correctness: Correctness::NotChecked,
            }),
            in_place: None,
            line: line_no,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CURRENT: &str = "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ";
    const LEGACY: &str = "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error";

    #[test]
    fn current_header_row_reads_every_column() {
        let c = Columns::from_header(CURRENT).unwrap();
        assert_eq!(c.layout(), Layout::Current);
        let r = c
            .parse_row("  1073741824     268435456     float     sum      -1  3250.07  330.37  330.37       0  3270.72  328.29  328.29       0", 7)
            .unwrap()
            .unwrap();
        assert_eq!(r.size, 1073741824);
        assert_eq!(r.count, 268435456);
        assert_eq!(r.dtype, "float");
        assert_eq!(r.redop.as_deref(), Some("sum"));
        assert_eq!(r.root, Some(-1));
        let o = r.out_of_place.unwrap();
        assert_eq!((o.time_us, o.algbw, o.busbw), (3250.07, 330.37, 330.37));
        assert_eq!(o.correctness, Correctness::Wrong(0));
        assert_eq!(r.in_place.unwrap().busbw, 328.29);
    }

    #[test]
    fn na_wrong_column_is_not_checked() {
        let c = Columns::from_header(CURRENT).unwrap();
        let r = c
            .parse_row("   268435456      33554432     float    none      -1   472.53  568.08  284.04       0   464.78  577.55  288.77    N/A", 1)
            .unwrap()
            .unwrap();
        assert_eq!(r.in_place.unwrap().correctness, Correctness::NotChecked);
        assert_eq!(r.out_of_place.unwrap().correctness, Correctness::Wrong(0));
    }

    #[test]
    fn legacy_header_has_error_column_and_no_root() {
        let c = Columns::from_header(LEGACY).unwrap();
        assert_eq!(c.layout(), Layout::Legacy);
        let r = c
            .parse_row("     1048576        262144   float     sum    28.72   36.51   68.45  5e-07    28.24   37.13   69.62  5e-07", 3)
            .unwrap()
            .unwrap();
        assert_eq!(r.root, None);
        let o = r.out_of_place.unwrap();
        assert_eq!(o.busbw, 68.45);
        assert_eq!(o.correctness, Correctness::MaxError(5e-7));
    }

    #[test]
    fn wide_numbers_in_exponent_form_are_read() {
        let c = Columns::from_header(CURRENT).unwrap();
        let r = c
            .parse_row("  17179869184    4294967296     float     sum      -1  1.8e+04  939.58  936.93   1e+06  18292.6  939.19  936.54      0", 1)
            .unwrap()
            .unwrap();
        let o = r.out_of_place.unwrap();
        assert_eq!(o.time_us, 18000.0);
        assert_eq!(o.correctness, Correctness::Wrong(1_000_000));
    }

    #[test]
    fn cut_row_is_malformed_not_a_panic() {
        let c = Columns::from_header(CURRENT).unwrap();
        assert_eq!(
            c.parse_row(
                "     1048576        262144     float     sum      -1    19.32   54.2",
                1
            ),
            Err(())
        );
        assert_eq!(
            c.parse_row("vm:1418:1437 [0] NCCL INFO Channel", 1),
            Ok(None)
        );
    }

    #[test]
    fn per_iteration_header_skips_extra_columns() {
        let h = "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%";
        let c = Columns::from_header(h).unwrap();
        let r = c
            .parse_row("     1048576        262144     float     sum      -1    19.32   54.26   54.26       0    18.00    21.00    21.00     2.10    19.71   53.19   53.19       0    18.00    21.00    21.00     2.10", 1)
            .unwrap()
            .unwrap();
        assert_eq!(r.in_place.unwrap().busbw, 53.19);
    }

    #[test]
    fn footer_lines_are_read() {
        let mut f = Footer::default();
        assert!(parse_footer_line(
            "# Out of bounds values : 3 FAILED",
            &mut f
        ));
        assert!(parse_footer_line(
            "# Avg bus bandwidth    : 86.7146 ",
            &mut f
        ));
        assert_eq!(f.out_of_bounds, Some(3));
        assert_eq!(f.avg_busbw, Some(86.7146));
        assert_eq!(f.avg_busbw_check_ok, None);
        assert!(!parse_footer_line(
            "# Collective test concluded: all_reduce_perf",
            &mut f
        ));
    }
}

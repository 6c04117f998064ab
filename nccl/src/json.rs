//! nccl-tests `-J FILE.json` output (JSON file version 3, nccl-tests 2.17+; writer in nccl-tests'
//! `src/util.cu`) read into the same [`Parsed`] as the text table.
//!
//! Shape: `{version, start_time, args[], env[], nccl_version, config{…, devices[{rank, pid, hostname,
//! device, device_hex, device_info}]}, results[{size, count, type, redop, root, out_of_place{time |
//! cpu_time, alg_bw, bus_bw, nwrong|null} | null, in_place{…}}], out_of_bounds{count, okay},
//! average_bus_bandwidth{bandwidth, okay}, errors[], end_time}`. Times in us, bandwidths in GB/s.
//! nccl-tests writes NaN as the string `"nan"` and booleans as the strings `"true"`/`"false"`.
//! A run that dies leaves the file unclosed: what was written before the cut is kept.
//!
//! The document is read as a stream ([`parse_json_reader`]): each device and each result row is
//! turned into its [`RankLine`] or [`Row`] as soon as it is read, and every other key (`env`,
//! per-iteration timings, per-process time lists) is skipped without being built; so memory
//! follows what is kept, not the file (a 51 MB file of result rows: about its size, where a parse
//! into `serde_json::Value` took 11.6 times). Wrongly typed values make a row malformed, never the
//! whole document unreadable.

use std::fmt;
use std::io::Read;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::log::RankLine;
use crate::parsed::{ParseError, Parsed, MAX_JSON};
use crate::table::{Correctness, Footer, Layout, Measurement, Row, Table};

/// Parses nccl-tests JSON held in memory; keeps what was written before a cut-off end.
pub fn parse_json(data: &[u8]) -> Result<Parsed, ParseError> {
    let mut acc = Acc::default();
    let mut de = serde_json::Deserializer::from_slice(data);
    let res = Top(&mut acc).deserialize(&mut de).and_then(|()| de.end());
    acc.bytes = data.len() as u64;
    acc.newlines = memchr::memchr_iter(b'\n', data).count() as u64;
    finish(acc, res)
}

/// Parses nccl-tests JSON from a stream, in constant memory apart from the devices and rows kept;
/// a document longer than [`MAX_JSON`] bytes is refused ([`ParseError::TooLarge`]).
pub fn parse_json_reader<R: Read>(r: R) -> Result<Parsed, ParseError> {
    let counter = std::rc::Rc::new(std::cell::Cell::new((0u64, 0u64)));
    let counting = Counting {
        inner: r,
        seen: counter.clone(),
    };
    let mut acc = Acc::default();
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(
        64 << 10,
        counting,
    ));
    let res = Top(&mut acc).deserialize(&mut de).and_then(|()| de.end());
    let (bytes, newlines) = counter.get();
    if bytes > MAX_JSON as u64 {
        return Err(ParseError::TooLarge(bytes));
    }
    acc.bytes = bytes;
    acc.newlines = newlines;
    finish(acc, res)
}

/// Counts what passes (bytes, newlines) and stops a stream past [`MAX_JSON`] bytes.
struct Counting<R> {
    inner: R,
    seen: std::rc::Rc<std::cell::Cell<(u64, u64)>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (bytes, lines) = self.seen.get();
        if bytes > MAX_JSON as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "larger than the JSON limit",
            ));
        }
        let n = self.inner.read(buf)?;
        let nl = memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        self.seen.set((bytes + n as u64, lines + nl));
        Ok(n)
    }
}

/// What the stream has given so far.
#[derive(Default)]
struct Acc {
    parsed: Parsed,
    /// `results`, `config` or `args` was seen: this is nccl-tests output.
    nccl_tests: bool,
    collective: Option<String>,
    nthreads: Option<u64>,
    ngpus: Option<u64>,
    /// `config.devices` entries: one per process.
    procs: u64,
    /// `results` was an array.
    results: bool,
    rows: Vec<Row>,
    malformed: usize,
    out_of_bounds: Option<Option<u64>>,
    avg_busbw: Option<(Option<f64>, Option<bool>)>,
    bytes: u64,
    newlines: u64,
}

fn finish(mut acc: Acc, res: Result<(), serde_json::Error>) -> Result<Parsed, ParseError> {
    let truncated = match res {
        Ok(()) => false,
        Err(e) if e.is_eof() && acc.nccl_tests => true,
        Err(e) => return Err(ParseError::Json(e.to_string())),
    };
    if !acc.nccl_tests {
        return Err(ParseError::Json(
            "no results, config or args key: not nccl-tests output".into(),
        ));
    }
    let mut p = std::mem::take(&mut acc.parsed);
    p.bytes = acc.bytes;
    p.lines = acc.newlines as usize + 1;
    p.json_truncated = truncated;
    // One `devices` entry per process (nccl-tests' JSON writer keeps the first `# Rank` line of
    // each process): a process drives nthreads x ngpus ranks (`-t`, `-g`).
    if acc.procs > 0 {
        let per_proc = acc.nthreads.unwrap_or(1).max(1) * acc.ngpus.unwrap_or(1).max(1);
        let n = u32::try_from(acc.procs.saturating_mul(per_proc)).unwrap_or(u32::MAX);
        p.facts.nranks = p.facts.nranks.max(Some(n));
    }
    if acc.results {
        let mut t = Table::new(acc.collective, Layout::Json, 0);
        t.rows = acc.rows;
        t.malformed_rows = vec![0; acc.malformed];
        if acc.out_of_bounds.is_some() || acc.avg_busbw.is_some() {
            let (avg, ok) = acc.avg_busbw.unwrap_or((None, None));
            t.footer = Some(Footer {
                out_of_bounds: acc.out_of_bounds.flatten(),
                avg_busbw: avg,
                avg_busbw_check_ok: ok,
            });
        }
        p.tables.push(t);
    }
    Ok(p)
}

/// One JSON value as far as it is read here: a number, a string, a boolean, null, or anything else
/// (an array or object, skipped without being built).
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
    Bool(bool),
    Null,
    Other,
}

impl Scalar {
    fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::U64(n) => Some(*n),
            Scalar::I64(n) => u64::try_from(*n).ok(),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A number, or a string holding one (nccl-tests writes `"nan"`, `"    -1"`).
    fn number(&self) -> Option<f64> {
        match self {
            Scalar::U64(n) => Some(*n as f64),
            Scalar::I64(n) => Some(*n as f64),
            Scalar::F64(n) => Some(*n),
            Scalar::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::U64(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::I64(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::F64(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar::Str(v))
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Scalar, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Scalar, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// An object read as `T`, or `None` for any other value (skipped): a wrongly typed entry costs its
/// own row, not the document.
struct Lenient<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Lenient<T>, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Lenient<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Lenient<T>, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(a))
                    .map(|t| Lenient(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Lenient<T>, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E>(self) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
            fn visit_none<E>(self) -> Result<Lenient<T>, E> {
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// An array whose elements are handed to `each` one at a time (anything else is skipped); `array`
/// is set as soon as the value shows itself an array (so a document cut inside it still counts).
struct Each<'a, T, F: FnMut(T)>(F, &'a mut bool, std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>, F: FnMut(T)> DeserializeSeed<'de> for Each<'_, T, F> {
    /// Whether the value was an array.
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        struct V<'a, T, F>(F, &'a mut bool, std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, F: FnMut(T)> Visitor<'de> for V<'_, T, F> {
            type Value = bool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(mut self, mut a: A) -> Result<bool, A::Error> {
                *self.1 = true;
                while let Some(t) = a.next_element::<T>()? {
                    (self.0)(t);
                }
                Ok(true)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<bool, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(false)
            }
            fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_str<E>(self, _: &str) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_unit<E>(self) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_none<E>(self) -> Result<bool, E> {
                Ok(false)
            }
        }
        d.deserialize_any(V(self.0, self.1, std::marker::PhantomData))
    }
}

fn each<T, F: FnMut(T)>(array: &mut bool, f: F) -> Each<'_, T, F> {
    Each(f, array, std::marker::PhantomData)
}

/// The top-level object, key by key into the accumulator.
struct Top<'a>(&'a mut Acc);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an nccl-tests JSON object (top level is not an object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let acc = self.0;
        while let Some(key) = m.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "nccl_version" => {
                    if let Some(code) = m.next_value::<Scalar>()?.as_u64() {
                        acc.parsed.facts.nccl_version = Some(nccl_version_string(code));
                    }
                }
                "args" => {
                    acc.nccl_tests = true;
                    let mut first = true;
                    let mut collective = None;
                    m.next_value_seed(each(&mut false, |a: Scalar| {
                        if std::mem::take(&mut first) {
                            collective = a
                                .as_str()
                                .map(|a| a.rsplit('/').next().unwrap_or(a).to_string());
                        }
                    }))?;
                    acc.collective = collective;
                }
                "config" => {
                    acc.nccl_tests = true;
                    m.next_value_seed(Config(acc))?;
                }
                "results" => {
                    acc.nccl_tests = true;
                    let (rows, malformed) = (&mut acc.rows, &mut acc.malformed);
                    m.next_value_seed(each(&mut acc.results, |r: Lenient<SlimRow>| {
                        match r.0.and_then(SlimRow::row) {
                            Some(row) => rows.push(row),
                            None => *malformed += 1,
                        }
                    }))?;
                }
                "out_of_bounds" => {
                    let o = m.next_value::<Lenient<Oob>>()?;
                    acc.out_of_bounds = Some(o.0.and_then(|o| o.count).and_then(|c| c.as_u64()));
                }
                "average_bus_bandwidth" => {
                    let a = m.next_value::<Lenient<Avg>>()?;
                    acc.avg_busbw = Some(a.0.map_or((None, None), |a| {
                        (
                            a.bandwidth.as_ref().and_then(Scalar::number),
                            a.okay.and_then(|o| match o {
                                Scalar::Bool(b) => Some(b),
                                Scalar::Str(s) if s == "true" => Some(true),
                                Scalar::Str(s) if s == "false" => Some(false),
                                _ => None,
                            }),
                        )
                    }));
                }
                "errors" => {
                    let failures = &mut acc.parsed.facts.test_failures;
                    m.next_value_seed(each(&mut false, |e: Scalar| {
                        if let Some(e) = e.as_str().filter(|e| !e.is_empty()) {
                            failures.push(format!("nccl-tests error: {e}"));
                        }
                    }))?;
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `config`: `nthreads`, `ngpus`, and each of `devices` noted as it is read.
struct Config<'a>(&'a mut Acc);

impl<'de> DeserializeSeed<'de> for Config<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Config<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let acc = self.0;
        while let Some(key) = m.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "nthreads" => acc.nthreads = m.next_value::<Scalar>()?.as_u64(),
                "ngpus" => acc.ngpus = m.next_value::<Scalar>()?.as_u64(),
                "devices" => {
                    let (facts, procs) = (&mut acc.parsed.facts, &mut acc.procs);
                    m.next_value_seed(each(&mut false, |d: Lenient<SlimDevice>| {
                        *procs += 1;
                        let d = d.0.unwrap_or_default();
                        let num = |v: &Option<Scalar>| {
                            v.as_ref().and_then(Scalar::as_u64).unwrap_or(0) as u32
                        };
                        let text = |v: &Option<Scalar>| {
                            v.as_ref()
                                .and_then(Scalar::as_str)
                                .unwrap_or("")
                                .to_string()
                        };
                        let host = text(&d.hostname);
                        if !host.is_empty() {
                            facts.note_host(&host);
                        }
                        facts.note_rank(RankLine {
                            rank: num(&d.rank),
                            pid: num(&d.pid),
                            gpu: format!("[{}] {}", text(&d.device_hex), text(&d.device_info)),
                            host,
                            device: num(&d.device),
                        });
                    }))?;
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[derive(Deserialize, Default)]
struct SlimDevice {
    rank: Option<Scalar>,
    pid: Option<Scalar>,
    hostname: Option<Scalar>,
    device: Option<Scalar>,
    device_hex: Option<Scalar>,
    device_info: Option<Scalar>,
}

#[derive(Deserialize)]
struct Oob {
    count: Option<Scalar>,
}

#[derive(Deserialize)]
struct Avg {
    bandwidth: Option<Scalar>,
    okay: Option<Scalar>,
}

#[derive(Deserialize)]
struct Half {
    time: Option<Scalar>,
    cpu_time: Option<Scalar>,
    alg_bw: Option<Scalar>,
    bus_bw: Option<Scalar>,
    nwrong: Option<Scalar>,
}

/// A half (`out_of_place`/`in_place`) as written: absent or null, an object, or something else.
enum HalfVal {
    None,
    Half(Half),
    Bad,
}

impl<'de> Deserialize<'de> for HalfVal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HalfVal, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HalfVal;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<HalfVal, E> {
                Ok(HalfVal::None)
            }
            fn visit_none<E>(self) -> Result<HalfVal, E> {
                Ok(HalfVal::None)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<HalfVal, A::Error> {
                Half::deserialize(serde::de::value::MapAccessDeserializer::new(a))
                    .map(HalfVal::Half)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<HalfVal, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(HalfVal::Bad)
            }
            fn visit_u64<E>(self, _: u64) -> Result<HalfVal, E> {
                Ok(HalfVal::Bad)
            }
            fn visit_i64<E>(self, _: i64) -> Result<HalfVal, E> {
                Ok(HalfVal::Bad)
            }
            fn visit_f64<E>(self, _: f64) -> Result<HalfVal, E> {
                Ok(HalfVal::Bad)
            }
            fn visit_bool<E>(self, _: bool) -> Result<HalfVal, E> {
                Ok(HalfVal::Bad)
            }
            fn visit_str<E>(self, _: &str) -> Result<HalfVal, E> {
                Ok(HalfVal::Bad)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct SlimRow {
    size: Option<Scalar>,
    count: Option<Scalar>,
    #[serde(rename = "type")]
    dtype: Option<Scalar>,
    redop: Option<Scalar>,
    root: Option<Scalar>,
    out_of_place: Option<HalfVal>,
    in_place: Option<HalfVal>,
}

impl SlimRow {
    /// The row, or `None` when a needed value is missing or not a number.
    fn row(self) -> Option<Row> {
        let half = |h: Option<HalfVal>| -> Option<Option<Measurement>> {
            match h {
                None | Some(HalfVal::None) => Some(None),
                Some(HalfVal::Bad) => None,
                Some(HalfVal::Half(m)) => {
                    let time = m.time.or(m.cpu_time)?;
                    let wrong = match m.nwrong {
                        None | Some(Scalar::Null) => Correctness::NotChecked,
                        Some(w) => Correctness::Wrong(w.number()?.max(0.0).round() as u64),
                    };
                    Some(Some(Measurement {
                        time_us: time.number()?,
                        algbw: m.alg_bw?.number()?,
                        busbw: m.bus_bw?.number()?,
                        correctness: wrong,
                    }))
                }
            }
        };
        Some(Row {
            size: self.size?.as_u64()?,
            count: self.count.and_then(|c| c.as_u64()).unwrap_or(0),
            dtype: self
                .dtype
                .as_ref()
                .and_then(Scalar::as_str)
                .unwrap_or("")
                .to_string(),
            redop: self
                .redop
                .as_ref()
                .and_then(Scalar::as_str)
                .map(str::to_string),
            root: self.root.and_then(|v| match v {
                Scalar::U64(n) => i64::try_from(n).ok(),
                Scalar::I64(n) => Some(n),
                Scalar::Str(s) => s.trim().parse().ok(),
                _ => None,
            }),
            out_of_place: half(self.out_of_place)?,
            in_place: half(self.in_place)?,
            line: 0,
        })
    }
}

/// NCCL's version code: `major*10000 + minor*100 + patch` since 2.9, `major*1000 + …` before.
fn nccl_version_string(code: u64) -> String {
    if code >= 20900 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"version":3,"start_time":"2026-11-30 00:11:00","args":["./build/all_reduce_perf","-b","8"],"env":[],"nccl_version":22809,"config":{"nthreads":1,"ngpus":2,"devices":[{"rank":0,"group":0,"pid":1418,"hostname":"vm","device":0,"device_hex":"0000:00:06","device_info":"NVIDIA H200"}]},"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":14.850000,"alg_bw":0.000000,"bus_bw":0.000000,"nwrong":0.000000},"in_place":{"time":15.830000,"alg_bw":0.000000,"bus_bw":0.000000,"nwrong":null},"actual_iterations":20,"experiment_name":""},{"size":1073741824,"count":268435456,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":3250.070000,"alg_bw":330.370000,"bus_bw":330.370000,"nwrong":0.000000},"in_place":{"time":3270.720000,"alg_bw":328.290000,"bus_bw":328.290000,"nwrong":0.000000},"actual_iterations":20,"experiment_name":""}],"out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":86.714600,"okay":"unchecked"},"errors":[],"end_time":"2026-11-30 00:11:05"}"#;

    #[test]
    fn json_document_is_read_like_the_table() {
        let p = parse_json(DOC.as_bytes()).unwrap();
        assert_eq!(p.facts.nccl_version.as_deref(), Some("2.28.9"));
        assert_eq!(p.facts.hosts, vec!["vm"]);
        let t = &p.tables[0];
        assert_eq!(t.collective.as_deref(), Some("all_reduce_perf"));
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[1].out_of_place.unwrap().busbw, 330.37);
        assert_eq!(t.rows[1].root, Some(-1));
        assert_eq!(
            t.rows[0].in_place.unwrap().correctness,
            Correctness::NotChecked
        );
        assert_eq!(t.footer.as_ref().unwrap().out_of_bounds, Some(0));
        assert!(!p.json_truncated);
    }

    #[test]
    fn truncated_json_keeps_the_rows_written_before_the_cut() {
        let cut = DOC.find(r#"{"size":1073741824"#).unwrap() + 40;
        let p = parse_json(&DOC.as_bytes()[..cut]).unwrap();
        assert!(p.json_truncated);
        assert_eq!(p.tables[0].rows.len(), 1);
        assert_eq!(p.tables[0].footer, None);
    }

    #[test]
    fn a_stream_reads_like_the_document_in_memory() {
        let whole = parse_json(DOC.as_bytes()).unwrap();
        let streamed = parse_json_reader(DOC.as_bytes()).unwrap();
        assert_eq!(whole, streamed);
        let cut = DOC.find(r#"{"size":1073741824"#).unwrap() + 40;
        let p = parse_json_reader(&DOC.as_bytes()[..cut]).unwrap();
        assert!(p.json_truncated);
        assert_eq!(p.tables[0].rows.len(), 1);
        assert_eq!(p.bytes, cut as u64);
    }

    #[test]
    fn wrongly_typed_entries_cost_their_row_not_the_document() {
        let doc = r#"{"args":"x","config":[1],"results":[7,{"size":"8"},{"size":8,"out_of_place":3},{"size":16,"type":"float","out_of_place":{"time":"1.5","alg_bw":2,"bus_bw":"nan","nwrong":null},"in_place":null}],"out_of_bounds":5,"errors":[1,"","boom"]}"#;
        let p = parse_json(doc.as_bytes()).unwrap();
        let t = &p.tables[0];
        assert_eq!(t.collective, None);
        assert_eq!(t.malformed_rows.len(), 3);
        assert_eq!(t.rows.len(), 1);
        let m = t.rows[0].out_of_place.unwrap();
        assert_eq!((m.time_us, m.algbw), (1.5, 2.0));
        assert!(m.busbw.is_nan());
        assert_eq!(m.correctness, Correctness::NotChecked);
        assert_eq!(t.footer.as_ref().unwrap().out_of_bounds, None);
        assert_eq!(p.facts.test_failures, vec!["nccl-tests error: boom"]);
        assert!(matches!(parse_json(b"[1]"), Err(ParseError::Json(_))));
        assert!(matches!(
            parse_json(br#"{"a":1}"#),
            Err(ParseError::Json(e)) if e.contains("not nccl-tests output")
        ));
        assert!(matches!(
            parse_json(br#"{"args":[]} x"#),
            Err(ParseError::Json(_))
        ));
    }

    #[test]
    fn version_codes() {
        assert_eq!(nccl_version_string(22809), "2.28.9");
        assert_eq!(nccl_version_string(2804), "2.8.4");
    }
}

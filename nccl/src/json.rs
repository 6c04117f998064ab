//! nccl-tests `-J FILE.json` output (JSON file version 3, nccl-tests 2.17+; writer in nccl-tests'
//! `src/util.cu`) read into the same [`Parsed`] as the text table.
//!
//! Shape: `{version, start_time, args[], env[], nccl_version, config{…, devices[{rank, pid, hostname,
//! device, device_hex, device_info}]}, results[{size, count, type, redop, root, out_of_place{time |
//! cpu_time, alg_bw, bus_bw, nwrong|null} | null, in_place{…}}], out_of_bounds{count, okay},
//! average_bus_bandwidth{bandwidth, okay}, errors[], end_time}`. Times in us, bandwidths in GB/s.
//! nccl-tests writes NaN as the string `"nan"` and booleans as the strings `"true"`/`"false"`.
//! A run that dies leaves the file unclosed: the cut-off end is closed and what was written is read.
//!
//! Only the keys read below are kept while parsing ([`Slim`]): `env`, per-iteration timings and
//! per-process time lists are skipped by the parser, so memory follows the useful part of the file
//! (the whole file is held once, at most [`crate::parsed::MAX_JSON`] bytes).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::log::RankLine;
use crate::parsed::{ParseError, Parsed};
use crate::table::{Correctness, Footer, Layout, Measurement, Row, Table};

/// Parses nccl-tests JSON; closes a truncated document before giving up.
pub fn parse_json(data: &[u8]) -> Result<Parsed, ParseError> {
    let (slim, truncated) = match serde_json::from_slice::<Slim>(data) {
        Ok(v) => (v, false),
        Err(e) if e.is_eof() => match close_truncated(data)
            .and_then(|fixed| serde_json::from_slice::<Slim>(&fixed).ok())
        {
            Some(v) => (v, true),
            None => return Err(ParseError::Json(e.to_string())),
        },
        Err(e) => return Err(ParseError::Json(e.to_string())),
    };
    let v = slim.into_value();
    let Some(top) = v.as_object() else {
        return Err(ParseError::Json("top level is not an object".into()));
    };
    if !top.contains_key("results") && !top.contains_key("config") && !top.contains_key("args") {
        return Err(ParseError::Json(
            "no results, config or args key: not nccl-tests output".into(),
        ));
    }
    let mut p = Parsed {
        bytes: data.len() as u64,
        lines: data.iter().filter(|&&b| b == b'\n').count() + 1,
        json_truncated: truncated,
        ..Parsed::default()
    };
    if let Some(code) = top.get("nccl_version").and_then(Value::as_u64) {
        p.facts.nccl_version = Some(nccl_version_string(code));
    }
    let collective = top
        .get("args")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string());
    if let Some(devices) = top
        .get("config")
        .and_then(|c| c.get("devices"))
        .and_then(Value::as_array)
    {
        for d in devices {
            let num = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0) as u32;
            let host = d.get("hostname").and_then(Value::as_str).unwrap_or("");
            let gpu = format!(
                "[{}] {}",
                d.get("device_hex").and_then(Value::as_str).unwrap_or(""),
                d.get("device_info").and_then(Value::as_str).unwrap_or("")
            );
            if !host.is_empty() {
                p.facts.note_host(host);
            }
            p.facts.note_rank(RankLine {
                rank: num("rank"),
                pid: num("pid"),
                host: host.to_string(),
                device: num("device"),
                gpu,
            });
        }
    }
    // One `devices` entry per process (nccl-tests' JSON writer keeps the first `# Rank` line of
    // each process): a process drives nthreads x ngpus ranks (`-t`, `-g`).
    if let Some(cfg) = top.get("config") {
        let per_proc = cfg
            .get("nthreads")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1)
            * cfg.get("ngpus").and_then(Value::as_u64).unwrap_or(1).max(1);
        let procs = cfg
            .get("devices")
            .and_then(Value::as_array)
            .map_or(0, |d| d.len() as u64);
        if procs > 0 {
            let n = u32::try_from(procs.saturating_mul(per_proc)).unwrap_or(u32::MAX);
            p.facts.nranks = p.facts.nranks.max(Some(n));
        }
    }
    if let Some(results) = top.get("results").and_then(Value::as_array) {
        let mut t = Table::new(collective, Layout::Json, 0);
        for r in results {
            match row(r) {
                Some(row) => t.rows.push(row),
                None => t.malformed_rows.push(0),
            }
        }
        let oob = top.get("out_of_bounds");
        let avg = top.get("average_bus_bandwidth");
        if oob.is_some() || avg.is_some() {
            t.footer = Some(Footer {
                out_of_bounds: oob.and_then(|o| o.get("count")).and_then(Value::as_u64),
                avg_busbw: avg.and_then(|a| a.get("bandwidth")).and_then(number),
                avg_busbw_check_ok: avg.and_then(|a| a.get("okay")).and_then(|o| match o {
                    Value::Bool(b) => Some(*b),
                    Value::String(s) if s == "true" => Some(true),
                    Value::String(s) if s == "false" => Some(false),
                    _ => None,
                }),
            });
        }
        p.tables.push(t);
    }
    if let Some(errors) = top.get("errors").and_then(Value::as_array) {
        for e in errors.iter().filter_map(Value::as_str) {
            if !e.is_empty() {
                p.facts.test_failures.push(format!("nccl-tests error: {e}"));
            }
        }
    }
    Ok(p)
}

/// The keys of an nccl-tests JSON document that are read; serde skips every other key without
/// building it.
#[derive(Deserialize)]
struct Slim {
    nccl_version: Option<Value>,
    args: Option<Vec<Value>>,
    config: Option<SlimConfig>,
    results: Option<Vec<SlimRow>>,
    out_of_bounds: Option<Value>,
    average_bus_bandwidth: Option<Value>,
    errors: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct SlimConfig {
    nthreads: Option<Value>,
    ngpus: Option<Value>,
    devices: Option<Vec<SlimDevice>>,
}

#[derive(Deserialize)]
struct SlimDevice {
    rank: Option<Value>,
    pid: Option<Value>,
    hostname: Option<Value>,
    device: Option<Value>,
    device_hex: Option<Value>,
    device_info: Option<Value>,
}

#[derive(Deserialize)]
struct SlimRow {
    size: Option<Value>,
    count: Option<Value>,
    #[serde(rename = "type")]
    dtype: Option<Value>,
    redop: Option<Value>,
    root: Option<Value>,
    out_of_place: Option<Value>,
    in_place: Option<Value>,
}

/// Builds an object from the keys that were present.
fn object(pairs: Vec<(&str, Option<Value>)>) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    }
    Value::Object(m)
}

impl Slim {
    /// The same shape as the document, with only the keys that are read.
    fn into_value(self) -> Value {
        let config = self.config.map(|c| {
            object(vec![
                ("nthreads", c.nthreads),
                ("ngpus", c.ngpus),
                (
                    "devices",
                    c.devices.map(|d| {
                        Value::Array(
                            d.into_iter()
                                .map(|d| {
                                    object(vec![
                                        ("rank", d.rank),
                                        ("pid", d.pid),
                                        ("hostname", d.hostname),
                                        ("device", d.device),
                                        ("device_hex", d.device_hex),
                                        ("device_info", d.device_info),
                                    ])
                                })
                                .collect(),
                        )
                    }),
                ),
            ])
        });
        let results = self.results.map(|r| {
            Value::Array(
                r.into_iter()
                    .map(|r| {
                        object(vec![
                            ("size", r.size),
                            ("count", r.count),
                            ("type", r.dtype),
                            ("redop", r.redop),
                            ("root", r.root),
                            ("out_of_place", Some(r.out_of_place.unwrap_or(Value::Null))),
                            ("in_place", Some(r.in_place.unwrap_or(Value::Null))),
                        ])
                    })
                    .collect(),
            )
        });
        object(vec![
            ("nccl_version", self.nccl_version),
            ("args", self.args.map(Value::Array)),
            ("config", config),
            ("results", results),
            ("out_of_bounds", self.out_of_bounds),
            ("average_bus_bandwidth", self.average_bus_bandwidth),
            ("errors", self.errors.map(Value::Array)),
        ])
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

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn row(r: &Value) -> Option<Row> {
    let half = |k: &str| -> Option<Option<Measurement>> {
        match r.get(k) {
            None | Some(Value::Null) => Some(None),
            Some(m) => {
                let time = m.get("time").or_else(|| m.get("cpu_time"))?;
                let wrong = match m.get("nwrong") {
                    None | Some(Value::Null) => Correctness::NotChecked,
                    Some(w) => Correctness::Wrong(number(w)?.max(0.0).round() as u64),
                };
                Some(Some(Measurement {
                    time_us: number(time)?,
                    algbw: number(m.get("alg_bw")?)?,
                    busbw: number(m.get("bus_bw")?)?,
                    correctness: wrong,
                }))
            }
        }
    };
    Some(Row {
        size: r.get("size")?.as_u64()?,
        count: r.get("count").and_then(Value::as_u64).unwrap_or(0),
        dtype: r
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        redop: r.get("redop").and_then(Value::as_str).map(str::to_string),
        root: r.get("root").and_then(|v| match v {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }),
        out_of_place: half("out_of_place")?,
        in_place: half("in_place")?,
        line: 0,
    })
}

/// Cuts a truncated JSON document after its last complete object or list and closes the containers
/// still open there. `None` when nothing complete was found.
fn close_truncated(data: &[u8]) -> Option<Vec<u8>> {
    let mut stack: Vec<u8> = Vec::new();
    let mut in_str = false;
    let mut escaped = false;
    let mut best: Option<(usize, Vec<u8>)> = None;
    for (i, &b) in data.iter().enumerate() {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => stack.push(b),
            b'}' | b']' => {
                stack.pop();
                if stack.is_empty() {
                    return None; // complete document: the error was not truncation
                }
                best = Some((i + 1, stack.clone()));
            }
            _ => {}
        }
    }
    let (end, open) = best?;
    let mut out = data[..end].to_vec();
    for c in open.iter().rev() {
        out.push(if *c == b'{' { b'}' } else { b']' });
    }
    Some(out)
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
    fn version_codes() {
        assert_eq!(nccl_version_string(22809), "2.28.9");
        assert_eq!(nccl_version_string(2804), "2.8.4");
    }
}

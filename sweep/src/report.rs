//! Reading what `launchguard check --json` printed on each node, as one `srun --label` step delivers
//! it: every line prefixed with its task number (`  3: …`). Each task first prints a marker line
//! `@lg-node <SLURMD_NODENAME>` (the sweep's wrapper), then the check's one JSON object (one line or
//! pretty-printed, either works). Lines are grouped by task, so output interleaved between nodes is
//! attributed correctly; a node's report is judged only from its own lines.
//!
//! The contract is [`launchguard_core::report::NodeReport`] (node-agent's `check --json`). It is read
//! here field by field rather than deserialised into that type, because the sweep must judge nodes
//! that run other launchguard versions: missing fields, non-string facts and an unknown check
//! status (read as UNKNOWN) are tolerated, and only what the comparison needs is kept
//! ([`NodeReport`] below is that digest, not a second schema).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::finding::Severity;

/// Marker each task prints before the check runs.
pub const NODE_MARKER: &str = "@lg-node ";

/// One node check result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    /// Check ID (`node.munge.key_mode`).
    pub id: String,
    /// Its status.
    pub status: Severity,
    /// Its one-line message ("" when ok).
    pub message: String,
}

/// One node's parsed report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeReport {
    /// Slurm's name for the node (`SLURMD_NODENAME`), which the sweep trusts over the JSON's `node`.
    pub node: String,
    /// The name the check itself reported (its hostname), when different from Slurm's.
    pub reported_name: Option<String>,
    /// Overall status of the node's checks.
    pub status: Severity,
    /// Checks that were not ok.
    pub failures: Vec<CheckResult>,
    /// Number of checks run.
    pub checks: usize,
    /// Facts to compare across nodes (string values only).
    pub facts: BTreeMap<String, String>,
    /// How long the checks took on the node, ms.
    pub duration_ms: Option<f64>,
}

/// What came back from one task.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutput {
    /// A parsed report.
    Report(NodeReport),
    /// The task ran on `node` but printed no usable JSON (`detail` says what it printed instead).
    Unreadable { node: String, detail: String },
}

/// Splits `  12: text` into (12, "text"); `None` for unlabelled lines.
pub fn split_label(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start();
    let colon = t.find(':')?;
    let n = t[..colon].parse().ok()?;
    let rest = &t[colon + 1..];
    Some((n, rest.strip_prefix(' ').unwrap_or(rest)))
}

/// Parses one check JSON document for `node`.
pub fn parse_report(node: &str, json: &str) -> Result<NodeReport, String> {
    let v: serde_json::Value =
        serde_json::from_str(json.trim()).map_err(|e| format!("not the check's JSON ({e})"))?;
    let obj = v.as_object().ok_or("not a JSON object")?;
    let status = obj
        .get("status")
        .and_then(|s| s.as_str())
        .and_then(|s| s.parse::<Severity>().ok())
        .ok_or("no valid \"status\"")?;
    let mut failures = Vec::new();
    let mut checks = 0;
    for c in obj
        .get("checks")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
    {
        checks += 1;
        let st = c
            .get("status")
            .and_then(|s| s.as_str())
            .and_then(|s| s.parse::<Severity>().ok())
            .unwrap_or(Severity::Unknown);
        if st != Severity::Ok {
            failures.push(CheckResult {
                id: c
                    .get("id")
                    .and_then(|s| s.as_str())
                    .unwrap_or("?")
                    .to_string(),
                status: st,
                message: c
                    .get("message")
                    .and_then(|s| s.as_str())
                    .unwrap_or("")
                    .to_string(),
            });
        }
    }
    let mut facts = BTreeMap::new();
    if let Some(f) = obj.get("facts").and_then(|f| f.as_object()) {
        for (k, v) in f {
            if let Some(s) = v.as_str() {
                facts.insert(k.clone(), s.to_string());
            }
        }
    }
    if let Some(s) = obj.get("launchguard_version").and_then(|s| s.as_str()) {
        facts
            .entry("launchguard_version".into())
            .or_insert_with(|| s.to_string());
    }
    let reported = obj.get("node").and_then(|s| s.as_str()).map(str::to_string);
    Ok(NodeReport {
        node: node.to_string(),
        reported_name: reported.filter(|r| r != node),
        status,
        failures,
        checks,
        facts,
        duration_ms: obj.get("duration_ms").and_then(|d| d.as_f64()),
    })
}

/// Reads one step's labelled stdout line by line, as it arrives: each task's text is kept only
/// until its JSON object is complete, then replaced by the parsed report (what the comparison needs
/// is a few hundred bytes per node; the raw report is ~3 KB). Tasks without a marker line cannot be
/// attributed to a node and are dropped (the node then counts as missing, and the sweep asks it again
/// on its own).
#[derive(Debug, Default)]
pub struct StepParser {
    /// Tasks still printing: node (once the marker arrived) and the text so far.
    open: BTreeMap<usize, (Option<String>, String)>,
    /// Tasks whose report is complete.
    done: BTreeMap<usize, NodeReport>,
}

impl StepParser {
    /// New, empty.
    pub fn new() -> StepParser {
        StepParser::default()
    }

    /// Takes one line of srun's labelled stdout.
    pub fn feed_line(&mut self, line: &str) {
        let Some((task, text)) = split_label(line) else {
            return;
        };
        if self.done.contains_key(&task) {
            return;
        }
        let e = self.open.entry(task).or_default();
        if let Some(n) = text.strip_prefix(NODE_MARKER) {
            e.0 = Some(n.trim().to_string());
            return;
        }
        // srun cuts a task's output into 1024-byte chunks and labels each as its own line, so a
        // long JSON line comes back in pieces: join them without a separator (line breaks of
        // pretty-printed JSON are only whitespace between tokens, so nothing is lost).
        e.1.push_str(text);
        // Try to parse only when the text could be a complete object.
        if let (Some(node), true) = (&e.0, e.1.trim_end().ends_with('}')) {
            if let Ok(r) = parse_report(node, &e.1) {
                self.open.remove(&task);
                self.done.insert(task, r);
            }
        }
    }

    /// Reports complete so far.
    pub fn reports(&self) -> usize {
        self.done.len()
    }

    /// Ends the step: complete reports, and for every other task with a marker what it printed
    /// instead (its first labelled stderr line helps: `error: unrecognized subcommand`).
    pub fn finish(self, stderr: &str) -> Vec<TaskOutput> {
        let mut errs: BTreeMap<usize, String> = BTreeMap::new();
        for line in stderr.lines() {
            if let Some((task, text)) = split_label(line) {
                errs.entry(task).or_insert_with(|| text.trim().to_string());
            }
        }
        let mut out: BTreeMap<usize, TaskOutput> = self
            .done
            .into_iter()
            .map(|(t, r)| (t, TaskOutput::Report(r)))
            .collect();
        for (task, (node, body)) in self.open {
            let Some(node) = node else { continue };
            let e = match parse_report(&node, &body) {
                Ok(r) => {
                    out.insert(task, TaskOutput::Report(r));
                    continue;
                }
                Err(e) => e,
            };
            let first = Some(body.as_str()).filter(|b| !b.trim().is_empty());
            let detail = match (first, errs.get(&task)) {
                (_, Some(err)) => format!("{e}; its stderr: {err}"),
                (Some(l), None) => format!("{e}; it printed: {}", clip(l, 120)),
                (None, None) => format!("{e}; it printed nothing"),
            };
            out.insert(task, TaskOutput::Unreadable { node, detail });
        }
        out.into_values().collect()
    }
}

/// Parses a whole step's labelled stdout (and stderr, for diagnostics) at once.
pub fn parse_step_output(stdout: &str, stderr: &str) -> Vec<TaskOutput> {
    let mut p = StepParser::new();
    for line in stdout.lines() {
        p.feed_line(line);
    }
    p.finish(stderr)
}

/// Cuts a string to `n` characters.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"{"schema":1,"node":"lgn1","launchguard_version":"0.1.0","status":"ok","exit_code":0,"duration_ms":4.2,"checks":[{"id":"node.munge.key_mode","status":"ok","message":"","duration_ms":0.1}],"facts":{"munge_key_digest":"sha256:aa","slurm_conf_digest":"sha256:bb","plugstack_digest":"sha256:cc","enroot_conf_digest":"absent","nccl_env_digest":"absent","slurm_version":"22.05.8","launchguard_version":"0.1.0"}}"#;

    #[test]
    fn labels_are_split_with_padding() {
        assert_eq!(split_label(" 3: {\"a\":1}"), Some((3, "{\"a\":1}")));
        assert_eq!(split_label("12: x"), Some((12, "x")));
        assert_eq!(split_label("srun: error: x"), None);
    }

    #[test]
    fn interleaved_tasks_are_attributed_by_their_marker() {
        let bad = OK
            .replace("\"lgn1\"", "\"lgn2\"")
            .replace(
                r#""status":"ok","exit_code":0"#,
                r#""status":"critical","exit_code":2"#,
            )
            .replace(
                r#""status":"ok","message":"""#,
                r#""status":"critical","message":"launchguard: node.munge.key_mode: bad""#,
            );
        let stdout = format!("1: @lg-node lgn2\n0: @lg-node lgn1\n1: {bad}\n0: {OK}\n");
        let out = parse_step_output(&stdout, "");
        assert_eq!(out.len(), 2);
        let TaskOutput::Report(a) = &out[0] else {
            panic!("{out:?}")
        };
        let TaskOutput::Report(b) = &out[1] else {
            panic!("{out:?}")
        };
        assert_eq!((a.node.as_str(), a.status), ("lgn1", Severity::Ok));
        assert_eq!((b.node.as_str(), b.status), ("lgn2", Severity::Critical));
        assert_eq!(b.failures[0].id, "node.munge.key_mode");
        assert_eq!(a.facts["munge_key_digest"], "sha256:aa");
        assert_eq!(a.checks, 1);
    }

    #[test]
    fn pretty_printed_json_is_joined_per_task() {
        let pretty =
            serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(OK).unwrap())
                .unwrap();
        let mut stdout = String::from("0: @lg-node lgn1\n");
        for l in pretty.lines() {
            stdout.push_str(&format!("0: {l}\n"));
        }
        let out = parse_step_output(&stdout, "");
        assert!(
            matches!(&out[0], TaskOutput::Report(r) if r.node == "lgn1"),
            "{out:?}"
        );
    }

    #[test]
    fn a_long_line_cut_into_srun_chunks_is_joined() {
        let mut stdout = String::from("0: @lg-node lgn1\n");
        for chunk in OK.as_bytes().chunks(100) {
            stdout.push_str(&format!("0: {}\n", std::str::from_utf8(chunk).unwrap()));
        }
        let out = parse_step_output(&stdout, "");
        assert!(
            matches!(&out[0], TaskOutput::Report(r) if r.facts["slurm_version"] == "22.05.8"),
            "{out:?}"
        );
    }

    #[test]
    fn a_report_is_parsed_as_soon_as_its_last_chunk_arrives() {
        let mut p = StepParser::new();
        p.feed_line("0: @lg-node lgn1");
        let (a, b) = OK.split_at(OK.len() / 2);
        p.feed_line(&format!("0: {a}"));
        assert_eq!(p.reports(), 0);
        p.feed_line(&format!("0: {b}"));
        assert_eq!(p.reports(), 1);
        // Later lines of a finished task (srun's own notes) do not undo it.
        p.feed_line("0: trailing");
        assert!(matches!(&p.finish("")[..], [TaskOutput::Report(r)] if r.node == "lgn1"));
    }

    #[test]
    fn a_task_without_json_is_unreadable_with_its_stderr() {
        let out = parse_step_output(
            "0: @lg-node lgn3\n",
            "0: error: unrecognized subcommand 'check'\n",
        );
        assert_eq!(
            out,
            vec![TaskOutput::Unreadable {
                node: "lgn3".into(),
                detail: "not the check's JSON (EOF while parsing a value at line 1 column 0); its stderr: error: unrecognized subcommand 'check'".into()
            }]
        );
    }

    #[test]
    fn the_check_hostname_is_kept_when_it_differs_from_slurms_name() {
        let r = parse_report("lgn9", OK).unwrap();
        assert_eq!(r.reported_name.as_deref(), Some("lgn1"));
    }
}

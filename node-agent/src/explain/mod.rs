//! `launchguard explain FILE|-`: reads a failed job's output (slurm-JOBID.out, a slurmd.log, a pasted
//! terminal) and explains every line it knows: finding ID, what happened, why, and the fix, one line
//! each in the project's finding shape (`launchguard: <id>: <what>; <why>; <fix>`).
//!
//! The knowledge is data: `rules.toml` next to this file and the tables under `rules/` (embedded at
//! build time, in that order), one rule per
//! symptom with a regular expression, the texts, the public document it follows and example lines
//! that the unit tests run. The first rule that matches a line explains it; unknown lines are
//! ignored. Repeated symptoms (the same finding from many tasks or nodes) are reported once with a
//! count. A rule's [`Role`] orders the report: the lines that name a cause lead, then hints, then
//! relays (lines that only pass on an earlier failure), so a program that prints its summary
//! before the log that says why (Pyxis before enroot's) does not lead with the summary.
//!
//! NCCL and aws-ofi-nccl lines have one judge: every line also goes to `launchguard nccl`'s log
//! scanner, and when the input holds NCCL output, the findings of `launchguard nccl check`'s model
//! ([`launchguard_nccl::verdict::check`]) are added with the same IDs and severities (NO-GO is
//! critical here; its informational notes, such as a one-node run, are `info` and leave the status
//! OK). The context that decides them (nodes and ranks, the variables NCCL logged as set, the
//! application's own NCCL error lines) is read from the same input. The rule table has no NCCL rules.
//!
//! Bounds: lines longer than [`MAX_LINE`] bytes are matched on their first [`MAX_LINE`] bytes and
//! the rest is skipped; at most [`MAX_DISTINCT`] distinct findings are kept (more are counted);
//! so memory stays flat whatever the input's size. A FILE must be a regular file (a FIFO or a
//! device could never end); `-` reads standard input until it closes.
//!
//! Exit codes, as `launchguard check`: 0 nothing known found, 1 warnings only, 2 a critical
//! finding, 3 the input or the rule table could not be read.

use crate::gather::util;
use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

/// The built-in rule table (TOML, see `rules.toml`'s header for the fields): `rules.toml`, then
/// the per-source tables under `rules/` in this order (the first matching rule wins, so a later
/// table only sees lines no earlier rule explains).
pub const RULES_TOML: &str = concat!(
    include_str!("rules.toml"),
    "\n",
    include_str!("rules/pyxis.toml"),
    "\n",
    include_str!("rules/enroot.toml"),
    "\n",
    include_str!("rules/slurm.toml"),
    "\n",
    include_str!("rules/munge.toml"),
);

/// Bytes of one line that are matched; the rest of a longer line is skipped.
pub const MAX_LINE: usize = 16 * 1024;

/// Distinct findings kept for one input; more are only counted.
pub const MAX_DISTINCT: usize = 256;

/// Longest value of a regex group echoed into a finding (chars).
const MAX_CAPTURE: usize = 100;

/// Longest example line kept per finding (chars).
const MAX_EXAMPLE: usize = 240;

// Arguments of `launchguard explain`.
// (Plain comment on purpose: see the deferred-arguments note at `Command`, node-agent/src/lib.rs.)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The job output to explain: slurm-JOBID.out, a slurmd log, a saved terminal; `-` reads
    /// standard input (paste, then Ctrl-D).
    #[arg(value_name = "FILE|-", required_unless_present = "list")]
    pub input: Option<PathBuf>,
    /// Print one JSON object (schema 1: input, status, exit_code, lines, findings[]) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Under each finding, show the first line it came from and the document it follows.
    #[arg(long, short)]
    pub verbose: bool,
    /// List the symptoms launchguard knows (ID, severity, what, document) and exit.
    #[arg(long)]
    pub list: bool,
}

/// How bad a symptom is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Context worth a line (an NCCL note such as a one-node run); never changes the status.
    Info,
    /// The job ran, slower or partly (exit 1).
    Warning,
    /// The job or step failed (exit 2).
    Critical,
}

/// One rule as written in `rules.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Finding ID, e.g. `launch.export_all`.
    pub id: String,
    /// Severity of the finding.
    pub severity: Severity,
    /// Regular expression (Rust `regex` syntax), matched anywhere in a line.
    pub regex: String,
    /// What happened; `{group}` / `{?group}` placeholders name groups of `regex`.
    pub what: String,
    /// Why it happened or matters.
    pub why: String,
    /// The fix.
    pub fix: String,
    /// The public document the rule follows (https URL).
    pub doc: String,
    /// Lines this rule must explain (tests).
    #[serde(default)]
    pub examples: Vec<String>,
    /// Lines this rule must not explain (tests).
    #[serde(default)]
    pub counter: Vec<String>,
    /// What the line is to the cause: [`Role::Cause`] (the default), a hint or a relay; a report
    /// leads with causes, then hints, then relays.
    #[serde(default)]
    pub role: Role,
}

/// What a matched line says about the cause, which orders the findings of one input: a line that
/// names a cause leads, a hint (a likely cause that its program prints after any failure, e.g.
/// Pyxis's `--no-container-entrypoint` advice) follows the causes, and a relay (a line that only
/// reports that an earlier step failed and points at the line that says why, e.g. Pyxis's
/// `child N failed with error code` before the enroot log it prints) comes last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The line names a cause (the default).
    #[default]
    Cause,
    /// The line names a likely cause that another line's cause overrides.
    Hint,
    /// The line names no cause of its own: it relays another line's failure.
    Relay,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    rule: Vec<Rule>,
}

/// A validated, compiled rule table.
#[derive(Debug)]
pub struct Rules {
    /// The rules in table order (the first match wins).
    pub rules: Vec<Rule>,
    set: RegexSet,
    res: Vec<Regex>,
}

/// The placeholders of a template: `(name, optional)` for `{name}` and `{?name}`.
fn placeholders(t: &str) -> Vec<(String, bool)> {
    let mut out = vec![];
    let mut rest = t;
    while let Some(i) = rest.find('{') {
        let Some(j) = rest[i..].find('}') else { break };
        let inner = &rest[i + 1..i + j];
        let (name, opt) = match inner.strip_prefix('?') {
            Some(n) => (n, true),
            None => (inner, false),
        };
        out.push((name.to_string(), opt));
        rest = &rest[i + j + 1..];
    }
    out
}

fn valid_id(id: &str) -> bool {
    let mut parts = id.split('.');
    let fam_ok = parts
        .next()
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()));
    let rest: Vec<&str> = parts.collect();
    fam_ok
        && !rest.is_empty()
        && rest.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

impl Rules {
    /// Parses and validates a rule table. Errors name the rule (`rule 3 (launch.export_all): …`):
    /// a bad ID, an empty or multi-line text, a `;` in what/why/fix (the finding separator), a
    /// regex that does not compile, a placeholder naming no group, a doc that is not https, a rule
    /// without examples.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let file: RuleFile = toml::from_str(text).map_err(|e| e.to_string())?;
        if file.rule.is_empty() {
            return Err("no [[rule]] in the table".into());
        }
        let mut res = vec![];
        for (i, r) in file.rule.iter().enumerate() {
            let at = format!("rule {} ({})", i + 1, r.id);
            if !valid_id(&r.id) {
                return Err(format!(
                    "{at}: the id must look like family.name (lower case)"
                ));
            }
            for (name, t) in [("what", &r.what), ("why", &r.why), ("fix", &r.fix)] {
                if t.trim().is_empty() || t.contains(['\n', '\r', ';']) {
                    return Err(format!(
                        "{at}: {name} must be one non-empty line without ';'"
                    ));
                }
            }
            if !r.doc.starts_with("https://") {
                return Err(format!("{at}: doc must be an https URL"));
            }
            let re = Regex::new(&r.regex).map_err(|e| format!("{at}: regex: {e}"))?;
            let groups: Vec<&str> = re.capture_names().flatten().collect();
            for (p, _) in placeholders(&r.what) {
                if !groups.contains(&p.as_str()) {
                    return Err(format!(
                        "{at}: what names {{{p}}}, not a group of the regex"
                    ));
                }
            }
            if r.examples.is_empty() {
                return Err(format!("{at}: give at least one example line"));
            }
            res.push(re);
        }
        let set =
            RegexSet::new(file.rule.iter().map(|r| r.regex.as_str())).map_err(|e| e.to_string())?;
        Ok(Rules {
            rules: file.rule,
            set,
            res,
        })
    }

    /// The built-in table, parsed once (`Err`: the embedded table is broken, which the unit tests
    /// rule out).
    pub fn builtin() -> Result<&'static Rules, String> {
        static RULES: OnceLock<Result<Rules, String>> = OnceLock::new();
        RULES
            .get_or_init(|| Rules::parse(RULES_TOML))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Explains one line: the index of the first matching rule and its `what` with the groups
    /// filled in (clipped, `;` escaped).
    pub fn explain_line(&self, line: &str) -> Option<(usize, String)> {
        let i = self.set.matches(line).into_iter().next()?;
        let caps = self.res[i].captures(line)?;
        let r = &self.rules[i];
        let mut out = String::with_capacity(r.what.len() + 32);
        let mut rest = r.what.as_str();
        while let Some(s) = rest.find('{') {
            let Some(e) = rest[s..].find('}') else { break };
            out.push_str(&rest[..s]);
            let inner = &rest[s + 1..s + e];
            let (name, opt) = match inner.strip_prefix('?') {
                Some(n) => (n, true),
                None => (inner, false),
            };
            if let Some(m) = caps.name(name) {
                let v: String = m
                    .as_str()
                    .trim()
                    .chars()
                    .map(|c| if c.is_control() { '?' } else { c })
                    .collect();
                if opt {
                    out.push_str(": ");
                }
                out.push_str(&launchguard_core::finding::clip(&v, MAX_CAPTURE));
            }
            rest = &rest[s + e + 1..];
        }
        out.push_str(rest);
        Some((i, out))
    }
}

/// One explained symptom.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// Finding ID.
    pub id: String,
    /// Severity (the worst of the lines merged into it).
    pub severity: Severity,
    /// What happened (groups filled in).
    pub what: String,
    /// Why.
    pub why: String,
    /// The fix.
    pub fix: String,
    /// The document the rule follows.
    pub doc: String,
    /// 1-based line number of the first line with this finding; 0 for a finding about the input as
    /// a whole (the NCCL model's).
    pub first_line: u64,
    /// How many lines gave this finding.
    pub count: u64,
    /// The first such line (clipped).
    pub example: String,
    /// The rule's role (orders the report, not shown).
    #[serde(skip)]
    pub role: Role,
}

impl Found {
    /// The finding as one line: `launchguard: <id>: <what> (line N, K times); <why>; <fix>`.
    pub fn line(&self) -> String {
        let times = if self.count > 1 {
            format!(", {} times", self.count)
        } else {
            String::new()
        };
        let what = if self.first_line == 0 {
            self.what.clone()
        } else {
            format!("{} (line {}{times})", self.what, self.first_line)
        };
        launchguard_core::finding::render_line(&self.id, &what, &self.why, &self.fix)
    }
}

/// Feeds lines, keeps the findings: bounded by [`MAX_DISTINCT`].
pub struct Explainer<'r> {
    rules: &'r Rules,
    found: Vec<Found>,
    index: HashMap<(String, String), usize>,
    lines: u64,
    long_lines: u64,
    dropped: u64,
    nccl: launchguard_nccl::parse::Scanner,
}

impl<'r> Explainer<'r> {
    /// An explainer over a rule table.
    pub fn new(rules: &'r Rules) -> Explainer<'r> {
        Explainer {
            rules,
            found: vec![],
            index: HashMap::new(),
            lines: 0,
            long_lines: 0,
            dropped: 0,
            nccl: launchguard_nccl::parse::Scanner::new(),
        }
    }

    /// Reads one line (without its line end; invalid UTF-8 is replaced). `cut`: the line was
    /// longer than [`MAX_LINE`] and this is its head.
    pub fn line(&mut self, raw: &[u8], cut: bool) {
        self.lines += 1;
        if cut {
            self.long_lines += 1;
        }
        self.nccl.feed(raw);
        self.nccl.feed(b"\n");
        let text = String::from_utf8_lossy(raw);
        let Some((i, what)) = self.rules.explain_line(&text) else {
            return;
        };
        let r = &self.rules.rules[i];
        let key = (r.id.clone(), what);
        if let Some(&k) = self.index.get(&key) {
            let f = &mut self.found[k];
            f.count += 1;
            f.severity = f.severity.max(r.severity);
            return;
        }
        if self.found.len() >= MAX_DISTINCT {
            self.dropped += 1;
            return;
        }
        // The job's own line: its escapes and bidi overrides are shown, never obeyed.
        let example = launchguard_core::text::printable(text.trim(), MAX_EXAMPLE);
        self.found.push(Found {
            id: r.id.clone(),
            severity: r.severity,
            what: key.1.clone(),
            why: r.why.clone(),
            fix: r.fix.clone(),
            doc: r.doc.clone(),
            first_line: self.lines,
            count: 1,
            example,
            role: r.role,
        });
        self.index.insert(key, self.found.len() - 1);
    }

    /// Ends the input: the report (findings in the order of their first line, then the NCCL
    /// model's findings about the input as a whole, then the findings of hints and of relays:
    /// the causes lead whatever order the program printed them in).
    pub fn finish(mut self, input: &str, bytes: u64) -> Report {
        if let Ok(p) = self.nccl.finish() {
            let label = if input == "-" {
                "standard input"
            } else {
                input
            };
            let rep = launchguard_nccl::verdict::check(label, &p, &Default::default());
            for f in rep.findings {
                self.found.push(nccl_found(f));
            }
        }
        // Stable: each role keeps the order of first lines.
        self.found.sort_by_key(|f| f.role);
        let worst = self
            .found
            .iter()
            .map(|f| f.severity)
            .filter(|s| *s != Severity::Info)
            .max();
        let (status, exit_code) = match worst {
            None | Some(Severity::Info) => ("ok", 0),
            Some(Severity::Warning) => ("warning", 1),
            Some(Severity::Critical) => ("critical", 2),
        };
        Report {
            schema: 1,
            input: input.to_string(),
            status: status.into(),
            exit_code,
            lines: self.lines,
            bytes,
            long_lines: self.long_lines,
            more_findings: self.dropped,
            findings: self.found,
        }
    }
}

/// An NCCL model finding as explain shows it: NO-GO is critical, the rest keep their level.
fn nccl_found(f: launchguard_nccl::model::Finding) -> Found {
    use launchguard_nccl::model::Severity as N;
    let doc = if f.id.starts_with("nccl.env.") || f.id == "nccl.socket_ifname_nomatch" {
        "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
    } else {
        "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
    };
    Found {
        id: f.id.to_string(),
        severity: match f.severity {
            N::Info => Severity::Info,
            N::Warning => Severity::Warning,
            N::NoGo => Severity::Critical,
        },
        what: f.what,
        why: f.why,
        fix: f.fix,
        doc: doc.into(),
        first_line: 0,
        count: 1,
        example: String::new(),
        role: Role::Cause,
    }
}

/// What `launchguard explain` found in one input.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// JSON schema version (1).
    pub schema: u32,
    /// The input as named on the command line (`-` for standard input).
    pub input: String,
    /// `ok` (nothing known), `warning`, `critical`.
    pub status: String,
    /// The exit code: 0, 1, 2.
    pub exit_code: u8,
    /// Lines read.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines longer than [`MAX_LINE`] (only their head was matched).
    pub long_lines: u64,
    /// Lines with a known symptom beyond the first [`MAX_DISTINCT`] distinct findings.
    pub more_findings: u64,
    /// The findings: the causes in the order of their first line, then hints, then relays.
    pub findings: Vec<Found>,
}

/// Explains everything a reader yields (line by line, bounded).
pub fn explain_reader<R: BufRead>(rules: &Rules, r: R, input: &str) -> std::io::Result<Report> {
    let mut ex = Explainer::new(rules);
    let bytes = util::for_each_line(r, MAX_LINE, |l, cut| ex.line(l, cut))?;
    Ok(ex.finish(input, bytes))
}

/// Explains a byte buffer (tests, fuzzing).
pub fn explain_bytes(rules: &Rules, data: &[u8]) -> Report {
    // Reading from memory cannot fail.
    explain_reader(rules, data, "-").unwrap_or_else(|_| Explainer::new(rules).finish("-", 0))
}

fn print_text(rep: &Report, verbose: bool) {
    for f in &rep.findings {
        println!("{}", f.line());
        if verbose && f.first_line > 0 {
            println!("    line {}: {}", f.first_line, f.example);
        }
        if verbose {
            println!("    see {}", f.doc);
        }
    }
    let count = |s: Severity| rep.findings.iter().filter(|f| f.severity == s).count();
    // `-` is standard input; "1 line", "2 lines".
    let shown = launchguard_core::text::printable(&rep.input, 256);
    let input = if rep.input == "-" {
        "standard input"
    } else {
        shown.as_str()
    };
    let lines = format!(
        "{} line{}",
        rep.lines,
        if rep.lines == 1 { "" } else { "s" }
    );
    let mut notes = String::new();
    if rep.more_findings > 0 {
        notes.push_str(&format!(
            "; {} more lines with known symptoms not shown (over {MAX_DISTINCT} distinct findings)",
            rep.more_findings
        ));
    }
    if rep.long_lines > 0 {
        notes.push_str(&format!(
            "; {} lines over {} KiB were read only in part",
            rep.long_lines,
            MAX_LINE / 1024
        ));
    }
    if rep.findings.is_empty() {
        let what = if rep.bytes == 0 {
            "it is empty".to_string()
        } else {
            format!("no known symptom in {lines}")
        };
        println!(
            "{input}: OK — {what} (launchguard explain --list shows the symptoms it knows){notes}"
        );
    } else if rep.exit_code == 0 {
        let n = rep.findings.len();
        println!(
            "{input}: OK — nothing wrong found, {n} note{} in {lines}{notes}",
            if n == 1 { "" } else { "s" },
        );
    } else {
        let n = rep.findings.len();
        let info = count(Severity::Info);
        println!(
            "{input}: {} — {n} known symptom{} ({} critical, {} warning{}) in {lines}{notes}",
            rep.status.to_uppercase(),
            if n == 1 { "" } else { "s" },
            count(Severity::Critical),
            count(Severity::Warning),
            if info > 0 {
                format!(", {info} info")
            } else {
                String::new()
            },
        );
    }
}

fn list(rules: &Rules, json: bool) -> ExitCode {
    if json {
        let v: Vec<serde_json::Value> = rules
            .rules
            .iter()
            .map(|r| serde_json::json!({"id": r.id, "severity": r.severity, "what": r.what, "why": r.why, "fix": r.fix, "doc": r.doc}))
            .collect();
        println!("{}", serde_json::Value::Array(v));
        return ExitCode::SUCCESS;
    }
    for r in &rules.rules {
        let sev = match r.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        };
        println!("{:<28} {:<8} {} ({})", r.id, sev, r.what, r.doc);
    }
    println!("{:<28} {:<8} NCCL and aws-ofi-nccl lines, and the application's NCCL errors: judged by the model of `launchguard nccl check` (same IDs and severities)", "nccl.*", "");
    ExitCode::SUCCESS
}

/// `launchguard explain`.
pub fn run(a: &Args) -> ExitCode {
    let rules = match Rules::builtin() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("launchguard: explain: the built-in rule table is broken: {e}");
            return ExitCode::from(3);
        }
    };
    if a.list {
        return list(rules, a.json);
    }
    let Some(input) = &a.input else {
        eprintln!("launchguard: explain: name a FILE or - for standard input");
        return ExitCode::from(3);
    };
    let name = launchguard_core::host::files::shown_path(input);
    let res = if name == "-" {
        use std::io::IsTerminal;
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            eprintln!("launchguard: explain: reading the terminal: paste the job's output, then press Ctrl-D");
        }
        explain_reader(rules, stdin.lock(), &name)
    } else {
        match util::open_regular(input, true) {
            Ok(f) => explain_reader(rules, std::io::BufReader::with_capacity(64 << 10, f), &name),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                eprintln!("launchguard: explain: {name}: {e} (a pipe or device may never end: use `... | launchguard explain -`)");
                return ExitCode::from(3);
            }
            Err(e) => Err(e),
        }
    };
    let rep = match res {
        Ok(r) => r,
        Err(e) => {
            eprintln!("launchguard: explain: {name}: {e}");
            return ExitCode::from(3);
        }
    };
    if a.json {
        println!("{}", serde_json::to_string(&rep).unwrap_or_default());
    } else {
        print_text(&rep, a.verbose);
    }
    ExitCode::from(rep.exit_code)
}

#[cfg(test)]
mod tests;

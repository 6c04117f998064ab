//! slurm.conf(5): `Key=Value` words, case-insensitive keys, `#` comments, `\` line continuations,
//! `Include` lines, `NodeName=` lines whose names are hostlist expressions (`gpu-[01-16]`) and
//! `NodeName=DEFAULT` lines that set defaults for the node lines after them.

use crate::hostlist;

/// One `NodeName=` line (DEFAULT lines are folded into the lines after them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLine {
    /// The hostlist expression, e.g. `gpu-[01-16]`.
    pub names: String,
    /// Attributes (keys lower-cased), defaults first, then the line's own; look up with [`NodeLine::get`].
    pub attrs: Vec<(String, String)>,
}

impl NodeLine {
    /// This node's entry of a per-node hostlist attribute (`NodeAddr=10.0.0.[1-16]` for
    /// `NodeName=gpu-[01-16]`: the address at the node's index), or the whole value when it does not
    /// expand to one entry per node.
    pub fn get_for(&self, key: &str, node: &str) -> Option<String> {
        let v = self.get(key)?;
        let names = hostlist::expand(&self.names)?;
        let i = names.iter().position(|n| n == node)?;
        match hostlist::expand(v) {
            Some(vals) if vals.len() == names.len() => vals.get(i).cloned(),
            _ => Some(v.to_string()),
        }
    }

    /// The last value of `key` (case-insensitive).
    pub fn get(&self, key: &str) -> Option<&str> {
        let key = key.to_ascii_lowercase();
        self.attrs
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed slurm.conf (with its includes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmConf {
    /// Global `Key=Value` parameters (keys lower-cased), in file order.
    pub params: Vec<(String, String)>,
    /// Node lines in file order.
    pub nodes: Vec<NodeLine>,
    /// Problems, each `file:line: message`; parsing goes on after each.
    pub problems: Vec<String>,
}

impl SlurmConf {
    /// The last value of a global parameter (case-insensitive).
    pub fn get(&self, key: &str) -> Option<&str> {
        let key = key.to_ascii_lowercase();
        self.params
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The node line that defines `node` (the first, as slurmctld uses it).
    pub fn node(&self, node: &str) -> Option<&NodeLine> {
        self.nodes
            .iter()
            .find(|l| hostlist::contains(&l.names, node))
    }

    /// The NodeName of the node whose name or `NodeHostname` is `host` (slurmd matches its hostname
    /// against both), if any.
    pub fn node_name_for_host(&self, host: &str) -> Option<String> {
        for l in &self.nodes {
            let Some(names) = hostlist::expand(&l.names) else {
                continue;
            };
            if names.iter().any(|n| n == host) {
                return Some(host.to_string());
            }
            if let Some(hosts) = l.get("NodeHostname").and_then(hostlist::expand) {
                if let Some(i) = hosts.iter().position(|h| h == host) {
                    return names.get(i.min(names.len().saturating_sub(1))).cloned();
                }
            }
        }
        None
    }

    /// How many nodes the node lines define (`None` if an expression cannot be expanded).
    pub fn node_count(&self) -> Option<usize> {
        let mut n = 0;
        for l in &self.nodes {
            n += hostlist::expand(&l.names)?.len();
        }
        Some(n)
    }
}

/// Loads an `Include` target: its `(file, text)` pairs (several for a glob), or an error message.
pub type IncludeLoader<'a> = dyn FnMut(&str) -> Result<Vec<(String, String)>, String> + 'a;

/// Most nested includes followed (slurm.conf's own limit is similar; this stops include loops).
pub const MAX_INCLUDE_DEPTH: usize = 8;
/// Most files included in total (a file that includes itself several times would otherwise grow
/// exponentially before the depth limit).
pub const MAX_INCLUDES: usize = 64;

/// Splits a logical line into words, keeping `"…"` quoted values whole (quotes removed).
fn words(line: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// Removes a `#` comment that is not inside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Parses `text` (from `file`); `include` loads an `Include` target (already expanded relative to
/// slurm.conf's directory by the caller, globs included) and returns its `(file, text)` pairs or an
/// error message. Never fails: problems are collected in [`SlurmConf::problems`].
pub fn parse(text: &str, file: &str, include: &mut IncludeLoader<'_>) -> SlurmConf {
    let mut conf = SlurmConf::default();
    let mut defaults: Vec<(String, String)> = vec![];
    let mut budget = MAX_INCLUDES;
    parse_into(
        &mut conf,
        &mut defaults,
        text,
        file,
        include,
        0,
        &mut budget,
    );
    conf
}

fn parse_into(
    conf: &mut SlurmConf,
    defaults: &mut Vec<(String, String)>,
    text: &str,
    file: &str,
    include: &mut IncludeLoader<'_>,
    depth: usize,
    budget: &mut usize,
) {
    let mut logical = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        if logical.is_empty() {
            start = i + 1;
        }
        let line = strip_comment(raw);
        if let Some(cont) = line.trim_end().strip_suffix('\\') {
            logical.push_str(cont);
            logical.push(' ');
            continue;
        }
        logical.push_str(line);
        let l = std::mem::take(&mut logical);
        let w = words(&l);
        let Some(first) = w.first() else { continue };
        let at = format!("{file}:{start}");
        if first.eq_ignore_ascii_case("include") {
            let Some(target) = w.get(1) else {
                conf.problems.push(format!("{at}: Include without a file"));
                continue;
            };
            if depth >= MAX_INCLUDE_DEPTH {
                conf.problems.push(format!(
                    "{at}: Include nested more than {MAX_INCLUDE_DEPTH} deep"
                ));
                continue;
            }
            if *budget == 0 {
                conf.problems.push(format!(
                    "{at}: more than {MAX_INCLUDES} files included; the rest ignored"
                ));
                continue;
            }
            match include(target) {
                Ok(files) => {
                    for (f, t) in files {
                        if *budget == 0 {
                            break;
                        }
                        *budget -= 1;
                        parse_into(conf, defaults, &t, &f, include, depth + 1, budget);
                    }
                }
                Err(e) => conf.problems.push(format!("{at}: Include {target}: {e}")),
            }
            continue;
        }
        let mut pairs = vec![];
        for word in &w {
            match word.split_once('=') {
                Some((k, v)) if !k.is_empty() => {
                    pairs.push((k.to_ascii_lowercase(), v.to_string()))
                }
                _ => conf.problems.push(format!(
                    "{at}: '{}' is not Key=Value",
                    crate::finding::clip(word, 40)
                )),
            }
        }
        let Some((k0, v0)) = pairs.first().cloned() else {
            continue;
        };
        if k0 == "nodename" {
            let rest = pairs[1..].to_vec();
            if v0.eq_ignore_ascii_case("default") {
                defaults.extend(rest);
            } else if hostlist::expand(&v0).is_none() {
                conf.problems.push(format!(
                    "{at}: NodeName={} is not a valid hostlist",
                    crate::finding::clip(&v0, 40)
                ));
            } else {
                let mut attrs = defaults.clone();
                attrs.extend(rest);
                conf.nodes.push(NodeLine { names: v0, attrs });
            }
        } else if matches!(
            k0.as_str(),
            "partitionname" | "nodeset" | "frontendname" | "downnodes" | "switchname"
        ) {
            // Other multi-key records: not needed by the node checks.
        } else {
            conf.params.extend(pairs);
        }
    }
    if !logical.trim().is_empty() {
        conf.problems.push(format!(
            "{file}: the last line ends with a '\\' continuation"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_include(_: &str) -> Result<Vec<(String, String)>, String> {
        Err("not here".into())
    }

    #[test]
    fn nodes_defaults_hostlists_and_params() {
        let text = "ClusterName=c # comment\nNodeName=DEFAULT CPUs=8 RealMemory=1000\n\
                    NodeName=gpu-[01-16] Gres=gpu:8 \\\n  RealMemory=2000\nNodeName=cpu1 NodeAddr=10.0.0.1\n\
                    PartitionName=p Nodes=ALL\nslurmctldport=7000\n";
        let c = parse(text, "slurm.conf", &mut no_include);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.get("SlurmctldPort"), Some("7000"));
        assert_eq!(c.get("ClusterName"), Some("c"));
        let n = c.node("gpu-07").unwrap();
        assert_eq!(n.get("cpus"), Some("8"));
        assert_eq!(n.get("RealMemory"), Some("2000"));
        assert_eq!(n.get("gres"), Some("gpu:8"));
        assert_eq!(c.node("cpu1").unwrap().get("NodeAddr"), Some("10.0.0.1"));
        let c2 = parse(
            "NodeName=gpu-[01-16] NodeAddr=10.0.0.[1-16] NodeHostname=h[1-16]\n",
            "s",
            &mut no_include,
        );
        assert_eq!(
            c2.node("gpu-07")
                .unwrap()
                .get_for("NodeAddr", "gpu-07")
                .as_deref(),
            Some("10.0.0.7")
        );
        assert_eq!(c2.node_name_for_host("h3").as_deref(), Some("gpu-03"));
        assert_eq!(c2.node_name_for_host("gpu-03").as_deref(), Some("gpu-03"));
        assert_eq!(c2.node_name_for_host("zz"), None);
        assert!(c.node("gpu-17").is_none());
        assert_eq!(c.node_count(), Some(17));
    }

    #[test]
    fn includes_are_followed_and_failures_reported_with_line() {
        let mut inc = |t: &str| -> Result<Vec<(String, String)>, String> {
            if t == "nodes.conf" {
                Ok(vec![(
                    "/etc/slurm/nodes.conf".into(),
                    "NodeName=n1 CPUs=4\n".into(),
                )])
            } else {
                Err("No such file or directory".into())
            }
        };
        let c = parse(
            "Include nodes.conf\n\ninclude missing.conf\n",
            "slurm.conf",
            &mut inc,
        );
        assert_eq!(c.node("n1").unwrap().get("CPUs"), Some("4"));
        assert_eq!(
            c.problems,
            vec!["slurm.conf:3: Include missing.conf: No such file or directory"]
        );
    }

    #[test]
    fn include_loops_stop() {
        let mut inc = |_: &str| -> Result<Vec<(String, String)>, String> {
            Ok(vec![("loop.conf".into(), "Include loop.conf\n".into())])
        };
        let c = parse("Include loop.conf\n", "slurm.conf", &mut inc);
        assert_eq!(c.problems.len(), 1);
        // Ten includes per file would be 10^8 files at depth 8 without the total budget.
        let ten = "Include x\n".repeat(10);
        let mut calls = 0;
        let mut inc = |_: &str| -> Result<Vec<(String, String)>, String> {
            calls += 1;
            Ok(vec![("x".into(), ten.clone())])
        };
        let c = parse(&ten, "slurm.conf", &mut inc);
        assert!(calls <= MAX_INCLUDES + 10, "{calls}");
        assert!(!c.problems.is_empty());
    }

    #[test]
    fn junk_is_reported_not_fatal() {
        let c = parse(
            "what\nNodeName=a[ CPUs=1\nA=\"x y\"\n",
            "f",
            &mut no_include,
        );
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
        assert_eq!(c.get("a"), Some("x y"));
    }
}

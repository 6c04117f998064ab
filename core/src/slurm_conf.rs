//! slurm.conf(5): `Key=Value` words, case-insensitive keys, `#` comments, `\` line continuations,
//! `Include` lines, `NodeName=` lines whose names are hostlist expressions (`gpu-[01-16]`) and
//! `NodeName=DEFAULT` lines that set defaults for the node lines after them.
//!
//! `Include` follows Slurm's own reader (`_parse_include_directive` in `src/common/parse_config.c`,
//! 22.05–26.05): the word `include` (any case) and whitespace, then one file name; `%c` in it is
//! `ClusterName` (lower-cased) as set by the lines read so far; the file is read in place, and a
//! file that cannot be read makes Slurm refuse the whole configuration (`fatal: Unable to process
//! configuration file`) in every daemon and client command. Slurm expands no globs here: since
//! 23.11.4 a `*` fails the include ("Slurm does not support glob parsing"), before that the name is
//! looked up literally. Where a relative name is looked up is the loader's business (it differs by
//! release, see [`crate::host::slurm_conf`]). Slurm has no depth limit and no loop check (a loop
//! recurses until it crashes); this parser stops at [`MAX_INCLUDE_DEPTH`] and names a loop.

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
    /// `Include` lines Slurm cannot follow (missing or unreadable file, a glob, a loop), each
    /// `file:line: Include NAME: why`; also in [`SlurmConf::problems`]. Any one of them makes
    /// Slurm refuse the whole configuration.
    pub include_errors: Vec<String>,
    /// Every file read, in reading order: slurm.conf first, then each included file.
    pub files: Vec<String>,
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

/// Loads an `Include` target: called with the name as written (`%c` already replaced) and the file
/// whose line names it; returns the `(path, text)` read, or why it could not be read (the
/// operating system's message, e.g. `/etc/slurm/nodes.conf: Permission denied (os error 13)`).
pub type IncludeLoader<'a> = dyn FnMut(&str, &str) -> Result<(String, String), String> + 'a;

/// Most nested includes followed (Slurm itself has no limit).
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
    conf.files.push(file.to_string());
    let mut chain = vec![file.to_string()];
    parse_into(
        &mut conf,
        &mut defaults,
        text,
        file,
        include,
        &mut chain,
        &mut budget,
    );
    conf
}

/// Records an `Include` that Slurm cannot follow.
fn include_error(conf: &mut SlurmConf, msg: String) {
    conf.problems.push(msg.clone());
    conf.include_errors.push(msg);
}

/// `%c` in an include name replaced by `ClusterName` (lower-cased), as Slurm's
/// `_parse_for_format` does; `None` when ClusterName is not set yet.
fn include_name(conf: &SlurmConf, target: &str) -> Option<String> {
    if !target.contains("%c") {
        return Some(target.to_string());
    }
    let cluster = conf.get("ClusterName")?.to_ascii_lowercase();
    Some(target.replace("%c", &cluster))
}

fn parse_into(
    conf: &mut SlurmConf,
    defaults: &mut Vec<(String, String)>,
    text: &str,
    file: &str,
    include: &mut IncludeLoader<'_>,
    chain: &mut Vec<String>,
    budget: &mut usize,
) {
    let depth = chain.len() - 1;
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
                include_error(conf, format!("{at}: Include without a file"));
                continue;
            };
            if w.len() > 2 {
                conf.problems.push(format!(
                    "{at}: words after 'Include {}' (Slurm: Parse error)",
                    crate::finding::clip(target, 80)
                ));
            }
            let Some(name) = include_name(conf, target) else {
                include_error(
                    conf,
                    format!("{at}: Include {target}: %c needs ClusterName set on an earlier line"),
                );
                continue;
            };
            if name.contains('*') {
                include_error(conf, format!(
                    "{at}: Include {name}: Slurm does not expand globs in slurm.conf (23.11.4 and later refuse '*', older releases look for a file of that literal name); list each file on its own Include line"
                ));
                continue;
            }
            if depth >= MAX_INCLUDE_DEPTH {
                include_error(
                    conf,
                    format!("{at}: Include {name}: nested more than {MAX_INCLUDE_DEPTH} deep"),
                );
                continue;
            }
            if *budget == 0 {
                include_error(
                    conf,
                    format!("{at}: Include {name}: more than {MAX_INCLUDES} files included"),
                );
                continue;
            }
            match include(&name, file) {
                Ok((f, t)) => {
                    if chain.contains(&f) {
                        include_error(conf, format!(
                            "{at}: Include {name}: {f} is already being read (an include loop: {} -> {f}); Slurm would recurse until it crashes",
                            chain.join(" -> ")
                        ));
                        continue;
                    }
                    *budget -= 1;
                    conf.files.push(f.clone());
                    chain.push(f.clone());
                    parse_into(conf, defaults, &t, &f, include, chain, budget);
                    chain.pop();
                }
                Err(e) => include_error(
                    conf,
                    format!("{at}: Include {name}: {e} (Slurm refuses the whole configuration: 'Unable to process configuration file')"),
                ),
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

    fn no_include(_: &str, _: &str) -> Result<(String, String), String> {
        Err("not here".into())
    }

    /// A loader over canned files: `name` -> (path, text), relative names beside slurm.conf.
    fn files<'a>(
        list: &'a [(&'a str, &'a str)],
    ) -> impl FnMut(&str, &str) -> Result<(String, String), String> + 'a {
        move |name, _from| {
            let path = if name.starts_with('/') {
                name.to_string()
            } else {
                format!("/etc/slurm/{name}")
            };
            list.iter()
                .find(|(p, _)| *p == path)
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .ok_or_else(|| format!("{path}: No such file or directory (os error 2)"))
        }
    }

    #[test]
    fn includes_are_followed_and_failures_reported_with_line() {
        let fs = [
            ("/etc/slurm/nodes.conf", "NodeName=n1 CPUs=4\n"),
            ("/etc/slurm/mpi.conf", "Include /etc/slurm/deep.conf\n"),
            ("/etc/slurm/deep.conf", "MpiDefault=pmix\n"),
        ];
        let c = parse(
            "Include nodes.conf\n\ninclude missing.conf\nINCLUDE mpi.conf\n",
            "/etc/slurm/slurm.conf",
            &mut files(&fs),
        );
        assert_eq!(c.node("n1").unwrap().get("CPUs"), Some("4"));
        // Nested: a value set two includes down is seen.
        assert_eq!(c.get("MpiDefault"), Some("pmix"));
        assert_eq!(c.include_errors.len(), 1, "{:?}", c.include_errors);
        assert!(
            c.include_errors[0].starts_with("/etc/slurm/slurm.conf:3: Include missing.conf: /etc/slurm/missing.conf: No such file or directory"),
            "{}",
            c.include_errors[0]
        );
        assert_eq!(c.problems, c.include_errors);
        assert_eq!(
            c.files,
            [
                "/etc/slurm/slurm.conf",
                "/etc/slurm/nodes.conf",
                "/etc/slurm/mpi.conf",
                "/etc/slurm/deep.conf"
            ]
        );
        // `Include=x` is a key, not an include (Slurm wants whitespace after the word).
        let c = parse("Include=x\n", "s", &mut no_include);
        assert!(c.include_errors.is_empty());
    }

    #[test]
    fn globs_are_refused_as_slurm_does() {
        let fs = [("/etc/slurm/a.conf", "MpiDefault=pmix\n")];
        let c = parse("Include *.conf\n", "/etc/slurm/slurm.conf", &mut files(&fs));
        assert_eq!(c.get("MpiDefault"), None);
        assert_eq!(c.include_errors.len(), 1);
        assert!(
            c.include_errors[0].contains("Slurm does not expand globs"),
            "{}",
            c.include_errors[0]
        );
    }

    #[test]
    fn percent_c_is_the_cluster_name_set_so_far() {
        let fs = [("/etc/slurm/gpu.conf", "MpiDefault=pmix\n")];
        let c = parse(
            "ClusterName=GPU\nInclude %c.conf\n",
            "/etc/slurm/slurm.conf",
            &mut files(&fs),
        );
        assert_eq!(c.get("MpiDefault"), Some("pmix"), "{:?}", c.problems);
        let c = parse(
            "Include %c.conf\nClusterName=gpu\n",
            "/etc/slurm/slurm.conf",
            &mut files(&fs),
        );
        assert!(
            c.include_errors[0].contains("%c needs ClusterName"),
            "{:?}",
            c.include_errors
        );
    }

    #[test]
    fn include_loops_stop_and_are_named() {
        let fs = [
            ("/etc/slurm/a.conf", "Include b.conf\n"),
            ("/etc/slurm/b.conf", "Include a.conf\n"),
        ];
        let c = parse("Include a.conf\n", "/etc/slurm/slurm.conf", &mut files(&fs));
        assert_eq!(c.include_errors.len(), 1, "{:?}", c.include_errors);
        assert!(
            c.include_errors[0].contains(
                "an include loop: /etc/slurm/slurm.conf -> /etc/slurm/a.conf -> /etc/slurm/b.conf -> /etc/slurm/a.conf"
            ),
            "{}",
            c.include_errors[0]
        );
        // The same file twice side by side is no loop (Slurm reads it twice).
        let fs = [("/etc/slurm/x.conf", "A=1\n")];
        let c = parse(
            "Include x.conf\nInclude x.conf\n",
            "/etc/slurm/slurm.conf",
            &mut files(&fs),
        );
        assert!(c.include_errors.is_empty(), "{:?}", c.include_errors);
        // Ten includes per file would be 10^8 files at depth 8 without the total budget.
        let ten = "Include x\n".repeat(10);
        let mut calls = 0;
        let mut n = 0;
        let mut inc = |_: &str, _: &str| -> Result<(String, String), String> {
            calls += 1;
            n += 1;
            Ok((format!("x{n}"), ten.clone()))
        };
        let c = parse(&ten, "slurm.conf", &mut inc);
        assert!(calls <= MAX_INCLUDES + 10, "{calls}");
        assert!(!c.include_errors.is_empty());
        // A chain deeper than the limit stops there.
        let mut n = 0;
        let mut deep = |_: &str, _: &str| -> Result<(String, String), String> {
            n += 1;
            Ok((format!("d{n}"), "Include next\n".into()))
        };
        let c = parse("Include next\n", "slurm.conf", &mut deep);
        assert_eq!(c.files.len(), MAX_INCLUDE_DEPTH + 1);
        assert!(
            c.include_errors[0].contains("nested more than"),
            "{:?}",
            c.include_errors
        );
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

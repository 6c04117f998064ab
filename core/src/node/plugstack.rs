//! `node.plugstack.*`: plugstack.conf and its includes (spank(8): `required|optional PATH [ARGS…]` and
//! `include GLOB` lines). A `required` plugin whose .so is missing or cannot load fails every srun and
//! job step on the node, and slurmd drains it; launchguard must come after Pyxis so its `task_init`
//! checks run inside the container (spank(8): plugins are called in plugstack order, callback by
//! callback; Pyxis enters the container in its own `task_init`).

use super::{quote, Outcome, Status};

/// Check IDs and descriptions of this family.
pub const CHECKS: &[(&str, &str)] = &[
    (
        "node.plugstack.parse",
        "plugstack.conf and its includes parse",
    ),
    (
        "node.plugstack.required_so",
        "every required (and optional) plugin .so exists and can load",
    ),
    (
        "node.plugstack.order",
        "launchguard is listed, after Pyxis when Pyxis is listed",
    ),
];

/// One plugin line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `file:line` where it is.
    pub at: String,
    /// `required` (true) or `optional`.
    pub required: bool,
    /// The .so path as written.
    pub path: String,
    /// Its arguments.
    pub args: Vec<String>,
}

/// One parsed line of a plugstack file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A plugin.
    Plugin(Entry),
    /// `include GLOB`.
    Include(String),
}

/// Parses one plugstack file: returns its lines and problems (`file:line: …`).
pub fn parse(text: &str, file: &str) -> (Vec<Line>, Vec<String>) {
    let mut lines = vec![];
    let mut problems = vec![];
    for (i, raw) in text.lines().enumerate() {
        let l = raw.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        let at = format!("{file}:{}", i + 1);
        let mut w = l.split_whitespace();
        let kw = w.next().unwrap_or("");
        match kw {
            "required" | "optional" => match w.next() {
                Some(path) => lines.push(Line::Plugin(Entry {
                    at,
                    required: kw == "required",
                    path: path.to_string(),
                    args: w.map(String::from).collect(),
                })),
                None => problems.push(format!("{at}: '{kw}' without a plugin path")),
            },
            "include" => match w.next() {
                Some(g) => lines.push(Line::Include(g.to_string())),
                None => problems.push(format!("{at}: include without a file")),
            },
            other => problems.push(format!(
                "{at}: '{}' is not required, optional or include",
                crate::finding::clip(other, 30)
            )),
        }
    }
    (lines, problems)
}

/// What the gatherer found about a plugin's .so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SoState {
    /// Present, an ELF shared object, and its libraries resolve.
    Loadable,
    /// Absent (path resolved against PluginDir for relative paths).
    Missing(String),
    /// Present but cannot load (not ELF, unreadable, a library not found), with the reason.
    Broken(String),
}

/// Everything the plugstack family judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlugstackFacts {
    /// plugstack.conf's path.
    pub path: String,
    /// Every plugin line in load order (includes expanded), with its .so's state; `Err`: the main
    /// file could not be read (absent is `Ok` with no entries).
    pub entries: Result<Vec<(Entry, SoState)>, String>,
    /// Parse problems across the files.
    pub problems: Vec<String>,
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Judges the plugstack family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &PlugstackFacts) -> Vec<Outcome> {
    let entries = match &f.entries {
        Ok(e) => e,
        Err(e) => {
            return vec![
                Outcome::new(
                    "node.plugstack.parse",
                    Status::Critical,
                    format!("cannot read {}: {e}", quote(&f.path)),
                    "srun and slurmstepd fail when PlugStackConfig is unreadable",
                    "make it readable by all users (mode 0644)",
                ),
                Outcome::unknown("node.plugstack.required_so", "plugstack.conf unreadable"),
                Outcome::unknown("node.plugstack.order", "plugstack.conf unreadable"),
            ]
        }
    };
    let mut out = vec![match f.problems.first() {
        None => Outcome::ok("node.plugstack.parse"),
        Some(p) => Outcome::new(
            "node.plugstack.parse",
            Status::Critical,
            format!("{} problem(s) in plugstack, first: {}", f.problems.len(), crate::finding::clip(p, 120)),
            "Slurm stops reading the plugin stack at a bad line, so every srun fails with 'Plugin stack post-option processing failed' or plugins silently vanish",
            "fix the line: `required|optional /path/plugin.so [args]` or `include /etc/slurm/plugstack.conf.d/*.conf`",
        ),
    }];
    let bad: Vec<&(Entry, SoState)> = entries
        .iter()
        .filter(|(_, s)| *s != SoState::Loadable)
        .collect();
    let worst = bad.iter().find(|(e, _)| e.required).or(bad.first());
    out.push(match worst {
        None => Outcome::ok("node.plugstack.required_so"),
        Some((e, s)) => {
            let why_so = match s {
                SoState::Missing(p) => format!("{} does not exist", quote(p)),
                SoState::Broken(r) => format!("{} cannot load: {}", quote(&e.path), crate::finding::clip(r, 80)),
                SoState::Loadable => unreachable!(),
            };
            if e.required {
                Outcome::new(
                    "node.plugstack.required_so",
                    Status::Critical,
                    format!("required plugin at {}: {why_so}", e.at),
                    "a required SPANK plugin that cannot load fails every srun and job step, and slurmd drains the node",
                    format!("install the plugin, or remove (or comment out) the line at {}", e.at),
                )
            } else {
                Outcome::new(
                    "node.plugstack.required_so",
                    Status::Warning,
                    format!("optional plugin at {}: {why_so}", e.at),
                    "Slurm skips it, so its features (e.g. Pyxis's --container-image) are missing on this node",
                    format!("install the plugin or remove the line at {}", e.at),
                )
            }
        }
    });
    let pos = |name: &str| {
        entries
            .iter()
            .position(|(e, _)| basename(&e.path).contains(name))
    };
    out.push(match (pos("launchguard"), pos("pyxis")) {
        (None, _) => Outcome::new(
            "node.plugstack.order",
            Status::Warning,
            format!("spank_launchguard.so is not listed in {}", quote(&f.path)),
            "launches on this node are not checked",
            "ln -s /usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf /etc/slurm/plugstack.conf.d/ (its name sorts after Pyxis's pyxis.conf)",
        ),
        (Some(l), Some(p)) if l < p => Outcome::new(
            "node.plugstack.order",
            Status::Warning,
            format!(
                "launchguard ({}) is listed before Pyxis ({})",
                entries[l].0.at, entries[p].0.at
            ),
            "its task_init then runs before Pyxis enters the container, so in container steps the image's NCCL/FI variables and the GPUs and NICs the container hides are never judged (each such step logs 'launchguard: node.plugstack.order: … not judged' in slurmd's log)",
            "name launchguard's drop-in so it sorts after Pyxis's: /etc/slurm/plugstack.conf.d/zz-launchguard.conf (plugstack.conf.d/*.conf is read in name order and pyxis.conf sorts after every NN- name)",
        ),
        _ => Outcome::ok("node.plugstack.order"),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, required: bool, at: &str) -> Entry {
        Entry {
            at: at.into(),
            required,
            path: path.into(),
            args: vec![],
        }
    }

    fn facts(entries: Vec<(Entry, SoState)>) -> PlugstackFacts {
        PlugstackFacts {
            path: "/etc/slurm/plugstack.conf".into(),
            entries: Ok(entries),
            problems: vec![],
        }
    }

    #[test]
    fn parse_lines_and_problems() {
        let (lines, problems) = parse(
            "# c\nrequired /usr/lib/spank_pyxis.so runtime_path=/run/pyxis\ninclude /etc/slurm/plugstack.conf.d/*.conf\nbogus x\noptional\n",
            "p",
        );
        assert_eq!(lines.len(), 2);
        assert_eq!(problems.len(), 2);
        match &lines[0] {
            Line::Plugin(e) => {
                assert!(e.required);
                assert_eq!(e.args, vec!["runtime_path=/run/pyxis"]);
                assert_eq!(e.at, "p:2");
            }
            l => panic!("{l:?}"),
        }
    }

    #[test]
    fn required_missing_so_is_critical_optional_a_warning() {
        let f = facts(vec![
            (
                entry("/x/spank_pyxis.so", false, "a:1"),
                SoState::Missing("/x/spank_pyxis.so".into()),
            ),
            (
                entry("/x/spank_launchguard.so", true, "a:2"),
                SoState::Missing("/x/spank_launchguard.so".into()),
            ),
        ]);
        let o = &judge(&f)[1];
        assert_eq!(o.status, Status::Critical);
        assert!(o.what.contains("a:2"), "{}", o.what);
        let f = facts(vec![(
            entry("/x/spank_pyxis.so", false, "a:1"),
            SoState::Missing("m".into()),
        )]);
        assert_eq!(judge(&f)[1].status, Status::Warning);
    }

    #[test]
    fn order_wants_launchguard_after_pyxis() {
        let lg = (
            entry("/x/spank_launchguard.so", true, "a:1"),
            SoState::Loadable,
        );
        let px = (entry("/x/spank_pyxis.so", true, "b:1"), SoState::Loadable);
        assert_eq!(
            judge(&facts(vec![lg.clone(), px.clone()]))[2].status,
            Status::Warning
        );
        assert_eq!(
            judge(&facts(vec![px.clone(), lg.clone()]))[2].status,
            Status::Ok
        );
        assert_eq!(judge(&facts(vec![px]))[2].status, Status::Warning);
        assert_eq!(judge(&facts(vec![lg]))[2].status, Status::Ok);
    }
}

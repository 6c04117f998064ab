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
    (
        "node.plugstack.unread",
        "no plugin is listed only in a plugstack file the running Slurm does not read",
    ),
    (
        "node.plugstack.pyxis_runtime",
        "Pyxis's runtime_path is node-local and, on tmpfs, big enough for an image",
    ),
];

/// Smallest tmpfs for Pyxis's runtime_path: Pyxis imports each image there as one squashfs file
/// (NVIDIA's PyTorch images are 10–20 GB).
pub const MIN_PYXIS_TMPFS: u64 = 16 << 30;

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
    /// Where `path` came from: `scontrol show config`, `PlugStackConfig in FILE`, `configless
    /// cache`, `the default beside FILE`.
    pub source: String,
    /// Plugin lines found in plugstack files (and their includes) that the running Slurm does not
    /// read, for plugins absent from the stack it reads.
    pub unread: Vec<Entry>,
    /// Pyxis's `runtime_path=` (default `/run/pyxis`) and where it lives, when Pyxis is listed.
    pub pyxis_runtime: Option<RuntimeFs>,
    /// Why the stack cannot be judged from here: plugstack.conf or a plugin's .so is in a
    /// directory the gathering process is shown otherwise than the node (the agent's unit hiding
    /// `/tmp`, `/home`…). Every check of the family is then UNKNOWN (issue 28).
    pub hidden: Option<String>,
}

/// Where a directory lives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuntimeFs {
    /// The path as given.
    pub path: String,
    /// The network filesystem it is on (nfs, lustre…), if any.
    pub network: Option<String>,
    /// The size of the tmpfs it is on, if it is on a tmpfs (bytes).
    pub tmpfs_bytes: Option<u64>,
}

/// Pyxis's runtime directory from its plugstack arguments (`runtime_path=`, default `/run/pyxis`,
/// Pyxis's README), or `None` when Pyxis is not listed.
pub fn pyxis_runtime_path(entries: &[Entry]) -> Option<String> {
    let e = entries
        .iter()
        .find(|e| basename(&e.path).contains("pyxis"))?;
    Some(
        e.args
            .iter()
            .rev()
            .find_map(|a| a.strip_prefix("runtime_path="))
            .unwrap_or("/run/pyxis")
            .to_string(),
    )
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Judges the plugstack family: one outcome per ID of [`CHECKS`].
pub fn judge(f: &PlugstackFacts) -> Vec<Outcome> {
    if let Some(why) = &f.hidden {
        return CHECKS
            .iter()
            .map(|(id, _)| Outcome::unknown(id, why.clone()))
            .collect();
    }
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
                Outcome::unknown("node.plugstack.unread", "plugstack.conf unreadable"),
                Outcome::unknown("node.plugstack.pyxis_runtime", "plugstack.conf unreadable"),
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
            "ln -s /usr/share/launchguard/plugstack.conf.d/zz-launchguard.conf /etc/slurm/plugstack.conf.d/ (the package's line; its name sorts after Pyxis's pyxis.conf), or for a build from source write 'required /path/to/spank_launchguard.so mode=warn' to /etc/slurm/plugstack.conf.d/zz-launchguard.conf",
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
    out.push(match f.unread.first() {
        None => Outcome::ok("node.plugstack.unread"),
        Some(_) => {
            let pyxis = f.unread.iter().any(|e| basename(&e.path).contains("pyxis"));
            let list: Vec<String> = f
                .unread
                .iter()
                .take(4)
                .map(|e| format!("{} ({})", basename(&e.path), e.at))
                .collect();
            Outcome::new(
                "node.plugstack.unread",
                if pyxis { Status::Critical } else { Status::Warning },
                format!(
                    "{} listed only in a file the running Slurm does not read: it reads {} ({})",
                    list.join(", "),
                    quote(&f.path),
                    f.source
                ),
                "Slurm never loads these plugins: with Pyxis missing, --container-image is unknown or jobs run on the host instead of in the container",
                format!("list them in {} (or one of its includes), or point PlugStackConfig= in slurm.conf at that file and restart slurmd", quote(&f.path)),
            )
        }
    });
    out.push(match &f.pyxis_runtime {
        Some(RuntimeFs { path, network: Some(t), .. }) => Outcome::new(
            "node.plugstack.pyxis_runtime",
            Status::Warning,
            format!("Pyxis's runtime_path {} is on {t}", quote(path)),
            "Pyxis writes each imported image there as a squashfs file: on a network filesystem every import is slow and all nodes share the load",
            "set runtime_path= on Pyxis's plugstack line to a node-local directory (the default /run/pyxis on a large tmpfs, or local NVMe)",
        ),
        Some(RuntimeFs { path, tmpfs_bytes: Some(b), .. }) if *b < MIN_PYXIS_TMPFS => Outcome::new(
            "node.plugstack.pyxis_runtime",
            Status::Warning,
            format!("Pyxis's runtime_path {} is a tmpfs of {:.1} GiB", quote(path), *b as f64 / (1u64 << 30) as f64),
            "Pyxis writes each imported image there as one squashfs file of several GB: imports fail with 'No space left on device'",
            format!("set runtime_path= on Pyxis's plugstack line to node-local disk, or give the tmpfs at least {} GiB", MIN_PYXIS_TMPFS >> 30),
        ),
        _ => Outcome::ok("node.plugstack.pyxis_runtime"),
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
            hidden: None,
            path: "/etc/slurm/plugstack.conf".into(),
            entries: Ok(entries),
            problems: vec![],
            source: "scontrol show config".into(),
            unread: vec![],
            pyxis_runtime: None,
        }
    }

    /// Issue 28: a stack the gathering process is shown otherwise than the node is not judged:
    /// every check UNKNOWN with the reason (the agent's private /tmp showed no plugstack.conf, and
    /// a required line to a missing .so passed).
    #[test]
    fn a_stack_not_seen_as_the_node_sees_it_is_unknown_throughout() {
        let mut f = facts(vec![(
            entry("/tmp/x/spank_gone.so", true, "/tmp/x/plugstack.conf:1"),
            SoState::Missing("/tmp/x/spank_gone.so".into()),
        )]);
        assert!(judge(&f).iter().any(|o| o.status == Status::Critical));
        f.hidden = Some("the agent's sandbox shows another directory at /tmp/x".into());
        let out = judge(&f);
        assert_eq!(out.len(), CHECKS.len());
        assert!(
            out.iter()
                .all(|o| o.status == Status::Unknown && o.what.contains("/tmp/x")),
            "{out:?}"
        );
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

    fn get(f: &PlugstackFacts, id: &str) -> Outcome {
        judge(f).into_iter().find(|o| o.id == id).unwrap()
    }

    /// Field report: aws-samples/sample-physical-ai-scaffolding-kit issue 5 (Pyxis listed in a file
    /// a configless slurmd never reads).
    #[test]
    fn plugins_listed_only_in_unread_files_do_not_pass() {
        let px = (entry("/x/spank_pyxis.so", true, "c:1"), SoState::Loadable);
        let lg = (
            entry("/x/spank_launchguard.so", true, "c:2"),
            SoState::Loadable,
        );
        let mut f = facts(vec![px.clone(), lg.clone()]);
        assert_eq!(get(&f, "node.plugstack.unread").status, Status::Ok);
        f.unread = vec![entry(
            "/x/spank_other.so",
            false,
            "/etc/slurm/plugstack.conf:3",
        )];
        let o = get(&f, "node.plugstack.unread");
        assert_eq!(o.status, Status::Warning);
        assert!(
            o.what
                .contains("spank_other.so (/etc/slurm/plugstack.conf:3)"),
            "{}",
            o.what
        );
        assert!(o.what.contains("scontrol show config"), "{}", o.what);
        // Pyxis only in the unread file: the stack that runs has no Pyxis at all.
        let mut f = facts(vec![lg]);
        f.path = "/var/spool/slurmd/conf-cache/plugstack.conf".into();
        f.source = "configless cache".into();
        f.unread = vec![entry(
            "/usr/lib/slurm/spank_pyxis.so",
            true,
            "/etc/slurm/plugstack.conf.d/pyxis.conf:1",
        )];
        let o = get(&f, "node.plugstack.unread");
        assert_eq!(o.status, Status::Critical);
        assert!(
            o.fix
                .contains("/var/spool/slurmd/conf-cache/plugstack.conf"),
            "{}",
            o.fix
        );
    }

    #[test]
    fn pyxis_runtime_path_on_network_or_small_tmpfs_is_a_warning() {
        let mut px = entry("/x/spank_pyxis.so", true, "c:1");
        assert_eq!(
            pyxis_runtime_path(std::slice::from_ref(&px)).as_deref(),
            Some("/run/pyxis")
        );
        px.args = vec!["runtime_path=/scratch/pyxis".into(), "remap_root=0".into()];
        assert_eq!(
            pyxis_runtime_path(std::slice::from_ref(&px)).as_deref(),
            Some("/scratch/pyxis")
        );
        assert_eq!(pyxis_runtime_path(&[]), None);
        for (network, tmpfs, want) in [
            (None, None, Status::Ok),
            (Some("nfs"), None, Status::Warning),
            (None, Some(4u64 << 30), Status::Warning),
            (None, Some(64u64 << 30), Status::Ok),
        ] {
            let mut f = facts(vec![(px.clone(), SoState::Loadable)]);
            f.pyxis_runtime = Some(RuntimeFs {
                path: "/scratch/pyxis".into(),
                network: network.map(String::from),
                tmpfs_bytes: tmpfs,
            });
            assert_eq!(
                get(&f, "node.plugstack.pyxis_runtime").status,
                want,
                "{network:?} {tmpfs:?}"
            );
        }
    }
}

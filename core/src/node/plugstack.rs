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

/// The longest plugstack line Slurm reads whole, in bytes before the newline. Slurm reads
/// plugstack.conf (and its includes) with fgets(3) into a 4096-byte buffer, which holds 4095 bytes and
/// the terminating NUL: `char buf[4096]` in `_spank_stack_load` (src/common/plugstack.c, 22.05),
/// `char buf[PATH_MAX]` (4096 on Linux) in src/common/spank.c (24.11, 26.05). A longer line is read in
/// pieces of 4095 bytes, each parsed as a line of its own (`_spank_stack_process_line`): the plugin
/// gets the arguments of the first piece, and each further piece gives `spank: Invalid option "…"`
/// and `spank: FILE:N: Invalid line. Ignoring.` in the log of srun and slurmd, which go on.
pub const SLURM_LINE_MAX: usize = 4095;

/// The words every message about a cut line carries (so [`judge`] can tell it from other problems).
const CUT: &str = "Slurm reads plugstack lines in pieces of at most 4095 bytes";

/// How Slurm reads one plugstack line (without its newline): the pieces it parses as lines, the
/// first being what the plugin on that line gets. One piece when the line fits ([`SLURM_LINE_MAX`]).
pub fn slurm_pieces(line: &str) -> Vec<std::borrow::Cow<'_, str>> {
    line.as_bytes()
        .chunks(SLURM_LINE_MAX)
        .map(String::from_utf8_lossy)
        .collect()
}

/// The description of a line Slurm cuts (`this line is N bytes and …`), or `None` when it fits: its
/// length, where the cut falls and how many extra lines Slurm makes of the rest.
pub fn cut_line(line: &str) -> Option<String> {
    let pieces = slurm_pieces(line);
    if pieces.len() < 2 {
        return None;
    }
    let kept = pieces[0].trim_end();
    let tail: String = {
        let c: Vec<char> = kept.chars().collect();
        c[c.len().saturating_sub(30)..].iter().collect()
    };
    Some(format!(
        "this line is {} bytes and {CUT}: the plugin gets the arguments up to '…{}' only, and the other {} piece{} {} read as line{} of {} own ('Invalid option', 'Invalid line. Ignoring.' on srun's terminal and in slurmd's log)",
        line.len(),
        crate::finding::clip(&tail, 30),
        pieces.len() - 1,
        if pieces.len() > 2 { "s" } else { "" },
        if pieces.len() > 2 { "are" } else { "is" },
        if pieces.len() > 2 { "s" } else { "" },
        if pieces.len() > 2 { "their" } else { "its" },
    ))
}

/// Parses one plugstack file as Slurm does, lines longer than [`SLURM_LINE_MAX`] cut into pieces:
/// returns its lines and problems (`file:line: …`).
pub fn parse(text: &str, file: &str) -> (Vec<Line>, Vec<String>) {
    let mut lines = vec![];
    let mut problems = vec![];
    for (i, whole) in text.lines().enumerate() {
        let at = format!("{file}:{}", i + 1);
        problems.extend(cut_line(whole).map(|c| format!("{at}: {c}")));
        for raw in slurm_pieces(whole) {
            parse_piece(&raw, &at, &mut lines, &mut problems);
        }
    }
    (lines, problems)
}

/// One line (or piece of a line) as `_plugin_stack_parse_line` reads it.
fn parse_piece(raw: &str, at: &str, lines: &mut Vec<Line>, problems: &mut Vec<String>) {
    let at = at.to_string();
    let l = raw.split('#').next().unwrap_or("").trim();
    if l.is_empty() {
        return;
    }
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
    let cut = f.problems.iter().find(|p| p.contains(CUT));
    let mut out = vec![match (cut, f.problems.first()) {
        (None, None) => Outcome::ok("node.plugstack.parse"),
        (Some(p), _) => Outcome::new(
            "node.plugstack.parse",
            Status::Critical,
            crate::finding::clip(p, 400),
            "the plugin runs with a shortened argument list (a devices= list loses its tail, its last path may be cut in half) while srun and slurmd go on, so nothing else shows it",
            "shorten the line to at most 4095 bytes: list fewer devices= (the step's GPUs and the node's RDMA devices are checked without being listed) or move NCCL rules to the file nccl_rules=PATH names; launchguard check-args '<the line>' measures it",
        ),
        (None, Some(p)) => Outcome::new(
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

    /// Field report: a plugstack line with a devices= list longer than Slurm's 4 KiB line buffer was
    /// cut by Slurm (the plugin ran with part of the list) while node.plugstack said OK.
    #[test]
    fn a_line_longer_than_slurms_buffer_is_critical_and_parsed_as_slurm_cuts_it() {
        let devices: Vec<String> = (0..400).map(|i| format!("/dev/dev{i:04}")).collect();
        let line = format!(
            "required /x/spank_launchguard.so mode=warn devices={}",
            devices.join(",")
        );
        assert!(line.len() > SLURM_LINE_MAX);
        let (lines, problems) = parse(&format!("{line}\n"), "p");
        // The plugin gets the first 4095 bytes; the rest is a line of its own, which Slurm rejects.
        match &lines[..] {
            [Line::Plugin(e)] => {
                let last = e.args.last().unwrap();
                assert_eq!(
                    "required /x/spank_launchguard.so ".len() + e.args.join(" ").len(),
                    SLURM_LINE_MAX
                );
                assert!(last.starts_with("devices=/dev/dev0000,"), "{last}");
            }
            l => panic!("{l:?}"),
        }
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with(&format!("p:1: this line is {} bytes and Slurm reads plugstack lines in pieces of at most 4095 bytes", line.len())), "{problems:?}");
        assert!(
            problems[1].contains("is not required, optional or include"),
            "{problems:?}"
        );
        let mut f = facts(vec![]);
        f.problems = problems;
        let o = get(&f, "node.plugstack.parse");
        assert_eq!(o.status, Status::Critical);
        assert!(o.what.contains("this line is"), "{}", o.what);
        assert!(
            o.fix.starts_with("shorten the line to at most 4095 bytes"),
            "{}",
            o.fix
        );
        // 4095 bytes fit (fgets reads them whole, then the newline alone); 4096 do not.
        let fits = format!("required /x/a.so {}", "x".repeat(SLURM_LINE_MAX - 17));
        assert_eq!(fits.len(), SLURM_LINE_MAX);
        assert_eq!(parse(&fits, "p").1, Vec::<String>::new());
        assert_eq!(parse(&format!("{fits}y"), "p").1.len(), 2);
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

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
    (
        "node.plugstack.duplicate",
        "every SPANK plugin is listed once, and no editor or package-manager backup is read as a plugstack file",
    ),
    (
        "node.plugstack.user_read",
        "users can read plugstack.conf, list the directories its includes glob, and read every file and plugin they name (srun runs as the user)",
    ),
];

/// Well-known SPANK plugins by the options they register (spank(8): `spank_options` or
/// `spank_option_register`), so that two copies under different file names are seen as one plugin:
/// `(name, options that all appear in its .so)`. Pyxis's options: its README.
pub const KNOWN_BY_OPTIONS: &[(&str, &[&str])] = &[(
    "pyxis",
    &["container-image", "container-mounts", "container-workdir"],
)];

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
    /// `include GLOB`, with its `file:line`.
    Include {
        /// `file:line` where it is.
        at: String,
        /// The pattern as written.
        pattern: String,
    },
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
            Some(g) => lines.push(Line::Include {
                at,
                pattern: g.to_string(),
            }),
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
    /// Every plugstack file Slurm reads, plugstack.conf first, then each file its includes match
    /// in the order Slurm reads them.
    pub files: Vec<StackFile>,
    /// Every plugin line of the stack (the same order as `entries`) with what identifies it.
    pub listed: Vec<Listed>,
    /// Includes whose glob reads a directory users cannot list.
    pub unlisted_dirs: Vec<UnlistedDir>,
}

/// A plugstack file Slurm reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StackFile {
    /// Its path as Slurm opens it (the include's match).
    pub path: String,
    /// `FILE:LINE` of the `include` whose pattern matched it, and the pattern; `None` for
    /// plugstack.conf itself.
    pub via: Option<(String, String)>,
    /// Why users cannot open it (its mode, or a directory above it users cannot search) and the
    /// fix, as [`user_denied`] gives them; `None` when every user can.
    pub user_denied: Option<(String, String)>,
}

/// One plugin line and what identifies the plugin it loads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Listed {
    /// `file:line`.
    pub at: String,
    /// `required` (true) or `optional`.
    pub required: bool,
    /// The .so Slurm loads (a relative name resolved against PluginDir), symlinks resolved.
    pub so: String,
    /// A [`KNOWN_BY_OPTIONS`] name when its .so registers that plugin's options, else the .so's
    /// file name.
    pub name: String,
    /// Why users cannot read the .so and the fix ([`user_denied`]); `None` when every user can (or it
    /// is missing: `node.plugstack.required_so` says so).
    pub user_denied: Option<(String, String)>,
}

/// An include whose pattern needs a directory listed that users cannot list: users' srun matches
/// nothing there (glob(3) skips what it cannot read), while slurmstepd, as root, loads the plugins.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnlistedDir {
    /// `FILE:LINE` of the include.
    pub at: String,
    /// The directory.
    pub dir: String,
    /// Why (its mode) and the fix ([`user_denied`]).
    pub why: (String, String),
    /// Names ([`Listed::name`]) of the plugins listed in the files root finds there.
    pub plugins: Vec<String>,
}

/// One directory or file on a path, as `stat` shows it, for [`user_denied`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMode {
    /// The path.
    pub path: String,
    /// `st_mode & 0o7777`.
    pub mode: u32,
    /// Owner and group names or ids, for messages (`root:slurm`).
    pub owner: String,
}

/// What an unprivileged user (neither the owner nor in the group: Slurm's users in general) cannot
/// do on a path, by the "other" permission bits (path_resolution(7)): every directory in `dirs`
/// (the target's parents, any order) must be searchable (`o+x`); the target, when given, readable
/// (`o+r`), and searchable too when `list_dir` (a directory glob(3) must read: `o+rx`). Returns
/// what stops a user and the `chmod` that lets every user through, or `None` when a user can.
/// ACLs are not read.
pub fn user_denied(
    dirs: &[PathMode],
    target: Option<&PathMode>,
    list_dir: bool,
) -> Option<(String, String)> {
    if let Some(d) = dirs.iter().find(|d| d.mode & 0o001 == 0) {
        return Some((
            format!(
                "{} (mode {:04o}, {}) is not searchable by other users",
                quote(&d.path),
                d.mode,
                d.owner
            ),
            format!("chmod o+x {}", quote(&d.path)),
        ));
    }
    let t = target?;
    let (need, bits, word) = if list_dir {
        (0o005, "rx", "listable")
    } else {
        (0o004, "r", "readable")
    };
    (t.mode & need != need).then(|| {
        (
            format!(
                "{} (mode {:04o}, {}) is not {word} by other users",
                quote(&t.path),
                t.mode,
                t.owner,
            ),
            format!("chmod o+{bits} {}", quote(&t.path)),
        )
    })
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
                Outcome::unknown("node.plugstack.duplicate", "plugstack.conf unreadable"),
                Outcome::unknown("node.plugstack.user_read", "plugstack.conf unreadable"),
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
            Status::Critical,
            format!("Pyxis's runtime_path {} is on {t}", quote(path)),
            "Pyxis writes each imported image there as RUNTIME_PATH/UID/JOBID.STEPID.squashfs (Pyxis's pyxis_slurmstepd.c), a name without the node, so on a directory the nodes share every node of a multi-node container step writes and removes the same file at once and the step fails on some of them, besides every import being slow",
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
    out.push(duplicate(f));
    out.push(user_read(f));
    out
}

/// The file part of a `file:line` place.
fn file_of(at: &str) -> &str {
    at.rsplit_once(':').map_or(at, |(f, _)| f)
}

/// The file `path` of the stack when its name is an editor's or package manager's leftover: the
/// kind and the include that matched it.
fn leftover<'a>(f: &'a PlugstackFacts, path: &str) -> Option<(&'static str, &'a (String, String))> {
    let file = f.files.iter().find(|s| s.path == path)?;
    let kind = crate::glob::leftover_kind(basename(path))?;
    Some((kind, file.via.as_ref()?))
}

/// `node.plugstack.duplicate`. Slurm's check for a plugin loaded twice (`plugin_in_list`, which
/// compares the path strings' addresses) never fires, so a plugin listed twice is loaded twice:
/// every callback runs once per line, and the second copy's options are disabled (`spank: option
/// "…" provided by both …`, `_spank_option_register`). Seen on Slurm 22.05 with a test plugin
/// listed directly and through `include …/*`.
fn duplicate(f: &PlugstackFacts) -> Outcome {
    const ID: &str = "node.plugstack.duplicate";
    let narrow = |via: &(String, String)| {
        let dir = via.1.rsplit_once('/').map_or("", |(d, _)| d);
        format!(
            "make the include at {} match only '{}*.conf'",
            via.0,
            if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            }
        )
    };
    for (i, b) in f.listed.iter().enumerate() {
        let Some(a) = f.listed[..i].iter().find(|a| a.name == b.name) else {
            continue;
        };
        let options = KNOWN_BY_OPTIONS.iter().find(|(n, _)| *n == b.name);
        let left = leftover(f, file_of(&b.at))
            .map(|l| (file_of(&b.at), l))
            .or_else(|| leftover(f, file_of(&a.at)).map(|l| (file_of(&a.at), l)));
        let same = if a.so == b.so {
            String::new()
        } else {
            format!(" ({} and {})", quote(&a.so), quote(&b.so))
        };
        let what = match left {
            Some((file, (kind, via))) => format!(
                "{} is listed twice, at {} and at {}{same}: {} is {kind} that the include at {} ('{}') also reads",
                b.name, a.at, b.at, quote(file), via.0, via.1
            ),
            None => format!("{} is listed twice, at {} and at {}{same}", b.name, a.at, b.at),
        };
        let why = match options {
            Some((_, opts)) => format!(
                "Slurm loads it once per line (its own duplicate test never fires): each callback runs twice in every srun and step, and the second copy's options are disabled ('spank: option \"{}\" provided by both …'), so which copy acts on them depends on the order",
                opts[0]
            ),
            None if b.name.contains("launchguard") => "Slurm loads it once per line (its own duplicate test never fires): each callback runs twice in every srun and step, so every finding is printed and reported twice, each time with one line's arguments".to_string(),
            None => "Slurm loads it once per line (its own duplicate test never fires): each callback runs twice in every srun and step, once with each line's arguments".to_string(),
        };
        let fix = match left {
            Some((file, (_, via))) => format!("remove {} (or {})", quote(file), narrow(via)),
            None => format!(
                "remove the line at {} ({} is already listed at {})",
                b.at, b.name, a.at
            ),
        };
        return Outcome::new(ID, Status::Warning, what, why, fix);
    }
    // A leftover that lists plugins (none of them twice): old arguments, or a plugin removed since.
    for s in &f.files {
        let Some((kind, via)) = leftover(f, &s.path) else {
            continue;
        };
        let n = f.listed.iter().filter(|l| file_of(&l.at) == s.path).count();
        if n == 0 {
            continue;
        }
        return Outcome::new(
            ID,
            Status::Warning,
            format!(
                "{}, {kind}, is read as a plugstack file: the include at {} ('{}') matches it, and it lists {n} plugin{}",
                quote(&s.path),
                via.0,
                via.1,
                if n == 1 { "" } else { "s" }
            ),
            "Slurm loads the plugins it lists with the arguments saved there (an older setting, or a plugin removed since, which fails every srun when required)",
            format!("remove {} (or {})", quote(&s.path), narrow(via)),
        );
    }
    Outcome::ok(ID)
}

/// `node.plugstack.user_read`: srun reads the stack as the user who runs it, slurmstepd as root.
/// A file users cannot open fails every user's srun (`spank: Failed to open FILE: Permission
/// denied`, then `Plug-in initialization failed`; `_spank_stack_load`), a directory they cannot
/// list makes their glob match nothing (glob(3) skips it), and a plugin .so they cannot read fails
/// to load. Seen on Slurm 22.05: root's srun ran, user lgtest's failed, each way.
fn user_read(f: &PlugstackFacts) -> Outcome {
    const ID: &str = "node.plugstack.user_read";
    const ROOT_OK: &str = "while root's srun works, so an admin's test does not show it";
    // A file under a directory users' glob cannot list is never opened by their srun: the
    // directory is the finding then (below).
    let unlisted = |s: &StackFile| {
        f.unlisted_dirs
            .iter()
            .any(|u| s.path.starts_with(&format!("{}/", u.dir)))
    };
    if let Some(s) = f
        .files
        .iter()
        .find(|s| s.user_denied.is_some() && !unlisted(s))
    {
        let (why_not, fix) = s.user_denied.clone().unwrap_or_default();
        let via = match &s.via {
            Some((at, pat)) => format!(" (the include at {at}, '{pat}', matches it)"),
            None => String::new(),
        };
        return Outcome::new(
            ID,
            Status::Critical,
            format!("users cannot open {}{via}: {why_not}", quote(&s.path)),
            format!("every user's srun fails with 'spank: Failed to open {}: Permission denied' and 'Plug-in initialization failed', {ROOT_OK}", s.path),
            fix,
        );
    }
    let denied_so = |required: bool| {
        f.listed
            .iter()
            .find(|l| l.required == required && l.user_denied.is_some())
    };
    if let Some(l) = denied_so(true) {
        let (why_not, fix) = l.user_denied.clone().unwrap_or_default();
        return Outcome::new(
            ID,
            Status::Critical,
            format!("users cannot read the required plugin at {}: {why_not}", l.at),
            format!("users' srun cannot load it ('Failed to load plugin {} . Aborting.'), so every user's srun fails, {ROOT_OK}", l.so),
            fix,
        );
    }
    if let Some(u) = f.unlisted_dirs.iter().find(|u| !u.plugins.is_empty()) {
        let with_options: Vec<&str> = u
            .plugins
            .iter()
            .filter(|p| KNOWN_BY_OPTIONS.iter().any(|(n, _)| n == p))
            .map(String::as_str)
            .collect();
        let (status, why) = match with_options.first() {
            Some(p) => {
                let opt = KNOWN_BY_OPTIONS
                    .iter()
                    .find(|(n, _)| n == p)
                    .map_or("", |(_, o)| o[0]);
                (
                    Status::Critical,
                    format!("users' srun reads none of the files there, so it runs without {}: '--{opt}' is an unrecognized option for every user, while root's srun and slurmstepd load it", u.plugins.join(", ")),
                )
            }
            None => (
                Status::Warning,
                format!("users' srun reads none of the files there, so it runs without {} (their srun-side callbacks and options), while slurmstepd loads them as root", u.plugins.join(", ")),
            ),
        };
        return Outcome::new(
            ID,
            status,
            format!(
                "users cannot list {}, which the include at {} globs: {}",
                quote(&u.dir),
                u.at,
                u.why.0
            ),
            why,
            u.why.1.clone(),
        );
    }
    if let Some(l) = denied_so(false) {
        let (why_not, fix) = l.user_denied.clone().unwrap_or_default();
        return Outcome::new(
            ID,
            Status::Warning,
            format!("users cannot read the optional plugin at {}: {why_not}", l.at),
            "users' srun skips it, so its options and srun-side callbacks are missing for users while root's srun has them",
            fix,
        );
    }
    Outcome::ok(ID)
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
            files: vec![],
            listed: vec![],
            unlisted_dirs: vec![],
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
    fn pyxis_runtime_path_on_network_is_critical_small_tmpfs_a_warning() {
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
            (Some("nfs"), None, Status::Critical),
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

    fn listed(at: &str, so: &str, name: &str) -> Listed {
        Listed {
            at: at.into(),
            required: true,
            so: so.into(),
            name: name.into(),
            user_denied: None,
        }
    }

    fn file(path: &str, via: Option<(&str, &str)>) -> StackFile {
        StackFile {
            path: path.into(),
            via: via.map(|(a, p)| (a.into(), p.into())),
            user_denied: None,
        }
    }

    const CONF: &str = "/etc/slurm/plugstack.conf";
    const D: &str = "/etc/slurm/plugstack.conf.d";

    /// Issue 24 item 2: launchguard listed in plugstack.conf and again in its drop-in (each
    /// finding printed twice); before, every node.plugstack check was OK.
    #[test]
    fn a_plugin_listed_directly_and_through_an_include_is_a_warning() {
        let mut f = facts(vec![]);
        let lg = "/usr/local/lib/launchguard/spank_launchguard.so";
        f.files = vec![
            file(CONF, None),
            file(
                &format!("{D}/zz-launchguard.conf"),
                Some((
                    "/etc/slurm/plugstack.conf:2",
                    "/etc/slurm/plugstack.conf.d/*.conf",
                )),
            ),
        ];
        f.listed = vec![
            listed(&format!("{CONF}:1"), lg, "spank_launchguard.so"),
            listed(
                &format!("{D}/zz-launchguard.conf:1"),
                lg,
                "spank_launchguard.so",
            ),
        ];
        let o = get(&f, "node.plugstack.duplicate");
        assert_eq!(o.status, Status::Warning, "{o:?}");
        assert_eq!(
            o.what,
            format!("spank_launchguard.so is listed twice, at {CONF}:1 and at {D}/zz-launchguard.conf:1")
        );
        assert!(
            o.why
                .contains("every finding is printed and reported twice"),
            "{}",
            o.why
        );
        assert_eq!(
            o.fix,
            format!("remove the line at {D}/zz-launchguard.conf:1 (spank_launchguard.so is already listed at {CONF}:1)")
        );
        // Listed once: OK.
        f.listed.pop();
        assert_eq!(get(&f, "node.plugstack.duplicate").status, Status::Ok);
    }

    /// `include …/*` also reads the package manager's saved copy of pyxis.conf, and a second Pyxis
    /// build under another file name is the same plugin by its options.
    #[test]
    fn a_leftover_the_glob_reads_is_named_with_its_fix() {
        let mut f = facts(vec![]);
        let inc = (
            "/etc/slurm/plugstack.conf:1",
            "/etc/slurm/plugstack.conf.d/*",
        );
        f.files = vec![
            file(CONF, None),
            file(&format!("{D}/pyxis.conf"), Some(inc)),
            file(&format!("{D}/pyxis.conf.rpmsave"), Some(inc)),
        ];
        f.listed = vec![
            listed(
                &format!("{D}/pyxis.conf:1"),
                "/usr/lib64/slurm/spank_pyxis.so",
                "pyxis",
            ),
            listed(
                &format!("{D}/pyxis.conf.rpmsave:1"),
                "/usr/local/lib/slurm/spank_pyxis-0.19.so",
                "pyxis",
            ),
        ];
        let o = get(&f, "node.plugstack.duplicate");
        assert_eq!(o.status, Status::Warning);
        assert!(o.what.starts_with(&format!("pyxis is listed twice, at {D}/pyxis.conf:1 and at {D}/pyxis.conf.rpmsave:1 ('/usr/lib64/slurm/spank_pyxis.so' and '/usr/local/lib/slurm/spank_pyxis-0.19.so'): '{D}/pyxis.conf.rpmsave' is a package manager's saved copy that the include at /etc/slurm/plugstack.conf:1 ('/etc/slurm/plugstack.conf.d/*') also reads")), "{}", o.what);
        assert!(
            o.why
                .contains("'spank: option \"container-image\" provided by both …'"),
            "{}",
            o.why
        );
        assert_eq!(o.fix, format!("remove '{D}/pyxis.conf.rpmsave' (or make the include at /etc/slurm/plugstack.conf:1 match only '{D}/*.conf')"));
        // The leftover alone (its plugin listed nowhere else) still loads what it lists.
        f.listed.remove(0);
        let o = get(&f, "node.plugstack.duplicate");
        assert_eq!(o.status, Status::Warning);
        assert!(
            o.what
                .contains("a package manager's saved copy, is read as a plugstack file"),
            "{}",
            o.what
        );
        // A leftover that lists nothing (an empty backup) is harmless.
        f.listed.clear();
        assert_eq!(get(&f, "node.plugstack.duplicate").status, Status::Ok);
    }

    fn pm(path: &str, mode: u32) -> PathMode {
        PathMode {
            path: path.into(),
            mode,
            owner: "root:root".into(),
        }
    }

    #[test]
    fn user_access_follows_the_other_bits() {
        let dirs = [pm("/etc/slurm", 0o755), pm("/etc", 0o755)];
        assert_eq!(
            user_denied(&dirs, Some(&pm("/etc/slurm/x.conf", 0o644)), false),
            None
        );
        let (what, fix) = user_denied(&dirs, Some(&pm("/etc/slurm/x.conf", 0o640)), false).unwrap();
        assert_eq!(
            what,
            "'/etc/slurm/x.conf' (mode 0640, root:root) is not readable by other users"
        );
        assert_eq!(fix, "chmod o+r '/etc/slurm/x.conf'");
        let (_, fix) = user_denied(&dirs, Some(&pm("/etc/slurm/d", 0o711)), true).unwrap();
        assert_eq!(fix, "chmod o+rx '/etc/slurm/d'");
        let dirs = [pm("/etc/slurm", 0o750), pm("/etc", 0o755)];
        let (what, fix) = user_denied(&dirs, Some(&pm("/etc/slurm/x.conf", 0o644)), false).unwrap();
        assert!(what.contains("is not searchable by other users"), "{what}");
        assert_eq!(fix, "chmod o+x '/etc/slurm'");
    }

    /// Issue 24 item 2/3: an include's file users cannot open fails every user's srun
    /// (`spank: Failed to open …: Permission denied`) while root's works; a directory they cannot
    /// list hides Pyxis from their srun; a required .so they cannot read fails their srun.
    #[test]
    fn what_users_cannot_read_is_judged_from_their_seat() {
        let mut f = facts(vec![]);
        f.files = vec![
            file(CONF, None),
            file(
                &format!("{D}/pyxis.conf"),
                Some((
                    "/etc/slurm/plugstack.conf:1",
                    "/etc/slurm/plugstack.conf.d/*.conf",
                )),
            ),
        ];
        f.listed = vec![listed(
            &format!("{D}/pyxis.conf:1"),
            "/usr/lib/spank_pyxis.so",
            "pyxis",
        )];
        assert_eq!(get(&f, "node.plugstack.user_read").status, Status::Ok);

        f.files[1].user_denied = Some((
            "'x' (mode 0600, root:root) is not readable by other users".into(),
            format!("chmod o+r '{D}/pyxis.conf'"),
        ));
        let o = get(&f, "node.plugstack.user_read");
        assert_eq!(o.status, Status::Critical);
        assert!(o.what.starts_with(&format!("users cannot open '{D}/pyxis.conf' (the include at /etc/slurm/plugstack.conf:1, '/etc/slurm/plugstack.conf.d/*.conf', matches it)")), "{}", o.what);
        assert!(
            o.why.contains(&format!(
                "'spank: Failed to open {D}/pyxis.conf: Permission denied'"
            )),
            "{}",
            o.why
        );
        assert_eq!(o.fix, format!("chmod o+r '{D}/pyxis.conf'"));
        f.files[1].user_denied = None;

        f.unlisted_dirs = vec![UnlistedDir {
            at: "/etc/slurm/plugstack.conf:1".into(),
            dir: D.into(),
            why: (
                "'d' (mode 0700, root:root) is not listable by other users".into(),
                format!("chmod o+rx '{D}'"),
            ),
            plugins: vec!["pyxis".into()],
        }];
        // The file under it is denied too, but users' glob never reaches it: the directory is named.
        f.files[1].user_denied = Some(("'d' is not searchable".into(), format!("chmod o+x '{D}'")));
        let o = get(&f, "node.plugstack.user_read");
        assert_eq!(o.status, Status::Critical);
        assert!(
            o.what.starts_with(&format!("users cannot list '{D}'")),
            "{}",
            o.what
        );
        f.files[1].user_denied = None;
        assert!(
            o.why
                .contains("'--container-image' is an unrecognized option for every user"),
            "{}",
            o.why
        );
        assert_eq!(o.fix, format!("chmod o+rx '{D}'"));
        f.unlisted_dirs[0].plugins = vec!["spank_other.so".into()];
        assert_eq!(get(&f, "node.plugstack.user_read").status, Status::Warning);
        f.unlisted_dirs.clear();

        f.listed[0].user_denied = Some((
            "'/usr/lib/spank_pyxis.so' (mode 0700, root:root) is not readable by other users"
                .into(),
            "chmod o+r '/usr/lib/spank_pyxis.so'".into(),
        ));
        assert_eq!(get(&f, "node.plugstack.user_read").status, Status::Critical);
        f.listed[0].required = false;
        assert_eq!(get(&f, "node.plugstack.user_read").status, Status::Warning);
    }
}

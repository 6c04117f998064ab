//! srun / sbatch / salloc command lines, parsed the way Slurm's getopt_long does.
//!
//! The plugin reads `/proc/self/cmdline` in srun (it is srun's full argv in every local
//! callback) and must tell srun's own options from the command's: in `srun python train.py -c 4`, the
//! `-c 4` belongs to python. Slurm parses with a `+` optstring (stop at the first operand), accepts
//! `--opt=value`, `--opt value`, unambiguous prefixes of long options, `-c4`, `-c 4` and bundles such as
//! `-lc4`. The tables below are the union of srun(1), sbatch(1) and salloc(1) for 22.05–26.05, plus
//! Pyxis's options (registered through SPANK); `core/tests/data/slurm-options/` holds every long option
//! of 22.05, 24.11 and 26.05 as their own getopt_long accepts it (hidden aliases such as srun's
//! `--tasks-per-node` included), and the tests check the tables against it and against the running
//! release (`tests/tests/launch.rs`). An option missing from the tables (another site's SPANK
//! option, a newer Slurm's) or an ambiguous abbreviation makes the parse [`ParsedArgv::uncertain`]:
//! it is taken to have no argument, so parsing may stop early, and the checks then never reject on what
//! they did not find (the command's own flags are never read as srun's).

/// Which Slurm command the argv belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// `srun`: launches a step.
    Srun,
    /// `sbatch`: submits a batch job; its first operand is the script.
    Sbatch,
    /// `salloc`: makes an allocation and runs a command (often a shell) in it.
    Salloc,
}

impl Tool {
    /// Recognises the tool from argv[0] (`/usr/bin/srun` → `Srun`).
    pub fn from_argv0(argv0: &str) -> Option<Tool> {
        match argv0.rsplit('/').next().unwrap_or(argv0) {
            "srun" => Some(Tool::Srun),
            "sbatch" => Some(Tool::Sbatch),
            "salloc" => Some(Tool::Salloc),
            _ => None,
        }
    }

    fn short_opts(self) -> &'static str {
        // getopt optstrings without the leading '+': a letter followed by ':' takes an argument, by '::'
        // an optional one (only as -Xvalue). Probed from each command's getopt on 22.05, 24.11 and 26.05
        // (`scripts/slurm-options.sh`); srun's -F (`--nodefile`) is not in its `--help`.
        match self {
            Tool::Srun => {
                "A:b:B:c:C:d:D:e:EF:G:hHi:I::J:kK::lL:m:M:n:N:o:Op:q:Qr:sS:t:T:uvVw:W:x:XZ"
            }
            Tool::Sbatch => "a:A:b:B:c:C:d:D:e:F:G:hHi:J:kL:m:M:n:N:o:Op:q:QsS:t:vVWw:x:",
            Tool::Salloc => "A:b:B:c:C:d:D:F:G:hHI::J:kK::L:m:M:n:N:Op:q:QsS:t:vVw:x:",
        }
    }

    fn long_name_of_short(self, c: char) -> &'static str {
        match (self, c) {
            (_, 'A') => "account",
            (_, 'a') => "array",
            (_, 'b') => "begin",
            (_, 'B') => "extra-node-info",
            (_, 'c') => "cpus-per-task",
            (_, 'C') => "constraint",
            (_, 'd') => "dependency",
            (_, 'D') => "chdir",
            (_, 'e') => "error",
            (_, 'E') => "preserve-env",
            (_, 'F') => "nodefile",
            (_, 'G') => "gpus",
            (_, 'h') => "help",
            (_, 'H') => "hold",
            (_, 'i') => "input",
            (_, 'I') => "immediate",
            (_, 'J') => "job-name",
            (_, 'k') => "no-kill",
            (Tool::Salloc, 'K') => "kill-command",
            (_, 'K') => "kill-on-bad-exit",
            (_, 'l') => "label",
            (_, 'L') => "licenses",
            (_, 'm') => "distribution",
            (_, 'M') => "clusters",
            (_, 'n') => "ntasks",
            (_, 'N') => "nodes",
            (_, 'o') => "output",
            (_, 'O') => "overcommit",
            (_, 'p') => "partition",
            (_, 'q') => "qos",
            (_, 'Q') => "quiet",
            (_, 'r') => "relative",
            (_, 's') => "oversubscribe",
            (_, 'S') => "core-spec",
            (_, 't') => "time",
            (_, 'T') => "threads",
            (_, 'u') => "unbuffered",
            (_, 'v') => "verbose",
            (_, 'V') => "version",
            (_, 'w') => "nodelist",
            (Tool::Sbatch, 'W') => "wait",
            (_, 'W') => "wait",
            (_, 'x') => "exclude",
            (_, 'X') => "disable-status",
            (_, 'Z') => "no-allocate",
            _ => "unknown-short-option",
        }
    }
}

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg {
    None,
    Required,
    /// Only as `--opt=value` (getopt's optional_argument).
    Optional,
}

/// Long options that take a value (required_argument) in srun, sbatch or salloc, 22.05–26.05, and in
/// Pyxis. Sorted for binary search.
const LONG_REQUIRED: &[&str] = &[
    "accel-bind",
    "account",
    "acctg-freq",
    "array",
    "autocomplete",
    "batch",
    "bb",
    "bbf",
    "bcast-exclude",
    "begin",
    "chdir",
    "cluster-constraint",
    "clusters",
    "comment",
    "constraint",
    "container",
    "container-env",
    "container-id",
    "container-image",
    "container-mounts",
    "container-name",
    "container-save",
    "container-type",
    "container-workdir",
    "context",
    "core-spec",
    "cores-per-socket",
    "cpu-bind",
    "cpu-freq",
    "cpus-per-gpu",
    "cpus-per-task",
    "deadline",
    "delay-boot",
    "dependency",
    "distribution",
    "epilog",
    "error",
    "exclude",
    "export",
    "export-file",
    "extra",
    "extra-node-info",
    "gid",
    "gpu-bind",
    "gpu-freq",
    "gpus",
    "gpus-per-node",
    "gpus-per-socket",
    "gpus-per-task",
    "gres",
    "gres-flags",
    "het-group",
    "hint",
    "ignore-signals",
    "input",
    "job-name",
    "jobid",
    "kill-on-invalid-dep",
    "licenses",
    "mail-type",
    "mail-user",
    "mcs-label",
    "mem",
    "mem-bind",
    "mem-per-cpu",
    "mem-per-gpu",
    "mem-update",
    "mincpus",
    "mpi",
    "network",
    "nodefile",
    "nodelist",
    "nodes",
    "ntasks",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-node",
    "ntasks-per-socket",
    "open-mode",
    "output",
    "pack-group",
    "partition",
    "power",
    "prefer",
    "priority",
    "profile",
    "prolog",
    "qos",
    "relative",
    "reservation",
    "segment",
    "signal",
    "slurmd-debug",
    "sockets-per-node",
    "switches",
    "task-epilog",
    "task-prolog",
    "tasks-per-node",
    "thread-spec",
    "threads",
    "threads-per-core",
    "time",
    "time-min",
    "tmp",
    "treewidth",
    "tres-bind",
    "tres-per-task",
    "uid",
    "wait-all-nodes",
    "wckey",
    "wrap",
];

/// Long options whose value may only be attached with `=` (getopt's optional_argument).
const LONG_OPTIONAL: &[&str] = &[
    "bcast",
    "compress",
    "exclusive",
    "get-user-env",
    "immediate",
    "kill-command",
    "kill-on-bad-exit",
    "nice",
    "oom-kill-step",
    "propagate",
    "pty",
    "resv-ports",
    "send-libs",
    "x11",
];

/// Long options without a value, listed so that abbreviations resolve like getopt_long's.
const LONG_NONE: &[&str] = &[
    "async",
    "bell",
    "consolidate-segments",
    "container-entrypoint",
    "container-entrypoint-log",
    "container-mount-home",
    "container-readonly",
    "container-remap-root",
    "container-writable",
    "contiguous",
    "debugger-test",
    "disable-status",
    "exact",
    "external",
    "external-launcher",
    "help",
    "hold",
    "ignore-pbs",
    "interactive",
    "label",
    "multi-prog",
    "no-allocate",
    "no-bell",
    "no-container-entrypoint",
    "no-container-mount-home",
    "no-container-remap-root",
    "no-kill",
    "no-requeue",
    "no-shell",
    "overcommit",
    "overlap",
    "oversubscribe",
    "parsable",
    "preserve-env",
    "quiet",
    "quit-on-interrupt",
    "reboot",
    "requeue",
    "spread-job",
    "spread-segments",
    "stepmgr",
    "test-only",
    "unbuffered",
    "usage",
    "use-min-nodes",
    "verbose",
    "version",
    "wait-for-children",
    "whole",
];

/// Long options of the tables that srun has in none of 22.05, 24.11 and 26.05 (they must not make srun's
/// abbreviations ambiguous). From `core/tests/data/slurm-options/`.
const NOT_SRUN: &[&str] = &[
    "array",
    "batch",
    "bell",
    "export-file",
    "external",
    "get-user-env",
    "ignore-pbs",
    "kill-command",
    "kill-on-invalid-dep",
    "no-bell",
    "no-requeue",
    "no-shell",
    "requeue",
    "wait-all-nodes",
    "wrap",
];

/// Long options of the tables that sbatch has in none of 22.05, 24.11 and 26.05.
const NOT_SBATCH: &[&str] = &[
    "accel-bind",
    "async",
    "bcast",
    "bcast-exclude",
    "bell",
    "compress",
    "cpu-bind",
    "debugger-test",
    "disable-status",
    "epilog",
    "exact",
    "het-group",
    "ignore-signals",
    "immediate",
    "interactive",
    "jobid",
    "kill-command",
    "kill-on-bad-exit",
    "label",
    "mpi",
    "multi-prog",
    "no-allocate",
    "no-bell",
    "no-shell",
    "overlap",
    "pack-group",
    "preserve-env",
    "prolog",
    "pty",
    "quit-on-interrupt",
    "relative",
    "send-libs",
    "slurmd-debug",
    "task-epilog",
    "task-prolog",
    "threads",
    "treewidth",
    "unbuffered",
    "wait-for-children",
    "whole",
];

/// Long options of the tables that salloc has in none of 22.05, 24.11 and 26.05.
const NOT_SALLOC: &[&str] = &[
    "accel-bind",
    "array",
    "async",
    "batch",
    "bcast",
    "bcast-exclude",
    "compress",
    "cpu-bind",
    "debugger-test",
    "disable-status",
    "epilog",
    "error",
    "exact",
    "export",
    "export-file",
    "external",
    "het-group",
    "ignore-pbs",
    "ignore-signals",
    "input",
    "interactive",
    "jobid",
    "kill-on-bad-exit",
    "kill-on-invalid-dep",
    "label",
    "mpi",
    "multi-prog",
    "no-allocate",
    "no-requeue",
    "open-mode",
    "output",
    "overlap",
    "pack-group",
    "parsable",
    "preserve-env",
    "prolog",
    "propagate",
    "pty",
    "quit-on-interrupt",
    "relative",
    "requeue",
    "send-libs",
    "slurmd-debug",
    "task-epilog",
    "task-prolog",
    "test-only",
    "threads",
    "treewidth",
    "unbuffered",
    "wait",
    "wait-for-children",
    "whole",
    "wrap",
];

/// Whether `tool` has the long option `name` (for getopt_long's abbreviation matching).
fn available(tool: Tool, name: &str) -> bool {
    match tool {
        Tool::Srun => NOT_SRUN.binary_search(&name).is_err(),
        Tool::Sbatch => NOT_SBATCH.binary_search(&name).is_err(),
        Tool::Salloc => NOT_SALLOC.binary_search(&name).is_err(),
    }
}

fn arg_kind(tool: Tool, name: &str) -> Option<Arg> {
    // `--wait` is `-W`: srun's takes seconds, sbatch's takes nothing.
    if name == "wait" {
        return Some(if tool == Tool::Sbatch {
            Arg::None
        } else {
            Arg::Required
        });
    }
    if LONG_REQUIRED.binary_search(&name).is_ok() {
        Some(Arg::Required)
    } else if LONG_OPTIONAL.binary_search(&name).is_ok() {
        Some(Arg::Optional)
    } else if LONG_NONE.binary_search(&name).is_ok() {
        Some(Arg::None)
    } else {
        None
    }
}

/// Hidden aliases under the name the checks read (`--tasks-per-node` is `--ntasks-per-node`,
/// `--pack-group` the old name of `--het-group`).
fn canonical(name: &'static str) -> &'static str {
    match name {
        "tasks-per-node" => "ntasks-per-node",
        "pack-group" => "het-group",
        other => other,
    }
}

/// How `tool` takes the long option `name` (exact name, no abbreviation): `Some("required")`,
/// `Some("optional")` (only as `--name=value`) or `Some("none")`; `None` when the tables do not have it
/// for this tool. For tests that compare the tables with a real binary.
pub fn option_arg(tool: Tool, name: &str) -> Option<&'static str> {
    if !available(tool, name) {
        return None;
    }
    arg_kind(tool, name).map(|k| match k {
        Arg::Required => "required",
        Arg::Optional => "optional",
        Arg::None => "none",
    })
}

/// Resolves a long option as getopt_long does: an exact name, or an unambiguous prefix.
fn resolve_long(tool: Tool, name: &str) -> Option<(&'static str, Arg)> {
    let all = LONG_REQUIRED
        .iter()
        .chain(LONG_OPTIONAL)
        .chain(LONG_NONE)
        .chain(std::iter::once(&"wait"));
    let mut found: Option<&'static str> = None;
    for cand in all.filter(|c| available(tool, c)) {
        if *cand == name {
            return arg_kind(tool, cand).map(|k| (*cand, k));
        }
        if cand.starts_with(name) {
            if found.is_some() {
                return None; // ambiguous: Slurm itself would refuse it
            }
            found = Some(cand);
        }
    }
    let cand = found?;
    arg_kind(tool, cand).map(|k| (cand, k))
}

/// One option as Slurm sees it, under its long name (`-c4` → `cpus-per-task`, `Some("4")`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// The long option name without dashes, or the name as written when it is not in the tables.
    pub name: String,
    /// The value, when the option has one.
    pub value: Option<String>,
}

/// The options of a command line and where its operands (the command, or sbatch's script) start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedArgv {
    /// Options in order; later ones override earlier ones in Slurm.
    pub opts: Vec<Opt>,
    /// The operands: srun's/salloc's command and its arguments, or sbatch's script and its arguments.
    pub operands: Vec<String>,
    /// True when an option was not in the tables (or was an ambiguous abbreviation): options after it
    /// may have been missed, so a check must not reject because something is absent.
    pub uncertain: bool,
}

impl ParsedArgv {
    /// The value of the last occurrence of a long option (`"cpus-per-task"`), if any.
    pub fn last(&self, name: &str) -> Option<&Opt> {
        self.opts.iter().rev().find(|o| o.name == name)
    }

    /// The value of the last occurrence of a long option that has a value.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.last(name).and_then(|o| o.value.as_deref())
    }

    /// Whether the option appears at all.
    pub fn has(&self, name: &str) -> bool {
        self.last(name).is_some()
    }
}

/// Parses `argv` (including argv[0]) of `tool`. Never fails: an option that is missing its value
/// ends the options (Slurm would refuse the command line anyway), an unknown option is kept under
/// the name as written with no value.
pub fn parse(tool: Tool, argv: &[String]) -> ParsedArgv {
    let mut out = ParsedArgv::default();
    let short = tool.short_opts();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            match resolve_long(tool, name) {
                Some((canon, kind)) => {
                    let canon = canonical(canon);
                    let value = match (kind, inline) {
                        (Arg::None, _) => None,
                        (Arg::Optional, v) => v,
                        (Arg::Required, Some(v)) => Some(v),
                        (Arg::Required, None) => {
                            i += 1;
                            match argv.get(i) {
                                Some(v) => Some(v.clone()),
                                None => {
                                    out.opts.push(Opt {
                                        name: canon.to_string(),
                                        value: None,
                                    });
                                    return out;
                                }
                            }
                        }
                    };
                    out.opts.push(Opt {
                        name: canon.to_string(),
                        value,
                    });
                }
                None => {
                    out.uncertain = true;
                    out.opts.push(Opt {
                        name: name.to_string(),
                        value: inline,
                    })
                }
            }
            i += 1;
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            // A bundle of short options: -l, -c4, -lc4, -c 4.
            let chars: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                let pos = short.find(c).filter(|_| c != ':');
                let Some(pos) = pos else {
                    out.uncertain = true;
                    out.opts.push(Opt {
                        name: format!("-{c}"),
                        value: None,
                    });
                    j += 1;
                    continue;
                };
                let rest = &short[pos + c.len_utf8()..];
                let name = tool.long_name_of_short(c).to_string();
                if rest.starts_with("::") {
                    let v: String = chars[j + 1..].iter().collect();
                    out.opts.push(Opt {
                        name,
                        value: (!v.is_empty()).then_some(v),
                    });
                    break;
                } else if rest.starts_with(':') {
                    let v: String = chars[j + 1..].iter().collect();
                    if !v.is_empty() {
                        out.opts.push(Opt {
                            name,
                            value: Some(v),
                        });
                    } else {
                        i += 1;
                        match argv.get(i) {
                            Some(v) => out.opts.push(Opt {
                                name,
                                value: Some(v.clone()),
                            }),
                            None => {
                                out.opts.push(Opt { name, value: None });
                                return out;
                            }
                        }
                    }
                    break;
                } else {
                    out.opts.push(Opt { name, value: None });
                    j += 1;
                }
            }
            i += 1;
            continue;
        }
        break; // first operand: the command (srun, salloc) or the script (sbatch)
    }
    out.operands = argv[i.min(argv.len())..].to_vec();
    out
}

/// Splits `/proc/self/cmdline` (NUL-separated, NUL-terminated) into arguments, lossily decoding
/// non-UTF-8 bytes. Empty arguments (`srun -J "" …`) are kept; only the final terminator is dropped.
/// At most `max_args` arguments are kept.
pub fn split_cmdline(raw: &[u8], max_args: usize) -> Vec<String> {
    let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
    if raw.is_empty() {
        return vec![];
    }
    raw.split(|b| *b == 0)
        .take(max_args)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn tables_are_sorted_for_binary_search() {
        for t in [
            LONG_REQUIRED,
            LONG_OPTIONAL,
            LONG_NONE,
            NOT_SRUN,
            NOT_SBATCH,
            NOT_SALLOC,
        ] {
            let mut s = t.to_vec();
            s.sort_unstable();
            assert_eq!(s, t.to_vec());
        }
    }

    #[test]
    fn every_spelling_of_cpus_per_task_is_read() {
        let table: &[(&[&str], Option<&str>)] = &[
            (&["srun", "-c", "4", "true"], Some("4")),
            (&["srun", "-c4", "true"], Some("4")),
            (&["srun", "--cpus-per-task=4", "true"], Some("4")),
            (&["srun", "--cpus-per-task", "4", "true"], Some("4")),
            (&["srun", "-lc4", "true"], Some("4")),
            (&["srun", "-lc", "4", "true"], Some("4")),
            (&["srun", "-N1", "-n2", "-c8", "true"], Some("8")),
            (&["srun", "--cpus-per-t=6", "true"], Some("6")),
            (&["srun", "-c2", "-c", "3", "true"], Some("3")),
            (&["srun", "true", "-c", "4"], None),
            (&["srun", "python", "train.py", "--cpus-per-task=4"], None),
            (&["srun", "-n", "-c", "true"], None), // -n eats "-c"
            (&["srun", "--", "-c", "4"], None),
            (&["srun", "-c"], None),
        ];
        for (argv, want) in table {
            let p = parse(Tool::Srun, &v(argv));
            assert_eq!(p.value("cpus-per-task"), *want, "{argv:?}");
        }
    }

    #[test]
    fn operands_start_after_options_with_values() {
        let p = parse(
            Tool::Srun,
            &v(&[
                "srun",
                "--container-image",
                "nvcr.io#pytorch",
                "-N",
                "2",
                "--mpi",
                "pmix",
                "python",
                "-c",
                "1",
            ]),
        );
        assert_eq!(p.operands, v(&["python", "-c", "1"]));
        assert_eq!(p.value("container-image"), Some("nvcr.io#pytorch"));
        assert_eq!(p.value("mpi"), Some("pmix"));
    }

    #[test]
    fn optional_arguments_only_attach_with_equals() {
        let p = parse(Tool::Srun, &v(&["srun", "--exclusive", "hostname"]));
        assert_eq!(p.operands, v(&["hostname"]));
        assert!(p.has("exclusive"));
        let p = parse(Tool::Srun, &v(&["srun", "-I5", "-K", "hostname"]));
        assert_eq!(p.value("immediate"), Some("5"));
        assert!(p.has("kill-on-bad-exit"));
        assert_eq!(p.operands, v(&["hostname"]));
    }

    #[test]
    fn ambiguous_and_unknown_long_options_make_the_parse_uncertain() {
        let p = parse(Tool::Srun, &v(&["srun", "--cpus=4", "--frobnicate", "x"]));
        assert_eq!(p.opts[0].name, "cpus");
        assert_eq!(p.opts[1].name, "frobnicate");
        assert_eq!(p.operands, v(&["x"]));
        assert!(p.uncertain);
        let p = parse(Tool::Srun, &v(&["srun", "-y", "x"]));
        assert!(p.uncertain);
        let p = parse(Tool::Srun, &v(&["srun", "-c", "2", "--gres=gpu:1", "x"]));
        assert!(!p.uncertain);
    }

    #[test]
    fn newer_options_with_values_are_known() {
        let p = parse(
            Tool::Srun,
            &v(&["srun", "--prefer", "h100", "-c", "24", "python"]),
        );
        assert_eq!(p.value("cpus-per-task"), Some("24"));
        assert!(!p.uncertain);
    }

    #[test]
    fn empty_arguments_are_kept() {
        let argv = split_cmdline(b"srun\0-J\0\0-c\x0024\0python\0", 100);
        assert_eq!(argv, v(&["srun", "-J", "", "-c", "24", "python"]));
        assert_eq!(parse(Tool::Srun, &argv).value("cpus-per-task"), Some("24"));
    }

    #[test]
    fn export_forms() {
        for argv in [
            &["srun", "--export=ALL,FOO=1", "env"][..],
            &["srun", "--export", "ALL,FOO=1", "env"][..],
        ] {
            assert_eq!(
                parse(Tool::Srun, &v(argv)).value("export"),
                Some("ALL,FOO=1")
            );
        }
    }

    #[test]
    fn abbreviations_follow_each_tool_s_own_options() {
        // srun has no --export-file, so --exp is --export there; sbatch has both, so it is ambiguous.
        for a in ["--exp=NONE", "--expo=NONE", "--expor=NONE"] {
            let p = parse(Tool::Srun, &v(&["srun", a, "env"]));
            assert_eq!(p.value("export"), Some("NONE"), "{a}");
        }
        let p = parse(Tool::Sbatch, &v(&["sbatch", "--exp=NONE", "job.sh"]));
        assert_eq!(p.value("export"), None);
        assert!(p.uncertain);
        // srun's --wai is --wait up to 24.11 (sbatch's --wait-all-nodes does not exist in srun), but
        // 26.05's srun also has --wait-for-children and refuses it as ambiguous: uncertain here.
        let p = parse(Tool::Srun, &v(&["srun", "--wai", "5", "true"]));
        assert_eq!(p.value("wait"), None);
        assert!(p.uncertain);
        let p = parse(Tool::Srun, &v(&["srun", "--wait", "5", "true"]));
        assert_eq!(p.value("wait"), Some("5"));
        assert_eq!(p.operands, v(&["true"]));
    }

    #[test]
    fn sbatch_wait_takes_no_value_but_srun_wait_does() {
        let p = parse(Tool::Sbatch, &v(&["sbatch", "-W", "job.sh"]));
        assert_eq!(p.operands, v(&["job.sh"]));
        let p = parse(Tool::Srun, &v(&["srun", "-W", "30", "true"]));
        assert_eq!(p.value("wait"), Some("30"));
        assert_eq!(p.operands, v(&["true"]));
    }

    /// Every long option srun, sbatch and salloc 22.05, 24.11 and 26.05 accept (probed from the
    /// binaries' getopt_long, `scripts/slurm-options.sh`) parses with the right argument, so that the
    /// command's own flags are never read as srun's and no option makes the parse uncertain.
    #[test]
    fn every_option_of_22_05_24_11_and_26_05_parses() {
        let files: &[(Tool, &str, &str)] = &[
            (
                Tool::Srun,
                "22.05",
                include_str!("../tests/data/slurm-options/22.05-srun.txt"),
            ),
            (
                Tool::Srun,
                "24.11",
                include_str!("../tests/data/slurm-options/24.11-srun.txt"),
            ),
            (
                Tool::Srun,
                "26.05",
                include_str!("../tests/data/slurm-options/26.05-srun.txt"),
            ),
            (
                Tool::Sbatch,
                "22.05",
                include_str!("../tests/data/slurm-options/22.05-sbatch.txt"),
            ),
            (
                Tool::Sbatch,
                "24.11",
                include_str!("../tests/data/slurm-options/24.11-sbatch.txt"),
            ),
            (
                Tool::Sbatch,
                "26.05",
                include_str!("../tests/data/slurm-options/26.05-sbatch.txt"),
            ),
            (
                Tool::Salloc,
                "22.05",
                include_str!("../tests/data/slurm-options/22.05-salloc.txt"),
            ),
            (
                Tool::Salloc,
                "24.11",
                include_str!("../tests/data/slurm-options/24.11-salloc.txt"),
            ),
            (
                Tool::Salloc,
                "26.05",
                include_str!("../tests/data/slurm-options/26.05-salloc.txt"),
            ),
        ];
        let mut n = 0;
        for (tool, rel, text) in files {
            let argv0 = match tool {
                Tool::Srun => "srun",
                Tool::Sbatch => "sbatch",
                Tool::Salloc => "salloc",
            };
            for line in text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
            {
                let (name, kind) = line.split_once(' ').unwrap();
                n += 1;
                // `optional` and `none` parse alike unless written with '='.
                let want = if kind == "optional" { "none" } else { kind };
                let got = option_arg(*tool, name).map(|k| if k == "optional" { "none" } else { k });
                assert_eq!(got, Some(want), "{argv0} {rel} --{name}");
                let argv: Vec<String> = if kind == "required" {
                    v(&[argv0, &format!("--{name}"), "VALUE", "cmd", "-c", "4"])
                } else {
                    v(&[argv0, &format!("--{name}"), "cmd", "-c", "4"])
                };
                let p = parse(*tool, &argv);
                assert!(!p.uncertain, "{argv0} {rel} --{name}: {p:?}");
                assert_eq!(p.operands, v(&["cmd", "-c", "4"]), "{argv0} {rel} --{name}");
                if name != "cpus-per-task" {
                    assert_eq!(p.value("cpus-per-task"), None, "{argv0} {rel} --{name}");
                }
            }
        }
        assert!(n > 900, "{n} options");
    }

    #[test]
    fn hidden_aliases_keep_the_cpu_judgement_in_srun() {
        // `--tasks-per-node` is not in `srun --help` but srun takes it (with a value).
        let p = parse(
            Tool::Srun,
            &v(&["srun", "--gres=gpu:2", "--tasks-per-node=1", "true"]),
        );
        assert!(!p.uncertain, "{p:?}");
        assert_eq!(p.value("ntasks-per-node"), Some("1"));
        let p = parse(Tool::Srun, &v(&["srun", "-F", "hosts", "-c", "8", "true"]));
        assert_eq!(p.value("nodefile"), Some("hosts"));
        assert_eq!(p.value("cpus-per-task"), Some("8"));
    }

    #[test]
    fn cmdline_splits_on_nul() {
        assert_eq!(
            split_cmdline(b"srun\0-c\x004\0true\0", 100),
            v(&["srun", "-c", "4", "true"])
        );
        assert_eq!(split_cmdline(b"a\0b\0c\0", 2), v(&["a", "b"]));
        assert_eq!(split_cmdline(b"\xff\0", 2), v(&["\u{fffd}"]));
        assert!(split_cmdline(b"", 2).is_empty());
    }

    #[test]
    fn tool_from_argv0() {
        assert_eq!(Tool::from_argv0("/usr/bin/srun"), Some(Tool::Srun));
        assert_eq!(Tool::from_argv0("sbatch"), Some(Tool::Sbatch));
        assert_eq!(Tool::from_argv0("slurmstepd"), None);
    }
}

//! `launch.export_all` and `launch.export_split`: what `--export` does to the step's environment.
//!
//! `docs/field-rules.md`, "`--export` must include `ALL`" (srun(1) `--export`): `--export=VAR=…` without `ALL` passes no PATH,
//! and the launch fails with `slurmstepd: error: execve(): bash: No such file or directory`. The same
//! happens to every srun inside `sbatch --export=NONE` (they inherit `SLURM_EXPORT_ENV=NONE`), measured
//! in docs/spank.md. srun reads `--export`, then `SRUN_EXPORT_ENV`, then `SLURM_EXPORT_ENV` (srun(1)).
//!
//! `docs/field-rules.md`, "No commas inside an `--export` value": `--export=ALL,NCCL_DEBUG_SUBSYS=INIT,NET`
//! gives the task `NCCL_DEBUG_SUBSYS=INIT` and reads `NET` as a variable name. Quotes protect commas
//! but are kept in the value: `X="A,B"` reaches the task as `X="A,B"`, quote characters included;
//! only quotes around a whole entry (`"X=A,B"`) are removed, giving `X=A,B`. That is how srun splits
//! the list in every release from 20.02 to 26.05 (`find_quote_token` in Slurm's `src/common/env.c`,
//! called by srun's `_build_user_env` and sbatch's `env_merge_filter`); [`tokens`] follows it.

use super::env::Env;
use crate::argv::{ParsedArgv, Tool};
use crate::finding::{clip, CheckKind, Finding, Severity};

/// The part of slurmstepd's line that every release prints: 22.05–24.11 write `slurmstepd: error:
/// execve(): …`, 26.05 writes `[<timestamp>] error: execve(): …` (measured on Debian's 22.05.8,
/// 24.11.5 and 26.05.5).
const WHY_EXECVE: &str =
    "the step gets no PATH, so the launch fails with 'error: execve(): <command>: No such file or directory'";

/// Prefixes of the variables users set for their own programs that `--export` without `ALL` leaves
/// behind: NCCL and libfabric tuning (NCCL docs, "Environment Variables"; libfabric's fi_efa(7)),
/// Hugging Face (`HF_HOME`, `HF_TOKEN`), Weights & Biases (`WANDB_API_KEY`…), PyTorch, CUDA, OpenMP,
/// UCX. A container image supplies PATH, but never these: they are the user's.
pub const OWN_VAR_PREFIXES: &[&str] = &[
    "NCCL_",
    "FI_",
    "HF_",
    "WANDB_",
    "TORCH_",
    "PYTORCH_",
    "CUDA_",
    "OMP_",
    "UCX_",
    "TRANSFORMERS_",
];

/// Names of the caller's own variables (see [`OWN_VAR_PREFIXES`]) that an export value without
/// `ALL` does not carry to the step: set in `env`, not named in `value`. Sorted.
pub fn lost_own_vars(value: &str, env: &(impl Env + ?Sized)) -> Vec<String> {
    let named: Vec<&str> = texts(value)
        .map(|t| t.split('=').next().unwrap_or("").trim())
        .collect();
    let mut out: Vec<String> = env
        .names()
        .into_iter()
        .filter(|n| OWN_VAR_PREFIXES.iter().any(|p| n.starts_with(p)))
        .filter(|n| !named.contains(&n.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `A, B, C and 4 more`.
fn name_list(names: &[String]) -> String {
    let head: Vec<&str> = names.iter().take(4).map(String::as_str).collect();
    let mut s = clip(&head.join(", "), 100);
    if names.len() > 4 {
        s.push_str(&format!(" and {} more", names.len() - 4));
    }
    s
}

/// Why the fix names the lost variables in Pyxis's `--container-env` (measured with Pyxis 0.24 and
/// enroot 4.1: a variable the image also sets keeps the image's value under `--export=ALL`, and the
/// user's under `--export=ALL --container-env=NAME`; Pyxis's README, `--container-env`).
const WHY_CONTAINER_ENV: &str =
    "(Pyxis keeps the image's value of a variable it also sets unless --container-env names it)";

/// The finding for a container launch whose export value lacks `ALL`: the image supplies PATH, so the
/// step starts; what is lost is the caller's own variables. `fix` gets the `--container-env=…`
/// argument that keeps them (all of them, so the fix works as printed). `None` when none is set.
fn container_export_finding(
    label: &str,
    value: &str,
    env: &(impl Env + ?Sized),
    fix: impl FnOnce(&str) -> String,
) -> Option<Finding> {
    let lost = lost_own_vars(value, env);
    if lost.is_empty() {
        return None;
    }
    let container_env = format!("--container-env={}", clip(&lost.join(","), 300));
    Some(Finding {
        check: CheckKind::ExportAll,
        severity: Severity::Warning,
        what: format!(
            "{label} does not include ALL, so your {} {} behind ({} of yours set here)",
            name_list(&lost),
            if lost.len() == 1 { "stays" } else { "stay" },
            lost.len()
        ),
        why: "the container image supplies PATH and the step starts, but the program runs with the image's NCCL/libfabric settings and without your tokens and cache paths".into(),
        fix: fix(&container_env),
    })
}

/// Where the export setting of an srun comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportSource {
    /// `--export=…` on the command line (srun or sbatch).
    Option,
    /// `SRUN_EXPORT_ENV` (srun) or `SBATCH_EXPORT` (sbatch) in the caller's environment.
    InputEnv(&'static str),
    /// `SLURM_EXPORT_ENV` inherited from the allocation (`sbatch/salloc --export=…`).
    Inherited,
    /// An `#SBATCH --export=…` line in the batch script.
    Script,
}

/// One entry of an export list as Slurm reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportToken<'a> {
    /// The entry as written, quotes included (for rewriting the list).
    pub raw: &'a str,
    /// What Slurm uses: `raw` without the quotes around it when it starts and ends with the same
    /// quote character; every other quote character is kept.
    pub text: &'a str,
    /// A quote was left open: Slurm logs `error: Improperly formed environment variable (…)` and
    /// takes the rest of the list, commas included, as this one entry.
    pub unbalanced: bool,
}

/// Splits an export list the way srun and sbatch do (`find_quote_token` in Slurm's
/// `src/common/env.c`, the same from 20.02 to 26.05): at commas outside quotes; a `'` or `"`
/// toggles its own kind of quoting wherever it appears (the two kinds do not nest); an entry that
/// starts and ends with the same quote character loses those two; an open quote at the end makes the
/// rest one entry. An empty list, or a trailing comma, gives no further entry.
pub fn tokens(value: &str) -> Vec<ExportToken<'_>> {
    let b = value.as_bytes();
    let mut out = vec![];
    let mut start = 0;
    while start < b.len() {
        let (mut single, mut double) = (false, false);
        let mut i = start;
        let mut unbalanced = false;
        loop {
            match b.get(i) {
                Some(b'\'') => single = !single,
                Some(b'"') => double = !double,
                Some(b',') if !single && !double => break,
                None if !single && !double => break,
                None => {
                    unbalanced = true;
                    break;
                }
                Some(_) => {}
            }
            i += 1;
        }
        let raw = &value[start..i];
        let rb = raw.as_bytes();
        let text = if !unbalanced
            && rb.len() >= 2
            && matches!(rb[0], b'"' | b'\'')
            && rb[rb.len() - 1] == rb[0]
        {
            &raw[1..raw.len() - 1]
        } else {
            raw
        };
        out.push(ExportToken {
            raw,
            text,
            unbalanced,
        });
        start = i + 1;
    }
    out
}

/// The entries' texts (what Slurm uses), in order.
fn texts(value: &str) -> impl Iterator<Item = &str> {
    tokens(value).into_iter().map(|t| t.text)
}

/// Whether an export value includes `ALL` (case-insensitive, anywhere in the list).
pub fn has_all(value: &str) -> bool {
    texts(value).any(|t| t.trim().eq_ignore_ascii_case("ALL"))
}

/// Whether an export list passes `PATH` itself (`PATH` or `PATH=…`): the step then has a PATH.
pub fn names_path(value: &str) -> bool {
    texts(value).any(|t| {
        let t = t.trim();
        t == "PATH" || t.starts_with("PATH=")
    })
}

/// Whether the launch runs in a Pyxis container (`--container-image`/`--container-name`, on srun or
/// inherited from sbatch as `SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_*`). Pyxis copies the
/// image's environment, PATH included, into the step after launchguard's slurmstepd checks.
pub fn uses_container(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> bool {
    argv.has("container-image")
        || argv.has("container-name")
        || env
            .get("SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image")
            .is_some()
        || env
            .get("SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_name")
            .is_some()
}

/// The same export list with `ALL` first and `NONE`/`NIL`/empty entries dropped:
/// `FOO=1` → `ALL,FOO=1`, `NONE` → `ALL`.
pub fn with_all(value: &str) -> String {
    let rest: Vec<&str> = tokens(value)
        .into_iter()
        .filter(|t| {
            let t = t.text.trim();
            !t.is_empty()
                && !t.eq_ignore_ascii_case("NONE")
                && !t.eq_ignore_ascii_case("NIL")
                && !t.eq_ignore_ascii_case("ALL")
        })
        .map(|t| t.raw)
        .collect();
    if rest.is_empty() {
        "ALL".into()
    } else {
        format!("ALL,{}", rest.join(","))
    }
}

fn valid_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}

/// The entry `NAME=value` quoted as a whole, the one form in which Slurm keeps commas and drops the
/// quotes (quote characters inside the value are left out): `X=a,b` → `"X=a,b"`.
fn whole_entry(name: &str, value: &str) -> String {
    format!("\"{name}={}\"", value.replace(['"', '\''], ""))
}

/// The fix for a value that needs commas: quote the whole entry (shown as typed in a shell), or set
/// it in the job script.
fn quote_fix(name: &str, value: &str) -> String {
    format!(
        "quote the whole entry, --export='ALL,{}' (Slurm keeps commas inside quotes and drops quotes around a whole entry), or export {name} in the job script and pass --export=ALL",
        clip(&whole_entry(name, value), 60)
    )
}

/// Findings about an export list being cut at commas or carrying quotes (`launch.export_split`),
/// judged on the entries as Slurm splits them ([`tokens`]). `env` is the caller's environment: a bare
/// name after `NAME=value` that is not set there is a piece of the value.
pub fn split_findings(value: &str, env: &(impl Env + ?Sized), label: &str) -> Vec<Finding> {
    let mut out = vec![];
    let toks = tokens(value);
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        i += 1;
        let Some((name, val)) = t.text.split_once('=') else {
            continue;
        };
        if t.unbalanced {
            out.push(Finding {
                check: CheckKind::ExportSplit,
                severity: Severity::Warning,
                what: format!(
                    "{label} leaves a quote open in '{}': Slurm prints 'Improperly formed environment variable' and the step gets {name}={}, the rest of the list included",
                    clip(t.raw, 60),
                    clip(val, 40)
                ),
                why: format!("{name} gets a wrong value and the entries after it are never exported"),
                fix: quote_fix(name, val),
            });
            continue;
        }
        if val.contains(['"', '\'']) {
            out.push(Finding {
                check: CheckKind::ExportSplit,
                severity: Severity::Warning,
                what: format!(
                    "{label} keeps the quotes: the step gets {name}={}, quote characters included",
                    clip(val, 40)
                ),
                why: format!("{name}'s value carries the quote characters, which programs read as part of it"),
                fix: quote_fix(name, val),
            });
        }
        let mut pieces = vec![];
        while i < toks.len() {
            let b = toks[i].text;
            let bt = b.trim();
            if bt.contains('=')
                || bt.eq_ignore_ascii_case("ALL")
                || bt.eq_ignore_ascii_case("NONE")
                || bt.eq_ignore_ascii_case("NIL")
            {
                break;
            }
            // A name set in the caller's environment is a variable being passed on purpose.
            if !valid_name(bt) || env.get(bt).is_none() {
                pieces.push(b);
                i += 1;
            } else {
                break;
            }
        }
        if !pieces.is_empty() {
            let meant = format!("{val},{}", pieces.join(","));
            out.push(Finding {
                check: CheckKind::ExportSplit,
                severity: Severity::Warning,
                what: format!(
                    "{label} is cut at the comma{}: the step gets {name}={} and '{}' is read as a variable name",
                    if pieces.len() > 1 { "s" } else { "" },
                    clip(val, 40),
                    clip(&pieces.join(","), 40)
                ),
                why: format!("{name} silently loses part of its value, since Slurm splits --export at every comma outside quotes"),
                fix: quote_fix(name, &meant),
            });
        }
    }
    out
}

/// Judges an srun launch's export setting before allocation (srun, local context).
pub fn check_srun(argv: &ParsedArgv, env: &(impl Env + ?Sized)) -> Vec<Finding> {
    let (value, source) = if let Some(v) = argv.value("export") {
        (v.to_string(), ExportSource::Option)
    } else if let Some(v) = env.get("SRUN_EXPORT_ENV") {
        (v, ExportSource::InputEnv("SRUN_EXPORT_ENV"))
    } else if let Some(v) = env.get("SLURM_EXPORT_ENV") {
        (v, ExportSource::Inherited)
    } else {
        return vec![];
    };
    let shown = clip(&value, 60);
    let label = match source {
        ExportSource::Option => format!("--export={shown}"),
        ExportSource::InputEnv(var) => format!("{var}={shown}"),
        _ => format!("SLURM_EXPORT_ENV={shown}"),
    };
    let mut out = vec![];
    if !has_all(&value) && uses_container(argv, env) {
        let all = clip(&with_all(&value), 80);
        let fix = |ce: &str| match source {
            ExportSource::InputEnv(var) => {
                format!(
                    "set {var}={all} or pass --export={all} to srun, with {ce} {WHY_CONTAINER_ENV}"
                )
            }
            ExportSource::Inherited => {
                format!("add --export=ALL {ce} to this srun {WHY_CONTAINER_ENV}")
            }
            _ => format!("use --export={all} {ce} {WHY_CONTAINER_ENV}"),
        };
        out.extend(container_export_finding(&label, &value, env, fix));
    } else if !has_all(&value) && !names_path(&value) {
        let cmd = argv.operands.first().map(String::as_str).unwrap_or("");
        // An absolute or relative path needs no PATH lookup: execve works, the program just runs
        // without the caller's environment. A container image brings its own PATH (Pyxis).
        let severity = if cmd.contains('/') || uses_container(argv, env) {
            Severity::Warning
        } else {
            Severity::Error
        };
        let rewrite = with_all(&value);
        let (what, fix) = match source {
            ExportSource::Option => (
                format!("{label} does not include ALL, so the step gets none of your environment"),
                format!("use --export={}", clip(&rewrite, 80)),
            ),
            ExportSource::InputEnv(var) => (
                format!("{label} does not include ALL, so the step gets none of your environment"),
                format!(
                    "set {var}={} or pass --export={} to srun",
                    clip(&rewrite, 80),
                    clip(&rewrite, 80)
                ),
            ),
            _ => (
                format!(
                    "{label}, inherited from the allocation (sbatch/salloc --export={shown}), gives this step none of your environment"
                ),
                "add --export=ALL to this srun, or unset SLURM_EXPORT_ENV in the job script before srun".to_string(),
            ),
        };
        let why = if severity == Severity::Error {
            WHY_EXECVE.replace("<command>", &clip(cmd, 40))
        } else {
            "the program starts without PATH, HOME or your variables, and whatever it runs by name fails".to_string()
        };
        out.push(Finding {
            check: CheckKind::ExportAll,
            severity,
            what,
            why,
            fix,
        });
    }
    out.extend(split_findings(&value, env, &label));
    out
}

/// Judges an sbatch/salloc submission's export setting (allocator context): a warning only, since
/// `--export=NONE` is a valid choice for the batch script itself; its sruns are what break.
/// `script` holds the arguments of the batch script's `#SBATCH` lines, when there is a script.
pub fn check_allocation(
    tool: Tool,
    argv: &ParsedArgv,
    script: Option<&ParsedArgv>,
    env: &(impl Env + ?Sized),
) -> Vec<Finding> {
    let sbatch_env = (tool == Tool::Sbatch)
        .then(|| env.get("SBATCH_EXPORT"))
        .flatten();
    let (value, source) = if let Some(v) = argv.value("export") {
        (v.to_string(), ExportSource::Option)
    } else if let Some(v) = sbatch_env {
        (v, ExportSource::InputEnv("SBATCH_EXPORT"))
    } else if let Some(v) = script.and_then(|s| s.value("export")) {
        (v.to_string(), ExportSource::Script)
    } else {
        return vec![];
    };
    let shown = clip(&value, 60);
    let label = match source {
        ExportSource::InputEnv(var) => format!("{var}={shown}"),
        ExportSource::Script => format!("#SBATCH --export={shown}"),
        _ => format!("--export={shown}"),
    };
    let mut out = vec![];
    let container = uses_container(argv, env) || script.is_some_and(|s| uses_container(s, env));
    if !has_all(&value) && container {
        let fix = |_: &str| format!("submit with --export={}", clip(&with_all(&value), 80));
        out.extend(container_export_finding(&label, &value, env, fix));
    } else if !has_all(&value) && !names_path(&value) {
        out.push(Finding {
            check: CheckKind::ExportAll,
            severity: Severity::Warning,
            what: format!(
                "{label} does not include ALL: every srun in this job inherits SLURM_EXPORT_ENV={shown}"
            ),
            why: "those steps get no PATH and fail with 'execve(): <command>: No such file or directory' (a container srun starts, its image supplies PATH, but without your variables)"
                .into(),
            fix: format!(
                "submit with --export={} or give each srun in the script --export=ALL",
                clip(&with_all(&value), 80)
            ),
        });
    }
    out.extend(split_findings(&value, env, &label));
    out
}

/// Facts about a running step's environment (slurmstepd, remote context).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepEnv {
    /// Whether `PATH` is set in the job's environment.
    pub has_path: bool,
    /// The task's argv[0] (`S_JOB_ARGV`), if known.
    pub argv0: Option<String>,
    /// srun said the step runs in a Pyxis container, whose image sets PATH.
    pub container: bool,
}

/// Judges a running step: no `PATH` means execve of a bare command name fails (every route to it:
/// `--export` without ALL, `SLURM_EXPORT_ENV=NONE`, `SRUN_EXPORT_ENV`, a plugin or prolog unsetting it).
pub fn check_step(step: &StepEnv, already_reported: bool) -> Vec<Finding> {
    if step.has_path || already_reported || step.container {
        return vec![];
    }
    let cmd = step.argv0.as_deref().unwrap_or("");
    let by_path = !cmd.contains('/');
    vec![Finding {
        check: CheckKind::ExportAll,
        severity: if by_path {
            Severity::Error
        } else {
            Severity::Warning
        },
        what: "the step's environment has no PATH (srun --export without ALL, or SLURM_EXPORT_ENV=NONE from sbatch --export=NONE)".into(),
        why: if by_path {
            WHY_EXECVE.replace("<command>", &clip(cmd, 40))
        } else {
            "the program starts without PATH, and whatever it runs by name fails".into()
        },
        fix: "run srun --export=ALL (or --export=ALL,VAR=value), or unset SLURM_EXPORT_ENV in the job script before srun".into(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::{parse, Tool};

    fn srun(argv: &[&str], env: &[(&str, &str)]) -> Vec<Finding> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        check_srun(&parse(Tool::Srun, &argv), env)
    }

    #[test]
    fn rewrites_keep_the_variables_and_add_all() {
        let table = [
            ("FOO=1", "ALL,FOO=1"),
            ("NONE", "ALL"),
            ("none", "ALL"),
            ("", "ALL"),
            ("FOO=1,BAR", "ALL,FOO=1,BAR"),
            ("NIL", "ALL"),
        ];
        for (v, want) in table {
            assert_eq!(with_all(v), want, "{v}");
        }
        assert!(has_all("all,FOO=1"));
        assert!(has_all("FOO=1,ALL"));
        assert!(!has_all("ALLX=1"));
    }

    #[test]
    fn export_without_all_is_an_error_with_the_rewrite() {
        let f = srun(&["srun", "--export=FOO=1", "hostname"], &[]);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.export_all: --export=FOO=1 does not include ALL, so the step gets none of your environment; \
             the step gets no PATH, so the launch fails with 'error: execve(): hostname: No such file or directory'; \
             use --export=ALL,FOO=1"
        );
        assert_eq!(f[0].severity, Severity::Error);
    }

    #[test]
    fn export_sources_follow_srun_precedence() {
        // (argv, env, expected ids, severity of first)
        type Row<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);
        let table: &[Row] = &[
            (&["srun", "--export=NONE", "x"], &[], &["launch.export_all"]),
            (
                &["srun", "--export", "NONE", "x"],
                &[],
                &["launch.export_all"],
            ),
            (&["srun", "--export=ALL", "x"], &[], &[]),
            (&["srun", "--export=ALL,FOO=1", "x"], &[], &[]),
            (
                &["srun", "x"],
                &[("SLURM_EXPORT_ENV", "NONE")],
                &["launch.export_all"],
            ),
            (
                &["srun", "--export=ALL", "x"],
                &[("SLURM_EXPORT_ENV", "NONE")],
                &[],
            ),
            (
                &["srun", "x"],
                &[("SRUN_EXPORT_ENV", "ALL"), ("SLURM_EXPORT_ENV", "NONE")],
                &[],
            ),
            (
                &["srun", "x"],
                &[("SRUN_EXPORT_ENV", "FOO=1")],
                &["launch.export_all"],
            ),
            (&["srun", "x"], &[("SLURM_EXPORT_ENV", "ALL")], &[]),
            (&["srun", "x"], &[], &[]),
            (
                &["srun", "--export=ALL,NCCL_DEBUG_SUBSYS=INIT,NET", "env"],
                &[],
                &["launch.export_split"],
            ),
            (
                &["srun", "--export=NCCL_DEBUG_SUBSYS=INIT,NET", "env"],
                &[],
                &["launch.export_all", "launch.export_split"],
            ),
            // without ALL, naming a set variable is how you pass it: not a split
            (
                &["srun", "--export=FOO=1,HOME", "/bin/env"],
                &[("HOME", "/root")],
                &["launch.export_all"],
            ),
            // the quotes protect the comma (one finding: they are kept), a whole quoted entry is fine
            (
                &["srun", "--export=ALL,X=\"A,B\"", "env"],
                &[],
                &["launch.export_split"],
            ),
            (&["srun", "--export=ALL,\"X=A,B\"", "env"], &[], &[]),
            (&["srun", "--export=ALL,'X=A,B',Y=1", "env"], &[], &[]),
        ];
        for (argv, env, ids) in table {
            let got: Vec<&str> = srun(argv, env).iter().map(|f| f.id()).collect();
            assert_eq!(&got, ids, "{argv:?} {env:?}");
        }
    }

    #[test]
    #[rustfmt::skip]
    fn valid_exports_are_never_errors() {
        // (argv, env, expected (id, severity) list)
        type Row<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [(&'a str, Severity)]);
        let table: &[Row] = &[
            // PATH passed by name or value: the step has a PATH
            (&["srun", "--export=PATH,FOO=1", "x"], &[("PATH", "/usr/bin")], &[]),
            (&["srun", "--export=PATH=/usr/bin:/bin,FOO=1", "x"], &[], &[]),
            // a Pyxis container brings PATH from its image: a warning when the user's own variables stay
            // behind, nothing when none is set
            (&["srun", "--export=NONE", "--container-image=nvcr.io#pytorch", "python"], &[("NCCL_DEBUG", "INFO")],
             &[("launch.export_all", Severity::Warning)]),
            (&["srun", "--export=NONE", "python"], &[("SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image", "x"), ("HF_HOME", "/h")],
             &[("launch.export_all", Severity::Warning)]),
            (&["srun", "--export=NONE", "--container-image=nvcr.io#pytorch", "python"], &[("HOME", "/home/u")], &[]),
            (&["srun", "--export=NONE,NCCL_DEBUG", "--container-image=img", "python"], &[("NCCL_DEBUG", "INFO")], &[]),
            // a variable set in the environment, named after ALL, is passed on purpose
            (&["srun", "--export=ALL,FOO=1,HOME", "x"], &[("HOME", "/home/u")], &[]),
            (&["srun", "--export=ALL,FOO=1,NOTSET", "x"], &[], &[("launch.export_split", Severity::Warning)]),
            (&["srun", "--export=FOO=1", "x"], &[], &[("launch.export_all", Severity::Error)]),
        ];
        for (argv, env, want) in table {
            let got: Vec<(&str, Severity)> = srun(argv, env).iter().map(|f| (f.id(), f.severity)).collect();
            assert_eq!(&got, want, "{argv:?} {env:?}");
        }
    }

    #[test]
    fn sbatch_export_is_read_by_sbatch_only() {
        let env: &[(&str, &str)] = &[("SBATCH_EXPORT", "NONE")];
        let argv: Vec<String> = ["salloc", "bash"].iter().map(|s| s.to_string()).collect();
        assert!(check_allocation(Tool::Salloc, &parse(Tool::Salloc, &argv), None, env).is_empty());
        let argv: Vec<String> = ["sbatch", "job.sh"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            check_allocation(Tool::Sbatch, &parse(Tool::Sbatch, &argv), None, env).len(),
            1
        );
    }

    #[test]
    fn a_container_step_names_the_variables_it_loses() {
        let env = [
            ("NCCL_DEBUG", "INFO"),
            ("FI_EFA_USE_DEVICE_RDMA", "1"),
            ("HF_TOKEN", "x"),
            ("WANDB_API_KEY", "y"),
            ("WANDB_PROJECT", "p"),
            ("HOME", "/home/u"),
        ];
        let f = srun(
            &[
                "srun",
                "--export=NONE,HF_TOKEN",
                "--container-image=img.sqsh",
                "python",
                "t.py",
            ],
            &env,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.export_all: --export=NONE,HF_TOKEN does not include ALL, so your \
             FI_EFA_USE_DEVICE_RDMA, NCCL_DEBUG, WANDB_API_KEY, WANDB_PROJECT stay behind (4 of yours set here); \
             the container image supplies PATH and the step starts, but the program runs with the image's \
             NCCL/libfabric settings and without your tokens and cache paths; use --export=ALL,HF_TOKEN \
             --container-env=FI_EFA_USE_DEVICE_RDMA,NCCL_DEBUG,WANDB_API_KEY,WANDB_PROJECT (Pyxis keeps the image's \
             value of a variable it also sets unless --container-env names it)"
        );
        assert_eq!(f[0].severity, Severity::Warning);
        // one variable, inherited from sbatch --export=NONE: said in the singular, the fix keeps it
        let f = srun(
            &["srun", "--container-image=img.sqsh", "python"],
            &[("SLURM_EXPORT_ENV", "NONE"), ("NCCL_DEBUG", "INFO")],
        );
        assert!(
            f[0].what
                .ends_with("so your NCCL_DEBUG stays behind (1 of yours set here)"),
            "{}",
            f[0].what
        );
        assert!(
            f[0].fix
                .starts_with("add --export=ALL --container-env=NCCL_DEBUG to this srun"),
            "{}",
            f[0].fix
        );
        // sbatch with a container script (#SBATCH --container-image): the same, as a warning
        let argv: Vec<String> = ["sbatch", "--export=NONE", "job.sh"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let script: Vec<String> = ["sbatch", "--container-image=img.sqsh"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let f = check_allocation(
            Tool::Sbatch,
            &parse(Tool::Sbatch, &argv),
            Some(&parse(Tool::Sbatch, &script)),
            &env[..],
        );
        assert_eq!(f.len(), 1);
        assert!(f[0].what.contains("so your FI_EFA_USE_DEVICE_RDMA, HF_TOKEN, NCCL_DEBUG, WANDB_API_KEY and 1 more stay behind"), "{}", f[0].what);
        assert!(f[0].fix.contains("--export=ALL"), "{}", f[0].fix);
        assert!(check_allocation(
            Tool::Sbatch,
            &parse(Tool::Sbatch, &argv),
            Some(&parse(Tool::Sbatch, &script)),
            &[("HOME", "/h")][..]
        )
        .is_empty());
    }

    #[test]
    fn a_path_command_still_runs_so_it_is_only_a_warning() {
        let f = srun(&["srun", "--export=FOO=1", "/bin/hostname"], &[]);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn split_message_names_the_lost_piece_and_the_fix() {
        let f = srun(
            &["srun", "--export=ALL,NCCL_DEBUG_SUBSYS=INIT,NET", "env"],
            &[],
        );
        assert_eq!(
            f[0].to_string(),
            "launchguard: launch.export_split: --export=ALL,NCCL_DEBUG_SUBSYS=INIT,NET is cut at the comma: \
             the step gets NCCL_DEBUG_SUBSYS=INIT and 'NET' is read as a variable name; \
             NCCL_DEBUG_SUBSYS silently loses part of its value, since Slurm splits --export at every comma outside quotes; \
             quote the whole entry, --export='ALL,\"NCCL_DEBUG_SUBSYS=INIT,NET\"' (Slurm keeps commas inside quotes and \
             drops quotes around a whole entry), or export NCCL_DEBUG_SUBSYS in the job script and pass --export=ALL"
        );
    }

    #[test]
    fn the_list_is_split_as_slurm_splits_it() {
        let t = |v: &str| -> Vec<(String, bool)> {
            tokens(v)
                .into_iter()
                .map(|t| (t.text.to_string(), t.unbalanced))
                .collect()
        };
        let ok = |xs: &[&str]| -> Vec<(String, bool)> {
            xs.iter().map(|x| (x.to_string(), false)).collect()
        };
        assert_eq!(t("ALL,X=a,b"), ok(&["ALL", "X=a", "b"]));
        // quotes protect commas and stay in the value, unless they wrap the whole entry
        assert_eq!(t("ALL,X=\"a,b\""), ok(&["ALL", "X=\"a,b\""]));
        assert_eq!(t("ALL,\"X=a,b\",Y"), ok(&["ALL", "X=a,b", "Y"]));
        assert_eq!(t("ALL,'X=a,b'"), ok(&["ALL", "X=a,b"]));
        assert_eq!(
            t("X=\"a\"b,c\",Y=1"),
            vec![("X=\"a\"b".into(), false), ("c\",Y=1".into(), true)]
        );
        // an open quote takes the rest of the list
        assert_eq!(
            t("ALL,X=\"a,b,Y=1"),
            vec![("ALL".into(), false), ("X=\"a,b,Y=1".into(), true)]
        );
        assert_eq!(t(""), ok(&[]));
        assert_eq!(t("ALL,"), ok(&["ALL"]));
        assert_eq!(t("A,,B"), ok(&["A", "", "B"]));
    }

    /// Field report: `srun --export='ALL,X="a,b"'` on 22.05 gives the task `X="a,b"` (quotes
    /// included); the line said the value was cut at the comma.
    #[test]
    fn a_quoted_comma_is_kept_and_the_line_says_so() {
        let f = srun(&["srun", "--export=ALL,X=\"a,b\"", "env"], &[]);
        let lines: Vec<String> = f.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            lines,
            vec!["launchguard: launch.export_split: --export=ALL,X=\"a,b\" keeps the quotes: the step gets X=\"a,b\", \
                  quote characters included; X's value carries the quote characters, which programs read as part of it; \
                  quote the whole entry, --export='ALL,\"X=a,b\"' (Slurm keeps commas inside quotes and drops quotes \
                  around a whole entry), or export X in the job script and pass --export=ALL"]
        );
        let f = srun(&["srun", "--export=ALL,X=\"a,b,Y=1", "env"], &[]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].what.contains("leaves a quote open in 'X=\"a,b,Y=1'")
                && f[0].what.contains("the step gets X=\"a,b,Y=1"),
            "{}",
            f[0].what
        );
    }

    #[test]
    fn inherited_export_none_points_at_the_allocation() {
        let f = srun(&["srun", "hostname"], &[("SLURM_EXPORT_ENV", "NONE")]);
        assert!(
            f[0].what.contains("inherited from the allocation"),
            "{}",
            f[0].what
        );
        assert!(
            f[0].fix.contains("add --export=ALL to this srun"),
            "{}",
            f[0].fix
        );
    }

    #[test]
    fn allocation_warns_only() {
        let argv: Vec<String> = ["sbatch", "--export=NONE", "job.sh"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let f = check_allocation(Tool::Sbatch, &parse(Tool::Sbatch, &argv), None, &[][..]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0]
            .what
            .contains("every srun in this job inherits SLURM_EXPORT_ENV=NONE"));
        let script: Vec<String> = ["#SBATCH", "--export=NONE"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let argv: Vec<String> = ["sbatch", "job.sh"].iter().map(|s| s.to_string()).collect();
        let f = check_allocation(
            Tool::Sbatch,
            &parse(Tool::Sbatch, &argv),
            Some(&parse(Tool::Sbatch, &script)),
            &[][..],
        );
        assert!(
            f[0].what.starts_with("#SBATCH --export=NONE"),
            "{}",
            f[0].what
        );
        let argv: Vec<String> = ["sbatch", "--export=ALL", "job.sh"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(check_allocation(
            Tool::Sbatch,
            &parse(Tool::Sbatch, &argv),
            Some(&parse(Tool::Sbatch, &script)),
            &[][..]
        )
        .is_empty());
    }

    #[test]
    fn step_without_path() {
        let s = StepEnv {
            has_path: false,
            argv0: Some("hostname".into()),
            container: false,
        };
        let f = check_step(&s, false);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].why.contains("execve(): hostname"));
        assert!(check_step(&s, true).is_empty());
        let s = StepEnv {
            has_path: false,
            argv0: Some("/bin/hostname".into()),
            container: false,
        };
        assert_eq!(check_step(&s, false)[0].severity, Severity::Warning);
        let s = StepEnv {
            has_path: true,
            argv0: None,
            container: false,
        };
        assert!(check_step(&s, false).is_empty());
    }
}
